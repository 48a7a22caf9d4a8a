"""Weight-only quantized storage for the linear layers: int8 (blocks of 32, one scale each, like Q8_0) and
4-bit (blocks of 32, a scale and a minimum each, like the default GGUF's own Q4_1). Activations stay in
the model's dtype; each matmul dequantizes its weight on the fly."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .errors import ForwardpassError

BLOCK = 32


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
        if bits == 8:  # symmetric: q in [-127, 127], w ≈ scale × q
            scale = w.abs().amax(-1, keepdim=True).clamp(min=1e-12) / 127
            self.register_buffer("q", torch.round(w / scale).to(torch.int8))
            self.register_buffer("scale", scale.to(torch.float16))
            self.register_buffer("minimum", None)
        elif bits == 4:  # asymmetric: q in [0, 15], w ≈ minimum + scale × q; two values per byte
            lo, hi = w.amin(-1, keepdim=True), w.amax(-1, keepdim=True)
            scale = (hi - lo).clamp(min=1e-12) / 15
            q = torch.round((w - lo) / scale).clamp(0, 15).to(torch.uint8)
            self.register_buffer("q", q[..., : BLOCK // 2] | (q[..., BLOCK // 2:] << 4))
            self.register_buffer("scale", scale.to(torch.float16))
            self.register_buffer("minimum", lo.to(torch.float16))
        else:
            raise ForwardpassError(f"unsupported weight storage: {bits} bits (8 and 4 are)")
        self.bias = linear.bias

    def dequantize(self) -> torch.Tensor:
        """The weight as the model's dtype, (out_features, in_features)."""
        if self.bits == 8:
            w = self.q.to(self.dtype) * self.scale.to(self.dtype)
        else:
            q = torch.cat([self.q & 15, self.q >> 4], dim=-1).to(self.dtype)  # (out, blocks, 32)
            w = q * self.scale.to(self.dtype) + self.minimum.to(self.dtype)
        return w.view(self.out_features, self.in_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.dequantize(), self.bias)

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (self.q, self.scale, self.minimum) if t is not None)


def quantize_linears(model: nn.Module, bits: int) -> nn.Module:
    """Replace every block's linear layers by `bits`-bit storage (the embedding and unembedding stay as they are)."""
    for block in model.blocks:
        for parent in (block.attn, block.ffn):
            for name, child in list(parent.named_children()):
                if isinstance(child, nn.Linear):
                    setattr(parent, name, QuantizedLinear(child, bits))
    return model
