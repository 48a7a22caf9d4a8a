"""Token ids → streamed text: never emits half a UTF-8 character or any part of a stop string."""

from __future__ import annotations

from .tokenizer import Tokenizer


class TextStream:
    """Feed token ids one at a time; get back the text that is safe to show so far."""

    def __init__(self, tokenizer: Tokenizer, stop: list[str] = ()):
        self.tokenizer, self.stop = tokenizer, list(stop)
        self.ids: list[int] = []
        self.emitted = 0  # characters already handed out
        self.text = ""  # the final text, once `stopped` or flushed
        self.stopped: str | None = None  # the stop string that ended the text

    def add(self, token_id: int) -> str:
        """Append a token; return the new text that can be shown (may be empty)."""
        self.ids.append(token_id)
        full = self.tokenizer.decode(self.ids)
        hits = [(full.find(s), s) for s in self.stop if s in full]
        if hits:
            at, self.stopped = min(hits)
            self.text = full[:at]
            return self._emit(at)
        incomplete = len(full) - len(full.rstrip("\ufffd"))  # a multi-byte character still arriving
        held = max([incomplete] + [_overlap(full, s) for s in self.stop])
        self.text = full
        return self._emit(len(full) - held)

    def flush(self) -> str:
        """The generation ended without a stop string: hand out whatever was held back."""
        return self._emit(len(self.text))

    def _emit(self, end: int) -> str:
        delta = self.text[self.emitted:end] if end > self.emitted else ""
        self.emitted = max(self.emitted, end)
        return delta


def _overlap(text: str, stop: str) -> int:
    """Length of the longest end of `text` that is a proper start of `stop` (it may yet become `stop`)."""
    for k in range(min(len(stop) - 1, len(text)), 0, -1):
        if text.endswith(stop[:k]):
            return k
    return 0
