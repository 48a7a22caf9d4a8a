"""GGUF's block formats (ggml's quant types), one row each: the weights a block holds, its bytes, the width of the
tiles that hold its integers, the form of its scales, a symmetric grid's zero, and how its blocks become
forwardpass's own (`quant.Blocks`: unsigned integers q in blocks of 32, w = minimum + scale × q, the scale and
minimum per block or, for Q6_K, per 16 weights). The native repacking (kernels/repack.c) states the same rows; they
are checked against each other before the first band is repacked (`native`).

Every format here is such a grid already, so the repacking is exact: the weights dequantize to what `gguf`
dequantizes, bit for bit (tests/test_formats.py). A format's integers go to the narrowest width the kernels read
that holds them (4 or 8 bits)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .. import kernels
from ..errors import ForwardpassError
from ..kernels.abi import F16, FACTORS, HALVES
from ..quant import BLOCK
from .ggml import BLOCK_SIZES, GGMLType

if TYPE_CHECKING:
    import torch

    from ..quant import Blocks

Q = GGMLType
# q (n, 32) uint8, scale and minimum (n,) float32 (per 16 weights: (n, 2))
Unpacked = tuple[np.ndarray, np.ndarray, np.ndarray]
# K-quants' scale and minimum as factors: (blocks, 8) uint8 and (blocks,) float16 each, value = factor × float16
Factors = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class BlockFormat:
    kind: GGMLType
    bits: int  # the kernel width that holds q: 4 or 8
    unpack: Callable[[np.ndarray], Unpacked]  # (blocks, type_size) uint8 → blocks of 32 (kernels/repack.c tiles
    # the same numbers straight from the file's bytes where the kernels run)
    scales: int = F16  # how the tiles' scales are kept (kernels/abi.h): the file's fp16, FACTORS, or HALVES
    zero: int | None = None  # a symmetric grid's zero (every minimum -zero × its scale); None: minimums of its own
    factors: Callable[[np.ndarray], Factors] | None = None  # the scales as the file factors them (quant.Factored)

    @property
    def type_size(self) -> int:  # bytes per block
        return BLOCK_SIZES[self.kind][1]

    @property
    def tile(self) -> int:  # tile bytes per group of 16 rows and block of 32 inputs
        return 256 if self.bits == 4 else 512


def _half(b: np.ndarray, at: int) -> np.ndarray:
    """The fp16 at byte `at` of every block, as float32, (blocks,)."""
    return np.ascontiguousarray(b[:, at:at + 2]).view(np.float16)[:, 0].astype(np.float32)


def _nibbles(qs: np.ndarray) -> np.ndarray:
    """(…, 16) bytes → (…, 32): low nibbles are weights 0–15, high nibbles 16–31 (ggml's order)."""
    out = np.empty((*qs.shape[:-1], 32), dtype=np.uint8)
    np.bitwise_and(qs, 15, out=out[..., :16])
    np.right_shift(qs, 4, out=out[..., 16:])
    return out


def _high_bits(qh: np.ndarray) -> np.ndarray:
    """(blocks, 4) bytes → (blocks, 32): bit i of the little-endian word, weight i's fifth bit."""
    return np.unpackbits(qh, axis=-1, bitorder="little")


def _q4_0(b):
    d = _half(b, 0)
    return _nibbles(b[:, 2:18]), d, -8 * d


def _q4_1(b):
    return _nibbles(b[:, 4:20]), _half(b, 0), _half(b, 2)


def _q5_0(b):
    d = _half(b, 0)
    return _nibbles(b[:, 6:22]) | (_high_bits(b[:, 2:6]) << 4), d, -16 * d


def _q5_1(b):
    return _nibbles(b[:, 8:24]) | (_high_bits(b[:, 4:8]) << 4), _half(b, 0), _half(b, 2)


def _q8_0(b):
    d = _half(b, 0)
    return b[:, 2:34] ^ np.uint8(128), d, -128 * d  # int8 q + 128, as unsigned


IQ4_NL_VALUES = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113], np.int16)


