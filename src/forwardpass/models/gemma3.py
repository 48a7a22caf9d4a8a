"""Gemma 3: GeGLU, sandwich norms, embeddings × √d_model, QK-norm, its own head_dim and attention scale, and
sliding-window layers (with their own RoPE base) between full-attention ones. Its RMSNorm scales by 1 + w:
safetensors store w, llama.cpp's converter stores 1 + w, and the engine keeps 1 + w. Its GGUF files keep Q's and K's
rotary pairs in halves and carry no chat template."""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from ..config import ModelConfig
from ..errors import UnsupportedModelError
from . import llama
from .family import Family, GGUFMetadata, TensorMap
from .rope_scaling import rope_scaling

SWITCHES = {"ffn": "geglu", "qk_norm": True, "embed_scale": True, "sandwich_norm": True}
SLIDING_PATTERN = 6  # every 6th layer attends to everything, the others through the window
LOCAL_ROPE_THETA = 10000.0  # the sliding layers' RoPE base where a file does not say

# Gemma's turns: system text opens the first user turn; the assistant is "model"; a tool's answer is a user turn
CHAT_TEMPLATE = (
    "{{ bos_token }}{% set ns = namespace(system='') %}{% for m in messages %}"
    "{% if m['role'] in ['system', 'developer'] %}{% set ns.system = ns.system + m['content'] + '\\n\\n' %}"
    "{% else %}<start_of_turn>{{ 'model' if m['role'] == 'assistant' else 'user' }}\n"
    "{% if m['role'] != 'assistant' %}{{ ns.system }}{% set ns.system = '' %}{% endif %}"
    "{{ m['content'] | trim }}<end_of_turn>\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}")


def every_nth_full(n_layers: int, n: int) -> tuple[str, ...]:
    """Layer types with every n-th layer full attention and the others sliding (Gemma 3's pattern)."""
    return tuple("sliding" if (i + 1) % n else "full" for i in range(n_layers))


def hf_config(c: dict, name: str, where: str) -> ModelConfig:
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
        local = {"rope_theta": c.get("rope_local_base_freq", LOCAL_ROPE_THETA)}
    if local.get("rope_type", "default") != "default":
        raise UnsupportedModelError(f"{where}: RoPE scaling on the sliding layers is not supported")
    theta, scaling = rope_scaling({"rope_parameters": full}, where)
    n_layers = c["num_hidden_layers"]
    kinds = c.get("layer_types")
    layer_types = tuple("sliding" if k == "sliding_attention" else "full" for k in kinds) if kinds else \
        every_nth_full(n_layers, c.get("sliding_window_pattern", SLIDING_PATTERN))
    d_model, n_heads = c["hidden_size"], c["num_attention_heads"]
    head_dim = c.get("head_dim") or d_model // n_heads
    return ModelConfig(
        name=name, vocab_size=c["vocab_size"], context_length=c["max_position_embeddings"], d_model=d_model,
        n_layers=n_layers, n_heads=n_heads, n_kv_heads=c.get("num_key_value_heads", n_heads),
        ffn_hidden=c["intermediate_size"], norm="rmsnorm", norm_eps=c.get("rms_norm_eps", 1e-6), positions="rope",
        rope_theta=theta, rope_scaling=scaling, bias=False, tied_embeddings=c.get("tie_word_embeddings", True),
        head_size=None if head_dim == d_model // n_heads else head_dim, qkv_bias=bool(c.get("attention_bias")) or None,
        query_scale=c.get("query_pre_attn_scalar", head_dim) ** -0.5, sliding_window=c["sliding_window"],
        layer_types=layer_types, local_rope_theta=local.get("rope_theta", LOCAL_ROPE_THETA), **SWITCHES,
    )


def hf_tensors(config: ModelConfig, names: set[str]) -> TensorMap:
    """Llama's names, with a norm before and after each sublayer (Llama's "post-attention" norm is here the attention's
    post-norm), every norm stored as w for 1 + w."""
    out = llama.per_layer(llama.hf_tensors(config, names), config.n_layers, "model.layers.{}.", {
        "attn_post_norm.weight": "post_attention_layernorm.weight",
        "ffn_norm.weight": "pre_feedforward_layernorm.weight",
        "ffn_post_norm.weight": "post_feedforward_layernorm.weight"})
    return {ours: replace(s, add_one=True) if "norm" in ours else s for ours, s in out.items()}  # norm_f, q_norm …


def gguf_config(meta: GGUFMetadata) -> ModelConfig:
    """The file stores neither the layer pattern nor the sliding layers' RoPE base (llama.cpp takes the same
    defaults)."""
    config = llama.gguf_config(meta)
    return config.with_(
        query_scale=config.head_dim**-0.5, sliding_window=meta.get("attention.sliding_window"),
        local_rope_theta=LOCAL_ROPE_THETA, layer_types=every_nth_full(config.n_layers, SLIDING_PATTERN), **SWITCHES)


# GGUF: Llama's names, rotary pairs in halves, and each sublayer's post-norm
POST_NORMS = {"attn_post_norm.weight": "post_attention_norm.weight", "ffn_post_norm.weight": "post_ffw_norm.weight"}

GEMMA3 = Family("Gemma 3", model_type="gemma3_text", hf_config=hf_config, hf_tensors=hf_tensors, gguf_arch="gemma3",
                gguf_config=gguf_config, gguf_tensors=partial(llama.gguf_tensors, interleaved=False, own=POST_NORMS),
                chat_template=CHAT_TEMPLATE)
