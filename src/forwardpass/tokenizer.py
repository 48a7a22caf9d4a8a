"""Tokenize (stage 1 of the pipeline): byte-level BPE via Hugging Face `tokenizers`, built from the
model file's own vocabulary and merges, plus special tokens and the chat template."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import secrets
import threading
from pathlib import Path

import jinja2
import jinja2.sandbox
import numpy as np
from tokenizers import AddedToken, Regex, decoders, models, normalizers, pre_tokenizers
from tokenizers import Tokenizer as Backend

from .errors import ModelFileError, TokenIdError, TokenizerError, UnsupportedModelError

# GPT-2's split, which the byte-level pre-tokenizer applies when use_regex=True
_LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                 r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_QWEN2_SPLIT = _LLAMA3_SPLIT.replace(r"\p{N}{1,3}", r"\p{N}")  # Qwen2: every digit on its own

# How each GGUF `tokenizer.ggml.pre` splits text before merging (llama.cpp's table): extra splits first,
# then the byte-level step; True means the byte-level step applies GPT-2's own regex.
_PRE_SPLITS: dict[str, tuple[list[str], bool]] = {
    "default": ([], True),
    "gpt2": ([], True),
    "smollm": ([r"\p{N}"], True),  # every digit on its own, then GPT-2's split
    "starcoder": ([r"\p{N}"], True),
    "refact": ([r"\p{N}"], True),
    "llama-bpe": ([_LLAMA3_SPLIT], False),
    "llama3": ([_LLAMA3_SPLIT], False),
    "qwen2": ([_QWEN2_SPLIT], False),  # and NFC first (_NFC)
}
_NFC = {"qwen2"}  # pre-tokenizers whose reference tokenizer composes the text (Unicode NFC) before splitting

def _byte_level_alphabet() -> dict[str, int]:
    """GPT-2's byte-level alphabet: each byte 0-255 is written as one printable character."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), 256))
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[chr(b)] = b
        else:
            chars[chr(256 + extra)] = b
            extra += 1
    return chars


_UNICODE_TO_BYTE = _byte_level_alphabet()

_END_OF_TURN = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end_of_text|>", "</s>", "<end_of_turn>", "<eos>")


