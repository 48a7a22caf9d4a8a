"""GGUF's block formats as forwardpass keeps them: each dequantizes to what `gguf` dequantizes (bit for bit where
the format is a grid of 32), from random blocks that cover every bit pattern of the integers and scales."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType
from gguf.quants import dequantize

from forwardpass.quant import QuantizedLinear
from forwardpass.weights.formats import FORMATS, to_blocks

Q = GGMLQuantizationType
HALVES = {Q.Q4_0: [0], Q.Q4_1: [0, 2], Q.Q5_0: [0], Q.Q5_1: [0, 2], Q.Q8_0: [0], Q.Q4_K: [0, 2], Q.Q5_K: [0, 2],
          Q.Q6_K: [208]}  # where each format keeps its fp16 scales (and minimums) in a block


def random_tensor(kind: GGMLQuantizationType, rows: int, cols: int, seed: int = 0) -> np.ndarray:
    """(rows, row bytes) of random blocks with finite fp16 scales."""
    block, size = GGML_QUANT_SIZES[kind]
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, (rows * cols // block, size), dtype=np.uint8)
    for at in HALVES[kind]:
        raw[:, at:at + 2] = (rng.standard_normal((len(raw), 1)) * 0.02).astype(np.float16).view(np.uint8)
    return raw.reshape(rows, -1)


def test_every_block_format_has_a_case():
    assert set(HALVES) == set(FORMATS)


@pytest.mark.parametrize("kind", list(FORMATS), ids=lambda k: k.name)
def test_blocks_dequantize_as_gguf_does(kind):
    rows, cols = 48, 512
    raw = random_tensor(kind, rows, cols)
    want = torch.from_numpy(dequantize(raw, kind))
    blocks = to_blocks(raw, kind, rows, cols)
    assert blocks.shape == (rows, cols) and blocks.bits == FORMATS[kind].bits
    assert int(blocks.q.max()) < 2 ** blocks.bits
    got = blocks.dequantize()
    if FORMATS[kind].exact:
        assert blocks.exact and torch.equal(got, want)
    else:  # Q6_K: re-quantized to 8 bits, within half a step of each block's 255 levels
        span = want.view(rows, -1, 32).abs().amax(-1, keepdim=True) * 2
        assert ((got - want).view(rows, -1, 32).abs() <= span / 255 / 2 * 1.001 + 1e-7).all()
    layer = QuantizedLinear(blocks)  # tiled as the kernels read it, and back
    assert torch.equal(layer.dequantize(), got)
    if FORMATS[kind].exact:  # a symmetric grid keeps no minimums: each is -zero × its scale
        zero = {Q.Q4_0: 8, Q.Q5_0: 16, Q.Q8_0: 128}.get(kind)
        assert (layer.minimum is None, layer.zero) == (zero is not None, zero or 0)


def test_rows_and_joins_keep_the_values():
    a = to_blocks(random_tensor(Q.Q4_1, 16, 64, 1), Q.Q4_1, 16, 64)
    b = to_blocks(random_tensor(Q.Q8_0, 8, 64, 2), Q.Q8_0, 8, 64)
    joined = type(a).cat([a, b])
    assert joined.bits == 8 and torch.equal(joined.dequantize(), torch.cat([a.dequantize(), b.dequantize()]))
    order = torch.randperm(16)
    assert torch.equal(a.rows(order).dequantize(), a.dequantize()[order])


def test_a_format_without_an_entry_is_refused_by_name(tmp_path):
    import forwardpass
    from forwardpass.errors import UnsupportedModelError
    from forwardpass.weights.synthetic import write_synthetic_gguf

    path = write_synthetic_gguf(tmp_path / "q2k.gguf", forwardpass.default_model_path(), Q.Q2_K, d_model=256,
                                n_layers=1, n_heads=4, n_kv_heads=2, ffn_hidden=256)
    with pytest.raises(UnsupportedModelError, match=r"token_embd.weight: tensor type Q2_K is not supported "
                                                    r"\(supported: F32, F16, BF16, Q4_0, Q4_1"):
        forwardpass.load(path)
