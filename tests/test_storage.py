"""Storage modes (fp32, bf16, fp16, int8, q4): each one's arithmetic is right, and its accuracy cost bounded."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import forwardpass
from forwardpass.errors import ForwardpassError
from forwardpass.quant import QuantizedLinear


@pytest.mark.parametrize("bits,tol", [(8, 1 / 254), (4, 1 / 30)])
def test_quantized_linear_error_within_half_a_step(bits, tol):
    torch.manual_seed(0)
    linear = nn.Linear(64, 48)
    q = QuantizedLinear(linear, bits)
    w = linear.weight.detach().view(48, 2, 32)
    span = (w.abs().amax(-1) * 2 if bits == 8 else w.amax(-1) - w.amin(-1))[..., None]  # each block's range
    err = (q.dequantize().view(48, 2, 32) - w).abs()
    assert (err <= span * tol * 1.01 + 1e-3 * span).all()  # within half a quantization step (plus fp16 scale rounding)
    x = torch.randn(40, 64)  # prefill-sized: the dequantized path (decode's kernel is in test_kernels.py)
    assert torch.allclose(q(x), nn.functional.linear(x, q.dequantize(), linear.bias))


def test_quantized_storage_bytes():
    """Nibbles (q4) or bytes (int8) plus an fp32 scale and minimum per block of 32, for out_features padded to a
    multiple of 16 (the kernels' tile height) with zero rows that dequantize() leaves out."""
    for n, rows in ((32, 32), (10, 16)):
        q = QuantizedLinear(nn.Linear(64, n, bias=False), 4)
        assert q.nbytes() == rows * 64 // 2 + rows * 2 * 2 * 4
        q8 = QuantizedLinear(nn.Linear(64, n, bias=False), 8)
        assert q8.nbytes() == rows * 64 + rows * 2 * 2 * 4  # 40 bytes per 32 weights
        assert q.dequantize().shape == q8.dequantize().shape == (n, 64)


def test_q4_reproduces_the_files_own_q4_blocks(smollm):
    """The default GGUF is Q4_1 (its output table Q8_0): requantizing gives exactly the file's weights back."""
    down = smollm.model.blocks[0].ffn.down
    head = smollm.model.lm_head
    for bits in (4, 8):  # Q4_1 blocks sit on the asymmetric grid
        assert (QuantizedLinear(down, bits).dequantize() - down.weight).abs().max().item() < 1e-6
    assert (QuantizedLinear(head, 8).dequantize() - head.weight).abs().max().item() < 1e-6  # Q8_0: the symmetric one


def test_unknown_storage_and_width():
    with pytest.raises(ForwardpassError, match="unknown storage 'int3'"):
        forwardpass.load(storage="int3")
    with pytest.raises(ForwardpassError, match="in_features divisible by 32"):
        QuantizedLinear(nn.Linear(40, 8), 4)


@pytest.fixture(scope="module")
def reference_logits(smollm):
    ids = smollm.encode("The history of the printing press begins in the fifteenth century, when")
    with torch.inference_mode():
        return ids, smollm.model(torch.tensor([ids]))[0][0].float()


# int8 and q4 run short inputs through the native kernels (activations as 15-bit integers per block of 32)
@pytest.mark.parametrize("storage,max_diff,agreement", [("bf16", 1.0, 0.9), ("fp16", 0.2, 0.9),
                                                        ("int8", 0.2, 0.9), ("q4", 0.2, 0.9)])
def test_storage_modes_track_fp32(reference_logits, storage, max_diff, agreement):
    ids, want = reference_logits
    fp = forwardpass.load(storage=storage)
    with torch.inference_mode():
        got = fp.model(torch.tensor([ids]))[0][0].float()
    assert (got - want).abs().max().item() < max_diff
    assert (got.argmax(-1) == want.argmax(-1)).float().mean().item() >= agreement


def test_last_only_logits_equal_the_last_position(smollm):
    ids = torch.tensor([smollm.encode("One two three")])
    with torch.inference_mode():
        full, _ = smollm.model(ids)
        last, cache = smollm.model(ids, last_only=True)
    assert last.shape == (1, 1, 49152) and cache.lengths == [ids.shape[1]]
    assert (last[0, 0] - full[0, -1]).abs().max().item() <= 1e-4  # same numbers; a one-row matmul may round apart
