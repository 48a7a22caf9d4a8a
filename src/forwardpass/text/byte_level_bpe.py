"""Byte-level BPE (GPT-2, SmolLM2, Llama 3, Qwen2), encoded from a GGUF file's tokens and merges as Hugging Face
`tokenizers` encodes them:

1. user-defined tokens written in a text (Qwen's <think>) are matched whole, and control tokens (<|im_start|>) too
   where asked;
2. each stretch of text between them is composed (Unicode NFC) where the pre-tokenizer asks it, split as the
   pre-tokenizer says (its own splits, then GPT-2's), and each piece's UTF-8 bytes written in GPT-2's byte alphabet
   (one printable character a byte: a space is "Ġ");
3. each piece's characters are merged: of the adjacent pairs the file lists as merges, the one listed first is joined
   (the leftmost among equals), until no pair is listed. Llama 3's pre-tokenizer keeps a piece that is itself a token
   whole (`ignore_merges`, as its tokenizer.json and llama.cpp say).

Ready once the vocabulary and the merges are dicts: no BPE model to build."""

from __future__ import annotations

import heapq
import unicodedata
from collections.abc import Callable

import numpy as np

from ..errors import ModelFileError
from ..structured.vocabulary import guidance_view
from .special_pieces import WholePieces, encoded

# GPT-2's split (the byte-level pre-tokenizer's own), and Llama 3's and Qwen2's, which replace it
GPT2_SPLIT = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_SPLIT = LLAMA3_SPLIT.replace(r"\p{N}{1,3}", r"\p{N}")  # Qwen2: every digit on its own


