"""Llama: RMSNorm, RoPE, SwiGLU, grouped-query attention, no biases. Most families are Llama with a few switches
(mistral.py, qwen2.py, qwen3.py, phi3.py, gemma3.py); what they share is written here once, and each passes its
differences."""

from __future__ import annotations

from functools import partial

from ..config import ModelConfig, RopeScaling
from ..errors import UnsupportedModelError
from .family import Family, GGUFMetadata, TensorMap, stored
from .rope_scaling import rope_scaling


def hf_config(c: dict, name: str, where: str, kind: str = "llama", *, qkv_bias: bool = False,
              qk_norm: bool = False, window: bool = False, own_head_dim: bool = False,
              per_layer_window: bool = False) -> ModelConfig:
    """config.json → ModelConfig for `kind` (its model_type): Llama with biases on Q, K and V (`qkv_bias`, Qwen2),
    QK-norm (`qk_norm`, Qwen3), a sliding window (`window`, Mistral and Phi-3) or a head_dim of its own
    (`own_head_dim`). `per_layer_window`: the family's use_sliding_window turns on a window on some layers only,
    which is refused."""
    if c.get("mlp_bias") or (c.get("attention_bias") and not qkv_bias):
        raise UnsupportedModelError(f"{where}: projection biases other than Qwen2's on Q, K and V are not supported")
    if c.get("hidden_act", "silu") != "silu":
        raise UnsupportedModelError(f"{where}: activation {c['hidden_act']!r} is not supported")
    if per_layer_window and c.get("use_sliding_window"):
        raise UnsupportedModelError(f"{where}: {kind}'s per-layer sliding window is not supported")
    if not window and c.get("sliding_window") and c.get("use_sliding_window", True):
        raise UnsupportedModelError(f"{where}: a sliding window on {kind} is not supported")
    rotary = (c.get("rope_parameters") or {}).get("partial_rotary_factor", c.get("partial_rotary_factor")) or 1.0
    if rotary != 1.0:
        raise UnsupportedModelError(f"{where}: partial rotary embeddings (factor {rotary}) are not supported")
    theta, scaling = rope_scaling(c, where)
    d_model, n_heads = c["hidden_size"], c["num_attention_heads"]
    head_dim = c.get("head_dim") or d_model // n_heads
    if head_dim != d_model // n_heads and not own_head_dim:
        raise UnsupportedModelError(f"{where}: head_dim other than hidden_size / num_attention_heads is not supported")
    return ModelConfig(
        name=name, vocab_size=c["vocab_size"], context_length=c["max_position_embeddings"], d_model=d_model,
        n_layers=c["num_hidden_layers"], n_heads=n_heads, n_kv_heads=c.get("num_key_value_heads", n_heads),
        ffn_hidden=c["intermediate_size"], norm="rmsnorm", norm_eps=c.get("rms_norm_eps", 1e-6), positions="rope",
        rope_theta=theta, ffn="swiglu", bias=False, tied_embeddings=c.get("tie_word_embeddings", False),
        head_size=None if head_dim == d_model // n_heads else head_dim, qkv_bias=True if qkv_bias else None,
        qk_norm=qk_norm, sliding_window=c.get("sliding_window") if window else None, rope_scaling=scaling,
    )


