"""Model files → (ModelConfig, canonical tensors, tokenizer). GGUF and Hugging Face safetensors."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..config import ModelConfig
from ..errors import ModelFileError
from ..tokenizer import Tokenizer


@dataclass
class Checkpoint:
    """What a model file holds, in forwardpass's own tensor names (those of `Transformer.state_dict()`)."""

    config: ModelConfig
    tensors: dict[str, torch.Tensor]
    tokenizer: Tokenizer | None
    source: str
    metadata: dict = field(default_factory=dict)


def read_config(path: str | Path) -> ModelConfig:
    """Only the ModelConfig of a model file: reads metadata, never the tensors."""
    path = Path(path)
    if not path.exists():
        raise ModelFileError(f"model file not found: {path}")
    if path.is_file() and path.suffix != ".safetensors":
        from .gguf import gguf_config, open_gguf
        return gguf_config(open_gguf(path), path)
    from .safetensors import safetensors_config
    return safetensors_config(path)[0]


def read_checkpoint(path: str | Path, progress: bool = False) -> Checkpoint:
    """Read a `.gguf` file, or a safetensors checkpoint (a directory with config.json, or a file inside one)."""
    path = Path(path)
    if not path.exists():
        raise ModelFileError(f"model file not found: {path}")
    if path.is_file() and path.suffix != ".safetensors":
        from .gguf import read_gguf
        return read_gguf(path, progress)
    from .safetensors import read_safetensors
    return read_safetensors(path, progress)
