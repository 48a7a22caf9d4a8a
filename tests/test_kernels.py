"""The native decode kernels (8-bit and 4-bit weights) against the plain PyTorch path they replace."""

from __future__ import annotations

import pytest
import torch
from bits import fifteen_bits
from torch import nn

from forwardpass import kernels
from forwardpass.quant import HalfLinear, QuantizedLinear

pytestmark = pytest.mark.skipif(not kernels.available(), reason="no native kernels here")


@pytest.mark.parametrize("bits", [8, 4])
@pytest.mark.parametrize("rows", [1, 3, 16])
@pytest.mark.parametrize("shape", [(576, 960), (1536, 576), (128, 64), (96, 40), (32, 8)])
def test_kernel_matches_dequantized_matmul(bits, rows, shape):
    torch.manual_seed(rows * 7 + bits)
    k, n = shape
    layer = quantized(nn.Linear(k, n, bias=True), bits)
    x = torch.randn(rows, k)
    assert layer.fast
    with torch.no_grad():
        got = layer(x)
        exact = nn.functional.linear(fifteen_bits(x), layer.dequantize(), layer.bias)
        want = nn.functional.linear(x, layer.dequantize(), layer.bias)
    assert got.shape == (rows, n)
    assert ((got - exact).abs().max() / exact.abs().max()).item() < 1e-5  # the same arithmetic, other rounding
    assert ((got - want).abs().max() / want.abs().max()).item() < 1e-4  # what quantizing x costs


def quantized(linear: nn.Linear, bits: int) -> QuantizedLinear:
    return QuantizedLinear.quantize(linear.weight, bits, linear.bias)


def test_kernel_keeps_batch_shape():
    layer = quantized(nn.Linear(64, 32, bias=False), 8)
    x = torch.randn(2, 1, 64)
    assert layer(x).shape == (2, 1, 32)
    assert torch.allclose(layer(x)[1, 0], layer(x[1, 0][None])[0])


@pytest.mark.parametrize("bits", [8, 4])
@pytest.mark.parametrize("shape", [(576, 960), (96, 40), (32, 8)])  # rows padded to a group, and not
def test_native_dequantize_is_the_pytorch_ops_bit_for_bit(bits, shape):
    from forwardpass.quant import untiled

    torch.manual_seed(bits)
    k, n = shape
    layer = quantized(nn.Linear(k, n), bits)
    want = untiled(layer.q, layer.scale, layer.minimum, bits, n)
    got = layer.dequantize()
    assert got.shape == want.shape == (n, k) and torch.equal(got, want)


