"""UTF-8 read a character at a time: the whole characters of some bytes, and the stray bytes between them (a token
may hold part of a character: byte-level BPE splits 猫 into three)."""

from __future__ import annotations

from collections.abc import Iterator


def characters(raw: bytes) -> Iterator[tuple[int, int, str | None]]:
    """(start, end, character) for each whole UTF-8 character of `raw`, in order, and (start, start + 1, None) for
    each byte that begins none."""
    at = 0
    while at < len(raw):
        for n in (1, 2, 3, 4):
            try:
                character = raw[at:at + n].decode()
            except UnicodeDecodeError:
                continue
            break
        else:
            character, n = None, 1
        yield at, at + n, character
        at += n
