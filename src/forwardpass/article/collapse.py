"""Repetition collapse (seed §03 W-greedy-loop): greedy decoding that loops back on itself repeats forever."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Loop:
    """The output ends in `repeats` copies of a `period`-token block, starting at token index `start`."""

    period: int
    start: int
    repeats: float

    def to_dict(self) -> dict:
        return asdict(self)


def detect_loop(ids: list[int], min_repeats: int = 3, max_period: int = 64) -> Loop | None:
    """The shortest period whose repetition covers the end of `ids` at least `min_repeats` times, else None."""
    n = len(ids)
    for period in range(1, min(max_period, n // min_repeats) + 1):
        matched = 0  # how far back ids[i] == ids[i - period] holds, from the end
        while matched < n - period and ids[n - 1 - matched] == ids[n - 1 - matched - period]:
            matched += 1
        span = matched + period
        if span >= min_repeats * period:
            return Loop(period, start=n - span, repeats=span / period)
    return None
