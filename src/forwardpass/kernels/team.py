"""How many threads the native step runs, on a CPU it may share with other processes.

A decode step meets its threads at five barriers a layer (nine from 16 rows a step). While every thread has a core
that costs nothing; when another busy process takes one, the thread left without a core holds up the rest at every
barrier, and two threads decode slower than one. The step reports the CPU time its team ran against the time offered
it (team × wall time, `kernels/team.h`); `TeamSize` drops a thread after SHORT stretches of steps in a row ran under
LOW of it (one short stretch is a moment's hiccup, not a core taken, and dropping a thread for it slowed every step
until the next trial), and PROBE seconds later tries one more again, keeping it if its stretch runs at HIGH or better
(each trial that fails doubles the wait, up to LONGEST, so a machine that stays busy pays for few). A step's results
are the same bits for any team size, so this changes the speed, never a token."""

from __future__ import annotations

import os
import sys
import time

STRETCH = 0.05  # seconds of steps judged together
LOW, HIGH = 0.75, 0.9  # the share of offered time a team runs: below LOW it is short of cores, at HIGH it is not
SHORT = 3  # stretches in a row under LOW before a thread is dropped
PROBE, LONGEST = 2.0, 16.0  # seconds before a trial of one more thread, at first and at most

_most: int | None = None  # set_threads's, for the whole process


def set_threads(n: int | None) -> None:
    """The most threads a native step (and PyTorch's own operations) may run: `--threads`. None: the default."""
    global _most
    if n is not None and n < 1:
        raise ValueError(f"threads must be at least 1, got {n}")
    _most = n
    torch = sys.modules.get("torch")
    if torch is not None:  # PyTorch's own operations too, where it is in use (devices.torch_module: later)
        torch.set_num_threads(most_threads())


def most_threads() -> int:
    """`set_threads`'s count, else OMP_NUM_THREADS, else the cores this process may run on."""
    if _most is not None:
        return _most
    env = os.environ.get("OMP_NUM_THREADS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    return cores()


def cores() -> int:
    """The cores this process may run on (fewer than the machine's under taskset or a container's CPU set)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class TeamSize:
    """One calling thread's team size: `threads` for the next step; `observe` after each call with the step's
    cumulative usage (CPU seconds run, seconds offered)."""

    def __init__(self, most: int):
        self.most = self.threads = most
        self._last = (0.0, 0.0)
        self._cpu = self._offered = 0.0
        self._trial = False
        self._short = 0  # stretches in a row under LOW
        self._wait = PROBE
        self._next_probe = time.monotonic() + PROBE

    def observe(self, cpu: float, offered: float) -> None:
        self._cpu += cpu - self._last[0]
        self._offered += offered - self._last[1]
        self._last = (cpu, offered)
        if self._offered < STRETCH * self.threads:
            return
        ran, self._cpu, self._offered = self._cpu / self._offered, 0.0, 0.0
        now = time.monotonic()
        self._short = self._short + 1 if ran < LOW else 0
        if self._short >= SHORT and self.threads > 1 or self._trial and ran < HIGH:  # short of cores (a trial too)
            self.threads, self._short = self.threads - 1, 0
            self._wait = min(2 * self._wait, LONGEST) if self._trial else PROBE
            self._next_probe = now + self._wait
        elif self._trial:  # kept
            self._wait = PROBE
        self._trial = False
        if self.threads < self.most and now >= self._next_probe:
            self.threads += 1
            self._trial = True
