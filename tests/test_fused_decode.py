"""The fused native decode step against the PyTorch blocks it replaces: same logits, same cache, same
bookkeeping, and the PyTorch path wherever it does not apply."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
from bits import same_bits

import forwardpass
from forwardpass import KVCache, Transformer, kernels
from forwardpass.bugs import NaiveRingCache, StuckPositionCache
from forwardpass.config import ModelConfig
from forwardpass.errors import ContextLengthError, InvariantError, TokenIdError
from forwardpass.fused_decode import FusedDecode
from forwardpass.kernels.team import TeamSize, set_threads
from forwardpass.loop import generate
from forwardpass.model import RotaryEmbedding
from forwardpass.quant import HalfLinear, store_linears
from forwardpass.sampling import SamplingParams

pytestmark = pytest.mark.skipif(not kernels.available(), reason="no native kernels here")


def steps(model, ids: list[int], decode: list[int], capacity: int = 64, policy: str = "error", fused: bool = True):
    """Prefill `ids`, then decode `decode` one token at a time: (logits of each step, the cache)."""
    saved = model.fused
    model.fused = saved if fused else None
    try:
        with torch.inference_mode():
            cache = model.new_cache(1, capacity, policy=policy)
            model(torch.tensor([ids]), cache)
            logits = torch.cat([model(torch.tensor([[t]]), cache)[0][0] for t in decode])
        return logits, cache
    finally:
        model.fused = saved


def widened(model: Transformer) -> Transformer:
    """The same weights as float32 nn.Linear layers: the PyTorch path with the fused step's arithmetic."""
    def plain(layer: HalfLinear) -> torch.nn.Linear:
        linear = torch.nn.Linear(layer.in_features, layer.out_features, bias=layer.bias is not None)
        linear.weight.data, linear.bias = layer.weight.detach().float(), layer.bias
        return linear
    for block in model.blocks:
        block.attn.qkv, block.attn.out = plain(block.attn.qkv), plain(block.attn.out)
        block.ffn.gate_up, block.ffn.down = plain(block.ffn.gate_up), plain(block.ffn.down)
    model.lm_head, model.fused = plain(model.lm_head), None
    return model


# The integer modes' kernels quantize activations to 15 bits per block of 32, in both paths. bf16's PyTorch
# path rounds activations to bf16 too; the fused step keeps them float32, so it meets a widened copy exactly
# (every token through the fused step then, the first one too: a one-token prompt takes it).
@pytest.mark.parametrize("storage,tol", [("fp32", 1e-4), ("fp16", 1e-4), ("bf16", 1e-4), ("int8", 0.05), ("q4", 0.05),
                                         ("stored", 0.05)])
def test_fused_step_equals_the_blocks_on_the_real_model(smollm, storage, tol):
    fp = smollm if storage == "fp32" else forwardpass.load(storage=storage)
    assert fp.model.fused is not None
    ids = smollm.encode("The capital of France is Paris. The capital of Germany is")
    prompt = 1 if storage == "bf16" else len(ids) - 4
    got, cache = steps(fp.model, ids[:prompt], ids[prompt:])
    plain = widened(forwardpass.load(storage=storage).model) if storage == "bf16" else fp.model
    want, reference = steps(plain, ids[:prompt], ids[prompt:], fused=False)
    assert got.shape == want.shape == (len(ids) - prompt, 49152)
    assert (got - want).abs().max().item() < tol
    assert torch.equal(got.argmax(-1), want.argmax(-1))
    assert cache.lengths == reference.lengths == [len(ids)]
    n = len(ids)
    for held, ref in ((cache.k, reference.k), (cache.v, reference.v)):  # float32 rounding grows with the values
        ref = ref[:, :, :, :n]
        assert (held[:, :, :, :n] - ref).abs().max().item() < tol / 10 + 2e-6 * ref.abs().max().item()


def test_greedy_generation_is_unchanged_in_fp32(smollm):
    ids = smollm.encode("Three facts about the moon:")
    params = SamplingParams(temperature=0, max_tokens=16, logprobs=2)
    fused = generate(smollm, ids, params)
    saved, smollm.model.fused = smollm.model.fused, None
    try:
        plain = generate(smollm, ids, params)
    finally:
        smollm.model.fused = saved
    for i, (a, b) in enumerate(zip(fused.token_ids, plain.token_ids, strict=True)):
        if a != b:  # a different token only at a near-tie of the reference
            top = plain.logprobs[i].top
            assert abs(top[0][1] - top[1][1]) < 1e-3
            break


