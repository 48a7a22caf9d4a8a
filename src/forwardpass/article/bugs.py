"""The two silent bugs of seed §05, built on purpose: the explorer runs them beside the guarded engine,
and the tests prove the guards catch them. Never used for real generation."""

from __future__ import annotations

import torch

from ..kv_cache import KVCache


class NaiveRingCache(KVCache):
    """W-ring-overflow: a ring buffer that wraps past its last slot and overwrites the oldest pair,
    which earlier tokens' attention still needs. No error, no crash; every later score is wrong."""

    def begin(self, n_tokens: list[int], width: int) -> torch.Tensor:
        self._pending = list(n_tokens)  # no capacity check: that is the bug
        first = torch.tensor(self.lengths, device=self.k.device)
        return first[:, None] + torch.arange(width, device=self.k.device)

    def _store(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> None:
        for b, length in enumerate(self.lengths):
            for i in range(k.shape[2]):
                slot = (length + i) % self.capacity  # wraps silently
                self.k[layer, b, :, slot] = k[b, :, i]
                self.v[layer, b, :, slot] = v[b, :, i]

    def overwritten(self, row: int = 0) -> list[int]:
        """Positions whose pairs the ring has overwritten so far."""
        return list(range(max(0, self.lengths[row] - self.capacity)))

    def slots(self, row: int = 0) -> list[int | None]:
        """The position whose pair each slot holds now: the last one written there (None: never written)."""
        n = self.lengths[row]
        return [j + (n - 1 - j) // self.capacity * self.capacity if j < n else None for j in range(self.capacity)]


class StuckPositionCache(KVCache):
    """W-position-bug: every new token is given position 0 instead of the cache's length. The model
    scores each new token as if it were the first; output degrades; no exception."""

    def begin(self, n_tokens: list[int], width: int) -> torch.Tensor:
        positions = super().begin(n_tokens, width)
        return positions - positions[:, :1]  # the bug: count from 0 at every step
