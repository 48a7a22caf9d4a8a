"""Bit-for-bit tensor equality."""

from __future__ import annotations

import torch


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal bytes, NaN included: a cache's unwritten slots hold whatever the memory held, and NaN != NaN."""
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(a.view(torch.uint8), b.view(torch.uint8))
