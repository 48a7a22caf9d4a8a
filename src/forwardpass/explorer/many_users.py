"""W-many-users: the article's last point made visible. Many requests run through a real Engine over a small paged
KV pool of its own (prefix caching on), one snapshot after every engine step: which blocks each request holds (a
block held by several is a shared prefix block), the free ones, who waits, runs or was preempted, and each request's
time to first token. The totals are checked against the engine's own Prometheus metrics (what /metrics serves)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families
from pydantic import BaseModel

from ..engine import BlockPool, Engine, EngineConfig
from ..engine.metrics import LATENCY_BUCKETS
from ..engine.sequence import Sequence
from ..loaded import LoadedModel
from ..sampling import SamplingParams
from .compute import model_lock, refuse

BLOCK_SIZE = 16  # tokens per block: the engine's default
# The shared system prompt and each user's own question are cut to the lengths the reader chooses (in tokens).
SYSTEM = ("You are a helpful assistant. Answer briefly and politely, in plain words, and say so when you do not "
          "know. Keep every answer short, check your arithmetic twice, and never invent a source. ") * 4
QUESTIONS = ["What is the capital of France?", "How do plants make food from light?", "Why is the sky blue?",
             "Name three rivers in Africa.", "What does a compiler do?", "How far away is the Moon?",
             "Who wrote the first computer program?", "What is a prime number?", "How do vaccines work?",
             "Why do cats purr?", "What causes the tides?", "How is paper made?", "What is a black hole?",
             "Why do leaves change colour?", "How does a bicycle stay upright?", "What is inflation?"]
LIMITS = {"requests": (1, 32), "system_tokens": (0, 64), "own_tokens": (1, 48), "new_tokens": (2, 24),
          "pool_blocks": (4, 128)}  # a run stays a few seconds at most on the default model


@dataclass
class Settings:
    """What the reader sets up: the crowd, its prompts, and the pool."""

    requests: int = 8
    system_tokens: int = 48  # the system prompt at the start of every request (0: none)
    shared: bool = True  # the same system prompt for every request (False: each its own, nothing to share)
    own_tokens: int = 16  # each request's own question after it
    new_tokens: int = 16
    pool_blocks: int = 40
    arrival: str = "staggered"  # "staggered": one request joins per engine step; "together": all before the first

    def check(self) -> None:
        for name, (lo, hi) in LIMITS.items():
            if not lo <= getattr(self, name) <= hi:
                raise refuse("range", f"{name} must be between {lo} and {hi}", what=name, lo=lo, hi=hi)
        if self.arrival not in ("staggered", "together"):
            raise refuse("arrival", "arrival must be 'staggered' or 'together'")


def _cut(ids: list[int], n: int) -> list[int]:
    """`ids` repeated as needed and cut to n tokens."""
    return (ids * (n // max(len(ids), 1) + 1))[:n]


def prompts(fp: LoadedModel, s: Settings) -> list[list[int]]:
    """Each request's prompt ids: the system prompt (the same ids for all, or each request's own), then its question,
    cut to the chosen lengths."""
    system = fp.encode(SYSTEM)
    out = []
    for i in range(s.requests):
        own_system = system if s.shared else fp.encode(f"Request {i + 1}. " + SYSTEM)  # differs from its first token
        asked = f"{QUESTIONS[i % len(QUESTIONS)]} {QUESTIONS[(i * 7 + 3) % len(QUESTIONS)]}"
        question = fp.encode(f" User {i + 1}: {asked}")
        out.append(_cut(own_system, s.system_tokens) + _cut(question, s.own_tokens))
    return out


def metrics_of(engine: Engine) -> dict:
    """What the engine's /metrics says, read back from its Prometheus text: every sample by name and labels."""
    samples = {}
    for family in text_string_to_metric_families(engine.metrics.render().decode()):
        for s in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
            samples[s.name + (f"{{{labels}}}" if labels else "")] = s.value
    return samples


