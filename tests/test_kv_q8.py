"""q8_0 KV pairs (`--kv-cache-dtype q8_0`, kv_q8_0.py): blocks of 32 int8 values and a float16 scale, 34 bytes per 32
numbers. Each number reads back within half a step of what was written; the kernels store and read the blocks PyTorch
does, bit for bit; a pool of the same bytes holds 1.9 times float16's tokens; on the default model, decoding over a
fixed text keeps float32 pairs' top-1 token within measured bounds, and greedy generation keeps their tokens but at a
near-tie; prefix caching, preemption and checked mode give the tokens a request gets alone; a model whose head_dim is
no whole number of blocks is refused by name. And the default (auto): float16 pairs wherever the weights are quantized
blocks, float32 in the fp32 reference mode."""

from __future__ import annotations

import ctypes
import dataclasses
import json
import math
import shutil
from pathlib import Path

import pytest
import torch
from cli_helpers import in_process
from stepping import as_tensor, decode, run

import forwardpass
from forwardpass import Transformer, kernels
from forwardpass.config import ModelConfig
from forwardpass.engine import BlockPool, Engine, EngineConfig
from forwardpass.engine.rows import BLOCKS, NATIVE
from forwardpass.engine.runner import Runner, native_step
from forwardpass.errors import ForwardpassError
from forwardpass.kernels.abi import KV_Q8_0, Batch, Model
from forwardpass.kv_q8_0 import Q8_0, dequantize, quantize
from forwardpass.loaded import LoadedModel
from forwardpass.loop import generate
from forwardpass.sampling import SamplingParams

TEXT = (Path(__file__).parents[1] / "bench" / "text.txt").read_text()
needs_kernels = pytest.mark.skipif(not kernels.available(), reason="no native kernels here")


def scales(rows: torch.Tensor) -> torch.Tensor:
    """Each block's scale (..., blocks, 1) of q8_0 rows."""
    return rows.unflatten(-1, (-1, 34))[..., :2].contiguous().view(torch.float16).float()


def test_each_number_reads_back_within_half_a_step():
    """Blocks of every magnitude from 2^-30 to 2^17: each number within scale / 2 of what was written (the float32
    quotient's own rounding aside), or, where the binary16 scale is subnormal, within 127 × 2^-25; a zero block reads
    0; a NaN or an infinity in a block, or numbers past binary16's scales, read back as no plausible number."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(48, 3, 64, generator=g) * 2.0 ** torch.arange(-30, 18).repeat_interleave(3 * 64).view(48, 3, 64)
    x[0, 0] = 0
    rows = quantize(x)
    assert rows.dtype == torch.int8 and rows.shape == (48, 3, 68)  # 34 bytes per 32 numbers
    back = dequantize(rows)
    err = (back - x).unflatten(-1, (-1, 32)).abs()
    bound = torch.maximum(scales(rows) / 2 * (1 + 2**-20), torch.tensor(127 * 2**-25))
    assert bool((err <= bound).all()) and not back[0, 0].any()
    assert torch.equal(back, (rows.unflatten(-1, (-1, 34))[..., 2:].float() * scales(rows)).flatten(-2))  # exact
    odd = torch.ones(3, 64)
    odd[0, 5], odd[1, 40], odd[2, :32] = float("nan"), float("inf"), 127 * 65520.0
    back = dequantize(quantize(odd))
    assert back[0, :32].isnan().all() and not back[1, 32:].isfinite().any() and not back[2, :32].isfinite().any()
    assert (back[0, 32:] - 1).abs().max() < 1 / 254 and (back[1, :32] - 1).abs().max() < 1 / 254  # their own blocks


@pytest.mark.skipif(not shutil.which("cc"), reason="no C compiler here")
def test_the_kernels_store_and_read_the_blocks_pytorch_does(tmp_path):
    """decode_step.c's q8_0 encoding and its reads (tests/native/builds_check.c, generic build) against kv_q8_0's, bit
    for bit: blocks of every magnitude, subnormal scales, a zero block, ties, a largest quotient past 127; every other
    build gives the generic one's bits (test_kernel_builds)."""
    from test_kernel_builds import check_output

    out = check_output("generic", tmp_path)
    wide = torch.tensor([v for _, tag, v in out if tag == "q8_0-in"], dtype=torch.float32)
    got = torch.tensor([v for _, tag, v in out if tag == "q8_0-out"], dtype=torch.float32)
    assert len(wide) == 64 * 32
    assert torch.equal(got.view(torch.int32), dequantize(quantize(wide)).view(torch.int32))


