"""What comes out (seed §03): logits → probabilities → the next token.

The processors run in this order on the full vocabulary's logits (never a truncated top-N):
logit bias → penalties → the grammar's mask (structured output) → temperature → top-k → top-p → min-p → sample
(or argmax when temperature is 0).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import torch

from .sampling_params import SamplingParams, check_temperature

# The seed's five candidates for "the cat sat on the ___" (§03). Only mat = 4.0 is in the text; the others
# are one set that reproduces its two facts: mat holds 68.7% at T = 1, and top-p 0.9 keeps mat and rug.
SEED_CANDIDATES = {"mat": 4.0, "rug": 2.9, "floor": 1.2, "sofa": 0.8, "roof": 0.1}


# float32's range: every processed logit stays in it (or is -inf, a removed token), so every accepted setting
# gives a distribution. A temperature that float32 would round to 0 or infinity is taken at the nearest value
# it can hold: the T → 0 limit (argmax, ties shared) and the T → ∞ limit (uniform over what the filters keep).
F32 = torch.finfo(torch.float32)


def scale(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """(logits - max) / T in float32, T > 0: the largest logit becomes 0, the rest ≤ 0 (or -inf). Subtracting the
    max first means no T overflows the sum of exponentials."""
    t = min(max(temperature, F32.tiny), F32.max)
    return (logits - logits.max(dim=-1, keepdim=True).values) / t


def probabilities(logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """softmax(logits / T) in float32; T = 0 puts all mass on the argmax. Never overflows, never NaN for finite
    logits: even T = 1e-50, which float32 cannot hold, gives the T → 0 limit."""
    check_temperature(temperature)
    logits = logits.float()
    if temperature == 0:
        return torch.nn.functional.one_hot(logits.argmax(-1), logits.shape[-1]).float()
    return torch.softmax(scale(logits, temperature), dim=-1)


def apply_penalties(logits: torch.Tensor, prompt_ids: list[int], output_ids: list[int],
                    params: SamplingParams) -> torch.Tensor:
    """Repetition penalty (divide positive / multiply negative logits of every token seen in prompt or
    output), then OpenAI's presence and frequency penalties (over the output only). The penalty is applied in
    float64 and the result held inside float32's range: a penalty of 1e-300 makes seen tokens as likely as
    float32 allows, never infinite (∞ - ∞ is NaN)."""
    logits = logits.clone()
    if params.repetition_penalty != 1.0:
        seen = torch.tensor(sorted(set(prompt_ids) | set(output_ids)), dtype=torch.long, device=logits.device)
        if seen.numel():
            picked, r = logits[seen].double(), params.repetition_penalty
            penalized = torch.where(picked > 0, picked / r, picked * r).clamp(-F32.max, F32.max)
            logits[seen] = penalized.to(logits.dtype)
    if output_ids and (params.presence_penalty or params.frequency_penalty):
        counts = Counter(output_ids)
        ids = torch.tensor(list(counts), dtype=torch.long, device=logits.device)
        n = torch.tensor(list(counts.values()), dtype=logits.dtype, device=logits.device)
        logits[ids] -= params.presence_penalty + params.frequency_penalty * n
    return logits


def top_k_mask(logits: torch.Tensor, k: int) -> torch.Tensor:
    """Keep the k highest logits; k never adapts to the distribution's shape. k = 1 is argmax."""
    if k <= 0 or k >= logits.shape[-1]:
        return logits
    kth = torch.topk(logits, k).values[..., -1:]
    return logits.masked_fill(logits < kth, float("-inf"))


def top_p_mask(logits: torch.Tensor, p: float) -> torch.Tensor:
    """Keep the smallest set of tokens whose cumulative probability reaches p (sharper → fewer); the top token
    always stays (a p that float32 rounds to 0 would otherwise remove every token)."""
    if p >= 1.0:
        return logits
    sorted_logits, order = torch.sort(logits, descending=True)
    probs = torch.softmax(sorted_logits, dim=-1)
    before = torch.cumsum(probs, dim=-1) - probs  # mass of the strictly better tokens
    drop_sorted = before >= p  # already reached p without this token
    drop_sorted[..., 0] = False
    drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
    return logits.masked_fill(drop, float("-inf"))