def run(fp: LoadedModel, s: Settings) -> dict:
    """The requests through a real Engine on `fp` over a pool of s.pool_blocks blocks: a snapshot after every step."""
    s.check()
    ids = prompts(fp, s)
    need = -(-(len(ids[0]) + s.new_tokens) // BLOCK_SIZE)
    if need > s.pool_blocks:  # the engine would refuse it: say so in the page's words
        raise refuse("pool_fit", f"one request needs {need} blocks of {BLOCK_SIZE} tokens; the pool has "
                     f"{s.pool_blocks}", need=need, blocks=s.pool_blocks)
    block_bytes = BlockPool.block_bytes(fp.config, BLOCK_SIZE, fp.kv_format())
    engine = Engine(fp, EngineConfig(kv_cache_bytes=s.pool_blocks * block_bytes, block_size=BLOCK_SIZE,
                                     max_num_seqs=LIMITS["requests"][1], prefix_caching=True))
    scheduler = engine.scheduler
    assert engine.pool.num_blocks == s.pool_blocks
    seqs: dict[str, Sequence] = {}  # request id → the engine's Sequence, kept as it reaches the scheduler
    add = scheduler.add

    def seen(seq: Sequence) -> None:
        seqs[seq.request_id] = seq
        add(seq)

    scheduler.add = seen  # this engine's own scheduler: it lives for this run only
    order: list[str] = []  # request ids in submission order: request i is order[i]
    finished: dict[str, int] = {}  # request id → the step it finished in
    # sampled, not greedy: the engine then runs one token per step (greedy rows run several per native call), and the
    # steps show that; every request runs its full length
    params = SamplingParams(temperature=0.8, seed=0, max_tokens=s.new_tokens, ignore_eos=True)

    def submit(i: int) -> None:
        order.append(engine.submit(ids[i], params, lambda out: out.finish_reason and finished.setdefault(
            out.request_id, len(steps))))

    steps: list[dict] = []
    arrived_at: list[int] = []
    start = time.perf_counter()
    pending = list(range(s.requests))
    while pending or engine.has_work():
        if pending:
            batch = pending if s.arrival == "together" else pending[:1]
            for i in batch:
                submit(i)
                arrived_at.append(len(steps))
            pending = pending[len(batch):]
        engine.step()
        steps.append(_snapshot(engine, seqs, order, finished, s.requests, time.perf_counter() - start))
    seconds = time.perf_counter() - start
    return _summary(fp, s, ids, engine, seqs, order, arrived_at, finished, steps, seconds)


def _snapshot(engine: Engine, seqs: dict, order: list[str], finished: dict, total: int, t: float) -> dict:
    """The pool and every request right after a step. owners[b]: -1 (free), the request holding block b, or the list
    of requests sharing it."""
    pool, scheduler = engine.pool, engine.scheduler
    holders: list[list[int]] = [[] for _ in range(pool.num_blocks)]
    running = {q.request_id for q in scheduler.running}
    waiting = {q.request_id for q in scheduler.waiting}
    live = [seqs.get(order[i]) if i < len(order) else None for i in range(total)]
    for i, seq in enumerate(live):
        for b in seq.blocks if seq is not None else []:
            holders[b].append(i)
    requests = []
    for seq in live:
        if seq is None:  # not arrived yet
            requests.append({"state": "later", "blocks": 0, "shared": 0, "computed": 0, "generated": 0,
                             "preemptions": 0})
            continue
        rid = seq.request_id
        state = ("done" if rid in finished else "running" if rid in running
                 else ("preempted" if seq.preemptions else "waiting") if rid in waiting else "later")
        requests.append({"state": state, "blocks": len(seq.blocks),
                         "shared": sum(len(holders[b]) > 1 for b in seq.blocks), "computed": seq.num_computed,
                         "generated": len(seq.output_ids), "preemptions": seq.preemptions})
    owners = [-1 if not h else h[0] if len(h) == 1 else h for h in holders]
    cached_free = sorted(b for b in pool.free if b in pool.block_hash)  # free, still findable by the prefix cache
    return {"t": round(t, 4), "owners": owners, "cached_free": cached_free, "free": len(pool.free),
            "used": pool.used, "shared": sum(len(h) > 1 for h in holders), "running": len(running),
            "waiting": len(waiting), "preemptions": scheduler.preemptions,
            "generated": sum(r["generated"] for r in requests), "requests": requests,
            "metrics_blocks_used": engine.metrics.blocks_used.value}


def _summary(fp, s: Settings, ids, engine: Engine, seqs, order, arrived_at, finished, steps, seconds) -> dict:
    """Per request: its prompt, the tokens it got, its time to first token (the engine's own: the Sequence's first
    token time minus its arrival, the very numbers the histogram observed); the totals counted from the requests, and
    the same totals as the engine's /metrics reports them."""
    per = []
    for i, rid in enumerate(order):
        seq = seqs[rid]
        per.append({"prompt_tokens": len(ids[i]), "generated": len(seq.output_ids), "cached_tokens": seq.cached_tokens,
                    "preemptions": seq.preemptions, "arrived_step": arrived_at[i], "finished_step": finished[rid],
                    "first_token_step": next(k for k, st in enumerate(steps) if st["requests"][i]["generated"] > 0),
                    "ttft_s": seq.first_token_at - seq.arrival, "seconds": seq.last_token_at - seq.arrival,
                    "tokens_per_s": len(seq.output_ids) / max(seq.last_token_at - seq.arrival, 1e-9)})
    counted = {"prompt_tokens": sum(len(x) for x in ids), "generation_tokens": sum(p["generated"] for p in per),
               "preemptions": sum(p["preemptions"] for p in per), "ttft_count": len(per),
               "ttft_buckets": [sum(p["ttft_s"] <= b for p in per) for b in LATENCY_BUCKETS],
               "blocks_used": steps[-1]["used"]}
    m = metrics_of(engine)
    reported = {"prompt_tokens": m["vllm:prompt_tokens_total"], "generation_tokens": m["vllm:generation_tokens_total"],
                "preemptions": m["vllm:num_preemptions_total"],
                "ttft_count": m["vllm:time_to_first_token_seconds_count"],
                "ttft_buckets": [m[f"vllm:time_to_first_token_seconds_bucket{{le={float(b)}}}"]
                                 for b in LATENCY_BUCKETS],
                "blocks_used": m["forwardpass:kv_cache_blocks_used"]}
    return {"settings": s.__dict__, "measured_at": time.time(), "block_size": BLOCK_SIZE,
            "pool_blocks": engine.pool.num_blocks,
            "kv_dtype": fp.kv_format(),
            "block_bytes": BlockPool.block_bytes(fp.config, BLOCK_SIZE, fp.kv_format()),
            "steps": steps, "requests": per, "seconds": seconds,
            "tokens_per_s": counted["generation_tokens"] / seconds,
            "peak_used": max(st["used"] for st in steps), "peak_shared": max(st["shared"] for st in steps),
            "counted": counted, "metrics": reported, "ttft_buckets": list(LATENCY_BUCKETS),
            "prefix_cache": _prefix_cache(m, per),
            "agrees": all(counted[k] == reported[k] for k in counted)}


def _prefix_cache(m: dict, per: list[dict]) -> dict:
    """The prefix cache's lookups, in tokens, as /metrics counts them (`queries`, `hits`), and the hits split: each
    request's first lookup (`first_hits`: what one request found of another's) and the lookups of preempted requests
    resuming (`resumed_hits`: the engine counts those again)."""
    hits, first = m["vllm:prefix_cache_hits_total"], sum(p["cached_tokens"] for p in per)
    return {"queries": m["vllm:prefix_cache_queries_total"], "hits": hits, "first_hits": first,
            "resumed_hits": int(hits) - first}


class Body(BaseModel):
    """POST /api/many-users: Settings, and the model to run on (None: the explorer's first)."""

    model: str | None = None
    requests: int = 8
    system_tokens: int = 48
    shared: bool = True
    own_tokens: int = 16
    new_tokens: int = 16
    pool_blocks: int = 40
    arrival: str = "staggered"


WAIT_S = 30.0  # how long a second run waits for the one in progress (a run is a few seconds) before it is refused


def runner(models):
    """fn(body) for POST /api/many-users: one run at a time per explorer; a second waits its turn (a page runs the
    widget once when it opens, and a reader may press Run before that run is done), and is refused, clearly, only
    when the run before it takes longer than WAIT_S."""
    busy = threading.Lock()

    def many_users(body: Body) -> dict:
        fp = models.get(body.model)
        if not busy.acquire(timeout=WAIT_S):
            raise refuse("busy", "a many-users run is already in progress on this explorer; try again when it ends")
        try:
            with model_lock(fp):
                return run(fp, Settings(**body.model_dump(exclude={"model"})))
        finally:
            busy.release()

    return many_users
