"""Continuous batching: between steps requests join and leave; decode and prefill share each step under
a token budget; when blocks run out the newest running request is preempted and later recomputed."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

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

    def _preempt(self, seq: Sequence) -> None:
        """Free all of seq's blocks; it waits at the front and recomputes its tokens when it resumes."""
        self.running.remove(seq)
        self.pool.release(seq.blocks)
        seq.blocks, seq.hashes, seq.num_computed = [], [], 0
        seq.preemptions += 1
        self.preemptions += 1
        self.waiting.appendleft(seq)

    def schedule(self) -> Scheduled:
        budget = self.budget
        decode: list[Sequence] = []
        for seq in sorted((s for s in self.running if s.to_compute == 1), key=lambda s: s.arrival):
            if seq not in self.running:
                continue  # preempted for an older one below
            while not self._grow(seq, seq.num_tokens):
                victim = max(self.running, key=lambda s: s.arrival)
                self._preempt(victim)
                if victim is seq:
                    break
            if seq in self.running:
                decode.append(seq)
                budget -= 1
        prefill: list[tuple[Sequence, int]] = []
        for seq in [s for s in self.running if s.to_compute > 1]:  # prefills left unfinished by the budget
            n = min(seq.to_compute, budget)
            if n > 0 and self._grow(seq, seq.num_computed + n):
                prefill.append((seq, n))
                budget -= n
        while self.waiting and budget > 0 and len(self.running) < self.max_num_seqs:
            seq = self.waiting[0]
            if not seq.blocks:
                seq.blocks = self.pool.match_prefix(seq.token_ids)
                seq.num_computed = len(seq.blocks) * self.pool.block_size
                if seq.preemptions == 0:
                    seq.cached_tokens = seq.num_computed
            n = min(seq.to_compute, budget)
            if not self._grow(seq, seq.num_computed + n):
                if self.running:
                    break  # wait for running requests to finish and free blocks
                self.waiting.popleft()  # nothing will ever free a block for it
                self.pool.release(seq.blocks)
                seq.blocks = []
                self.rejected.append(seq)
                continue
            self.waiting.popleft()
            self.running.append(seq)
            prefill.append((seq, n))
            budget -= n
        return Scheduled(decode, prefill)
