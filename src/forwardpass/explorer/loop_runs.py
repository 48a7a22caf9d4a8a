"""§04 and §05 measured on the loaded model: the seed's loop run both ways and timed step by step, in several runs
(W-naive-vs-cached; what the runs allow the page to say: timing.py), and the loaded model's own KV cache, bytes per
token, beside GPT-3's (W-cache-here)."""

from __future__ import annotations

import time

import torch

from ..article import cost
from ..config import preset
from ..engine import BlockPool, EngineConfig
from ..loaded import LoadedModel
from .compute import _ids, _range, refuse
from .timing import spread, verdict

GPT3 = preset("gpt3-175b")
KV_NAMES = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}


BUDGET_S = 3.0  # a new run of both loops starts only while the runs so far and one more fit in this
MAX_RUNS = 9


def timed_loops(fp: LoadedModel, prompt: str, steps: int, budget_s: float = BUDGET_S) -> dict:
    """The seed's loop on `prompt`, greedy, `steps` steps, both ways, each step timed, in several runs:

        naive:  logits, _ = model(prompt + tokens, new_cache)   # every token so far, every step (loop.py, naive)
        cached: logits, cache = model(x, cache)                 # the prompt once, then only the newest token

    In each run the two loops take their steps in turn (naive step i, cached step i, …; the other one first in every
    other run), so a busy moment of the machine falls on both alike. Runs follow one another while one more fits in
    `budget_s` (at most MAX_RUNS, at least one); each step's time is its median over the runs, beside its range, and
    timing.verdict says what the runs allow, and nothing where they disagree. Both loops call the same PyTorch blocks
    (model.py: the engine's native step is not used here), so the times differ by the work alone. Each step's work is
    the tokens it ran through all n_layers blocks, counted from what was run (cost.py says the same: naive_work,
    cached_work)."""
    if not 1 <= steps <= 32:
        raise _range("steps", 1, 32)
    ids = _ids(fp, prompt)
    if len(ids) + steps > fp.config.context_length:
        raise refuse("context_fit", "prompt + steps must fit the context", context=fp.config.context_length)
    model, device = fp.model, fp.device
    with torch.inference_mode():
        model(torch.tensor([ids], device=device), model.new_cache(1, len(ids)), last_only=True)  # warm up
    runs, started = [], time.perf_counter()
    while len(runs) < MAX_RUNS:
        runs.append(_one_run(fp, ids, steps, naive_first=len(runs) % 2 == 0))
        spent = time.perf_counter() - started
        if spent + spent / len(runs) > budget_s:
            break
    first = runs[0]
    naive = [[r["naive_s"] for r in run] for run in runs]
    cached = [[r["cached_s"] for r in run] for run in runs]
    rows = []
    for i, row in enumerate(first):
        n, c = spread([x[i] for x in naive]), spread([x[i] for x in cached])
        rows.append({k: v for k, v in row.items() if k not in ("naive_s", "cached_s")}
                    | {"naive_s": n["median"], "naive_lo": n["lo"], "naive_hi": n["hi"],
                       "cached_s": c["median"], "cached_lo": c["lo"], "cached_hi": c["hi"]})
    naive_total, cached_total = spread([sum(x) for x in naive]), spread([sum(x) for x in cached])
    p = len(ids)
    return {"measured_at": time.time(), "prompt_tokens": p, "prompt_pieces": [fp.tokenizer.piece(i) for i in ids],
            "steps": rows, "runs": len(runs),
            "n_layers": fp.config.n_layers,
            "same_tokens": all(r["naive_id"] == r["cached_id"] for run in runs for r in run)
            and all([r["cached_id"] for r in run] == [r["cached_id"] for r in first] for run in runs),
            "naive_total_s": naive_total["median"], "cached_total_s": cached_total["median"],
            "naive_total": naive_total, "cached_total": cached_total,
            "naive_work": sum(r["naive_tokens"] for r in rows), "cached_work": sum(r["cached_tokens"] for r in rows),
            "verdict": verdict(naive, cached, [r["naive_tokens"] for r in rows], [r["cached_tokens"] for r in rows]),
            # what cost.py says the two loops cost, to compare with what they ran
            "cost_naive_work": cost.naive_work(p, steps),
            "cost_cached_work": cost.cached_work(p, steps, count_prefill=True)}


