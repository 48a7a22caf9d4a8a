"""Model files → (ModelConfig, canonical tensors, tokenizer). GGUF and Hugging Face safetensors."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import ModelConfig
from ..errors import ModelFileError

if TYPE_CHECKING:  # reading a file's config needs neither
    import torch

    from ..quant import Blocks
    from ..text.tokenizer import Tokenizer
    from .opened import OpenedModel


@dataclass
class Deferred:
    """A tensor read from the file only when the model is built (weights then exist once, never twice)."""

    shape: tuple[int, ...]
    read: Callable[[], torch.Tensor | Blocks]
    blocks: bool  # read() gives Blocks


def resolve(t: torch.Tensor | Blocks | Deferred) -> torch.Tensor | Blocks:
    """The tensor, read from the file now if it was deferred."""
    return t.read() if isinstance(t, Deferred) else t


def return_freed_memory() -> None:
    """Hand the heap that loading freed (each tensor's conversion buffers) back to the system: glibc keeps it
    otherwise, about a third of a 1 B model's size in resident memory. A no-op where there is no glibc."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def is_blocks(t: torch.Tensor | Blocks | Deferred) -> bool:
    from ..quant import Blocks
    return t.blocks if isinstance(t, Deferred) else isinstance(t, Blocks)


@dataclass
class Checkpoint:
    """What a model file holds, in forwardpass's own tensor names (those of `Transformer.state_dict()`)."""

    config: ModelConfig
    tensors: dict[str, torch.Tensor | Blocks | Deferred]
    tokenizer: Tokenizer | None
    source: str
    metadata: dict = field(default_factory=dict)


def model_file(path: str | Path) -> Path:
    """`path`, if it exists and, where it is a GGUF file (one file, not safetensors), starts as one: what can be said
    of a model file before any of it is parsed."""
    path = Path(path)
    if not path.exists():
        raise ModelFileError(f"model file not found: {path}")
    if path.is_file() and path.suffix != ".safetensors":
        from .gguf_config import check_magic
        check_magic(path)
    return path


def read_config(path: str | Path) -> ModelConfig:
    """Only the ModelConfig of a model file: reads metadata, never the tensors."""
    from .opened import open_model
    return open_model(path).config


def read_checkpoint(path: str | Path, progress: bool = False) -> Checkpoint:
    """Read a `.gguf` file, or a safetensors checkpoint (a directory with config.json, or a file inside one)."""
    from .opened import open_model
    return checkpoint_of(open_model(path), progress)


def checkpoint_of(opened: OpenedModel, progress: bool = False) -> Checkpoint:
    """An opened model file's tensors for the PyTorch model."""
    if opened.gguf is not None:
        from .gguf import read_gguf
        return read_gguf(opened, progress)
    from .safetensors import read_safetensors
    return read_safetensors(opened, progress)
