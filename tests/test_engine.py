"""The engine over the paged cache: batch-invariant greedy output, prefix caching, preemption, invariants."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import pytest
import torch
from stepping import run

from forwardpass import Transformer, preset
from forwardpass.engine import BlockPool, Engine, EngineConfig
from forwardpass.engine.paged import PagedBatch
from forwardpass.engine.rows import NATIVE
from forwardpass.errors import ContextLengthError, InvariantError
from forwardpass.loaded import LoadedModel
from forwardpass.loop import generate
from forwardpass.sampling import SamplingParams

SYSTEM = ("You are a careful assistant. Answer in one short sentence, in plain English, without lists, "
          "and never mention that you are an assistant. ")


def tokens(outputs: list) -> list[int]:
    return [o.token_id for o in outputs if o.token_id is not None]


def test_paged_forward_equals_contiguous():
    """Rows of different lengths over scattered blocks give the logits of each sequence run alone."""
    torch.manual_seed(0)
    config = preset("toy").with_(vocab_size=80, context_length=64, positions="rope", norm="rmsnorm", ffn="swiglu",
                                 bias=False, n_kv_heads=2)
    model = Transformer(config).eval()
    pool = BlockPool(config, num_blocks=12, block_size=4)
    a, b = torch.randint(0, 80, (1, 10)), torch.randint(0, 80, (1, 6))
    tables = [[pool.allocate() for _ in range(3)], [pool.allocate() for _ in range(2)]]
    tables[0].append(pool.allocate())  # blocks of a sequence need not be adjacent
    with torch.inference_mode():
        view = PagedBatch(pool, tables, [0, 0])
        padded = torch.cat([a[:, :7], torch.cat([b[:, :5], torch.zeros(1, 2, dtype=torch.long)], 1)])
        first, _ = model(padded, view, n_tokens=[7, 5])
        view = PagedBatch(pool, tables, [7, 5])
        second, _ = model(torch.cat([a[:, 7:8], b[:, 5:6]]), view)
        want_a, _ = model(a[:, :8])
        want_b, _ = model(b)
    assert (first[0] - want_a[0, :7]).abs().max() < 1e-4 and (first[1, :5] - want_b[0, :5]).abs().max() < 1e-4
    assert (second[0, 0] - want_a[0, 7]).abs().max() < 1e-4 and (second[1, 0] - want_b[0, 5]).abs().max() < 1e-4


def test_batched_greedy_equals_alone(smollm):
    engine = Engine(smollm, EngineConfig(kv_cache_bytes=64 * 2**20, checked=True))
    prompts = ["The three primary colors are", "Once upon a time", "def add(a, b):\n", "The capital of France is",
               "Water boils at", "My favourite book is"]
    ids = [smollm.encode(p) for p in prompts]
    greedy = [SamplingParams(temperature=0, max_tokens=12 + 3 * i) for i in range(len(prompts))]
    batched = run(engine, ids, greedy)
    for p, q, out in zip(ids, greedy, batched, strict=True):
        alone = generate(smollm, p, q)
        assert tokens(out) == alone.token_ids
        assert "".join(o.text for o in out) == alone.text
        assert out[-1].finish_reason == {"eos": "stop"}.get(alone.stop_reason, alone.stop_reason)  # OpenAI's names
    assert engine.pool.used == 0 and not engine.scheduler.has_work()


def test_a_float16_kv_cache_halves_the_pool_and_keeps_greedy_text(smollm):
    """--kv-cache-dtype float16: the engine's pool holds binary16 pairs (half the bytes, so twice the blocks in the same
    memory), runs through the native step, and greedy decoding keeps the float32 cache's tokens, leaving them only
    where float32's top two are within 0.02 in log-probability (each pair rounded to 11 significant bits)."""
    half = dataclasses.replace(smollm, kv_cache_dtype="float16")
    assert half.kv_dtype() == torch.float16 and smollm.kv_dtype() == torch.float32
    small, large = (Engine(p, EngineConfig(kv_cache_bytes=16 * 2**20, checked=True)) for p in (half, smollm))
    per_block = BlockPool.block_bytes(smollm.config, 16, torch.float16)
    assert 2 * per_block == BlockPool.block_bytes(smollm.config, 16, torch.float32)
    assert small.pool.k.dtype == torch.float16 and small.pool.num_blocks == 16 * 2**20 // per_block
    assert large.pool.num_blocks == 16 * 2**20 // (2 * per_block)
    assert small.runner.capabilities is NATIVE
    for prompt in ["The three primary colors are", "def add(a, b):\n", "Water boils at"]:
        ids = smollm.encode(prompt)
        params = SamplingParams(temperature=0, max_tokens=24, logprobs=2)
        want, got = generate(smollm, ids, params), generate(half, ids, params)
        for i, (a, b) in enumerate(zip(got.token_ids, want.token_ids, strict=True)):
            if a != b:
                top = want.logprobs[i].top
                assert abs(top[0][1] - top[1][1]) < 0.02, (prompt, i)
                break
    out = run(small, [smollm.encode("Once upon a time")], [SamplingParams(temperature=0, max_tokens=8)])[0]
    assert len(tokens(out)) == 8 and small.pool.used == 0


