"""The PyTorch layers over stored weights: integer tiles (QuantizedLinear, and QuantizedEmbedding reading a table's
rows from them) and 16-bit floats (HalfLinear), each through the native kernel where it applies (native_linear)."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .. import kernels
from ..errors import ForwardpassError
from ..kernels.abi import ACT_EXACT, BLOCK, GROUP  # exact activations; inputs per block, rows per tile (abi.h)
from .blocks import BlockRows, Blocks, quantize_blocks, scaled
from .packed import Packed, Tiles, pack
from .tiles import padded, scale_rows, tile, tile_factors, tile_scales, untiled

DECODE_ROWS = 16  # up to this many rows per call, the native kernels run on float weights (more: PyTorch's matmul)


def native_linear(x: torch.Tensor, kind: torch.dtype | int, w: torch.Tensor, out_features: int,
                  bias: torch.Tensor | None, scale: torch.Tensor | None = None,
                  minimum: torch.Tensor | None = None, zero: int = 0,
                  activations: int = ACT_EXACT) -> torch.Tensor | None:
    """x Wᵀ + b through the native kernel (W stored as `kind`, kernels.gemv) when x is float32 rows on the CPU and
    the kernels are built: any number of rows for integer weights, up to DECODE_ROWS (a decode step's) for float
    ones; None otherwise (the caller's PyTorch path). Integer weights are read as they are stored, each unit once for
    every row, which for a prompt's rows (prefill) reads far fewer bytes than dequantizing the weight to float32 for
    PyTorch's matmul (BENCHMARKS.md has the rates). `activations`: how integer products quantize x's rows (abi.h's
    ACT_EXACT or ACT_Q8)."""
    rows = x.numel() // x.shape[-1]
    too_many = rows > DECODE_ROWS and not isinstance(kind, int)
    if too_many or x.device.type != "cpu" or x.dtype != torch.float32 or not kernels.available():
        return None
    y = kernels.gemv(x.reshape(rows, x.shape[-1]), kind, w, out_features, scale, minimum, zero,
                     activations=activations)
    y = y.view(*x.shape[:-1], out_features)
    return y if bias is None else y + bias


def band_tiles(band: Blocks, bits: int) -> Tiles:
    """A band of Blocks in the kernels' layout (numpy, for `pack`)."""
    rows = band.q.shape[0]
    pad = -rows % GROUP
    q = tile(padded(band.q, pad), bits)
    if band.factored:
        scale, minimum = (tile_factors(padded(f.factor, pad), padded(f.scale, pad)) for f in band.factored)
    else:
        scale, minimum = (tile_scales(padded(t, pad)) for t in (band.scale, band.minimum))
    return Tiles(q.cpu().numpy(), scale.cpu().numpy(), minimum.cpu().numpy(), None, rows)


def packed_matrix(blocks: Blocks | BlockRows) -> Packed:
    """A matrix of Blocks (whole or in bands) packed as the kernels read it: bands repacked natively from the file
    where BlockRows offers them (written straight into the matrix's tiles), else tiled here."""
    if blocks.bits not in (8, 4):
        raise ForwardpassError(f"unsupported weight storage: {blocks.bits} bits (8 and 4 are)")
    out_features, in_features = blocks.shape
    q = np.empty((-(-out_features // GROUP), in_features // BLOCK, GROUP * BLOCK * blocks.bits // 8), dtype=np.uint8)
    tiled = blocks.tiled(blocks.bits, q) if isinstance(blocks, BlockRows) and blocks.tiled else None
    if tiled is None:
        bands = blocks.bands() if isinstance(blocks, BlockRows) else [blocks]
        tiled = (band_tiles(band, blocks.bits) for band in bands)
    return pack(tiled, blocks.bits, out_features, in_features, q)


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
        packed = packed_matrix(blocks)
        self.bits, self.in_features, self.out_features = packed.bits, packed.in_features, packed.out_features
        self.zero = packed.zero
        self.register_buffer("q", torch.from_numpy(packed.q))
        self.register_buffer("scale", torch.from_numpy(packed.scale))
        self.register_buffer("minimum", None if packed.minimum is None else torch.from_numpy(packed.minimum))
        self.bias = bias  # minimum None: -zero × scale
        self.activations = ACT_EXACT  # how x's rows are quantized against the tiles (loader: activations)

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
            y = native_linear(x, self.bits, self.q, self.out_features, self.bias, self.scale, self.minimum, self.zero,
                              self.activations)
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
