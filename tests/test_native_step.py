"""The native step (engine/native_step.py) against the PyTorch blocks it stands in for, over the engine's paged pool (a
single sequence is a pool of one): the same logits and the same K and V in every storage mode, on odd widths, with
biases, any grouped-query grouping and every family it runs, over float32, float16 and q8_0 pools; the greedy token
torch's
argmax picks; the same bits for a row alone or batched, for a greedy burst or its steps one by one, and on any thread
team; one workspace per thread, reused; refusals (a slot outside the pool, a token outside the vocabulary, a burst
that does not fit) that touch nothing, in Python and in the kernel itself; and the step unbound (the blocks run) by
checked mode, the W-residual counterfactual, a replaced weight, a pool it cannot read, or no kernels at all."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import threading

import pytest
import torch
from bits import same_bits
from stepping import as_tensor, decode, pool_of_one, prefill, stepped

import forwardpass
from forwardpass import Transformer, kernels
from forwardpass.config import ModelConfig
from forwardpass.engine import BlockPool
from forwardpass.engine.native_step import NativeStep
from forwardpass.engine.paged import PagedBatch
from forwardpass.engine.rows import BLOCKS, NATIVE, Chunk, Rows
from forwardpass.engine.runner import Runner, native_step
from forwardpass.errors import ForwardpassError, InvariantError, TokenIdError
from forwardpass.kernels.abi import Batch, Model
from forwardpass.kernels.team import TeamSize, set_threads
from forwardpass.kv_q8_0 import Q8_0, dequantize
from forwardpass.loop import generate
from forwardpass.model import RotaryEmbedding
from forwardpass.quant import HalfLinear, store_linears
from forwardpass.sampling import SamplingParams

pytestmark = pytest.mark.skipif(not kernels.available(), reason="no native kernels here")


@torch.inference_mode()
def steps(model, prompt: list[int], decode: list[int], native: bool = True, kv: torch.dtype = torch.float32,
          block_size: int = 16) -> tuple[torch.Tensor, BlockPool]:
    """`stepped` that also returns the pool, and takes an empty prompt (every token then a decode step): each step's
    logits (len(decode), vocab_size) and the pool of one they were decoded over."""
    pool, table = pool_of_one(model, len(prompt) + len(decode), kv, block_size)
    runner = Runner(model, pool, reference=not native)
    assert not native or runner.capabilities is NATIVE
    if prompt:  # both from the same prefill: this compares the decode steps
        prefill(Runner(model, pool, reference=True), [(prompt, table, 0)])
    rows = []
    for at, token in enumerate(decode, len(prompt)):
        rows.append(as_tensor(runner.step(Rows([Chunk([token], table, at)])).logits[0]))
    return torch.stack(rows), pool


def widened(model: Transformer) -> Transformer:
    """The same weights as float32 nn.Linear layers: the PyTorch blocks with the native step's arithmetic."""
    def plain(layer: HalfLinear) -> torch.nn.Linear:
        linear = torch.nn.Linear(layer.in_features, layer.out_features, bias=layer.bias is not None)
        linear.weight.data, linear.bias = layer.weight.detach().float(), layer.bias
        return linear
    for block in model.blocks:
        block.attn.qkv, block.attn.out = plain(block.attn.qkv), plain(block.attn.out)
        block.ffn.gate_up, block.ffn.down = plain(block.ffn.gate_up), plain(block.ffn.down)
    model.lm_head = plain(model.lm_head)
    return model


# The integer modes' kernels quantize activations to 15 bits per block of 32, in both paths. bf16's PyTorch
# path rounds activations to bf16 too; the native step keeps them float32, so it meets a widened copy exactly
# (every token a decode step then, the first one too: no prompt is prefilled). A float16 pool rounds each new pair
# as it is stored, in both paths; a pair whose float32 values differ in the last bit now and then rounds the other
# way (one binary16 step), and the two runs' later steps read those pairs: their logits drift further apart. A q8_0
# pool the same, a step being 1/127 of its block's largest number: float32 sums that differ in their last bits between
# the two paths (on some CPUs even in fp32) and `stored`'s 15-bit activations move some numbers across a step's edge
# (logits within 0.28 on an AMD Zen 4).
@pytest.mark.parametrize("storage,tol,kv", [("fp32", 1e-4, torch.float32), ("fp16", 1e-4, torch.float32),
                                            ("bf16", 1e-4, torch.float32), ("int8", 0.05, torch.float32),
                                            ("q4", 0.05, torch.float32), ("stored", 0.05, torch.float32),
                                            ("fp32", 0.03, torch.float16), ("stored", 0.05, torch.float16),
                                            ("fp32", 0.3, Q8_0), ("stored", 0.3, Q8_0)])
def test_the_step_equals_the_blocks_on_the_real_model(smollm, storage, tol, kv):
    fp = smollm if storage == "fp32" else forwardpass.load(storage=storage)
    ids = smollm.encode("The capital of France is Paris. The capital of Germany is")
    prompt = [] if storage == "bf16" else ids[:-4]
    decode = ids[len(prompt):]
    got, pool = steps(fp.model, prompt, decode, kv=kv)
    plain = widened(forwardpass.load(storage=storage).model) if storage == "bf16" else fp.model
    want, reference = steps(plain, prompt, decode, native=False, kv=kv)
    assert got.shape == want.shape == (len(decode), 49152)
    assert (got - want).abs().max().item() < tol
    assert torch.equal(got.argmax(-1), want.argmax(-1))
    for held, ref in ((pool.k, reference.k), (pool.v, reference.v)):  # rounding grows with the values
        assert held.dtype == ref.dtype == kv
        if kv == Q8_0:  # a step, and the drift earlier steps' different pairs leave (up to 0.13 here)
            assert q8_close(held, ref, tol / 2)
            continue
        held, ref = held.float(), ref.float()
        step = 2**-10 if kv == torch.float16 else 2e-6  # binary16's step at the largest value, or float32 rounding
        assert (held - ref).abs().max().item() < tol / 10 + step * ref.abs().max().item()