def test_prefix_cache_hit_gives_identical_output(smollm):
    engine = Engine(smollm, EngineConfig(kv_cache_bytes=64 * 2**20, checked=True))
    prompt = smollm.encode(SYSTEM + "What colour is the sky?")
    greedy = SamplingParams(temperature=0, max_tokens=10)
    first = run(engine, [prompt], [greedy])[0]
    assert first[-1].cached_tokens == 0
    second = run(engine, [prompt], [greedy])[0]
    bs = engine.pool.block_size
    assert second[-1].cached_tokens == (len(prompt) - 1) // bs * bs > 0  # the repeated prompt was not recomputed
    assert tokens(second) == tokens(first) == generate(smollm, prompt, greedy).token_ids
    other = run(engine, [smollm.encode(SYSTEM + "How tall is a giraffe?")], [greedy])[0]
    assert other[-1].cached_tokens >= bs  # the shared system prompt's full blocks
    assert engine.pool.hits > 0 and engine.pool.used == 0


def test_pool_exhaustion_preempts_and_recomputes(smollm):
    """More demand than blocks: requests wait or are preempted and recomputed — never corrupted or cut."""
    pool_bytes = 10 * BlockPool.block_bytes(smollm.config, 16, smollm.kv_dtype())  # 160 token slots in all
    engine = Engine(smollm, EngineConfig(kv_cache_bytes=pool_bytes, block_size=16, checked=True))
    assert engine.pool.num_blocks == 10
    prompts = [smollm.encode(SYSTEM + q) for q in ("Why is grass green?", "Why is snow white?",
                                                   "Why is the sea salty?", "Why do cats purr?")]
    greedy = SamplingParams(temperature=0, max_tokens=40, ignore_eos=True)  # 5 blocks each, 20 wanted, 10 exist
    outs = run(engine, prompts, [greedy] * 4)
    assert engine.scheduler.preemptions > 0
    for p, out in zip(prompts, outs, strict=True):
        assert tokens(out) == generate(smollm, p, greedy).token_ids and out[-1].finish_reason == "length"
    assert engine.pool.used == 0 and len(engine.pool.free) == 10


def test_request_larger_than_the_pool_is_refused(smollm):
    engine = Engine(smollm, EngineConfig(kv_cache_bytes=4 * 16 * 46080))  # 4 blocks of 16 tokens
    assert engine.pool.num_blocks == 4
    with pytest.raises(ContextLengthError, match="needs 5 KV blocks but the pool holds 4"):
        engine.submit(list(range(10, 60)), SamplingParams(max_tokens=20), print)
    with pytest.raises(ContextLengthError, match="max_tokens 9000 does not fit"):
        engine.submit([5, 6], SamplingParams(max_tokens=9000), print)


