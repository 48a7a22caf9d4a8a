"""What a family file declares: how its checkpoints' config and tensors become a ModelConfig and the engine's tensors.
The readers (weights/) read the bytes; a Family says what they mean. Nothing here reads a file or needs PyTorch."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..config import ModelConfig
from ..errors import ModelFileError


@dataclass(frozen=True)
class Stored:
    """One of the engine's tensors as a file holds it: the file's tensors `names`, stacked by rows in this order."""

    names: tuple[str, ...]
    rotary_heads: tuple[int | None, ...] = ()  # GGUF: each part's head count where llama.cpp interleaved its rotary
    # pairs (0,1),(2,3)… (None: a part left as it is); the reader puts them back in halves (i, i + head_dim/2)
    add_one: bool = False  # safetensors: a norm stored as w that scales by 1 + w (Gemma); the engine keeps 1 + w
    transposed: bool = False  # safetensors: stored (in, out) (GPT's Conv1D); the engine keeps (out, in)


def stored(*names: str, rotary_heads: tuple[int | None, ...] = (), add_one: bool = False,
           transposed: bool = False) -> Stored:
    return Stored(names, rotary_heads, add_one, transposed)


def under_prefix(names: set[str], prefix: str) -> Callable[[str], str]:
    """The file's name for a tensor that some files keep under `prefix` ("transformer.", "bert.") and others not."""
    return lambda key: prefix + key if prefix + key in names else key


TensorMap = dict[str, Stored]  # the engine's tensor name (Transformer.state_dict()'s) → where the file keeps it


@dataclass
class GGUFMetadata:
    """A GGUF file's metadata as a family reads it: keys under the file's architecture, a missing one a clear error."""

    fields: dict
    arch: str  # general.architecture
    path: Path
    tensor_names: set[str]  # what the file holds (tied embeddings: no output.weight)

    def get(self, key: str, default=None):
        """`{arch}.{key}`, or `default`; with no default, a missing key is a ModelFileError."""
        full = f"{self.arch}.{key}"
        if full in self.fields:
            return self.fields[full]
        if default is None:
            raise ModelFileError(f"{self.path}: GGUF metadata lacks {full}")
        return default

    @property
    def name(self) -> str:
        return self.fields.get("general.name", self.path.stem)


@dataclass(frozen=True)
class Family:
    """A model family: the architecture a checkpoint declares, and how its files map onto ModelConfig and the
    engine's tensors. Each half is optional: a family is read from safetensors where `model_type` is set, and from
    GGUF where `gguf_arch` is."""

    name: str  # as the docs name it
    model_type: str | None = None  # config.json's model_type
    hf_config: Callable[[dict, str, str], ModelConfig] | None = None  # (config.json, model name, where) → config
    hf_tensors: Callable[[ModelConfig, set[str]], TensorMap] | None = None  # (config, the file's tensor names)
    gguf_arch: str | None = None  # general.architecture
    gguf_config: Callable[[GGUFMetadata], ModelConfig] | None = None
    gguf_tensors: Callable[[ModelConfig, set[str]], TensorMap] | None = None  # (config, the file's tensor names)
    chat_template: str | None = None  # for a GGUF file of this family that carries none

    def __post_init__(self) -> None:
        for group in (("model_type", "hf_config", "hf_tensors"), ("gguf_arch", "gguf_config", "gguf_tensors")):
            if len({getattr(self, field) is None for field in group}) > 1:
                raise ValueError(f"family {self.name}: {', '.join(group)} are given together or not at all")
