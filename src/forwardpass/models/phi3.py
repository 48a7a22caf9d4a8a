"""Phi-3: Llama with a sliding window and a head_dim of its own, whose checkpoints store Q, K and V as one matrix
(qkv_proj) and gate and up as another (gate_up_proj, gate first), as the engine keeps them."""

from __future__ import annotations

from functools import partial

from . import llama
from .family import Family

PHI3 = Family("Phi-3", model_type="phi3",
              hf_config=partial(llama.hf_config, kind="phi3", window=True, own_head_dim=True),
              hf_tensors=partial(llama.hf_tensors, fused_qkv=True, fused_gate_up=True))