def test_greedy_generation_is_unchanged_in_fp32(smollm, monkeypatch):
    """The engine's greedy tokens through the native step are the PyTorch blocks' (different only at a near-tie)."""
    assert native_step(smollm.model).binds(BlockPool(smollm.config, 1))  # the cached loop's pool: the native step
    ids = smollm.encode("Three facts about the moon:")
    params = SamplingParams(temperature=0, max_tokens=16, logprobs=2)
    native = generate(smollm, ids, params)
    monkeypatch.setattr(NativeStep, "binds", lambda self, pool: False)  # every step through the blocks
    plain = generate(smollm, ids, params)
    assert len(native.token_ids) == len(plain.token_ids) == 16
    for i, (a, b) in enumerate(zip(native.token_ids, plain.token_ids, strict=True)):
        if a != b:  # a different token only at a near-tie of the reference
            top = plain.logprobs[i].top
            assert abs(top[0][1] - top[1][1]) < 1e-3
            break


def bound(model: Transformer, storage=None) -> Transformer:
    """The model with its linear layers stored as `storage` (None: as they are), its native step built for them."""
    if storage is not None:
        store_linears(model, storage)
    assert native_step(model) is not None
    return model


def randomized(config: ModelConfig, seed: int) -> Transformer:
    """A model of `config` with random weights large enough to make every path count."""
    torch.manual_seed(seed)
    model = Transformer(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn_like(p) * 0.3)
    return model


def tiny_llama(bias: bool, n_heads: int = 3, n_kv_heads: int = 1) -> Transformer:
    """Random Llama-family weights whose widths leave a lone block of 32 at the end of every row (96, 160)."""
    config = ModelConfig("tiny", vocab_size=300, context_length=48, d_model=96, n_layers=2, n_heads=n_heads,
                         n_kv_heads=n_kv_heads, ffn_hidden=160, norm="rmsnorm", positions="rope", ffn="swiglu",
                         bias=bias, tied_embeddings=not bias)
    return randomized(config, 3)


def close(got: torch.Tensor, want: torch.Tensor, rel: float = 1e-3) -> bool:
    return (got.float() - want.float()).abs().max().item() < rel * want.float().abs().max().item()


def q8_close(got: torch.Tensor, want: torch.Tensor, apart: float = 0.0) -> bool:
    """Two q8_0 pools' numbers within a step of `want`'s block (its scale) of each other, beyond `apart` (how far the
    two paths' float32 numbers may be): a number can round to the neighbouring step (1), its block's scale to the
    neighbouring binary16 (at most 127 × 2^-11 ≈ 0.06 steps more)."""
    scale = want.unflatten(-1, (-1, 34))[..., :2].contiguous().view(torch.float16).float()  # (..., blocks, 1)
    diff = (dequantize(got) - dequantize(want)).unflatten(-1, (-1, 32)).abs()
    return bool((diff <= 1.07 * scale + apart).all())


@pytest.mark.parametrize("storage", [None, torch.float16, torch.bfloat16, 8, 4])
@pytest.mark.parametrize("bias", [False, True])
def test_the_step_on_odd_widths_and_biases(storage, bias):
    model = bound(tiny_llama(bias), storage)
    decode = [1, 2, 3, 4, 5, 299, 0]  # every token a native step, over blocks of 4 slots
    got, pool = steps(model, [], decode, block_size=4)
    plain = widened(model) if storage == torch.bfloat16 else model
    want, reference = steps(plain, [], decode, native=False, block_size=4)
    assert close(got, want)
    assert close(pool.k, reference.k) and close(pool.v, reference.v)


@pytest.mark.parametrize("storage", [None, 4])
def test_the_step_finds_the_greedy_token_as_torch_argmax_does(storage):
    """The id the step chooses with its logits: the first of equal maxima, a NaN before anything, across the
    threads' shares of the vocabulary (rows 7 and 200 tie; then a NaN at 250 beats them)."""
    model = tiny_llama(True)
    with torch.no_grad():
        model.lm_head.weight[[7, 200]] = 0.0
        model.lm_head.bias = torch.nn.Parameter(torch.zeros(300), requires_grad=False)
        model.lm_head.bias[[7, 200]] = 1e4
    step = native_step(bound(model, storage))
    pool, table = pool_of_one(model, 1)
    for nan in (False, True):
        if nan:
            model.lm_head.bias.data[[250, 290]] = float("nan")
        with torch.inference_mode():
            logits, chosen = step.decode(pool, [5], [0], [table])
        assert chosen == [[int(as_tensor(logits[0]).argmax())]] == [[250 if nan else 7]]


@pytest.mark.parametrize("n_heads,n_kv_heads", [(6, 1), (6, 2), (6, 6)])
def test_native_attention_over_any_grouping(n_heads, n_kv_heads):
    """Query heads go through attention up to four of a group at a time: groups of 6 (a pass of 4, one of 2),
    3 and 1, at head_dim 16."""
    model = bound(tiny_llama(False, n_heads, n_kv_heads))
    decode = list(range(10, 40))
    got = stepped(model, [1, 2, 3], decode)
    want = stepped(model, [1, 2, 3], decode, native=False)
    assert close(got, want)
    assert torch.equal(got.argmax(-1), want.argmax(-1))