def test_a_pool_of_the_same_bytes_holds_1_9_times_float16s_tokens(smollm):
    """A q8_0 block of the pool counts its true bytes (34 per 32 numbers), so the same kv_cache_bytes holds 64 / 34
    times float16's blocks."""
    c = smollm.config
    assert BlockPool.block_bytes(c, 16, Q8_0) * 64 == BlockPool.block_bytes(c, 16, torch.float16) * 34
    engines = {kv: Engine(dataclasses.replace(smollm, kv_cache_dtype=kv), EngineConfig(kv_cache_bytes=16 * 2**20))
               for kv in ("float16", "q8_0")}
    pool, half = engines["q8_0"].pool, engines["float16"].pool
    assert pool.k.dtype == Q8_0 and pool.k.shape[-1] == c.head_dim // 32 * 34
    assert pool.num_blocks >= 1.8 * half.num_blocks
    assert pool.nbytes() == pool.num_blocks * BlockPool.block_bytes(c, 16, Q8_0) <= 16 * 2**20


@torch.inference_mode()
def decoded(fp: LoadedModel, ids: list[int], kv: torch.dtype) -> torch.Tensor:
    """Logits at every position of `ids`, each token a decode step of the engine's runner (the native step) over a
    pool of one of `kv` pairs."""
    pool = BlockPool(fp.config, -(-len(ids) // 16), 16, kv)
    table = [pool.allocate() for _ in range(pool.num_blocks)]
    runner = Runner(fp.model, pool)
    assert runner.capabilities is NATIVE or not kernels.available()
    return torch.stack([as_tensor(decode(runner, [t], [i], [table]).logits[0]) for i, t in enumerate(ids)])


# Measured over these 256 tokens of bench/text.txt: 98.4% top-1 agreement, logits within 0.43, log-probabilities
# within 0.40, perplexity 32.06 against 31.999 (bench/kv_accuracy.py measures the whole text).
def test_decoding_over_q8_0_pairs_keeps_float32_pairs_top_1(stored):
    ids = stored.encode(TEXT)[:256]
    want, got = decoded(stored, ids, torch.float32), decoded(stored, ids, Q8_0)
    assert (got.argmax(-1) == want.argmax(-1)).float().mean().item() >= 0.97
    assert (got - want).abs().max().item() < 0.6
    target = torch.tensor(ids[1:])
    ppl = [math.exp(torch.nn.functional.cross_entropy(x[:-1], target).item()) for x in (want, got)]
    assert abs(ppl[1] - ppl[0]) < 0.15


def test_greedy_generation_over_q8_0_pairs(stored):
    """The engine's greedy tokens over q8_0 pairs are float32 pairs' up to a near-tie of float32's: its top two
    within twice the log-probability bound above."""
    q8 = dataclasses.replace(stored, kv_cache_dtype="q8_0")
    wide = dataclasses.replace(stored, kv_cache_dtype="float32")
    params = SamplingParams(temperature=0, max_tokens=24, ignore_eos=True, logprobs=2)
    for prompt in ["The three primary colors are", "def add(a, b):\n", "Water boils at"]:
        ids = stored.encode(prompt)
        assert same_but_near_a_tie(generate(q8, ids, params).token_ids, generate(wide, ids, params), 0.8), prompt


def same_but_near_a_tie(got: list[int], alone, gap: float) -> bool:
    """`got` is `alone`'s tokens (a result with 2 logprobs), or leaves them where alone's top two were within `gap`."""
    for i, (a, b) in enumerate(zip(got, alone.token_ids, strict=True)):
        if a != b:
            top = alone.logprobs[i].top
            return abs(top[0][1] - top[1][1]) < gap
    return True


def test_prefix_caching_preemption_and_checked_mode_over_q8_0_pairs(smollm):
    """A repeated prompt's full blocks are found again, and checked mode (the PyTorch blocks decode, every write
    checked): the tokens the request gets alone. A pool too small for its requests preempts and recomputes: each
    request gets all its tokens, those it gets alone but at a near-tie. (A recomputed pair comes from the prefill path,
    the PyTorch blocks over many tokens at once, its float32 numbers the decode step's but in the last bits; a number
    on a step's edge then lands a step away, moving later log-probabilities by up to 0.03 here: two requests of four
    left alone's tokens where its top two were 0.021 and 0.033 apart.)"""
    q8 = dataclasses.replace(smollm, kv_cache_dtype="q8_0")
    system = "You are a careful assistant. Answer in one short sentence, in plain English, without lists. "
    greedy = SamplingParams(temperature=0, max_tokens=10)
    engine = Engine(q8, EngineConfig(kv_cache_bytes=16 * 2**20, checked=True))
    prompt = smollm.encode(system + "What colour is the sky?")
    alone = generate(q8, prompt, greedy).token_ids
    for hit in (False, True):
        out = run(engine, [prompt], [greedy])[0]
        assert [o.token_id for o in out if o.token_id is not None] == alone
        assert (out[-1].cached_tokens > 0) == hit
    pool_bytes = 10 * BlockPool.block_bytes(smollm.config, 16, Q8_0)
    engine = Engine(q8, EngineConfig(kv_cache_bytes=pool_bytes, block_size=16, checked=True))
    prompts = [smollm.encode(system + q) for q in ("Why is grass green?", "Why is snow white?", "Why do cats purr?",
                                                   "Why is the sea salty?")]
    long = SamplingParams(temperature=0, max_tokens=40, ignore_eos=True, logprobs=2)
    outs = run(engine, prompts, [long] * 4)
    assert engine.scheduler.preemptions > 0 and engine.pool.used == 0
    for p, out in zip(prompts, outs, strict=True):
        assert same_but_near_a_tie([o.token_id for o in out if o.token_id is not None], generate(q8, p, long), 0.1)
    smollm.model.checked = True
    try:
        assert Runner(smollm.model, engine.pool).capabilities is BLOCKS
        assert generate(q8, prompt, greedy).token_ids == alone
    finally:
        smollm.model.checked = False


def small(head_dim: int) -> Transformer:
    config = ModelConfig("tiny", vocab_size=300, context_length=48, d_model=96, n_layers=2, n_heads=96 // head_dim,
                         n_kv_heads=1, ffn_hidden=160, norm="rmsnorm", positions="rope", ffn="swiglu", bias=False)
    torch.manual_seed(0)
    return Transformer(config).eval()


def test_a_head_dim_of_no_whole_blocks_is_refused_by_name():
    """q8_0 blocks hold 32 numbers: a model whose head_dim is 16 gets a q8_0 pool from neither the pool, the engine
    nor the kernel (which refuses the batch, touching nothing)."""
    model = small(16)
    said = "q8_0 KV pairs are blocks of 32 numbers, and this model's head_dim is 16"
    with pytest.raises(ForwardpassError, match=said):
        BlockPool(model.config, 1, 16, Q8_0)
    with pytest.raises(ForwardpassError, match=said):
        Engine(LoadedModel(model, None, "tiny", {}, "q8_0"), EngineConfig(kv_cache_bytes=2**20))
    step = native_step(model)
    if step is None:
        return
    pool = BlockPool(model.config, 1, 16)  # float32 bytes, called a q8_0 pool below
    spec = Model.from_buffer_copy(step.spec)
    spec.capacity, spec.threads = 16, 1
    work = torch.empty(kernels.library().decode_workspace(ctypes.byref(spec)))
    spec.work = work.data_ptr()
    model.rope.cover(16)
    token, zero = (ctypes.c_int * 1)(3), (ctypes.c_int * 1)(0)  # token 3 at position 0 into slot 0 of block 0
    logits, chosen = torch.zeros(1, 300), (ctypes.c_int * 1)(-7)
    at = ctypes.addressof
    batch = Batch(rows=1, tokens=at(token), positions=at(zero), lengths=at(zero), k=pool.k.data_ptr(),
                  v=pool.v.data_ptr(), slots=16, block_size=16, max_blocks=1, tables=at(zero), kv=KV_Q8_0)
    assert kernels.library().decode_batch(ctypes.byref(spec), ctypes.byref(batch), 1, None, 0, logits.data_ptr(),
                                          chosen) == -1
    assert chosen[0] == -7 and not pool.k.any() and not logits.any()


@needs_kernels
def test_the_native_step_reads_q8_0_pairs_on_a_head_dim_of_whole_blocks():
    """head_dim 32 (one block a row) and 96 (three): the native step over a q8_0 pool gives the PyTorch blocks' logits
    over the same pool, the same bytes stored (float32 weights: the same float32 numbers quantized)."""
    from stepping import pool_of_one, prefill

    for head_dim in (32, 96):
        model = small(head_dim)
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(torch.randn_like(p) * 0.3)
        pools = []
        for native in (True, False):
            pool, table = pool_of_one(model, 12, Q8_0, 4)
            runner = Runner(model, pool, reference=not native)
            rows = []
            with torch.inference_mode():
                prefill(runner, [([1, 2, 3], table, 0)])
                for at, token in enumerate([4, 5, 299, 0, 7, 8, 9], 3):
                    rows.append(as_tensor(decode(runner, [token], [at], [table]).logits[0]))
            pools.append((torch.stack(rows), pool))
        (got, pool), (want, reference) = pools
        assert (got - want).abs().max().item() < 1e-4 * want.abs().max().item()
        assert torch.equal(pool.k, reference.k) and torch.equal(pool.v, reference.v)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")
def test_q8_0_pairs_on_cuda_through_the_blocks():
    """On a GPU the PyTorch blocks quantize and read q8_0 pairs as on the CPU: the same logits and the same bytes."""
    from stepping import stepped

    model = small(32)
    got = stepped(model.to("cuda"), [1, 2, 3], [4, 5, 6], native=False, kv=Q8_0).cpu()
    want = stepped(model.to("cpu"), [1, 2, 3], [4, 5, 6], native=False, kv=Q8_0)
    assert (got - want).abs().max().item() < 1e-4


def test_auto_is_float16_for_quantized_weights_and_float32_in_fp32(smollm, stored):
    """The default KV pool: float16 pairs where the linear layers hold quantized blocks (stored, int8, q4), float32
    for the fp32 reference mode and for 16-bit float weights computed in float32, the model's own dtype otherwise;
    named dtypes as named."""
    assert stored.kv_dtype() == torch.float16 and smollm.kv_dtype() == torch.float32
    for storage, kv in (("int8", torch.float16), ("q4", torch.float16), ("fp16", torch.float32)):
        assert forwardpass.load(storage=storage).kv_dtype() == kv
    assert forwardpass.load(dtype="bfloat16").kv_dtype() == torch.bfloat16
    for name, kv in (("float32", torch.float32), ("float16", torch.float16), ("q8_0", Q8_0)):
        assert dataclasses.replace(stored, kv_cache_dtype=name).kv_dtype() == kv
    engine = Engine(stored, EngineConfig(kv_cache_bytes=2**20))
    assert engine.pool.k.dtype == torch.float16
    assert engine.runner.capabilities is NATIVE or not kernels.available()


def test_every_command_takes_q8_0():
    with in_process() as cli:
        r = cli("generate", "The capital of France is", "--max-tokens", "4", "--kv-cache-dtype", "q8_0", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["text"].startswith(" Paris")
    from forwardpass.cli import build_parser

    taking = set()  # the commands whose --kv-cache-dtype offers q8_0
    for name, command in build_parser()._subparsers._group_actions[0].choices.items():
        options = {o: a for a in command._actions for o in a.option_strings}
        if "q8_0" in getattr(options.get("--kv-cache-dtype"), "choices", ()):
            taking.add(name)
    assert taking >= {"generate", "chat", "inspect", "serve", "explore", "batch"}
