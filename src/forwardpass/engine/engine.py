"""The engine: runs scheduled steps on the runner over the paged cache, samples each request with its own
parameters, and streams outputs. `step()` runs one step; `start()` runs steps in a background thread.

    submit → scheduler → runner (steps.py: prefill chunks, decode rows) → logits → outputs.py (sample, stop rules,
    delivery)

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

from ..config import SPECULATIVE_MODES
from ..constraints import Grammar, Grammars
from ..errors import EngineUnavailableError
from ..loaded import LoadedModel
from ..sampling import SamplingParams
from .admission import check_request, new_sequence, token_room
from .metrics import EngineMetrics
from .outputs import Outputs
from .paged import BlockPool
from .runner import Runner
from .scheduler import Scheduler
from .sequence import Error, RequestOutput
from .steps import Steps

log = logging.getLogger("forwardpass.engine")


@dataclass
class EngineConfig:
    kv_cache_bytes: int = 2**30  # the block pool's size
    block_size: int = 16
    max_num_seqs: int = 32  # running requests at once
    max_num_batched_tokens: int = 512  # tokens per step, prefill and decode together
    prefix_caching: bool = True
    checked: bool = False  # assert the pool's invariants after every step, and at every cache write
    request_timeout: float | None = None  # seconds from arrival after which a request is ended ("abort")
    speculative: str = "ngram"  # "ngram": drafts by prompt lookup, verified in the native step; "off"


class Engine:
    def __init__(self, pipeline: LoadedModel, config: EngineConfig | None = None,
                 wake: threading.Event | None = None):
        self.pipeline, self.config = pipeline, config or EngineConfig()
        c, model = pipeline.config, pipeline.model
        kv = pipeline.kv_format()
        num_blocks = max(1, self.config.kv_cache_bytes // BlockPool.block_bytes(c, self.config.block_size, kv))
        self.pool = BlockPool(c, num_blocks, self.config.block_size, kv, pipeline.device, self.config.prefix_caching)
        self.scheduler = Scheduler(self.pool, self.config.max_num_seqs, self.config.max_num_batched_tokens)
        self.metrics = EngineMetrics()
        self.outputs = Outputs(self.scheduler, self.metrics, c.context_length)
        self.runner = Runner(model, self.pool, self.config.checked)
        if self.config.speculative not in SPECULATIVE_MODES:
            raise ValueError(f"speculative must be one of {', '.join(SPECULATIVE_MODES)}, got "
                             f"{self.config.speculative!r}")
        self.steps = Steps(self.runner, self.scheduler, self.pool, self.outputs, c.context_length,
                           self.config.speculative == "ngram")
        self.grammars = Grammars(pipeline.tokenizer, c.vocab_size)  # structured output's compiled constraints
        self._ids = itertools.count()
        self._inbox: queue.Queue = queue.Queue()  # (action, payload) from other threads
        self._wake = wake or threading.Event()  # set when work arrives (shared by engines one thread steps in turn)
        self._thread: threading.Thread | None = None
        self._stop = False
        self._admission = threading.Lock()
        self.failure: str | None = None  # why the loop died; nothing is admitted after it
        self._drain_at: float | None = None  # draining: nothing admitted, everything ended at this time

    # ---- requests ----------------------------------------------------------------------------------
    def check_request(self, prompt_ids: list[int], params: SamplingParams) -> None:
        """Raise a clear error, before anything is queued, for a request that can never be served."""
        check_request(self.pipeline, self.pool, prompt_ids, params)

    def token_room(self, prompt_ids: list[int]) -> int:
        """The most tokens a request with this prompt may ask for: what the context and the pool leave."""
        return token_room(self.pipeline, self.pool, prompt_ids)

    def submit(self, prompt_ids: list[int], params: SamplingParams, on_output: Callable[[RequestOutput], None],
               grammar: Grammar | None = None, arrival: float | None = None) -> str:
        """Queue a request; `on_output` is called from the engine's thread for every step's output. `grammar`:
        params.constraint already compiled (`grammars.submit`), else it is compiled here (a grammar that cannot be
        is the caller's error). `arrival`: when the request arrived, if before now (its time limit counts from
        then)."""
        self.check_request(prompt_ids, params)
        if params.constraint is not None and grammar is None:
            grammar = self.grammars.compile(params.constraint)
        seq = new_sequence(self.pipeline, f"req-{next(self._ids)}", prompt_ids, params, on_output,
                           grammar if params.constraint is not None else None, arrival, self.config.request_timeout)
        with self._admission:  # never queued after a failed loop took its last look at the inbox
            self.check_available()
            self._inbox.put(("add", seq))
        self._wake.set()
        return seq.request_id

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
                self.outputs.sequences[payload.request_id] = payload
                self.scheduler.add(payload)
                self.metrics.prompt_tokens.inc(len(payload.prompt_ids))
            elif payload in self.outputs.sequences:
                self.outputs.finish(self.outputs.sequences[payload], "abort", None)

    def step(self) -> None:
        """Admit, schedule, run the model once for decode rows and once for prefill chunks, sample, emit."""
        self._drain_inbox()
        self.outputs.end_overdue(self._drain_at, self.config.request_timeout)
        work = self.scheduler.schedule()
        for seq in self.scheduler.rejected:
            self.outputs.finish(seq, "error", None, error=Error("the request does not fit the KV block pool", "failed"))
        self.scheduler.rejected.clear()
        self.steps.run(work, bool(self.scheduler.waiting) or not self._inbox.empty())
        self.metrics.observe_pool(self)
        if self.config.checked:
            self.scheduler.check()

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
        """Run steps in the calling thread as work arrives, until `stop()` or `until()` (`serve` runs its engines in
        the thread that loaded them: server/registry.py says why). A failed loop takes no more work (`_die`)."""
        while not self._stop and not until():
            if not self.tick():
                self._wake.wait(timeout=0.5)
                self._wake.clear()

    def tick(self) -> bool:
        """One step if there is work (a failing step ends the loop's requests, `_die`); False when there was none."""
        if self.failure is not None or not self.has_work():
            if self.failure is None:
                self.outputs.end_overdue(self._drain_at, self.config.request_timeout)
            return False
        try:
            self.step()
        except Exception as e:
            self._die(e)
        return True

    def _die(self, e: BaseException) -> None:
        """The loop failed: say why, end every request in flight with that reason, take no more."""
        log.exception("the engine loop failed; every request in flight is ended")
        with self._admission:
            self.failure = f"{type(e).__name__}: {e}"
            self._drain_inbox_safely()
        self.metrics.healthy.set(0)
        self.outputs.end_all(Error(f"the engine stopped after an internal error: {self.failure}", "failed"))

    def _drain_inbox_safely(self) -> None:
        """Move queued requests among the outputs' sequences (so they are ended too) without touching the scheduler."""
        while not self._inbox.empty():
            action, payload = self._inbox.get_nowait()
            if action == "add":
                self.outputs.sequences[payload.request_id] = payload

    def run_until_done(self) -> None:
        """Run steps in the caller's thread until every queued request has finished (tests, benchmarks)."""
        while self.has_work():
            self.step()
