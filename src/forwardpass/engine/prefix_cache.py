"""Prefix caching's index over a block pool: each full block remembered under the hash of everything up to it, so a new
request whose prompt starts the same way finds the blocks holding its first pairs. A hit is confirmed by the block's own
tokens and the block before it, so a hash collision never shares wrong pairs. The pool (paged.py) is this index and its
allocator: a block keeps its entry while free, and loses it when handed out again."""

from __future__ import annotations


class PrefixCache:
    def __init__(self, block_size: int, prefix_caching: bool):
        self.block_size, self.prefix_caching = block_size, prefix_caching
        self.block_hash: dict[int, int] = {}  # block → hash of the tokens it (and its prefix) holds
        self.block_key: dict[int, tuple] = {}  # block → (the block before it or None, its tokens): what a hit checks
        self.cached: dict[int, int] = {}  # hash → block, for full blocks that may be shared
        self.hits = self.queries = 0  # prefix-cache lookups, in tokens

    def lookup(self, tokens: list[int]) -> list[int]:
        """The blocks holding the longest run of full blocks at the start of `tokens`, at least one token left to
        compute (so the model has logits to sample from)."""
        found: list[int] = []
        if not self.prefix_caching:
            return found
        h = 0
        for i in range((len(tokens) - 1) // self.block_size):
            chunk = tuple(tokens[i * self.block_size:(i + 1) * self.block_size])
            h = hash((h, chunk))
            block = self.cached.get(h)
            if block is None or self.block_key[block] != (found[-1] if found else None, chunk):
                break
            found.append(block)
        return found

    def count_hits(self, tokens: list[int], hit: int) -> None:
        """Count one prefix lookup that a request kept: the full blocks of `tokens` it could reuse, `hit` reused."""
        self.queries += (len(tokens) - 1) // self.block_size * self.block_size
        self.hits += hit

    def register(self, block: int, prefix_hash: int, tokens: list[int], previous: int | None = None) -> int:
        """A block just filled, after block `previous` (None: the first): remember it under the hash of its prefix
        and tokens. Returns that hash."""
        h = hash((prefix_hash, tuple(tokens)))
        if self.prefix_caching and h not in self.cached:
            self.cached[h] = block
            self.block_hash[block] = h
            self.block_key[block] = (previous, tuple(tokens))
        return h

    def forget(self, block: int) -> None:
        """The block is handed out anew: its old contents are found no more."""
        self.block_key.pop(block, None)
        old = self.block_hash.pop(block, None)
        if old is not None and self.cached.get(old) == block:
            del self.cached[old]
