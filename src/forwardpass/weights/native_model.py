"""A decoder as the native step reads it (kernels/abi.h's Model, Layer and Linear): the structs, the tensors they point
into (numpy arrays or PyTorch tensors, held here so none is freed while a step may read them), the RoPE tables, and the
two checks a step makes first. Two makers: native_read.py beside it reads a model file straight into one without PyTorch
(the CPU product path); `from_torch` describes a built Transformer (the other storage modes, and the reference's own
tensors). Which families and switches the kernels run is said once, in `runs`. It sits with the readers, below the
engine that steps it."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .. import kernels
from ..config import ModelConfig
from ..kernels.abi import Layer, Linear, Model
from ..rope import RopeTable


def pointer(t) -> int | None:
    """Where a numpy array's or a PyTorch tensor's data starts (None for None)."""
    if t is None:
        return None
    return t.ctypes.data if isinstance(t, np.ndarray) else t.data_ptr()


def runs(config: ModelConfig) -> str | None:
    """Why the native step cannot run a model of this config, or None where it can (what decode_step.c computes; the
    other switches are read per layer): pre-norm RMSNorm, RoPE, a gated FFN, and a head of 16 to 256 numbers in
    multiples of 16 (attention keeps a head in registers)."""
    if not (config.norm == "rmsnorm" and config.norm_position == "pre"):
        return "its norms (the native step runs pre-norm RMSNorm)"
    if config.positions != "rope":
        return "its positions (the native step runs RoPE)"
    if config.ffn not in ("swiglu", "geglu"):
        return f"its {config.ffn} feed-forward (the native step runs SwiGLU and GeGLU)"
    if config.head_dim % 16 or config.head_dim > 256:
        return f"its head_dim {config.head_dim} (the native step runs multiples of 16 up to 256)"
    return None


def _always() -> bool:
    return True


@dataclass(eq=False)
class NativeModel:
    """What a native step binds: `spec` (capacity, workspace, rows and threads are set per thread by the step),
    `layers` (the array spec points into), the RoPE tables, `held` (every buffer the structs point into), `ready`
    (switches a model may turn while served, checked before every step) and `current` (its tensors are still those
    described). `quantized`: some linear layer holds integer blocks (the KV pool's "auto" format reads it)."""

    config: ModelConfig
    spec: Model
    layers: object  # the ctypes array of Layer that spec.layers points into
    rope: RopeTable
    rope_local: RopeTable | None
    quantized: bool
    held: list = field(default_factory=list)
    ready: Callable[[], bool] = _always
    current: Callable[[], bool] = _always
    device = "cpu"

    @classmethod
    def make(cls, config: ModelConfig, embeddings: Linear, layers: list[Layer], norm_f, lm_head: Linear,
             rope: RopeTable, rope_local: RopeTable | None, norm_eps: float, held: list, **checks) -> NativeModel:
        array = (Layer * len(layers))(*layers)
        local = rope_local or rope
        spec = Model(n_layers=config.n_layers, d_model=config.d_model, n_heads=config.n_heads,
                     n_kv_heads=config.kv_heads, head_dim=config.head_dim, hidden=config.hidden,
                     vocab_size=config.vocab_size, context_length=config.context_length, norm_eps=norm_eps,
                     embeddings=embeddings, layers=array, norm_f=pointer(norm_f), lm_head=lm_head,
                     cos=pointer(rope.cos), sin=pointer(rope.sin), rows=1,
                     attn_scale=config.query_scale or config.head_dim**-0.5,
                     embed_scale=config.d_model**0.5 if config.embed_scale else 1.0, gelu=int(config.ffn == "geglu"),
                     cos_local=pointer(local.cos), sin_local=pointer(local.sin))
        linears = [embeddings, lm_head, *(x for layer in layers for x in (layer.qkv, layer.out, layer.gate_up,
                                                                          layer.down))]
        quantized = any(x.kind in (kernels.abi.Q4, kernels.abi.Q8) for x in linears)
        return cls(config, spec, array, rope, rope_local, quantized, held, **checks)

    def nbytes(self) -> int:
        """The bytes its weights hold, each buffer once (a tied table counted once)."""
        from ..quant.packed import Packed

        arrays = [a for h in self.held for a in ((h.q, h.scale, h.minimum) if isinstance(h, Packed) else (h,))]
        return sum({pointer(a): a.nbytes for a in arrays if hasattr(a, "nbytes")}.values())  # modules held: none

    def cover(self, n: int) -> None:
        """RoPE tables filled for every position below n."""
        for rope in (self.rope, self.rope_local):
            if rope is not None:
                rope.cover(n)


def layer(config: ModelConfig, i: int, norms: list, linears: list[Linear], local_rope: bool) -> Layer:
    """Layer i from its norms (attn, ffn, q, k, attn_post, ffn_post: arrays or None) and linears (qkv, out, gate_up,
    down)."""
    attn_norm, ffn_norm, q_norm, k_norm, attn_post_norm, ffn_post_norm = map(pointer, norms)
    return Layer(attn_norm=attn_norm, ffn_norm=ffn_norm, qkv=linears[0], out=linears[1], gate_up=linears[2],
                 down=linears[3], q_norm=q_norm, k_norm=k_norm, attn_post_norm=attn_post_norm,
                 ffn_post_norm=ffn_post_norm, window=config.window(i) or 0, local_rope=int(local_rope))


def from_torch(model) -> NativeModel | None:
    """A built Transformer's own tensors described for the native step, or None where the step cannot run it (another
    device or dtype, a family or storage the kernels do not read). Its `current` fails once any module slot or tensor
    it points into is replaced (a reload, a new layer or weight, a dtype or device move); `ready` while a checked mode
    or a residual switch (the article's counterfactual) is on."""
    import torch
    from torch import nn

    from ..quant import HalfLinear, QuantizedEmbedding, QuantizedLinear

    c = model.config
    if not (kernels.available() and model.device.type == "cpu" and model.dtype == torch.float32) or runs(c):
        return None

    def linear(m) -> Linear | None:
        bias = m.bias.detach() if m.bias is not None else None
        if bias is not None and (bias.dtype != torch.float32 or not bias.is_contiguous()):
            return None
        if isinstance(m, QuantizedLinear):
            return Linear(kind=kernels.weight_kind(m.bits), N=m.out_features, K=m.in_features, w=pointer(m.q),
                          scale=pointer(m.scale), minimum=pointer(m.minimum), bias=pointer(bias),
                          scales=kernels.scales_kind(m.scale), zero=m.zero)
        w = getattr(m, "weight", None)
        if not isinstance(m, (nn.Linear, HalfLinear)) or not w.is_contiguous() or kernels.weight_kind(w.dtype) is None:
            return None
        n, k = w.shape
        return Linear(kind=kernels.weight_kind(w.dtype), N=n, K=k, w=pointer(w), bias=pointer(bias))

    layers = []
    for i, block in enumerate(model.blocks):
        linears = [linear(m) for m in (block.attn.qkv, block.attn.out, block.ffn.gate_up, block.ffn.down)]
        qk = (block.attn.q_norm, block.attn.k_norm) if c.qk_norm else (None, None)
        norms = [block.attn_norm, block.ffn_norm, *qk, block.attn_post_norm, block.ffn_post_norm]
        weights = [n.weight if n is not None else None for n in norms]
        if None in linears or None in weights[:2] or any(
                n is not None and (w is None or w.dtype != torch.float32 or not w.is_contiguous())
                for n, w in zip(norms, weights, strict=True)):
            return None
        layers.append(layer(c, i, weights, linears, block.sliding and model.rope_local is not None))
    lm_head, table = linear(model.lm_head), model.tok_embeddings
    if isinstance(table, QuantizedEmbedding):
        embeddings = linear(table.table)
    elif table.weight.dtype == torch.float32 and table.weight.is_contiguous():
        n, k = table.weight.shape
        embeddings = Linear(kind=kernels.weight_kind(torch.float32), N=n, K=k, w=pointer(table.weight))
    else:
        embeddings = None
    if lm_head is None or embeddings is None or model.norm_f.weight is None:
        return None
    bound = slots(model)
    ref = weakref.ref(model)

    def ready() -> bool:
        m = ref()
        return m is not None and not m.checked and all(block.residual == "add" for block in m.blocks)

    def current() -> bool:
        return all(getattr(o(), name, None) is v for o, name, v in bound)

    local = model.rope_local.table if model.rope_local is not None else None
    eps = model.blocks[0].attn_norm.eps or float(np.finfo(np.float32).eps)
    native = NativeModel.make(c, embeddings, layers, model.norm_f.weight, lm_head, model.rope.table, local, eps,
                              [v for _, _, v in bound], ready=ready, current=current)
    quantized = [m for m in model.modules() if isinstance(m, QuantizedLinear)]
    native.spec.activations = quantized[0].activations if quantized else kernels.abi.ACT_EXACT  # load sets them all
    return native


def slots(model) -> list[tuple[weakref.ref, str, object]]:
    """Every module slot and tensor the step points into, as (owner, attribute, what it held when bound): if any is
    replaced, the description is no longer current. What they held is held (never freed while the step may read it);
    their owners are not (the model is freed as usual)."""
    import torch
    from torch import nn

    from ..quant import QuantizedEmbedding

    out: list[tuple[weakref.ref, str, object]] = []

    def direct(module: nn.Module) -> list[tuple[weakref.ref, str, object]]:
        held = [*module._parameters.items(), *module._buffers.items(),
                *((k, v) for k, v in vars(module).items() if isinstance(v, torch.Tensor))]
        return [(weakref.ref(module), name, t) for name, t in held if t is not None]

    def slot(owner: nn.Module, name: str) -> None:
        child = getattr(owner, name, None)
        out.append((weakref.ref(owner), name, child))
        if isinstance(child, nn.Module):
            out.extend(direct(child))
            if isinstance(child, QuantizedEmbedding):
                slot(child, "table")

    for name in ("tok_embeddings", "norm_f", "lm_head", "rope", "rope_local", "blocks"):
        slot(model, name)
    for i, block in enumerate(model.blocks):
        slot(model.blocks, str(i))
        for owner, names in ((block, ("attn", "ffn", "attn_norm", "ffn_norm", "attn_post_norm", "ffn_post_norm")),
                             (block.attn, ("qkv", "out", "q_norm", "k_norm")), (block.ffn, ("gate_up", "down"))):
            for name in names:
                slot(owner, name)
    return out
