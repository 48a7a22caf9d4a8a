"""What a Tokenizer is built from, read from a model's files: GGUF metadata (`tokenizer.ggml.*`: byte-level BPE split
as its pre-tokenizer says, or SentencePiece BPE) or a checkpoint directory's tokenizer.json."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ModelFileError, UnsupportedModelError
from .byte_level_bpe import GPT2_SPLIT, LLAMA3_SPLIT, QWEN2_SPLIT, ByteLevelBPE
from .sentencepiece_bpe import SentencePieceBPE

if TYPE_CHECKING:
    from .hf_tokenizer import HFBackend

# How each GGUF `tokenizer.ggml.pre` splits text before merging (llama.cpp's table): its regexes, in order
_PRE_SPLITS: dict[str, list[str]] = {
    "default": [GPT2_SPLIT],
    "gpt2": [GPT2_SPLIT],
    "smollm": [r"\p{N}", GPT2_SPLIT],  # every digit on its own, then GPT-2's split
    "starcoder": [r"\p{N}", GPT2_SPLIT],
    "refact": [r"\p{N}", GPT2_SPLIT],
    "llama-bpe": [LLAMA3_SPLIT],
    "llama3": [LLAMA3_SPLIT],
    "qwen2": [QWEN2_SPLIT],  # and NFC first (_NFC)
}
_NFC = {"qwen2"}  # pre-tokenizers whose reference tokenizer composes the text (Unicode NFC) before splitting
_IGNORE_MERGES = {"llama-bpe", "llama3"}  # a piece that is a token stays whole (Llama 3's tokenizer.json, llama.cpp)

_END_OF_TURN = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end_of_text|>", "</s>", "<end_of_turn>", "<eos>")


@dataclass
class TokenizerParts:
    """A Tokenizer's arguments, as Tokenizer.__init__ takes them."""

    backend: ByteLevelBPE | SentencePieceBPE | HFBackend
    eos_ids: list[int]
    chat_template: str | None = None
    bos_token: str = ""
    eos_token: str = ""
    bos_id: int | None = None


def gguf_parts(fields: dict, chat_template: str | None = None) -> TokenizerParts:
    """From GGUF metadata (`tokenizer.ggml.*`, already decoded to Python values): byte-level BPE ("gpt2") or
    SentencePiece BPE with byte fallback ("llama": Gemma, Llama 2, Mistral). `chat_template`: the family's own, for a
    SentencePiece file that carries none."""
    kind = fields.get("tokenizer.ggml.model")
    if kind == "llama":
        return _sentencepiece(fields, chat_template)
    if kind != "gpt2":
        raise UnsupportedModelError(f"GGUF tokenizer {kind!r} is not supported (byte-level BPE 'gpt2' and "
                                    f"SentencePiece 'llama' are)")
    return _byte_level_bpe(fields)


def _byte_level_bpe(fields: dict) -> TokenizerParts:
    """Byte-level BPE from the file's tokens and merges, split first as its pre-tokenizer says (_PRE_SPLITS)."""
    pre = fields.get("tokenizer.ggml.pre", "default")
    if pre not in _PRE_SPLITS:
        raise UnsupportedModelError(f"GGUF pre-tokenizer {pre!r} is not supported; known: {', '.join(_PRE_SPLITS)}")
    tokens: list[str] = fields["tokenizer.ggml.tokens"]
    types = fields.get("tokenizer.ggml.token_type") or [1] * len(tokens)
    if "tokenizer.ggml.merges" not in fields or len(types) != len(tokens):
        raise ModelFileError(f"the file's byte-level tokenizer needs its merges and one type per token (it has "
                             f"{len(tokens)} tokens, {len(types)} types and "
                             f"{len(fields.get('tokenizer.ggml.merges', []))} merges)")
    backend = ByteLevelBPE(tokens, fields["tokenizer.ggml.merges"], types, _PRE_SPLITS[pre], pre in _NFC,
                           ignore_merges=pre in _IGNORE_MERGES)
    eos = sorted(i for t in _END_OF_TURN if (i := backend.token_to_id(t)) is not None and i in backend.special_ids)
    if "tokenizer.ggml.eos_token_id" in fields and not eos:
        eos = [fields["tokenizer.ggml.eos_token_id"]]
    bos_id = fields.get("tokenizer.ggml.bos_token_id")
    return TokenizerParts(backend, eos, fields.get("tokenizer.chat_template"),
                          bos_token=tokens[bos_id] if bos_id is not None else "",
                          eos_token=tokens[eos[0]] if eos else "")


def _sentencepiece(fields: dict, chat_template: str | None) -> TokenizerParts:
    """SentencePiece BPE from the file's pieces, scores and types (sentencepiece_bpe.py)."""
    tokens: list[str] = fields["tokenizer.ggml.tokens"]
    scores: list[float] = fields.get("tokenizer.ggml.scores") or [0.0] * len(tokens)
    types: list[int] = fields.get("tokenizer.ggml.token_type") or [1] * len(tokens)
    unk = fields.get("tokenizer.ggml.unknown_token_id")
    prefix = fields.get("tokenizer.ggml.add_space_prefix", True)
    if not len(scores) == len(types) == len(tokens):
        raise ModelFileError(f"the file's tokenizer has {len(tokens)} pieces, {len(scores)} scores and {len(types)} "
                             f"types: one of each per piece is needed")
    backend = SentencePieceBPE(tokens, scores, types, unk, prefix)
    eos_id = fields.get("tokenizer.ggml.eos_token_id")
    eos = sorted(i for t in _END_OF_TURN if (i := backend.token_to_id(t)) is not None and i in backend.special_ids) or \
        ([eos_id] if eos_id is not None else [])
    bos_id = fields.get("tokenizer.ggml.bos_token_id")
    add_bos = bool(fields.get("tokenizer.ggml.add_bos_token", False)) and bos_id is not None
    return TokenizerParts(backend, eos, fields.get("tokenizer.chat_template") or chat_template,
                          bos_token=tokens[bos_id] if bos_id is not None else "",
                          eos_token=tokens[eos[0]] if eos else "", bos_id=bos_id if add_bos else None)


def directory_parts(directory: Path) -> TokenizerParts | None:
    """From a checkpoint directory's `tokenizer.json` (and `tokenizer_config.json`), if it has one."""
    path = directory / "tokenizer.json"
    if not path.exists():
        return None
    from tokenizers import Tokenizer as Backend

    from .hf_tokenizer import HFBackend

    try:
        backend = Backend.from_file(str(path))
    except Exception as e:
        raise ModelFileError(f"{path}: not a readable tokenizer.json ({e})") from None
    config_path = directory / "tokenizer_config.json"
    config = json.loads(config_path.read_text()) if config_path.exists() else {}
    vocab = backend.get_vocab(with_added_tokens=True)
    eos = [vocab[t] for t in _END_OF_TURN if t in vocab]
    return TokenizerParts(HFBackend(backend), eos, config.get("chat_template"),
                          bos_token=_token_text(config.get("bos_token")),
                          eos_token=_token_text(config.get("eos_token")))


def _token_text(token) -> str:
    if isinstance(token, dict):
        return token.get("content", "")
    return token or ""
