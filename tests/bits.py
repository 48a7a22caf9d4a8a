"""Bit-for-bit tensor equality, and activations as the native kernels see them."""

from __future__ import annotations

import torch


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal bytes, NaN included: a cache's unwritten slots hold whatever the memory held, and NaN != NaN."""
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(a.view(torch.uint8), b.view(torch.uint8))


def fifteen_bits(x: torch.Tensor) -> torch.Tensor:
    """x as the kernels see it: per block of 32, 128 hi + lo in steps of (block max / 127) / 128."""
    blocks = x.view(*x.shape[:-1], -1, 32)
    step = blocks.abs().amax(-1, keepdim=True) / 127
    v = blocks / torch.where(step > 0, step, 1)
    hi = torch.round(v)
    return ((hi + torch.round((v - hi) * 128) / 128) * step).view_as(x)
