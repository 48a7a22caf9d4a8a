"""Storage of the linear layers' weights: 16-bit floats (bf16, fp16) or integer blocks (int8: blocks of 32,
a scale and a minimum each; q4: the same with 4 bits, like the default GGUF's own Q4_1). Only the weights
change: activations, norms, attention and the residual stream stay float32. Native kernels multiply the stored
integer weights directly, a decode step's rows and a prompt's alike (`kernels/`); machines without those kernels
use PyTorch on the dequantized weights.

Five modules, each importing only those below it: `storage` (a storage mode → a layer) over `layers` (the PyTorch
modules) over `tiles` (the kernels' layout) over `blocks` (integer blocks as a file's formats give them) over `packed`
(a matrix's tiles joined, in numpy: all the native loader needs, without PyTorch)."""

from ..kernels.abi import BLOCK, GROUP, OCTET
from .packed import Packed, Tiles, group_span, pack

# the PyTorch side, imported when first named: the packed tiles alone need no PyTorch (the native loader's)
_LAZY = {"BlockRows": "blocks", "Blocks": "blocks", "Factored": "blocks", "as_float": "blocks",
         "quantize_blocks": "blocks", "scaled": "blocks", "DECODE_ROWS": "layers", "HalfLinear": "layers",
         "QuantizedEmbedding": "layers", "QuantizedLinear": "layers", "native_linear": "layers",
         "float_linear": "storage", "make_linear": "storage", "store_linears": "storage", "tile": "tiles",
         "untile": "tiles", "untile_scales": "tiles", "untiled": "tiles"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["BLOCK", "GROUP", "OCTET", "Packed", "Tiles", "group_span", "pack", *_LAZY]
