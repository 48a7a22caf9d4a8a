"""A Hugging Face checkpoint's config.json → ModelConfig (no tensor is read, and nothing here needs PyTorch)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from ..config import (
    GEMMA3,
    GEMMA3_LOCAL_ROPE_THETA,
    GEMMA3_SLIDING_PATTERN,
    ModelConfig,
    RopeScaling,
    every_nth_full,
)
from ..errors import ModelFileError, UnsupportedModelError


def _gpt_config(c: dict, name: str, post_norm: bool) -> ModelConfig:
    act = c.get("activation_function", c.get("afn", "gelu_new"))
    if act not in ("gelu", "gelu_new", "gelu_pytorch_tanh"):
        raise UnsupportedModelError(f"activation {act!r} is not supported")
    # GPT-1's "gelu" is the tanh approximation in its reference code; GPT-2 says "gelu_new" for it
    exact = act == "gelu" and not post_norm
    return ModelConfig(
        name=name, vocab_size=c["vocab_size"], context_length=c["n_positions"], d_model=c["n_embd"],
        n_layers=c["n_layer"], n_heads=c["n_head"], ffn_hidden=c.get("n_inner"), norm="layernorm",
        norm_position="post" if post_norm else "pre", norm_eps=c.get("layer_norm_epsilon", 1e-5),
        positions="learned", ffn="gelu", gelu_approximate="none" if exact else "tanh", bias=True,
        tied_embeddings=c.get("tie_word_embeddings", True),
    )


def _rope_scaling(c: dict, where: str) -> tuple[float, RopeScaling | None]:
    """RoPE's base and scaling rule, from `rope_parameters` (transformers ≥ 5) or `rope_scaling` + `rope_theta`."""
    rope = c.get("rope_parameters") or c.get("rope_scaling") or {}
    theta = rope.get("rope_theta", c.get("rope_theta", 10000.0))
    kind = rope.get("rope_type", rope.get("type", "default"))
    if kind == "default":
        return theta, None
    if kind == "linear":
        return theta, RopeScaling("linear", rope["factor"])
    if kind == "llama3":
        return theta, RopeScaling("llama3", rope["factor"], rope["low_freq_factor"], rope["high_freq_factor"],
                                  rope["original_max_position_embeddings"])
    if kind == "yarn":
        original = rope.get("original_max_position_embeddings") or c["max_position_embeddings"]
        factor = rope.get("factor") or c["max_position_embeddings"] / original
        attention = rope.get("attention_factor")
        if attention is None:  # 0.1 ln(factor) + 1, or the ratio of two such with their own multipliers
            def mscale(m: float = 1.0) -> float:
                return 1.0 if factor <= 1 else 0.1 * m * math.log(factor) + 1.0
            both = rope.get("mscale") and rope.get("mscale_all_dim")
            attention = mscale(rope["mscale"]) / mscale(rope["mscale_all_dim"]) if both else mscale()
        return theta, RopeScaling("yarn", factor, original_context=original, beta_fast=rope.get("beta_fast") or 32.0,
                                  beta_slow=rope.get("beta_slow") or 1.0, attention_factor=attention,
                                  truncate=rope.get("truncate", True))
    raise UnsupportedModelError(f"{where}: RoPE scaling {kind!r} is not supported (linear, llama3 and yarn are)")


def _llama_config(c: dict, name: str, kind: str, where: str) -> ModelConfig:
    """Llama and the families that differ from it by switches: Mistral (a sliding window), Qwen2 (biases on Q, K
    and V), Qwen3 (QK-norm, its own head_dim), Phi-3 (Q, K, V and gate, up stored fused, a sliding window)."""
    if c.get("mlp_bias") or (c.get("attention_bias") and kind != "qwen2"):
        raise UnsupportedModelError(f"{where}: projection biases other than Qwen2's on Q, K and V are not supported")
    if c.get("hidden_act", "silu") != "silu":
        raise UnsupportedModelError(f"{where}: activation {c['hidden_act']!r} is not supported")
    if kind in ("qwen2", "qwen3") and c.get("use_sliding_window"):
        raise UnsupportedModelError(f"{where}: {kind}'s per-layer sliding window is not supported")
    windowed = kind in ("mistral", "phi3")
    if not windowed and c.get("sliding_window") and c.get("use_sliding_window", True):
        raise UnsupportedModelError(f"{where}: a sliding window on {kind} is not supported")
    rotary = (c.get("rope_parameters") or {}).get("partial_rotary_factor", c.get("partial_rotary_factor")) or 1.0
    if rotary != 1.0:
        raise UnsupportedModelError(f"{where}: partial rotary embeddings (factor {rotary}) are not supported")
    theta, scaling = _rope_scaling(c, where)
    d_model, n_heads = c["hidden_size"], c["num_attention_heads"]
    head_dim = c.get("head_dim") or d_model // n_heads
    if head_dim != d_model // n_heads and kind not in ("qwen3", "mistral", "phi3"):
        raise UnsupportedModelError(f"{where}: head_dim other than hidden_size / num_attention_heads is not supported")
    return ModelConfig(
        name=name, vocab_size=c["vocab_size"], context_length=c["max_position_embeddings"], d_model=d_model,
        n_layers=c["num_hidden_layers"], n_heads=n_heads, n_kv_heads=c.get("num_key_value_heads", n_heads),
        ffn_hidden=c["intermediate_size"], norm="rmsnorm", norm_eps=c.get("rms_norm_eps", 1e-6), positions="rope",
        rope_theta=theta, ffn="swiglu", bias=False, tied_embeddings=c.get("tie_word_embeddings", False),
        head_size=None if head_dim == d_model // n_heads else head_dim, qkv_bias=True if kind == "qwen2" else None,
        qk_norm=kind == "qwen3", sliding_window=c.get("sliding_window") if windowed else None,
        rope_scaling=scaling,
    )


