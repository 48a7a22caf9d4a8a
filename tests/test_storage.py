"""Storage modes (fp32, bf16, fp16, int8, q4): each one's arithmetic is right, and its accuracy cost bounded."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import forwardpass
from forwardpass.errors import ForwardpassError, InvariantError
from forwardpass.quant import BlockRows, Blocks, QuantizedEmbedding, QuantizedLinear, make_linear, untile, untile_scales


@pytest.mark.parametrize("bits,tol", [(8, 1 / 254), (4, 1 / 30)])
def test_quantized_linear_error_within_half_a_step(bits, tol):
    torch.manual_seed(0)
    linear = nn.Linear(64, 48)
    q = QuantizedLinear.quantize(linear.weight, bits, linear.bias)
    w = linear.weight.detach().view(48, 2, 32)
    span = (w.abs().amax(-1) * 2 if bits == 8 else w.amax(-1) - w.amin(-1))[..., None]  # each block's range
    err = (q.dequantize().view(48, 2, 32) - w).abs()
    assert (err <= span * tol * 1.01 + 1e-3 * span).all()  # within half a quantization step (plus fp16 scale rounding)
    x = torch.randn(40, 64)  # prefill-sized: the integer kernel, activations to 15 bits (tests/test_kernels.py)
    want = nn.functional.linear(x, q.dequantize(), linear.bias)
    assert ((q(x) - want).abs().max() / want.abs().max()).item() < 1e-4


def test_quantized_storage_bytes():
    """Nibbles (q4) or bytes (int8) plus an fp32 scale and minimum per block of 32, for out_features padded to a
    multiple of 16 (the kernels' tile height) with zero rows that dequantize() leaves out."""
    for n, rows in ((32, 32), (10, 16)):
        q = QuantizedLinear.quantize(nn.Linear(64, n, bias=False).weight, 4)
        assert q.nbytes() == rows * 64 // 2 + rows * 2 * 2 * 4
        q8 = QuantizedLinear.quantize(nn.Linear(64, n, bias=False).weight, 8)
        assert q8.nbytes() == rows * 64 + rows * 2 * 2 * 4  # 40 bytes per 32 weights
        assert q.dequantize().shape == q8.dequantize().shape == (n, 64)


def test_stored_mode_keeps_the_files_own_blocks(smollm):
    """The default GGUF is Q4_1 (its output table Q8_0): the default mode keeps those blocks (4 and 8 bits), and
    they are exactly the weights float32 mode dequantizes; q4 and int8 reuse them (widened to 8 bits for int8)."""
    stored = forwardpass.load()
    assert stored.metadata["storage"] == "stored"
    for fp in (stored, forwardpass.load(storage="int8")):
        for name in ("blocks.0.ffn.down", "blocks.29.attn.qkv", "lm_head"):
            got, want = fp.model.get_submodule(name), smollm.model.get_submodule(name)
            assert isinstance(got, QuantizedLinear)
            assert got.bits == (8 if name == "lm_head" or fp is not stored else 4)
            assert torch.equal(got.dequantize(), want.weight)
    down = smollm.model.blocks[0].ffn.down
    assert (QuantizedLinear.quantize(down.weight, 4).dequantize() - down.weight).abs().max().item() < 1e-6


@pytest.mark.parametrize("bits", [4, 8])
def test_a_matrix_tiled_band_by_band_is_the_matrix_tiled_whole(bits):
    """A file's large tensor is read as bands of rows (BlockRows); tiled band by band it is the same layer as tiled
    whole: rows padded to a group at the end only, 4-bit bands widened to 8 bits, and float32 scales for every band
    once one band's scales are not float16 values."""
    g = torch.Generator().manual_seed(bits)
    n, k = 70, 96  # the last group part padding
    q = torch.randint(0, 16, (n, k // 32, 32), generator=g, dtype=torch.uint8)
    scale = (torch.rand(n, k // 32, 1, generator=g) * 0.02).half().float()
    minimum = (-torch.rand(n, k // 32, 1, generator=g)).half().float()
    for off_half in (False, True):
        if off_half:
            scale[60, 1, 0] += 1e-7  # in the last band only
        whole = Blocks(q, scale, minimum, bits)
        rows = BlockRows((n, k), bits, lambda: [Blocks(*(t[a:b] for t in (q, scale, minimum)), 4)
                                                for a, b in ((0, 16), (16, 48), (48, 70))])
        banded, want = QuantizedLinear(rows), QuantizedLinear(whole)
        assert banded.scale.dtype == want.scale.dtype == (torch.float32 if off_half else torch.float16)
        for name in ("q", "scale", "minimum"):
            assert torch.equal(getattr(banded, name), getattr(want, name)), name
    with pytest.raises(InvariantError, match="bands must be whole groups of 16 rows"):
        QuantizedLinear(BlockRows((n, k), 4, lambda: [Blocks(*(t[a:b] for t in (q, scale, minimum)), 4)
                                                      for a, b in ((0, 10), (10, 70))]))
    with pytest.raises(InvariantError, match="the bands held 48 rows of 70"):
        QuantizedLinear(BlockRows((n, k), 4, lambda: [Blocks(q[:48], scale[:48], minimum[:48], 4)]))


def test_stored_mode_keeps_a_files_4_bit_output_table():
    """Stored, a file's 4-bit unembedding stays 4-bit (widened, the same numbers cost twice the bytes); re-quantizing
    modes give it 8 bits."""
    torch.manual_seed(0)
    blocks = QuantizedLinear.quantize(torch.randn(32, 64), 4)
    four = Blocks(untile(blocks.q, 4), untile_scales(blocks.scale), untile_scales(blocks.minimum), 4)
    assert make_linear(four, None, None, head=True).bits == 4
    assert make_linear(four, None, 4, head=True).bits == 8 and make_linear(four, None, 4).bits == 4


@pytest.mark.parametrize("bits", [4, 8])
def test_quantized_embedding_rows_are_the_tables_rows(bits):
    torch.manual_seed(bits)
    table = QuantizedLinear.quantize(torch.randn(40, 96), bits)  # 40 rows: the last group half padding
    lookup = QuantizedEmbedding(table)
    ids = torch.tensor([[0, 39, 17], [16, 15, 17]])
    assert torch.equal(lookup(ids), table.dequantize()[ids])
    assert lookup(torch.tensor([], dtype=torch.long)).shape == (0, 96)


def test_stored_mode_reads_a_tied_table_from_the_unembeddings_blocks():
    fp = forwardpass.load()
    assert isinstance(fp.model.tok_embeddings, QuantizedEmbedding) and fp.model.tok_embeddings.table is fp.model.lm_head
    assert not any(p.numel() == 49152 * 576 for p in fp.model.parameters())  # no float32 copy of the table


def test_unknown_storage_and_width():
    with pytest.raises(ForwardpassError, match="unknown storage 'int3'"):
        forwardpass.load(storage="int3")
    with pytest.raises(ForwardpassError, match="unknown KV cache dtype 'int8'; choose from auto, float32, float16"):
        forwardpass.load(kv_cache_dtype="int8")
    with pytest.raises(ForwardpassError, match="in_features divisible by 32"):
        QuantizedLinear.quantize(nn.Linear(40, 8).weight, 4)


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


def test_fp32_keeps_one_copy_of_a_tied_table(smollm):
    """The unembedding of a tied model in fp32 is the embedding table itself, not a second 113 MB copy."""
    assert smollm.model.lm_head.weight.data_ptr() == smollm.model.tok_embeddings.weight.data_ptr()
