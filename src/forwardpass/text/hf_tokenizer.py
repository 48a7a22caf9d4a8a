"""Hugging Face `tokenizers` as a Tokenizer's backend, for a checkpoint directory's tokenizer.json (a GGUF file's
tokenizer is encoded by byte_level_bpe.py or sentencepiece_bpe.py; each answers the questions tokenizer.py lists)."""

from __future__ import annotations

import threading

from tokenizers import Tokenizer as Backend

from .byte_level_bpe import byte_level_bytes, missing_bytes


class HFBackend:
    """A `tokenizers.Tokenizer` (`hf`), asked what a Tokenizer asks of its backend."""

    def __init__(self, hf: Backend):
        self.hf = hf
        # asked once: each ask costs ~1 ms on a large vocabulary, and streaming checks ids every token
        self.vocab_size: int = hf.get_vocab_size(with_added_tokens=True)
        self.special_ids: frozenset[int] = frozenset(i for i, t in hf.get_added_tokens_decoder().items() if t.special)
        self.missing_bytes = frozenset() if getattr(hf.model, "byte_fallback", False) else missing_bytes(
            lambda ch: hf.model.token_to_id(ch) is not None)  # asked token by token: a dict of it all takes long
        self._matching = threading.Lock()  # held while the special-token matching is switched off

    def encode(self, text: str, specials: bool) -> list[int]:
        """`text`'s ids; `specials`: special tokens written in it are matched whole (else they are their text)."""
        with self._matching:
            self.hf.encode_special_tokens = not specials  # True: special tokens are encoded as their text
            try:
                return self.hf.encode(text, add_special_tokens=False).ids
            finally:
                self.hf.encode_special_tokens = False

    def decode(self, ids: list[int]) -> str:
        return self.hf.decode(ids, skip_special_tokens=False)

    def token_to_id(self, piece: str) -> int | None:
        return self.hf.token_to_id(piece)

    def id_to_token(self, token_id: int) -> str | None:
        return self.hf.id_to_token(token_id)

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes a token stands for: a byte-level piece's characters mapped back to bytes (it may be part of a
        UTF-8 character); a special token, or a piece written otherwise, as its UTF-8 text."""
        token = self.hf.id_to_token(token_id)
        mapped = None if token_id in self.special_ids else byte_level_bytes(token)
        return token.encode() if mapped is None else mapped

    def guidance(self, eos_ids: list[int]) -> str:
        """What llguidance builds its view of the vocabulary from: the tokenizer's JSON (its end tokens are given to
        llguidance apart)."""
        return self.hf.to_str()
