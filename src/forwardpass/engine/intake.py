"""A request's way into the engine: checked before anything is queued (admission.py), made a Sequence, and queued in an
inbox that any thread may write and only the engine's thread reads (at each step: `_drain_inbox`); an abort and a
shutdown's drain come in the same way. The engine (engine.py) is an Intake with a loop."""

from __future__ import annotations

import itertools
import queue
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import EngineUnavailableError
from ..sampling import SamplingParams
from ..structured.constraints import Grammar
from .admission import check_request, new_sequence, token_room
from .sequence import RequestOutput

if TYPE_CHECKING:
    from ..loaded import LoadedModel
    from ..structured.constraints import Grammars
    from .engine import EngineConfig
    from .metrics import EngineMetrics
    from .outputs import Outputs
    from .paged import BlockPool
    from .scheduler import Scheduler


class Intake:
    loaded: LoadedModel
    config: EngineConfig
    pool: BlockPool
    scheduler: Scheduler
    outputs: Outputs
    metrics: EngineMetrics
    grammars: Grammars

    def _open(self, wake: threading.Event | None) -> None:
        self._ids = itertools.count()
        self._inbox: queue.Queue = queue.Queue()  # (action, payload) from other threads
        self._wake = wake or threading.Event()  # set when work arrives (shared by engines one thread steps in turn)
        self._admission = threading.Lock()
        self.failure: str | None = None  # why the loop died; nothing is admitted after it
        self._drain_at: float | None = None  # draining: nothing admitted, everything ended at this time

    def check_request(self, prompt_ids: list[int], params: SamplingParams) -> None:
        """Raise a clear error, before anything is queued, for a request that can never be served."""
        check_request(self.loaded, self.pool, prompt_ids, params)

    def token_room(self, prompt_ids: list[int]) -> int:
        """The most tokens a request with this prompt may ask for: what the context and the pool leave."""
        return token_room(self.loaded, self.pool, prompt_ids)

    def submit(self, prompt_ids: list[int], params: SamplingParams, on_output: Callable[[RequestOutput], None],
               grammar: Grammar | None = None, arrival: float | None = None, partition: str = "") -> str:
        """Queue a request; `on_output` is called from the engine's thread for every step's output. `grammar`:
        params.constraint already compiled (`grammars.submit`), else it is compiled here (a grammar that cannot be
        is the caller's error). `arrival`: when the request arrived, if before now (its time limit counts from
        then). `partition`: whose recent requests it may draft from (an API key's hash, an end user; "" one shared by
        every request that names none): never another's."""
        self.check_request(prompt_ids, params)
        if params.constraint is not None and grammar is None:
            grammar = self.grammars.compile(params.constraint)
        seq = new_sequence(self.loaded, f"req-{next(self._ids)}", prompt_ids, params, on_output,
                           grammar if params.constraint is not None else None, arrival, self.config.request_timeout,
                           partition)
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

    def _drain_inbox(self) -> None:
        while not self._inbox.empty():
            action, payload = self._inbox.get_nowait()
            if action == "add":
                if self.outputs.history is not None:  # here, in the engine's thread, the one that changes histories
                    payload.drafter.attach(self.outputs.history.partition(payload.partition))
                self.outputs.sequences[payload.request_id] = payload
                self.scheduler.add(payload)
                self.metrics.prompt_tokens.inc(len(payload.prompt_ids))
            elif payload in self.outputs.sequences:
                self.outputs.finish(self.outputs.sequences[payload], "abort", None)

    def _drain_inbox_safely(self) -> None:
        """Move queued requests among the outputs' sequences (so they are ended too) without touching the scheduler."""
        while not self._inbox.empty():
            action, payload = self._inbox.get_nowait()
            if action == "add":
                self.outputs.sequences[payload.request_id] = payload
