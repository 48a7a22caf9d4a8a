"""The native step: one call runs whole decode steps of a Llama-family model for a batch of sequences over the
engine's paged pool (a single sequence is a pool of one). The runner (runner.py) calls it where it applies.

A decode step of a small model is ~20 framework ops per layer, each doing microseconds of work; their
dispatch costs as much as reading the weights. `kernels/decode_step.c` does the same arithmetic as the
blocks in one call: RMSNorm, Q/K/V, RoPE, the cache append, grouped-query attention, the output projection,
SwiGLU, the residual adds, the final norm and the unembedding, with the switches other families declare
(QK-norm, sandwich norms, GeGLU, scaled embeddings, per-layer sliding windows and RoPE tables, the attention
scale): Qwen2/3, Mistral, Phi-3 and Gemma 3 decode through it as Llama does. It reads the model's own tensors
(float32, or int8/q4 blocks) and writes into the pool's blocks (float32, float16 or q8_0 pairs), so prefill (the
PyTorch blocks) and decode (native) share one cache. It applies on the CPU to a float32 model; everything else takes the
PyTorch blocks.
"""

from __future__ import annotations

import ctypes
import threading
import weakref

import torch
from torch import nn

from .. import kernels
from ..errors import InvariantError, TokenIdError
from ..kernels.abi import KV_F16, KV_F32, KV_Q8_0, Batch, Layer, Linear, Model
from ..kernels.team import TeamSize, most_threads
from ..kv_q8_0 import Q8_0
from ..quant import HalfLinear, QuantizedEmbedding, QuantizedLinear
from .paged import BlockPool

_i = ctypes.c_int
PREFILL_ROWS = 64  # positions one native prefill call runs: its workspace grows with them
KV_FORMAT = {torch.float32: KV_F32, torch.float16: KV_F16, Q8_0: KV_Q8_0}  # a pool's dtype → abi.h's Batch.kv


class _Workspace(threading.local):
    """One Python thread's buffers for the step, made when it first decodes (or meets a larger cache) and reused
    for every token after: a step allocates nothing. Each thread its own, so threads may decode at once."""

    def __init__(self):
        self.spec: Model | None = None
        self.memory: torch.Tensor | None = None
        self.room = 0  # the cache capacity `memory` is sized for
        self.logits: torch.Tensor | None = None  # a batch's logits, (rows, vocab_size), reused
        self.team: TeamSize | None = None  # how many threads this thread's steps run
        self.usage = (ctypes.c_double * 2)()


def _ptr(t: torch.Tensor | None) -> int | None:
    return None if t is None else t.data_ptr()


def _linear(layer: nn.Module) -> Linear | None:
    """A linear layer as the kernel reads it, or None for a storage it does not read."""
    bias = layer.bias.detach() if layer.bias is not None else None
    if bias is not None and (bias.dtype != torch.float32 or not bias.is_contiguous()):
        return None
    if isinstance(layer, QuantizedLinear):
        return Linear(kind=kernels.WEIGHT_KIND[layer.bits], N=layer.out_features, K=layer.in_features, w=_ptr(layer.q),
                      scale=_ptr(layer.scale), minimum=_ptr(layer.minimum), bias=_ptr(bias),
                      scales=kernels.scales_kind(layer.scale), zero=layer.zero)
    float_weight = isinstance(layer, (nn.Linear, HalfLinear)) and layer.weight.is_contiguous()
    if float_weight and layer.weight.dtype in kernels.WEIGHT_KIND:
        n, k = layer.weight.shape
        return Linear(kind=kernels.WEIGHT_KIND[layer.weight.dtype], N=n, K=k, w=_ptr(layer.weight), bias=_ptr(bias))
    return None


def _slots(module: nn.Module) -> list[tuple[weakref.ref, str, object]]:
    """(module, name, tensor) for each tensor a module holds directly: its parameters, buffers and tensor attributes."""
    held = [*module._parameters.items(), *module._buffers.items(),
            *((k, v) for k, v in vars(module).items() if isinstance(v, torch.Tensor))]
    return [(weakref.ref(module), name, t) for name, t in held if t is not None]


