"""Storage of the linear layers' weights: 16-bit floats (bf16, fp16) or integer blocks (int8: blocks of 32,
a scale and a minimum each; q4: the same with 4 bits, like the default GGUF's own Q4_1). Only the weights
change: activations, norms, attention and the residual stream stay float32. Native kernels multiply the stored
integer weights directly, a decode step's rows and a prompt's alike (`kernels/`); machines without those kernels
use PyTorch on the dequantized weights.

Four modules, each importing only those below it: `storage` (a storage mode → a layer) over `layers` (the PyTorch
modules) over `tiles` (the kernels' layout) over `blocks` (integer blocks as a file's formats give them)."""

from ..kernels.abi import BLOCK, GROUP, OCTET
from .blocks import BlockRows, Blocks, Factored, Tiles, as_float, quantize_blocks, scaled
from .layers import DECODE_ROWS, HalfLinear, QuantizedEmbedding, QuantizedLinear, native_linear
from .storage import float_linear, make_linear, store_linears
from .tiles import group_span, tile, untile, untile_scales, untiled

__all__ = ["BLOCK", "DECODE_ROWS", "GROUP", "OCTET", "BlockRows", "Blocks", "Factored", "HalfLinear",
           "QuantizedEmbedding", "QuantizedLinear", "Tiles", "as_float", "float_linear", "group_span", "make_linear",
           "native_linear", "quantize_blocks", "scaled", "store_linears", "tile", "untile", "untile_scales", "untiled"]
