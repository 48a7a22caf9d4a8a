"""GGUF files (llama.cpp's format): metadata → ModelConfig and tensors → the engine's names, as the file's family
(models/) maps them; each tensor kept in its own format (float tensors in their dtype, quantized ones as Blocks:
weights/formats.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import numpy as np
import torch

from ..errors import ModelFileError, UnsupportedModelError
from ..models import Stored
from ..quant import GROUP, BlockRows, Blocks, Tiles, as_float, group_span
from . import Checkpoint, Deferred
from .formats import FLOATS, FORMATS, native, repack, supported, to_blocks, to_float
from .gguf_config import BAND_WEIGHTS, rotary_order
from .opened import OpenedModel

T = TypeVar("T")


def unpermute_rotary(w: torch.Tensor | Blocks, n_heads: int) -> torch.Tensor | Blocks:
    order = torch.from_numpy(rotary_order(w.shape[0], n_heads))
    return w.rows(order) if isinstance(w, Blocks) else w[order]


def read_tensor(t) -> torch.Tensor | Blocks:
    """A GGUF tensor as it is stored: a float tensor in its own dtype, or Blocks (weights/formats.py), shaped
    (rows, cols) like a torch weight."""
    if t.kind in FLOATS:
        return to_float(t.data, t.kind)
    if t.kind not in FORMATS:
        raise UnsupportedModelError(f"tensor type {t.kind.name} is not supported "
                                    f"(supported: {', '.join(supported())})")
    return to_blocks(t.data, t.kind, t.n_elements // t.shape[-1], t.shape[-1])


def join(parts: list[torch.Tensor | Blocks]) -> torch.Tensor | Blocks:
    """Row-stacked weights: blocks stay blocks; mixed with floats, all become float32 (this tensor only)."""
    if all(isinstance(p, Blocks) for p in parts):
        return Blocks.cat(parts)
    floats = [as_float(p) for p in parts]
    dtype = floats[0].dtype if all(f.dtype == floats[0].dtype for f in floats) else torch.float32
    return torch.cat([f.to(dtype) for f in floats])


class _Tensors:
    """A GGUF file's tensors by name, each read (and repacked) only when the model is built, one at a time, so loading
    never holds the weights twice; a failure names the file and the tensor."""

    def __init__(self, reader, path: Path):
        self.reader, self.path = reader, path
        self.by_name = {t.name: t for t in reader.tensors}

    def info(self, name: str):
        if name not in self.by_name:
            raise ModelFileError(f"{self.path}: GGUF file lacks tensor {name}")
        return self.by_name[name]

    def guarded(self, name: str, read: Callable[[], T]) -> T:
        """read(), its failure named: the file and the tensor."""
        try:
            return read()
        except UnsupportedModelError as e:
            raise UnsupportedModelError(f"{self.path}: {name}: {e}") from None
        except ModelFileError:
            raise
        except Exception as e:
            raise ModelFileError(f"{self.path}: cannot read tensor {name} ({type(e).__name__}: {e})") from None

    def take(self, name: str) -> torch.Tensor | Blocks:
        t = self.guarded(name, lambda: read_tensor(self.info(name)))  # a copy: the file's pages can go
        self.reader.release(self.info(name))
        return t

    def banded(self, names: list[str], heads: list[int | None]) -> BlockRows:
        """Block-format tensors stacked by rows (Q and K rows back in rotary halves where heads gives their head
        counts), read band by band (about BAND_WEIGHTS weights each); a tensor's pages of the file are released once
        its bands are copied out. Every tensor but the last holds whole groups of GROUP rows."""
        parts, reader, guarded = [self.info(n) for n in names], self.reader, self.guarded
        cols = parts[0].shape[-1]
        step = max(GROUP, BAND_WEIGHTS // cols // GROUP * GROUP)
        bits = max(FORMATS[t.kind].bits for t in parts)

        def each(read: Callable[[object, np.ndarray], T]) -> Iterator[T]:
            for t, h in zip(parts, heads, strict=True):
                rows = t.n_elements // cols
                data = t.data.reshape(rows, -1)  # (rows, row bytes)
                order = None if h is None else rotary_order(rows, h)
                for r in range(0, rows, step):
                    band = data[r:r + step] if order is None else data[order[r:r + step]]
                    yield guarded(t.name, lambda t=t, band=band: read(t, band))
                    if order is None:
                        reader.release(t, r * data.shape[1], (r + len(band)) * data.shape[1])
                reader.release(t)  # again, whole: a page fault maps its neighbours too, some in bands already let go

        def bands() -> Iterator[Blocks]:
            return each(lambda t, band: to_blocks(band, t.kind, len(band), cols))

        def tiled(width: int, into: np.ndarray | None = None) -> Iterator[Tiles] | None:
            """The bands repacked natively at the files' own width (None where the kernels do not repack every part),
            their tiles written straight into `into` (the layer's, (groups, cols / 32, tile bytes)) where given."""
            if any(FORMATS[t.kind].bits != width or t.kind not in native() for t in parts):
                return None
            done = 0  # rows repacked so far: every band but the last is whole groups

            def band_tiles(t, band: np.ndarray) -> Tiles:
                nonlocal done
                at = None if into is None else into[group_span(done, len(band))]
                done += len(band)
                return Tiles(*repack(t.kind, np.ascontiguousarray(band), len(band), cols, at), len(band))
            return each(band_tiles)
        return BlockRows((sum(t.n_elements // cols for t in parts), cols), bits, bands, tiled)

    def one(self, name: str) -> Deferred:
        """A tensor under its own name, read when the model is built."""
        t = self.info(name)
        blocks = t.kind in FORMATS
        by_band = blocks and len(t.shape) == 2
        return Deferred(t.shape, (lambda: self.banded([name], [None])) if by_band else (lambda: self.take(name)),
                        blocks)

    def joined(self, names: list[str], heads: list[int | None]) -> Deferred:
        """Row-stacked tensors (Q and K back in rotary halves: heads gives their head counts)."""
        shapes = [self.info(n).shape for n in names]
        if len({s[1:] for s in shapes}) > 1:
            raise ModelFileError(f"{self.path}: {', '.join(names)} have shapes {shapes} that cannot be joined")

        def read():
            parts = [self.take(n) for n in names]
            return join([p if h is None else unpermute_rotary(p, h) for p, h in zip(parts, heads, strict=True)])
        blocks = all(self.info(n).kind in FORMATS for n in names)
        by_band = blocks and len(shapes[0]) == 2 and all(s[0] % GROUP == 0 for s in shapes[:-1])
        stacked = (lambda: self.banded(names, heads)) if by_band else read
        return Deferred((sum(s[0] for s in shapes), *shapes[0][1:]), stacked, blocks)


def deferred(file: _Tensors, s: Stored) -> Deferred:
    """One of the engine's tensors, as the family's map says the file stores it, read when the model is built."""
    if s.add_one or s.transposed:
        raise ValueError(f"{', '.join(s.names)}: add_one and transposed are safetensors' quirks, not GGUF's")
    if len(s.names) == 1 and not s.rotary_heads:
        return file.one(s.names[0])
    return file.joined(list(s.names), list(s.rotary_heads) or [None] * len(s.names))


def read_gguf(opened: OpenedModel, progress: bool = False) -> Checkpoint:
    """The opened file's config, tokenizer and tensors; each tensor is read (and repacked) only when the model is
    built, one at a time, so loading never holds the weights twice."""
    file = _Tensors(opened.gguf, opened.path)
    stored = opened.family.gguf_tensors(opened.config, set(file.by_name))
    tensors = {ours: deferred(file, s) for ours, s in stored.items()}
    tokenizer, metadata = opened.tokenizer_and_metadata()
    return Checkpoint(opened.config, tensors, tokenizer, str(opened.path), metadata)
