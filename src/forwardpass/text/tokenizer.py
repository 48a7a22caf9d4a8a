"""Tokenize (stage 1 of the pipeline): text ↔ token ids, built from the model file's own vocabulary — byte-level BPE
(byte_level_bpe.py) and SentencePiece BPE (sentencepiece_bpe.py) by our own encoders, a checkpoint's tokenizer.json
through Hugging Face `tokenizers` (hf_tokenizer.py) — plus special tokens and the chat template. What it is built
from is read by text/sources.py; the chat template is rendered by chat_template.py.

A backend answers: encode(text, specials) → ids, decode(ids) → text, token_to_id, id_to_token, token_bytes, and
vocab_size, special_ids, missing_bytes (bytes it has no token for), guidance() (llguidance's view of it)."""

from __future__ import annotations

import functools
import re
import secrets
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import TokenIdError, TokenizerError, UnsupportedModelError
from .chat_template import marked, render_chat
from .sources import TokenizerParts, directory_parts, gguf_parts
from .utf8 import characters

if TYPE_CHECKING:
    from .byte_level_bpe import ByteLevelBPE
    from .hf_tokenizer import HFBackend
    from .sentencepiece_bpe import SentencePieceBPE


class Tokenizer:
    """Text ↔ token ids for one model; special tokens written in a prompt are matched whole, those written in a
    chat message are its text (encode_chat)."""

    def __init__(self, backend: ByteLevelBPE | SentencePieceBPE | HFBackend, eos_ids: list[int],
                 chat_template: str | None = None, bos_token: str = "", eos_token: str = "", bos_id: int | None = None):
        self.backend = backend
        self.bos_id = bos_id  # prepended to a text that does not already begin with it (SentencePiece models)
        self.eos_ids = sorted(set(eos_ids))
        self.chat_template = chat_template
        self.bos_token, self.eos_token = bos_token, eos_token
        self.missing_bytes: frozenset[int] = backend.missing_bytes
        self.vocab_size: int = backend.vocab_size
        self.special_ids: frozenset[int] = backend.special_ids

    def encode(self, text: str) -> list[int]:
        """Token ids of `text`, special tokens written in it (`<|im_start|>`) matched whole: a raw prompt may
        write a chat's turns itself. A byte-level BPE model gets no BOS: the reference tokenizers add none (the
        SmolLM2 GGUF's add_bos_token flag disagrees with its own reference tokenizer, which is followed); a model
        with `bos_id` gets it first, once (a chat template that writes it already is not given a second).
        Text holding a byte the vocabulary has no token for is refused rather than silently cut."""
        return self._with_bos(self._encode(text, specials=True))

    def encode_text(self, text: str) -> list[int]:
        """Token ids of `text` as a message's text: special tokens written in it are their characters, no BOS."""
        return self._encode(text, specials=False)

    def encode_chat(self, messages: list[dict], add_generation_prompt: bool = True,
                    tools: list[dict] | None = None) -> list[int]:
        """The ids of `messages` (and `tools`) rendered through the chat template (apply_chat_template), every
        string in them tokenized as text: a special token written in a message, a tool call or a tool's
        description is its characters, so no message can close its turn and open another; only the template's
        own special tokens are control tokens. While the template renders, each special token in the strings is
        a mark of letters and digits (which trimming or JSON-encoding leaves as it is, and which no message can
        guess); the text between the template's special tokens is then tokenized with the marks put back and
        special tokens not matched. The backend splits at special tokens before anything else, so a chat whose
        strings hold none gets the ids `encode` gives its rendering."""
        tag = f"fp{secrets.token_hex(8)}n"  # a special token's mark: tag, its id, "x"
        mark = re.compile(rf"{tag}(\d+)x", re.I)  # re.I: a template may change the case

        def hide(value):
            return marked(value, self._special_text, lambda m: f"{tag}{self.backend.token_to_id(m[0])}x")

        rendered = self.apply_chat_template(hide(messages), add_generation_prompt, hide(tools))
        ids = []
        for i, piece in enumerate(self._special_text.split(rendered)):  # text, special, text, …
            if i % 2:
                ids.append(self.backend.token_to_id(piece))
            elif piece:
                ids += self._encode(mark.sub(lambda m: self.backend.id_to_token(int(m[1])), piece), specials=False)
        return self._with_bos(ids)

    def _encode(self, text: str, specials: bool) -> list[int]:
        try:
            raw = text.encode()
        except UnicodeEncodeError as e:
            raise TokenizerError(f"the text holds a lone surrogate (U+{ord(text[e.start]):04X}), which is not "
                                 f"text") from None
        if self.missing_bytes and not self.missing_bytes.isdisjoint(raw):
            bad = next(ch for ch in text if not self.missing_bytes.isdisjoint(ch.encode()))
            byte = min(self.missing_bytes & set(bad.encode()))
            raise TokenizerError(f"the text holds {bad!r} (U+{ord(bad):04X}), which this model's vocabulary "
                                 f"cannot represent (it has no token for byte 0x{byte:02x})")
        return self.backend.encode(text, specials)

    def _with_bos(self, ids: list[int]) -> list[int]:
        return [self.bos_id, *ids] if self.bos_id is not None and ids[:1] != [self.bos_id] else ids

    @functools.cached_property
    def _special_text(self) -> re.Pattern:
        """Any special token's text (the longest where several begin at one place, as the backend matches them),
        in one capturing group: a trie, since an alternation of Gemma's 6,249 would try each at every '<'."""
        return re.compile(f"({_trie_pattern([self.backend.id_to_token(i) for i in self.special_ids])})")

    def decode(self, ids: list[int]) -> str:
        self.check_ids(ids)
        return self.backend.decode(list(ids))

    def piece(self, token_id: int) -> str:
        """One token as text, e.g. ' cat'. A piece holding only part of a UTF-8 character (byte-level BPE splits 猫
        into three) shows those bytes as SentencePiece names its byte pieces: '<0xE7><0x8C>'."""
        text = self.decode([token_id])
        return text if "\ufffd" not in text else _named_bytes(self.token_bytes(token_id))

    def token_bytes(self, token_id: int) -> bytes:
        """The raw bytes a token stands for (a byte-level piece may be part of a UTF-8 character)."""
        if not 0 <= token_id < self.vocab_size:
            raise TokenIdError(f"token id {token_id} is outside the vocabulary [0, {self.vocab_size})")
        return self.backend.token_bytes(token_id)

    def check_ids(self, ids: list[int]) -> None:
        size = self.vocab_size
        for i in ids:
            if not 0 <= i < size:
                raise TokenIdError(f"token id {i} is outside the vocabulary [0, {size})")

    @property
    def template_takes_tools(self) -> bool:
        """The chat template renders a `tools` list itself (Hugging Face's convention)."""
        return bool(self.chat_template) and "tools" in self.chat_template

    def apply_chat_template(self, messages: list[dict], add_generation_prompt: bool = True,
                            tools: list[dict] | None = None) -> str:
        """The model's own chat template rendered over `messages` ({'role', 'content'} dicts), and `tools`
        (OpenAI tool declarations) where the template takes them."""
        if not self.chat_template:
            raise UnsupportedModelError("this model has no chat template")
        return render_chat(self.chat_template, messages, add_generation_prompt, tools, self.bos_token, self.eos_token)

    @classmethod
    def from_gguf_fields(cls, fields: dict, chat_template: str | None = None) -> Tokenizer:
        """Build from GGUF metadata (`tokenizer.ggml.*`, already decoded to Python values): byte-level BPE
        ("gpt2") or SentencePiece BPE with byte fallback ("llama": Gemma, Llama 2, Mistral). `chat_template`: the
        family's own, for a file that carries none."""
        return cls._of(gguf_parts(fields, chat_template))

    @classmethod
    def from_directory(cls, directory: Path) -> Tokenizer | None:
        """Build from a checkpoint directory's `tokenizer.json` (and `tokenizer_config.json`), if it has one."""
        parts = directory_parts(directory)
        return None if parts is None else cls._of(parts)

    @classmethod
    def _of(cls, p: TokenizerParts) -> Tokenizer:
        return cls(p.backend, p.eos_ids, p.chat_template, p.bos_token, p.eos_token, p.bos_id)


def _named_bytes(raw: bytes) -> str:
    """`raw` with whole UTF-8 characters as text and stray bytes as SentencePiece names its byte pieces: <0xE7>."""
    return "".join(f"<0x{raw[at]:02X}>" if character is None else character for at, _, character in characters(raw))


def _trie_pattern(words: list[str]) -> str:
    """A regex (no groups of its own) matching any of `words`, a longer one before its own prefix."""
    if not words:
        return "(?!)"
    trie: dict = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}  # a word ends here

    def pattern(node: dict) -> str:
        branches = [re.escape(ch) + pattern(rest) for ch, rest in node.items() if ch] + ([""] if "" in node else [])
        return branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"
    return pattern(trie)
