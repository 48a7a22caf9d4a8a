"""GGUF files (llama.cpp's format): metadata → ModelConfig, tensors → canonical names, each kept in its own format
(float tensors in their dtype, quantized ones as Blocks: weights/formats.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import numpy as np
import torch

from ..errors import ModelFileError, UnsupportedModelError
from ..quant import GROUP, BlockRows, Blocks, Tiles, as_float, group_span
from ..tokenizer import Tokenizer
from . import Checkpoint, Deferred
from .formats import FLOATS, FORMATS, native, repack, supported, to_blocks, to_float
from .gguf_config import gguf_config, open_gguf

BAND_WEIGHTS = 2**21  # weights a band of a large tensor holds while it is read (2 MB unpacked)
T = TypeVar("T")

# Gemma's turns: system text opens the first user turn; the assistant is "model"; a tool's answer is a user turn
GEMMA3_CHAT_TEMPLATE = (
    "{{ bos_token }}{% set ns = namespace(system='') %}{% for m in messages %}"
    "{% if m['role'] in ['system', 'developer'] %}{% set ns.system = ns.system + m['content'] + '\\n\\n' %}"
    "{% else %}<start_of_turn>{{ 'model' if m['role'] == 'assistant' else 'user' }}\n"
    "{% if m['role'] != 'assistant' %}{{ ns.system }}{% set ns.system = '' %}{% endif %}"
    "{{ m['content'] | trim }}<end_of_turn>\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}")


def rotary_order(rows: int, n_heads: int) -> torch.Tensor:
    """llama.cpp interleaves each head's rotary pairs (0,1),(2,3)…: the row order that puts them back into halves
    (i, i + head_dim/2)."""
    return torch.arange(rows).view(n_heads, rows // n_heads // 2, 2).transpose(1, 2).reshape(rows)


def unpermute_rotary(w: torch.Tensor | Blocks, n_heads: int) -> torch.Tensor | Blocks:
    order = rotary_order(w.shape[0], n_heads)
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
                order = None if h is None else rotary_order(rows, h).numpy()
                for r in range(0, rows, step):
                    band = data[r:r + step] if order is None else data[order[r:r + step]]
                    yield guarded(t.name, lambda t=t, band=band: read(t, band))
                    if order is None:
                        reader.release(t, r * data.shape[1], (r + len(band)) * data.shape[1])
                reader.release(t)  # again, whole: a page fault maps its neighbours too, some in bands already let go

        def bands() -> Iterator[Blocks]:
            return each(lambda t, band: to_blocks(band, t.kind, len(band), cols))

        def tiled(width: int, into: torch.Tensor | None = None) -> Iterator[Tiles] | None:
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


def canonical(config, file: _Tensors) -> dict[str, Deferred]:
    """The file's tensors under the engine's names (llama.cpp's `blk.N.attn_q.weight` → `blocks.N.attn.qkv.weight`,
    Q, K and V joined, gate and up joined), Q and K rows back in rotary halves where the file interleaves them."""
    one, joined = file.one, file.joined
    tensors = {"tok_embeddings.weight": one("token_embd.weight"), "norm_f.weight": one("output_norm.weight")}
    if not config.tied_embeddings:
        tensors["lm_head.weight"] = one("output.weight")
    gemma = config.sandwich_norm  # Gemma: rotary pairs already in halves; norms stored as their factor (1 + w)
    for i in range(config.n_layers):
        p, b = f"blk.{i}.", f"blocks.{i}."
        heads = [None, None, None] if gemma else [config.n_heads, config.kv_heads, None]
        tensors[b + "attn.qkv.weight"] = joined([p + f"attn_{x}.weight" for x in "qkv"], heads)
        tensors[b + "attn.out.weight"] = one(p + "attn_output.weight")
        tensors[b + "attn_norm.weight"] = one(p + "attn_norm.weight")
        tensors[b + "ffn_norm.weight"] = one(p + "ffn_norm.weight")
        if config.qk_norm:
            tensors[b + "attn.q_norm.weight"] = one(p + "attn_q_norm.weight")
            tensors[b + "attn.k_norm.weight"] = one(p + "attn_k_norm.weight")
        if gemma:
            tensors[b + "attn_post_norm.weight"] = one(p + "post_attention_norm.weight")
            tensors[b + "ffn_post_norm.weight"] = one(p + "post_ffw_norm.weight")
        tensors[b + "ffn.gate_up.weight"] = joined([p + "ffn_gate.weight", p + "ffn_up.weight"], [None, None])
        tensors[b + "ffn.down.weight"] = one(p + "ffn_down.weight")
    if "rope_freqs.weight" in file.by_name:  # Llama 3's RoPE scaling, as divisors of each frequency
        tensors["rope.freq_factors"] = one("rope_freqs.weight")
    return tensors


def read_gguf(path: Path, progress: bool = False) -> Checkpoint:
    """The file's config, tokenizer and tensors; each tensor is read (and repacked) only when the model is built,
    one at a time, so loading never holds the weights twice."""
    reader = open_gguf(path)
    config = gguf_config(reader, path)
    tensors = canonical(config, _Tensors(reader, path))
    tok_fields = {k: v for k, v in reader.fields.items() if k.startswith("tokenizer.")}
    template = GEMMA3_CHAT_TEMPLATE if config.sandwich_norm else None  # Gemma 3 files carry none
    tokenizer = Tokenizer.from_gguf_fields(tok_fields, template) if "tokenizer.ggml.tokens" in tok_fields else None
    types = sorted({t.kind.name for t in reader.tensors})
    reader.fields = reader.types = {}  # the metadata is read (about 10 MB of Python values): only the tensors are left
    return Checkpoint(config, tensors, tokenizer, str(path), {"format": "gguf", "tensor_types": types})
