"""The prompt cache's writer: blocks handed over by the engine thread (a copy each, taken as the block filled) written
by a background thread, so the request path only copies and enqueues. The queue is bounded in bytes: past it a block is
dropped (counted), never waited for. A full disk pauses writing for a while (logged once, counted)."""

from __future__ import annotations

import errno
import threading
import time
from collections import deque
from collections.abc import Callable

from .stats import Complaints, PromptCacheStats

FULL_DISK = (errno.ENOSPC, errno.EDQUOT)
PAUSE = 60.0  # seconds without writing after a full disk


class Writer:
    def __init__(self, write: Callable[[tuple], None], stats: PromptCacheStats, complaints: Complaints,
                 limit: int = 256 * 2**20):
        self.write, self.stats, self.complaints, self.limit = write, stats, complaints, limit
        self._queue: deque[tuple[tuple, int]] = deque()  # (item, its bytes)
        self._queued = 0  # bytes waiting
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None
        self._paused_until = 0.0

    def put(self, item: tuple, nbytes: int) -> bool:
        """Queue `item` for `write` (the engine thread); False, and counted, if dropped: the queue is full or writing
        paused."""
        with self._lock:
            if self._queued + nbytes > self.limit or time.monotonic() < self._paused_until:
                self.stats.dropped += 1
                return False
            self._queue.append((item, nbytes))
            self._queued += nbytes
            if self._thread is None:  # started on demand, gone when the queue is empty: an idle cache holds no thread
                self._thread = threading.Thread(target=self._run, name="forwardpass-prompt-cache", daemon=True)
                self._thread.start()
            return True

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued block is written (or dropped); False if `timeout` passed first."""
        with self._idle:
            return self._idle.wait_for(lambda: self._thread is None, timeout)

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._queue:
                    self._thread = None
                    self._idle.notify_all()
                    return
                item, nbytes = self._queue.popleft()
            try:
                if time.monotonic() < self._paused_until:
                    self.stats.dropped += 1
                else:
                    self.write(item)
            except OSError as e:
                self._failed(e)
            except Exception as e:  # the writer never dies on one block; the next may still be written
                self.stats.write_errors += 1
                self.complaints.say("write", f"a block could not be written ({type(e).__name__}: {e})")
            with self._lock:
                self._queued -= nbytes

    def _failed(self, e: OSError) -> None:
        self.stats.write_errors += 1
        if e.errno in FULL_DISK:
            self._paused_until = time.monotonic() + PAUSE
            self.complaints.say("full", f"the disk is full ({e.strerror}); not writing for {PAUSE:.0f} s")
        else:
            self.complaints.say("write", f"a block could not be written ({e.strerror or e})")
