"""Integer blocks as a model file's block formats become (weights/formats.py) and the storage modes quantize to:
32 weights each, w = minimum + scale × q, the scale and minimum per block or per 16 weights. A matrix comes whole
(`Blocks`) or a band of rows at a time (`BlockRows`), a band possibly already tiled (`Tiles`); K-quants' scales keep
the file's factored form (`Factored`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import torch

from ..kernels.abi import BLOCK  # inputs per block (abi.h)
from .packed import Tiles


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
class BlockRows:
    """A block-format matrix read a band of rows at a time: `bands()` gives its Blocks top to bottom, every band's
    rows a multiple of GROUP but the last's. QuantizedLinear tiles a large matrix band by band, so loading holds a
    band unpacked, never the whole matrix (a 49,152-row output table unpacks to 100 MB for 2,048 inputs).
    `tiled(bits, into)`, where given, yields the same bands already tiled at that width (kernels.repack, from the
    file's blocks; their tiles written into `into`, the layer's own, where given), or None where it cannot."""

    shape: tuple[int, int]
    bits: int  # 4 or 8: the width every band's integers fit
    bands: Callable[[], Iterable[Blocks]]
    tiled: Callable[[int, np.ndarray | None], Iterable[Tiles] | None] | None = None

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
