"""Sizing: how many engine replicas, CPUs and how much memory a target request rate needs.

One replica's capacity for a request shape (P prompt tokens, N new) is measured, not guessed: the engine answers
`b` such requests at once for b = 1, 2, 4, …, `max_batch`, and each round's wall time W(b) gives the rate at that
concurrency, X(b) = b / W(b) requests per second (prefill and every decode step included, as the scheduler runs
them). The plan runs each replica at the smallest b reaching 90% of the best X (more concurrency than that buys
latency, not throughput), needs ⌈R / X(b)⌉ replicas for R requests per second, and gives each the memory it
measured after loading plus the KV cache b sequences of P + N tokens hold (at the engine pool's bytes per token).

The probe runs in a child process with the thread count a replica gets (OpenMP and PyTorch read it at start-up)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time

from .errors import ForwardpassError

ENOUGH = 0.9  # a batch within this share of the best rate is as good: the smallest such is chosen


def probe(model: str | None, storage: str | None, device: str, prompt: int, new: int, max_batch: int,
          activations: str = "exact") -> dict:
    """In this process: load the model and time rounds of b concurrent requests of `prompt` and `new` tokens."""
    import numpy as np

    from .article.machine import peak_resident_bytes
    from .engine import Engine, EngineConfig
    from .loader import load
    from .sampling import SamplingParams

    fp = load(model, device=device, storage=storage, backend="auto", activations=activations)  # as a replica loads it
    loaded_rss = peak_resident_bytes()
    c = fp.config
    if prompt + new > c.context_length:
        raise ForwardpassError(f"--prompt {prompt} + --new {new} exceeds the model's context length {c.context_length}")
    engine = Engine(fp, EngineConfig(kv_cache_bytes=256 * 2**20, max_num_seqs=max_batch, prefix_caching=False))
    generator = np.random.default_rng(0)  # the same random prompts every run
    params = SamplingParams(temperature=0, max_tokens=new, ignore_eos=True)
    engine.submit(list(range(8)), SamplingParams(temperature=0, max_tokens=2), lambda o: None)  # warm up
    engine.run_until_done()
    rounds, b = [], 1
    while b <= max_batch:
        prompts = [generator.integers(0, c.vocab_size, prompt).tolist() for _ in range(b)]
        start = time.perf_counter()
        for ids in prompts:
            engine.submit(ids, params, lambda o: None)
        engine.run_until_done()
        wall = time.perf_counter() - start
        rounds.append({"batch": b, "seconds": wall, "requests_per_s": b / wall, "tokens_per_s": b * new / wall})
        b *= 2
    return {"model": c.name, "source": str(fp.source), "storage": fp.metadata.get("storage"),
            "activations": activations, "prompt": prompt, "new": new, "loaded_rss_bytes": loaded_rss,
            "kv_bytes_per_token": engine.pool.block_bytes(c, 1, engine.pool.format), "rounds": rounds,
            "load_average": round(os.getloadavg()[0], 2)}


def measure_replica(model: str | None, storage: str | None, device: str, prompt: int, new: int, max_batch: int,
                    threads: int, activations: str = "exact") -> dict:
    """`probe` in a child process that computes with `threads` threads, as one replica would."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    code = ("import json, sys; from forwardpass.plan import probe; "
            "print(json.dumps(probe(*json.loads(sys.argv[1]))))")
    args = json.dumps([model, storage, device, prompt, new, max_batch, activations])
    r = subprocess.run([sys.executable, "-c", code, args], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["no output"])[-1]
        raise ForwardpassError(f"measuring a replica failed: {last}")
    return json.loads(r.stdout.strip().splitlines()[-1]) | {"threads": threads}


def plan(measured: dict, rate: float, threads: int) -> dict:
    """The replicas, CPUs and memory `rate` requests per second need, from a replica's measured rounds."""
    best = max(r["requests_per_s"] for r in measured["rounds"])
    chosen = next(r for r in measured["rounds"] if r["requests_per_s"] >= ENOUGH * best)
    replicas = max(1, math.ceil(rate / chosen["requests_per_s"]))
    tokens = chosen["batch"] * (measured["prompt"] + measured["new"])
    per_replica = measured["loaded_rss_bytes"] + tokens * measured["kv_bytes_per_token"]
    return {"rate": rate, "batch_per_replica": chosen["batch"], "replica_requests_per_s": chosen["requests_per_s"],
            "replica_tokens_per_s": chosen["tokens_per_s"], "latency_s": chosen["seconds"], "replicas": replicas,
            "cpus": replicas * threads, "threads_per_replica": threads, "memory_per_replica_bytes": per_replica,
            "memory_bytes": replicas * per_replica, "capacity_requests_per_s": replicas * chosen["requests_per_s"]}
