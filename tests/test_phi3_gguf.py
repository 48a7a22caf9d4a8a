"""Phi-3's GGUF files, laid out as llama.cpp's converter writes them (Q, K, V fused in attn_qkv; gate and up stacked in
one double-width ffn_up, gate first; rotary pairs left in halves; the window as phi3.attention.sliding_window), give
transformers' logits and greedy tokens on the same random weights: through the PyTorch blocks (fp32) and through the
default stored mode, whose decode steps run natively."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers
from gguf import GGUFWriter
from gguf_files import add_shape

import forwardpass
from forwardpass import kernels
from forwardpass.engine import Engine, EngineConfig
from forwardpass.engine.rows import NATIVE
from forwardpass.errors import UnsupportedModelError
from forwardpass.models import GGUFMetadata
from forwardpass.models.phi3 import PHI3
from forwardpass.sampling import SamplingParams
from forwardpass.weights.gguf_config import open_gguf

VOCAB, WINDOW = 101, 7  # a window shorter than most sequences below
SPECIAL = ["<|endoftext|>", "<|assistant|>", "<|end|>", "<|user|>"]  # Phi-3's added tokens, control tokens
DTYPES = {"F32": np.float32, "F16": np.float16}


@pytest.fixture(scope="module")
def hf():
    torch.manual_seed(1234)
    cfg = transformers.Phi3Config(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                  sliding_window=WINDOW, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    model = transformers.Phi3ForCausalLM(cfg).eval()
    with torch.no_grad():  # every weight random, and exactly representable in F16, so both files hold the same model
        for p in model.parameters():
            p.copy_((p + torch.randn_like(p) * 0.05).half().float())
    return model


def add_tokenizer(w: GGUFWriter, vocab: int) -> None:
    """A SentencePiece vocabulary as the converter writes Phi-3's: pieces, "[PAD…]" fillers up to vocab_size, the
    added tokens last. The file carries no {arch}.vocab_size: the vocabulary's length is the model's."""
    pieces = ["<unk>", "<s>", "</s>", "▁", *"abcdefghijklmnopqrstuvwxyz"]
    fillers = vocab - len(pieces) - len(SPECIAL)
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(pieces + [f"[PAD{i}]" for i in range(len(pieces), len(pieces) + fillers)] + SPECIAL)
    w.add_token_scores([0.0] * 3 + [-float(i) for i in range(len(pieces) - 3)] + [-1000.0] * (fillers + len(SPECIAL)))
    w.add_token_types([2, 3, 3] + [1] * (len(pieces) - 3) + [5] * fillers + [3] * len(SPECIAL))
    w.add_bos_token_id(1)
    w.add_eos_token_id(vocab - len(SPECIAL))  # <|endoftext|>
    w.add_unk_token_id(0)


def hf_tensors(hf) -> dict[str, torch.Tensor]:
    """The converter's names: Phi-3's fused tensors written unchanged."""
    sd = {k: v.detach() for k, v in hf.state_dict().items()}
    out = {"token_embd.weight": sd["model.embed_tokens.weight"], "output_norm.weight": sd["model.norm.weight"],
           "output.weight": sd["lm_head.weight"]}
    for i in range(hf.config.num_hidden_layers):
        m, p = f"model.layers.{i}.", f"blk.{i}."
        out |= {p + "attn_qkv.weight": sd[m + "self_attn.qkv_proj.weight"],  # Q, K, V rows
                p + "attn_output.weight": sd[m + "self_attn.o_proj.weight"],
                p + "attn_norm.weight": sd[m + "input_layernorm.weight"],
                p + "ffn_norm.weight": sd[m + "post_attention_layernorm.weight"],
                p + "ffn_up.weight": sd[m + "mlp.gate_up_proj.weight"],  # gate rows, then up rows
                p + "ffn_down.weight": sd[m + "mlp.down_proj.weight"]}
    return out


def write_phi3_gguf(hf, path, dtype=np.float32, longrope: bool = False) -> None:
    """What convert_hf_to_gguf.py's Phi3MiniModel writes; `longrope`: a 128k model's RoPE factors too."""
    c = hf.config
    head_dim = c.hidden_size // c.num_attention_heads
    w = GGUFWriter(str(path), "phi3")
    w.add_name("tiny-test-phi3")
    add_shape(w, c)
    w.add_rope_scaling_orig_ctx_len(c.original_max_position_embeddings)
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(c.rope_parameters["rope_theta"])
    w.add_sliding_window(c.sliding_window or 0)  # 0: no window (Phi-4)
    add_tokenizer(w, c.vocab_size)
    tensors = hf_tensors(hf)
    if longrope:
        w.add_rope_scaling_attn_factors(1.19)
        tensors |= {f"rope_factors_{kind}.weight": torch.ones(head_dim // 2) for kind in ("long", "short")}
    for name, t in tensors.items():
        w.add_tensor(name, t.numpy().astype(np.float32 if t.dim() == 1 else dtype))  # norms stay F32, as llama.cpp's
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


@pytest.fixture(scope="module", params=list(DTYPES))
def path(request, hf, tmp_path_factory):
    out = tmp_path_factory.mktemp("phi3") / f"tiny-phi3-{request.param}.gguf"
    write_phi3_gguf(hf, out, DTYPES[request.param])
    return out


def hf_greedy(hf, prompt: list[int], n: int) -> list[int]:
    """transformers' greedy tokens, each from a full forward pass over everything before it."""
    ids = list(prompt)
    with torch.no_grad():
        for _ in range(n):
            ids.append(int(hf(torch.tensor([ids])).logits[0, -1].argmax()))
    return ids[len(prompt):]


