"""Progress for long loads: a rich progress bar on a terminal, nothing otherwise."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator


def track(items: Iterable, description: str, enabled: bool) -> Iterator:
    if not enabled or not sys.stderr.isatty():
        yield from items
        return
    from rich.console import Console
    from rich.progress import track as rich_track
    yield from rich_track(items, description=description, transient=True, console=Console(stderr=True))
