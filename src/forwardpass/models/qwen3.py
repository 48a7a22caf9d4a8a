"""Qwen3: Llama with QK-norm (RMSNorm over each head of q and k before RoPE) and a head_dim of its own. Its per-layer
sliding window (use_sliding_window) is refused."""

from __future__ import annotations

from functools import partial

from . import llama
from .family import Family

QWEN3 = Family("Qwen3", model_type="qwen3",
               hf_config=partial(llama.hf_config, kind="qwen3", qk_norm=True, own_head_dim=True,
                                 per_layer_window=True),
               hf_tensors=llama.hf_tensors)
