"""A step run: each call the scheduler planned (step_plan.py: decode rows or a burst, drafts to verify, prompt chunks)
run on the runner, and each row's logits handed on: the scheduler told what was computed, the outputs given the logits
to sample; a failed call ends its own rows only."""

from __future__ import annotations

import time
from collections.abc import Callable

from .outputs import Outputs
from .rows import StepOutput
from .runner import Runner
from .scheduler import Scheduler
from .sequence import Sequence
from .step_plan import Pass, StepPlan


class Steps:
    def __init__(self, runner: Runner, scheduler: Scheduler, outputs: Outputs):
        self.runner, self.scheduler, self.outputs = runner, scheduler, outputs
        # told of each pass of the model that gave a sequence its next tokens (one read of the weights): the sequence,
        # the draft that pass verified ([] if none), how many of the draft it kept, and the pass's rows; None: nobody
        self.observer: Callable[[Sequence, list[int], int, int], None] | None = None

    def run(self, plan: StepPlan) -> None:
        for p in plan.passes:
            out = self._call(p)
            if out is not None:
                {"decode": self._decoded, "verify": self._verified, "prefill": self._prefilled}[p.kind](p, out)

    def _call(self, p: Pass) -> StepOutput | None:
        """The call's logits, or None where it raised (its rows ended, "error")."""
        rows = p.runner_rows()
        try:
            start = time.perf_counter()
            out = self.runner.step(rows)
            if p.timed:  # a burst's steps each cost one step of its rows
                self.scheduler.planner.cost.observe(sum(len(c.ids) for c in rows.chunks),
                                                    (time.perf_counter() - start) / len(out.chosen[0]))
            return out
        except Exception as e:
            self.outputs.fail_batch([r.seq for r in p.rows], p.what, e)
            return None

    def _prefilled(self, p: Pass, out: StepOutput) -> None:
        for row, logits in zip(p.rows, out.logits, strict=True):
            self.scheduler.advance(row.seq, row.n)
            if row.seq.to_compute == 0:
                self.outputs.sample(row.seq, logits)
                if self.observer is not None:
                    self.observer(row.seq, [], 0, sum(r.n for r in p.rows))

    def _decoded(self, p: Pass, out: StepOutput) -> None:
        for row, logits, chosen in zip(p.rows, out.logits, out.chosen, strict=True):
            seq = row.seq
            for token in chosen or [None]:  # a burst's tokens share the last step's logits: plain greedy reads none
                if seq.finish_reason is not None:
                    break  # an end-of-turn token, a stop string or the length ended it mid-burst
                self.scheduler.advance(seq, 1)
                self.outputs.sample(seq, logits, token)
                if self.observer is not None:  # a burst's tokens are a pass each
                    self.observer(seq, [], 0, len(p.rows))
            if p.steps > 1 and seq.finish_reason is None:
                self.scheduler.settle(seq)

    def _verified(self, p: Pass, out: StepOutput) -> None:
        """Each position sampled in order as without drafting, kept while it equals the draft (speculation.py)."""
        at, width = 0, sum(r.n for r in p.rows)
        for row in p.rows:
            seq, draft, kept = row.seq, row.draft, 0
            for i in range(len(draft) + 1):
                self.scheduler.advance(seq, 1)
                self.outputs.sample(seq, out.logits[at + i], out.chosen[at + i][0])
                if seq.finish_reason is not None or i == len(draft) or seq.output_ids[-1] != draft[i]:
                    break
                kept += 1
            at += row.n
            if self.observer is not None:
                self.observer(seq, draft, kept, width)
            if draft:
                seq.drafter.update(len(draft), kept)
                self.outputs.metrics.drafted(len(draft), kept)
            if seq.finish_reason is None:
                self.scheduler.settle(seq)