def bound(model: Transformer, storage=None) -> Transformer:
    """The model with its linear layers stored as `storage` (None: as they are) and the fused step bound to it."""
    if storage is not None:
        store_linears(model, storage)
    model.fused = FusedDecode.build(model)
    assert model.fused is not None
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


@pytest.mark.parametrize("storage", [None, torch.float16, torch.bfloat16, 8, 4])
@pytest.mark.parametrize("bias", [False, True])
def test_fused_step_on_odd_widths_and_biases(storage, bias):
    model = bound(tiny_llama(bias), storage)
    got, cache = steps(model, [1], [2, 3, 4, 5, 299, 0], capacity=16)  # every token through the fused step
    plain = widened(model) if storage == torch.bfloat16 else model
    want, _ = steps(plain, [1], [2, 3, 4, 5, 299, 0], capacity=16, fused=False)
    tol = 1e-3 * want.abs().max().item()
    assert (got - want).abs().max().item() < tol
    assert cache.lengths == [7]


@pytest.mark.parametrize("storage", [None, 4])
def test_the_step_finds_the_greedy_token_as_torch_argmax_does(storage):
    """The argmax the step returns with its logits: the first of equal maxima, a NaN before anything, across the
    threads' shares of the vocabulary (rows 7 and 200 tie; then a NaN at 250 beats them)."""
    model = tiny_llama(True)
    with torch.no_grad():
        model.lm_head.weight[[7, 200]] = 0.0
        model.lm_head.bias = torch.nn.Parameter(torch.zeros(300), requires_grad=False)
        model.lm_head.bias[[7, 200]] = 1e4
    if storage is not None:
        store_linears(model, storage)
    model.fused = FusedDecode.build(model)
    for nan in (False, True):
        if nan:
            model.lm_head.bias.data[[250, 290]] = float("nan")
        with torch.inference_mode():
            cache = model.new_cache(1, 8)
            out = torch.empty(300)
            logits, greedy = model.fused.step(5, cache, out)
        assert logits.data_ptr() == out.data_ptr() and greedy == int(logits.argmax()) == (250 if nan else 7)
    with pytest.raises(InvariantError, match=r"must be \(300,\) contiguous float32"):
        model.fused.step(5, cache, torch.empty(299))


@pytest.mark.parametrize("n_heads,n_kv_heads", [(6, 1), (6, 2), (6, 6)])
def test_fused_attention_over_any_grouping(n_heads, n_kv_heads):
    """Query heads go through attention up to four of a group at a time: groups of 6 (a pass of 4, one of 2),
    3 and 1, at head_dim 16."""
    model = tiny_llama(False, n_heads, n_kv_heads)
    model.fused = FusedDecode.build(model)
    decode = list(range(10, 40))
    got, cache = steps(model, [1, 2, 3], decode, capacity=40)
    want, _ = steps(model, [1, 2, 3], decode, capacity=40, fused=False)
    assert (got - want).abs().max().item() < 1e-3 * want.abs().max().item()
    assert torch.equal(got.argmax(-1), want.argmax(-1))


def test_rope_tables_fill_as_positions_are_reached():
    """The RoPE tables are filled a chunk of 256 positions at a time, on first use. The fused step reads them
    directly, so it fills them first: a decode across a chunk's end gives the blocks' logits (unfilled rows would
    rotate q and k by garbage). A chunk's values do not depend on the order positions were asked for."""
    model = randomized(tiny_llama(False).config.with_(context_length=600), 3)
    model.fused = FusedDecode.build(model)
    assert model.rope.filled == 0
    prompt, decode = [i % 300 for i in range(250)], list(range(20))  # positions 250 … 269
    got, _ = steps(model, prompt, decode, capacity=600)
    assert model.rope.filled == 512
    want, _ = steps(model, prompt, decode, capacity=600, fused=False)
    assert (got - want).abs().max().item() < 1e-3 * want.abs().max().item()
    assert torch.equal(got.argmax(-1), want.argmax(-1))
    cos, sin = model.rope.angles(torch.arange(512))
    assert torch.allclose(model.rope.cos[:512], cos, rtol=0, atol=1e-6)
    assert torch.allclose(model.rope.sin[:512], sin, rtol=0, atol=1e-6)
    other = RotaryEmbedding(model.config)
    other.cover(700)  # capped at the context
    assert other.filled == 600
    assert torch.equal(other.cos[:512], model.rope.cos[:512]) and torch.equal(other.sin[:512], model.rope.sin[:512])