def min_p_mask(logits: torch.Tensor, min_p: float) -> torch.Tensor:
    """Keep tokens whose probability is at least min_p × the top token's."""
    if min_p <= 0:
        return logits
    probs = torch.softmax(logits, dim=-1)
    return logits.masked_fill(probs < min_p * probs.max(dim=-1, keepdim=True).values, float("-inf"))


def process(logits: torch.Tensor, params: SamplingParams, prompt_ids: list[int] = (),
            output_ids: list[int] = (), allowed: torch.Tensor | None = None) -> torch.Tensor:
    """The logits the next token is drawn from: (vocab_size,) float32, -inf where a filter removed a token, or
    where `allowed` ((vocab_size,) bool, a grammar's mask) is False. Plain greedy gets `logits` itself (as float32):
    nothing to copy."""
    logits = logits.float()
    if params.logit_bias:
        ids = torch.tensor(list(params.logit_bias), dtype=torch.long, device=logits.device)
        bias = torch.tensor(list(params.logit_bias.values()), dtype=logits.dtype, device=logits.device)
        logits = logits.index_add(0, ids, bias)
    if params.penalized:
        logits = apply_penalties(logits, list(prompt_ids), list(output_ids), params)
    if allowed is not None:
        logits = logits.masked_fill(~allowed.to(logits.device), float("-inf"))
    if params.greedy:
        return logits
    logits = scale(logits, params.temperature)
    logits = top_k_mask(logits, params.top_k)
    logits = top_p_mask(logits, params.top_p)
    return min_p_mask(logits, params.min_p)


def make_generator(params: SamplingParams, device: torch.device | str = "cpu") -> torch.Generator:
    """The random stream for one request: seeded when the request names a seed."""
    g = torch.Generator(device=device)
    if params.seed is not None:
        g.manual_seed(params.seed)
    else:
        g.seed()
    return g


def choose(processed: torch.Tensor, params: SamplingParams, generator: torch.Generator) -> int:
    """The next token id: argmax when greedy, else one draw from softmax(processed)."""
    if params.greedy:
        return argmax(processed)
    probs = torch.softmax(processed, dim=-1)
    return int(torch.multinomial(probs, 1, generator=generator))


def argmax(logits: torch.Tensor) -> int:
    """The first index of the largest value (a NaN counts as the largest, as in torch.argmax). On the CPU numpy's,
    about 9× faster than torch's on a vocabulary row — once a token, it shows in decode."""
    if logits.device.type == "cpu":
        return int(np.argmax(logits.detach().float().numpy()))
    return int(logits.argmax())


def next_token(logits: torch.Tensor, params: SamplingParams, generator: torch.Generator, prompt_ids: list[int],
               output_ids: list[int], greedy: int | None = None,
               allowed: torch.Tensor | None = None) -> tuple[int, TokenLogprob | None]:
    """One step of sampling: the chosen id, and its log-probability (under the model's own distribution) when the
    params ask for them. `greedy`: the logits' argmax where the caller already has it (the native decode step
    finds it as it writes them). `allowed`: the grammar's mask, for structured output."""
    if greedy is not None and params.argmax_only:
        token = greedy
    else:
        token = choose(process(logits, params, prompt_ids, output_ids, allowed), params, generator)
    return token, (logprob_of(logits, token, params.logprobs) if params.logprobs is not None else None)


@dataclass
class TokenLogprob:
    """The chosen token's log-probability under the model's own distribution, and its top alternatives."""

    token_id: int
    logprob: float
    top: list[tuple[int, float]]


def logprob_of(logits: torch.Tensor, token_id: int, n_top: int) -> TokenLogprob:
    logp = torch.log_softmax(logits.float(), dim=-1)
    top = torch.topk(logp, n_top) if n_top else None
    alternatives = list(zip(top.indices.tolist(), top.values.tolist(), strict=True)) if top is not None else []
    return TokenLogprob(token_id, float(logp[token_id]), alternatives)
