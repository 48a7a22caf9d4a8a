"""An opened GGUF file read straight into the native step's model (native_model.py), without PyTorch: each linear
layer's bands repacked by the kernels (kernels/repack.c) into numpy memory the layer owns, joined by quant/packed.py;
norms, biases and a float embedding table as float32 arrays; the RoPE tables from rope.py. The PyTorch model
(torch_model.build_model) packs the same tiles through the same `pack`, so both describe a model the same bits.

`read_native` raises NotNative, with the reason, where this path does not apply (a family or switch the native step
does not run, a block format the kernels do not repack): the caller then builds the PyTorch model from the same
opened file."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from .. import kernels
from ..config import ModelConfig
from ..errors import ModelFileError
from ..kernels.abi import BLOCK, GROUP, Linear
from ..models import Stored
from ..quant.packed import Packed, Tiles, group_span, pack
from ..rope import RopeTable
from . import return_freed_memory
from .formats import FLOATS, FORMATS, native, repack
from .gguf_config import BAND_WEIGHTS, rotary_order
from .native_model import NativeModel, layer, runs
from .opened import OpenedModel
from .progress import track

QK_NORMS = ("attn.q_norm", "attn.k_norm")
FLOAT_KINDS = {"float32": np.float32, "float16": np.float16, "bfloat16": np.uint16}  # bfloat16 kept as its bits


def bf16_floats(bits: np.ndarray) -> np.ndarray:
    """bfloat16 values held as their 16 bits (uint16) → float32, exactly (the top half of each float32)."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


def widened(q: np.ndarray) -> np.ndarray:
    """4-bit tiles (groups, blocks, 256) as the 8-bit tiles of the same integers (groups, blocks, 512): 4-bit tile u
    holds inputs 8u + j in its low nibbles and 8u + 4 + j in its high ones, 8-bit tile t inputs 4t + j."""
    groups, blocks, _ = q.shape
    t = q.reshape(groups, blocks, 4, 1, GROUP * 4)
    return np.concatenate([t & 15, t >> 4], axis=3).reshape(groups, blocks, GROUP * BLOCK)


class NotNative(Exception):
    """The file needs the PyTorch loader; the message says why."""