def test_sliding_cache_keeps_positions_past_its_capacity():
    """Slot and position part ways once the oldest pairs slide out; the fused step follows both."""
    model = tiny_llama(False)
    model.fused = FusedDecode.build(model)
    decode = list(range(10, 30))
    got, cache = steps(model, [1, 2, 3], decode, capacity=8, policy="sliding")
    want, reference = steps(model, [1, 2, 3], decode, capacity=8, policy="sliding", fused=False)
    assert (got - want).abs().max().item() < 1e-3 * want.abs().max().item()
    assert cache.start == reference.start == [15] and cache.lengths == [8]


def test_full_cache_raises_before_anything_is_written(smollm):
    model = smollm.model
    with torch.inference_mode():
        cache = model.new_cache(1, 4)
        model(torch.tensor([[1, 2, 3, 4]]), cache)
        held = cache.k.clone()
        with pytest.raises(ContextLengthError, match="room for 4"):
            model(torch.tensor([[5]]), cache)
    assert cache.lengths == [4] and same_bits(cache.k, held)


def test_the_blocks_run_where_the_fused_step_does_not_apply(smollm):
    model, fused = smollm.model, smollm.model.fused
    ids = torch.tensor([[1, 2]])
    with torch.inference_mode():
        cache = model.new_cache(1, 8)
        model(ids, cache)
        assert fused.applies(torch.tensor([[3]]), cache)
        assert not fused.applies(torch.tensor([[3, 4]]), cache)  # more than one token
        assert not fused.applies(torch.tensor([[3], [4]]), model.new_cache(2, 8))  # more than one sequence
        assert not fused.applies(torch.tensor([[3]]), KVCache(model.config, 1, 8, torch.float64))  # not float32
        model.checked = True
        try:
            assert not fused.applies(torch.tensor([[3]]), cache)  # checked mode proves the PyTorch path's writes
        finally:
            model.checked = False
        model.blocks[3].residual = "replace"
        try:
            assert not fused.applies(torch.tensor([[3]]), cache)  # the W-residual counterfactual
        finally:
            model.blocks[3].residual = "add"
        assert fused.applies(torch.tensor([[3]]), cache)


def test_replacing_a_weight_unbinds_the_fused_step():
    fp = forwardpass.load(storage="q4")
    cache = fp.model.new_cache(1, 8)
    assert fp.model.fused.applies(torch.tensor([[3]]), cache)
    fp.model.blocks[0].attn.qkv = torch.nn.Linear(576, 960, bias=False)
    assert not fp.model.fused.applies(torch.tensor([[3]]), cache)


