"""What makes a cached block's pairs valid, as one digest: a file written under another namespace is never a hit. The
model file's identity (its size, modification time and samples of its bytes: cheap for a file of any size, and a
different file or one rewritten in place reads as another model), how the weights are stored and computed (storage
mode, the back end, the device's kind, the model's dtype), the KV format, the block size, every switch of the model's
config (RoPE's base and scaling among them) and the file format's version."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

from .file_format import KEY_BYTES, VERSION

if TYPE_CHECKING:
    from ...loaded import LoadedModel

SAMPLE = 1 << 20  # bytes read at the start, the middle and the end of each model file
MODEL_FILES = (".gguf", ".safetensors", ".json", ".model", ".txt")  # what a checkpoint folder's model is made of


def file_identity(path: Path, h) -> None:
    """Feed `path`'s name, size, modification time and three samples of its bytes into the hash `h`."""
    st = path.stat()
    h.update(f"{path.name}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    with open(path, "rb") as f:
        for at in (0, max(0, st.st_size // 2 - SAMPLE // 2), max(0, st.st_size - SAMPLE)):
            f.seek(at)
            h.update(f.read(SAMPLE))


def model_identity(source: str) -> bytes:
    """A digest of the model file (or of each model file of a checkpoint folder, by name)."""
    h = hashlib.blake2b(digest_size=KEY_BYTES)
    path = Path(source)
    files = sorted(p for p in path.iterdir() if p.suffix in MODEL_FILES and p.is_file()) if path.is_dir() else [path]
    for p in files:
        file_identity(p, h)
    return h.digest()


def namespace(loaded: LoadedModel, block_size: int) -> bytes:
    """The namespace of the blocks an engine over `loaded` with blocks of `block_size` tokens computes."""
    dtype = "float32" if loaded.native else str(loaded.model.dtype).removeprefix("torch.")
    device = "cpu" if loaded.native else loaded.device.type
    parts = (f"version {VERSION}", f"model {model_identity(loaded.source).hex()}",
             f"storage {loaded.metadata.get('storage', 'stored')}", f"native {loaded.native}", f"device {device}",
             f"dtype {dtype}", f"kv {loaded.kv_format()}", f"block {block_size}", f"config {loaded.config!r}")
    return hashlib.blake2b("\n".join(parts).encode(), digest_size=KEY_BYTES).digest()
