"""Exact logits against Hugging Face transformers on the same random weights, for every architecture option."""

from __future__ import annotations

import pytest
import torch
import transformers

import forwardpass
from forwardpass.loaded import LoadedModel
from forwardpass.loop import generate
from forwardpass.sampling import SamplingParams

VOCAB = 101


def gpt2(tmp_path):
    cfg = transformers.GPT2Config(vocab_size=VOCAB, n_positions=64, n_embd=48, n_layer=3, n_head=4)
    return transformers.GPT2LMHeadModel(cfg)


def gpt1(tmp_path):
    cfg = transformers.OpenAIGPTConfig(vocab_size=VOCAB, n_positions=64, n_embd=48, n_layer=3, n_head=4)
    return transformers.OpenAIGPTLMHeadModel(cfg)


def llama_gqa(tmp_path):
    cfg = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=3,
                                   num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=64,
                                   rope_theta=5000.0, rms_norm_eps=1e-5, tie_word_embeddings=False)
    return transformers.LlamaForCausalLM(cfg)


def llama_rope(kind: str, **rope):
    def build(tmp_path):
        cfg = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                       rope_parameters={"rope_type": kind, "rope_theta": 500.0, **rope})
        return transformers.LlamaForCausalLM(cfg)
    return build


def qwen2(tmp_path):  # biases on Q, K and V only
    cfg = transformers.Qwen2Config(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                   tie_word_embeddings=True)
    return transformers.Qwen2ForCausalLM(cfg)


def qwen3(tmp_path):  # QK-norm, and a head_dim of its own (4 heads × 24 ≠ 64)
    cfg = transformers.Qwen3Config(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, head_dim=24,
                                   max_position_embeddings=64)
    return transformers.Qwen3ForCausalLM(cfg)


def mistral_window(tmp_path):  # each token sees itself and the 5 before it: shorter than most test sequences
    cfg = transformers.MistralConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                                     num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                                     max_position_embeddings=64, sliding_window=6)
    return transformers.MistralForCausalLM(cfg)


def phi3(tmp_path):  # Q, K, V and gate, up stored fused; a sliding window
    cfg = transformers.Phi3Config(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                  sliding_window=7, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    return transformers.Phi3ForCausalLM(cfg)


def gemma3(tmp_path):  # GeGLU, sandwich norms, √d embeddings, QK-norm, 2 sliding layers (own RoPE base) + 1 full
    cfg = transformers.Gemma3TextConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=3,
                                        num_attention_heads=4, num_key_value_heads=2, head_dim=24,
                                        query_pre_attn_scalar=20, sliding_window=6, max_position_embeddings=64,
                                        layer_types=["sliding_attention", "sliding_attention", "full_attention"])
    return transformers.Gemma3ForCausalLM(cfg)


