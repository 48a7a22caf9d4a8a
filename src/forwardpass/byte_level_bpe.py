"""Byte-level BPE (GPT-2, SmolLM2, Llama 3, Qwen2), encoded from a GGUF file's tokens and merges as Hugging Face
`tokenizers` encodes them:

1. control tokens written in a text (<|im_start|>) are matched whole, where asked;
2. each stretch of text between them is composed (Unicode NFC) where the pre-tokenizer asks it, split as the
   pre-tokenizer says (its own splits, then GPT-2's), and each piece's UTF-8 bytes written in GPT-2's byte alphabet
   (one printable character a byte: a space is "Ġ");
3. each piece's characters are merged: of the adjacent pairs the file lists as merges, the one listed first is joined
   (the leftmost among equals), until no pair is listed.

Ready once the vocabulary and the merges are dicts: no BPE model to build."""

from __future__ import annotations

import heapq
import unicodedata

import numpy as np

from .errors import ModelFileError
from .whole_pieces import WholePieces

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
    (`regex` syntax), applied in order, each piece kept apart from the text around it; `nfc`: compose first."""

    def __init__(self, tokens: list[str], merges: list[str], types: list[int], splits: list[str], nfc: bool):
        import regex  # Unicode classes (\p{L}, \p{N}) as the reference pre-tokenizers read them

        self.tokens, self.nfc = tokens, nfc
        self.vocab_size = len(tokens)
        self.vocab = dict(zip(tokens, range(len(tokens)), strict=True))  # a repeated token: its last id
        self.ranks = dict(zip(merges, range(len(merges)), strict=True))  # "Ġ t" → its place in the list
        control = np.flatnonzero(np.asarray(types, dtype=np.int64) == 3).tolist()  # 3: control token
        self.special_ids = frozenset(control)
        self._control = WholePieces([(tokens[i], i) for i in control])
        self._splits = [regex.compile(s) for s in splits]
        # bytes the vocabulary has no token for: BPE would drop them without a word (Tokenizer refuses such text)
        absent = [b for b, ch in enumerate(BYTE_CHARS) if ch not in self.vocab]
        self.missing_bytes = frozenset(absent) if len(absent) < 128 else frozenset()  # else not byte-level
        self._cache: dict[str, list[int]] = {}

    def token_to_id(self, piece: str) -> int | None:
        return self.vocab.get(piece)

    def id_to_token(self, token_id: int) -> str | None:
        return self.tokens[token_id] if 0 <= token_id < self.vocab_size else None

    def encode(self, text: str, specials: bool) -> list[int]:
        """`text`'s ids; `specials`: control tokens written in it are matched whole (else they are their text)."""
        ids: list[int] = []
        start = 0
        if specials:
            for at, end, token_id in self._control.find(text):
                if at > start:
                    ids += self._stretch(text[start:at])
                ids.append(token_id)
                start = end
        if start < len(text):
            ids += self._stretch(text[start:])
        return ids

    def _stretch(self, text: str) -> list[int]:
        """Text with no control token in it: steps 2 and 3."""
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
                found = self._merged(word)
                if len(cache) >= CACHE_WORDS:
                    cache.clear()
                cache[word] = found
            ids += found
        return ids

    def _merged(self, word: str) -> list[int]:
        """Step 3 on one piece. Symbol i starts at character i (a joined symbol keeps its left one's start): end[i] is
        where it ends, 0 once it has been joined into the symbol before it. The agenda holds (rank, left, join) of
        each proposed merge, first listed first, then leftmost; one is passed over unless its left symbol and the one
        after it still make that join through a listed merge (as `tokenizers` checks it)."""
        n = len(word)
        ranks = self.ranks
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
            found = self.vocab.get(symbol)
            if found is not None:
                ids.append(found)
            elif end[i] - i > 1:
                raise ModelFileError(f"the file's merges make {symbol!r}, which its vocabulary does not hold")
            # (a byte with no token is dropped, as `tokenizers` drops it: Tokenizer refuses such text first)
            i = after[i]
        return ids

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes a token stands for: its characters mapped back to bytes (it may be part of a UTF-8 character); a
        control token, or a token written otherwise, as its UTF-8 text."""
        token = self.tokens[token_id]
        if token_id not in self.special_ids and all(ch in CHAR_BYTES for ch in token):
            return bytes([CHAR_BYTES[ch] for ch in token])
        return token.encode()

    def decode(self, ids: list[int]) -> str:
        """The text of `ids`: each token's characters mapped back to bytes (one written otherwise as its UTF-8
        text), all of them read as UTF-8, a sequence that is not UTF-8 as U+FFFD."""
        raw = bytearray()
        for token_id in ids:
            token = self.tokens[token_id]
            try:
                raw += bytes([CHAR_BYTES[ch] for ch in token])
            except KeyError:
                raw += token.encode()
        return raw.decode("utf-8", errors="replace")

    def guidance(self, eos_ids: list[int]):
        """What llguidance builds its view of the vocabulary from: each token's bytes (control tokens marked special by
        a leading 0xFF, as llguidance reads llama.cpp's), the end token, and this tokenizer for text."""
        import llguidance

        return llguidance.TokenizerWrapper(_GuidanceView(self, eos_ids[0]))


class _GuidanceView:
    """The attributes and call llguidance's TokenizerWrapper reads (without an end token it adds one of its own)."""

    def __init__(self, bpe: ByteLevelBPE, eos_id: int):
        self.bpe = bpe
        self.eos_token_id, self.bos_token_id = eos_id, None
        self.special_token_ids = sorted(bpe.special_ids)
        self.tokens = [b"\xff" + t.encode() if i in bpe.special_ids else bpe.token_bytes(i)
                       for i, t in enumerate(bpe.tokens)]

    def __call__(self, text: bytes | str) -> list[int]:
        return self.bpe.encode(text.decode("utf-8", errors="replace") if isinstance(text, bytes) else text, False)


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
