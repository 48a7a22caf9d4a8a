"""GGUF's block formats as forwardpass keeps them: each dequantizes to what `gguf` dequantizes (bit for bit where
the format is a grid of 32), from random blocks that cover every bit pattern of the integers and scales."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType
from gguf.quants import dequantize

from forwardpass import kernels
from forwardpass.errors import ForwardpassError
from forwardpass.quant import BlockRows, QuantizedLinear, Tiles
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


@pytest.mark.skipif(not kernels.available(), reason="no native kernels here")
@pytest.mark.parametrize("kind", [k for k, f in FORMATS.items() if f.native], ids=lambda k: k.name)
def test_native_repacking_gives_the_unpacked_tiles(kind):
    """kernels.repack tiles a file's blocks straight from its bytes: the same layer, bit for bit, as unpacking them
    (formats.py) and tiling the integers (quant.tile), padding rows included."""
    rows, cols = 37, 512  # the last group part padding; two of K-quants' 256-blocks a row
    raw = random_tensor(kind, rows, cols, seed=5)
    bits = FORMATS[kind].bits
    native = QuantizedLinear(BlockRows((rows, cols), bits, lambda: [],
                                       lambda b: [Tiles(*kernels.repack(kind.value, raw, rows, cols), rows)]))
    unpacked = QuantizedLinear(to_blocks(raw, kind, rows, cols))
    keeps_minimums = kind in (Q.Q4_1, Q.Q4_K, Q.Q5_K)
    assert native.zero == unpacked.zero and (native.minimum is None) == (unpacked.minimum is None) != keeps_minimums
    assert torch.equal(native.q, unpacked.q) and torch.equal(native.scale, unpacked.scale)
    assert native.scale.dtype == (torch.uint8 if FORMATS[kind].factors else torch.float16)
    assert not keeps_minimums or torch.equal(native.minimum, unpacked.minimum)
    with pytest.raises(ForwardpassError, match="not ggml type 6"):
        kernels.repack(Q.Q5_0.value, random_tensor(Q.Q5_0, 16, 256), 16, 256)


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


@pytest.mark.parametrize("kind", [Q.Q4_0, Q.Q8_0, Q.Q4_K, Q.Q5_K, Q.Q5_0], ids=lambda k: k.name)
def test_a_files_stacked_tensors_load_band_by_band(kind, tmp_path, monkeypatch):
    """Q, K and V (K and Q rows back in rotary halves) and gate and up are read as bands of rows, several to a tensor
    here, repacked natively or unpacked: each stacked weight is what `gguf` dequantizes, reordered and stacked."""
    import forwardpass
    from forwardpass.weights import gguf as gguf_module
    from forwardpass.weights.gguf import rotary_order
    from forwardpass.weights.gguf_file import GGUFFile
    from forwardpass.weights.synthetic import write_synthetic_gguf

    monkeypatch.setattr(gguf_module, "BAND_WEIGHTS", 16 * 256)  # 16 rows a band
    shape = {"d_model": 256, "n_layers": 1, "n_heads": 4, "n_kv_heads": 2, "ffn_hidden": 512, "context": 64}
    path = write_synthetic_gguf(tmp_path / "m.gguf", forwardpass.default_model_path(), kind, **shape)
    model = forwardpass.load(path).model
    tensors = {t.name: torch.from_numpy(dequantize(t.data, t.kind).copy()).view(t.shape)
               for t in GGUFFile(path).tensors}
    q, k, v = (tensors[f"blk.0.attn_{x}.weight"] for x in "qkv")
    want = torch.cat([q[rotary_order(256, 4)], k[rotary_order(128, 2)], v])
    assert torch.equal(model.blocks[0].attn.qkv.dequantize(), want)
    want = torch.cat([tensors["blk.0.ffn_gate.weight"], tensors["blk.0.ffn_up.weight"]])
    assert torch.equal(model.blocks[0].ffn.gate_up.dequantize(), want)


@pytest.mark.parametrize("kind", [k for k, f in FORMATS.items() if f.factors], ids=lambda k: k.name)
def test_k_quant_scales_stay_factored_and_give_the_same_bits(kind):
    """Q4_K and Q5_K scale each 32 weights by a 6-bit factor times the 256-block's fp16 scale: the layer keeps them
    so (18.5 bytes per 32 4-bit weights, not 24), and every path gives the numbers of the same layer holding the
    products in float32, bit for bit. A band without factors after one with them widens the layer's exactly."""
    from dataclasses import replace

    from forwardpass.quant import OCTET, QuantizedEmbedding, untiled

    rows, cols = 37, 512  # the last group part padding; two 256-blocks a row
    blocks = to_blocks(random_tensor(kind, rows, cols, seed=7), kind, rows, cols)
    factored, products = QuantizedLinear(blocks), QuantizedLinear(replace(blocks, factored=None))
    assert factored.scale.dtype == factored.minimum.dtype == torch.uint8 and products.scale.dtype == torch.float32
    groups = -(-rows // 16)
    assert factored.nbytes() == factored.q.numel() + 2 * groups * (cols // 256) * OCTET
    want = products.dequantize()
    assert torch.equal(factored.dequantize(), want)
    assert torch.equal(untiled(factored.q, factored.scale, factored.minimum, factored.bits, rows), want)
    ids = torch.tensor([0, 36, 17, 17])
    assert torch.equal(QuantizedEmbedding(factored)(ids), want[ids])
    if kernels.available():
        x = torch.randn(5, cols) * 3
        for m in (1, 2, 5):  # one row, a pair, pairs and one
            got = kernels.gemv(x[:m], factored.bits, factored.q, rows, factored.scale, factored.minimum)
            assert torch.equal(got, kernels.gemv(x[:m], products.bits, products.q, rows, products.scale,
                                                 products.minimum))
    top, rest = blocks.rows(torch.arange(16)), blocks.rows(torch.arange(16, rows))
    mixed = QuantizedLinear(BlockRows((rows, cols), blocks.bits, lambda: [top, replace(rest, factored=None)]))
    assert mixed.scale.dtype == torch.float32 and torch.equal(mixed.dequantize(), want)
    assert torch.equal(mixed.scale, products.scale) and torch.equal(mixed.minimum, products.minimum)