def _byte_alphabet() -> list[str]:
    """GPT-2's byte-level alphabet: byte b is written as the character [b], printable and never a space."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), 256)]
    chars, extra = [], 0
    for b in range(256):
        if b in printable:
            chars.append(chr(b))
        else:
            chars.append(chr(256 + extra))
            extra += 1
    return chars


BYTE_CHARS = _byte_alphabet()
CHAR_BYTES = {ch: b for b, ch in enumerate(BYTE_CHARS)}
CACHE_WORDS = 10_000  # pieces whose ids are kept (text repeats its words)


class ByteLevelBPE:
    """A byte-level vocabulary, asked what a Tokenizer asks of its backend. `splits`: the pre-tokenizer's regexes
    (`regex` syntax), applied in order, each piece kept apart from the text around it; `nfc`: compose first;
    `ignore_merges`: a piece that is a token is that token."""

    def __init__(self, tokens: list[str], merges: list[str], types: list[int], splits: list[str], nfc: bool,
                 ignore_merges: bool):
        import regex  # Unicode classes (\p{L}, \p{N}) as the reference pre-tokenizers read them

        self.tokens, self.nfc, self.ignore_merges = tokens, nfc, ignore_merges
        self.vocab_size = len(tokens)
        self.vocab = {token: i for i, token in enumerate(tokens)}  # a repeated token: its last id, as tokenizers
        self.ranks = {merge: rank for rank, merge in enumerate(merges)}  # "Ġ t" → its place in the list
        kinds = np.asarray(types, dtype=np.int64)
        self.special_ids = frozenset(self.vocab[tokens[i]] for i in np.flatnonzero(kinds == 3).tolist())  # control
        self.user_ids = frozenset(self.vocab[tokens[i]] for i in np.flatnonzero(kinds == 4).tolist())  # user-defined
        self._user = WholePieces([(tokens[i], i) for i in sorted(self.user_ids)])
        self._added = WholePieces([(tokens[i], i) for i in sorted(self.user_ids | self.special_ids)])
        self._splits = [regex.compile(s) for s in splits]
        self.missing_bytes = missing_bytes(lambda ch: ch in self.vocab)
        self._cache: dict[str, list[int]] = {}

    def token_to_id(self, piece: str) -> int | None:
        return self.vocab.get(piece)

    def id_to_token(self, token_id: int) -> str | None:
        return self.tokens[token_id] if 0 <= token_id < self.vocab_size else None

    def encode(self, text: str, specials: bool) -> list[int]:
        """`text`'s ids; `specials`: control tokens written in it are matched whole (else they are their text)."""
        return encoded((self._added if specials else self._user).split(text), self._stretch)

    def _stretch(self, text: str) -> list[int]:
        """Text with no whole token in it: steps 2 and 3."""
        if self.nfc:
            text = unicodedata.normalize("NFC", text)
        pieces = [text]
        for split in self._splits:
            pieces = [p for piece in pieces for p in _isolated(split, piece)]
        ids: list[int] = []
        cache = self._cache
        for piece in pieces:
            word = "".join([BYTE_CHARS[b] for b in piece.encode()])
            found = cache.get(word)
            if found is None:
                whole = self.vocab.get(word) if self.ignore_merges else None
                found = [whole] if whole is not None else self._merged(word)
                if len(cache) >= CACHE_WORDS:
                    cache.clear()
                cache[word] = found
            ids += found
        return ids

    def _merged(self, word: str) -> list[int]:
        """Step 3 on one piece. A character with no token is left out first (`tokenizers` drops it; Tokenizer refuses
        such text where the vocabulary is byte-level). Symbol i starts at character i (a joined symbol keeps its left
        one's start): end[i] is where it ends, 0 once it has been joined into the symbol before it. The agenda holds
        (rank, left, join) of each proposed merge, first listed first, then leftmost; one is passed over unless its
        left symbol and the one after it still make that join through a listed merge (as `tokenizers` checks it)."""
        vocab, ranks = self.vocab, self.ranks
        if any(ch not in vocab for ch in word):
            word = "".join([ch for ch in word if ch in vocab])
        n = len(word)
        if not n:
            return []
        end, prev, after = list(range(1, n + 1)), list(range(-1, n - 1)), list(range(1, n + 1))
        after[-1] = -1
        agenda = [(rank, i, word[i:i + 2]) for i in range(n - 1)
                  if (rank := ranks.get(f"{word[i]} {word[i + 1]}")) is not None]
        heapq.heapify(agenda)
        pop, push = heapq.heappop, heapq.heappush
        while agenda:
            _, left, joined = pop(agenda)
            right = after[left]
            if not end[left] or right < 0 or word[left:end[right]] != joined \
                    or f"{word[left:right]} {word[right:end[right]]}" not in ranks:
                continue
            end[left], end[right] = end[right], 0
            nxt = after[left] = after[right]
            if nxt >= 0:
                prev[nxt] = left
            for a, b in ((prev[left], left), (left, nxt)):  # the merges the new symbol makes possible
                if a >= 0 and b >= 0:
                    rank = ranks.get(f"{word[a:b]} {word[b:end[b]]}")
                    if rank is not None:
                        push(agenda, (rank, a, word[a:end[b]]))
        ids: list[int] = []
        i = 0
        while i >= 0:
            symbol = word[i:end[i]]
            found = vocab.get(symbol)
            if found is None:
                raise ModelFileError(f"the file's merges make {symbol!r}, which its vocabulary does not hold")
            ids.append(found)
            i = after[i]
        return ids

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes a token stands for: its characters mapped back to bytes (it may be part of a UTF-8 character); a
        control token, or a token written otherwise, as its UTF-8 text."""
        token = self.tokens[token_id]
        mapped = None if token_id in self.special_ids else byte_level_bytes(token)
        return token.encode() if mapped is None else mapped

    def decode(self, ids: list[int]) -> str:
        """The text of `ids`: each token's characters mapped back to bytes (one written otherwise as its UTF-8
        text), all of them read as UTF-8, a sequence that is not UTF-8 as U+FFFD."""
        raw = bytearray()
        for token_id in ids:
            token = self.tokens[token_id]
            mapped = byte_level_bytes(token)
            raw += token.encode() if mapped is None else mapped
        return raw.decode("utf-8", errors="replace")

    def guidance(self, eos_ids: list[int]):
        """What llguidance builds its view of the vocabulary from (structured/vocabulary.py)."""
        return guidance_view(self, eos_ids)


def byte_level_bytes(token: str) -> bytes | None:
    """A token's bytes read through GPT-2's byte alphabet; None where a character of it is not in the alphabet."""
    try:
        return bytes([CHAR_BYTES[ch] for ch in token])
    except KeyError:
        return None


def missing_bytes(has: Callable[[str], bool]) -> frozenset[int]:
    """The bytes a byte-level vocabulary has no token for (`has`: whether a byte's character is a token), which BPE
    would drop without a word (Tokenizer refuses text holding them); none where half the bytes or more are absent:
    the vocabulary is not byte-level."""
    absent = [b for b, ch in enumerate(BYTE_CHARS) if not has(ch)]
    return frozenset(absent) if len(absent) < 128 else frozenset()


def _isolated(split, text: str):
    """`text` cut at each match of `split`, the matches and the text between them in order (none empty)."""
    at = 0
    for m in split.finditer(text):
        if m.start() > at:
            yield text[at:m.start()]
        if m.end() > m.start():
            yield m.group()
        at = m.end()
    if at < len(text):
        yield text[at:]
