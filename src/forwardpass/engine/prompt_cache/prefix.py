"""The prompt cache as a sequence's block table meets it (tables.py calls it): at admission, the prompt's full blocks
past those the in-memory prefix cache found are read back from disk into fresh pool blocks; as blocks fill, each is
copied and handed to the writer. A sequence's chain keys (`disk_keys`) are computed once, as far as they are needed."""

from __future__ import annotations

from ..paged import BlockPool
from ..sequence import Sequence
from .blocks import block_payload, fill_block
from .file_format import NO_PREVIOUS, chain_key
from .store import DiskStore


class DiskPrefix:
    def __init__(self, pool: BlockPool, store: DiskStore):
        self.pool, self.store = pool, store

    def keys(self, seq: Sequence, count: int) -> list[bytes]:
        """The chain keys of seq's first `count` full blocks."""
        bs, keys = self.pool.block_size, seq.disk_keys
        while len(keys) < count:
            i = len(keys)
            keys.append(chain_key(keys[-1] if keys else NO_PREVIOUS, seq.token_ids[i * bs:(i + 1) * bs]))
        return keys

    def extend(self, seq: Sequence) -> int:
        """After seq's in-memory prefix (its `blocks`), read on from disk: each full block found is put in a block of
        its own, appended to seq.blocks, until one is missing or refused, the pool has no free block left, or only the
        prompt's last token (which must be computed, for logits to sample from) would be left. Returns blocks read."""
        bs, tokens, start = self.pool.block_size, seq.token_ids, len(seq.blocks)
        full = (len(tokens) - 1) // bs
        if start >= full:
            return 0
        keys = self.keys(seq, full)
        for i in range(start, full):
            if not self.pool.free:
                break
            payload = self.store.load(keys[i], keys[i - 1] if i else NO_PREVIOUS, tokens[i * bs:(i + 1) * bs])
            if payload is None:
                self.store.stats.misses += 1
                break
            block = self.pool.allocate()
            fill_block(self.pool, block, payload)
            seq.blocks.append(block)
        return len(seq.blocks) - start

    def save(self, seq: Sequence, i: int) -> None:
        """seq's block i is full: a copy of it queued for the disk, unless the disk has it already."""
        keys = self.keys(seq, i + 1)
        if not self.store.has(keys[i]):
            bs = self.pool.block_size
            self.store.save(keys[i], keys[i - 1] if i else NO_PREVIOUS, seq.token_ids[i * bs:(i + 1) * bs],
                            block_payload(self.pool, seq.blocks[i]))
