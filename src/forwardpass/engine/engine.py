"""The engine: runs scheduled steps on the model over the paged cache, samples each request with its own
parameters, and streams outputs. `step()` runs one step; `start()` runs steps in a background thread."""

from __future__ import annotations

import itertools
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..detokenize import TextStream
from ..errors import ContextLengthError, InvariantError
from ..pipeline import Pipeline
from ..sampling import SamplingParams, make_generator, next_token
from .metrics import EngineMetrics
from .paged import BlockPool, PagedBatch
from .scheduler import Scheduler
from .sequence import RequestOutput, Sequence


@dataclass
class EngineConfig:
    kv_cache_bytes: int = 2**30  # the block pool's size
    block_size: int = 16
    max_num_seqs: int = 32  # running requests at once
    max_num_batched_tokens: int = 512  # tokens per step, prefill and decode together
    prefix_caching: bool = True
    checked: bool = False  # assert the pool's invariants after every step


class Engine:
    def __init__(self, pipeline: Pipeline, config: EngineConfig | None = None):
        self.pipeline, self.config = pipeline, config or EngineConfig()
        c, model = pipeline.config, pipeline.model
        per_block = 2 * c.n_layers * c.kv_heads * c.head_dim * self.config.block_size * model.dtype.itemsize
        num_blocks = max(1, self.config.kv_cache_bytes // per_block)
        self.pool = BlockPool(c, num_blocks, self.config.block_size, model.dtype, model.device,
                              self.config.prefix_caching)
        self.scheduler = Scheduler(self.pool, self.config.max_num_seqs, self.config.max_num_batched_tokens)
        self.metrics = EngineMetrics()
        self._ids = itertools.count()
        self._inbox: queue.Queue = queue.Queue()  # (action, payload) from other threads
        self._sequences: dict[str, Sequence] = {}
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._stop = False

    # ---- requests ----------------------------------------------------------------------------------
    def check_request(self, prompt_ids: list[int], params: SamplingParams) -> None:
        """Raise a clear error, before anything is queued, for a request that can never be served."""
        context = self.pipeline.config.context_length
        self.pipeline.check_prompt(prompt_ids)
        if len(prompt_ids) + params.max_tokens > context:
            raise ContextLengthError(f"max_tokens {params.max_tokens} does not fit: the prompt is {len(prompt_ids)} "
                                     f"tokens and the context length is {context}")
        blocks = -(-(len(prompt_ids) + params.max_tokens) // self.pool.block_size)
        if blocks > self.pool.num_blocks:
            raise ContextLengthError(f"the request needs {blocks} KV blocks but the pool holds {self.pool.num_blocks}")

    def submit(self, prompt_ids: list[int], params: SamplingParams,
               on_output: Callable[[RequestOutput], None]) -> str:
        """Queue a request; `on_output` is called from the engine's thread for every step's output."""
        self.check_request(prompt_ids, params)
        request_id = f"req-{next(self._ids)}"
        tok = self.pipeline.tokenizer
        eos = set() if params.ignore_eos or tok is None else set(tok.eos_ids)
        seq = Sequence(request_id, list(prompt_ids), params, make_generator(params, self.pipeline.device),
                       TextStream(tok, params.stop) if tok is not None else None, on_output, eos)
        self._inbox.put(("add", seq))
        self._wake.set()
        return request_id

    def abort(self, request_id: str) -> None:
        """Cancel a request (a client went away); its blocks are freed at the next step boundary."""
        self._inbox.put(("abort", request_id))
        self._wake.set()

    def has_work(self) -> bool:
        return self.scheduler.has_work() or not self._inbox.empty()

    # ---- steps -------------------------------------------------------------------------------------
    def _drain_inbox(self) -> None:
        while not self._inbox.empty():
            action, payload = self._inbox.get_nowait()
            if action == "add":
                self._sequences[payload.request_id] = payload
                self.scheduler.add(payload)
                self.metrics.prompt_tokens.inc(len(payload.prompt_ids))
            elif payload in self._sequences:
                self._finish(self._sequences[payload], "abort", None)

    @torch.inference_mode()
    def step(self) -> None:
        """Admit, schedule, run the model once for decode rows and once for prefill chunks, sample, emit."""
        self._drain_inbox()
        work = self.scheduler.schedule()
        for seq in self.scheduler.rejected:
            self._finish(seq, "abort", None)
        self.scheduler.rejected.clear()
        if work.decode:
            self._run([(s, 1) for s in work.decode])
        if work.prefill:
            self._run(work.prefill)
        self.metrics.observe_pool(self)
        if self.config.checked:
            live = self.scheduler.running + list(self.scheduler.waiting)
            self.pool.check([s.blocks for s in live])
            for s in self.scheduler.running:  # t pairs in exactly ceil(t / block_size) blocks: < 1 block wasted
                if len(s.blocks) != -(-s.num_computed // self.pool.block_size):
                    raise InvariantError(f"{s.request_id}: {len(s.blocks)} blocks for {s.num_computed} pairs")

    def _run(self, batch: list[tuple[Sequence, int]]) -> None:
        model, device = self.pipeline.model, self.pipeline.device
        width = max(n for _, n in batch)
        rows = [s.token_ids[s.num_computed:s.num_computed + n] + [0] * (width - n) for s, n in batch]
        view = PagedBatch(self.pool, [s.blocks for s, _ in batch], [s.num_computed for s, _ in batch])
        logits, _ = model(torch.tensor(rows, device=device), view, n_tokens=[n for _, n in batch], last_only=True)
        for (seq, n), row_logits in zip(batch, logits[:, 0], strict=True):
            seq.num_computed += n
            self._register_full_blocks(seq)
            if seq.to_compute == 0:
                self._sample(seq, row_logits)

    def _register_full_blocks(self, seq: Sequence) -> None:
        bs = self.pool.block_size
        while len(seq.hashes) < seq.num_computed // bs:
            i = len(seq.hashes)
            prefix = seq.hashes[-1] if seq.hashes else 0
            seq.hashes.append(self.pool.register(seq.blocks[i], prefix, seq.token_ids[i * bs:(i + 1) * bs]))

    def _sample(self, seq: Sequence, logits: torch.Tensor) -> None:
        p = seq.params
        token, logprob = next_token(logits, p, seq.generator, seq.prompt_ids, seq.output_ids)
        now = time.perf_counter()
        if seq.first_token_at is None:
            seq.first_token_at = now
            self.metrics.time_to_first_token.observe(now - seq.arrival)
        else:
            self.metrics.inter_token_latency.observe(now - seq.last_token_at)
        seq.last_token_at = now
        if token in seq.eos_ids:
            self._finish(seq, "stop", None, logprob)
            return
        seq.output_ids.append(token)
        self.metrics.generation_tokens.inc()
        delta = seq.text.add(token) if seq.text is not None else ""
        if seq.text is not None and seq.text.stopped is not None:
            self._finish(seq, "stop", token, logprob, delta)
        elif len(seq.output_ids) >= p.max_tokens or seq.num_tokens >= self.pipeline.config.context_length:
            tail = seq.text.flush() if seq.text is not None else ""
            self._finish(seq, "length", token, logprob, delta + tail)
        else:
            seq.on_output(self._output(seq, token, delta, logprob))

    def _output(self, seq: Sequence, token: int | None, text: str, logprob=None, finish: str | None = None):
        return RequestOutput(seq.request_id, token, text, logprob, finish, len(seq.prompt_ids), len(seq.output_ids),
                             seq.cached_tokens)

    def _finish(self, seq: Sequence, reason: str, token: int | None, logprob=None, text: str = "") -> None:
        if seq.finish_reason is not None:
            return
        seq.finish_reason = reason
        self.scheduler.remove(seq)
        self._sequences.pop(seq.request_id, None)
        self.metrics.e2e_latency.observe(time.perf_counter() - seq.arrival)
        seq.on_output(self._output(seq, token, text, logprob, reason))

    # ---- the background loop -----------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="forwardpass-engine", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _loop(self) -> None:
        while not self._stop:
            if not self.has_work():
                self._wake.wait(timeout=0.5)
                self._wake.clear()
                continue
            self.step()

    def run_until_done(self) -> None:
        """Run steps in the caller's thread until every queued request has finished (tests, benchmarks)."""
        while self.has_work():
            self.step()
