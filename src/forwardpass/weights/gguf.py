"""GGUF files (llama.cpp's format): metadata → ModelConfig, tensors → canonical names, dequantized with `gguf`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from gguf import GGMLQuantizationType, GGUFReader, GGUFValueType
from gguf.quants import dequantize

from ..config import ModelConfig
from ..errors import ModelFileError, UnsupportedModelError
from ..tokenizer import Tokenizer
from . import Checkpoint
from .progress import track

SUPPORTED_ARCHITECTURES = ("llama",)


def open_gguf(path: Path) -> GGUFReader:
    """A reader over the file, or a one-line error if it is not a complete GGUF file."""
    with open(path, "rb") as f:
        magic = f.read(4)
    if magic != b"GGUF":
        raise ModelFileError(f"{path}: not a GGUF file (starts with {magic!r}, expected b'GGUF')")
    try:
        return GGUFReader(path)
    except Exception as e:  # the reader raises bare ValueError/IndexError on truncated data
        raise ModelFileError(f"{path}: truncated or corrupt GGUF file ({type(e).__name__}: {e})") from None


def field_value(reader: GGUFReader, key: str):
    """One metadata value as a Python value (str, int, float, bool or list)."""
    f = reader.fields[key]
    if f.types[0] == GGUFValueType.ARRAY:
        if len(f.types) > 1 and f.types[1] == GGUFValueType.STRING:
            return [bytes(f.parts[i]).decode("utf-8", errors="replace") for i in f.data]
        return [f.parts[i][0].item() for i in f.data]
    if f.types[0] == GGUFValueType.STRING:
        return bytes(f.parts[f.data[0]]).decode("utf-8", errors="replace")
    return f.parts[f.data[0]][0].item()


def gguf_config(reader: GGUFReader, path: Path) -> ModelConfig:
    fields = reader.fields
    arch = field_value(reader, "general.architecture") if "general.architecture" in fields else None
    if arch not in SUPPORTED_ARCHITECTURES:
        raise UnsupportedModelError(f"{path}: GGUF architecture {arch!r} is not supported "
                                    f"(supported: {', '.join(SUPPORTED_ARCHITECTURES)})")

    def get(key: str, default=None):
        full = f"{arch}.{key}"
        if full in fields:
            return field_value(reader, full)
        if default is None:
            raise ModelFileError(f"{path}: GGUF metadata lacks {full}")
        return default

    d_model, n_heads = get("embedding_length"), get("attention.head_count")
    if get("rope.dimension_count", d_model // n_heads) != d_model // n_heads:
        raise UnsupportedModelError(f"{path}: partial rotary embeddings are not supported")
    if f"{arch}.rope.scaling.type" in fields and field_value(reader, f"{arch}.rope.scaling.type") != "none":
        raise UnsupportedModelError(f"{path}: RoPE scaling is not supported")
    names = {t.name for t in reader.tensors}
    tokens = fields.get("tokenizer.ggml.tokens")
    vocab = get("vocab_size", len(tokens.data) if tokens is not None else 0)
    return ModelConfig(
        name=field_value(reader, "general.name") if "general.name" in fields else path.stem,
        vocab_size=vocab, context_length=get("context_length"), d_model=d_model, n_layers=get("block_count"),
        n_heads=n_heads, n_kv_heads=get("attention.head_count_kv", n_heads), ffn_hidden=get("feed_forward_length"),
        norm="rmsnorm", norm_eps=get("attention.layer_norm_rms_epsilon"), positions="rope",
        rope_theta=get("rope.freq_base", 10000.0), ffn="swiglu", bias=False,
        tied_embeddings="output.weight" not in names,
    )


def unpermute_rotary(w: torch.Tensor, n_heads: int) -> torch.Tensor:
    """llama.cpp interleaves each head's rotary pairs (0,1),(2,3)…; undo it into halves (i, i + head_dim/2)."""
    rows, cols = w.shape
    return w.view(n_heads, rows // n_heads // 2, 2, cols).transpose(1, 2).reshape(rows, cols)


def tensor_f32(t) -> torch.Tensor:
    """A GGUF tensor dequantized to float32, shaped (rows, cols) like a torch weight."""
    if t.tensor_type in (GGMLQuantizationType.F32, GGMLQuantizationType.F16, GGMLQuantizationType.BF16):
        data = dequantize(t.data, t.tensor_type) if t.tensor_type == GGMLQuantizationType.BF16 else t.data
        return torch.from_numpy(np.array(data, dtype=np.float32))  # a writable copy of the memory map
    return torch.from_numpy(dequantize(t.data, t.tensor_type))


def read_gguf(path: Path, progress: bool = False) -> Checkpoint:
    reader = open_gguf(path)
    config = gguf_config(reader, path)
    by_name = {t.name: t for t in reader.tensors}

    def take(name: str) -> torch.Tensor:
        if name not in by_name:
            raise ModelFileError(f"{path}: GGUF file lacks tensor {name}")
        try:
            return tensor_f32(by_name[name])
        except Exception as e:
            raise ModelFileError(f"{path}: cannot read tensor {name} ({type(e).__name__}: {e})") from None

    tensors = {"tok_embeddings.weight": take("token_embd.weight"), "norm_f.weight": take("output_norm.weight")}
    if not config.tied_embeddings:
        tensors["lm_head.weight"] = take("output.weight")
    for i in track(range(config.n_layers), "dequantizing", progress):
        try:
            tensors.update(_block_tensors(take, config, i))
        except RuntimeError as e:  # projections whose shapes cannot be joined
            raise ModelFileError(f"{path}: block {i} has tensors of mismatched shapes ({e})") from None
    tok_fields = {k: field_value(reader, k) for k in reader.fields if k.startswith("tokenizer.")}
    tokenizer = Tokenizer.from_gguf_fields(tok_fields) if "tokenizer.ggml.tokens" in tok_fields else None
    types = sorted({t.tensor_type.name for t in reader.tensors})
    return Checkpoint(config, tensors, tokenizer, str(path), {"format": "gguf", "tensor_types": types})


def _block_tensors(take, config: ModelConfig, i: int) -> dict[str, torch.Tensor]:
    """Block i's tensors under our names: Q, K, V joined (Q and K back in rotary halves), gate and up joined."""
    p, b = f"blk.{i}.", f"blocks.{i}."
    out = {}
    q = unpermute_rotary(take(p + "attn_q.weight"), config.n_heads)
    k = unpermute_rotary(take(p + "attn_k.weight"), config.kv_heads)
    out[b + "attn.qkv.weight"] = torch.cat([q, k, take(p + "attn_v.weight")])
    out[b + "attn.out.weight"] = take(p + "attn_output.weight")
    out[b + "attn_norm.weight"] = take(p + "attn_norm.weight")
    out[b + "ffn_norm.weight"] = take(p + "ffn_norm.weight")
    out[b + "ffn.gate_up.weight"] = torch.cat([take(p + "ffn_gate.weight"), take(p + "ffn_up.weight")])
    out[b + "ffn.down.weight"] = take(p + "ffn_down.weight")
    return out
