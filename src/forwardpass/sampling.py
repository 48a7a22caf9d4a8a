"""What comes out (seed §03): logits → probabilities → the next token.

The processors run in this order on the full vocabulary's logits (never a truncated top-N):
logit bias → penalties → the grammar's mask (structured output) → temperature → top-k → top-p → min-p → sample
(or argmax when temperature is 0).

Everything here is numpy, one sampler for every device: logits come in as a float32 array (vocab_size,); a PyTorch
tensor (on any device) is taken too, read as an array once where a function starts (`values`), without this module
importing PyTorch. The processors never write into their input (it may be a view of the engine's own buffer).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from .sampling_params import SamplingParams, check_temperature

# The seed's five candidates for "the cat sat on the ___" (§03). Only mat = 4.0 is in the text; the others
# are one set that reproduces its two facts: mat holds 68.7% at T = 1, and top-p 0.9 keeps mat and rug.
SEED_CANDIDATES = {"mat": 4.0, "rug": 2.9, "floor": 1.2, "sofa": 0.8, "roof": 0.1}


# float32's range: every processed logit stays in it (or is -inf, a removed token), so every accepted setting
# gives a distribution. A temperature that float32 would round to 0 or infinity is taken at the nearest value
# it can hold: the T → 0 limit (argmax, ties shared) and the T → ∞ limit (uniform over what the filters keep).
F32 = np.finfo(np.float32)
NEG_INF = np.float32(-np.inf)
TOP_P_HEAD = 64  # the likeliest tokens top-p sorts first (×8 until they hold p), not the whole vocabulary


def values(x: Any, dtype: type = np.float32) -> np.ndarray:
    """`x` as a numpy array of `dtype`: an array as it is (no copy when the dtype matches), a PyTorch tensor's
    values (recognized by its `detach`, so PyTorch is never imported here: a view of a float32 CPU tensor's memory,
    else a copy on the CPU), a list converted."""
    if not isinstance(x, np.ndarray) and hasattr(x, "detach"):
        x = x.detach()
        x = (x.float() if x.is_floating_point() else x).cpu().numpy()  # bfloat16 has no numpy dtype
    return np.asarray(x, dtype=dtype)


def softmax(logits: np.ndarray) -> np.ndarray:
    """softmax over the last axis, in the logits' dtype; the max is subtracted first, so nothing overflows."""
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def scale(logits: Any, temperature: float) -> np.ndarray:
    """(logits - max) / T in float32, T > 0: the largest logit becomes 0, the rest ≤ 0 (or -inf). Subtracting the
    max first means no T overflows the sum of exponentials."""
    logits = values(logits)
    t = np.float32(min(max(temperature, float(F32.tiny)), float(F32.max)))
    with np.errstate(over="ignore"):  # a tiny T sends the far tokens to -inf: the T → 0 limit
        return (logits - logits.max(axis=-1, keepdims=True)) / t


def probabilities(logits: Any, temperature: float = 1.0) -> np.ndarray:
    """softmax(logits / T) in float32 over the last axis; T = 0 puts all mass on the argmax. Never overflows, never
    NaN for finite logits: even T = 1e-50, which float32 cannot hold, gives the T → 0 limit."""
    check_temperature(temperature)
    logits = values(logits)
    if temperature == 0:
        one_hot = np.zeros_like(logits)
        np.put_along_axis(one_hot, logits.argmax(axis=-1)[..., None], 1.0, axis=-1)
        return one_hot
    return softmax(scale(logits, temperature))