def test_abort_frees_blocks(smollm):
    engine = Engine(smollm, EngineConfig(kv_cache_bytes=64 * 2**20, checked=True))
    seen = []
    rid = engine.submit(smollm.encode("Count to one hundred: 1, 2, 3,"), SamplingParams(temperature=0, max_tokens=200),
                        seen.append)
    for _ in range(5):
        engine.step()
    assert engine.pool.used > 0
    engine.abort(rid)
    engine.step()
    assert seen[-1].finish_reason == "abort" and engine.pool.used == 0 and not engine.scheduler.has_work()


def test_pool_invariant_checks_catch_a_wrong_count(smollm):
    pool = BlockPool(smollm.config, num_blocks=4, block_size=16)
    a = pool.allocate()
    pool.share(a)  # two references, one table
    with pytest.raises(InvariantError, match="reference count 2 but 1 live sequences"):
        pool.check([[a]])
    pool.release([a])
    pool.check([[a]])
    pool.release([a])
    with pytest.raises(InvariantError, match="released more often"):
        pool.release([a])


def test_mixed_sampling_parameters_each_kept(smollm):
    engine = Engine(smollm, EngineConfig(kv_cache_bytes=64 * 2**20))
    p = smollm.encode("Tell me a story about a dragon")
    params = [SamplingParams(temperature=0.9, seed=1, max_tokens=12), SamplingParams(temperature=0, max_tokens=12),
              SamplingParams(temperature=0.9, seed=1, max_tokens=12), SamplingParams(temperature=0, max_tokens=5,
                                                                                   stop=["dragon"])]
    outs = run(engine, [p] * 4, params)
    assert tokens(outs[0]) == tokens(outs[2])  # the same seed, the same tokens, in one batch
    assert tokens(outs[1]) == generate(smollm, p, params[1]).token_ids
    assert outs[3][-1].finish_reason in ("stop", "length") and len(tokens(outs[3])) <= 5


def test_a_seed_gives_the_same_tokens_at_any_batch_size(smollm):
    """A seeded, sampled request draws the same tokens alone as among others (each row has its own generator,
    and a row's logits do not depend on its neighbours)."""
    prompts = [smollm.encode(f"Tell me a story about animal number {i}") for i in range(6)]
    params = [SamplingParams(temperature=0.9, top_p=0.95, seed=10 + i, max_tokens=24, ignore_eos=True)
              for i in range(6)]
    together = run(Engine(smollm, EngineConfig(kv_cache_bytes=64 * 2**20)), prompts, params)
    for i in (0, 5):
        alone = run(Engine(smollm, EngineConfig(kv_cache_bytes=64 * 2**20)), prompts[i:i + 1], params[i:i + 1])
        assert tokens(alone[0]) == tokens(together[i])


def test_tiny_random_model_without_tokenizer():
    torch.manual_seed(0)
    fp = LoadedModel(Transformer(preset("toy")).eval(), None, "toy", {})
    engine = Engine(fp, EngineConfig(kv_cache_bytes=8 * 2**20, checked=True))
    outs = run(engine, [[1, 2, 3], [4, 5, 6, 7, 8]], [SamplingParams(temperature=0, max_tokens=7)] * 2)
    assert [len(tokens(o)) for o in outs] == [7, 7]
    assert tokens(outs[0]) == generate(fp, [1, 2, 3], SamplingParams(temperature=0, max_tokens=7)).token_ids


def test_a_prefix_hit_needs_the_same_tokens_not_only_the_same_hash(smollm, monkeypatch):
    """Two different prompts whose blocks hash alike (every hash made equal here) never share pairs."""
    import forwardpass.engine.paged as paged

    monkeypatch.setattr(paged, "hash", lambda _: 7, raising=False)
    engine = Engine(smollm, EngineConfig(kv_cache_bytes=64 * 2**20, checked=True))
    greedy = SamplingParams(temperature=0, max_tokens=6)
    first = smollm.encode(SYSTEM + "What colour is the sky?")
    other = smollm.encode("Tell me, in one line and without lists, how tall a giraffe grows. " * 2)
    run(engine, [first], [greedy])
    got = run(engine, [other], [greedy])[0]
    assert got[-1].cached_tokens == 0 and tokens(got) == generate(smollm, other, greedy).token_ids
    again = run(engine, [first], [greedy])[0]  # the same prompt still finds its own blocks
    assert again[-1].cached_tokens > 0