def test_rope_tables_fill_as_positions_are_reached():
    """The RoPE tables are filled a chunk of 256 positions at a time, on first use. The native step reads them
    directly, so it fills them first: a decode across a chunk's end (the prefill filled only the first chunk) gives
    the blocks' logits (unfilled rows would rotate q and k by garbage). A chunk's values do not depend on the order
    positions were asked for."""
    model = bound(randomized(tiny_llama(False).config.with_(context_length=600), 3))
    assert model.rope.filled == 0
    prompt, decode = [i % 300 for i in range(250)], list(range(20))  # positions 250 … 269
    got = stepped(model, prompt, decode)
    assert model.rope.filled == 512
    want = stepped(model, prompt, decode, native=False)
    assert close(got, want)
    assert torch.equal(got.argmax(-1), want.argmax(-1))
    cos, sin = model.rope.angles(torch.arange(512))
    assert torch.allclose(model.rope.cos[:512], cos, rtol=0, atol=1e-6)
    assert torch.allclose(model.rope.sin[:512], sin, rtol=0, atol=1e-6)
    other = RotaryEmbedding(model.config)
    other.cover(700)  # capped at the context
    assert other.filled == 600
    assert torch.equal(other.cos[:512], model.rope.cos[:512]) and torch.equal(other.sin[:512], model.rope.sin[:512])


def test_the_step_binds_only_where_it_applies(smollm):
    """binds(pool): a float32, float16 or q8_0 pool on the CPU, and a model neither in checked mode (which proves the
    blocks' writes) nor in the W-residual counterfactual; the runner takes the blocks wherever it does not bind."""
    model, step = smollm.model, native_step(smollm.model)
    pools = {dtype: BlockPool(model.config, 1, 16, dtype) for dtype in ("float32", "float16", "q8_0", "bfloat16")}
    assert step.binds(pools["float32"]) and step.binds(pools["float16"]) and step.binds(pools["q8_0"])
    assert not step.binds(pools["bfloat16"])
    assert all(step.binds(BlockPool(model.config, 1, 16, dtype)) for dtype in (torch.float32, torch.float16, Q8_0))
    with pytest.raises(ForwardpassError, match="unknown KV cache format 'float64'"):  # a pool no step can read
        BlockPool(model.config, 1, 16, torch.float64)
    pool = pools["float32"]
    runner = Runner(model, pool)
    assert runner.backend() is step and runner.capabilities is NATIVE
    model.checked = True
    try:
        assert not step.binds(pool) and runner.capabilities is BLOCKS
    finally:
        model.checked = False
    model.blocks[3].residual = "replace"
    try:
        assert not step.binds(pool) and runner.capabilities is BLOCKS
    finally:
        model.blocks[3].residual = "add"
    assert step.binds(pool) and runner.backend() is step


def test_where_the_step_does_not_bind_the_runner_decodes_through_the_blocks(smollm):
    """Runner.decode: the native step's logits and chosen ids where it binds; where it does not (checked mode here),
    the blocks' logits and no ids (the caller samples), and no greedy bursts."""
    model = smollm.model
    ids = smollm.encode("The capital of France is")
    pool, table = pool_of_one(model, len(ids))
    runner, at = Runner(model, pool), len(ids) - 1
    with torch.inference_mode():
        prefill(runner, [(ids[:-1], table, 0)])
        out = decode(runner, [ids[-1]], [at], [table])
        native, chosen = as_tensor(out.logits), out.chosen
        model.checked = True
        try:
            out = decode(runner, [ids[-1]], [at], [table])
            blocks, none = as_tensor(out.logits), out.chosen
            with pytest.raises(ValueError, match="greedy bursts run on the native step only"):
                decode(runner, [ids[-1]], [at], [table], n=2)
        finally:
            model.checked = False
    assert chosen == [[int(native[0].argmax())]] and none == [[]]
    assert (native - blocks).abs().max().item() < 1e-4 and torch.equal(native.argmax(-1), blocks.argmax(-1))


@pytest.mark.parametrize("replace", ["layer", "weight"])
def test_replacing_a_weight_unbinds_the_step(replace):
    """Any layer or weight the step points into, replaced, unbinds it: a runner made after that decodes through the
    blocks (a runner checks the tensors once, when it is made: weights are not replaced while a model is served)."""
    model = bound(tiny_llama(False), 4)
    pool = BlockPool(model.config, 1)
    step = Runner(model, pool).backend()
    assert step is native_step(model) and step.binds(pool)
    if replace == "layer":  # a middle layer's, not only the first's or last's
        model.blocks[0].attn.out = torch.nn.Linear(96, 96)
    else:
        model.blocks[-1].ffn_norm.weight = torch.nn.Parameter(model.blocks[-1].ffn_norm.weight.detach().clone())
    assert not step.binds(pool) and Runner(model, pool).capabilities is BLOCKS


