"""Qwen2: Llama with biases on Q, K and V (and only there). Its per-layer sliding window (use_sliding_window) is
refused."""

from __future__ import annotations

from functools import partial

from . import llama
from .family import Family

QWEN2 = Family("Qwen2", model_type="qwen2",
               hf_config=partial(llama.hf_config, kind="qwen2", qkv_bias=True, per_layer_window=True),
               hf_tensors=llama.hf_tensors)