def apply_penalties(logits: Any, prompt_ids: list[int], output_ids: list[int],
                    params: SamplingParams) -> np.ndarray:
    """Repetition penalty (divide positive / multiply negative logits of every token seen in prompt or
    output), then OpenAI's presence and frequency penalties (over the output only). The penalty is applied in
    float64 and the result held inside float32's range: a penalty of 1e-300 makes seen tokens as likely as
    float32 allows, never infinite (∞ - ∞ is NaN). A new (vocab_size,) float32 array."""
    logits = values(logits).copy()
    if params.repetition_penalty != 1.0:
        seen = np.array(sorted(set(prompt_ids) | set(output_ids)), dtype=np.int64)
        if seen.size:
            picked, r = logits[seen].astype(np.float64), params.repetition_penalty
            with np.errstate(over="ignore"):  # held in range by the clip
                penalized = np.where(picked > 0, picked / r, picked * r)
            logits[seen] = np.clip(penalized, -F32.max, F32.max).astype(np.float32)
    if output_ids and (params.presence_penalty or params.frequency_penalty):
        counts = Counter(output_ids)
        ids = np.fromiter(counts.keys(), dtype=np.int64, count=len(counts))
        n = np.fromiter(counts.values(), dtype=np.float32, count=len(counts))
        logits[ids] -= params.presence_penalty + params.frequency_penalty * n  # float32, as the logits
    return logits


def top_k_mask(logits: Any, k: int) -> np.ndarray:
    """Keep the k highest logits (every token tied with the k-th too); k never adapts to the distribution's shape.
    k = 1 is argmax."""
    logits = values(logits)
    n = logits.shape[-1]
    if k <= 0 or k >= n:
        return logits
    kth = np.partition(logits, n - k, axis=-1)[..., n - k, None]  # the k-th largest
    return np.where(logits < kth, NEG_INF, logits)


def top_p_mask(logits: Any, p: float) -> np.ndarray:
    """Keep the smallest set of tokens whose cumulative probability reaches p (sharper → fewer); the top token
    always stays (a p that float32 rounds to 0 would otherwise remove every token). Among equal logits the lower id
    counts first. (vocab_size,) in and out."""
    logits = values(logits)
    if p >= 1.0:
        return logits
    weights = np.exp(logits - logits.max())
    total = weights.sum()
    if not np.isfinite(total):  # a NaN logit, or none left: `choose` refuses it
        return logits
    probs, p32 = weights / total, np.float32(p)
    live = np.flatnonzero(logits > NEG_INF)  # a token already removed (top-k) stays removed
    k = TOP_P_HEAD
    while True:  # sort only the likeliest tokens, more of them until they hold p: the rest are dropped unsorted
        head = live
        if k < live.size:
            kth = np.partition(logits[live], live.size - k)[live.size - k]
            head = live[logits[live] >= kth]  # the k best and every token tied with the k-th
        head = head[np.argsort(-logits[head], kind="stable")]  # best first, ties by lower id
        mass = np.cumsum(probs[head])  # float32, in that order
        if head.size == live.size or mass[-1] >= p32:
            break
        k *= 8
    keep = mass - probs[head] < p32  # the strictly better tokens' mass has not reached p yet
    keep[0] = True
    out = np.full_like(logits, NEG_INF)
    out[head[keep]] = logits[head[keep]]
    return out


def min_p_mask(logits: Any, min_p: float) -> np.ndarray:
    """Keep tokens whose probability is at least min_p × the top token's."""
    logits = values(logits)
    if min_p <= 0:
        return logits
    probs = softmax(logits)
    return np.where(probs < np.float32(min_p) * probs.max(axis=-1, keepdims=True), NEG_INF, logits)


def process(logits: Any, params: SamplingParams, prompt_ids: list[int] = (),
            output_ids: list[int] = (), allowed: Any = None) -> np.ndarray:
    """The logits the next token is drawn from: (vocab_size,) float32, -inf where a filter removed a token, or
    where `allowed` ((vocab_size,) bool, a grammar's mask) is False. Plain greedy gets `logits` itself (as float32):
    nothing to copy."""
    logits = values(logits)
    if params.logit_bias:
        ids = np.fromiter(params.logit_bias.keys(), dtype=np.int64, count=len(params.logit_bias))
        bias = np.fromiter(params.logit_bias.values(), dtype=np.float32, count=len(params.logit_bias))
        logits = logits.copy()
        logits[ids] += bias  # the ids are a dict's keys: each once
    if params.penalized:
        logits = apply_penalties(logits, list(prompt_ids), list(output_ids), params)
    if allowed is not None:
        logits = np.where(values(allowed, np.bool_), logits, NEG_INF)
    if params.greedy:
        return logits
    logits = scale(logits, params.temperature)
    logits = top_k_mask(logits, params.top_k)
    logits = top_p_mask(logits, params.top_p)
    return min_p_mask(logits, params.min_p)


