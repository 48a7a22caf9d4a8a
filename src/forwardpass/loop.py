"""The loop (seed §04 and §07): run, sample, append, run again — cached or naive. The cached loop is the engine's
(one request is a batch of one); the naive one, kept for teaching, re-runs the whole prefix every step.

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
from dataclasses import dataclass, field, replace

from .article.collapse import Loop, detect_loop
from .errors import ForwardpassError
from .loaded import LoadedModel
from .sampling import SamplingParams, TokenLogprob, make_generator, next_token
from .text.detokenize import TextStream


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

    def __init__(self, loaded: LoadedModel, prompt: str | list[int], params: SamplingParams | None = None,
                 naive: bool = False, speculative: str = "ngram", prompt_cache: str | None = None,
                 prompt_cache_bytes: int | None = None):
        self.loaded, self.params, self.naive = loaded, params or SamplingParams(), naive
        self.speculative = speculative  # the engine's drafting (EngineConfig.speculative)
        self.prompt_cache = {"prompt_cache": prompt_cache}  # the engine's prompt cache on disk (EngineConfig's)
        if prompt_cache_bytes is not None:
            self.prompt_cache["prompt_cache_bytes"] = prompt_cache_bytes
        if not isinstance(prompt, str) and not all(isinstance(i, int) and not isinstance(i, bool) for i in prompt):
            raise ForwardpassError("a prompt is text or token ids; to answer chat messages, use fp.chat(messages)")
        self.prompt_ids = loaded.encode(prompt) if isinstance(prompt, str) else list(prompt)
        loaded.check_prompt(self.prompt_ids)
        if naive and self.params.constraint is not None:
            raise ForwardpassError("structured output runs on the cached loop (the engine), not the naive one")
        self.result: GenerationResult | None = None

    def __iter__(self) -> Iterator[str]:
        return self._run() if self.naive else self._serve()

    def _serve(self) -> Iterator[str]:
        """The cached loop is the engine's (engine/): this request is a batch of one over a pool just large enough
        for it, its prompt prefilled in steps of the engine's token budget (512: a long prompt's activations and
        attention stay the size of one chunk's), then decoded (greedy bursts included) and stopped as the server's
        requests are."""
        from .engine import BlockPool, Engine, EngineConfig

        loaded, prompt, p = self.loaded, self.prompt_ids, self.params
        room = min(p.max_tokens, loaded.config.context_length - len(prompt))  # tokens this generation may choose
        config = EngineConfig(max_num_seqs=1, prefix_caching=False, checked=getattr(loaded.model, "checked", False),
                              speculative=self.speculative, **self.prompt_cache)
        blocks = -(-(len(prompt) + room) // config.block_size)
        config.kv_cache_bytes = blocks * BlockPool.block_bytes(loaded.config, config.block_size, loaded.kv_format())
        engine = Engine(loaded, config)
        outputs: list = []
        engine.submit(prompt, replace(p, max_tokens=room), outputs.append)
        result = GenerationResult(prompt, [], "", "length", "cached")
        started, first = time.perf_counter(), None
        while True:
            engine.step()
            for out in outputs:
                if out.error is not None or out.finish_reason in ("error", "abort"):
                    raise ForwardpassError(f"generation failed: {out.error.message if out.error else 'aborted'}")
                now = time.perf_counter()
                if first is None:
                    first = now
                    result.prefill_seconds = now - started
                result.decode_seconds = now - first
                result.work.append(len(prompt) if not result.work else 1)
                if out.logprob is not None:
                    result.logprobs.append(out.logprob)
                if out.token_id is not None:
                    result.token_ids.append(out.token_id)
                result.text += out.text
                if out.text:
                    yield out.text
                if out.finish_reason is not None:
                    # "stop" is an end-of-turn token (not kept) or a stop string (its token kept)
                    result.stop_reason = ("length" if out.finish_reason == "length"
                                          else "eos" if out.token_id is None else "stop")
                    result.loop = detect_loop(result.token_ids)
                    self.result = result
                    return
            outputs.clear()

    def _run(self) -> Iterator[str]:
        """The naive loop (seed §04): no cache kept between steps, every step runs every layer on every token so
        far. The same tokens as the cached loop, at the work cost.py counts for it. It calls the PyTorch model."""
        if self.loaded.native:
            raise ForwardpassError("the naive loop runs the PyTorch model: load with backend='torch'")
        import torch

        return torch.inference_mode()(self._naive)()

    def _naive(self) -> Iterator[str]:
        import torch

        p, model, prompt = self.params, self.loaded.model, self.prompt_ids
        context = self.loaded.config.context_length
        eos = p.end_ids(self.loaded.tokenizer.eos_ids if self.loaded.tokenizer is not None else [])
        text = TextStream(self.loaded.tokenizer, p.stop) if self.loaded.tokenizer is not None else None
        generator = make_generator(p)
        result = GenerationResult(prompt, [], "", "length", "naive")
        room = min(p.max_tokens, context - len(prompt))  # tokens this generation may choose
        started = time.perf_counter()
        while True:
            x = prompt + result.token_ids
            logits, _ = model(torch.tensor([x], device=model.device), model.new_cache(1, len(x)), last_only=True)
            result.work.append(len(x))
            next_id, logprob = next_token(logits[0, -1], p, generator, prompt, result.token_ids)
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
        if text is not None:
            if text.stopped is None:
                tail = text.flush()
                if tail:
                    yield tail
            result.text = text.text
        result.loop = detect_loop(result.token_ids)
        self.result = result


def generate(loaded: LoadedModel, prompt: str | list[int], params: SamplingParams | None = None,
             naive: bool = False, speculative: str = "ngram") -> GenerationResult:
    """Run a whole generation and return its result."""
    g = Generation(loaded, prompt, params, naive, speculative)
    for _ in g:
        pass
    return g.result


class LLM(LoadedModel):
    """A loaded model with the loop's conveniences (what `forwardpass.load()` gives): `complete` a prompt, or answer
    `chat` messages."""

    def complete(self, prompt: str | list[int], stream: bool = False, **sampling):
        """Continue `prompt` (text or ids): the GenerationResult (`.text`, `.token_ids`, `.stop_reason`, …), or with
        `stream` a Generation to iterate for text as it comes (then `.result`). `sampling`: SamplingParams' fields
        (`temperature=0` greedy, `max_tokens`, `stop`, `seed`, …)."""
        params = SamplingParams(**sampling)
        return Generation(self, prompt, params) if stream else generate(self, prompt, params)

    def chat(self, messages: list[dict], stream: bool = False, **sampling):
        """The assistant's reply to `messages` ({"role", "content"} dicts, as the chat API takes them), rendered through
        the model's chat template: as `complete`, whole or streamed."""
        if self.tokenizer is None or not self.tokenizer.chat_template:
            raise ForwardpassError(f"{self.source}: this model has no chat template: use complete(prompt)")
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            raise ForwardpassError("messages must be a list of {'role': …, 'content': …} dicts")
        return self.complete(self.tokenizer.encode_chat(messages, True, None), stream, **sampling)
