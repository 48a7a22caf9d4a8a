"""The engine: runs scheduled steps on the model over the paged cache, samples each request with its own
parameters, and streams outputs. `step()` runs one step; `start()` runs steps in a background thread.

No request can stop the others: whatever goes wrong with one request (its sampling, its output callback, the
forward pass of the batch it ran in) ends that request with finish reason "error" and a message, and the loop
goes on. A failure of the loop itself (the scheduler, the pool) is logged, ends every request in flight, and
leaves `failure` set: the server then answers 503 on /health so that a supervisor restarts it."""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..constraints import Grammar, Grammars
from ..detokenize import TextStream
from ..errors import ConstraintError, ContextLengthError, EngineUnavailableError, ForwardpassError, InvariantError
from ..pipeline import Pipeline
from ..sampling import SamplingParams, make_generator, next_token
from .metrics import EngineMetrics
from .paged import BlockPool, PagedBatch
from .scheduler import Scheduler
from .sequence import Error, RequestOutput, Sequence

log = logging.getLogger("forwardpass.engine")
BURST = 8  # greedy steps one native call runs before Python takes the tokens (text streams in bursts this long)


@dataclass
class EngineConfig:
    kv_cache_bytes: int = 2**30  # the block pool's size
    block_size: int = 16
    max_num_seqs: int = 32  # running requests at once
    max_num_batched_tokens: int = 512  # tokens per step, prefill and decode together
    prefix_caching: bool = True
    checked: bool = False  # assert the pool's invariants after every step, and at every cache write
    request_timeout: float | None = None  # seconds from arrival after which a request is ended ("abort")


def prefill_groups(prefill: list[tuple[Sequence, int]]) -> list[list[tuple[Sequence, int]]]:
    """Prefill chunks in batches the PyTorch blocks run padded to their longest row: longest first, a row joins a
    batch while the padded tokens stay within twice the real ones (a 512-token prompt beside 15 short ones would
    otherwise run 16 × 512 positions)."""
    groups: list[list[tuple[Sequence, int]]] = []
    for row in sorted(prefill, key=lambda r: -r[1]):
        group = groups[-1] if groups else None
        if group is not None and (len(group) + 1) * group[0][1] <= 2 * (sum(n for _, n in group) + row[1]):
            group.append(row)
        else:
            groups.append([row])
    return groups


