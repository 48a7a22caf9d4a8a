"""A matrix's integer tiles as the native kernels read them (kernels/gemv.h), in numpy: `Tiles` for a band of rows,
`Packed` for the whole matrix, and `pack` joining a matrix's bands into one — the one place where bands of different
formats (scales float16, float32, factored or per 16 weights; minimums or a symmetric grid's zero) meet. The PyTorch
layer (layers.QuantizedLinear) holds a Packed matrix; the native loader (weights/native_read.py) builds them without
PyTorch."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ..errors import InvariantError
from ..kernels.abi import BLOCK, GROUP, OCTET  # inputs per block, rows per tile, bytes of 8 blocks' factored scales


@dataclass
class Tiles:
    """A band of rows in the kernels' layout: q (groups, blocks, 256 or 512) bytes; scale and minimum (groups, blocks,
    16) float16 or float32, factored bytes (groups, blocks / 8, 160), or float32 per 16 weights (groups, blocks, 2, 16);
    minimum None for a symmetric grid, each minimum -zero × its scale; `rows` real rows, the last group's rest zero."""

    q: np.ndarray
    scale: np.ndarray
    minimum: np.ndarray | None
    zero: int | None
    rows: int


@dataclass
class Packed:
    """A whole matrix's tiles (`Tiles`' forms, one for all its rows): minimum None where every block's is
    -zero × its scale."""

    q: np.ndarray
    scale: np.ndarray
    minimum: np.ndarray | None
    zero: int
    bits: int
    out_features: int
    in_features: int


