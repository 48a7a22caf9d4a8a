"""SentencePiece BPE (Gemma, Llama 2, Mistral, Phi-3), encoded as SentencePiece's own BPE model does, from a file's
pieces, scores and types alone:

1. spaces become "▁" ("▁" also put before the text where the file asks for a dummy prefix);
2. every character is a symbol; of the adjacent pairs whose join is a piece, the one whose piece scores highest is
   joined (the leftmost among equal scores), until no join is a piece;
3. each symbol is its piece's id; one that is no piece falls back to its UTF-8 bytes, as the byte pieces <0x00>…<0xFF>
   (or the unknown piece, where the vocabulary has no byte pieces). An "unused" piece that was joined is split back
   into the two it was joined from.

Control pieces (<start_of_turn>) written in a text are matched whole where asked, user-defined ones (space and
newline runs, tags) always, before any of that. Built in milliseconds: no merge table, only the vocabulary as a dict.
"""

from __future__ import annotations

import heapq
from string import hexdigits

import numpy as np

from ..errors import TokenizerError
from ..structured.vocabulary import guidance_view
from .special_pieces import WholePieces, encoded
from .utf8 import characters

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6  # GGUF's token types, SentencePiece's order


class SentencePieceBPE:
    """A SentencePiece vocabulary, asked what a Tokenizer asks of its backend."""

    def __init__(self, tokens: list[str], scores: list[float], types: list[int], unk: int | None, prefix: bool):
        self.tokens, self.scores, self.unk, self.prefix = tokens, scores, unk, prefix
        self.vocab_size = len(tokens)
        kinds = np.asarray(types, dtype=np.int64)
        reserved = np.isin(kinds, (UNKNOWN, CONTROL, BYTE))
        self._pieces: dict[str, int] = {}  # the pieces a join may make (SentencePiece's pieces_): all but reserved ones
        for i in np.flatnonzero(~reserved).tolist():
            self._pieces.setdefault(tokens[i], i)  # the first of equal pieces, as SentencePiece keeps it
        self._reserved: dict[str, int] = {}  # control, unknown and byte pieces: looked up first, never joined into
        for i in np.flatnonzero(reserved).tolist():
            self._reserved.setdefault(tokens[i], i)
        self._unused = frozenset(np.flatnonzero(kinds == UNUSED).tolist())
        self._bytes = [self.token_to_id(f"<0x{b:02X}>") for b in range(256)]
        control = np.flatnonzero(kinds == CONTROL).tolist()
        self.special_ids = frozenset(control)
        self.missing_bytes: frozenset[int] = frozenset()  # byte fallback covers every byte
        self.user_ids = frozenset(np.flatnonzero(kinds == USER_DEFINED).tolist())
        # user-defined pieces are matched in the text with its spaces as "▁", as SentencePiece matches them
        self._user = WholePieces([(tokens[i].replace(" ", "▁"), i) for i in sorted(self.user_ids)])
        self._control = WholePieces([(tokens[i], i) for i in control])

    def token_to_id(self, piece: str) -> int | None:
        """SentencePiece's PieceToId: a control, unknown or byte piece first, then the others."""
        found = self._reserved.get(piece)
        return self._pieces.get(piece) if found is None else found

    def id_to_token(self, token_id: int) -> str | None:
        return self.tokens[token_id] if 0 <= token_id < self.vocab_size else None

    def encode(self, text: str, specials: bool) -> list[int]:
        """`text`'s ids; `specials`: control pieces written in it are matched whole, and each stretch of text between
        them is encoded alone (with its own dummy prefix, as llama.cpp gives it)."""
        return encoded(self._control.split(text) if specials else (text,) if text else (), self._stretch)

    def _stretch(self, text: str) -> list[int]:
        """Text with no control piece in it: spaces as "▁" and the dummy prefix put first (step 1), user-defined pieces
        matched whole, and what lies between them joined."""
        return encoded(self._user.split(("▁" if self.prefix else "") + text.replace(" ", "▁")), self._joined)

    def _joined(self, text: str) -> list[int]:
        """Steps 2 and 3 of the module's docstring on normalized text. Symbol i starts at character i (a joined symbol
        keeps its left one's start): end[i] is where it ends, 0 once it has been joined into the symbol before it.
        The agenda holds (-score, left, right, characters) of each proposed join, best first, then leftmost; one whose
        sides have changed since it was proposed is passed over."""
        n = len(text)
        get, scores, unused = self._pieces.get, self.scores, self._unused
        end, prev, after = list(range(1, n + 1)), list(range(-1, n - 1)), list(range(1, n + 1))
        after[-1] = -1
        agenda = [(-scores[found], i, i + 1, 2) for i in range(n - 1) if (found := get(text[i:i + 2])) is not None]
        heapq.heapify(agenda)
        # an unused piece → the two it was last proposed from (SentencePiece's rev_merge, kept per sentence there: a
        # user-defined piece between two stretches stops any join across it, so none of one's proposals reach the other)
        split: dict[str, tuple[str, str]] = {}
        if unused:
            for i in range(n - 1):
                if get(text[i:i + 2]) in unused:
                    split[text[i:i + 2]] = (text[i], text[i + 1])
        pop, push = heapq.heappop, heapq.heappush
        while agenda:
            _, left, right, size = pop(agenda)
            if end[left] != right or end[right] - left != size:
                continue
            end[left], end[right] = end[right], 0
            nxt = after[left] = after[right]
            if nxt >= 0:
                prev[nxt] = left
            for a, b in ((prev[left], left), (left, nxt)):  # the joins the new symbol makes possible
                if a >= 0 and b >= 0:
                    joined = text[a:end[b]]
                    found = get(joined)
                    if found is not None:
                        push(agenda, (-scores[found], a, b, len(joined)))
                        if found in unused:
                            split[joined] = (text[a:b], text[b:end[b]])

        ids: list[int] = []
        i = 0
        while i >= 0:
            self._resegment(text[i:end[i]], split, ids)
            i = after[i]
        return ids

    def _resegment(self, piece: str, split: dict[str, tuple[str, str]], ids: list[int]) -> None:
        """A symbol's ids (step 3): its piece's, an unused piece's two halves', or its bytes' (else the unknown one)."""
        found = self.token_to_id(piece)
        if found is not None and found in self._unused and piece in split:
            for half in split[piece]:
                self._resegment(half, split, ids)
        elif found is not None and found != self.unk:
            ids.append(found)
        else:
            fallback = [self._bytes[b] for b in piece.encode()]
            if None not in fallback:
                ids += fallback
            elif self.unk is None:
                raise TokenizerError(f"the text holds {piece!r}, which this model's vocabulary cannot represent (it "
                                     f"has no piece, no byte pieces and no unknown piece for it)")
            elif not ids or ids[-1] != self.unk:  # a run of unknown characters is one unknown piece
                ids.append(self.unk)

    def decode(self, ids: list[int]) -> str:
        """The text of `ids`: "▁" read as a space, a run of byte pieces as the UTF-8 text of its bytes (a byte that
        begins no character as U+FFFD), and the dummy prefix's space dropped again."""
        out, run = [], bytearray()
        for token_id in ids:
            piece = self.tokens[token_id]
            byte = _byte(piece)
            if byte is not None:
                run.append(byte)
                continue
            if run:
                out.append(_text(run))
                run.clear()
            out.append(piece.replace("▁", " "))
        if run:
            out.append(_text(run))
        text = "".join(out)
        return text[1:] if self.prefix and text.startswith(" ") else text

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes a token stands for: a byte piece's one byte, a piece's text with "▁" as a space."""
        piece = self.tokens[token_id]
        byte = _byte(piece)
        return bytes([byte]) if byte is not None else piece.replace("▁", " ").encode()

    def guidance(self, eos_ids: list[int]):
        """What llguidance builds its view of the vocabulary from (structured/vocabulary.py)."""
        return guidance_view(self, eos_ids)


def _byte(piece: str) -> int | None:
    """The byte a byte piece (<0x41>) stands for; None for any other piece."""
    if len(piece) == 6 and piece.startswith("<0x") and piece[5] == ">" and piece[3] in hexdigits \
            and piece[4] in hexdigits:
        return int(piece[3:5], 16)
    return None


def _text(run: bytearray) -> str:
    """A run of byte pieces as text, as SentencePiece reads it: each whole UTF-8 character as itself, each byte that
    begins none as U+FFFD."""
    try:
        return run.decode("utf-8")
    except UnicodeDecodeError:
        return "".join("\ufffd" if character is None else character for _, _, character in characters(bytes(run)))