class Engine:
    def __init__(self, pipeline: Pipeline, config: EngineConfig | None = None):
        self.pipeline, self.config = pipeline, config or EngineConfig()
        c, model = pipeline.config, pipeline.model
        kv = pipeline.kv_dtype()
        num_blocks = max(1, self.config.kv_cache_bytes // BlockPool.block_bytes(c, self.config.block_size, kv))
        self.pool = BlockPool(c, num_blocks, self.config.block_size, kv, model.device, self.config.prefix_caching)
        self.scheduler = Scheduler(self.pool, self.config.max_num_seqs, self.config.max_num_batched_tokens)
        self.metrics = EngineMetrics()
        self.grammars = Grammars(pipeline.tokenizer, c.vocab_size)  # structured output's compiled constraints
        self._ids = itertools.count()
        self._inbox: queue.Queue = queue.Queue()  # (action, payload) from other threads
        self._sequences: dict[str, Sequence] = {}
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._stop = False
        self._admission = threading.Lock()
        self.failure: str | None = None  # why the loop died; nothing is admitted after it
        self._drain_at: float | None = None  # draining: nothing admitted, everything ended at this time

    # ---- requests ----------------------------------------------------------------------------------
    def check_request(self, prompt_ids: list[int], params: SamplingParams) -> None:
        """Raise a clear error, before anything is queued, for a request that can never be served."""
        context = self.pipeline.config.context_length
        self.pipeline.check_prompt(prompt_ids)
        if len(prompt_ids) + params.max_tokens > context:
            raise ContextLengthError(f"max_tokens {params.max_tokens} does not fit: the prompt is {len(prompt_ids)} "
                                     f"tokens and the context length is {context}", "max_tokens")
        vocab = self.pipeline.config.vocab_size
        for what, ids in (("logit_bias", params.logit_bias), ("stop_token_ids", params.stop_token_ids)):
            if any(token_id >= vocab for token_id in ids):
                raise ForwardpassError(f"{what} names token {max(ids)}: the vocabulary has {vocab}", what)
        blocks = -(-(len(prompt_ids) + params.max_tokens) // self.pool.block_size)
        if blocks > self.pool.num_blocks:
            raise ContextLengthError(f"the request needs {blocks} KV blocks but the pool holds {self.pool.num_blocks}")

    def token_room(self, prompt_ids: list[int]) -> int:
        """The most tokens a request with this prompt may ask for: what the context and the pool leave."""
        pool_tokens = self.pool.num_blocks * self.pool.block_size
        return min(self.pipeline.config.context_length, pool_tokens) - len(prompt_ids)

    def submit(self, prompt_ids: list[int], params: SamplingParams, on_output: Callable[[RequestOutput], None],
               grammar: Grammar | None = None, arrival: float | None = None) -> str:
        """Queue a request; `on_output` is called from the engine's thread for every step's output. `grammar`:
        params.constraint already compiled (`grammars.submit`), else it is compiled here. `arrival`: when the
        request arrived, if before now (its time limit counts from then)."""
        self.check_request(prompt_ids, params)
        request_id = f"req-{next(self._ids)}"
        tok = self.pipeline.tokenizer
        eos = params.end_ids(tok.eos_ids if tok is not None else [])
        seq = Sequence(request_id, list(prompt_ids), params, make_generator(params, self.pipeline.device),
                       TextStream(tok, params.stop) if tok is not None else None, on_output, eos)
        if params.constraint is not None:  # a grammar that cannot be is the caller's error
            seq.matcher = (grammar or self.grammars.compile(params.constraint)).matcher()
        if arrival is not None:
            seq.arrival = arrival
        if self.config.request_timeout is not None:
            seq.deadline = seq.arrival + self.config.request_timeout
        with self._admission:  # never queued after a failed loop took its last look at the inbox
            self.check_available()
            self._inbox.put(("add", seq))
        self._wake.set()
        return request_id

    def check_available(self) -> None:
        """Raise EngineUnavailableError if the engine takes no new requests (it failed, or it is shutting down)."""
        if self.failure is not None:
            raise EngineUnavailableError(f"the engine stopped after an internal error: {self.failure}")
        if self._drain_at is not None:
            raise EngineUnavailableError("the server is shutting down")

    def abort(self, request_id: str) -> None:
        """Cancel a request (a client went away); its blocks are freed at the next step boundary."""
        self._inbox.put(("abort", request_id))
        self._wake.set()

    def drain(self, grace: float) -> None:
        """Shut down gently: admit nothing more, let requests in flight finish for `grace` seconds, then end
        the rest ("abort", with a message saying the server is shutting down)."""
        if self._drain_at is None:
            self._drain_at = time.perf_counter() + grace
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

    def _end_overdue(self) -> None:
        """End the requests past their time limit, and every request once a shutdown's grace period is over."""
        now = time.perf_counter()
        if self._drain_at is not None and now >= self._drain_at:
            for seq in list(self._sequences.values()):
                self._finish(seq, "abort", None, error=Error("the server is shutting down", "shutdown"))
        for seq in [s for s in self._sequences.values() if s.deadline is not None and now >= s.deadline]:
            limit = self.config.request_timeout
            self._finish(seq, "abort", None, error=Error(f"the request ran past the server's time limit of "
                                                         f"{limit:g} s", "timeout"))

    @torch.inference_mode()
    def step(self) -> None:
        """Admit, schedule, run the model once for decode rows and once for prefill chunks, sample, emit."""
        self._drain_inbox()
        self._end_overdue()
        work = self.scheduler.schedule()
        for seq in self.scheduler.rejected:
            self._finish(seq, "error", None, error=Error("the request does not fit the KV block pool", "failed"))
        self.scheduler.rejected.clear()
        if work.decode:
            self._decode(work.decode)
        for group in prefill_groups(work.prefill):
            self._run(group)
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
        view = PagedBatch(self.pool, [s.blocks for s, _ in batch], [s.num_computed for s, _ in batch],
                          checked=self.config.checked)
        try:
            logits, _ = model(torch.tensor(rows, device=device), view, n_tokens=[n for _, n in batch],
                              last_only=True)
        except Exception as e:
            self._fail_batch([s for s, _ in batch], "the forward pass", e)
            return
        for (seq, n), row_logits in zip(batch, logits[:, 0], strict=True):
            seq.num_computed += n
            self._register_full_blocks(seq)
            if seq.to_compute == 0:
                self._sample(seq, row_logits)

    def _decode(self, batch: list[Sequence]) -> None:
        """One new token for each row (or a greedy burst of several, `_burst`): the native batched step over the pool
        where it applies (fused_decode: every weight read once for all rows, each row's K and V through its block
        table), else `_run`."""
        fused = self.pipeline.model.fused
        if fused is None or not fused.binds_pool(self.pool):
            self._run([(s, 1) for s in batch])
            return
        n = self._burst(batch)
        args = (self.pool, [s.token_ids[s.num_computed] for s in batch], [s.num_computed for s in batch],
                [s.blocks for s in batch])
        try:
            if n > 1:
                stops = tuple(set().union(*(s.eos_ids for s in batch)))
                logits, chosen = fused.batch_greedy_steps(*args, n, stops)
            else:
                logits, first = fused.batch_step(*args)
                chosen = [[token] for token in first]
        except Exception as e:
            self._fail_batch(batch, "the decode step", e)
            return
        for seq, row_logits, tokens in zip(batch, logits, chosen, strict=True):
            for token in tokens:  # a burst's tokens share the last step's logits: plain greedy reads none of them
                if seq.finish_reason is not None:
                    break  # an end-of-turn token, a stop string or the length ended it mid-burst
                seq.num_computed += 1
                self._register_full_blocks(seq)
                self._sample(seq, row_logits, token)
            if n > 1 and seq.finish_reason is None:
                self.scheduler.trim(seq)

    def _burst(self, batch: list[Sequence]) -> int:
        """Steps one native call may run for these decode rows: up to BURST when every row is plain greedy (its token
        the raw argmax, no log-probabilities) and nothing waits to join (a burst delays a newcomer by its steps),
        never past a row's max_tokens or the context, and only as far as free blocks allow; else 1."""
        if self.scheduler.waiting or not self._inbox.empty():
            return 1
        if any(not s.params.argmax_only or s.params.logprobs is not None for s in batch):
            return 1
        context = self.pipeline.config.context_length
        n = min([BURST] + [min(s.params.max_tokens - len(s.output_ids), context - s.num_tokens) for s in batch])
        if n > 1 and not all(self.scheduler.reserve(s, s.num_computed + n) for s in batch):
            for s in batch:
                self.scheduler.trim(s)  # what the rows that fitted took back; this step runs one token
                self.scheduler.reserve(s, s.num_computed + 1)
            return 1
        return max(n, 1)

    def _register_full_blocks(self, seq: Sequence) -> None:
        bs = self.pool.block_size
        while len(seq.hashes) < seq.num_computed // bs:
            i = len(seq.hashes)
            prefix = seq.hashes[-1] if seq.hashes else 0
            seq.hashes.append(self.pool.register(seq.blocks[i], prefix, seq.token_ids[i * bs:(i + 1) * bs],
                                                 seq.blocks[i - 1] if i else None))

    def _fail_batch(self, batch: list[Sequence], what: str, e: Exception) -> None:
        """A step over these rows raised: their pairs may be half written, so each ends ("error") and frees its
        blocks; the other requests go on."""
        log.exception("%s of a batch of %d failed", what, len(batch))
        for seq in batch:
            self._fail(seq, f"{what} failed: {type(e).__name__}: {e}")

    def _sample(self, seq: Sequence, logits: torch.Tensor, greedy: int | None = None) -> None:
        """Choose seq's next token from its logits (`greedy`: their argmax, where the step found it) and emit it.
        If that raises, seq alone ends with the reason."""
        try:
            self._choose(seq, logits, greedy)
        except ConstraintError as e:  # a limit of the grammar library, met past the probe: the constraint's fault
            self.metrics.request_failures.inc()
            self._finish(seq, "error", None, error=Error(str(e), "constraint"))
        except Exception as e:
            log.exception("request %s failed while sampling", seq.request_id)
            self._fail(seq, f"sampling failed: {type(e).__name__}: {e}")

    def _choose(self, seq: Sequence, logits: torch.Tensor, greedy: int | None) -> None:
        p, matcher = seq.params, seq.matcher
        allowed = matcher.allowed() if matcher is not None else None
        token, logprob = next_token(logits, p, seq.generator, seq.prompt_ids, seq.output_ids, greedy, allowed)
        ends = matcher is not None and token in matcher.eos_ids  # the grammar allows it only where it is complete
        if matcher is not None and not ends:
            matcher.advance(token)
        now = time.perf_counter()
        if seq.first_token_at is None:
            seq.first_token_at = now
            self.metrics.time_to_first_token.observe(now - seq.arrival)
        else:
            self.metrics.inter_token_latency.observe(now - seq.last_token_at)
        seq.last_token_at = now
        if token in seq.eos_ids or ends:
            self._finish(seq, "stop", None, logprob)
            return
        seq.output_ids.append(token)
        self.metrics.generation_tokens.inc()
        delta = seq.text.add(token) if seq.text is not None else ""
        if seq.text is not None and seq.text.stopped is not None:
            self._finish(seq, "stop", token, logprob, delta)
        elif matcher is not None and matcher.finished:  # the grammar allows nothing more
            tail = seq.text.flush() if seq.text is not None else ""
            self._finish(seq, "stop", token, logprob, delta + tail)
        elif len(seq.output_ids) >= p.max_tokens or seq.num_tokens >= self.pipeline.config.context_length:
            tail = seq.text.flush() if seq.text is not None else ""
            self._finish(seq, "length", token, logprob, delta + tail)
        else:
            self._emit(seq, self._output(seq, token, delta, logprob))

    def _output(self, seq: Sequence, token: int | None, text: str, logprob=None, finish: str | None = None,
                error: Error | None = None) -> RequestOutput:
        return RequestOutput(seq.request_id, token, text, logprob, finish, len(seq.prompt_ids), len(seq.output_ids),
                             seq.cached_tokens, error, seq.text.stopped if seq.text is not None else None)

    def _emit(self, seq: Sequence, out: RequestOutput) -> None:
        """Hand `out` to the request's caller. A callback that raises ends its own request, nothing else."""
        try:
            seq.on_output(out)
        except Exception as e:
            log.exception("the output callback of request %s failed", seq.request_id)
            if out.finish_reason is None:
                self._fail(seq, f"its output could not be delivered: {type(e).__name__}: {e}")

    def _fail(self, seq: Sequence, message: str) -> None:
        self.metrics.request_failures.inc()
        self._finish(seq, "error", None, error=Error(message, "failed"))

    def _finish(self, seq: Sequence, reason: str, token: int | None, logprob=None, text: str = "",
                error: Error | None = None) -> None:
        if seq.finish_reason is not None:
            return
        seq.finish_reason = reason
        self.scheduler.remove(seq)
        self._sequences.pop(seq.request_id, None)
        self.metrics.e2e_latency.observe(time.perf_counter() - seq.arrival)
        self._emit(seq, self._output(seq, token, text, logprob, reason, error))

    # ---- the loop ----------------------------------------------------------------------------------
    def start(self) -> None:
        """Run the loop in a background thread until `stop()`."""
        self._thread = threading.Thread(target=self.run, name="forwardpass-engine", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    @property
    def healthy(self) -> bool:
        """The loop has not failed."""
        return self.failure is None

    def run(self, until: Callable[[], bool] = lambda: False) -> None:
        """Run steps in the calling thread as work arrives, until `stop()` or `until()`. `serve` runs it in the main
        thread, where the model was loaded: the kernels' OpenMP team is then the process's only one (a second
        thread's team beside the loading thread's competes with it for the same cores). If the loop fails,
        it says why (`_die`) and waits, taking no more work, until it is told to end."""
        while not self._stop and not until():
            if self.failure is not None or not self.has_work():
                if self.failure is None:
                    self._end_overdue()
                self._wake.wait(timeout=0.5)
                self._wake.clear()
                continue
            try:
                self.step()
            except Exception as e:
                self._die(e)

    def _die(self, e: BaseException) -> None:
        """The loop failed: say why, end every request in flight with that reason, take no more."""
        log.exception("the engine loop failed; every request in flight is ended")
        with self._admission:
            self.failure = f"{type(e).__name__}: {e}"
            self._drain_inbox_safely()
        self.metrics.healthy.set(0)
        error = Error(f"the engine stopped after an internal error: {self.failure}", "failed")
        for seq in list(self._sequences.values()):
            seq.finish_reason = "error"
            self._emit(seq, self._output(seq, None, "", None, "error", error))
        self._sequences.clear()

    def _drain_inbox_safely(self) -> None:
        """Move queued requests into `_sequences` (so they are ended too) without touching the scheduler."""
        while not self._inbox.empty():
            action, payload = self._inbox.get_nowait()
            if action == "add":
                self._sequences[payload.request_id] = payload

    def run_until_done(self) -> None:
        """Run steps in the caller's thread until every queued request has finished (tests, benchmarks)."""
        while self.has_work():
            self.step()