class Tokenizer:
    """Text ↔ token ids for one model; special tokens written in a prompt are matched whole, those written in a
    chat message are its text (encode_chat)."""

    def __init__(self, backend: Backend, eos_ids: list[int], chat_template: str | None = None,
                 bos_token: str = "", eos_token: str = "", bos_id: int | None = None):
        self.backend = backend
        self.bos_id = bos_id  # prepended to a text that does not already begin with it (SentencePiece models)
        self.eos_ids = sorted(set(eos_ids))
        self.chat_template = chat_template
        self.bos_token, self.eos_token = bos_token, eos_token
        # bytes a byte-level vocabulary has no token for: BPE would drop them without a word (asked piece by piece:
        # the whole vocabulary, as a dict, takes a quarter of a second to make for 262,144 tokens)
        absent = [] if getattr(backend.model, "byte_fallback", False) else [
            b for ch, b in _UNICODE_TO_BYTE.items() if backend.model.token_to_id(ch) is None]
        self.missing_bytes = frozenset(absent) if len(absent) < 128 else frozenset()  # else not byte-level
        # asked of the backend once: each ask costs ~1 ms on a 262,144-token vocabulary, and streaming checks ids
        # every token
        self.vocab_size: int = backend.get_vocab_size(with_added_tokens=True)
        self.special_ids: frozenset[int] = frozenset(
            i for i, t in backend.get_added_tokens_decoder().items() if t.special)
        self._matching = threading.Lock()  # held while the backend's special-token matching is switched off

    def encode(self, text: str) -> list[int]:
        """Token ids of `text`, special tokens written in it (`<|im_start|>`) matched whole: a raw prompt may
        write a chat's turns itself. A byte-level BPE model gets no BOS: the reference tokenizers add none (the
        SmolLM2 GGUF's add_bos_token flag disagrees with its own reference tokenizer, which is followed); a model
        with `bos_id` gets it first, once (a chat template that writes it already is not given a second).
        Text holding a byte the vocabulary has no token for is refused rather than silently cut."""
        return self._with_bos(self._encode(text, specials=True))

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
            if isinstance(value, str):
                return self._special_text.sub(lambda m: f"{tag}{self.backend.token_to_id(m[0])}x", value)
            if isinstance(value, dict):
                return {k: hide(v) for k, v in value.items()}
            if isinstance(value, list | tuple):
                return [hide(v) for v in value]
            return value

        rendered = self.apply_chat_template(hide(messages), add_generation_prompt, hide(tools))
        ids = []
        for i, piece in enumerate(self._special_text.split(rendered)):  # text, special, text, …
            if i % 2:
                ids.append(self.backend.token_to_id(piece))
            elif piece:
                ids += self._encode(mark.sub(lambda m: self.backend.id_to_token(int(m[1])), piece), specials=False)
        return self._with_bos(ids)

    def _encode(self, text: str, specials: bool) -> list[int]:
        if self.missing_bytes and not self.missing_bytes.isdisjoint(text.encode()):
            bad = next(ch for ch in text if not self.missing_bytes.isdisjoint(ch.encode()))
            byte = min(self.missing_bytes & set(bad.encode()))
            raise TokenizerError(f"the text holds {bad!r} (U+{ord(bad):04X}), which this model's vocabulary "
                                 f"cannot represent (it has no token for byte 0x{byte:02x})")
        with self._matching:
            self.backend.encode_special_tokens = not specials  # True: special tokens are encoded as their text
            try:
                return self.backend.encode(text, add_special_tokens=False).ids
            finally:
                self.backend.encode_special_tokens = False

    def _with_bos(self, ids: list[int]) -> list[int]:
        return [self.bos_id, *ids] if self.bos_id is not None and ids[:1] != [self.bos_id] else ids

    @functools.cached_property
    def _special_text(self) -> re.Pattern:
        """Any special token's text (the longest where several begin at one place, as the backend matches them),
        in one capturing group: a trie, since an alternation of Gemma's 6,249 would try each at every '<'."""
        return re.compile(f"({_trie_pattern([self.backend.id_to_token(i) for i in self.special_ids])})")

    def decode(self, ids: list[int]) -> str:
        self.check_ids(ids)
        return self.backend.decode(list(ids), skip_special_tokens=False)

    def piece(self, token_id: int) -> str:
        """One token as text, e.g. ' cat'. A piece holding only part of a UTF-8 character (byte-level BPE splits 猫
        into three) shows those bytes as SentencePiece names its byte pieces: '<0xE7><0x8C>'."""
        text = self.decode([token_id])
        if "\ufffd" not in text:
            return text
        raw, out, i = self.token_bytes(token_id), [], 0
        while i < len(raw):  # whole characters as text, stray bytes by name
            for n in (1, 2, 3, 4):
                try:
                    out.append(raw[i:i + n].decode())
                    i += n
                    break
                except UnicodeDecodeError:
                    continue
            else:
                out.append(f"<0x{raw[i]:02X}>")
                i += 1
        return "".join(out)

    def token_bytes(self, token_id: int) -> bytes:
        """The raw bytes a token stands for (a byte-level piece may be part of a UTF-8 character)."""
        token = self.backend.id_to_token(token_id)
        if token is None:
            raise TokenIdError(f"token id {token_id} is outside the vocabulary [0, {self.vocab_size})")
        if all(ch in _UNICODE_TO_BYTE for ch in token) and token_id not in self.special_ids:
            return bytes(_UNICODE_TO_BYTE[ch] for ch in token)
        return token.encode()

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
        env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                                            extensions=["jinja2.ext.loopcontrols"])
        env.globals["raise_exception"] = _raise_template_error
        try:
            template = env.from_string(self.chat_template)
            return template.render(messages=messages, add_generation_prompt=add_generation_prompt,
                                   bos_token=self.bos_token, eos_token=self.eos_token,
                                   **({"tools": tools} if tools else {}))
        except jinja2.TemplateError as e:
            raise UnsupportedModelError(f"the model's chat template failed: {e}") from None

    @classmethod
    def from_gguf_fields(cls, fields: dict, chat_template: str | None = None) -> Tokenizer:
        """Build from GGUF metadata (`tokenizer.ggml.*`, already decoded to Python values): byte-level BPE
        ("gpt2") or SentencePiece BPE with byte fallback ("llama": Gemma, Llama 2, Mistral). `chat_template`: the
        family's own, for a file that carries none."""
        kind = fields.get("tokenizer.ggml.model")
        if kind == "llama":
            return cls._sentencepiece(fields, chat_template)
        if kind != "gpt2":
            raise UnsupportedModelError(f"GGUF tokenizer {kind!r} is not supported (byte-level BPE 'gpt2' and "
                                        f"SentencePiece 'llama' are)")
        pre = fields.get("tokenizer.ggml.pre", "default")
        if pre not in _PRE_SPLITS:
            raise UnsupportedModelError(f"GGUF pre-tokenizer {pre!r} is not supported; known: {', '.join(_PRE_SPLITS)}")
        tokens: list[str] = fields["tokenizer.ggml.tokens"]
        merges = [tuple(m.split(" ", 1)) for m in fields["tokenizer.ggml.merges"]]
        backend = Backend(models.BPE({t: i for i, t in enumerate(tokens)}, merges, fuse_unk=False))
        splits, gpt2_regex = _PRE_SPLITS[pre]
        backend.pre_tokenizer = pre_tokenizers.Sequence(
            [pre_tokenizers.Split(Regex(s), behavior="isolated") for s in splits]
            + [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=gpt2_regex)])
        if pre in _NFC:
            backend.normalizer = normalizers.NFC()
        backend.decoder = decoders.ByteLevel()
        types = fields.get("tokenizer.ggml.token_type", [])
        special = [tokens[i] for i, t in enumerate(types) if t == 3]  # 3: control token
        backend.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in special])
        eos = [i for i, t in enumerate(tokens) if t in _END_OF_TURN and i < len(types) and types[i] == 3]
        if "tokenizer.ggml.eos_token_id" in fields and not eos:
            eos = [fields["tokenizer.ggml.eos_token_id"]]
        bos_id = fields.get("tokenizer.ggml.bos_token_id")
        return cls(backend, eos, fields.get("tokenizer.chat_template"),
                   bos_token=tokens[bos_id] if bos_id is not None else "",
                   eos_token=tokens[eos[0]] if eos else "")

    @classmethod
    def _sentencepiece(cls, fields: dict, chat_template: str | None) -> Tokenizer:
        """SentencePiece BPE from the file's pieces and scores: spaces become "▁", adjacent pieces merge while
        their join is a piece (the highest-scoring join first), and what no piece covers falls back to byte tokens
        (<0x41>). Written as `tokenizers` BPE, with merges ranked by the score of the piece they make."""
        tokens: list[str] = fields["tokenizer.ggml.tokens"]
        scores: list[float] = fields.get("tokenizer.ggml.scores") or [0.0] * len(tokens)
        types: list[int] = fields.get("tokenizer.ggml.token_type") or [1] * len(tokens)
        unk = fields.get("tokenizer.ggml.unknown_token_id")
        prefix = fields.get("tokenizer.ggml.add_space_prefix", True)
        backend = _sentencepiece_backend(tokens, scores, types, unk, prefix)
        eos_id = fields.get("tokenizer.ggml.eos_token_id")
        eos = [i for i, t in enumerate(tokens) if t in _END_OF_TURN and types[i] == 3] or \
            ([eos_id] if eos_id is not None else [])
        bos_id = fields.get("tokenizer.ggml.bos_token_id")
        add_bos = bool(fields.get("tokenizer.ggml.add_bos_token", False)) and bos_id is not None
        return cls(backend, eos, fields.get("tokenizer.chat_template") or chat_template,
                   bos_token=tokens[bos_id] if bos_id is not None else "",
                   eos_token=tokens[eos[0]] if eos else "", bos_id=bos_id if add_bos else None)

    @classmethod
    def from_directory(cls, directory: Path) -> Tokenizer | None:
        """Build from a checkpoint directory's `tokenizer.json` (and `tokenizer_config.json`), if it has one."""
        path = directory / "tokenizer.json"
        if not path.exists():
            return None
        try:
            backend = Backend.from_file(str(path))
        except Exception as e:
            raise ModelFileError(f"{path}: not a readable tokenizer.json ({e})") from None
        config_path = directory / "tokenizer_config.json"
        config = json.loads(config_path.read_text()) if config_path.exists() else {}
        vocab = backend.get_vocab(with_added_tokens=True)
        eos = [vocab[t] for t in _END_OF_TURN if t in vocab]
        return cls(backend, eos, config.get("chat_template"), bos_token=_token_text(config.get("bos_token")),
                   eos_token=_token_text(config.get("eos_token")))