def half_exact_blocks(bits: int, n: int, k: int, seed: int):
    """Blocks whose every scale and minimum is a float16 value, as a GGUF's Q4_0, Q4_1 and Q8_0 store them."""
    from forwardpass.quant import Blocks

    g = torch.Generator().manual_seed(seed)
    q = torch.randint(0, 2**bits, (n, k // 32, 32), generator=g, dtype=torch.uint8)
    scale = (torch.rand(n, k // 32, 1, generator=g) * 0.02 + 1e-3).half().float()
    minimum = (-torch.rand(n, k // 32, 1, generator=g) * 0.2).half().float()
    return Blocks(q, scale, minimum, bits, exact=True)


@pytest.mark.parametrize("bits", [8, 4])
@pytest.mark.parametrize("rows", [1, 2, 5, 16])
def test_half_scales_give_the_float32_scales_bits(bits, rows):
    """Scales stored as float16 where they are exact: a decode step's rows, the native dequantization and the PyTorch
    ops all give what the same layer with float32 scales gives, bit for bit."""
    from forwardpass.quant import untiled

    n, k = 200, 576
    half = QuantizedLinear(half_exact_blocks(bits, n, k, seed=rows))
    wide = QuantizedLinear(half_exact_blocks(bits, n, k, seed=rows))
    wide.scale, wide.minimum = wide.scale.float(), wide.minimum.float()
    assert half.scale.dtype == half.minimum.dtype == torch.float16 and wide.scale.dtype == torch.float32
    assert half.nbytes() < wide.nbytes()
    x = torch.randn(rows, k, generator=torch.Generator().manual_seed(9))
    with torch.no_grad():
        assert torch.equal(half(x), wide(x))
    assert torch.equal(half.dequantize(), wide.dequantize())
    assert torch.equal(untiled(half.q, half.scale, half.minimum, bits, n), wide.dequantize())


def test_scales_not_exact_in_half_stay_float32():
    blocks = half_exact_blocks(4, 32, 64, seed=0)
    blocks.scale[3, 1, 0] += 1e-7  # one scale between two float16 values
    layer = QuantizedLinear(blocks)
    assert layer.scale.dtype == layer.minimum.dtype == torch.float32
    blocks = half_exact_blocks(4, 32, 64, seed=0)
    blocks.minimum[0, 0, 0] = 1e6  # past float16's range
    assert QuantizedLinear(blocks).scale.dtype == torch.float32
    assert QuantizedLinear(half_exact_blocks(4, 32, 64, seed=0)).scale.dtype == torch.float16


@pytest.mark.parametrize("bits,zero", [(4, 8), (8, 128), (8, 8), (8, 16)])  # Q4_0, Q8_0, Q4_0 widened, Q5_0
@pytest.mark.parametrize("rows", [1, 2, 5])
def test_symmetric_grids_keep_no_minimums_and_give_the_same_bits(bits, zero, rows):
    """Blocks whose every minimum is -zero × its scale (as Q4_0 and Q8_0 store them: signed scales, no minimums) keep
    none: the kernels' rows, the native dequantization, the PyTorch ops and the embedding lookup give what the same
    layer with those minimums stored gives, bit for bit."""
    from forwardpass.quant import QuantizedEmbedding, untiled

    n, k = 200, 576
    blocks = half_exact_blocks(bits, n, k, seed=rows)
    blocks.scale[::3] *= -1
    blocks.minimum = blocks.scale * -zero
    lean, stored = QuantizedLinear(blocks), QuantizedLinear(blocks)
    stored.minimum, stored.zero = (stored.scale.float() * -zero).half(), 0
    assert lean.minimum is None and lean.zero == zero and lean.scale.dtype == torch.float16
    assert lean.nbytes() < stored.nbytes()
    x = torch.randn(rows, k, generator=torch.Generator().manual_seed(9))
    with torch.no_grad():
        assert torch.equal(lean(x), stored(x))
    assert torch.equal(lean.dequantize(), stored.dequantize())
    assert torch.equal(untiled(lean.q, lean.scale, None, bits, n, zero), stored.dequantize())
    ids = torch.tensor([0, 199, 17, 16])
    assert torch.equal(QuantizedEmbedding(lean)(ids), QuantizedEmbedding(stored)(ids))
    blocks.minimum[5, 2, 0] += 1e-3  # one block off the grid: every minimum is kept
    assert QuantizedLinear(blocks).minimum is not None


@pytest.mark.parametrize("bits", [8, 4])
def test_prefill_rows_take_the_native_path(bits):
    """A prompt's many rows run the integer kernel too (each row as a decode step's row, bit for bit); float weights
    past a decode step's rows take PyTorch's matmul."""
    torch.manual_seed(bits)
    layer = quantized(nn.Linear(64, 32), bits)
    x = torch.randn(40, 64)  # more rows than a decode step
    with torch.no_grad():
        got = layer(x)
        assert torch.equal(got[17:18], layer(x[17:18]))
    exact = nn.functional.linear(fifteen_bits(x), layer.dequantize(), layer.bias)
    assert ((got - exact).abs().max() / exact.abs().max()).item() < 1e-5
    half = HalfLinear(nn.Linear(64, 32).weight.detach().half())
    assert torch.equal(half(x), nn.functional.linear(x, half.weight.float()))


@pytest.mark.parametrize("storage", ["int8", "q4"])
def test_decode_steps_track_fp32_on_the_real_model(smollm, storage):
    import forwardpass
    from forwardpass.loop import generate
    from forwardpass.sampling import SamplingParams

    fp = forwardpass.load(storage=storage)
    assert fp.model.blocks[0].ffn.down.fast and fp.model.lm_head.fast
    ids = smollm.encode("The capital of France is Paris. The capital of Germany is")
    quantized = generate(fp, ids, SamplingParams(temperature=0, max_tokens=8, logprobs=5))
    reference = generate(smollm, ids, SamplingParams(temperature=0, max_tokens=8))
    assert quantized.token_ids[:3] == reference.token_ids[:3]  # " Berlin." …


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("rows", [1, 5, 40])
def test_half_linear_sums_in_float32_where_it_must(dtype, rows):
    """Few rows: the native kernel, float32 sums of the stored weights. Many rows: bf16 multiplies in bf16
    (a bf16-rounded result) unless `exact`, which (like fp16) widens the weight to float32."""
    torch.manual_seed(rows)
    linear = nn.Linear(96, 70)
    x = torch.randn(rows, 96)
    with torch.no_grad():
        for exact in (False, True):
            layer = HalfLinear(linear.weight.to(dtype), linear.bias, exact=exact)
            widened = nn.functional.linear(x, layer.weight.float(), linear.bias)
            err = ((layer(x) - widened).abs().max() / widened.abs().max()).item()
            rounded = rows > 16 and dtype == torch.bfloat16 and not exact
            assert (1e-4 < err < 1e-2) if rounded else err < 1e-5