class _File:
    def __init__(self, opened: OpenedModel):
        self.path, self.reader = opened.path, opened.gguf
        self.by_name = {t.name: t for t in self.reader.tensors}

    def info(self, name: str):
        if name not in self.by_name:
            raise ModelFileError(f"{self.path}: GGUF file lacks tensor {name}")
        return self.by_name[name]

    def floats(self, s: Stored) -> np.ndarray:
        """A float tensor (norm, bias, a float table) as float32, its parts stacked (q and k back in rotary halves)."""
        parts = []
        for name, heads in zip(s.names, s.rotary_heads or [None] * len(s.names), strict=True):
            t = self.info(name)
            if t.kind not in FLOATS:
                raise NotNative(f"{name} is {t.kind.name}, read here only as a float tensor")
            data = np.asarray(t.data)
            if FLOATS[t.kind] == "bfloat16":
                data = bf16_floats(np.ascontiguousarray(data).view(np.uint16))
            a = np.array(data, dtype=np.float32).reshape(t.shape)
            parts.append(a if heads is None else a[rotary_order(a.shape[0], heads)])
            self.reader.release(t)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def matrix(self, s: Stored) -> Packed | np.ndarray:
        """A weight matrix: block formats packed band by band (about BAND_WEIGHTS weights each, each band's pages of
        the file let go once repacked), float ones as they are stored (float32, float16, bfloat16 bits)."""
        parts = [self.info(n) for n in s.names]
        heads = list(s.rotary_heads) or [None] * len(parts)
        if all(t.kind in FLOATS for t in parts):
            kinds = {FLOATS[t.kind] for t in parts}
            if len(kinds) > 1:
                raise NotNative(f"{', '.join(s.names)} mix float formats")
            dtype = FLOAT_KINDS[kinds.pop()]
            out = []
            for t, h in zip(parts, heads, strict=True):
                a = np.array(np.asarray(t.data).view(dtype) if dtype == np.uint16 else t.data, dtype=dtype)
                a = a.reshape(t.shape)
                out.append(a if h is None else a[rotary_order(a.shape[0], h)])
                self.reader.release(t)
            return out[0] if len(out) == 1 else np.concatenate(out)
        if any(t.kind in FLOATS for t in parts):  # (read_native saw every block format the kernels repack)
            raise NotNative(f"{', '.join(s.names)} mix float and block formats")
        cols = parts[0].shape[-1]
        if any(len(t.shape) != 2 or t.shape[-1] != cols for t in parts) or any(
                t.shape[0] % GROUP for t in parts[:-1]):
            raise NotNative(f"{', '.join(s.names)} cannot be stacked band by band")
        rows = sum(t.shape[0] for t in parts)
        bits = max(FORMATS[t.kind].bits for t in parts)
        q = np.empty((-(-rows // GROUP), cols // BLOCK, GROUP * BLOCK * bits // 8), dtype=np.uint8)
        return pack(self._bands(parts, heads, bits, q), bits, rows, cols, q)

    def _bands(self, parts: list, heads: list, bits: int, q: np.ndarray) -> Iterator[Tiles]:
        cols = parts[0].shape[-1]
        step = max(GROUP, BAND_WEIGHTS // cols // GROUP * GROUP)
        done = 0  # rows repacked so far
        for t, h in zip(parts, heads, strict=True):
            rows = t.shape[0]
            data = np.asarray(t.data).reshape(rows, -1)  # (rows, row bytes)
            order = None if h is None else rotary_order(rows, h)
            same = FORMATS[t.kind].bits == bits  # else repacked at its own width, then widened
            for r in range(0, rows, step):
                band = data[r:r + step] if order is None else data[order[r:r + step]]
                at = q[group_span(done, len(band))]
                tiles, scale, minimum, zero = repack(t.kind, np.ascontiguousarray(band), len(band), cols,
                                                     at if same else None)
                if not same:
                    at[...] = widened(tiles)
                    tiles = at
                yield Tiles(tiles, scale, minimum, zero, len(band))
                done += len(band)
                if order is None:
                    self.reader.release(t, r * data.shape[1], (r + len(band)) * data.shape[1])
            self.reader.release(t)


def linear(w: Packed | np.ndarray, bias: np.ndarray | None = None) -> Linear:
    """A matrix as abi.h's Linear."""
    b = None if bias is None else bias.ctypes.data
    if isinstance(w, Packed):
        return Linear(kind=kernels.weight_kind(w.bits), N=w.out_features, K=w.in_features, w=w.q.ctypes.data,
                      scale=w.scale.ctypes.data, minimum=None if w.minimum is None else w.minimum.ctypes.data,
                      bias=b, scales=kernels.scales_kind(w.scale), zero=w.zero)
    kind = kernels.abi.BF16 if w.dtype == np.uint16 else kernels.weight_kind(w.dtype)
    return Linear(kind=kind, N=w.shape[0], K=w.shape[1], w=w.ctypes.data, bias=b)


def read_native(opened: OpenedModel, ctx_size: int | None = None, progress: bool = False):
    """(NativeModel, tokenizer, metadata) from an opened GGUF file (of `ctx_size` positions where given, no more than
    it was trained on), or raises NotNative saying why the PyTorch model is needed."""
    if not kernels.available():
        raise NotNative("the native kernels are not built on this machine")
    config = opened.config
    why = runs(config)
    if why:
        raise NotNative(f"the native step does not run {why}")
    if ctx_size:
        config = config.with_(context_length=ctx_size)
    file = _File(opened)
    stored = opened.family.gguf_tensors(config, set(file.by_name))
    unread = sorted({file.info(n).kind.name for s in stored.values() for n in s.names
                     if n in file.by_name and file.info(n).kind not in native() and file.info(n).kind not in FLOATS})
    if unread:  # said before a byte is repacked, so that the PyTorch loader does not follow a half-read file
        raise NotNative(f"the kernels do not repack {', '.join(unread)} blocks")
    tokenizer, metadata = opened.tokenizer_and_metadata()
    model = build(config, stored, file, progress)
    return_freed_memory()
    return model, tokenizer, metadata | {"storage": "stored"}


def expected(c: ModelConfig) -> dict[str, tuple[int, ...]]:
    """Every tensor the native step reads, by the engine's name, and its shape as the config says (the names and
    shapes of the PyTorch Transformer's state_dict); the optional ones (biases the config has none of, QK-norm's and
    sandwich norms where absent, a file's RoPE factors) are checked where the file has them."""
    qkv = (c.n_heads + 2 * c.kv_heads) * c.head_dim
    want: dict[str, tuple[int, ...]] = {"tok_embeddings.weight": (c.vocab_size, c.d_model),
                                        "norm_f.weight": (c.d_model,), "rope.freq_factors": (c.head_dim // 2,)}
    if not c.tied_embeddings:
        want["lm_head.weight"] = (c.vocab_size, c.d_model)
    for i in range(c.n_layers):
        p = f"blocks.{i}."
        want |= {p + "attn.qkv.weight": (qkv, c.d_model), p + "attn.out.weight": (c.d_model, c.n_heads * c.head_dim),
                 p + "ffn.gate_up.weight": (2 * c.hidden, c.d_model), p + "ffn.down.weight": (c.d_model, c.hidden),
                 p + "attn.qkv.bias": (qkv,), p + "attn.out.bias": (c.d_model,),
                 p + "ffn.gate_up.bias": (2 * c.hidden,), p + "ffn.down.bias": (c.d_model,),
                 p + "attn.q_norm.weight": (c.head_dim,), p + "attn.k_norm.weight": (c.head_dim,)}
        want |= {p + n + ".weight": (c.d_model,) for n in ("attn_norm", "ffn_norm", "attn_post_norm", "ffn_post_norm")}
    return want


def required(c: ModelConfig, name: str) -> bool:
    """Whether the config needs `name` (expected()'s others are read where the file has them)."""
    if name.endswith(".bias"):
        return c.attention_bias if name.endswith("attn.qkv.bias") else c.bias
    if name.endswith(("q_norm.weight", "k_norm.weight")):
        return c.qk_norm
    return not name.endswith(("post_norm.weight", "freq_factors"))


def build(c: ModelConfig, stored: dict[str, Stored], file: _File, progress: bool) -> NativeModel:
    held: list = []
    want = expected(c)

    def get(name: str, matrix: bool = False):
        if name not in stored:
            if required(c, name):
                raise ModelFileError(f"{file.path}: checkpoint is missing tensor {name}")
            return None
        a = file.matrix(stored[name]) if matrix else file.floats(stored[name])
        shape = (a.out_features, a.in_features) if isinstance(a, Packed) else tuple(a.shape)
        if shape != want[name]:
            raise ModelFileError(f"{file.path}: tensor {name} has shape {shape}, expected {want[name]}")
        held.append(a)
        return a

    layers = []
    for i in track(range(c.n_layers), "loading", progress):
        p = f"blocks.{i}."
        linears = [linear(get(p + m + ".weight", True), get(p + m + ".bias"))
                   for m in ("attn.qkv", "attn.out", "ffn.gate_up", "ffn.down")]
        norms = [None if n in QK_NORMS and not c.qk_norm else get(p + n + ".weight")  # QK-norms read where used
                 for n in ("attn_norm", "ffn_norm", *QK_NORMS, "attn_post_norm", "ffn_post_norm")]
        layers.append(layer(c, i, norms, linears, c.window(i) is not None and c.local_rope_theta is not None))
    table = get("tok_embeddings.weight", True)  # blocks: looked up from the tiles, which a tied head shares
    head = table if c.tied_embeddings else get("lm_head.weight", True)  # a float head keeps the file's width
    if isinstance(table, np.ndarray) and table.dtype != np.float32:  # a float table is looked up in float32
        table = bf16_floats(table) if table.dtype == np.uint16 else table.astype(np.float32)
        held.append(table)
    factors = get("rope.freq_factors")
    rope = RopeTable(c, factors)
    rope_local = RopeTable(c, local=True) if c.local_rope_theta is not None else None
    eps = c.norm_eps or float(np.finfo(np.float32).eps)
    return NativeModel.make(c, linear(table), layers, get("norm_f.weight"), linear(head), rope, rope_local, eps,
                            held)
