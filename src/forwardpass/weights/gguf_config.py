"""A GGUF file's metadata → ModelConfig (no tensor is read, and nothing here needs PyTorch)."""

from __future__ import annotations

import struct
from pathlib import Path

from ..config import (
    GEMMA3,
    GEMMA3_LOCAL_ROPE_THETA,
    GEMMA3_SLIDING_PATTERN,
    ModelConfig,
    RopeScaling,
    every_nth_full,
)
from ..errors import ModelFileError, UnsupportedModelError
from .gguf_file import GGUFFile, Truncated

SUPPORTED_ARCHITECTURES = ("llama", "gemma3")


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


def gguf_config(reader: GGUFFile, path: Path) -> ModelConfig:
    fields = reader.fields
    arch = fields.get("general.architecture")
    if arch not in SUPPORTED_ARCHITECTURES:
        raise UnsupportedModelError(f"{path}: GGUF architecture {arch!r} is not supported "
                                    f"(supported: {', '.join(SUPPORTED_ARCHITECTURES)})")

    def get(key: str, default=None):
        full = f"{arch}.{key}"
        if full in fields:
            return fields[full]
        if default is None:
            raise ModelFileError(f"{path}: GGUF metadata lacks {full}")
        return default

    d_model, n_heads = get("embedding_length"), get("attention.head_count")
    head_dim = get("attention.key_length", d_model // n_heads)
    if get("attention.value_length", head_dim) != head_dim:
        raise UnsupportedModelError(f"{path}: keys and values of different widths are not supported")
    if get("rope.dimension_count", head_dim) != head_dim:
        raise UnsupportedModelError(f"{path}: partial rotary embeddings are not supported")
    scaling = fields.get(f"{arch}.rope.scaling.type", "none")
    if scaling not in ("none", "linear"):
        raise UnsupportedModelError(f"{path}: RoPE scaling {scaling!r} is not supported (linear is)")
    names = {t.name for t in reader.tensors}
    tokens = fields.get("tokenizer.ggml.tokens")
    vocab = get("vocab_size", len(tokens) if tokens is not None else 0)
    n_layers = get("block_count")
    config = ModelConfig(
        name=fields.get("general.name", path.stem),
        vocab_size=vocab, context_length=get("context_length"), d_model=d_model, n_layers=n_layers,
        n_heads=n_heads, n_kv_heads=get("attention.head_count_kv", n_heads), ffn_hidden=get("feed_forward_length"),
        norm="rmsnorm", norm_eps=get("attention.layer_norm_rms_epsilon"), positions="rope",
        rope_theta=get("rope.freq_base", 10000.0), ffn="swiglu", bias=False,
        tied_embeddings="output.weight" not in names,
        head_size=None if head_dim == d_model // n_heads else head_dim,
        rope_scaling=RopeScaling("linear", get("rope.scaling.factor")) if scaling == "linear" else None,
    )
    if arch == "gemma3":  # the file stores neither the layer pattern nor the sliding layers' RoPE base (llama.cpp
        # takes the same defaults)
        config = config.with_(
            query_scale=head_dim**-0.5, sliding_window=get("attention.sliding_window"),
            local_rope_theta=GEMMA3_LOCAL_ROPE_THETA, layer_types=every_nth_full(n_layers, GEMMA3_SLIDING_PATTERN),
            **GEMMA3)
    return config
