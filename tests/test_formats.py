"""GGUF's block formats as forwardpass keeps them: each dequantizes to what `gguf` dequantizes, bit for bit, from
random blocks that cover every bit pattern of the integers and scales."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from bits import fifteen_bits
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType
from gguf.quants import dequantize
from stepping import stepped

from forwardpass import kernels
from forwardpass.errors import ForwardpassError
from forwardpass.quant import BlockRows, QuantizedLinear, Tiles, untiled
from forwardpass.weights import formats
from forwardpass.weights.formats import FORMATS, to_blocks

Q = GGMLQuantizationType
HALVES = {Q.Q4_0: [0], Q.Q4_1: [0, 2], Q.Q5_0: [0], Q.Q5_1: [0, 2], Q.Q8_0: [0], Q.Q4_K: [0, 2], Q.Q5_K: [0, 2],
          Q.Q6_K: [208], Q.IQ4_NL: [0]}  # where each format keeps its fp16 scales (and minimums) in a block


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
    assert blocks.exact and torch.equal(got, want)
    layer = QuantizedLinear(blocks)  # tiled as the kernels read it, and back, natively and through PyTorch's ops
    assert torch.equal(layer.dequantize(), got)
    assert torch.equal(untiled(layer.q, layer.scale, layer.minimum, layer.bits, rows, layer.zero), got)
    zero = {Q.Q4_0: 8, Q.Q5_0: 16, Q.Q8_0: 128, Q.Q6_K: 32, Q.IQ4_NL: 128}.get(kind)  # symmetric: no minimums kept
    assert (layer.minimum is None, layer.zero) == (zero is not None, zero or 0)
    assert (layer.scale.dim() == 4) == (kind == Q.Q6_K)  # Q6_K: a scale per 16 weights


@pytest.mark.skipif(not kernels.available(), reason="no native kernels here")
@pytest.mark.parametrize("kind", list(FORMATS), ids=lambda k: k.name)
def test_the_kernels_multiply_every_format_as_its_dequantized_weights(kind):
    """Each format's layer, as loading keeps it, multiplies one row, a pair, and pairs and one (the kernels' three
    paths) as the dequantized weights multiply the activations the kernels see (15 bits a block), within float32
    rounding."""
    rows, cols = 37, 512
    raw = random_tensor(kind, rows, cols, seed=13)
    layer = QuantizedLinear(to_blocks(raw, kind, rows, cols))
    w = torch.from_numpy(dequantize(raw, kind))
    x = torch.randn(5, cols, generator=torch.Generator().manual_seed(1)) * 3
    for m in (1, 2, 5):
        got = kernels.gemv(x[:m], layer.bits, layer.q, rows, layer.scale, layer.minimum, layer.zero)
        want = fifteen_bits(x[:m]).double() @ w.double().T
        assert ((got - want).abs().max() / want.abs().max()).item() < 1e-5


@pytest.mark.skipif(not kernels.available(), reason="no native kernels here")
@pytest.mark.parametrize("kind", list(FORMATS), ids=lambda k: k.name)
def test_native_repacking_gives_the_unpacked_tiles(kind):
    """The native repacking tiles every format's blocks straight from the file's bytes: the same layer, bit for bit, as
    unpacking them (formats.py) and tiling the integers (quant.tile), padding rows included."""
    rows, cols = 37, 512  # the last group part padding; two of K-quants' 256-blocks a row
    raw = random_tensor(kind, rows, cols, seed=5)
    bits = FORMATS[kind].bits
    def repacked(width: int, into: np.ndarray) -> list[Tiles]:  # the tiles written into the layer's own
        return [Tiles(*formats.repack(kind, raw, rows, cols, into), rows)]

    native = QuantizedLinear(BlockRows((rows, cols), bits, lambda: [], repacked))
    with pytest.raises(ForwardpassError, match=r"go into \(3, 16, \d+\) contiguous bytes, not \(3, 16, 1\)"):
        formats.repack(kind, raw, rows, cols, np.empty((3, 16, 1), dtype=np.uint8))
    unpacked = QuantizedLinear(to_blocks(raw, kind, rows, cols))
    keeps_minimums = kind in (Q.Q4_1, Q.Q5_1, Q.Q4_K, Q.Q5_K)
    assert native.zero == unpacked.zero and (native.minimum is None) == (unpacked.minimum is None) != keeps_minimums
    assert torch.equal(native.q, unpacked.q) and torch.equal(native.scale, unpacked.scale)
    form = torch.uint8 if FORMATS[kind].factors else torch.float32 if kind == Q.Q6_K else torch.float16
    assert native.scale.dtype == form
    assert not keeps_minimums or torch.equal(native.minimum, unpacked.minimum)
    with pytest.raises(ForwardpassError, match="blocks, not Q2_K"):
        formats.repack(Q.Q2_K, np.zeros((16, GGML_QUANT_SIZES[Q.Q2_K][1]), np.uint8), 16, 256)


@pytest.mark.skipif(not kernels.available(), reason="no native kernels here")
@pytest.mark.parametrize("kinds", [(Q.Q8_0, Q.Q5_1, Q.Q5_0), (Q.Q5_1, Q.Q8_0), (Q.Q8_0, Q.Q5_0), (Q.Q4_0, Q.Q4_1),
                                   (Q.Q4_0, Q.Q4_K), (Q.Q4_K, Q.Q4_0), (Q.Q8_0, Q.Q6_K, Q.Q5_K)],
                         ids=lambda ks: "+".join(k.name for k in ks))
def test_repacked_bands_of_several_formats_stack_exactly(kinds):
    """Natively repacked bands keep no minimums where their format is symmetric (its zero says them). Stacked with
    bands that keep theirs, or with symmetric ones of another zero, every band's minimums are made: the layer holds
    the weights `gguf` dequantizes, and its products are theirs."""
    cols, sizes = 256, [32, 32, 21][:len(kinds)]
    raws = [random_tensor(k, n, cols, seed=20 + i) for i, (k, n) in enumerate(zip(kinds, sizes, strict=True))]
    bands = [Tiles(*formats.repack(k, raw, n, cols), n) for k, raw, n in zip(kinds, raws, sizes, strict=True)]
    layer = QuantizedLinear(BlockRows((sum(sizes), cols), FORMATS[kinds[0]].bits, lambda: [], lambda b, into: bands))
    want = torch.from_numpy(np.concatenate([dequantize(raw, k) for k, raw in zip(kinds, raws, strict=True)]))
    assert torch.equal(layer.dequantize(), want)
    assert (layer.minimum is None) == (len({FORMATS[k].zero for k in kinds}) == 1)
    x = torch.randn(3, cols, generator=torch.Generator().manual_seed(2))
    got = kernels.gemv(x, layer.bits, layer.q, sum(sizes), layer.scale, layer.minimum, layer.zero)
    exact = fifteen_bits(x).double() @ want.double().T
    assert ((got - exact).abs().max() / exact.abs().max()).item() < 1e-5


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


@pytest.mark.parametrize("kind", [Q.Q4_0, Q.Q8_0, Q.Q4_K, Q.Q5_K, Q.Q5_0, Q.Q6_K, "Q4_K_M"], ids=str)
def test_a_files_stacked_tensors_load_band_by_band(kind, tmp_path, monkeypatch):
    """Q, K and V (K and Q rows back in rotary halves) and gate and up are read as bands of rows, several to a tensor
    here, repacked natively or unpacked: each stacked weight is what `gguf` dequantizes, reordered and stacked. In a
    Q4_K_M mix, V (Q6_K: a scale per 16 weights) joins Q and K (Q4_K), and the native step gives the blocks'
    logits."""
    import forwardpass
    from forwardpass.weights import gguf as gguf_module
    from forwardpass.weights.gguf_config import rotary_order
    from forwardpass.weights.gguf_file import GGUFFile
    from forwardpass.weights.synthetic import Q4_K_M, write_synthetic_gguf

    monkeypatch.setattr(gguf_module, "BAND_WEIGHTS", 16 * 256)  # 16 rows a band
    shape = {"d_model": 256, "n_layers": 1, "n_heads": 4, "n_kv_heads": 2, "ffn_hidden": 512, "context": 64}
    mixed = {"mixed": Q4_K_M, "kind": Q.Q4_K} if kind == "Q4_K_M" else {"kind": kind}
    path = write_synthetic_gguf(tmp_path / "m.gguf", forwardpass.default_model_path(), **mixed, **shape)
    model = forwardpass.load(path).model
    tensors = {t.name: torch.from_numpy(dequantize(t.data, t.kind).copy()).view(t.shape)
               for t in GGUFFile(path).tensors}
    q, k, v = (tensors[f"blk.0.attn_{x}.weight"] for x in "qkv")
    want = torch.cat([q[rotary_order(256, 4)], k[rotary_order(128, 2)], v])
    assert torch.equal(model.blocks[0].attn.qkv.dequantize(), want)
    want = torch.cat([tensors["blk.0.ffn_gate.weight"], tensors["blk.0.ffn_up.weight"]])
    assert torch.equal(model.blocks[0].ffn.gate_up.dequantize(), want)
    if kind != "Q4_K_M":
        return
    assert model.blocks[0].attn.qkv.scale.dim() == model.lm_head.scale.dim() == 4  # scales per 16 weights
    assert torch.equal(model.blocks[0].ffn.down.dequantize(), tensors["blk.0.ffn_down.weight"])
    # the native step (which must bind), then the blocks, after the same prefill
    native, blocks = (stepped(model, [1, 2, 3], [4], native=n)[0] for n in (True, False))
    with torch.inference_mode():
        exact = forwardpass.load(path, storage="fp32").model(torch.tensor([[1, 2, 3, 4]]))[0][0, -1]
    assert (native - blocks).abs().max() <= 1e-3 * blocks.abs().max()
    assert (blocks - exact).abs().max() <= 1e-3 * exact.abs().max()  # 15-bit activations against float32 ones


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


def test_q6_k_keeps_a_scale_per_16_weights():
    """Q6_K scales each 16 weights by d × an int8: the layer keeps those float32 products (8-bit tiles, no minimums:
    each is -32 × its scale), and the kernels' rows (one, a pair, pairs and one), the embedding lookup and a stack
    with Q4_K rows above it (a Q4_K_M file's Q, K and V) give the file's numbers."""
    from forwardpass.quant import QuantizedEmbedding

    rows, cols = 37, 512
    raw = random_tensor(Q.Q6_K, rows, cols, seed=11)
    want = torch.from_numpy(dequantize(raw, Q.Q6_K))
    layer = QuantizedLinear(to_blocks(raw, Q.Q6_K, rows, cols))
    groups = -(-rows // 16)
    assert layer.bits == 8 and layer.zero == 32 and layer.minimum is None
    assert layer.scale.shape == (groups, cols // 32, 2, 16) and layer.nbytes() == layer.q.numel() + groups * cols * 4
    ids = torch.tensor([0, 36, 17, 17])
    assert torch.equal(QuantizedEmbedding(layer)(ids), want[ids])
    top = to_blocks(random_tensor(Q.Q4_K, 32, cols, seed=12), Q.Q4_K, 32, cols)
    stacked = QuantizedLinear(BlockRows((32 + rows, cols), 8, lambda: [top, to_blocks(raw, Q.Q6_K, rows, cols)]))
    both = torch.cat([top.dequantize(), want])
    assert stacked.scale.dim() == 4 and stacked.minimum is not None and torch.equal(stacked.dequantize(), both)
    if kernels.available():
        x = torch.randn(5, cols) * 3
        for m in (1, 2, 5):
            for w, n, reference in ((layer, rows, want), (stacked, 32 + rows, both)):
                got = kernels.gemv(x[:m], 8, w.q, n, w.scale, w.minimum, w.zero)
                exact = fifteen_bits(x[:m]) @ reference.T
                assert ((got - exact).abs().max() / exact.abs().max()).item() < 1e-5


@pytest.mark.skipif(not kernels.available(), reason="no native kernels here")
def test_a_block_format_is_one_row_that_the_kernels_state_too():
    """repack.c's own rows (kernels.repack_formats) agree with weights/formats.py's, field by field; a row changed on
    either side is refused by name before anything is repacked."""
    rows = kernels.repack_formats()
    assert {Q(r["kind"]) for r in rows} == set(FORMATS) == formats.native()
    assert formats.mismatches(rows) == []
    changed = [r | {"zero": 4} if r["kind"] == Q.Q4_0.value else r for r in rows]
    assert formats.mismatches(changed) == ["Q4_0.zero: 4 in repack.c, 8 in weights/formats.py"]
    changed = [r | {"block_bytes": 200, "tile": 256} if r["kind"] == Q.Q6_K.value else r for r in rows]
    assert formats.mismatches(changed) == ["Q6_K.block_bytes: 200 in repack.c, 210 in weights/formats.py",
                                           "Q6_K.tile: 256 in repack.c, 512 in weights/formats.py"]
    unknown = {"kind": Q.IQ4_XS.value, "block_bytes": 136, "tile": 512, "scales": 1, "zero": 128}
    assert formats.mismatches([*rows, unknown]) == ["repack.c reads IQ4_XS, which weights/formats.py does not know"]
