"""The model families, one file each, and the registry the file readers (weights/) ask: a checkpoint's family is the
architecture it declares (config.json's model_type, GGUF's general.architecture), never guessed from its shape."""

from __future__ import annotations

from ..errors import UnsupportedModelError
from .family import Family, GGUFMetadata, Stored, TensorMap
from .gemma3 import GEMMA3
from .gpt2 import GPT1, GPT2
from .llama import LLAMA
from .mistral import MISTRAL
from .phi3 import PHI3
from .qwen2 import QWEN2
from .qwen3 import QWEN3

FAMILIES: tuple[Family, ...] = (GPT2, GPT1, LLAMA, MISTRAL, QWEN2, QWEN3, PHI3, GEMMA3)  # the decoders
MODEL_TYPES = tuple(f.model_type for f in FAMILIES if f.model_type)
GGUF_ARCHITECTURES = tuple(f.gguf_arch for f in FAMILIES if f.gguf_arch)


def _declared(attribute: str, value: str | None, what: str, supported: tuple[str, ...], where: str) -> Family:
    """The family whose `attribute` is `value`, or a clear error naming `what` it is and listing the supported ones."""
    family = next((f for f in FAMILIES if getattr(f, attribute) is not None and getattr(f, attribute) == value), None)
    if family is None:
        raise UnsupportedModelError(f"{where}: {what} {value!r} is not supported (supported: {', '.join(supported)})")
    return family


def by_model_type(kind: str | None, where: str) -> Family:
    """The family of a config.json's model_type, or a clear error listing the supported ones."""
    return _declared("model_type", kind, "model_type", MODEL_TYPES, where)


def by_gguf_arch(arch: str | None, where: str) -> Family:
    """The family of a GGUF file's general.architecture, or a clear error listing the supported ones."""
    return _declared("gguf_arch", arch, "GGUF architecture", GGUF_ARCHITECTURES, where)


__all__ = ["FAMILIES", "GGUF_ARCHITECTURES", "MODEL_TYPES", "Family", "GGUFMetadata", "Stored", "TensorMap",
           "by_gguf_arch", "by_model_type"]