def _sentencepiece_backend(tokens: list[str], scores: list[float], types: list[int], unk: int | None,
                           prefix: bool) -> Backend:
    vocab = {t: i for i, t in enumerate(tokens)}
    backend = Backend(models.BPE(vocab, _ranked_merges(tokens, scores, types, vocab),
                                 unk_token=tokens[unk] if unk is not None else None, fuse_unk=True,
                                 byte_fallback=True))
    backend.normalizer = normalizers.Sequence(([normalizers.Prepend("▁")] if prefix else [])
                                              + [normalizers.Replace(" ", "▁")])
    backend.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()]
                                        + ([decoders.Strip(" ", 1, 0)] if prefix else []))
    # control tokens (3) are special; user-defined ones (4: newline runs, tags) are matched whole, as text
    backend.add_special_tokens([AddedToken(tokens[i], special=True, normalized=False)
                                for i, t in enumerate(types) if t == 3])
    backend.add_tokens([AddedToken(tokens[i], special=False, normalized=False)
                        for i, t in enumerate(types) if t == 4])
    return backend


def _ranked_merges(tokens: list[str], scores: list[float], types: list[int],
                   vocab: dict[str, int]) -> list[tuple[str, str]]:
    """_sentencepiece_merges, kept in the cache as id pairs under a digest of the pieces, their scores and types
    and this module's source, and read from there after: ranking a 262,144-piece vocabulary's merges takes ~2 s,
    reading them back milliseconds. A cache that cannot be read is ranked again; one that cannot be written is
    skipped."""
    from .packaged import cache_dir

    digest = hashlib.sha256(Path(__file__).read_bytes())
    digest.update("\0".join(tokens).encode("utf-8", "surrogatepass"))
    digest.update(np.asarray(scores, np.float32).tobytes() + np.asarray(types, np.int64).tobytes())
    path = cache_dir() / "tokenizers" / f"merges-{digest.hexdigest()[:24]}.npy"
    pairs = None
    try:
        pairs = np.load(path, allow_pickle=False)
        if pairs.ndim != 2 or pairs.shape[1] != 2 or pairs.dtype != np.int32 or (
                len(pairs) and not 0 <= int(pairs.min()) <= int(pairs.max()) < len(tokens)):
            pairs = None
    except (OSError, ValueError):
        pass
    if pairs is None:
        pairs = np.asarray(_sentencepiece_merges(tokens, scores, types, vocab), np.int32).reshape(-1, 2)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npy")
            np.save(tmp, pairs)
            tmp.replace(path)
        except OSError:
            pass
    pieces = np.array(tokens, dtype=object)
    return list(zip(pieces[pairs[:, 0]].tolist(), pieces[pairs[:, 1]].tolist(), strict=True))


def _sentencepiece_merges(tokens: list[str], scores: list[float], types: list[int],
                          vocab: dict[str, int]) -> list[tuple[int, int]]:
    """Every (left, right) split of a normal piece into two pieces, as ids, ranked by the joined piece's score
    (highest first), then by the halves' ids: BPE applying them in that order makes SentencePiece's choices."""
    found = []
    get = vocab.get
    for i, piece in enumerate(tokens):
        if types[i] != 1 or len(piece) < 2:
            continue
        rank = -scores[i]
        for cut in range(1, len(piece)):
            left = get(piece[:cut])
            if left is not None:
                right = get(piece[cut:])
                if right is not None:
                    found.append((rank, left, right))
    found.sort()
    return [(left, right) for _, left, right in found]


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


def _token_text(token) -> str:
    if isinstance(token, dict):
        return token.get("content", "")
    return token or ""


def _raise_template_error(message: str):
    raise jinja2.TemplateError(message)
