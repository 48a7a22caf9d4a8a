"""config.json's RoPE base and scaling rule → RopeScaling (the Llama-shaped families and Gemma 3 write it alike)."""

from __future__ import annotations

import math

from ..config import RopeScaling
from ..errors import UnsupportedModelError


def rope_scaling(c: dict, where: str) -> tuple[float, RopeScaling | None]:
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
