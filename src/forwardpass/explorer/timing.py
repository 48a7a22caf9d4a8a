"""What a few timed runs of the naive and the cached loop allow the page to say (W-naive-vs-cached), and no more.

Each run times both loops step by step, their steps taken in turn, so a busy moment of the machine falls on both
alike; a run gives one naive ÷ cached time ratio. A verdict holds only where every run agrees:

    faster   "cached" where every run's ratio is above 1, "naive" where every one is below, else None (too noisy)
    gap      the time ratio against the work ratio: "narrower" (every run's under work / MARGIN), "follows" (every
             run's within MARGIN of it), "wider" (every run's over work × MARGIN), else None
    fit      a straight line through the median step times (time = per_step + per_token × tokens), told only where
             the gap is narrower and the line fits the medians (r² at least FIT_R2): then `fixed_share` is the share
             of the cached loop's time (all its steps) that the per-step part makes, `fixed_share_one` its share of
             one single-token step

Fewer than MIN_RUNS runs say nothing about time at all."""

from __future__ import annotations

from statistics import median

MIN_RUNS = 3  # runs before any verdict on time
MARGIN = 1.25  # how far the time ratio may stray from the work ratio and still "follow" it
FIT_R2 = 0.9  # how well the line must fit the medians to explain the gap


def spread(samples: list[float]) -> dict:
    """The median of `samples` and their range."""
    return {"median": median(samples), "lo": min(samples), "hi": max(samples)}


def fit(points: list[tuple[int, float]]) -> dict:
    """The straight line through (tokens, seconds) points, seconds = per_step + per_token × tokens (least squares),
    and r², the share of the seconds' variance it explains."""
    n = len(points)
    mx, my = sum(x for x, _ in points) / n, sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    slope = sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else 0.0
    a = my - slope * mx
    total = sum((y - my) ** 2 for _, y in points)
    left = sum((y - a - slope * x) ** 2 for x, y in points)
    return {"per_step_s": a, "per_token_s": slope, "r2": 1 - left / total if total else 0.0}


def verdict(naive: list[list[float]], cached: list[list[float]], naive_tokens: list[int],
            cached_tokens: list[int]) -> dict:
    """naive[r][i], cached[r][i]: run r's seconds for step i of each loop; *_tokens[i]: the tokens step i sent."""
    runs = len(naive)
    ratios = [sum(n) / sum(c) for n, c in zip(naive, cached, strict=True)]
    work = sum(naive_tokens) / sum(cached_tokens)
    ratio = spread(ratios)
    lo, hi = ratio["lo"], ratio["hi"]
    enough = runs >= MIN_RUNS
    faster = None if not enough else "cached" if lo > 1 else "naive" if hi < 1 else None
    gap = None
    if faster == "cached":
        gap = ("narrower" if hi < work / MARGIN else "wider" if lo > work * MARGIN
               else "follows" if work / MARGIN <= lo and hi <= work * MARGIN else None)
    steps = len(naive_tokens)
    medians = ([(naive_tokens[i], median(r[i] for r in naive)) for i in range(steps)]
               + [(cached_tokens[i], median(r[i] for r in cached)) for i in range(steps)])
    line = fit(medians)
    fixed_share = fixed_share_one = None
    if gap == "narrower" and line["per_step_s"] > 0 and line["per_token_s"] > 0 and line["r2"] >= FIT_R2:
        fixed = steps * line["per_step_s"]
        fixed_share = fixed / (fixed + line["per_token_s"] * sum(cached_tokens))
        # the same part of one step that holds a single token (each cached step after the first)
        fixed_share_one = line["per_step_s"] / (line["per_step_s"] + line["per_token_s"])
    return {"runs": runs, "enough": enough, "work_ratio": work, "time_ratio": ratio, "faster": faster, "gap": gap,
            "fit": line, "fixed_share": fixed_share,
            "fixed_share_one": fixed_share_one}
