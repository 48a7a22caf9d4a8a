"""A GGUF file's metadata → ModelConfig, through the family its general.architecture names (no tensor is read,
and nothing here needs PyTorch)."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..config import ModelConfig
from ..errors import ModelFileError
from ..models import Family, GGUFMetadata, by_gguf_arch
from .gguf_file import GGUFFile, NotGGUF, Truncated

if TYPE_CHECKING:
    from ..text.tokenizer import Tokenizer


def not_gguf(path: Path, magic: bytes) -> ModelFileError:
    return ModelFileError(f"{path}: not a GGUF file (starts with {magic!r}, expected b'GGUF')")


def check_magic(path: Path) -> None:
    """A one-line error unless the file starts as a GGUF file does (its first 4 bytes)."""
    with open(path, "rb") as f:
        magic = f.read(4)
    if magic != b"GGUF":
        raise not_gguf(path, magic)


def open_gguf(path: Path) -> GGUFFile:
    """The file, memory-mapped and its header read, or a one-line error if it is not a complete GGUF file."""
    try:
        return GGUFFile(path)
    except NotGGUF as e:
        raise not_gguf(path, e.magic) from None
    except Truncated as e:
        raise ModelFileError(f"{path}: truncated GGUF file ({e})") from None
    except (ValueError, struct.error, UnicodeError) as e:
        raise ModelFileError(f"{path}: corrupt GGUF file ({e})") from None


def gguf_family(reader: GGUFFile, path: Path) -> Family:
    """The family the file declares (general.architecture)."""
    return by_gguf_arch(reader.fields.get("general.architecture"), str(path))


def gguf_config(reader: GGUFFile, path: Path, family: Family | None = None) -> ModelConfig:
    """The file's ModelConfig, read by its family (given, or the one it declares) from the metadata under its
    architecture's keys."""
    family = family or gguf_family(reader, path)
    return family.gguf_config(GGUFMetadata(reader.fields, family.gguf_arch, path, {t.name for t in reader.tensors}))


BAND_WEIGHTS = 2**21  # weights a band of a large tensor holds while it is read (2 MB unpacked)

# the sampling a file recommends (llama.cpp's general.sampling.* keys), by the request field each sets
RECOMMENDED = {"general.sampling.temp": "temperature", "general.sampling.top_k": "top_k",
               "general.sampling.top_p": "top_p", "general.sampling.min_p": "min_p",
               "general.sampling.penalty_repeat": "repetition_penalty"}


def recommended(fields: dict) -> dict:
    """The sampling a GGUF file's metadata recommends, by request field name (server_defaults.py reads it)."""
    return {name: fields[key] for key, name in RECOMMENDED.items()
            if isinstance(fields.get(key), (int, float)) and not isinstance(fields.get(key), bool)}


def rotary_order(rows: int, n_heads: int) -> np.ndarray:
    """llama.cpp interleaves each head's rotary pairs (0,1),(2,3)…: the row order that puts them back into halves
    (i, i + head_dim/2)."""
    return np.arange(rows).reshape(n_heads, rows // n_heads // 2, 2).transpose(0, 2, 1).reshape(rows)


def tokenizer_and_metadata(reader: GGUFFile, family: Family) -> tuple[Tokenizer | None, dict]:
    """A file's tokenizer (None where it has none) and what the loaders report of it (its format, its tensor types,
    the sampling it recommends); then its metadata's Python values are let go (about 10 MB for a large vocabulary):
    only the tensors are left."""
    from ..text.tokenizer import Tokenizer

    fields = {k: v for k, v in reader.fields.items() if k.startswith("tokenizer.")}
    tokenizer = Tokenizer.from_gguf_fields(fields, family.chat_template) if "tokenizer.ggml.tokens" in fields else None
    metadata = {"format": "gguf", "tensor_types": sorted({t.kind.name for t in reader.tensors}),
                "sampling": recommended(reader.fields)}
    reader.fields = reader.types = {}
    return tokenizer, metadata