def hf_tensors(config: ModelConfig, names: set[str], *, fused_qkv: bool = False,
               fused_gate_up: bool = False) -> TensorMap:
    """Hugging Face's Llama names (model.layers.N.self_attn.q_proj.weight …) → the engine's: Q, K and V joined, gate
    and up joined, unless the file already stores them as one (`fused_qkv`: qkv_proj, `fused_gate_up`: gate_up_proj,
    gate first; Phi-3)."""
    out = {"tok_embeddings.weight": stored("model.embed_tokens.weight"), "norm_f.weight": stored("model.norm.weight")}
    if not config.tied_embeddings:
        out["lm_head.weight"] = stored("lm_head.weight")
    for i in range(config.n_layers):
        p, b = f"model.layers.{i}.", f"blocks.{i}."
        out[b + "attn.qkv.weight"] = stored(p + "self_attn.qkv_proj.weight") if fused_qkv else \
            stored(*(p + f"self_attn.{x}_proj.weight" for x in "qkv"))
        if config.attention_bias:
            out[b + "attn.qkv.bias"] = stored(*(p + f"self_attn.{x}_proj.bias" for x in "qkv"))
        if config.qk_norm:
            out[b + "attn.q_norm.weight"] = stored(p + "self_attn.q_norm.weight")
            out[b + "attn.k_norm.weight"] = stored(p + "self_attn.k_norm.weight")
        out[b + "attn.out.weight"] = stored(p + "self_attn.o_proj.weight")
        out[b + "attn_norm.weight"] = stored(p + "input_layernorm.weight")
        out[b + "ffn_norm.weight"] = stored(p + "post_attention_layernorm.weight")  # the FFN's pre-norm, so named
        out[b + "ffn.gate_up.weight"] = stored(p + "mlp.gate_up_proj.weight") if fused_gate_up else \
            stored(p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight")
        out[b + "ffn.down.weight"] = stored(p + "mlp.down_proj.weight")
    return out


def gguf_config(meta: GGUFMetadata) -> ModelConfig:
    """llama.cpp's metadata (`{arch}.embedding_length` …) → a Llama ModelConfig (a family changes what it must)."""
    get, path = meta.get, meta.path
    d_model, n_heads = get("embedding_length"), get("attention.head_count")
    head_dim = get("attention.key_length", d_model // n_heads)
    if get("attention.value_length", head_dim) != head_dim:
        raise UnsupportedModelError(f"{path}: keys and values of different widths are not supported")
    if get("rope.dimension_count", head_dim) != head_dim:
        raise UnsupportedModelError(f"{path}: partial rotary embeddings are not supported")
    scaling = get("rope.scaling.type", "none")
    if scaling not in ("none", "linear"):
        raise UnsupportedModelError(f"{path}: RoPE scaling {scaling!r} is not supported (linear is)")
    tokens = meta.fields.get("tokenizer.ggml.tokens")
    return ModelConfig(
        name=meta.name, vocab_size=get("vocab_size", len(tokens) if tokens is not None else 0),
        context_length=get("context_length"), d_model=d_model, n_layers=get("block_count"), n_heads=n_heads,
        n_kv_heads=get("attention.head_count_kv", n_heads), ffn_hidden=get("feed_forward_length"), norm="rmsnorm",
        norm_eps=get("attention.layer_norm_rms_epsilon"), positions="rope", rope_theta=get("rope.freq_base", 10000.0),
        ffn="swiglu", bias=False, tied_embeddings="output.weight" not in meta.tensor_names,
        head_size=None if head_dim == d_model // n_heads else head_dim,
        rope_scaling=RopeScaling("linear", get("rope.scaling.factor")) if scaling == "linear" else None,
    )


def per_layer(tensors: TensorMap, n_layers: int, layer: str, own: dict[str, str]) -> TensorMap:
    """`tensors` with a family's own tensors of every layer added, or put in place of Llama's: `own` maps the engine's
    name inside block i to the file's inside layer i, whose names start with `layer` (formatted with i)."""
    for i in range(n_layers):
        tensors |= {f"blocks.{i}.{ours}": stored(layer.format(i) + theirs) for ours, theirs in own.items()}
    return tensors


def gguf_tensors(config: ModelConfig, names: set[str], *, interleaved: bool = True,
                 own: dict[str, str] | None = None) -> TensorMap:
    """llama.cpp's names (blk.N.attn_q.weight …) → the engine's: Q, K and V joined, gate and up joined. `interleaved`:
    llama.cpp's converter interleaved Q's and K's rotary pairs (Llama's files; Gemma's keep them in halves). `own`: a
    family's own tensors of each layer (`per_layer`)."""
    tensors = {"tok_embeddings.weight": stored("token_embd.weight"), "norm_f.weight": stored("output_norm.weight")}
    if not config.tied_embeddings:
        tensors["lm_head.weight"] = stored("output.weight")
    heads = (config.n_heads, config.kv_heads, None) if interleaved else ()
    for i in range(config.n_layers):
        p, b = f"blk.{i}.", f"blocks.{i}."
        tensors[b + "attn.qkv.weight"] = stored(*(p + f"attn_{x}.weight" for x in "qkv"), rotary_heads=heads)
        tensors[b + "attn.out.weight"] = stored(p + "attn_output.weight")
        tensors[b + "attn_norm.weight"] = stored(p + "attn_norm.weight")
        tensors[b + "ffn_norm.weight"] = stored(p + "ffn_norm.weight")
        if config.qk_norm:
            tensors[b + "attn.q_norm.weight"] = stored(p + "attn_q_norm.weight")
            tensors[b + "attn.k_norm.weight"] = stored(p + "attn_k_norm.weight")
        tensors[b + "ffn.gate_up.weight"] = stored(p + "ffn_gate.weight", p + "ffn_up.weight")
        tensors[b + "ffn.down.weight"] = stored(p + "ffn_down.weight")
    if "rope_freqs.weight" in names:  # Llama 3's RoPE scaling, as divisors of each frequency
        tensors["rope.freq_factors"] = stored("rope_freqs.weight")
    return per_layer(tensors, config.n_layers, "blk.{}.", own or {})


LLAMA = Family("Llama", model_type="llama", hf_config=partial(hf_config, kind="llama"), hf_tensors=hf_tensors,
               gguf_arch="llama", gguf_config=gguf_config, gguf_tensors=gguf_tensors)
