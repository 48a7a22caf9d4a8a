"""From logits to what a request's caller sees: the token chosen, the stop rules (one place), the request's metrics,
and delivery. Every way a request ends goes through `finish`: its blocks are freed and its caller told once."""

from __future__ import annotations

import logging
import time
from typing import Any

from ..errors import ConstraintError
from ..sampling import next_token
from .metrics import EngineMetrics
from .scheduler import Scheduler
from .sequence import Error, RequestOutput, Sequence
from .suffix_drafts import SuffixDrafts

log = logging.getLogger("forwardpass.engine")


class Outputs:
    def __init__(self, scheduler: Scheduler, metrics: EngineMetrics, context_length: int):
        self.scheduler, self.metrics, self.context_length = scheduler, metrics, context_length
        self.sequences: dict[str, Sequence] = {}  # every request admitted and not yet ended, by id
        self.history: SuffixDrafts | None = None  # recent requests' text, drafted from (speculative "suffix")

    def sample(self, seq: Sequence, logits: Any, greedy: int | None = None) -> None:
        """Choose seq's next token from its logits ((vocab_size,) float32, a numpy array or a tensor; `greedy`: their
        argmax, where the step found it) and emit it. If that raises, seq alone ends with the reason."""
        try:
            self._choose(seq, logits, greedy)
        except ConstraintError as e:  # a limit of the grammar library, met past the probe: the constraint's fault
            self.metrics.request_failures.inc()
            self.finish(seq, "error", None, error=Error(str(e), "constraint"))
        except Exception as e:
            log.exception("request %s failed while sampling", seq.request_id)
            self.fail(seq, f"sampling failed: {type(e).__name__}: {e}")

    def _choose(self, seq: Sequence, logits: Any, greedy: int | None) -> None:
        p, matcher = seq.params, seq.matcher
        allowed = matcher.allowed() if matcher is not None else None
        token, logprob = next_token(logits, p, seq.generator, seq.prompt_ids, seq.output_ids, greedy, allowed)
        ends = matcher is not None and token in matcher.eos_ids  # the grammar allows it only where it is complete
        if matcher is not None and not ends:
            matcher.advance(token)
        self._timed(seq)
        if token in seq.eos_ids or ends:
            self.finish(seq, "stop", None, logprob)
            return
        seq.output_ids.append(token)
        self.metrics.generation_tokens.inc()
        delta = seq.text.add(token) if seq.text is not None else ""
        if seq.text is not None and seq.text.stopped is not None:
            self.finish(seq, "stop", token, logprob, delta)
        elif matcher is not None and matcher.finished:  # the grammar allows nothing more
            self.finish(seq, "stop", token, logprob, delta + self._tail(seq))
        elif len(seq.output_ids) >= p.max_tokens or seq.num_tokens >= self.context_length:
            self.finish(seq, "length", token, logprob, delta + self._tail(seq))
        else:
            self.emit(seq, self.output(seq, token, delta, logprob))

    def _timed(self, seq: Sequence) -> None:
        """A token was chosen for seq now: its time to first token, or the time since its last."""
        now = time.perf_counter()
        if seq.first_token_at is None:
            seq.first_token_at = now
            self.metrics.time_to_first_token.observe(now - seq.arrival)
        else:
            self.metrics.inter_token_latency.observe(now - seq.last_token_at)
        seq.last_token_at = now

    @staticmethod
    def _tail(seq: Sequence) -> str:
        """The text held back (a possible stop string's start), released as the request ends."""
        return seq.text.flush() if seq.text is not None else ""

    def output(self, seq: Sequence, token: int | None, text: str, logprob=None, finish: str | None = None,
               error: Error | None = None) -> RequestOutput:
        return RequestOutput(seq.request_id, token, text, logprob, finish, len(seq.prompt_ids), len(seq.output_ids),
                             seq.cached_tokens, error, seq.text.stopped if seq.text is not None else None)

    def emit(self, seq: Sequence, out: RequestOutput) -> None:
        """Hand `out` to the request's caller. A callback that raises ends its own request, nothing else."""
        try:
            seq.on_output(out)
        except Exception as e:
            log.exception("the output callback of request %s failed", seq.request_id)
            if out.finish_reason is None:
                self.fail(seq, f"its output could not be delivered: {type(e).__name__}: {e}")

    def fail(self, seq: Sequence, message: str) -> None:
        self.metrics.request_failures.inc()
        self.finish(seq, "error", None, error=Error(message, "failed"))

    def fail_batch(self, batch: list[Sequence], what: str, e: Exception) -> None:
        """A step over these rows raised: their pairs may be half written, so each ends ("error") and frees its
        blocks; the other requests go on."""
        log.exception("%s of a batch of %d failed", what, len(batch))
        for seq in batch:
            self.fail(seq, f"{what} failed: {type(e).__name__}: {e}")

    def finish(self, seq: Sequence, reason: str, token: int | None, logprob=None, text: str = "",
               error: Error | None = None) -> None:
        if seq.finish_reason is not None:
            return
        seq.finish_reason = reason
        self.scheduler.remove(seq)
        self.sequences.pop(seq.request_id, None)
        self.metrics.e2e_latency.observe(time.perf_counter() - seq.arrival)
        if self.history is not None and reason in ("stop", "length"):  # what it said, for its partition's next ones
            self.history.add(seq.partition, seq.token_ids)
        self.emit(seq, self.output(seq, token, text, logprob, reason, error))

    def end_overdue(self, drain_at: float | None, timeout: float | None) -> None:
        """End the requests past their time limit (`timeout` seconds), and every request once a shutdown's grace
        period is over (at `drain_at`)."""
        now = time.perf_counter()
        if drain_at is not None and now >= drain_at:
            for seq in list(self.sequences.values()):
                self.finish(seq, "abort", None, error=Error("the server is shutting down", "shutdown"))
        for seq in [s for s in self.sequences.values() if s.deadline is not None and now >= s.deadline]:
            self.finish(seq, "abort", None, error=Error(f"the request ran past the server's time limit of "
                                                        f"{timeout:g} s", "timeout"))

    def end_all(self, error: Error) -> None:
        """The loop failed: every request in flight ends with `error`, without touching the scheduler."""
        for seq in list(self.sequences.values()):
            seq.finish_reason = "error"
            self.emit(seq, self.output(seq, None, "", None, "error", error))
        self.sequences.clear()
