"""The loop (seed §04 and §07): run, sample, append, run again — cached or naive.

    cache = None
    while len(tokens) < max_len:
        x = tokens[-1:] if cache else tokens
        logits, cache = model(x, cache)
        next_id = sample(logits[-1], ...)
        tokens.append(next_id)
        if next_id == EOS_ID: break
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import torch

from .collapse import Loop, detect_loop
from .detokenize import TextStream
from .pipeline import Pipeline
from .sampling import SamplingParams, TokenLogprob, make_generator, next_token

BURST = 8  # greedy steps one native call runs before Python takes the tokens (text streams in bursts this long)


@dataclass
class GenerationResult:
    """What one generation produced, why it stopped, and what it cost."""

    prompt_ids: list[int]
    token_ids: list[int]  # generated tokens; an end-of-turn token that stopped generation is not included
    text: str
    stop_reason: str  # "eos", "stop" (a stop string) or "length" (max_tokens or the context length)
    mode: str  # "cached" or "naive"
    work: list[int] = field(default_factory=list)  # tokens run through all N blocks at each step
    logprobs: list[TokenLogprob] = field(default_factory=list)
    prefill_seconds: float = 0.0  # the first step: prompt in, first token out
    decode_seconds: float = 0.0  # every later step
    loop: Loop | None = None

    @property
    def prefill_tokens_per_s(self) -> float:
        return len(self.prompt_ids) / self.prefill_seconds if self.prefill_seconds else 0.0

    @property
    def decode_tokens_per_s(self) -> float:
        steps = len(self.work) - 1
        return steps / self.decode_seconds if self.decode_seconds and steps > 0 else 0.0

    def to_dict(self) -> dict:
        return {
            "prompt_tokens": len(self.prompt_ids), "token_ids": self.token_ids, "text": self.text,
            "stop_reason": self.stop_reason, "mode": self.mode, "work": self.work,
            "time_to_first_token_s": self.prefill_seconds, "prefill_tokens_per_s": self.prefill_tokens_per_s,
            "decode_tokens_per_s": self.decode_tokens_per_s, "loop": self.loop.to_dict() if self.loop else None,
            "logprobs": [{"token_id": p.token_id, "logprob": p.logprob, "top": p.top} for p in self.logprobs] or None,
        }


class Generation:
    """One generation, streamed: iterate for text as it is produced; `.result` once it is done."""

    def __init__(self, pipeline: Pipeline, prompt: str | list[int], params: SamplingParams | None = None,
                 naive: bool = False):
        self.pipeline, self.params, self.naive = pipeline, params or SamplingParams(), naive
        self.prompt_ids = pipeline.encode(prompt) if isinstance(prompt, str) else list(prompt)
        pipeline.check_prompt(self.prompt_ids)
        self.result: GenerationResult | None = None

    def __iter__(self) -> Iterator[str]:
        return self._run()

    @torch.inference_mode()
    def _run(self) -> Iterator[str]:
        p, model, prompt = self.params, self.pipeline.model, self.prompt_ids
        context = self.pipeline.config.context_length
        eos = set() if p.ignore_eos or self.pipeline.tokenizer is None else set(self.pipeline.tokenizer.eos_ids)
        stops = tuple(eos)  # what ends a burst in the native loop
        text = TextStream(self.pipeline.tokenizer, p.stop) if self.pipeline.tokenizer is not None else None
        generator = make_generator(p, model.device)
        result = GenerationResult(prompt, [], "", "length", "naive" if self.naive else "cached")
        cache = None if self.naive else model.new_cache(1, min(context, len(prompt) + p.max_tokens))
        x = prompt
        step = None  # the fused native decode, bound once the prompt is in, where it applies (fused_decode)
        last = None  # the newest logits (vocab_size,)
        # plain greedy needs no logits in Python: the native loop runs up to BURST steps back to back
        burst = BURST if p.argmax_only and p.logprobs is None else 1
        room = min(p.max_tokens, context - len(prompt))  # tokens this generation may choose
        started = time.perf_counter()
        while True:
            if self.naive:  # re-run every layer on every token so far
                x, cache = prompt + result.token_ids, model.new_cache(1, len(prompt) + len(result.token_ids))
            chosen: list[int | None] = [None]  # argmaxes the native step found as it wrote the logits
            if step is not None:  # the previous logits are spent: reuse their memory
                last, chosen = step(x[0], cache, min(burst, room - len(result.token_ids)), stops, last)
            else:
                logits, cache = model(torch.tensor([x], device=model.device), cache, last_only=True)
                last = logits[0, -1]
            for i, greedy in enumerate(chosen):  # `last` is the last step's: only plain greedy gets several
                result.work.append(len(x) if i == 0 else 1)
                next_id, logprob = next_token(last, p, generator, prompt, result.token_ids, greedy)
                if logprob is not None:
                    result.logprobs.append(logprob)
                now = time.perf_counter()
                if len(result.work) == 1:
                    result.prefill_seconds, started = now - started, now
                else:
                    result.decode_seconds = now - started
                if next_id in eos:
                    result.stop_reason = "eos"
                    break
                result.token_ids.append(next_id)
                if text is not None:
                    delta = text.add(next_id)
                    if delta:
                        yield delta
                    if text.stopped is not None:
                        result.stop_reason = "stop"
                        break
                if len(result.token_ids) >= room:
                    break
            else:
                x = [next_id]  # cached: only the newest token goes in; its position is the cache's length
                if step is None and not self.naive and model.fused is not None and model.fused.binds(cache):
                    step = model.fused.greedy_steps
                continue
            break  # an end-of-turn token, a stop string or the length ended it
        if text is not None:
            if text.stopped is None:
                tail = text.flush()
                if tail:
                    yield tail
            result.text = text.text
        result.loop = detect_loop(result.token_ids)
        self.result = result


def generate(pipeline: Pipeline, prompt: str | list[int], params: SamplingParams | None = None,
             naive: bool = False) -> GenerationResult:
    """Run a whole generation and return its result."""
    g = Generation(pipeline, prompt, params, naive)
    for _ in g:
        pass
    return g.result