def _iq4_nl(b):
    """IQ4_NL: w = d × the value its nibble names in a fixed table (int8, denser near 0): as an 8-bit grid, q = value
    + 128 over a minimum of -128 d, every product exact in float32."""
    d = _half(b, 0)
    return (IQ4_NL_VALUES[_nibbles(b[:, 2:18])] + 128).astype(np.uint8), d, -128 * d


def _k_scales(b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Q4_K/Q5_K: each 256-block's 8 six-bit scales and minimums, packed in 12 bytes at byte 4, (blocks, 8) uint8."""
    s = b[:, 4:16]
    sc = np.concatenate([s[:, 0:4] & 63, (s[:, 8:12] & 15) | ((s[:, 0:4] >> 2) & 48)], axis=-1)
    mn = np.concatenate([s[:, 4:8] & 63, (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 2) & 48)], axis=-1)
    return sc, mn


def _k_factors(b: np.ndarray) -> Factors:
    """Q4_K/Q5_K: w = d sc q - dmin m per 32 weights, the scale and minimum as factors: sc × d and m × -dmin."""
    sc, mn = _k_scales(b)
    half = np.ascontiguousarray(b[:, 0:4]).view(np.float16)  # (blocks, 2): d, dmin
    return sc, half[:, 0].copy(), mn, -half[:, 1]


