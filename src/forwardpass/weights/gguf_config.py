"""A GGUF file's metadata → ModelConfig, through the family its general.architecture names (no tensor is read,
and nothing here needs PyTorch)."""

from __future__ import annotations

import struct
from pathlib import Path

from ..config import ModelConfig
from ..errors import ModelFileError
from ..models import Family, GGUFMetadata, by_gguf_arch
from .gguf_file import GGUFFile, Truncated


def check_magic(path: Path) -> None:
    """A one-line error unless the file starts as a GGUF file does (its first 4 bytes)."""
    with open(path, "rb") as f:
        magic = f.read(4)
    if magic != b"GGUF":
        raise ModelFileError(f"{path}: not a GGUF file (starts with {magic!r}, expected b'GGUF')")


def open_gguf(path: Path) -> GGUFFile:
    """The file, memory-mapped, or a one-line error if it is not a complete GGUF file."""
    check_magic(path)
    try:
        return GGUFFile(path)
    except Truncated as e:
        raise ModelFileError(f"{path}: truncated GGUF file ({e})") from None
    except (ValueError, struct.error, UnicodeError) as e:
        raise ModelFileError(f"{path}: corrupt GGUF file ({e})") from None


def gguf_family(reader: GGUFFile, path: Path) -> Family:
    """The family the file declares (general.architecture)."""
    return by_gguf_arch(reader.fields.get("general.architecture"), str(path))


def gguf_config(reader: GGUFFile, path: Path) -> ModelConfig:
    """The file's ModelConfig, read by its family from the metadata under its architecture's keys."""
    family = gguf_family(reader, path)
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
