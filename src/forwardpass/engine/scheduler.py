"""Continuous batching: between steps requests join and leave; decode and prefill share each step under
a token budget; when blocks run out the newest running request is preempted and later recomputed."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from ..errors import InvariantError
from .paged import BlockPool
from .sequence import Sequence


@dataclass
class Scheduled:
    """One step's work: each sequence with the number of tokens it runs this step."""

    decode: list[Sequence]
    prefill: list[tuple[Sequence, int]]


class Scheduler:
    def __init__(self, pool: BlockPool, max_num_seqs: int, max_num_batched_tokens: int):
        self.pool, self.max_num_seqs, self.budget = pool, max_num_seqs, max_num_batched_tokens
        self.waiting: deque[Sequence] = deque()
        self.running: list[Sequence] = []
        self.preemptions = 0
        self.rejected: list[Sequence] = []  # could never fit the pool; the engine ends them

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
        self.pool.release(seq.blocks)
        seq.blocks, seq.hashes = [], []

    def _grow(self, seq: Sequence, tokens: int) -> bool:
        """Give `seq` blocks for `tokens` pairs in all; False (and nothing taken) if the pool has too few."""
        need = -(-tokens // self.pool.block_size) - len(seq.blocks)
        if need > len(self.pool.free):
            return False
        seq.blocks.extend(self.pool.allocate() for _ in range(need))
        return True

    def reserve(self, seq: Sequence, tokens: int) -> bool:
        """Blocks for `tokens` pairs of a running `seq` from the free ones alone (no preemption); False if too few."""
        return self._grow(seq, tokens)

    def trim(self, seq: Sequence) -> None:
        """Give back the blocks past those seq's computed pairs fill (what a run that stopped early reserved)."""
        keep = -(-seq.num_computed // self.pool.block_size)
        self.pool.release(seq.blocks[keep:])
        del seq.blocks[keep:]

    def _make_room(self, seq: Sequence, tokens: int) -> bool:
        """Blocks for `tokens` pairs of a running `seq`, preempting the newest running requests until they fit.
        False if `seq` itself was the newest and had to give way. The oldest running request is never preempted
        and, alone, always fits (the engine refuses a request larger than the pool), so every request finishes."""
        while not self._grow(seq, tokens):
            victim = max(self.running, key=lambda s: s.arrival)
            self._preempt(victim)
            if victim is seq:
                return False
        return True

    def _preempt(self, seq: Sequence) -> None:
        """Free all of seq's blocks; it waits at the front and recomputes its tokens when it resumes."""
        self.running.remove(seq)
        self.pool.release(seq.blocks)
        seq.blocks, seq.hashes, seq.num_computed = [], [], 0
        seq.preemptions += 1
        self.preemptions += 1
        self.waiting.appendleft(seq)

    def _admit(self, seq: Sequence, budget: int) -> int:
        """Start the first waiting request: its prompt's cached blocks, then blocks for the tokens it runs this step.
        Returns those tokens, or 0 with nothing held if the pool has too few free blocks now (a waiting request
        holds no blocks, so what running requests free is there for it)."""
        seq.blocks = self.pool.match_prefix(seq.token_ids)
        seq.num_computed = len(seq.blocks) * self.pool.block_size
        n = min(seq.to_compute, budget)
        if not self._grow(seq, seq.num_computed + n):
            self.pool.release(seq.blocks)
            seq.blocks, seq.num_computed = [], 0
            return 0
        self.pool.count_hits(seq.token_ids, seq.num_computed)
        if seq.preemptions == 0:
            seq.cached_tokens = seq.num_computed
        return n

    def schedule(self) -> Scheduled:
        """This step's work. Running requests go first, oldest first (a decode is one token, a prefill the budget
        left), each given the blocks it needs by preempting the newest; then waiting ones join in order while the
        budget, the running limit and the free blocks allow."""
        budget = self.budget
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
            n = self._admit(seq, budget)
            if n == 0:
                if not self.running:  # nothing will free a block for it: the pool can never hold it
                    self.rejected.append(self.waiting.popleft())
                    continue
                break  # it waits, first in line, for running requests to free blocks
            self.waiting.popleft()
            self.running.append(seq)
            prefill.append((seq, n))
            budget -= n
        return Scheduled(decode, prefill)

    def check(self) -> None:
        """Checked mode, after a step: the pool's own invariants over every live table, and t pairs of a running
        sequence in exactly ceil(t / block_size) blocks (less than one block wasted)."""
        self.pool.check([s.blocks for s in self.running + list(self.waiting)])
        for s in self.running:
            if len(s.blocks) != -(-s.num_computed // self.pool.block_size):
                raise InvariantError(f"{s.request_id}: {len(s.blocks)} blocks for {s.num_computed} pairs")