def test_no_kernels_means_the_pytorch_path():
    code = ("import forwardpass; fp = forwardpass.load(storage='int8');"
            "print(fp.model.fused is None, fp.model.lm_head.fast)")
    env = os.environ | {"FORWARDPASS_KERNELS": "off"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == ["True", "False"]


def test_broken_caches_keep_their_own_bookkeeping(smollm):
    """The deliberate bugs of bugs.py subclass KVCache; the fused step leaves them to the blocks."""
    model = smollm.model
    for broken in (NaiveRingCache(model.config, 1, 4), StuckPositionCache(model.config, 1, 8)):
        assert not model.fused.applies(torch.tensor([[3]]), broken)


def test_the_kernel_refuses_slots_outside_the_cache(smollm):
    import ctypes

    from forwardpass.kernels.abi import Model
    spec = Model.from_buffer_copy(smollm.model.fused.spec)
    cache = smollm.model.new_cache(1, 4)
    spec.capacity, spec.k_cache, spec.v_cache = 4, cache.k.data_ptr(), cache.v.data_ptr()
    logits, greedy = torch.zeros(49152), ctypes.c_int(-7)
    run = kernels.library().decode_step
    assert run(ctypes.byref(spec), 3, 0, 0, logits.data_ptr(), ctypes.byref(greedy)) == -1  # no workspace
    spec.threads = 2
    work = torch.empty(kernels.library().decode_workspace(ctypes.byref(spec)))
    spec.work = work.data_ptr()
    for token, position, slot in ((3, 4, 4), (3, 0, -1), (49152, 0, 0), (-1, 0, 0), (3, 8192, 0)):
        assert run(ctypes.byref(spec), token, position, slot, logits.data_ptr(), ctypes.byref(greedy)) == -1
    tokens = (ctypes.c_int * 8)(*[-7] * 8)
    for position, slot, n, n_stop in ((0, 0, 0, 0), (0, 0, 5, 0), (8188, 0, 5, 0), (0, 1, 4, 0), (0, 0, 1, -1)):
        assert kernels.library().decode_greedy(ctypes.byref(spec), 3, position, slot, n, None, n_stop,
                                                logits.data_ptr(), tokens) == -1
    assert not logits.any() and greedy.value == -7 and list(tokens) == [-7] * 8
    assert run(ctypes.byref(spec), 3, 0, 0, logits.data_ptr(), ctypes.byref(greedy)) == 0 and logits.any()
    assert greedy.value == int(logits.argmax())


def test_a_token_outside_the_vocabulary_is_refused_before_the_cache_moves(smollm):
    cache = smollm.model.new_cache(1, 8)
    for bad in (49152, -1):
        with pytest.raises(TokenIdError, match=f"token id {bad} is outside the vocabulary"):
            smollm.model(torch.tensor([[bad]]), cache)
    assert cache.lengths == [0]


def test_the_step_reuses_one_workspace_per_thread():
    """A step allocates nothing: a thread's workspace is made on its first step and kept, made again only for a
    larger cache; two threads decoding at once each use their own and get the logits each gets alone."""
    import threading

    model = tiny_llama(False)
    model.fused = FusedDecode.build(model)
    decode = [7, 8, 9, 10]
    alone, _ = steps(model, [1, 2], decode, capacity=16)
    work = model.fused._work
    first = work.memory.data_ptr()
    steps(model, [1, 2], decode, capacity=8)  # a smaller cache: the same memory
    assert work.memory.data_ptr() == first and work.room == 16
    steps(model, [1, 2], decode, capacity=32)  # a larger one: a workspace to fit it
    assert work.room == 32
    results = {}

    def decode_in_thread(name: str) -> None:
        results[name] = steps(model, [1, 2], decode, capacity=16)[0]

    threads = [threading.Thread(target=decode_in_thread, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert torch.equal(results["a"], alone) and torch.equal(results["b"], alone)


def test_the_step_on_other_thread_counts():
    """The most threads a step runs (`--threads`): one, and more than a short context has positions (empty shares);
    the workspace follows the count."""
    model = tiny_llama(False)
    model.fused = FusedDecode.build(model)
    decode = list(range(3, 20))
    want, _ = steps(model, [1, 2], decode, capacity=32, fused=False)
    try:
        for threads in (1, 5):
            set_threads(threads)
            got, _ = steps(model, [1, 2], decode, capacity=32)
            assert model.fused._work.spec.threads == threads
            assert (got - want).abs().max().item() < 1e-3 * want.abs().max().item()
    finally:
        set_threads(None)


def test_a_step_gives_the_same_bits_on_any_team(monkeypatch):
    """However many of its threads a step runs (fewer while the CPU is shared, kernels/team.py), its logits are the
    same bits: attention splits the positions into the same parts for any team, and each row of a product is one
    thread's. The team size changes the speed, never a token."""
    model = tiny_llama(False)
    model.fused = FusedDecode.build(model)
    monkeypatch.setattr(TeamSize, "observe", lambda self, cpu, offered: None)  # the team stays as set
    decode = list(range(3, 40))
    try:
        set_threads(4)
        results = []
        for team in (4, 1, 2, 3):
            steps(model, [1], [2], capacity=48)  # makes this thread's workspace and team
            model.fused._work.team.threads = team
            results.append(steps(model, [1, 2], decode, capacity=48)[0])
            assert model.fused._work.spec.team == team
        assert all(torch.equal(r, results[0]) for r in results[1:])
    finally:
        set_threads(None)


def test_the_team_drops_a_thread_without_its_cores_and_tries_one_back(monkeypatch):
    """TeamSize on made-up usage: a stretch run at 60% of the time offered drops a thread; PROBE seconds later one
    is tried again, kept if its stretch runs at HIGH, given back if not, the next trial then twice as far off."""
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
        stretch(0.5)
        now[0] += t.LONGEST
        stretch(1.0)
        assert size.threads == 2
    stretch(0.5)
    now[0] += t.LONGEST - 1
    stretch(1.0)
    assert size.threads == 1


def one_by_one(model, cache, token: int, n: int, stop: tuple[int, ...] = ()) -> tuple[torch.Tensor, list[int]]:
    """Greedy decoding a step per call, as `greedy_steps` does it in one: the last logits and the chosen ids."""
    chosen = []
    for _ in range(n):
        logits, token = model.fused.step(token, cache)
        chosen.append(token)
        if token in stop:
            break
    return logits, chosen


def prefilled(model, ids: list[int], capacity: int, policy: str = "error") -> KVCache:
    cache = model.new_cache(1, capacity, policy=policy)
    with torch.inference_mode():
        model(torch.tensor([ids]), cache)
    return cache


@pytest.mark.parametrize("storage", [None, 4])
def test_greedy_steps_are_single_steps_back_to_back(storage):
    """n greedy steps in one native call: the same ids, the same last logits and the same cache, bit for bit, as
    n calls of one step; a stop id ends the run after it is chosen, without feeding it."""
    model = bound(tiny_llama(False), storage)
    want_cache = prefilled(model, [1, 2], 32)
    want_logits, want = one_by_one(model, want_cache, 5, 12)
    got_cache = prefilled(model, [1, 2], 32)
    got_logits, got = model.fused.greedy_steps(5, got_cache, 12)
    assert got == want and len(set(want)) > 3
    assert torch.equal(got_logits, want_logits)
    assert got_cache.lengths == want_cache.lengths == [14]
    assert torch.equal(got_cache.k[:, :, :, :14], want_cache.k[:, :, :, :14])
    assert torch.equal(got_cache.v[:, :, :, :14], want_cache.v[:, :, :, :14])
    stop = want[6]
    first = want.index(stop) + 1
    cache = prefilled(model, [1, 2], 32)
    _, chosen = model.fused.greedy_steps(5, cache, 12, (299, stop))
    assert chosen == want[:first] and cache.lengths == [2 + first]  # the stop id chosen, its K and V not written
    logits, _ = model.fused.step(stop, cache)  # and decoding goes on from it as if never interrupted
    _, later = one_by_one(model, prefilled(model, [1, 2], 32), 5, first + 1)
    assert int(logits.argmax()) == later[first]


def test_greedy_steps_refuse_before_writing_anything():
    """More steps than the cache has slots, or than the model has positions: refused, the cache untouched."""
    model = tiny_llama(False)  # context 48
    model.fused = FusedDecode.build(model)
    for policy in ("error", "sliding"):
        cache = prefilled(model, [1, 2, 3], 8, policy)
        held = cache.k.clone()
        with pytest.raises(ContextLengthError, match="room for 8|need 6 free cache slots, the cache has 5"):
            model.fused.greedy_steps(4, cache, 6)
        assert cache.lengths == [3] and same_bits(cache.k, held)
    cache = KVCache(model.config, 1, 64)  # more slots than the model has positions
    with torch.inference_mode():
        model(torch.tensor([list(range(1, 41))]), cache)
    held = cache.k.clone()
    with pytest.raises(InvariantError, match=r"positions 40 … 49, slots 40 … 49 of 64"):
        model.fused.greedy_steps(4, cache, 10)
    assert cache.lengths == [40] and same_bits(cache.k, held)
    _, chosen = model.fused.greedy_steps(4, cache, 8)  # the last eight positions are fine
    assert len(chosen) == 8 and cache.lengths == [48]


def paged_rows(model, pool):
    """Three sequences prefilled into `pool` through the PyTorch blocks: rows 0 and 2 share their first block (the
    same block_size tokens at the same positions), row 1 is short; each has room for one more token. Returns their
    tables and lengths."""
    from forwardpass.engine.paged import PagedBatch

    bs = pool.block_size
    lengths = [bs + 3, 2, bs + 9]

    def blocks(n: int) -> list[int]:
        return [pool.allocate() for _ in range(n)]

    first = blocks(-(-(lengths[0] + 1) // bs))
    tables = [first, blocks(1), [first[0]] + blocks(-(-(lengths[2] + 1) // bs) - 1)]
    pool.share(first[0])
    with torch.inference_mode():
        for table, ids, held in ((tables[0], list(range(1, bs + 4)), 0), (tables[1], [8, 9], 0),
                                 (tables[2], [5, 6, 7, 8, 9, 10, 11, 12, 13], bs)):
            model(torch.tensor([ids]), PagedBatch(pool, [table], [held]))
    return tables, lengths


@pytest.mark.parametrize("storage, block_size, kv", [(None, 4, torch.float32), (torch.float16, 4, torch.float32),
                                                     (torch.bfloat16, 4, torch.float32), (8, 4, torch.float32),
                                                     (4, 4, torch.float32), (None, 5, torch.float32),
                                                     (4, 16, torch.float32), (None, 4, torch.float16),
                                                     (4, 5, torch.float16)])
def test_batched_paged_step_equals_the_blocks(storage, block_size, kv):
    """decode_batch: rows at different lengths over scattered and shared blocks give, row by row, the PyTorch
    path's logits over the same pool, and write the same new K and V into each row's own slot. Block sizes of
    every kind: a power of two (slots found by a shift) or not (by a division); pools of float32 or float16 pairs
    (each new pair rounded as it is stored, the row's own one included)."""
    from forwardpass.engine import BlockPool
    from forwardpass.engine.paged import PagedBatch

    model = bound(tiny_llama(False), storage)
    pool = BlockPool(model.config, num_blocks=12, block_size=block_size, dtype=kv)
    saved, model.fused = model.fused, None
    tables, lengths = paged_rows(model, pool)
    model.fused = saved
    tokens = [299, 0, 17]
    reference = BlockPool(model.config, num_blocks=12, block_size=block_size, dtype=kv)
    reference.k.copy_(pool.k)
    reference.v.copy_(pool.v)
    plain = model  # bf16's PyTorch path rounds activations to bf16: the kernel meets a widened copy instead
    if storage == torch.bfloat16:
        plain = widened(store_linears(tiny_llama(False), storage))
    with torch.inference_mode():
        got, chosen = model.fused.batch_step(pool, tokens, lengths, tables)
        fused, model.fused = model.fused, None
        want, _ = plain(torch.tensor([[t] for t in tokens]), PagedBatch(reference, tables, lengths))
        model.fused = fused
    want = want[:, 0]
    assert got.shape == want.shape == (3, 300)
    assert (got - want).abs().max().item() < 1e-3 * want.abs().max().item()
    assert chosen == [int(row.argmax()) for row in got]
    assert torch.equal(got.argmax(-1), want.argmax(-1))
    tol = 1e-3 * max(reference.k.abs().max().item(), reference.v.abs().max().item())
    assert (pool.k - reference.k).abs().max().item() < tol and (pool.v - reference.v).abs().max().item() < tol
    assert pool.k.dtype == reference.k.dtype == kv


def test_batched_step_equals_single_steps_bit_for_bit(smollm):
    """Each row of a batch gets the logits that row gets decoded alone (same kernel, same arithmetic)."""

    assert_rows_as_alone(smollm.model, [40, 50, 60])


def assert_rows_as_alone(model, tokens: list[int]) -> None:
    """One batched step over paged_rows' three sequences gives each row the logits it gets alone, bit for bit."""
    from forwardpass.engine import BlockPool

    pool = BlockPool(model.config, num_blocks=12, block_size=4)
    saved, model.fused = model.fused, None
    tables, lengths = paged_rows(model, pool)
    model.fused = saved
    before = (pool.k.clone(), pool.v.clone())
    together, _ = model.fused.batch_step(pool, tokens, lengths, tables)
    together = together.clone()
    for r in range(3):
        pool.k.copy_(before[0])
        pool.v.copy_(before[1])
        alone, _ = model.fused.batch_step(pool, [tokens[r]], [lengths[r]], [tables[r]])
        assert torch.equal(alone[0], together[r])


def test_batched_step_refusals_touch_nothing(smollm):
    from forwardpass.engine import BlockPool

    pool = BlockPool(smollm.config, num_blocks=4, block_size=4)
    held = pool.k.clone()
    with pytest.raises(InvariantError, match="too few for its slot 4"):
        smollm.model.fused.batch_step(pool, [3], [4], [[0]])
    with pytest.raises(TokenIdError, match="token id 49152"):
        smollm.model.fused.batch_step(pool, [3, 49152], [0, 0], [[0], [1]])
    with pytest.raises(InvariantError, match="refused"):
        smollm.model.fused.batch_step(pool, [3], [0], [[9]])  # a block past the pool
    assert same_bits(pool.k, held)


def test_batched_greedy_steps_equal_single_batched_steps(smollm):
    """decode_batch_greedy: n steps in one call give the ids, the last logits and the pool of n single steps, each
    argmax fed back; a stop id ends the burst for every row after the step that chose it."""
    from forwardpass.engine import BlockPool

    model = smollm.model
    pool = BlockPool(model.config, num_blocks=12, block_size=4)
    saved, model.fused = model.fused, None
    tables, lengths = paged_rows(model, pool)
    model.fused = saved
    for table in tables:
        table.append(pool.allocate())  # room for 4 more slots each
    before = (pool.k.clone(), pool.v.clone())
    logits, chosen = model.fused.batch_greedy_steps(pool, [40, 50, 60], lengths, tables, 4)
    burst = (logits.clone(), pool.k.clone(), pool.v.clone())
    pool.k.copy_(before[0])
    pool.v.copy_(before[1])
    tokens, held, single = [40, 50, 60], list(lengths), [[], [], []]
    for _ in range(4):
        step_logits, tokens = model.fused.batch_step(pool, tokens, held, tables)
        held = [h + 1 for h in held]
        for r in range(3):
            single[r].append(tokens[r])
    assert chosen == single and torch.equal(step_logits, burst[0])
    assert same_bits(pool.k, burst[1]) and same_bits(pool.v, burst[2])
    stop = single[1][1]  # row 1's second token: every row stops after two steps
    _, stopped = model.fused.batch_greedy_steps(pool, [40, 50, 60], lengths, tables, 4, (stop,))
    assert stopped == [ids[:2] for ids in single]
    with pytest.raises(InvariantError, match="too few for its slot 12"):
        model.fused.batch_greedy_steps(pool, [40, 50, 60], lengths, tables, 6)  # row 0: 3 blocks hold 12 slots


@pytest.mark.parametrize("storage", [None, 8, 4])
def test_batched_rows_equal_each_row_alone_on_odd_widths(storage):
    """Integer weights take rows two at a time (one tile load for both) and a lone row alone: every row's logits
    are those it gets alone, bit for bit, whichever way it was paired (widths with a lone block of 32 and groups
    that do not split evenly between threads)."""

    model = bound(tiny_llama(False), storage)
    assert_rows_as_alone(model, [299, 0, 17])


# Families beyond Llama, each a few switches on the same step: their tiny random models decode through the native
# step, contiguous and paged, with the PyTorch blocks' logits. Windows of 5 slots against 9–13 tokens, so the
# window's edge moves inside every run.
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
def test_fused_step_on_other_families(family, storage):
    model = bound(tiny_family(family), storage)
    decode = [2, 3, 4, 5, 299, 0, 7, 8, 9]
    got, cache = steps(model, [1, 6], decode, capacity=16)
    want, _ = steps(model, [1, 6], decode, capacity=16, fused=False)
    assert (got - want).abs().max().item() < 1e-3 * want.abs().max().item()
    assert cache.lengths == [11]


@pytest.mark.parametrize("family", ["mistral", "gemma3"])
def test_batched_paged_step_on_other_families(family):
    """decode_batch over rows at lengths 7, 2 and 13 (two of them past a window of 5): the PyTorch path's logits, and
    each row as it is alone."""
    from forwardpass.engine import BlockPool
    from forwardpass.engine.paged import PagedBatch

    model = bound(tiny_family(family))
    pool = BlockPool(model.config, num_blocks=12, block_size=4)
    saved, model.fused = model.fused, None
    tables, lengths = paged_rows(model, pool)
    model.fused = saved
    reference = BlockPool(model.config, num_blocks=12, block_size=pool.block_size)
    reference.k.copy_(pool.k)
    reference.v.copy_(pool.v)
    tokens = [299, 0, 17]
    with torch.inference_mode():
        got, _ = model.fused.batch_step(pool, tokens, lengths, tables)
        fused, model.fused = model.fused, None
        want, _ = model(torch.tensor([[t] for t in tokens]), PagedBatch(reference, tables, lengths))
        model.fused = fused
    assert (got - want[:, 0]).abs().max().item() < 1e-3 * want.abs().max().item()
    assert_rows_as_alone(model, tokens)