def _k_grid(b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Q4_K/Q5_K: the factors multiplied out in float32, as (scale, minimum), each (blocks × 8,)."""
    sc, d, mn, dmin = _k_factors(b)
    return (d.astype(np.float32)[:, None] * sc).reshape(-1), (dmin.astype(np.float32)[:, None] * mn).reshape(-1)


def _k_low(qs: np.ndarray) -> np.ndarray:
    """(blocks, 128) bytes → (blocks × 8, 32): 32 bytes give sub-block 2j its low nibbles, 2j + 1 its high ones."""
    qs = qs.reshape(-1, 4, 1, 32) >> np.array([0, 4], dtype=np.uint8).reshape(1, 1, 2, 1)
    return (qs & 15).reshape(-1, 32)


def _q4_k(b):
    return (_k_low(b[:, 16:144]), *_k_grid(b))


def _q5_k(b):
    qh = b[:, 16:48].reshape(-1, 1, 32) >> np.arange(8, dtype=np.uint8).reshape(1, 8, 1)  # bit j: sub-block j
    return (_k_low(b[:, 48:176]) | ((qh & 1).reshape(-1, 32) << 4), *_k_grid(b))


def _q6_k(b):
    """Q6_K: w = d sc (q - 32) with q 6 bits (4 low of 128 bytes, 2 high of 64) and an int8 scale sc per 16 weights.
    Weight 128 n + 32 k + l of a 256-block: nibble k // 2 of byte 64 n + 32 (k % 2) + l, bit pair k of byte
    32 n + l."""
    low = b[:, :128].reshape(-1, 2, 1, 2, 32) >> np.array([0, 4], np.uint8).reshape(1, 1, 2, 1, 1)  # (n, k//2, k%2, l)
    high = b[:, 128:192].reshape(-1, 2, 1, 32) >> np.array([0, 2, 4, 6], np.uint8).reshape(1, 1, 4, 1)  # (n, k, l)
    q = (low.reshape(-1, 2, 4, 32) & 15) | ((high & 3) << 4)
    scale = _half(b, 208)[:, None] * b[:, 192:208].view(np.int8)  # (blocks, 16), exact in float32
    return q.reshape(-1, 32), scale.reshape(-1, 2), scale.reshape(-1, 2) * -32


FORMATS = {f.kind: f for f in (
    BlockFormat(Q.Q4_0, 4, _q4_0, zero=8),
    BlockFormat(Q.Q4_1, 4, _q4_1),
    BlockFormat(Q.Q5_0, 8, _q5_0, zero=16),
    BlockFormat(Q.Q5_1, 8, _q5_1),
    BlockFormat(Q.Q8_0, 8, _q8_0, zero=128),
    BlockFormat(Q.Q4_K, 4, _q4_k, FACTORS, factors=_k_factors),
    BlockFormat(Q.Q5_K, 8, _q5_k, FACTORS, factors=_k_factors),
    BlockFormat(Q.Q6_K, 8, _q6_k, HALVES, zero=32),
    BlockFormat(Q.IQ4_NL, 8, _iq4_nl, zero=128),
)}
FLOATS = {Q.F32: "float32", Q.F16: "float16", Q.BF16: "bfloat16"}  # the float formats, by dtype name


def supported() -> list[str]:
    return [k.name for k in (*FLOATS, *FORMATS)]


def mismatches(native: list[dict]) -> list[str]:
    """Where repack.c's rows (kernels.repack_formats) and FORMATS disagree, in words; a format the kernels do not
    read is not a mismatch (it is unpacked in Python)."""
    said = []
    for row in native:
        kind = Q(row["kind"])
        if kind not in FORMATS:
            said.append(f"repack.c reads {kind.name}, which weights/formats.py does not know")
            continue
        f = FORMATS[kind]
        zero = -1 if f.zero is None else f.zero
        ours = {"block_bytes": f.type_size, "tile": f.tile, "scales": f.scales, "zero": zero}
        said += [f"{kind.name}.{name}: {row[name]} in repack.c, {value} in weights/formats.py"
                 for name, value in ours.items() if row[name] != value]
    return said


@functools.cache
def native() -> frozenset:
    """The formats the kernels repack, once their rows are checked against FORMATS (a difference is refused by name);
    none without kernels."""
    if not kernels.available():
        return frozenset()
    rows = kernels.repack_formats()
    bad = mismatches(rows)
    if bad:
        raise ForwardpassError("the native repacking and weights/formats.py disagree: " + "; ".join(bad))
    return frozenset(Q(row["kind"]) for row in rows)


def repack(kind: GGMLType, data: np.ndarray, rows: int, cols: int, q: np.ndarray | None = None):
    """kernels.repack with the format's own row: (tiles, scale, minimum, zero). Call only for a kind in native()."""
    if kind not in native():
        raise ForwardpassError(f"the native repacking reads {', '.join(k.name for k in sorted(native()))} blocks, "
                               f"not {kind.name}")
    f = FORMATS[kind]
    return kernels.repack(kind.value, f.tile, f.scales, f.zero, data, rows, cols, q)


def to_blocks(data: np.ndarray, kind: GGMLType, rows: int, cols: int) -> Blocks:
    """A (rows, cols) tensor in block format `kind` → Blocks, the file's own numbers."""
    import torch

    from ..quant import Blocks, Factored
    f = FORMATS[kind]
    b = np.asarray(data, dtype=np.uint8).reshape(-1, f.type_size)  # one block a row
    q, scale, minimum = f.unpack(b)
    blocks = cols // BLOCK
    factored = None
    if f.factors:
        sc, d, mn, dmin = (torch.from_numpy(np.ascontiguousarray(a)) for a in f.factors(b))
        factored = (Factored(sc.view(rows, blocks), d.view(rows, -1)),
                    Factored(mn.view(rows, blocks), dmin.view(rows, -1)))
    return Blocks(torch.from_numpy(np.ascontiguousarray(q)).view(rows, blocks, BLOCK),
                  torch.from_numpy(np.ascontiguousarray(scale, dtype=np.float32)).view(rows, blocks, -1),
                  torch.from_numpy(np.ascontiguousarray(minimum, dtype=np.float32)).view(rows, blocks, -1), f.bits,
                  factored=factored)


def to_float(data: np.ndarray, kind: GGMLType) -> torch.Tensor:
    """A float-format tensor as its own dtype (a copy: the file's memory map is read-only)."""
    import torch

    if kind == Q.BF16:
        return torch.from_numpy(np.array(data, dtype=np.uint8).view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(np.array(data, dtype=np.float32 if kind == Q.F32 else np.float16))
