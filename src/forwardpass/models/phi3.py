"""Phi-3: Llama with a sliding window and a head_dim of its own, whose checkpoints store Q, K and V as one matrix
(qkv_proj) and gate and up as another (gate_up_proj, gate first), as the engine keeps them. llama.cpp's converter
writes both unchanged (blk.N.attn_qkv, a double-width blk.N.ffn_up), keeps Q's and K's rotary pairs in halves, and
writes the window as phi3.attention.sliding_window (0: none, as Phi-4's). llama.cpp itself ignores that window;
transformers, and so the engine, applies it."""

from __future__ import annotations

from functools import partial

from ..config import ModelConfig
from ..errors import UnsupportedModelError
from . import llama
from .family import Family, GGUFMetadata

LONGROPE = ("rope_factors_long.weight", "rope_factors_short.weight")  # the converter's long-context RoPE factors


def gguf_config(meta: GGUFMetadata) -> ModelConfig:
    """Llama's metadata and the window; a file with longrope's factors is refused, as its config.json would be."""
    if any(name in meta.tensor_names for name in LONGROPE):
        raise UnsupportedModelError(f"{meta.path}: Phi-3's longrope RoPE scaling ({', '.join(LONGROPE)}) "
                                    "is not supported")
    return llama.gguf_config(meta).with_(sliding_window=meta.get("attention.sliding_window", 0) or None)


# Llama's names, with Q, K, V in one tensor and gate, up in one ffn_up (gate rows first)
FUSED = {"attn.qkv.weight": "attn_qkv.weight", "ffn.gate_up.weight": "ffn_up.weight"}

PHI3 = Family("Phi-3", model_type="phi3",
              hf_config=partial(llama.hf_config, kind="phi3", window=True, own_head_dim=True),
              hf_tensors=partial(llama.hf_tensors, fused_qkv=True, fused_gate_up=True),
              gguf_arch="phi3", gguf_config=gguf_config,
              gguf_tensors=partial(llama.gguf_tensors, interleaved=False, own=FUSED))