def group_span(done: int, rows: int) -> slice:
    """The tile groups holding rows done … done + rows - 1 of a matrix tiled band by band (every band but the last
    whole groups): where a band is stored, and where a repacking writes it in place."""
    return slice(done // GROUP, -(-(done + rows) // GROUP))


def factor_parts(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tiled factored scales → their factors (groups, blocks / 8, 8, 16) uint8 and scales (groups, blocks / 8, 16)
    float16."""
    groups, octets, _ = s.shape
    return s[..., :8 * GROUP].reshape(groups, octets, 8, GROUP), np.ascontiguousarray(s[..., 8 * GROUP:]).view(
        np.float16)


def scale_values(s: np.ndarray) -> np.ndarray:
    """Tiled scales as values, (groups, blocks, 16): factored ones multiplied out in float32 (exactly), float ones
    as they are."""
    if s.dtype != np.uint8:
        return s
    factor, scale = factor_parts(s)
    with np.errstate(invalid="ignore"):  # 0 × an infinite scale is NaN, as the kernels read it
        values = factor.astype(np.float32) * scale.astype(np.float32)[:, :, None, :]
    return values.reshape(s.shape[0], -1, GROUP)


def per_half(s: np.ndarray) -> np.ndarray:
    """Tiled scales per block, (groups, blocks, 16) of any form → per 16 weights, (groups, blocks, 2, 16) float32:
    each block's for both its halves."""
    v = scale_values(s).astype(np.float32)
    return np.ascontiguousarray(np.broadcast_to(v[:, :, None], (*v.shape[:2], 2, v.shape[2])))


def scales_buffer(part: np.ndarray, groups: int, blocks: int) -> np.ndarray:
    """An empty buffer for a matrix's tiled scales (or minimums), in the form of its first band's `part`: factored
    bytes as they are, float32 per 16 weights, else float16 (`stored_scales` widens it where a value needs more)."""
    if part.dtype == np.uint8:
        return np.empty((groups, blocks // 8, OCTET), dtype=np.uint8)
    if part.ndim == 4:
        return np.empty((groups, blocks, 2, GROUP), dtype=np.float32)
    return np.empty((groups, blocks, GROUP), dtype=np.float16)


def stored_scales(buffer: np.ndarray, part: np.ndarray, at: slice) -> np.ndarray:
    """buffer[at] = part (tiled scales or minimums: float32, factored bytes, or float32 per 16 weights): a factored
    buffer takes factored parts as they are; a float16 buffer takes a part while every value is a float16 value
    (infinities and NaNs are not taken); otherwise the buffer is widened to float32 (exactly: what it held were
    factored or float16 values), and to scales per 16 weights where either has those. Returns the buffer."""
    if buffer.ndim == 4 or part.ndim == 4:
        buffer, part = (t if t.ndim == 4 else per_half(t) for t in (buffer, part))
        buffer[at] = part
        return buffer
    if buffer.dtype == np.uint8:
        if part.dtype == np.uint8:
            buffer[at] = part
            return buffer
        buffer = scale_values(buffer)
    part = scale_values(part)
    if buffer.dtype == np.float16:
        if part.dtype == np.float16 and np.isfinite(part).all():  # a file's own fp16 values
            buffer[at] = part
            return buffer
        with np.errstate(over="ignore"):
            half = part.astype(np.float16)
        if np.isfinite(half).all() and np.array_equal(half.astype(np.float32), part):
            buffer[at] = half
            return buffer
        buffer = buffer.astype(np.float32)
    buffer[at] = part
    return buffer


def zero_point(scale: np.ndarray, minimum: np.ndarray, bits: int) -> int | None:
    """The integer z, 0 ≤ z < 2^bits, with every block's minimum exactly -z × its scale in float32 (a symmetric
    grid), or None. Compared 256 groups at a time, after a look at the first block (a grid with minimums of its own
    fails there, and the look costs nothing beside a pass over every scale)."""
    s0, m0 = np.float32(scale.reshape(-1)[0]), np.float32(minimum.reshape(-1)[0])
    z0 = round(float(-m0 / s0)) if s0 and np.isfinite(s0) and np.isfinite(m0) else None
    if z0 is not None and (not 0 <= z0 < 2**bits or s0 * np.float32(-z0) != m0):
        return None  # no integer z holds for the first block: none holds for them all
    at = int(np.abs(scale).argmax())
    s, m = float(scale.reshape(-1)[at]), float(minimum.reshape(-1)[at])
    z = -m / s if s else 0.0
    if not (z.is_integer() and 0 <= z < 2**bits):
        return None
    times = np.float32(-z)
    same = all(np.array_equal(minimum[g:g + 256].astype(np.float32), scale[g:g + 256].astype(np.float32) * times)
               for g in range(0, scale.shape[0], 256))
    return int(z) if same else None


def implied(scale: np.ndarray, zero: int) -> np.ndarray:
    """The minimums -zero × scale of a symmetric band, in float32."""
    return scale_values(scale).astype(np.float32) * np.float32(-zero)


def pack(bands: Iterable[Tiles], bits: int, out_features: int, in_features: int, q: np.ndarray) -> Packed:
    """A matrix from its bands top to bottom (every band whole groups of GROUP rows but the last), their tiles copied
    into `q` (groups, blocks, tile bytes) unless already written there. Scales take the narrowest form holding every
    band's exactly; minimums are kept only where the bands are not all one symmetric grid (then zero says it)."""
    groups, n = q.shape[0], in_features // BLOCK
    scale = minimum = None  # made for the first band (minimum: for the first with minimums), as scales_buffer
    symmetric: list[tuple[slice, int]] = []  # (groups, zero) of the bands without minimums

    def with_implied(buffer: np.ndarray, spans: list[tuple[slice, int]]) -> np.ndarray:
        for span, zero in spans:
            buffer = stored_scales(buffer, implied(scale[span], zero), span)
        return buffer
    done = 0  # rows packed so far
    for band in bands:
        if done % GROUP or done + band.rows > out_features:
            raise InvariantError(f"a band of {band.rows} rows after {done} of {out_features}: bands must be whole "
                                 f"groups of {GROUP} rows but the last")
        at = group_span(done, band.rows)
        if band.q.ctypes.data != q[at].ctypes.data:  # (repacked in place, the tiles are there already)
            q[at] = band.q
        if band.minimum is None:
            symmetric.append((at, band.zero))
        scale = stored_scales(scales_buffer(band.scale, groups, n) if scale is None else scale, band.scale, at)
        if band.minimum is not None and minimum is None:  # the bands before, without minimums, get theirs
            minimum = with_implied(scales_buffer(band.minimum, groups, n), symmetric)
        if minimum is not None:
            minimum = with_implied(minimum, symmetric[-1:]) if band.minimum is None else \
                stored_scales(minimum, band.minimum, at)
        done += band.rows
    if done != out_features:
        raise InvariantError(f"the bands held {done} rows of {out_features}")
    if scale.ndim == 4 and bits != 8:
        raise InvariantError("scales per 16 weights need 8-bit tiles (the kernels read them for those only)")
    if minimum is None and len({z for _, z in symmetric}) > 1:  # symmetric bands of different zeros
        minimum = with_implied(scales_buffer(scale, groups, n), symmetric)
    if minimum is None:  # every band symmetric about the same zero, as its format says
        zero = symmetric[0][1]
    else:
        zero = None if scale.dtype == np.uint8 else zero_point(scale, minimum, bits)
    if zero is not None:
        minimum = None
    elif minimum.dtype != scale.dtype:  # one kind for both (float16 values and factors widen exactly)
        scale, minimum = scale_values(scale).astype(np.float32), scale_values(minimum).astype(np.float32)
    return Packed(q, scale, minimum, zero or 0, bits, out_features, in_features)
