"""q8_0 KV pairs: each key or value row of head_dim numbers kept as blocks of 32, a block 34 bytes (llama.cpp's q8_0
layout): its scale as a binary16, then 32 int8 values q, the row reading back as q × scale. 8.5 bits a number, so a pool
of the same bytes holds 64 / 34 ≈ 1.9 times float16's pairs.

A block is quantized as it is written: scale = max|x| / 127 rounded to binary16, each q = x / scale rounded to nearest
(ties to even), the rounded scale itself dividing, so every number reads back within scale / 2 of what was written
(for a block whose max|x| is below 0.001, where the binary16 scale is subnormal and coarse, within 127 × 2^-25 ≈ 4e-6).
A NaN or an infinity in a block (or max|x| past 127 × 65504) makes its scale NaN or infinite: the block reads back
NaN, never a plausible number. kernels/decode_step.c stores and reads the same bytes (kv_encode, kv_load): the two
paths round the same float32 numbers to the same blocks and read a block back as the same float32 numbers (q × scale
is exact in float32).

A pool of q8_0 pairs is the format "q8_0" (its PyTorch view has the dtype `Q8_0`, int8), its rows (head_dim / 32 × 34
bytes) in place of float rows."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .errors import ForwardpassError
from .kernels.abi import BLOCK, KV_BLOCK_BYTES

if TYPE_CHECKING:
    import torch

# each KV format → the numpy dtype a CPU pool holds it in (bfloat16 as its bits: numpy has no such type; q8_0's rows
# as bytes)
NUMPY_KV = {"float32": np.float32, "float16": np.float16, "bfloat16": np.uint16, "q8_0": np.int8}


def torch_dtype(name: str) -> torch.dtype:
    """A KV format's PyTorch dtype (q8_0: int8, its rows as bytes)."""
    import torch

    return torch.int8 if name == "q8_0" else getattr(torch, name)


def __getattr__(name: str):
    if name == "Q8_0":  # a KV pool's PyTorch dtype when it holds q8_0 blocks
        return torch_dtype("q8_0")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def kv_name(dtype) -> str:
    """A KV pool's format by name — float32, float16, bfloat16 or q8_0 — from that name or a PyTorch dtype (Q8_0's
    int8 is q8_0)."""
    if isinstance(dtype, str):
        return dtype
    name = str(dtype).removeprefix("torch.")
    return "q8_0" if name == "int8" else name


def row_bytes(head_dim: int, dtype) -> int:
    """Bytes of one key (or value) row of one head in a pool of `dtype` pairs (a format's name or a PyTorch dtype)."""
    name = kv_name(dtype)
    if name not in NUMPY_KV:
        floats = ", ".join(n for n in NUMPY_KV if n != "q8_0")
        raise ForwardpassError(f"unknown KV cache format {name!r}; choose from {floats} or q8_0")
    if name != "q8_0":
        return head_dim * np.dtype(NUMPY_KV[name]).itemsize
    if head_dim % BLOCK:
        raise ForwardpassError(f"q8_0 KV pairs are blocks of {BLOCK} numbers, and this model's head_dim is {head_dim} "
                               f"(not a multiple of {BLOCK}): choose --kv-cache-dtype float16 or float32")
    return head_dim // BLOCK * KV_BLOCK_BYTES


def quantize(x: torch.Tensor) -> torch.Tensor:
    """(..., head_dim) numbers → (..., head_dim / 32 × 34) int8: the rows as q8_0 blocks."""
    import torch

    blocks = x.float().unflatten(-1, (-1, BLOCK))  # (..., blocks, 32)
    scale = (blocks.abs().amax(-1, keepdim=True) / 127).half()  # (..., blocks, 1)
    wide = scale.float()
    q = (blocks / torch.where(wide > 0, wide, 1)).round().clamp(-127, 127).to(torch.int8)  # a zero block: all 0
    return torch.cat((scale.view(torch.int8), q), -1).flatten(-2)


def dequantize(rows: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor:
    """(..., head_dim / 32 × 34) int8 q8_0 rows → (..., head_dim) numbers in `dtype` (None: float32)."""
    import torch

    dtype = dtype or torch.float32
    blocks = rows.unflatten(-1, (-1, KV_BLOCK_BYTES))  # (..., blocks, 34)
    scale = blocks[..., :2].contiguous().view(torch.float16).float()  # (..., blocks, 1)
    return (blocks[..., 2:].float() * scale).flatten(-2).to(dtype)