def bound(model: nn.Module) -> list[tuple[weakref.ref, str, object]]:
    """Every module slot and tensor the step points into, as (owner, attribute, what it held when bound): if any is
    replaced (a reload, a new layer or weight, a dtype or device move), the step no longer binds. What they held is
    held here (never freed while the step may read it); their owners are not (the model is freed as usual)."""
    out: list[tuple[weakref.ref, str, object]] = []

    def slot(owner: nn.Module, name: str) -> None:
        child = getattr(owner, name, None)
        out.append((weakref.ref(owner), name, child))
        if isinstance(child, nn.Module):
            out.extend(_slots(child))
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


class NativeStep:
    """The native decode step bound to one model's tensors. `build` returns None where it cannot apply."""

    def __init__(self, model: nn.Module, embeddings: Linear, layers: list[Layer], lm_head: Linear):
        c = model.config
        self._model = weakref.ref(model)  # runner.py keeps a model's step while the model lives, not longer
        self.layers = (Layer * len(layers))(*layers)
        local = model.rope_local or model.rope
        self.spec = Model(n_layers=c.n_layers, d_model=c.d_model, n_heads=c.n_heads, n_kv_heads=c.kv_heads,
                          head_dim=c.head_dim, hidden=c.hidden, vocab_size=c.vocab_size,
                          context_length=c.context_length,
                          norm_eps=model.blocks[0].attn_norm.eps or torch.finfo(torch.float32).eps,
                          embeddings=embeddings, layers=self.layers, norm_f=_ptr(model.norm_f.weight), lm_head=lm_head,
                          cos=_ptr(model.rope.cos), sin=_ptr(model.rope.sin), rows=1,
                          attn_scale=c.query_scale or c.head_dim**-0.5,
                          embed_scale=c.d_model**0.5 if c.embed_scale else 1.0, gelu=int(c.ffn == "geglu"),
                          cos_local=_ptr(local.cos), sin_local=_ptr(local.sin))  # capacity, work, threads: per thread
        self.bound = bound(model)  # what the step points into, held: none of it is freed while the step lives
        self._work = _Workspace()

    @property
    def model(self) -> nn.Module:
        return self._model()

    @classmethod
    def build(cls, model: nn.Module) -> NativeStep | None:
        c = model.config
        llama = c.norm == "rmsnorm" and c.norm_position == "pre" and c.positions == "rope" \
            and c.ffn in ("swiglu", "geglu")  # what C runs; the other switches are read per layer below
        if not (kernels.available() and model.device.type == "cpu" and model.dtype == torch.float32 and llama
                and c.head_dim % 16 == 0 and c.head_dim <= 256):  # attention keeps a head in registers
            return None
        layers = []
        for i, block in enumerate(model.blocks):
            linears = [_linear(m) for m in (block.attn.qkv, block.attn.out, block.ffn.gate_up, block.ffn.down)]
            qk = (block.attn.q_norm, block.attn.k_norm) if c.qk_norm else (None, None)
            post = (block.attn_post_norm, block.ffn_post_norm)
            norms = [block.attn_norm, block.ffn_norm, *qk, *post]
            weights = [n.weight if n is not None else None for n in norms]
            if None in linears or None in weights[:2] or any(
                    n is not None and (w is None or w.dtype != torch.float32 or not w.is_contiguous())
                    for n, w in zip(norms, weights, strict=True)):
                return None
            attn_norm, ffn_norm, q_norm, k_norm, attn_post_norm, ffn_post_norm = map(_ptr, weights)
            layers.append(Layer(attn_norm=attn_norm, ffn_norm=ffn_norm, qkv=linears[0], out=linears[1],
                                gate_up=linears[2], down=linears[3], q_norm=q_norm, k_norm=k_norm,
                                attn_post_norm=attn_post_norm, ffn_post_norm=ffn_post_norm, window=c.window(i) or 0,
                                local_rope=int(block.sliding and model.rope_local is not None)))
        lm_head, table = _linear(model.lm_head), model.tok_embeddings
        if isinstance(table, QuantizedEmbedding):
            embeddings = _linear(table.table)
        elif table.weight.dtype == torch.float32 and table.weight.is_contiguous():
            n, k = table.weight.shape
            embeddings = Linear(kind=kernels.WEIGHT_KIND[torch.float32], N=n, K=k, w=_ptr(table.weight))
        else:
            embeddings = None
        if lm_head is None or embeddings is None or model.norm_f.weight is None:
            return None
        return cls(model, embeddings, layers, lm_head)

    def _cover(self, n: int) -> None:
        """RoPE tables filled for every position below n (the model tabulates them on first use)."""
        for rope in (self.model.rope, self.model.rope_local):
            if rope is not None:
                rope.cover(n)

    def _workspace(self, capacity: int, rows: int) -> Model:
        """This thread's copy of the model's description with a workspace for `capacity` cache slots, `rows` rows and
        the most threads a step may run, made on its first step and again only for more slots or rows or another
        thread count; its team for the next step set (kernels/team.py)."""
        work, threads = self._work, most_threads()
        if work.team is None or work.team.most != threads:
            work.team = TeamSize(threads)
        if work.spec is None or work.room < capacity or work.spec.rows < rows or work.spec.threads != threads:
            spec = Model.from_buffer_copy(self.spec)
            spec.capacity, spec.threads = max(capacity, work.room), threads
            spec.rows = max(rows, work.spec.rows if work.spec is not None else 1)
            work.memory = torch.empty(kernels.library().decode_workspace(ctypes.byref(spec)))  # 64-byte aligned
            spec.work, work.spec, work.room = work.memory.data_ptr(), spec, spec.capacity
        work.spec.capacity = capacity  # fewer slots need less of the workspace
        work.spec.team = work.team.threads
        return work.spec

    def _observe(self) -> None:
        """Tell this thread's team size how its last call's threads ran."""
        work = self._work
        kernels.library().decode_usage(work.usage)
        work.team.observe(work.usage[0], work.usage[1])

    def binds(self, pool: BlockPool) -> bool:
        """The one eligibility check: whether the step runs over this pool now (`fits` and `ready`)."""
        return self.fits(pool) and self.ready()

    def fits(self, pool: BlockPool) -> bool:
        """A block pool of float32, float16 or q8_0 pairs on the CPU (engine/paged.py) the step reads and writes, and
        the model's tensors where they were when the step was bound (`bound`)."""
        return (pool.k.dtype in KV_FORMAT and pool.k.device.type == "cpu"
                and all(getattr(o(), name, None) is v for o, name, v in self.bound))

    def ready(self) -> bool:
        """The switches a model may turn while it is served, checked before every step: no checked mode (it proves the
        PyTorch blocks' writes) and every residual an add (the article's counterfactual turns one off)."""
        m = self.model
        return not m.checked and all(block.residual == "add" for block in m.blocks)

    def decode(self, pool: BlockPool, tokens: list[int], lengths: list[int], tables: list[list[int]], n: int = 1,
               stop: tuple[int, ...] = ()) -> tuple[torch.Tensor, list[list[int]]]:
        """n decode steps of M sequences over the paged `pool` in one native call: row r's token at position
        lengths[r] (the pairs its sequence holds), reading its pairs through its block table and writing its new K and V
        into slot lengths[r]; with n > 1 each row's argmax fed back, until n steps are done or some row chooses one of
        `stop` (chosen, not fed back). Every weight is read from memory once per step for all M rows, and every row's
        table must hold the slots its steps write. Returns the last step's logits (M, vocab_size), valid until the next
        call on this thread, and each row's chosen ids (as many for every row)."""
        return self.step(pool, tokens, lengths, tables, n=n, stop=stop)

    def prefill(self, pool: BlockPool, chunks: list[tuple[list[int], list[int], int]]) -> torch.Tensor:
        """Logits (chunks, vocab_size) at each chunk's last token: chunk (ids, table, start) is the ids at positions
        start … start + len(ids) - 1 of the sequence whose blocks `table` lists, their K and V written into them. The
        chunks' positions run as rows of native steps of at most PREFILL_ROWS rows, each row causal within its chunk;
        a row's logits are the ones a decode step of its token alone gives, bit for bit."""
        rows = [(token, start + i, table, i, i == len(ids) - 1)
                for ids, table, start in chunks for i, token in enumerate(ids)]
        out = []
        for at in range(0, len(rows), PREFILL_ROWS):
            part = rows[at:at + PREFILL_ROWS]
            back = [min(i, r) for r, (_, _, _, i, _) in enumerate(part)]  # a chunk split across calls starts anew
            emit = [int(last) for *_, last in part]
            logits, _ = self.step(pool, [t for t, *_ in part], [p for _, p, *_ in part], [t for _, _, t, _, _ in part],
                                  chunk=back, emit=emit)
            out.append(logits.clone())
        return torch.cat(out)

    def step(self, pool: BlockPool, tokens: list[int], lengths: list[int], tables: list[list[int]],
             chunk: list[int] | None = None, emit: list[int] | None = None, n: int = 1,
             stop: tuple[int, ...] = ()) -> tuple[torch.Tensor, list[list[int]]]:
        """One native call over any mix of rows (abi.h's Batch): `decode`'s rows, and with `chunk` rows that continue
        the sequence of the row before them (chunk[r]: how many rows before r are its sequence's previous positions,
        each row seeing their new K and V), only the rows `emit` names giving logits. Returns the emitted rows' logits
        (E, vocab_size) and chosen ids, E the rows with logits."""
        rows = len(tokens)
        most = max(len(t) for t in tables)
        for r, (length, table) in enumerate(zip(lengths, tables, strict=True)):
            if length + n > len(table) * pool.block_size:
                raise InvariantError(f"row {r} has {len(table)} blocks, too few for its slot {length + n - 1}")
        bad = [t for t in tokens if not 0 <= t < self.spec.vocab_size]
        if bad:
            raise TokenIdError(f"token id {bad[0]} is outside the vocabulary [0, {self.spec.vocab_size})")
        spec = self._workspace(max(lengths) + n, rows)
        self._cover(max(lengths) + n)
        work = self._work
        emitted = rows if emit is None else sum(1 for e in emit if e)
        if work.logits is None or work.logits.shape[0] < emitted:
            work.logits = torch.empty(emitted, self.spec.vocab_size)
        logits, ints = work.logits[:emitted], _i * rows
        token_ids, held, stops = ints(*tokens), ints(*lengths), (_i * len(stop))(*stop)
        flat = (_i * (rows * most))(*[b for t in tables for b in t + [0] * (most - len(t))])
        chunks = ints(*chunk) if chunk is not None else None
        emits = ints(*emit) if emit is not None else None
        batch = Batch(rows=rows, tokens=ctypes.addressof(token_ids), positions=ctypes.addressof(held),
                      lengths=ctypes.addressof(held), k=pool.k.data_ptr(), v=pool.v.data_ptr(),
                      slots=pool.num_blocks * pool.block_size, block_size=pool.block_size, max_blocks=most,
                      tables=ctypes.addressof(flat), kv=KV_FORMAT[pool.k.dtype],
                      chunk=ctypes.addressof(chunks) if chunks is not None else None,
                      emit=ctypes.addressof(emits) if emits is not None else None)
        chosen = (_i * (n * emitted))()
        done = kernels.library().decode_batch(ctypes.byref(spec), ctypes.byref(batch), n, stops, len(stop),
                                              logits.data_ptr(), chosen)
        self._observe()
        if done < 1:
            raise InvariantError(f"native step refused: n {n}, lengths {lengths}, chunk {chunk}, tables {tables}")
        return logits, [[chosen[i * emitted + r] for i in range(done)] for r in range(emitted)]