def _one_run(fp: LoadedModel, ids: list[int], steps: int, naive_first: bool) -> list[dict]:
    """One run of both loops, step by step in turn: each step's tokens, seconds and chosen token."""
    model, device = fp.model, fp.device
    rows, naive_tokens, cache, x = [], [], model.new_cache(1, len(ids) + steps), ids
    with torch.inference_mode():
        for step in range(steps):
            sequence = ids + naive_tokens  # naive: the whole text so far, through a fresh cache
            if naive_first:
                naive_id, naive_s = _naive_step(model, device, sequence)
                cached_id, cached_s, cache = _cached_step(model, device, x, cache)
            else:
                cached_id, cached_s, cache = _cached_step(model, device, x, cache)
                naive_id, naive_s = _naive_step(model, device, sequence)
            rows.append({"step": step, "naive_tokens": len(sequence), "cached_tokens": len(x),
                         "naive_s": naive_s, "cached_s": cached_s, "naive_id": naive_id, "cached_id": cached_id,
                         "piece": fp.tokenizer.piece(cached_id), "cache_pairs_per_layer": cache.lengths[0]})
            naive_tokens.append(naive_id)
            x = [cached_id]
    return rows


def _naive_step(model, device, sequence: list[int]) -> tuple[int, float]:
    """The whole text so far through a fresh cache: the token chosen, and the seconds it took."""
    started = time.perf_counter()
    logits, _ = model(torch.tensor([sequence], device=device), model.new_cache(1, len(sequence)), last_only=True)
    return int(logits[0, -1].argmax()), time.perf_counter() - started


def _cached_step(model, device, x: list[int], cache) -> tuple[int, float, object]:
    """Only what the cache does not hold yet: the token chosen, the seconds it took, and the cache."""
    started = time.perf_counter()
    logits, cache = model(torch.tensor([x], device=device), cache, last_only=True)
    return int(logits[0, -1].argmax()), time.perf_counter() - started, cache


def _kv(config, dtype: str, context: int) -> dict:
    per_token = cost.kv_bytes_per_token(config, dtype)
    return {"name": config.name, "n_layers": config.n_layers, "n_heads": config.n_heads, "n_kv_heads": config.kv_heads,
            "head_dim": config.head_dim, "dtype": dtype, "element_bytes": {"fp32": 4, "fp16": 2, "bf16": 2}[dtype],
            "per_token": per_token, "context": context, "full_context_bytes": per_token * context,
            "full_context_gib": per_token * context / cost.GiB}


def kv_here(fp: LoadedModel) -> dict:
    """W-cache-here: the loaded model's KV bytes per token (2 × n_layers × n_kv_heads × head_dim × bytes, in the
    engine's KV dtype) and its cache at its own context length, beside GPT-3's in fp16. `pool_per_token` is what the
    engine's paged pool allocates per token (one block / its size): the formula, checked against the engine. A model
    whose layers slide a window still has every layer's pair of every token kept by the pool (`sliding_layers`)."""
    c, dtype = fp.config, fp.kv_dtype()
    here = _kv(c, KV_NAMES[dtype], c.context_length)
    block = EngineConfig().block_size
    here["pool_per_token"] = BlockPool.block_bytes(c, block, dtype) // block
    windows = [c.window(layer) for layer in range(c.n_layers)]  # layers that attend to the last W tokens only
    here["sliding_layers"] = sum(w is not None for w in windows)
    here["window"] = next((w for w in windows if w is not None), None)
    return {"model": here, "gpt3": _kv(GPT3, "fp16", GPT3.context_length),
            "ratio": cost.kv_bytes_per_token(GPT3, "fp16") / here["per_token"]}