def make_generator(params: SamplingParams) -> np.random.Generator:
    """The random stream for one request (PCG64): seeded when the request names a seed, else fresh entropy. The
    same stream on every device: sampling runs on the CPU."""
    return np.random.Generator(np.random.PCG64(params.seed))


def choose(processed: Any, params: SamplingParams, generator: np.random.Generator) -> int:
    """The next token id: argmax when greedy, else one draw from softmax(processed) by inverse CDF over float64
    probabilities, with exactly one `generator.random()` per token (verifying a draft samples its positions in
    order, so it consumes the same random numbers as plain decoding)."""
    if params.greedy:
        return argmax(processed)
    x = values(processed, np.float64)
    with np.errstate(invalid="ignore"):
        weights = np.exp(x - x.max())  # the max weighs 1: the total is ≥ 1; removed tokens weigh 0
    cdf = np.cumsum(weights)
    if np.isnan(cdf[-1]):  # a NaN logit, +inf, or every token removed
        raise ValueError("no token to draw: the processed logits hold NaN, +inf or no finite value")
    token = int(np.searchsorted(cdf, generator.random() * cdf[-1], side="right"))  # the first cdf past the draw
    if token == len(cdf):  # the draw times the total rounded up to the total
        token = int(np.flatnonzero(weights)[-1])
    return token


def argmax(logits: Any) -> int:
    """The first index of the largest value (a NaN counts as the largest, as in numpy and torch.argmax)."""
    return int(np.argmax(values(logits)))


def next_token(logits: Any, params: SamplingParams, generator: np.random.Generator, prompt_ids: list[int],
               output_ids: list[int], greedy: int | None = None,
               allowed: Any = None) -> tuple[int, TokenLogprob | None]:
    """One step of sampling: the chosen id, and its log-probability (under the model's own distribution) when the
    params ask for them. `logits`: (vocab_size,) float32 (a tensor is read as an array once, here). `greedy`: the
    logits' argmax where the caller already has it (the native decode step finds it as it writes them). `allowed`:
    the grammar's mask, (vocab_size,) bool, for structured output."""
    if greedy is not None and params.argmax_only:
        token = greedy
    else:
        logits = values(logits)
        token = choose(process(logits, params, prompt_ids, output_ids, allowed), params, generator)
    return token, (logprob_of(logits, token, params.logprobs) if params.logprobs is not None else None)


@dataclass
class TokenLogprob:
    """The chosen token's log-probability under the model's own distribution, and its top alternatives."""

    token_id: int
    logprob: float
    top: list[tuple[int, float]]


def logprob_of(logits: Any, token_id: int, n_top: int) -> TokenLogprob:
    """log softmax(logits) at `token_id`, computed in float32, and the n_top likeliest tokens with theirs: by
    log-probability descending, equal ones by lower id first."""
    logits = values(logits)
    shifted = logits - logits.max()
    logp = shifted - np.log(np.exp(shifted).sum())
    top: list[tuple[int, float]] = []
    if n_top > 0:
        n = min(n_top, logp.size)
        kth = np.partition(logp, logp.size - n)[logp.size - n]
        candidates = np.flatnonzero(logp >= kth)  # the top n and every token tied with the last, by id
        best = candidates[np.argsort(-logp[candidates], kind="stable")[:n]]
        top = [(int(i), float(logp[i])) for i in best]
    return TokenLogprob(token_id, float(logp[token_id]), top)
