"""The prompt cache on disk: full KV blocks kept in a folder across restarts, one file each, named by the chain key of
their tokens, under a subfolder per namespace (namespace.py). Written off the request path (writer.py), each to a
temporary name then renamed, so a reader sees a whole file or none; read back at admission and checked in full
(file_format.py), so a damaged, truncated or foreign file costs a miss and a log line, never a wrong pair. The folder
is kept within `limit` bytes, the least recently used files (by modification time, renewed on each hit) removed first.
Processes may share the folder: a rename is atomic, and a file another one removes is a miss."""

from __future__ import annotations

import atexit
import os
import re
import time
import weakref
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .file_format import KEY_BYTES, SUFFIX, BadFile, file_name, header, header_bytes, parse
from .stats import Complaints, PromptCacheStats
from .writer import Writer

OURS = re.compile(f"[0-9a-f]{{{2 * KEY_BYTES}}}")  # a namespace's folder, a block's file name before its suffix
TEMPORARY = re.compile(rf"\.[0-9a-f]{{{2 * KEY_BYTES}}}{re.escape(SUFFIX)}\.\d+\.\d+\.tmp")
STALE = 3600.0  # seconds after which a temporary file left by a crashed writer is removed
KEEP = 0.9  # eviction brings the folder down to this share of its limit, so it does not run at every write

_open: weakref.WeakSet[DiskStore] = weakref.WeakSet()


class DiskStore:
    def __init__(self, folder: str | os.PathLike, limit: int, namespace: bytes, payload_bytes: int):
        self.root, self.limit = Path(folder), limit
        self.namespace, self.payload_bytes = namespace, payload_bytes
        self.dir = self.root / namespace.hex()
        self.dir.mkdir(parents=True, exist_ok=True)
        self.stats, self.complaints = PromptCacheStats(), Complaints()
        self.known: set[str] = set()  # our namespace's files this process wrote or read (not written again)
        self.used = self._scan()[1]  # bytes of every namespace's files in the folder
        self.writer = Writer(self._write, self.stats, self.complaints)
        _open.add(self)

    # ---- the engine thread ---------------------------------------------------------------------------
    def has(self, key: bytes) -> bool:
        return file_name(key) in self.known

    def load(self, key: bytes, previous: bytes, tokens: Sequence[int]) -> memoryview | None:
        """The payload of the block keyed `key` (after `previous`, holding `tokens`), or None: not on disk, or refused
        (a damaged or foreign file, removed, and a log line)."""
        path = self.dir / file_name(key)
        try:
            with open(path, "rb") as f:
                data = f.read(header_bytes(len(tokens)) + self.payload_bytes + 1)  # one byte more: a longer file fails
            payload = parse(data, self.namespace, key, previous, tokens, self.payload_bytes)
        except FileNotFoundError:
            self.known.discard(path.name)
            return None
        except (BadFile, OSError) as e:
            self._refuse(path, e)
            return None
        try:
            os.utime(path)  # recently used: the last to be evicted
        except OSError:
            pass  # evicted since it was read: the pairs read are still good
        self.known.add(path.name)
        self.stats.hit_blocks += 1
        self.stats.hit_tokens += len(tokens)
        self.stats.read_bytes += len(data)
        return payload

    def save(self, key: bytes, previous: bytes, tokens: Sequence[int], payload: np.ndarray) -> None:
        """Queue a copy of a block just filled (`payload`, the caller's own) to be written, unless it is on disk."""
        name = file_name(key)
        if name in self.known:
            return
        self.known.add(name)  # written once, however many sequences fill it before the writer gets to it
        if not self.writer.put((key, previous, tuple(tokens), payload), payload.nbytes):
            self.known.discard(name)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait for queued blocks to be written; False if `timeout` passed first."""
        return self.writer.flush(timeout)

    def _refuse(self, path: Path, e: Exception) -> None:
        self.stats.rejected += 1
        self.known.discard(path.name)
        reason = str(e) if isinstance(e, BadFile) else (e.strerror or str(e))
        self.complaints.say("read", f"{path} is not used ({reason}); computing the block instead")
        if isinstance(e, BadFile):
            try:
                path.unlink()
            except OSError:
                pass

    # ---- the writer thread ---------------------------------------------------------------------------
    def _write(self, item: tuple) -> None:
        key, previous, tokens, payload = item
        path = self.dir / file_name(key)
        tmp = self.dir / f".{path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp"
        data = memoryview(payload)
        self.dir.mkdir(parents=True, exist_ok=True)  # again, should someone have emptied the folder meanwhile
        try:
            with open(tmp, "wb") as f:
                f.write(header(self.namespace, key, previous, tokens, data))
                f.write(data)
                size = f.tell()
            os.replace(tmp, path)
        except BaseException:
            self.known.discard(path.name)
            tmp.unlink(missing_ok=True)
            raise
        self.stats.written_blocks += 1
        self.stats.written_bytes += size
        self.used += size
        if self.used > self.limit:
            self._evict()

    def _scan(self) -> tuple[list[tuple[float, int, Path]], int]:
        """Every cache file in the folder (mtime, size, path), oldest first, and their bytes; stale temporary files
        removed."""
        files, now = [], time.time()
        for sub in self.root.iterdir() if self.root.is_dir() else ():
            if not (OURS.fullmatch(sub.name) and sub.is_dir()):
                continue  # only the folders and files this cache names are ever counted or removed
            for entry in os.scandir(sub):
                try:
                    if TEMPORARY.fullmatch(entry.name) and now - entry.stat().st_mtime > STALE:
                        os.unlink(entry.path)
                    elif OURS.fullmatch(entry.name.removesuffix(SUFFIX)) and entry.name.endswith(SUFFIX):
                        st = entry.stat()
                        files.append((st.st_mtime, st.st_size, Path(entry.path)))
                except OSError:
                    continue  # removed meanwhile by another process
        files.sort()
        return files, sum(size for _, size, _ in files)

    def _evict(self) -> None:
        """Bring the folder (every namespace's files, other processes' too) down to KEEP of the limit, least recently
        used first."""
        files, self.used = self._scan()
        for _, size, path in files:
            if self.used <= self.limit * KEEP:
                break
            try:
                path.unlink()
                self.stats.evictions += 1
            except FileNotFoundError:
                pass  # another process evicted it first
            except OSError as e:
                self.complaints.say("evict", f"{path} could not be removed ({e.strerror or e})")
                continue
            self.used -= size
            if path.parent == self.dir:
                self.known.discard(path.name)


@atexit.register
def _flush_all(timeout: float = 30.0) -> None:
    """At exit, what is queued is written (within `timeout` seconds in all): a command that ends after its reply still
    leaves its blocks for the next run."""
    deadline = time.monotonic() + timeout
    for store in list(_open):
        store.flush(max(0.0, deadline - time.monotonic()))