BUILDERS = {"gpt2": gpt2, "openai-gpt": gpt1, "llama-gqa-untied": llama_gqa,
            "llama-rope-linear": llama_rope("linear", factor=4.0),
            "llama-rope-llama3": llama_rope("llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                                            original_max_position_embeddings=16),
            "llama-rope-yarn": llama_rope("yarn", factor=4.0, original_max_position_embeddings=16, beta_fast=8.0),
            "qwen2": qwen2, "qwen3": qwen3, "mistral-sliding-window": mistral_window, "phi3": phi3,
            "gemma3": gemma3}


@pytest.fixture(params=list(BUILDERS), scope="module")
def pair(request, tmp_path_factory):
    """(transformers model, forwardpass model) sharing one set of random weights saved as safetensors."""
    torch.manual_seed(1234)
    tmp = tmp_path_factory.mktemp(request.param)
    hf = BUILDERS[request.param](tmp).eval()
    with torch.no_grad():  # make every weight count: random, not the init's zeros and ones
        for p in hf.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    hf.save_pretrained(tmp, safe_serialization=True)
    return hf, forwardpass.load(tmp).model


def reference(hf, ids: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return hf(ids).logits


@pytest.mark.parametrize("T", [1, 2, 7, 33])
def test_full_forward_matches(pair, T):
    hf, fp = pair
    ids = torch.randint(0, VOCAB, (2, T))
    with torch.inference_mode():
        logits, cache = fp(ids)
    assert cache.lengths == [T, T]
    assert (logits - reference(hf, ids)).abs().max().item() <= 1e-4


@pytest.mark.parametrize("prefill", [1, 5, 16])
def test_prefill_then_steps_match_full_forward(pair, prefill):
    hf, fp = pair
    ids = torch.randint(0, VOCAB, (2, prefill + 6))
    want = reference(hf, ids)
    with torch.inference_mode():
        cache = fp.new_cache(batch=2, capacity=ids.shape[1])
        got = [fp(ids[:, :prefill], cache)[0]]
        for t in range(prefill, ids.shape[1]):  # one token per step, each at the cache's length
            got.append(fp(ids[:, t:t + 1], cache)[0])
    got = torch.cat(got, dim=1)
    assert cache.lengths == [ids.shape[1]] * 2
    assert (got - want).abs().max().item() <= 1e-4


def test_rows_at_their_own_positions(pair):
    """A batch whose rows hold different lengths: each row's logits equal that sequence run alone."""
    hf, fp = pair
    a, b = torch.randint(0, VOCAB, (1, 9)), torch.randint(0, VOCAB, (1, 4))
    with torch.inference_mode():
        cache = fp.new_cache(batch=2, capacity=16)
        # ragged prefill: row 1 is right-padded and keeps only its 4 real tokens
        padded = torch.cat([a, torch.cat([b, torch.zeros(1, 5, dtype=torch.long)], 1)])
        first, _ = fp(padded, cache, n_tokens=[9, 4])
        assert cache.lengths == [9, 4]
        nxt = torch.randint(0, VOCAB, (2, 3))
        second, _ = fp(nxt, cache)  # row 0 continues at position 9, row 1 at position 4
        assert cache.lengths == [12, 7]
    want_a = reference(hf, torch.cat([a, nxt[:1]], 1))
    want_b = reference(hf, torch.cat([b, nxt[1:]], 1))
    assert (first[0] - want_a[0, :9]).abs().max() <= 1e-4
    assert (first[1, :4] - want_b[0, :4]).abs().max() <= 1e-4
    assert (second[0] - want_a[0, 9:]).abs().max() <= 1e-4
    assert (second[1] - want_b[0, 4:]).abs().max() <= 1e-4


def test_architecture_options_loaded(pair):
    hf, fp = pair
    c = fp.config
    kind = hf.config.model_type
    gemma = kind == "gemma3_text"
    decoder = kind in ("llama", "mistral", "qwen2", "qwen3", "phi3") or gemma
    assert c.norm_position == ("post" if kind == "openai-gpt" else "pre")
    assert c.norm == ("rmsnorm" if decoder else "layernorm")
    assert c.positions == ("rope" if decoder else "learned")
    assert c.ffn == ("geglu" if gemma else "swiglu" if decoder else "gelu")
    assert c.tied_embeddings == (kind in ("gpt2", "openai-gpt", "qwen2", "gemma3_text"))
    assert (c.attention_bias, c.qk_norm) == (kind in ("gpt2", "openai-gpt", "qwen2"), kind in ("qwen3", "gemma3_text"))
    assert c.sliding_window == {"mistral": 6, "gemma3_text": 6, "phi3": 7}.get(kind)
    assert c.head_dim == {"qwen3": 24, "gemma3_text": 24}.get(kind, c.d_model // c.n_heads)
    assert (c.embed_scale, c.sandwich_norm, c.layer_types) == (gemma, gemma, ("sliding", "sliding", "full") if gemma
                                                                 else None)
    rope = getattr(hf.config, "rope_parameters", None) or {}
    rope = rope.get("full_attention", rope)
    assert (c.rope_scaling.kind if c.rope_scaling else "default") == rope.get("rope_type", "default")
    if kind == "llama" and c.rope_scaling is None:
        assert (c.n_heads, c.kv_heads) == (8, 2)
    if c.tied_embeddings:
        assert fp.lm_head.weight.data_ptr() == fp.tok_embeddings.weight.data_ptr()
    else:
        assert fp.lm_head.weight.data_ptr() != fp.tok_embeddings.weight.data_ptr()


def test_rope_frequencies_match(pair):
    """The scaled RoPE frequencies are transformers' own (linear, llama3)."""
    hf, fp = pair
    if fp.rope is None:
        pytest.skip("learned positions")
    rotary = hf.model.rotary_emb
    if fp.rope_local is not None:  # Gemma 3: one set of frequencies per layer type
        assert torch.allclose(fp.rope.inv_freq, rotary.full_attention_inv_freq.float(), rtol=1e-6, atol=0)
        assert torch.allclose(fp.rope_local.inv_freq, rotary.sliding_attention_inv_freq.float(), rtol=1e-6, atol=0)
        return
    assert torch.allclose(fp.rope.inv_freq, rotary.inv_freq.float(), rtol=1e-6, atol=0)


def test_the_engine_generates_what_the_naive_loop_does(pair):
    """Through the paged engine (prefill, then decode steps over block tables), every family's greedy tokens are
    those of the naive loop, which recomputes everything each step: windows, QK-norm, biases, scaled RoPE
    included."""
    _, fp = pair
    loaded = LoadedModel(fp, None, "random weights", {})
    prompt = torch.randint(0, VOCAB, (20,), generator=torch.Generator().manual_seed(5)).tolist()
    params = SamplingParams(temperature=0, max_tokens=12)
    assert generate(loaded, prompt, params).token_ids == generate(loaded, prompt, params, naive=True).token_ids


def test_attention_weights_are_transformers(pair):
    """The explorer's attention weights (causal, windowed where the model is) equal transformers' own."""
    hf, fp = pair
    if hf.config.model_type not in ("llama", "mistral", "qwen2", "qwen3", "phi3", "gemma3_text"):
        pytest.skip("a Llama-family layout")
    ids = torch.randint(0, VOCAB, (1, 12), generator=torch.Generator().manual_seed(9))
    hf.config._attn_implementation = "eager"
    with torch.no_grad():
        want = hf(ids, output_attentions=True).attentions[0]
        block = fp.blocks[0]
        rotary = fp.rope_local if block.sliding and fp.rope_local is not None else fp.rope
        rope = rotary(torch.arange(12)[None], 12)
        got = block.attn.weights(block.attn_norm(fp.embed(ids, torch.arange(12)[None])), rope, fp.config.window(0))
    assert (got - want).abs().max() <= 1e-5
