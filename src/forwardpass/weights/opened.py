"""A model file opened once per load: a GGUF file memory-mapped and its header read (or a safetensors checkpoint's
config.json), its family and config, and its tokenizer and what the loaders report of it, read once and handed to
whichever back end builds from it (native_read.py without PyTorch; gguf.py or safetensors.py for the PyTorch model)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import ModelConfig
from ..errors import ModelFileError
from ..models import Family
from .gguf_config import gguf_config, gguf_family, open_gguf, tokenizer_and_metadata
from .gguf_file import GGUFFile
from .hf_config import safetensors_config

if TYPE_CHECKING:
    from ..text.tokenizer import Tokenizer


@dataclass(eq=False)
class OpenedModel:
    """A model file as opened: `config` is the one it was trained with; `gguf` the map its tensors are read from
    (None: a safetensors checkpoint, whose tensors the PyTorch loader reads)."""

    path: Path
    family: Family
    config: ModelConfig
    gguf: GGUFFile | None = None
    _described: tuple[Tokenizer | None, dict] | None = None

    def tokenizer_and_metadata(self) -> tuple[Tokenizer | None, dict]:
        """Its tokenizer (None where it has none) and what the loaders report of it (format, tensor types, the sampling
        a GGUF file recommends), read on the first call; a GGUF file's metadata is then let go."""
        if self._described is None:
            if self.gguf is not None:
                self._described = tokenizer_and_metadata(self.gguf, self.family)
            else:
                from ..text.tokenizer import Tokenizer

                directory = self.path if self.path.is_dir() else self.path.parent
                self._described = (Tokenizer.from_directory(directory),
                                   {"format": "safetensors", "model_type": self.family.model_type})
        tokenizer, metadata = self._described
        return tokenizer, dict(metadata)


def open_model(path: str | Path) -> OpenedModel:
    """A `.gguf` file, or a safetensors checkpoint (a directory with config.json, or a file inside one), opened: the
    metadata read, no tensor yet."""
    path = Path(path)
    if not path.exists():
        raise ModelFileError(f"model file not found: {path}")
    if path.is_file() and path.suffix != ".safetensors":
        reader = open_gguf(path)
        family = gguf_family(reader, path)
        return OpenedModel(path, family, gguf_config(reader, path, family), reader)
    config, family = safetensors_config(path)
    return OpenedModel(path, family, config)
