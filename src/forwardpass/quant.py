"""Storage of the linear layers' weights: 16-bit floats (bf16, fp16) or integer blocks (int8: blocks of 32,
a scale and a minimum each; q4: the same with 4 bits, like the default GGUF's own Q4_1). Only the weights
change: activations, norms, attention and the residual stream stay float32. Decode steps run native kernels
on the stored weights (`kernels/`); prefill, and machines without those kernels, use PyTorch."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from . import kernels
from .errors import ForwardpassError

BLOCK = 32
DECODE_ROWS = 16  # up to this many rows per call, the native matrix-vector kernels run


def native_linear(x: torch.Tensor, kind: torch.dtype | int, w: torch.Tensor, out_features: int,
                  bias: torch.Tensor | None, scale: torch.Tensor | None = None,
                  minimum: torch.Tensor | None = None) -> torch.Tensor | None:
    """x Wᵀ + b through the native kernel (W stored as `kind`, kernels.gemv) when x is a decode step's few
    float32 rows on the CPU and the kernels are built; None otherwise (the caller's PyTorch path)."""
    rows = x.numel() // x.shape[-1]
    if rows > DECODE_ROWS or x.device.type != "cpu" or x.dtype != torch.float32 or not kernels.available():
        return None
    y = kernels.gemv(x.reshape(rows, x.shape[-1]), kind, w, out_features, scale, minimum)
    y = y.view(*x.shape[:-1], out_features)
    return y if bias is None else y + bias


class QuantizedLinear(nn.Module):
    """y = x Wᵀ + b with W stored as `bits`-bit integers in blocks of 32 along the input dimension."""

    def __init__(self, linear: nn.Linear, bits: int):
        super().__init__()
        out_features, in_features = linear.weight.shape
        if in_features % BLOCK:
            raise ForwardpassError(f"{bits}-bit storage needs in_features divisible by {BLOCK}, got {in_features}")
        self.bits, self.in_features, self.out_features = bits, in_features, out_features
        self.dtype = linear.weight.dtype
        w = linear.weight.detach().float().view(out_features, in_features // BLOCK, BLOCK)
        if bits not in (8, 4):
            raise ForwardpassError(f"unsupported weight storage: {bits} bits (8 and 4 are)")
        q, scale, minimum = quantize_blocks(w, bits)  # w ≈ minimum + scale × q, q unsigned
        if bits == 4:  # two values per byte: weight i in the low nibble, weight i + 16 in the high one
            q = q[..., : BLOCK // 2] | (q[..., BLOCK // 2:] << 4)
        self.register_buffer("q", q)
        self.register_buffer("scale", scale)
        self.register_buffer("minimum", minimum)
        self.bias = linear.bias

    def dequantize(self) -> torch.Tensor:
        """The weight as the model's dtype, (out_features, in_features)."""
        q = self.q if self.bits == 8 else torch.cat([self.q & 15, self.q >> 4], dim=-1)  # (out, blocks, 32)
        w = q.to(self.dtype) * self.scale.to(self.dtype) + self.minimum.to(self.dtype)
        return w.view(self.out_features, self.in_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.fast:  # decode: stream the packed weights once, never dequantized
            y = native_linear(x, self.bits, self.q, self.out_features, self.bias, self.scale, self.minimum)
            if y is not None:
                return y
        return F.linear(x, self.dequantize(), self.bias)  # prefill: compute-bound, dequantize once per call

    @property
    def fast(self) -> bool:
        """The native kernel applies: CPU, float32 activations, a built kernel."""
        return self.q.device.type == "cpu" and self.dtype == torch.float32 and kernels.available()

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (self.q, self.scale, self.minimum) if t is not None)


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

    def __init__(self, linear: nn.Linear, dtype: torch.dtype, exact: bool = False):
        super().__init__()
        self.in_features, self.out_features, self.exact = linear.in_features, linear.out_features, exact
        self.weight = nn.Parameter(linear.weight.detach().to(dtype), requires_grad=False)
        self.bias = linear.bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = native_linear(x, self.weight.dtype, self.weight, self.out_features, self.bias)
        if y is not None:
            return y
        if x.device.type == "cpu" and (self.exact or self.weight.dtype == torch.float16):
            return F.linear(x, self.weight.to(x.dtype), self.bias)
        y = F.linear(x.to(self.weight.dtype), self.weight).to(x.dtype)
        return y if self.bias is None else y + self.bias


def store_linears(model: nn.Module, storage: torch.dtype | int) -> nn.Module:
    """Store every linear layer's weight as `storage`: a 16-bit float dtype, or 8 or 4 bits. The unembedding
    gets 16 bits in the 16-bit modes, always summed in float32 (`exact`), and 8 bits in both integer ones (as
    the default GGUF keeps its output table in Q8_0: 4 bits there costs far more accuracy than anywhere else).
    The embedding table stays float32: a lookup reads one row per token (the unembedding, if tied to it, gets
    its own copy)."""
    def stored(linear: nn.Linear, head: bool = False) -> nn.Module:
        if isinstance(storage, torch.dtype):
            return HalfLinear(linear, storage, exact=head)
        return QuantizedLinear(linear, 8 if head else storage)

    for block in model.blocks:
        for parent in (block.attn, block.ffn):
            for name, child in list(parent.named_children()):
                if isinstance(child, nn.Linear):
                    setattr(parent, name, stored(child))
    model.lm_head = stored(model.lm_head, head=True)
    return model
