"""Each sequence's block table: the blocks it holds in the pool, given as its pairs need them, taken back past what it
computed, registered in the prefix cache as they fill (and written to the prompt cache on disk, where there is one).
The one writer of a Sequence's `blocks`, `hashes`, `disk_keys`, `num_computed` and `cached_tokens` (the scheduler holds
it; nothing else touches the pool for a sequence)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .paged import BlockPool
from .sequence import Sequence

if TYPE_CHECKING:
    from .prompt_cache import DiskPrefix


class BlockTables:
    def __init__(self, pool: BlockPool, disk: DiskPrefix | None = None):
        self.pool, self.disk = pool, disk

    def grow(self, seq: Sequence, tokens: int) -> bool:
        """Give `seq` blocks for `tokens` pairs in all; False (and nothing taken) if the pool has too few free."""
        need = -(-tokens // self.pool.block_size) - len(seq.blocks)
        if need > len(self.pool.free):
            return False
        seq.blocks.extend(self.pool.allocate() for _ in range(need))
        return True

    def trim(self, seq: Sequence) -> None:
        """Give back the blocks past those seq's computed pairs fill (what a pass that stopped early reserved)."""
        keep = -(-seq.num_computed // self.pool.block_size)
        self.pool.release(seq.blocks[keep:])
        del seq.blocks[keep:]

    def release(self, seq: Sequence, recompute: bool = False) -> None:
        """Every block of seq back to the pool (it finished, or it is preempted: `recompute`, its pairs computed anew
        when it resumes)."""
        self.pool.release(seq.blocks)
        seq.blocks, seq.hashes = [], []
        if recompute:
            seq.num_computed = 0

    def admit(self, seq: Sequence, budget: int) -> int:
        """A waiting seq's prompt: its cached blocks (in memory, then on disk), then blocks for the tokens it runs this
        step (at most `budget`). Returns those tokens, or 0 with nothing held if the pool has too few free blocks
        now."""
        seq.blocks = self.pool.match_prefix(seq.token_ids)
        in_memory = len(seq.blocks) * self.pool.block_size
        if self.disk is not None:
            self.disk.extend(seq)
        seq.num_computed = len(seq.blocks) * self.pool.block_size
        n = min(seq.to_compute, budget)
        if not self.grow(seq, seq.num_computed + n):
            self.pool.release(seq.blocks)
            seq.blocks, seq.num_computed = [], 0
            return 0
        self.pool.count_hits(seq.token_ids, in_memory)
        if seq.preemptions == 0:
            seq.cached_tokens = seq.num_computed
        return n

    def advance(self, seq: Sequence, n: int) -> None:
        """n more of seq's pairs are in the cache: each block they filled registered for the prefix cache."""
        seq.num_computed += n
        bs = self.pool.block_size
        while len(seq.hashes) < seq.num_computed // bs:
            i = len(seq.hashes)
            prefix = seq.hashes[-1] if seq.hashes else 0
            seq.hashes.append(self.pool.register(seq.blocks[i], prefix, seq.token_ids[i * bs:(i + 1) * bs],
                                                 seq.blocks[i - 1] if i else None))
            if self.disk is not None:
                self.disk.save(seq, i)
