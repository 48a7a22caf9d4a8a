"""Hugging Face checkpoints: config.json + safetensors shards, their tensors under the engine's names as the
checkpoint's family (models/, by config.json's model_type) maps them."""

from __future__ import annotations

import torch
from safetensors import safe_open

from ..errors import ModelFileError
from ..models import Stored, TensorMap
from . import Checkpoint
from .opened import OpenedModel
from .progress import track


def read_safetensors(opened: OpenedModel, progress: bool = False) -> Checkpoint:
    path, config, family = opened.path, opened.config, opened.family
    directory = path if path.is_dir() else path.parent

    files = [path] if path.is_file() else sorted(directory.glob("*.safetensors"))
    if not files:
        raise ModelFileError(f"{directory}: no .safetensors files")
    raw: dict[str, torch.Tensor] = {}
    for f in track(files, "reading", progress):
        try:
            with safe_open(f, framework="pt") as st:
                for key in st.keys():
                    raw[key] = st.get_tensor(key)
        except Exception as e:
            raise ModelFileError(f"{f}: not a readable safetensors file ({e})") from None

    try:
        tensors = gather(raw, family.hf_tensors(config, set(raw)))
    except RuntimeError as e:  # projections whose shapes cannot be joined
        raise ModelFileError(f"{path}: tensors of mismatched shapes ({e})") from None
    tokenizer, metadata = opened.tokenizer_and_metadata()
    return Checkpoint(config, tensors, tokenizer, str(path), metadata)


def gather(raw: dict[str, torch.Tensor], tensors: TensorMap) -> dict[str, torch.Tensor]:
    """The engine's tensors from a checkpoint's (`raw`), each as its family's map says the file stores it: parts
    stacked by rows, transposed, or a norm's w made 1 + w."""
    return {ours: _gathered(raw, s) for ours, s in tensors.items()}


def _gathered(raw: dict[str, torch.Tensor], s: Stored) -> torch.Tensor:
    if s.rotary_heads:
        raise ValueError(f"{', '.join(s.names)}: safetensors keep rotary pairs in halves (rotary_heads is GGUF's)")
    parts = [_take(raw, name) for name in s.names]
    t = parts[0] if len(parts) == 1 else torch.cat(parts)
    if s.transposed:
        t = t.t()
    return t + 1 if s.add_one else t


def _take(raw: dict, key: str) -> torch.Tensor:
    if key not in raw:
        raise ModelFileError(f"checkpoint is missing tensor {key}")
    return raw[key]
