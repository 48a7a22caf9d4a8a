"""What the prompt cache counts (read into /metrics by engine/metrics.py), and its complaints: a log line per kind of
trouble at most once a minute, never a traceback (a damaged file costs a miss, not a flood of logs)."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

log = logging.getLogger("forwardpass.prompt_cache")


@dataclass
class PromptCacheStats:
    hit_blocks: int = 0  # blocks read back from disk instead of computed
    hit_tokens: int = 0
    misses: int = 0  # lookups that stopped at a block not on disk (or not usable) before the prompt's full blocks ended
    rejected: int = 0  # files found but refused: damaged, truncated, foreign, another version
    read_bytes: int = 0
    written_blocks: int = 0
    written_bytes: int = 0
    evictions: int = 0  # files removed to keep the folder within its size, least recently used first
    write_errors: int = 0  # writes that failed (a full disk among them)
    dropped: int = 0  # blocks not written: the writer's queue was full, or writing is paused after a full disk


class Complaints:
    """Warnings rate-limited by kind: the first at once, then at most one per `every` seconds, saying how many were
    held back."""

    def __init__(self, every: float = 60.0):
        self.every = every
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def say(self, kind: str, message: str) -> None:
        now = time.monotonic()
        if now - self._last.get(kind, -self.every) < self.every:
            self._held[kind] = self._held.get(kind, 0) + 1
            return
        held = self._held.pop(kind, 0)
        self._last[kind] = now
        log.warning("prompt cache: %s%s", message, f" ({held} more like it not logged)" if held else "")