def test_no_kernels_means_the_pytorch_path():
    code = ("import forwardpass; from forwardpass.engine.runner import native_step;"
            "fp = forwardpass.load(storage='int8'); print(native_step(fp.model) is None, fp.model.lm_head.fast)")
    env = os.environ | {"FORWARDPASS_KERNELS": "off"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == ["True", "False"]


def test_refusals_touch_nothing(smollm):
    """A row whose table lacks the slots its steps write, a token outside the vocabulary, a block outside the pool:
    refused by name, the pool's bytes as they were."""
    step = native_step(smollm.model)
    pool = BlockPool(smollm.config, num_blocks=4, block_size=4)
    with torch.inference_mode():
        prefill(Runner(smollm.model, pool), [([1, 2, 3, 4], [0], 0)])  # block 0 full
    held = (pool.k.clone(), pool.v.clone())
    with pytest.raises(InvariantError, match="row 0 has 1 blocks, too few for its slot 4"):
        step.decode(pool, [5], [4], [[0]])
    with pytest.raises(InvariantError, match="row 1 has 1 blocks, too few for its slot 7"):
        step.decode(pool, [5, 5], [0, 4], [[1], [2]], n=4)  # a burst whose last step falls past row 1's table
    for bad in (49152, -1):
        with pytest.raises(TokenIdError, match=f"token id {bad} is outside the vocabulary"):
            step.decode(pool, [3, bad], [0, 0], [[1], [2]])
    for table in ([9], [-1]):  # a block past the pool, a block that is none
        with pytest.raises(InvariantError, match="native step refused"):
            step.decode(pool, [3], [0], [table])
    assert same_bits(pool.k, held[0]) and same_bits(pool.v, held[1])


def test_the_kernel_refuses_what_falls_outside_the_pool(smollm):
    """decode_batch, called directly: every row's token, position and slots are checked against the model's tables,
    the workspace and the pool before the first step; a call outside any returns -1 and touches nothing. A call
    inside all of them, to the last slot, runs."""
    step, context = native_step(smollm.model), smollm.config.context_length
    smollm.model.rope.cover(8)
    spec = Model.from_buffer_copy(step.spec)
    spec.capacity, spec.rows = 8, 1
    pool = BlockPool(smollm.config, num_blocks=2, block_size=4)
    held = (pool.k.clone(), pool.v.clone())
    logits, chosen = torch.zeros(2, 49152), (ctypes.c_int * 16)(*[-7] * 16)

    def run(token=3, position=0, length=0, table=(0, 1), n=1, rows=1, n_stop=0, block_size=4, slots=8,
            tables=True) -> int:
        ints = ctypes.c_int * max(rows, 1)
        tokens, positions, lengths = ints(*[token] * rows), ints(*[position] * rows), ints(*[length] * rows)
        flat = (ctypes.c_int * (len(table) * max(rows, 1)))(*list(table) * max(rows, 1))
        batch = Batch(rows=rows, tokens=ctypes.addressof(tokens), positions=ctypes.addressof(positions),
                      lengths=ctypes.addressof(lengths), k=pool.k.data_ptr(), v=pool.v.data_ptr(), slots=slots,
                      block_size=block_size, max_blocks=len(table), tables=ctypes.addressof(flat) if tables else None)
        return kernels.library().decode_batch(ctypes.byref(spec), ctypes.byref(batch), n, None, n_stop,
                                              logits.data_ptr(), chosen)

    assert run() == -1  # no workspace yet
    spec.threads = 2
    work = torch.empty(kernels.library().decode_workspace(ctypes.byref(spec)))
    spec.work = work.data_ptr()
    for bad in ({"token": 49152}, {"token": -1}, {"position": context}, {"position": context - 4, "n": 5},
                {"position": -1}, {"length": -1}, {"length": 8}, {"length": 6, "n": 3},
                {"table": (-1, 1)}, {"length": 4, "table": (0, 2)}, {"n": 0}, {"n_stop": -1}, {"rows": 0},
                {"rows": 2}, {"block_size": 0}, {"slots": 3}, {"tables": False}):
        assert run(**bad) == -1, bad
    spec.capacity = 4
    assert run(length=4) == -1  # inside the table, past the workspace's slots
    spec.capacity = 8
    assert not logits.any() and list(chosen) == [-7] * 16
    assert same_bits(pool.k, held[0]) and same_bits(pool.v, held[1])
    assert run() == 1 and logits[0].any() and not logits[1].any()
    assert chosen[0] == int(logits[0].argmax()) and chosen[1] == -7
    assert run(n=8) == 8 and chosen[7] != -7 and chosen[8] == -7  # slots 0 … 7: the pool's last


def test_the_step_reuses_one_workspace_per_thread():
    """A step allocates nothing: a thread's workspace (and the logits it returns) is made on its first step and kept,
    made again only for more slots; two threads decoding at once each use their own and get the logits each gets
    alone."""
    model = bound(tiny_llama(False))
    step = native_step(model)
    decode = [7, 8, 9, 10]
    alone = stepped(model, list(range(1, 11)), decode)  # the last step reads 14 slots
    work = step._work
    first, logits = work.memory.ctypes.data, work.logits.ctypes.data
    stepped(model, [1, 2], decode)  # fewer slots: the same memory
    assert work.memory.ctypes.data == first and work.logits.ctypes.data == logits and work.room == 14
    pool, table = pool_of_one(model, 2)
    with torch.inference_mode():
        a, _ = step.decode(pool, [3], [0], [table])
        b, _ = step.decode(pool, [4], [1], [table])
    assert a.ctypes.data == b.ctypes.data == logits  # valid until the next call on this thread
    stepped(model, list(range(1, 29)), decode)  # more: a workspace to fit them
    assert work.room == 32
    results, memory = {}, {}
    both = threading.Barrier(2)

    def decode_in_thread(name: str) -> None:
        results[name] = stepped(model, list(range(1, 11)), decode)
        memory[name] = step._work.memory.ctypes.data
        both.wait()  # both workspaces alive at once

    threads = [threading.Thread(target=decode_in_thread, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert torch.equal(results["a"], alone) and torch.equal(results["b"], alone)
    assert len({memory["a"], memory["b"], work.memory.ctypes.data}) == 3


def test_the_step_on_other_thread_counts():
    """The most threads a step runs (`--threads`): one, and more than a short context has positions (empty shares);
    the workspace follows the count."""
    model = bound(tiny_llama(False))
    decode = list(range(3, 20))
    want = stepped(model, [1, 2], decode, native=False)
    try:
        for threads in (1, 5):
            set_threads(threads)
            got = stepped(model, [1, 2], decode)
            assert native_step(model)._work.spec.threads == threads
            assert close(got, want)
    finally:
        set_threads(None)


def test_a_step_gives_the_same_bits_on_any_team(monkeypatch):
    """However many of its threads a step runs (fewer while the CPU is shared, kernels/team.py), its logits are the
    same bits: attention splits the positions into the same parts for any team, and each row of a product is one
    thread's. The team size changes the speed, never a token."""
    model = bound(tiny_llama(False))
    work = native_step(model)._work
    monkeypatch.setattr(TeamSize, "observe", lambda self, cpu, offered: None)  # the team stays as set
    decode = list(range(3, 40))
    try:
        set_threads(4)
        results = []
        for team in (4, 1, 2, 3):
            stepped(model, [1], [2])  # makes this thread's workspace and team
            work.team.threads = team
            results.append(stepped(model, [1, 2], decode))
            assert work.spec.team == team
        assert all(torch.equal(r, results[0]) for r in results[1:])
    finally:
        set_threads(None)


def test_the_team_drops_a_thread_without_its_cores_and_tries_one_back(monkeypatch):
    """TeamSize on made-up usage: SHORT stretches in a row run at 60% of the time offered drop a thread (one alone, a
    moment's hiccup, does not); PROBE seconds later one is tried again, kept if its stretch runs at HIGH, given back if
    not, the next trial then twice as far off."""
    from forwardpass.kernels import team as t

    now = [100.0]
    monkeypatch.setattr(t.time, "monotonic", lambda: now[0])
    size = TeamSize(2)
    cpu = offered = 0.0

    def stretch(share: float) -> None:
        nonlocal cpu, offered
        offered += 1.01 * t.STRETCH * size.threads
        cpu += share * 1.01 * t.STRETCH * size.threads
        size.observe(cpu, offered)

    stretch(0.98)
    assert size.threads == 2
    for _ in range(t.SHORT - 1):
        stretch(0.6)
    stretch(0.95)
    assert size.threads == 2  # short stretches, but not SHORT of them in a row
    for _ in range(t.SHORT - 1):
        stretch(0.6)
        assert size.threads == 2
    stretch(0.6)
    assert size.threads == 1
    stretch(1.0)
    assert size.threads == 1  # no trial before PROBE seconds
    now[0] += t.PROBE
    stretch(1.0)
    assert size.threads == 2  # on trial
    stretch(0.8)
    assert size.threads == 1  # the trial ran short of its cores: given back
    now[0] += t.PROBE
    stretch(1.0)
    assert size.threads == 1  # a failed trial doubles the wait
    now[0] += t.PROBE
    stretch(1.0)
    stretch(0.95)
    assert size.threads == 2  # kept
    stretch(0.99)
    assert size.threads == 2
    for _ in range(6):  # a machine that stays busy: trials ever further apart, up to LONGEST
        for _ in range(t.SHORT):
            stretch(0.5)
        now[0] += t.LONGEST
        stretch(1.0)
        assert size.threads == 2
    stretch(0.5)
    now[0] += t.LONGEST - 1
    stretch(1.0)
    assert size.threads == 1


def prefilled(model, ids: list[int], slots: int, block_size: int = 16,
              kv: torch.dtype = torch.float32) -> tuple[BlockPool, list[int]]:
    """A pool of one with room for `slots` pairs, `ids` prefilled into it through the PyTorch blocks."""
    pool, table = pool_of_one(model, slots, kv, block_size)
    with torch.inference_mode():
        prefill(Runner(model, pool), [(ids, table, 0)])
    return pool, table


def one_by_one(step: NativeStep, pool: BlockPool, table: list[int], token: int, length: int, n: int,
               stop: tuple[int, ...] = ()) -> tuple[torch.Tensor, list[int]]:
    """Greedy decoding a native call per step, as a burst does it in one: the last logits and the chosen ids."""
    chosen = []
    for i in range(n):
        logits, ids = step.decode(pool, [token], [length + i], [table])
        token = ids[0][0]
        chosen.append(token)
        if token in stop:
            break
    return as_tensor(logits), chosen


def slots(t: torch.Tensor, n: int) -> torch.Tensor:
    """The first n slots of a pool of one (its table 0, 1, …): (n_layers, n_kv_heads, n, head_dim)."""
    layers, blocks, heads, size, dim = t.shape
    return t.permute(0, 2, 1, 3, 4).reshape(layers, heads, blocks * size, dim)[:, :, :n]


@pytest.mark.parametrize("storage,kv", [(None, torch.float32), (4, torch.float32), (4, Q8_0)])
def test_greedy_bursts_are_single_steps_back_to_back(storage, kv):
    """n greedy steps in one native call: the same ids, the same last logits and the same pool, bit for bit, as
    n calls of one step; a stop id ends the burst after it is chosen, without feeding it, and decoding goes on from
    it as if the burst had never stopped."""
    model = bound(tiny_llama(False), storage)
    step = native_step(model)
    want_pool, table = prefilled(model, [1, 2], 32, kv=kv)
    want_logits, want = one_by_one(step, want_pool, table, 5, 2, 12)
    got_pool, table = prefilled(model, [1, 2], 32, kv=kv)
    with torch.inference_mode():
        got_logits, got = step.decode(got_pool, [5], [2], [table], 12)
    assert got == [want] and len(set(want)) > 3
    assert torch.equal(as_tensor(got_logits), want_logits)
    assert same_bits(got_pool.k, want_pool.k) and same_bits(got_pool.v, want_pool.v)
    stop = want[6]
    first = want.index(stop) + 1
    pool, table = prefilled(model, [1, 2], 32, kv=kv)
    with torch.inference_mode():
        _, chosen = step.decode(pool, [5], [2], [table], 12, (299, stop))
    assert chosen == [want[:first]]
    written = 2 + first  # the prompt's pairs and each fed token's; the stop id's slot still empty
    assert same_bits(slots(pool.k, written), slots(want_pool.k, written)) and not slots(pool.k, written + 1)[
        :, :, written].any()
    with torch.inference_mode():
        logits, again = step.decode(pool, [stop], [written], [table])
    assert again == [[want[first]]]
    assert same_bits(slots(pool.k, written + 1), slots(want_pool.k, written + 1))
    assert same_bits(slots(pool.v, written + 1), slots(want_pool.v, written + 1))


def test_a_burst_that_would_not_fit_is_refused_before_writing_anything():
    """More steps than the row's table has slots, or than the model has positions: refused, the pool untouched."""
    model = bound(tiny_llama(False))  # context 48
    step = native_step(model)
    pool, table = prefilled(model, [1, 2, 3], 8, block_size=4)  # two blocks
    held = (pool.k.clone(), pool.v.clone())
    with pytest.raises(InvariantError, match="row 0 has 2 blocks, too few for its slot 8"):
        step.decode(pool, [4], [3], [table], 6)
    assert same_bits(pool.k, held[0]) and same_bits(pool.v, held[1])
    pool, table = prefilled(model, list(range(1, 41)), 64)  # more slots than the model has positions
    held = (pool.k.clone(), pool.v.clone())
    with pytest.raises(InvariantError, match="native step refused: n 10, lengths \\[40\\]"):
        step.decode(pool, [4], [40], [table], 10)  # positions 40 … 49
    assert same_bits(pool.k, held[0]) and same_bits(pool.v, held[1])
    with torch.inference_mode():
        _, chosen = step.decode(pool, [4], [40], [table], 8)  # the last eight positions are fine
    assert len(chosen[0]) == 8 and not same_bits(pool.k, held[0])


def paged_rows(model, pool: BlockPool) -> tuple[list[list[int]], list[int]]:
    """Three sequences prefilled into `pool` through the PyTorch blocks: rows 0 and 2 share their first block (the
    same block_size tokens at the same positions), row 1 is short; each has room for one more token. Returns their
    tables and lengths."""
    bs = pool.block_size
    lengths = [bs + 3, 2, bs + 9]

    def blocks(n: int) -> list[int]:
        return [pool.allocate() for _ in range(n)]

    first = blocks(-(-(lengths[0] + 1) // bs))
    tables = [first, blocks(1), [first[0]] + blocks(-(-(lengths[2] + 1) // bs) - 1)]
    pool.share(first[0])
    runner = Runner(model, pool)
    with torch.inference_mode():
        for table, ids, held in ((tables[0], list(range(1, bs + 4)), 0), (tables[1], [8, 9], 0),
                                 (tables[2], [5, 6, 7, 8, 9, 10, 11, 12, 13], bs)):
            prefill(runner, [(ids, table, held)])
    return tables, lengths


@pytest.mark.parametrize("storage, block_size, kv", [(None, 4, torch.float32), (torch.float16, 4, torch.float32),
                                                     (torch.bfloat16, 4, torch.float32), (8, 4, torch.float32),
                                                     (4, 4, torch.float32), (None, 5, torch.float32),
                                                     (4, 16, torch.float32), (None, 4, torch.float16),
                                                     (4, 5, torch.float16), (None, 4, Q8_0), (4, 5, Q8_0),
                                                     (8, 16, Q8_0)])
def test_batched_rows_equal_the_blocks(storage, block_size, kv):
    """Rows at different lengths over scattered and shared blocks give, row by row, the PyTorch blocks' logits over
    the same pool, and write the same new K and V into each row's own slot. Block sizes of every kind: a power of
    two (slots found by a shift) or not (by a division); pools of float32, float16 or q8_0 pairs (each new pair rounded
    as it is stored, the row's own one included). With integer weights, a new pair's q8_0 value a step apart (its
    float32 numbers straddling a step's edge) moves these large random weights' logits by up to 2e-3 of their
    largest; with float32 weights the two paths store the same bytes (4e-7)."""
    model = bound(tiny_llama(False), storage)
    pool = BlockPool(model.config, num_blocks=12, block_size=block_size, dtype=kv)
    tables, lengths = paged_rows(model, pool)
    tokens = [299, 0, 17]
    reference = BlockPool(model.config, num_blocks=12, block_size=block_size, dtype=kv)
    reference.k.copy_(pool.k)
    reference.v.copy_(pool.v)
    plain = model  # bf16's PyTorch path rounds activations to bf16: the kernel meets a widened copy instead
    if storage == torch.bfloat16:
        plain = widened(store_linears(tiny_llama(False), storage))
    with torch.inference_mode():
        got, chosen = native_step(model).decode(pool, tokens, lengths, tables)
        got = as_tensor(got)
        want, _ = plain(torch.tensor([[t] for t in tokens]), PagedBatch(reference, tables, lengths))
    want = want[:, 0]
    assert got.shape == want.shape == (3, 300)
    assert close(got, want, 5e-3 if kv == Q8_0 and storage is not None else 1e-3)
    assert chosen == [[int(row.argmax())] for row in got]
    assert torch.equal(got.argmax(-1), want.argmax(-1))
    assert pool.k.dtype == reference.k.dtype == kv
    if kv == Q8_0:
        assert q8_close(pool.k, reference.k) and q8_close(pool.v, reference.v)
        return
    tol = 1e-3 * max(reference.k.float().abs().max().item(), reference.v.float().abs().max().item())
    assert (pool.k.float() - reference.k.float()).abs().max().item() < tol
    assert (pool.v.float() - reference.v.float()).abs().max().item() < tol


def assert_rows_as_alone(model, tokens: list[int]) -> None:
    """One native step over paged_rows' three sequences gives each row the logits and id it gets alone, bit for bit."""
    step = native_step(model)
    pool = BlockPool(model.config, num_blocks=12, block_size=4)
    tables, lengths = paged_rows(model, pool)
    before = (pool.k.clone(), pool.v.clone())
    with torch.inference_mode():
        together, chosen = step.decode(pool, tokens, lengths, tables)
        together = as_tensor(together)
        for r in range(3):
            pool.k.copy_(before[0])
            pool.v.copy_(before[1])
            alone, mine = step.decode(pool, [tokens[r]], [lengths[r]], [tables[r]])
            assert torch.equal(as_tensor(alone[0]), together[r]) and mine == [chosen[r]]


def test_batched_rows_equal_each_row_alone_bit_for_bit(smollm):
    """Each row of a batch gets the logits that row gets decoded alone (same kernel, same arithmetic)."""
    assert_rows_as_alone(smollm.model, [40, 50, 60])


@pytest.mark.parametrize("storage", [None, 8, 4])
def test_batched_rows_equal_each_row_alone_on_odd_widths(storage):
    """Integer weights take rows two at a time (one tile load for both) and a lone row alone: every row's logits
    are those it gets alone, bit for bit, whichever way it was paired (widths with a lone block of 32 and groups
    that do not split evenly between threads)."""
    assert_rows_as_alone(bound(tiny_llama(False), storage), [299, 0, 17])


def test_batched_greedy_bursts_equal_single_batched_steps(smollm):
    """n steps of a batch in one call give the ids, the last logits and the pool of n single steps, each argmax fed
    back; a stop id ends the burst for every row after the step that chose it; a burst one row has no room for is
    refused for all."""
    model, step = smollm.model, native_step(smollm.model)
    pool = BlockPool(model.config, num_blocks=12, block_size=4)
    tables, lengths = paged_rows(model, pool)
    for table in tables:
        table.append(pool.allocate())  # room for 4 more slots each
    before = (pool.k.clone(), pool.v.clone())
    with torch.inference_mode():
        logits, chosen = step.decode(pool, [40, 50, 60], lengths, tables, 4)
        burst = (as_tensor(logits), pool.k.clone(), pool.v.clone())
        pool.k.copy_(before[0])
        pool.v.copy_(before[1])
        tokens, held, single = [40, 50, 60], list(lengths), [[], [], []]
        for _ in range(4):
            step_logits, ids = step.decode(pool, tokens, held, tables)
            tokens, held = [i[0] for i in ids], [h + 1 for h in held]
            for r in range(3):
                single[r].append(tokens[r])
        assert chosen == single and torch.equal(as_tensor(step_logits), burst[0])
        assert same_bits(pool.k, burst[1]) and same_bits(pool.v, burst[2])
        stop = single[1][1]  # row 1's second token: every row stops after two steps
        _, stopped = step.decode(pool, [40, 50, 60], lengths, tables, 4, (stop,))
        assert stopped == [ids[:2] for ids in single]
        held = (pool.k.clone(), pool.v.clone())
        with pytest.raises(InvariantError, match="row 0 has 3 blocks, too few for its slot 12"):
            step.decode(pool, [40, 50, 60], lengths, tables, 6)
    assert same_bits(pool.k, held[0]) and same_bits(pool.v, held[1])


# Families beyond Llama, each a few switches on the same step: their tiny random models decode through the native
# step, a pool of one and a batch of rows, with the PyTorch blocks' logits. Windows of 5 slots against 9–13 tokens
# over blocks of 4, so the window's edge moves inside every run and across blocks.
FAMILIES = {
    "qwen2": {"qkv_bias": True, "bias": False},
    "qwen3": {"qk_norm": True, "head_size": 64},
    "mistral": {"sliding_window": 5},
    "gemma3": {"ffn": "geglu", "qk_norm": True, "embed_scale": True, "sandwich_norm": True, "head_size": 64,
               "query_scale": 0.1, "sliding_window": 5, "layer_types": ("sliding", "full"), "local_rope_theta": 77.0},
}


def tiny_family(family: str) -> Transformer:
    options = {"bias": False, "ffn": "swiglu", **FAMILIES[family]}
    config = ModelConfig(family, vocab_size=300, context_length=48, d_model=96, n_layers=2, n_heads=3, n_kv_heads=1,
                         ffn_hidden=160, norm="rmsnorm", positions="rope", rope_theta=500.0, **options)
    return randomized(config, 5)


@pytest.mark.parametrize("storage", [None, 4])
@pytest.mark.parametrize("family", FAMILIES)
def test_the_step_on_other_families(family, storage):
    model = bound(tiny_family(family), storage)
    decode = [2, 3, 4, 5, 299, 0, 7, 8, 9]
    got = stepped(model, [1, 6], decode, block_size=4)
    want = stepped(model, [1, 6], decode, native=False, block_size=4)
    assert close(got, want)


@pytest.mark.parametrize("family", ["mistral", "gemma3"])
def test_batched_rows_on_other_families(family):
    """Rows at lengths 7, 2 and 13 (two of them past a window of 5): the PyTorch blocks' logits, and each row as it
    is alone."""
    model = bound(tiny_family(family))
    pool = BlockPool(model.config, num_blocks=12, block_size=4)
    tables, lengths = paged_rows(model, pool)
    reference = BlockPool(model.config, num_blocks=12, block_size=pool.block_size)
    reference.k.copy_(pool.k)
    reference.v.copy_(pool.v)
    tokens = [299, 0, 17]
    with torch.inference_mode():
        got, _ = native_step(model).decode(pool, tokens, lengths, tables)
        got = as_tensor(got)
        want, _ = model(torch.tensor([[t] for t in tokens]), PagedBatch(reference, tables, lengths))
    assert close(got, want[:, 0])
    assert_rows_as_alone(model, tokens)


# The multi-token step: rows that are consecutive positions of one sequence (Batch.chunk), each seeing the new pairs
# of the rows before it, beside decode rows of other sequences, and only some rows' logits made (Batch.emit).
A = [5, 17, 299, 0, 42, 8, 8, 8, 101, 7, 3]  # sequence A's tokens from position 0
B = [9, 260, 33, 4, 12]  # sequence B's


def alone(model, kv: torch.dtype, block_size: int) -> tuple[list[torch.Tensor], list[torch.Tensor], BlockPool]:
    """A's and B's tokens stepped one by one, each a call of its own: their logits, and the pool."""
    step = native_step(model)
    pool = BlockPool(model.config, num_blocks=12, block_size=block_size, dtype=kv)
    tables = [[pool.allocate() for _ in range(-(-len(s) // block_size))] for s in (A, B)]
    out = []
    with torch.inference_mode():
        for seq, table in zip((A, B), tables, strict=True):
            out.append([as_tensor(step.decode(pool, [t], [i], [table])[0][0]) for i, t in enumerate(seq)])
    return out[0], out[1], pool


def chunked(model, kv: torch.dtype, block_size: int, emit: bool = True) -> tuple[list, BlockPool]:
    """The same tokens in three calls: A's first 6 as a chunk beside B's first 3; B's 4th as a decode row beside A's
    next 4; then A's last and B's last. Each call's logits (emit: every row's; else the chunks' last rows')."""
    step = native_step(model)
    pool = BlockPool(model.config, num_blocks=12, block_size=block_size, dtype=kv)
    tables = [[pool.allocate() for _ in range(-(-len(s) // block_size))] for s in (A, B)]
    calls = [[(0, 0, 6), (1, 0, 3)], [(1, 3, 1), (0, 6, 4)], [(0, 10, 1), (1, 4, 1)]]  # (sequence, start, count)
    got = []
    with torch.inference_mode():
        for call in calls:
            rows = [(s, start + i, i, i == n - 1) for s, start, n in call for i in range(n)]
            tokens = [(A, B)[s][p] for s, p, _, _ in rows]
            logits, chosen = step.step(pool, tokens, [p for _, p, _, _ in rows], [tables[s] for s, *_ in rows],
                                       chunk=[i for _, _, i, _ in rows],
                                       emit=[1 if emit else int(last) for *_, last in rows])
            got.append((rows, as_tensor(logits), chosen))
    return got, pool


def assert_chunks_as_alone(model, kv: torch.dtype, block_size: int) -> None:
    want_a, want_b, want_pool = alone(model, kv, block_size)
    for emit in (True, False):
        got, pool = chunked(model, kv, block_size, emit)
        for rows, logits, chosen in got:
            kept = [(s, p) for s, p, _, last in rows if emit or last]
            assert logits.shape[0] == len(kept) == len(chosen)
            for (s, p), row, ids in zip(kept, logits, chosen, strict=True):
                want = (want_a, want_b)[s][p]
                assert torch.equal(row, want), (s, p)
                assert ids == [int(want.argmax())]
        assert same_bits(pool.k, want_pool.k) and same_bits(pool.v, want_pool.v)


@pytest.mark.parametrize("storage, block_size, kv", [(None, 4, torch.float32), (torch.float16, 4, torch.float16),
                                                     (torch.bfloat16, 5, torch.float32), (8, 4, Q8_0),
                                                     (4, 4, torch.float16), (4, 16, torch.float32), (4, 5, Q8_0)])
def test_chunks_equal_single_steps_bit_for_bit(storage, block_size, kv):
    """Chunks of consecutive positions, crossing block boundaries, beside chunks and decode rows of another sequence:
    every row's logits and argmax, and every pair written, are those of its token stepped alone, bit for bit, in every
    storage mode and pool format; with only the chunks' last rows emitted, those rows' logits, in row order."""
    assert_chunks_as_alone(bound(tiny_llama(False), storage), kv, block_size)


@pytest.mark.parametrize("family", FAMILIES)
def test_chunks_on_other_families(family):
    """QK-norm, sandwich norms, GeGLU and sliding windows of 5 slots whose edge moves inside a chunk: as alone."""
    assert_chunks_as_alone(bound(tiny_family(family), 4), torch.float16, 4)


def test_chunks_on_the_real_model(smollm):
    assert_chunks_as_alone(smollm.model, torch.float16, 4)


@pytest.mark.parametrize("storage", [4, None, torch.float16])
def test_prefill_through_the_step_splits_long_chunks_exactly(monkeypatch, storage):
    """Runner.prefill runs its chunks as native rows, PREFILL_ROWS a call: a long prompt split across calls gives the
    bits of one call, and logits and pairs within float32 rounding of the PyTorch blocks'. One call of 32 rows has its
    threads prepare each product's rows between them (SPLIT_ROWS), five rows each prepares all: the same bits, with
    quantized and float weights."""
    import forwardpass.engine.native_step as native

    model = bound(tiny_llama(False), storage)
    prompts = [list(range(1, 30)), [7, 8, 9]]
    results = []
    for rows in (64, 5):
        monkeypatch.setattr(native, "PREFILL_ROWS", rows)
        pool = BlockPool(model.config, num_blocks=16, block_size=4)
        tables = [[pool.allocate() for _ in range(-(-len(p) // 4))] for p in prompts]
        with torch.inference_mode():
            results.append((as_tensor(prefill(Runner(model, pool), [(p, t, 0)
                                                                    for p, t in zip(prompts, tables, strict=True)])),
                            pool))
    (one, pool), (split, split_pool) = results
    assert one.shape == (2, 300) and torch.equal(one, split)
    assert same_bits(pool.k, split_pool.k) and same_bits(pool.v, split_pool.v)
    reference = BlockPool(model.config, num_blocks=16, block_size=4)
    with torch.inference_mode():
        want = as_tensor(prefill(Runner(model, reference, reference=True),
                                 [(p, t, 0) for p, t in zip(prompts, tables, strict=True)]))
    assert close(one, want) and torch.equal(one.argmax(-1), want.argmax(-1))
    assert (pool.k - reference.k).abs().max() < 1e-4 * reference.k.abs().max()


@pytest.mark.parametrize("bad", ["length", "table", "first", "burst"])
def test_chunks_that_do_not_follow_are_refused_touching_nothing(bad):
    """A chunk row whose length is not one past the row before it, whose table differs, a first row claiming rows
    before it, or a chunk in a several-step burst: refused by the kernel before it writes a pair."""
    model = bound(tiny_llama(False))
    step = native_step(model)
    pool = BlockPool(model.config, num_blocks=8, block_size=4)
    tables = [[pool.allocate(), pool.allocate()], [pool.allocate(), pool.allocate()]]
    lengths, chunk, n = [0, 1, 2], [0, 1, 2], 1
    rows = [tables[0]] * 3
    if bad == "length":
        lengths = [0, 2, 3]
    elif bad == "table":
        rows = [tables[0], tables[1], tables[0]]
    elif bad == "first":
        chunk = [1, 2, 3]
    else:
        n = 2
    held = (pool.k.clone(), pool.v.clone())
    with torch.inference_mode(), pytest.raises(InvariantError, match="native step refused"):
        step.step(pool, [1, 2, 3], lengths, rows, chunk=chunk, n=n)
    assert same_bits(pool.k, held[0]) and same_bits(pool.v, held[1])
