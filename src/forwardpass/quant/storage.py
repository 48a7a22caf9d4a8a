"""A storage mode → the layer holding a weight that way: a float dtype, 8 or 4 bits, or the file's own blocks
(make_linear), for one weight or for every linear layer of a built model (store_linears)."""

from __future__ import annotations

from dataclasses import replace

import torch
from torch import nn

from .blocks import BlockRows, Blocks, as_float
from .layers import HalfLinear, QuantizedLinear


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