def test_greedy_bursts_end_each_row_as_alone(smollm):
    """Plain greedy rows run in bursts of native steps: a stop string, an end-of-turn token or max_tokens found
    mid-burst ends that row exactly where it ends alone, and the others go on."""
    engine = Engine(smollm, EngineConfig(kv_cache_bytes=64 * 2**20, checked=True))
    prompts = [smollm.encode(p) for p in ("The three primary colors are", "Once upon a time", "Water boils at")]
    params = [SamplingParams(temperature=0, max_tokens=30, stop=["blue"]), SamplingParams(temperature=0, max_tokens=5),
              SamplingParams(temperature=0, max_tokens=21, stop=[" degrees", "."])]
    outs = run(engine, prompts, params)
    for p, q, out in zip(prompts, params, outs, strict=True):
        alone = generate(smollm, p, q)
        assert "".join(o.text for o in out) == alone.text and tokens(out) == alone.token_ids
        assert out[-1].finish_reason == {"eos": "stop"}.get(alone.stop_reason, alone.stop_reason)
    assert engine.pool.used == 0


def test_prefill_groups_bound_the_padding():
    """Rows of very different lengths run in separate padded batches; alike ones together; none lost."""
    from forwardpass.engine.step_plan import prefill_groups

    rows = [(f"s{i}", n) for i, n in enumerate([36, 512, 35, 37, 300, 36, 1])]
    groups = prefill_groups(rows)
    assert sorted(r for g in groups for r in g) == sorted(rows)
    for group in groups:
        width = max(n for _, n in group)
        assert len(group) * width <= 2 * sum(n for _, n in group)
    assert [[n for _, n in g] for g in groups] == [[512, 300, 37], [36, 36, 35, 1]]  # a fourth: 4 × 512 > 2 × 885


POOL_MEMORY = """
import json, os, torch
from forwardpass import preset
from forwardpass.engine import BlockPool
def resident():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
config = preset("toy").with_(n_layers=4, n_kv_heads=2, d_model=256, n_heads=4)  # head_dim 64
blocks = 2**28 // BlockPool.block_bytes(config, 16, torch.float32)
before = resident()
pool = BlockPool(config, num_blocks=blocks, block_size=16)
made = resident() - before
pool.k[:, pool.allocate()] = 1.0
written = resident() - before
counted = int(pool.k.count_nonzero()), bool(pool.v.any())  # reading zeros maps no memory
print(json.dumps({"shape": list(pool.k.shape), "blocks": blocks, "made": made, "written": written,
                  "counted": counted, "read": resident() - before}))
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="resident memory is read from /proc")
def test_a_pool_takes_memory_only_as_its_blocks_are_written():
    """A 256 MiB pool (a server's default is 1 GiB) holds zeros from the start but costs memory only for the blocks
    written: torch.zeros would make every byte resident at once. Measured in a fresh process, whose resident memory
    nothing else moves (a test worker's heap, shaped by the tests before, can grow by tens of MB on its own)."""
    r = subprocess.run([sys.executable, "-c", POOL_MEMORY], capture_output=True, text=True, timeout=120, check=True)
    got = json.loads(r.stdout)
    assert got["shape"] == [4, got["blocks"], 2, 16, 64]
    assert got["counted"] == [4 * 16 * 2 * 64, False]
    assert max(got["made"], got["written"], got["read"]) < 2**24


def test_a_pool_the_system_cannot_hold_is_refused_by_size():
    """A pool larger than the address space is refused with its size, not a traceback from the allocator."""
    config = preset("toy").with_(n_layers=4, n_kv_heads=2, d_model=256, n_heads=4)
    blocks = 2**60 // BlockPool.block_bytes(config, 16, torch.float32)
    with pytest.raises(ContextLengthError, match=r"a KV pool of 1.07e\+09 GiB \(\d+ blocks of 16 tokens\) cannot be "
                                                 r"allocated on cpu: "):
        BlockPool(config, num_blocks=blocks, block_size=16)