def _gemma3_config(c: dict, name: str, where: str) -> ModelConfig:
    """Gemma 3: GeGLU, sandwich norms, embeddings × √d_model, QK-norm, its own head_dim and attention scale, and
    sliding-window layers (with their own RoPE base) between full-attention ones."""
    for key in ("final_logit_softcapping", "attn_logit_softcapping"):
        if c.get(key):
            raise UnsupportedModelError(f"{where}: {key} is not supported")
    if c.get("use_bidirectional_attention"):
        raise UnsupportedModelError(f"{where}: bidirectional attention is not supported")
    if c.get("hidden_activation", "gelu_pytorch_tanh") != "gelu_pytorch_tanh":
        raise UnsupportedModelError(f"{where}: activation {c['hidden_activation']!r} is not supported")
    rope = c.get("rope_parameters") or {}
    if "full_attention" in rope:  # transformers ≥ 5: one set per layer type
        full, local = rope["full_attention"], rope.get("sliding_attention", {})
    else:
        full = rope or {"rope_theta": c.get("rope_theta", 1e6), **(c.get("rope_scaling") or {})}
        local = {"rope_theta": c.get("rope_local_base_freq", GEMMA3_LOCAL_ROPE_THETA)}
    if local.get("rope_type", "default") != "default":
        raise UnsupportedModelError(f"{where}: RoPE scaling on the sliding layers is not supported")
    theta, scaling = _rope_scaling({"rope_parameters": full}, where)
    n_layers = c["num_hidden_layers"]
    kinds = c.get("layer_types")
    layer_types = tuple("sliding" if k == "sliding_attention" else "full" for k in kinds) if kinds else \
        every_nth_full(n_layers, c.get("sliding_window_pattern", GEMMA3_SLIDING_PATTERN))
    d_model, n_heads = c["hidden_size"], c["num_attention_heads"]
    head_dim = c.get("head_dim") or d_model // n_heads
    return ModelConfig(
        name=name, vocab_size=c["vocab_size"], context_length=c["max_position_embeddings"], d_model=d_model,
        n_layers=n_layers, n_heads=n_heads, n_kv_heads=c.get("num_key_value_heads", n_heads),
        ffn_hidden=c["intermediate_size"], norm="rmsnorm", norm_eps=c.get("rms_norm_eps", 1e-6), positions="rope",
        rope_theta=theta, rope_scaling=scaling, bias=False, tied_embeddings=c.get("tie_word_embeddings", True),
        head_size=None if head_dim == d_model // n_heads else head_dim, qkv_bias=bool(c.get("attention_bias")) or None,
        query_scale=c.get("query_pre_attn_scalar", head_dim) ** -0.5, sliding_window=c["sliding_window"],
        layer_types=layer_types, local_rope_theta=local.get("rope_theta", GEMMA3_LOCAL_ROPE_THETA), **GEMMA3,
    )


ARCHITECTURES = ("gpt2", "openai-gpt", "llama", "mistral", "qwen2", "qwen3", "phi3", "gemma3_text")  # model_types


def safetensors_config(path: Path) -> tuple[ModelConfig, str]:
    """The checkpoint's ModelConfig and model_type, from its config.json alone."""
    directory = path if path.is_dir() else path.parent
    config_path = directory / "config.json"
    if not config_path.exists():
        raise ModelFileError(f"{directory}: no config.json beside the safetensors weights")
    try:
        c = json.loads(config_path.read_text())
        kind = c.get("model_type")
        if kind not in ARCHITECTURES:
            raise UnsupportedModelError(f"{config_path}: model_type {kind!r} is not supported "
                                        f"(supported: {', '.join(ARCHITECTURES)})")
        name = c.get("_name_or_path") or directory.name
        if kind in ("llama", "mistral", "qwen2", "qwen3", "phi3"):
            config = _llama_config(c, name, kind, str(config_path))
        elif kind == "gemma3_text":
            config = _gemma3_config(c, name, str(config_path))
        else:
            config = _gpt_config(c, name, post_norm=kind == "openai-gpt")
    except KeyError as e:
        raise ModelFileError(f"{config_path}: lacks {e.args[0]}") from None
    except (json.JSONDecodeError, TypeError) as e:
        raise ModelFileError(f"{config_path}: not a valid config ({e})") from None
    return config, kind
