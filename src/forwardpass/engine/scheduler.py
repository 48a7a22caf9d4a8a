"""Continuous batching: between steps requests join and leave; decode and prefill share each step under
a token budget; when blocks run out the newest running request is preempted and later recomputed. The scheduler decides
every row of a step (step_plan.py shapes them into the runner's calls: decode rows, bursts, drafts, prompt chunks) and
every block a sequence holds (tables.py); the step runs what it planned and tells it, through `advance` and `settle`,
what was computed."""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from ..errors import InvariantError
from .paged import BlockPool
from .rows import BLOCKS, Capabilities
from .sequence import Sequence
from .step_plan import StepPlan, StepPlanner
from .tables import BlockTables

if TYPE_CHECKING:
    from .prompt_cache import DiskPrefix


class Scheduler:
    def __init__(self, pool: BlockPool, max_num_seqs: int, max_num_batched_tokens: int, context_length: int = 0,
                 speculative: bool = False, disk: DiskPrefix | None = None):
        self.pool, self.max_num_seqs, self.budget = pool, max_num_seqs, max_num_batched_tokens
        self.tables = BlockTables(pool, disk)  # disk: the prompt cache on disk, if any
        self.planner = StepPlanner(self.tables, context_length, speculative)
        self.waiting: deque[Sequence] = deque()
        self.running: list[Sequence] = []
        self.preemptions = 0  # the scheduler is the one writer of a Sequence's `preemptions`

    def has_work(self) -> bool:
        return bool(self.waiting or self.running)

    def add(self, seq: Sequence) -> None:
        self.waiting.append(seq)

    def remove(self, seq: Sequence) -> None:
        """A finished or aborted sequence leaves; its blocks go back to the pool."""
        if seq in self.running:
            self.running.remove(seq)
        elif seq in self.waiting:
            self.waiting.remove(seq)
        self.tables.release(seq)

    def advance(self, seq: Sequence, n: int) -> None:
        """The step computed n more of seq's pairs."""
        self.tables.advance(seq, n)

    def settle(self, seq: Sequence) -> None:
        """A burst or a verified draft is over: the blocks reserved past seq's computed pairs go back."""
        self.tables.trim(seq)

    def _make_room(self, seq: Sequence, tokens: int) -> bool:
        """Blocks for `tokens` pairs of a running `seq`, preempting the newest running requests until they fit.
        False if `seq` itself was the newest and had to give way. The oldest running request is never preempted
        and, alone, always fits (the engine refuses a request larger than the pool), so every request finishes."""
        while not self.tables.grow(seq, tokens):
            victim = max(self.running, key=lambda s: s.arrival)
            self._preempt(victim)
            if victim is seq:
                return False
        return True

    def _preempt(self, seq: Sequence) -> None:
        """Free all of seq's blocks; it waits at the front and recomputes its tokens when it resumes."""
        self.running.remove(seq)
        self.tables.release(seq, recompute=True)
        seq.preemptions += 1
        self.preemptions += 1
        self.waiting.appendleft(seq)

    def schedule(self, can: Capabilities = BLOCKS, arriving: bool = False) -> StepPlan:
        """This step's plan, within what the runner's back end runs (`can`). Running requests go first, oldest first (a
        decode is one token, a prefill the budget left), each given the blocks it needs by preempting the newest; then
        waiting ones join in order while the budget, the running limit and the free blocks allow (a waiting request
        holds no blocks, so what running requests free is there for it). `arriving`: requests are on their way in."""
        budget, rejected = self.budget, []
        decode: list[Sequence] = []
        prefill: list[tuple[Sequence, int]] = []
        for seq in sorted(self.running, key=lambda s: s.arrival):
            if seq not in self.running:
                continue  # preempted for an older one
            n = 1 if seq.to_compute == 1 else min(seq.to_compute, budget)
            if n <= 0 or not self._make_room(seq, seq.num_computed + n):
                continue
            if seq.to_compute == 1:
                decode.append(seq)
            else:
                prefill.append((seq, n))
            budget -= n
        while self.waiting and budget > 0 and len(self.running) < self.max_num_seqs:
            seq = self.waiting[0]
            n = self.tables.admit(seq, budget)
            if n == 0:
                if not self.running:  # nothing will free a block for it: the pool can never hold it
                    rejected.append(self.waiting.popleft())
                    continue
                break  # it waits, first in line, for running requests to free blocks
            self.waiting.popleft()
            self.running.append(seq)
            prefill.append((seq, n))
            budget -= n
        passes = self.planner.plan(decode, prefill, can, bool(self.waiting) or arriving)
        return StepPlan(passes, rejected)

    def check(self) -> None:
        """Checked mode, after a step: the pool's own invariants over every live table, and t pairs of a running
        sequence in exactly ceil(t / block_size) blocks (less than one block wasted)."""
        self.pool.check([s.blocks for s in self.running + list(self.waiting)])
        for s in self.running:
            if len(s.blocks) != -(-s.num_computed // self.pool.block_size):
                raise InvariantError(f"{s.request_id}: {len(s.blocks)} blocks for {s.num_computed} pairs")
