"""The engine: runs scheduled steps on the runner over the paged cache, samples each request with its own
parameters, and streams outputs. `step()` runs one step; `start()` runs steps in a background thread.

    submit → scheduler.schedule (a StepPlan: every row and block) → steps.run (runner.step per call) → logits →
    outputs.py (sample, stop rules, delivery)

No request can stop the others: whatever goes wrong with one request (its sampling, its output callback, the
forward pass of the batch it ran in) ends that request with finish reason "error" and a message, and the loop
goes on. A failure of the loop itself (the scheduler, the pool) is logged, ends every request in flight, and
leaves `failure` set: the server then answers 503 on /health so that a supervisor restarts it."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from ..config import SPECULATIVE_MODES
from ..loaded import LoadedModel
from ..structured.constraints import Grammars
from .intake import Intake
from .metrics import EngineMetrics
from .outputs import Outputs
from .paged import BlockPool
from .prompt_cache import DEFAULT_BYTES, open_prompt_cache
from .runner import Runner
from .scheduler import Scheduler
from .sequence import Error
from .steps import Steps
from .suffix_drafts import SuffixDrafts

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
    speculative: str = "suffix"  # "suffix": drafts by prompt lookup and from recent requests (suffix_drafts.py),
    # verified in the native step; "ngram": by prompt lookup alone; "off"
    prompt_cache: str | None = None  # a folder keeping full KV blocks across restarts (prompt_cache/), None: none
    prompt_cache_bytes: int = DEFAULT_BYTES  # the most that folder holds, least recently used out first


class Engine(Intake):
    """The requests' way in (intake.py), and the loop: admit, schedule, run, hand on; step by step."""

    def __init__(self, loaded: LoadedModel, config: EngineConfig | None = None,
                 wake: threading.Event | None = None):
        self.loaded, self.config = loaded, config or EngineConfig()
        c, model = loaded.config, loaded.model
        kv = loaded.kv_format()
        num_blocks = max(1, self.config.kv_cache_bytes // BlockPool.block_bytes(c, self.config.block_size, kv))
        self.pool = BlockPool(c, num_blocks, self.config.block_size, kv, loaded.device, self.config.prefix_caching)
        if self.config.speculative not in SPECULATIVE_MODES:
            raise ValueError(f"speculative must be one of {', '.join(SPECULATIVE_MODES)}, got "
                             f"{self.config.speculative!r}")
        self.prompt_cache = None if self.config.prompt_cache is None else open_prompt_cache(
            loaded, self.pool, self.config.prompt_cache, self.config.prompt_cache_bytes)
        self.scheduler = Scheduler(self.pool, self.config.max_num_seqs, self.config.max_num_batched_tokens,
                                   c.context_length, self.config.speculative != "off", self.prompt_cache)
        self.metrics = EngineMetrics()
        self.outputs = Outputs(self.scheduler, self.metrics, c.context_length)
        if self.config.speculative == "suffix":  # finished requests feed it (outputs.py), admitted ones draft from it
            self.outputs.history = SuffixDrafts(loaded.source)
        self.runner = Runner(model, self.pool, self.config.checked)
        self.steps = Steps(self.runner, self.scheduler, self.outputs)
        self.grammars = Grammars(loaded.tokenizer, c.vocab_size)  # structured output's compiled constraints
        self._open(wake)
        self._thread: threading.Thread | None = None
        self._stop = False

    # ---- steps -------------------------------------------------------------------------------------
    def step(self) -> None:
        """Admit; schedule (the scheduler plans every row and block of the step); run the planned calls on the runner;
        sample, apply the stop rules and emit (outputs.py)."""
        self._drain_inbox()
        self.outputs.end_overdue(self._drain_at, self.config.request_timeout)
        plan = self.scheduler.schedule(self.runner.capabilities, not self._inbox.empty())
        for seq in plan.rejected:
            self.outputs.finish(seq, "error", None, error=Error("the request does not fit the KV block pool", "failed"))
        self.steps.run(plan)
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

    def run_until_done(self) -> None:
        """Run steps in the caller's thread until every queued request has finished (tests, benchmarks)."""
        while self.has_work():
            self.step()
