"""The threads constraints compile on: each with a stack deep enough for the grammar library's recursion over the
largest constraint limits.py admits, several times over, and in lanes, so that a small constraint never
waits behind large ones (a compile cannot be stopped once the library has begun it, and a large one takes seconds).

A thread's stack is address space, not memory: its pages are taken only as deep as a compile goes, and given back
when the thread ends, which a lane's threads do as soon as it is empty."""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

STACK_BYTES = 512 << 20
_setting_stack = threading.Lock()  # threading.stack_size is the process's: set for one start, then put back


def start(target: Callable[[], None], name: str) -> None:
    """Start a daemon thread that runs `target` on a STACK_BYTES stack."""
    with _setting_stack:
        previous = threading.stack_size(STACK_BYTES)
        try:
            threading.Thread(target=target, name=name, daemon=True).start()
        finally:
            threading.stack_size(previous)


def call(fn: Callable[..., Any], *args) -> Any:
    """fn(*args) on a thread of its own with that stack: its result, or its exception raised here."""
    future: Future = Future()

    def run() -> None:
        try:
            future.set_result(fn(*args))
        except BaseException as e:  # carried to the caller
            future.set_exception(e)

    start(run, "forwardpass-grammar")
    return future.result()


class Lane:
    """Jobs run in the order they came, at most `width` at once, each thread at the lowest priority (the decode
    step's threads go first). A job handles its own errors."""

    def __init__(self, name: str, width: int = 2):
        self.name, self.width = name, width
        self._jobs: deque[Callable[[], None]] = deque()
        self._lock = threading.Lock()
        self._threads = 0

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            self._jobs.append(job)
            if self._threads == self.width:
                return
            self._threads += 1
        try:
            start(self._drain, self.name)
        except BaseException:  # no thread: the job is not left waiting for one
            with self._lock:
                self._threads -= 1
                if job in self._jobs:
                    self._jobs.remove(job)
            raise

    def _next(self) -> Callable[[], None] | None:
        with self._lock:
            if self._jobs:
                return self._jobs.popleft()
            self._threads -= 1
            return None

    def _drain(self) -> None:
        _yield_the_core()
        while (job := self._next()) is not None:
            job()


def _yield_the_core() -> None:
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    except (AttributeError, OSError):
        pass
