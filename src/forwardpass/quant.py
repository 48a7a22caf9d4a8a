"""Storage of the linear layers' weights: 16-bit floats (bf16, fp16) or integer blocks (int8: blocks of 32,
a scale and a minimum each; q4: the same with 4 bits, like the default GGUF's own Q4_1). Only the weights
change: activations, norms, attention and the residual stream stay float32. Native kernels multiply the stored
integer weights directly, a decode step's rows and a prompt's alike (`kernels/`); machines without those kernels
use PyTorch on the dequantized weights."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch import nn

from . import kernels
from .errors import ForwardpassError, InvariantError
from .kernels.abi import BLOCK, GROUP, OCTET  # inputs per block, rows per tile, bytes of factored scales (abi.h)

DECODE_ROWS = 16  # up to this many rows per call, the native kernels run on float weights (more: PyTorch's matmul)


def native_linear(x: torch.Tensor, kind: torch.dtype | int, w: torch.Tensor, out_features: int,
                  bias: torch.Tensor | None, scale: torch.Tensor | None = None,
                  minimum: torch.Tensor | None = None, zero: int = 0) -> torch.Tensor | None:
    """x Wᵀ + b through the native kernel (W stored as `kind`, kernels.gemv) when x is float32 rows on the CPU and
    the kernels are built: any number of rows for integer weights, up to DECODE_ROWS (a decode step's) for float
    ones; None otherwise (the caller's PyTorch path). Integer weights are read as they are stored, each unit once for
    every row: a prompt's rows (prefill) ran 1.5× (a 128-token prompt, the default model) to 2.8× (a 1.1 B Q4_0)
    faster so than by dequantizing the weight to float32 for PyTorch's matmul (BENCHMARKS.md)."""
    rows = x.numel() // x.shape[-1]
    too_many = rows > DECODE_ROWS and not isinstance(kind, int)
    if too_many or x.device.type != "cpu" or x.dtype != torch.float32 or not kernels.available():
        return None
    y = kernels.gemv(x.reshape(rows, x.shape[-1]), kind, w, out_features, scale, minimum, zero)
    y = y.view(*x.shape[:-1], out_features)
    return y if bias is None else y + bias


@dataclass
class Factored:
    """Block scales (or minimums) as K-quants store them: an unsigned factor per block times an fp16 scale shared by
    a row's 8 consecutive blocks (a 256-block). Each value is exact in float32 (an 11-bit significand times at most
    8 bits), so the kernels multiply them out as they read (kernels/abi.h: FACTORS) and get the same numbers."""

    factor: torch.Tensor  # (rows, blocks) uint8
    scale: torch.Tensor  # (rows, blocks / 8) float16

    def rows(self, index: torch.Tensor) -> Factored:
        return Factored(self.factor[index], self.scale[index])


@dataclass
class Blocks:
    """A weight matrix as integer blocks: w[r, 32 b + i] = minimum[r, b] + scale[r, b] × q[r, b, i], the scale and
    minimum per block or (Q6_K) per 16 of its weights. What a file's block formats become (weights/formats.py) and
    what the storage modes quantize to."""

    q: torch.Tensor  # (rows, blocks, 32) uint8, each < 2 ** bits
    scale: torch.Tensor  # (rows, blocks, 1) float32, or (rows, blocks, 2): weights 0–15 and 16–31 apart (8 bits)
    minimum: torch.Tensor  # the same shape
    bits: int  # 4 or 8
    exact: bool = True  # the file's own weights (False: re-quantized from them)
    factored: tuple[Factored, Factored] | None = None  # scale and minimum as the file factors them (K-quants)

    @property
    def shape(self) -> tuple[int, int]:
        return self.q.shape[0], self.q.shape[1] * BLOCK

    def dequantize(self) -> torch.Tensor:
        """(rows, cols) float32, minimum + scale × q."""
        return scaled(self.q.float(), self.scale, self.minimum).view(self.shape)  # one buffer

    def rows(self, index: torch.Tensor) -> Blocks:
        """The rows `index` picks, in its order."""
        factored = None if self.factored is None else tuple(f.rows(index) for f in self.factored)
        return Blocks(self.q[index], self.scale[index], self.minimum[index], self.bits, self.exact, factored)

    @staticmethod
    def cat(parts: list[Blocks]) -> Blocks:
        """Row blocks stacked: 4-bit parts widen to 8 where any part needs 8 (the same integers), scales per block to
        per 16 weights where any part has those (each block's for both its halves)."""
        factored = None
        if all(p.factored for p in parts):
            factored = tuple(Factored(torch.cat([p.factored[i].factor for p in parts]),
                                      torch.cat([p.factored[i].scale for p in parts])) for i in range(2))
        per = max(p.scale.shape[-1] for p in parts)
        return Blocks(torch.cat([p.q for p in parts]), torch.cat([p.scale.expand(-1, -1, per) for p in parts]),
                      torch.cat([p.minimum.expand(-1, -1, per) for p in parts]), max(p.bits for p in parts),
                      all(p.exact for p in parts), factored)


@dataclass
class Tiles:
    """A band of rows already in QuantizedLinear's layout (`tile`, `tile_scales`): q (groups, blocks, 256 or 512)
    bytes, scale and minimum (groups, blocks, 16) float16 or float32, factored bytes (`tile_factors`), or float32 per
    16 weights (groups, blocks, 2, 16); minimum None for a symmetric grid, each minimum -zero × its scale; `rows` real
    rows, the last group's rest zero."""

    q: torch.Tensor
    scale: torch.Tensor
    minimum: torch.Tensor | None
    zero: int | None
    rows: int


@dataclass
class BlockRows:
    """A block-format matrix read a band of rows at a time: `bands()` gives its Blocks top to bottom, every band's
    rows a multiple of GROUP but the last's. QuantizedLinear tiles a large matrix band by band, so loading holds a
    band unpacked, never the whole matrix (a 49,152-row output table unpacks to 100 MB for 2,048 inputs).
    `tiled(bits, into)`, where given, yields the same bands already tiled at that width (kernels.repack, from the
    file's blocks; their tiles written into `into`, the layer's own, where given), or None where it cannot."""

    shape: tuple[int, int]
    bits: int  # 4 or 8: the width every band's integers fit
    bands: Callable[[], Iterable[Blocks]]
    tiled: Callable[[int, torch.Tensor | None], Iterable[Tiles] | None] | None = None

    def dequantize(self) -> torch.Tensor:
        """(rows, cols) float32, every band's."""
        return torch.cat([b.dequantize() for b in self.bands()])


def scaled(q: torch.Tensor, scale: torch.Tensor, minimum: torch.Tensor) -> torch.Tensor:
    """q (..., blocks, 32) float32, in place → minimum + scale × q, scale and minimum (..., blocks, 1 or 2): per block,
    or per 16 weights."""
    per = scale.shape[-1]
    halves = q.view(*q.shape[:-1], per, BLOCK // per)
    return halves.mul_(scale[..., None]).add_(minimum[..., None]).view(q.shape)


def as_float(t: torch.Tensor | Blocks | BlockRows) -> torch.Tensor:
    """A weight as floats: Blocks dequantized, a float tensor as it is."""
    return t.dequantize() if isinstance(t, (Blocks, BlockRows)) else t


class QuantizedLinear(nn.Module):
    """y = x Wᵀ + b with W stored as `bits`-bit integers in blocks of 32 along the input dimension.

    Stored tiled, as the native kernels read it (`kernels/gemv.h`): rows in groups of 16 (out_features padded
    to a multiple of 16 with zero rows), each group's blocks as 64-byte tiles of 16 rows × 4 inputs, so one
    integer dot-product instruction serves 16 rows. q: (groups, blocks, 512 or 256) bytes; scale and minimum:
    (groups, blocks, 16), float16 where every one of them is exact in 16 bits (a file's own fp16 block scales, as
    Q4_0, Q4_1 and Q8_0 store them: a sixth less to read per 4-bit weight), else float32; K-quants' factored
    scales stay factored (`Factored`, tiled by `tile_factors`: (groups, blocks / 8, 160) bytes, a Q4_K matrix in
    18.5 bytes per 32 weights where float32 scales took 24); scales per 16 weights (Q6_K's; 8 bits only) are
    float32, (groups, blocks, 2, 16). A symmetric grid keeps no minimums: where every
    block's is -zero × its scale (Q4_0's 8, Q8_0's 128), minimum is None and the kernels compute that product (4-bit
    blocks then cost the file's own 18 bytes per 32 weights)."""

    def __init__(self, blocks: Blocks | BlockRows, bias: torch.Tensor | None = None):
        super().__init__()
        if blocks.bits not in (8, 4):
            raise ForwardpassError(f"unsupported weight storage: {blocks.bits} bits (8 and 4 are)")
        out_features, in_features = blocks.shape
        self.bits, self.in_features, self.out_features = blocks.bits, in_features, out_features
        groups, n = -(-out_features // GROUP), in_features // BLOCK  # out_features padded with zero rows
        q = torch.empty(groups, n, GROUP * BLOCK * self.bits // 8, dtype=torch.uint8)
        scale = minimum = None  # made for the first band (minimum: for the first with minimums), as scales_buffer
        implied = []  # (rows, zero) of the bands without minimums: each one -zero × its scale

        def made(buffer: torch.Tensor, spans: list) -> torch.Tensor:
            """buffer (minimums) with the implied minimums of `spans` ((rows, zero) pairs) stored."""
            for span, zero in spans:
                buffer = stored_scales(buffer, scale_values(scale[span]).float() * -zero, span)
            return buffer
        done = 0  # rows tiled so far
        tiled = blocks.tiled(self.bits, q) if isinstance(blocks, BlockRows) and blocks.tiled else None
        bands = tiled if tiled is not None else blocks.bands() if isinstance(blocks, BlockRows) else [blocks]
        for band in bands:
            rows = band.rows if isinstance(band, Tiles) else band.q.shape[0]
            if done % GROUP or done + rows > out_features:
                raise InvariantError(f"a band of {rows} rows after {done} of {out_features}: bands must be whole "
                                     f"groups of {GROUP} rows but the last")
            at = group_span(done, rows)
            if isinstance(band, Tiles):
                if band.q.data_ptr() != q[at].data_ptr():  # (repacked in place, the tiles are there already)
                    q[at] = band.q
                band_scale, band_minimum = band.scale, band.minimum
                if band_minimum is None:
                    implied.append((at, band.zero))
            else:
                pad = -rows % GROUP
                q[at] = tile(padded(band.q, pad), self.bits)
                if band.factored:
                    band_scale, band_minimum = (tile_factors(padded(f.factor, pad), padded(f.scale, pad))
                                                for f in band.factored)
                else:
                    band_scale, band_minimum = (tile_scales(padded(t, pad)) for t in (band.scale, band.minimum))
            scale = stored_scales(scales_buffer(band_scale, groups, n) if scale is None else scale, band_scale, at)
            if band_minimum is not None and minimum is None:  # the bands before, without minimums, get theirs
                minimum = made(scales_buffer(band_minimum, groups, n), implied)
            if minimum is not None:
                minimum = made(minimum, implied[-1:]) if band_minimum is None else \
                    stored_scales(minimum, band_minimum, at)
            done += rows
        if done != out_features:
            raise InvariantError(f"the bands held {done} rows of {out_features}")
        if scale.dim() == 4 and self.bits != 8:
            raise InvariantError("scales per 16 weights need 8-bit tiles (the kernels read them for those only)")
        if minimum is None and len({z for _, z in implied}) > 1:  # symmetric bands of different zeros
            minimum = made(scales_buffer(scale, groups, n), implied)
        if minimum is None:  # every band symmetric about the same zero, as its format says
            zero = implied[0][1]
        else:
            zero = None if scale.dtype == torch.uint8 else zero_point(scale, minimum, self.bits)
        if zero is not None:
            minimum = None
        elif minimum.dtype != scale.dtype:  # one kind for both (float16 values and factors widen exactly)
            scale, minimum = scale_values(scale).float(), scale_values(minimum).float()
        self.zero = zero or 0
        self.register_buffer("q", q)
        self.register_buffer("scale", scale)
        self.register_buffer("minimum", minimum)  # None: -zero × scale
        self.bias = bias

    @classmethod
    def quantize(cls, weight: torch.Tensor, bits: int, bias: torch.Tensor | None = None) -> QuantizedLinear:
        """A float weight (out_features, in_features) quantized to `bits` (quantize_blocks picks each block's grid)."""
        out_features, in_features = weight.shape
        if in_features % BLOCK:
            raise ForwardpassError(f"{bits}-bit storage needs in_features divisible by {BLOCK}, got {in_features}")
        w = weight.detach().float().view(out_features, in_features // BLOCK, BLOCK)
        return cls(Blocks(*quantize_blocks(w, bits), bits, exact=False), bias)

    def dequantize(self) -> torch.Tensor:
        """The weight in float32, (out_features, in_features): natively where the kernels run (one pass over the
        tiles instead of PyTorch's several ops over them), the same bits either way."""
        if self.fast:
            return kernels.dequantize(self.bits, self.q, self.scale, self.minimum, self.out_features,
                                      self.in_features, self.zero)
        return untiled(self.q, self.scale, self.minimum, self.bits, self.out_features, self.zero)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.fast:  # the packed weights streamed once for every row, never dequantized
            y = native_linear(x, self.bits, self.q, self.out_features, self.bias, self.scale, self.minimum, self.zero)
            if y is not None:
                return y
        return F.linear(x, self.dequantize(), self.bias)  # no native kernels here: dequantize once per call

    @property
    def fast(self) -> bool:
        """The native kernel applies: on the CPU, with the kernels built."""
        return self.q.device.type == "cpu" and kernels.available()

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (self.q, self.scale, self.minimum) if t is not None)


class QuantizedEmbedding(nn.Module):
    """The token embedding table read from a QuantizedLinear's tiles: a lookup dequantizes only the rows it
    returns, the same values as `table.dequantize()[ids]`. A tied unembedding shares its tiles with the lookup."""

    def __init__(self, table: QuantizedLinear):
        super().__init__()
        self.table = table
        self.num_embeddings, self.embedding_dim = table.out_features, table.in_features

    @property
    def device(self) -> torch.device:
        return self.table.scale.device

    dtype = torch.float32

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """ids (...) → (..., embedding_dim) float32."""
        t, flat = self.table, ids.reshape(-1)
        group, row = flat // GROUP, flat % GROUP
        blocks = t.in_features // BLOCK
        tiles = t.q[group].view(len(flat), blocks, -1, GROUP, 4) if len(flat) else t.q.new_zeros(0, blocks, 1, GROUP, 4)
        # (n, blocks, tile, 16 rows, 4 inputs)
        q = tiles[torch.arange(len(flat), device=flat.device), :, :, row]  # (n, blocks, tile, 4)
        if t.bits == 4:
            q = torch.stack([q & 15, q >> 4], dim=-2)  # (n, blocks, tile, nibble, 4)
        q = q.reshape(len(flat), blocks, BLOCK)
        scale = scale_rows(t.scale, group, row)  # (n, blocks, 1 or 2)
        minimum = scale.float() * -t.zero if t.minimum is None else scale_rows(t.minimum, group, row)
        return scaled(q.float(), scale, minimum).view(*ids.shape, t.in_features)


def tile(q: torch.Tensor, bits: int) -> torch.Tensor:
    """q (rows, blocks, 32) → (groups, blocks, tile bytes): per group and block, 64-byte tiles of 16 rows × 4
    inputs (byte 4 r + j). 8 bits: tile t holds inputs 4t + j. 4 bits: tile u holds inputs 8u + j in its low
    nibbles and 8u + 4 + j in its high ones."""
    rows, blocks, _ = q.shape
    if bits == 4:
        q = q.view(rows, blocks, 4, 2, 4)  # (row, block, u, nibble, j)
        q = q[..., 0, :] | (q[..., 1, :] << 4)  # (row, block, u, j)
    g = q.reshape(rows // GROUP, GROUP, blocks, -1, 4)  # (group, r, block, tile, j)
    return g.permute(0, 2, 3, 1, 4).reshape(rows // GROUP, blocks, -1).contiguous()


def untile(q: torch.Tensor, bits: int) -> torch.Tensor:
    """The inverse of `tile`: (rows, blocks, 32) values."""
    groups, blocks, _ = q.shape
    t = q.view(groups, blocks, -1, GROUP, 4).permute(0, 3, 1, 2, 4)  # (group, r, block, tile, j)
    if bits == 4:
        t = torch.stack([t & 15, t >> 4], dim=-2)  # (group, r, block, u, nibble, j)
    return t.reshape(groups * GROUP, blocks, BLOCK)


def untiled(q: torch.Tensor, scale: torch.Tensor, minimum: torch.Tensor | None, bits: int, rows: int,
            zero: int = 0) -> torch.Tensor:
    """Tiles back to the (rows, K) float32 weight with PyTorch ops (on any device): q × scale + minimum (None:
    -zero × scale)."""
    scale = untile_scales(scale)
    minimum = scale.float() * -zero if minimum is None else untile_scales(minimum)
    w = scaled(untile(q, bits).float(), scale, minimum)
    return w.view(w.shape[0], -1)[:rows]


def zero_point(scale: torch.Tensor, minimum: torch.Tensor, bits: int) -> int | None:
    """The integer z, 0 ≤ z < 2^bits, with every block's minimum exactly -z × its scale in float32 (a symmetric
    grid), or None. The minimums (float32 or float16) are compared with those float32 products 256 groups at a
    time."""
    at = int(scale.abs().argmax())
    s, m = float(scale.view(-1)[at]), float(minimum.view(-1)[at])
    z = -m / s if s else 0.0
    if not (z.is_integer() and 0 <= z < 2**bits):
        return None
    same = all(torch.equal(mins.float(), scales.float() * -z)
               for scales, mins in zip(scale.split(256), minimum.split(256), strict=True))
    return int(z) if same else None


def scales_buffer(part: torch.Tensor, groups: int, blocks: int) -> torch.Tensor:
    """An empty buffer for a matrix's tiled scales (or minimums), in the form of its first band's `part`: factored
    bytes as they are, float32 per 16 weights, else float16 (stored_scales widens it where a value needs more)."""
    if part.dtype == torch.uint8:
        return torch.empty(groups, blocks // 8, OCTET, dtype=torch.uint8)
    if part.dim() == 4:
        return torch.empty(groups, blocks, 2, GROUP)
    return torch.empty(groups, blocks, GROUP, dtype=torch.float16)


def stored_scales(buffer: torch.Tensor, part: torch.Tensor, at: slice) -> torch.Tensor:
    """buffer[at] = part (tiled scales or minimums: float32, factored bytes, or float32 per 16 weights): a factored
    buffer takes factored parts as they are; a float16 buffer takes a part while every value is a float16 value
    (infinities and NaNs are not taken); otherwise the buffer is widened to float32 (exactly: what it held were
    factored or float16 values), and to scales per 16 weights where either has those. Returns the buffer. Each part
    is converted to float16 once, to check it and to keep it."""
    if buffer.dim() == 4 or part.dim() == 4:
        buffer, part = (t if t.dim() == 4 else per_half(t) for t in (buffer, part))
        buffer[at] = part
        return buffer
    if buffer.dtype == torch.uint8:
        if part.dtype == torch.uint8:
            buffer[at] = part
            return buffer
        buffer = scale_values(buffer)
    part = scale_values(part)
    if buffer.dtype == torch.float16:
        if part.dtype == torch.float16 and bool(torch.isfinite(part).all()):  # a file's own fp16 values
            buffer[at] = part
            return buffer
        half = part.half()
        if bool(torch.isfinite(half).all()) and torch.equal(half.float(), part):
            buffer[at] = half
            return buffer
        buffer = buffer.float()
    buffer[at] = part
    return buffer




def group_span(done: int, rows: int) -> slice:
    """The tile groups holding rows done … done + rows - 1 of a matrix tiled band by band (every band but the last
    whole groups): where QuantizedLinear stores a band, and where a repacking writes it in place."""
    return slice(done // GROUP, -(-(done + rows) // GROUP))


def padded(t: torch.Tensor, rows: int) -> torch.Tensor:
    """t with `rows` zero rows after its own."""
    return torch.cat([t, t.new_zeros(rows, *t.shape[1:])]) if rows else t


def tile_factors(factor: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """Factored scales (rows, blocks) uint8 × (rows, blocks / 8) float16 → (groups, blocks / 8, 160) bytes: per
    group and 8 blocks, the (8 blocks, 16 rows) factors, then the 16 rows' float16 scales."""
    rows, blocks = factor.shape
    f = factor.view(rows // GROUP, GROUP, blocks // 8, 8).permute(0, 2, 3, 1).reshape(rows // GROUP, blocks // 8, -1)
    d = scale.view(rows // GROUP, GROUP, blocks // 8).transpose(1, 2).contiguous().view(torch.uint8)
    return torch.cat([f, d], dim=-1)


def factor_parts(s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Tiled factored scales → their factors (groups, blocks / 8, 8, 16) uint8 and scales (groups, blocks / 8, 16)
    float16."""
    groups, octets, _ = s.shape
    return s[..., :8 * GROUP].reshape(groups, octets, 8, GROUP), s[..., 8 * GROUP:].contiguous().view(torch.float16)


def scale_values(s: torch.Tensor) -> torch.Tensor:
    """Tiled scales as values, (groups, blocks, 16): factored ones multiplied out in float32 (exactly), float ones
    as they are."""
    if s.dtype != torch.uint8:
        return s
    factor, scale = factor_parts(s)
    return (factor.float() * scale.float()[:, :, None, :]).flatten(1, 2)


def per_half(s: torch.Tensor) -> torch.Tensor:
    """Tiled scales per block, (groups, blocks, 16) of any form → per 16 weights, (groups, blocks, 2, 16) float32:
    each block's for both its halves."""
    return scale_values(s).float()[:, :, None].expand(-1, -1, 2, -1).contiguous()


def scale_rows(s: torch.Tensor, group: torch.Tensor, row: torch.Tensor) -> torch.Tensor:
    """The scales of rows `row` of groups `group` (each (n,)), (n, blocks, 1) (per 16 weights: (n, blocks, 2)),
    without multiplying out the rest."""
    if s.dim() == 4:
        return s[group, :, :, row]
    if s.dtype != torch.uint8:
        return s[group, :, row][..., None]
    factor, scale = factor_parts(s)
    return (factor[group, :, :, row].float() * scale[group, :, row].float()[..., None]).view(len(group), -1, 1)


def tile_scales(s: torch.Tensor) -> torch.Tensor:
    """(rows, blocks, 1) → (groups, blocks, 16): a group's 16 rows side by side, as its tiles sum them; per 16
    weights, (rows, blocks, 2) → (groups, blocks, 2, 16)."""
    rows, blocks, per = s.shape
    t = s.view(rows // GROUP, GROUP, blocks, per).permute(0, 2, 3, 1)  # (group, block, half, row)
    return (t if per == 2 else t[:, :, 0]).contiguous()


def untile_scales(s: torch.Tensor) -> torch.Tensor:
    """The inverse of `tile_scales`: (rows, blocks, 1 or 2) (factored scales multiplied out)."""
    s = scale_values(s)
    groups, blocks = s.shape[:2]
    return s.movedim(-1, 1).reshape(groups * GROUP, blocks, -1)


def quantize_blocks(w: torch.Tensor, bits: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Blocks (..., 32) → unsigned q, fp32 scale and minimum per block with w ≈ minimum + scale × q.

    Each block gets the better (smaller worst-case error) of two grids: the asymmetric one spanning
    [min, max], and the symmetric one centred on 0 (minimum = -half × scale). A file's own Q4_1 blocks
    fall exactly on the first, its Q8_0 blocks exactly on the second, so requantizing them loses nothing."""
    levels = 2**bits - 1
    lo, hi = w.amin(-1, keepdim=True), w.amax(-1, keepdim=True)
    grids = [((hi - lo).clamp(min=1e-12) / levels, lo)]
    half = 2 ** (bits - 1)
    sym = w.abs().amax(-1, keepdim=True).clamp(min=1e-12) / (half - 1)
    grids.append((sym, -half * sym))
    best = None
    for scale, minimum in grids:
        q = torch.round((w - minimum) / scale).clamp(0, levels)
        err = (q * scale + minimum - w).abs().amax(-1, keepdim=True)
        if best is None:
            best = [q, scale, minimum, err]
            continue
        better = err < best[3]
        best = [torch.where(better, q, best[0]), torch.where(better, scale, best[1]),
                torch.where(better, minimum, best[2]), torch.minimum(err, best[3])]
    q, scale, minimum, _ = best
    return q.to(torch.uint8), scale.float(), minimum.float()


class HalfLinear(nn.Module):
    """y = x Wᵀ + b with W stored as bf16 or fp16 and x, y float32.

    A decode step's few rows run the native kernel (float32 activations and sums). Many rows in bf16 multiply
    in bf16 (the CPU's bf16 dot-product instructions, float32 accumulation, a bf16-rounded result): prefill at
    twice the float32 rate. `exact` (the unembedding: rounding logits to bf16 flips near-tied tokens) and
    fp16 (which CPUs cannot multiply natively) widen the weight to float32 instead. On a GPU: the dtype's matmul."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None, exact: bool = False):
        super().__init__()
        self.out_features, self.in_features = weight.shape
        self.exact = exact
        self.weight = nn.Parameter(weight.detach(), requires_grad=False)  # (out_features, in_features), 16 bits
        self.bias = bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = native_linear(x, self.weight.dtype, self.weight, self.out_features, self.bias)
        if y is not None:
            return y
        if x.device.type == "cpu" and (self.exact or self.weight.dtype == torch.float16):
            return F.linear(x, self.weight.to(x.dtype), self.bias)
        y = F.linear(x.to(self.weight.dtype), self.weight).to(x.dtype)
        return y if self.bias is None else y + self.bias


def float_linear(weight: torch.Tensor, bias: torch.Tensor | None = None) -> nn.Linear:
    """An nn.Linear holding `weight` (out_features, in_features) itself."""
    linear = nn.Linear(weight.shape[1], weight.shape[0], bias=bias is not None, device="meta")
    linear.weight = nn.Parameter(weight.detach(), requires_grad=False)
    if bias is not None:
        linear.bias = nn.Parameter(bias.detach(), requires_grad=False)
    return linear


def make_linear(weight: torch.Tensor | Blocks | BlockRows, bias: torch.Tensor | None,
                storage: torch.dtype | int | None, head: bool = False) -> nn.Module:
    """A linear layer over `weight` (a float tensor, or Blocks, whole or in bands) stored as `storage`: a float
    dtype, 8 or 4 bits, or None for as it is (Blocks stay blocks, whatever their width; a float tensor keeps its
    dtype). The unembedding (`head`) is summed in float32 in the 16-bit modes and, re-quantized, gets 8 bits in the
    integer ones (as GGUF files keep their output table in Q8_0 or Q6_K: 4 bits there costs far more accuracy than
    anywhere else); a file's own 4-bit table stays 4-bit (widened, the same numbers would cost twice the bytes).
    Blocks are reused whenever the asked width holds them (4-bit integers widen to 8 exactly); otherwise
    re-quantized."""
    if storage is None and isinstance(weight, (Blocks, BlockRows)):
        return QuantizedLinear(weight, bias)
    if storage is None:
        storage = weight.dtype
    if isinstance(storage, torch.dtype):
        w = as_float(weight)
        if storage == torch.float32:
            return float_linear(w.float(), bias)
        return HalfLinear(w.to(storage), bias, exact=head)
    bits = 8 if head else storage
    if isinstance(weight, (Blocks, BlockRows)) and weight.bits <= bits:
        return QuantizedLinear(replace(weight, bits=bits), bias)
    return QuantizedLinear.quantize(as_float(weight), bits, bias)


def store_linears(model: nn.Module, storage: torch.dtype | int) -> nn.Module:
    """Store every linear layer's weight of a built model as `storage` (make_linear). The embedding table stays
    as it is: a lookup reads one row per token (the unembedding, if tied to it, gets its own copy)."""
    for block in model.blocks:
        for parent in (block.attn, block.ffn):
            for name, child in list(parent.named_children()):
                if isinstance(child, nn.Linear):
                    setattr(parent, name, make_linear(child.weight, child.bias, storage))
    model.lm_head = make_linear(model.lm_head.weight, model.lm_head.bias, storage, head=True)
    return model