@pytest.mark.parametrize("storage", ["fp32", None])  # None: the default, "stored"
def test_logits_match_transformers(hf, path, storage):
    fp = forwardpass.load(path, storage=storage)
    c = fp.config
    assert (c.sliding_window, c.n_kv_heads, c.ffn_hidden, c.tied_embeddings) == (WINDOW, 2, 96, False)
    assert c.vocab_size == VOCAB and fp.tokenizer is not None
    g = torch.Generator().manual_seed(7)
    for T in (1, 5, WINDOW + 1, 30):
        ids = torch.randint(0, VOCAB, (2, T), generator=g)
        with torch.inference_mode():
            got = fp.model(ids)[0]
        with torch.no_grad():
            want = hf(ids).logits
        assert (got - want).abs().max().item() <= 1e-4, T


@pytest.mark.parametrize("storage", ["fp32", None])
def test_greedy_tokens_are_transformers(hf, path, storage):
    """Through the engine (paged prefill, then decode steps: native ones in the default mode), past the window."""
    fp = forwardpass.load(path, storage=storage)
    if storage is None and kernels.available():
        assert Engine(fp, EngineConfig(kv_cache_bytes=2**20)).runner.capabilities is NATIVE
    params = SamplingParams(temperature=0, max_tokens=16, ignore_eos=True)
    for seed in (3, 4):
        prompt = torch.randint(0, VOCAB, (12,), generator=torch.Generator().manual_seed(seed)).tolist()
        assert forwardpass.generate(fp, prompt, params).token_ids == hf_greedy(hf, prompt, 16)


def test_longrope_files_are_refused_by_name(hf, tmp_path):
    write_phi3_gguf(hf, tmp_path / "longrope.gguf", longrope=True)
    with pytest.raises(UnsupportedModelError, match=r"longrope.gguf: Phi-3's longrope RoPE scaling "
                                                    r"\(rope_factors_long.weight, rope_factors_short.weight\)"):
        forwardpass.load(tmp_path / "longrope.gguf")


def test_a_zero_window_is_none(hf, tmp_path):
    """The converter writes sliding_window 0 for a model without one (Phi-4): every token reads the whole past."""
    write_phi3_gguf(hf, tmp_path / "m.gguf")
    reader = open_gguf(tmp_path / "m.gguf")
    fields = reader.fields | {"phi3.attention.sliding_window": 0}
    meta = GGUFMetadata(fields, "phi3", tmp_path / "m.gguf", {t.name for t in reader.tensors})
    assert PHI3.gguf_config(meta).sliding_window is None
