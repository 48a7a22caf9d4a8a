"""The fused decode step: one native call runs a whole decode step of a Llama-family model, or of a batch of them.

A decode step of a small model is ~20 framework ops per layer, each doing microseconds of work; their
dispatch costs as much as reading the weights. `kernels/decode_step.c` does the same arithmetic as the
blocks in one call: RMSNorm, Q/K/V, RoPE, the cache append, grouped-query attention, the output projection,
SwiGLU, the residual adds, the final norm and the unembedding, with the switches other families declare
(QK-norm, sandwich norms, GeGLU, scaled embeddings, per-layer sliding windows and RoPE tables, the attention
scale): Qwen2/3, Mistral, Phi-3 and Gemma 3 decode through it as Llama does. It reads the model's own tensors (float32,
or int8/q4 blocks) and writes into the model's own KVCache, or the engine's paged pool (float32 or float16 pairs), so
prefill (PyTorch) and decode (fused) share one cache. It applies to decode on the CPU in float32 arithmetic (one
sequence, or a batch over the pool); everything else takes the PyTorch path.
"""

from __future__ import annotations

import ctypes
import threading

import torch
from torch import nn

from . import kernels
from .errors import ContextLengthError, InvariantError, TokenIdError
from .kernels.abi import Batch, Layer, Linear, Model
from .kernels.team import TeamSize, most_threads
from .kv_cache import KVCache
from .quant import HalfLinear, QuantizedEmbedding, QuantizedLinear

_i = ctypes.c_int


class _Workspace(threading.local):
    """One Python thread's buffers for the step, made when it first decodes (or meets a larger cache) and reused
    for every token after: a step allocates nothing. Each thread its own, so threads may decode at once."""

    def __init__(self):
        self.spec: Model | None = None
        self.memory: torch.Tensor | None = None
        self.room = 0  # the cache capacity `memory` is sized for
        self.tokens = (_i * 0)()
        self.logits: torch.Tensor | None = None  # a batch's logits, (rows, vocab_size), reused
        self.team: TeamSize | None = None  # how many threads this thread's steps run
        self.usage = (ctypes.c_double * 2)()

    def chosen(self, n: int) -> ctypes.Array:
        """Room for n chosen token ids, grown only when a call asks for more."""
        if len(self.tokens) < n:
            self.tokens = (_i * n)()
        return self.tokens


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


class FusedDecode:
    """The native decode step bound to one model's tensors. `build` returns None where it cannot apply."""

    def __init__(self, model: nn.Module, embeddings: Linear, layers: list[Layer], lm_head: Linear):
        c = model.config
        self.model = model
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
        self.fingerprint = self._fingerprint()
        self._work = _Workspace()

    @classmethod
    def build(cls, model: nn.Module) -> FusedDecode | None:
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

    def _fingerprint(self) -> tuple:
        """Where the model's tensors live: if any is replaced (a reload, a dtype or device move), this changes."""
        m = self.model
        first, last = m.blocks[0], m.blocks[-1]
        table = m.tok_embeddings
        table = table.table.q if isinstance(table, QuantizedEmbedding) else table.weight
        return tuple(t.data_ptr() for t in (table, first.attn_norm.weight, last.ffn_norm.weight, m.norm_f.weight,
                                            m.rope.cos)) + tuple(
            id(layer) for layer in (m.tok_embeddings, first.attn.qkv, last.ffn.down, m.lm_head))

    def applies(self, x: torch.Tensor, cache: KVCache) -> bool:
        """One token of one sequence on the CPU, and a cache and model the step binds to (`binds`)."""
        return x.shape == (1, 1) and x.device.type == "cpu" and self.binds(cache)

    def binds(self, cache: KVCache) -> bool:
        """A plain float32 KVCache of one row on the CPU (not a subclass: the deliberately broken caches of bugs.py
        must run their own bookkeeping) whose next position is inside the RoPE table, no checked mode, every
        residual an add, the model as it was bound. A generation checks it once, then calls `step` per token."""
        return (type(cache) is KVCache and cache.batch == 1
                and cache.next_position(0) < self.model.config.context_length
                and cache.k.dtype == torch.float32 and cache.k.device.type == "cpu" and self._as_bound())

    def _as_bound(self) -> bool:
        """No checked mode, every residual an add, the model's tensors where they were when the step was bound."""
        m = self.model
        return not m.checked and all(block.residual == "add" for block in m.blocks) and (
            self._fingerprint() == self.fingerprint)

    def __call__(self, x: torch.Tensor, cache: KVCache) -> torch.Tensor:
        """Logits (1, 1, vocab_size) for token x (1, 1), its K and V appended to `cache`."""
        return self.step(int(x[0, 0]), cache)[0].view(1, 1, -1)

    def step(self, token: int, cache: KVCache, out: torch.Tensor | None = None) -> tuple[torch.Tensor, int]:
        """Logits (vocab_size,) for `token` at the cache's next position — into `out` if given, a float32 CPU
        tensor a generation reuses — and their argmax (the greedy token, found as they are written); its K and
        V appended to `cache`."""
        logits, chosen = self.greedy_steps(token, cache, 1, (), out)
        return logits, chosen[0]

    def greedy_steps(self, token: int, cache: KVCache, n: int, stop: tuple[int, ...] = (),
                     out: torch.Tensor | None = None) -> tuple[torch.Tensor, list[int]]:
        """Greedy decoding in one native call, no Python between tokens: `token` at the cache's next position,
        then each step's argmax fed back, until n tokens are chosen or one of `stop` is (chosen, not fed back).
        Returns the last step's logits (into `out` as in `step`) and the chosen ids; every fed token's K and V
        are appended to `cache`, which must have room for n more."""
        if not 0 <= token < self.spec.vocab_size:
            raise TokenIdError(f"token id {token} is outside the vocabulary [0, {self.spec.vocab_size})")
        logits = torch.empty(self.spec.vocab_size) if out is None else out
        if logits.shape != (self.spec.vocab_size,) or logits.dtype != torch.float32 or not logits.is_contiguous():
            raise InvariantError(f"decode step output must be ({self.spec.vocab_size},) contiguous float32")
        if n > 1 and cache.lengths[0] + n > cache.capacity:
            raise ContextLengthError(f"{n} greedy steps need {n} free cache slots, the cache has "
                                     f"{cache.capacity - cache.lengths[0]} (a sliding cache slides one step at a time)")
        cache.reserve([n], n)  # checks capacity first (or slides, by the cache's policy)
        position, slot = cache.next_position(0), cache.lengths[0]
        self._cover(position + n)
        spec = self._workspace(cache.capacity, 1)
        spec.k_cache, spec.v_cache = cache.k.data_ptr(), cache.v.data_ptr()
        chosen, stops = self._work.chosen(n), (_i * len(stop))(*stop)
        done = kernels.library().decode_greedy(ctypes.byref(spec), token, position, slot, n, stops, len(stop),
                                               logits.data_ptr(), chosen)
        self._observe()
        if done < 1:
            cache.commit([0])
            raise InvariantError(f"decode step refused: token {token}, positions {position} … {position + n - 1}, "
                                 f"slots {slot} … {slot + n - 1} of {cache.capacity}")
        cache.commit([done])
        return logits, chosen[:done]

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

    def binds_pool(self, pool) -> bool:
        """A float32 or float16 block pool on the CPU (engine/paged.py) the batched step reads and writes, the model
        as bound."""
        return pool.k.dtype in (torch.float32, torch.float16) and pool.k.device.type == "cpu" and self._as_bound()

    def batch_step(self, pool, tokens: list[int], lengths: list[int], tables: list[list[int]]) -> tuple[
            torch.Tensor, list[int]]:
        """One decode step for each of M sequences over the paged `pool`: row r's token at position lengths[r] (the
        pairs its sequence holds), reading its pairs through its block table and writing its new K and V into
        slot lengths[r]. Every weight is read from memory once for all M rows. Returns logits (M, vocab_size), valid
        until the next call on this thread, and each row's argmax."""
        spec, batch, logits, chosen, _ = self._batch(pool, tokens, lengths, tables, 1)
        refused = kernels.library().decode_batch(ctypes.byref(spec), ctypes.byref(batch), logits.data_ptr(), chosen)
        self._observe()
        if refused:
            raise InvariantError(f"batched decode step refused: lengths {lengths}, tables {tables}")
        return logits, list(chosen)

    def batch_greedy_steps(self, pool, tokens: list[int], lengths: list[int], tables: list[list[int]], n: int,
                           stop: tuple[int, ...] = ()) -> tuple[torch.Tensor, list[list[int]]]:
        """Greedy decoding of M sequences in one native call: `batch_step`, then each row's argmax fed back, until n
        steps are done or some row chooses one of `stop` (chosen, not fed back). Every row's table must hold n more
        slots. Returns the last step's logits and each row's chosen ids (as many for every row)."""
        spec, batch, logits, _, keep = self._batch(pool, tokens, lengths, tables, n)
        rows, stops = len(tokens), (_i * len(stop))(*stop)
        chosen = (_i * (n * rows))()
        done = kernels.library().decode_batch_greedy(ctypes.byref(spec), ctypes.byref(batch), n, stops, len(stop),
                                                     logits.data_ptr(), chosen)
        self._observe()
        if done < 1:
            raise InvariantError(f"batched greedy steps refused: n {n}, lengths {lengths}, tables {tables}")
        return logits, [[chosen[i * rows + r] for i in range(done)] for r in range(rows)]

    def _batch(self, pool, tokens: list[int], lengths: list[int], tables: list[list[int]], steps: int) -> tuple:
        """The kernel's view of a batch for `steps` steps, every refusal it would make named first: this thread's
        workspace description, the Batch, the logits (M, vocab_size) to write, room for M chosen ids, and the
        arrays the Batch points into (kept alive by the caller through the call)."""
        rows = len(tokens)
        most = max(len(t) for t in tables)
        for r, (length, table) in enumerate(zip(lengths, tables, strict=True)):
            if length + steps > len(table) * pool.block_size:
                raise InvariantError(f"row {r} has {len(table)} blocks, too few for its slot {length + steps - 1}")
        bad = [t for t in tokens if not 0 <= t < self.spec.vocab_size]
        if bad:
            raise TokenIdError(f"token id {bad[0]} is outside the vocabulary [0, {self.spec.vocab_size})")
        spec = self._workspace(max(lengths) + steps, rows)
        self._cover(max(lengths) + steps)
        work = self._work
        if work.logits is None or work.logits.shape[0] < rows:
            work.logits = torch.empty(rows, self.spec.vocab_size)
        ints = _i * rows
        token_ids, held, chosen = ints(*tokens), ints(*lengths), ints()
        flat = (_i * (rows * most))(*[b for t in tables for b in t + [0] * (most - len(t))])
        batch = Batch(rows=rows, tokens=ctypes.addressof(token_ids), positions=ctypes.addressof(held),
                      lengths=ctypes.addressof(held), k=pool.k.data_ptr(), v=pool.v.data_ptr(),
                      slots=pool.num_blocks * pool.block_size, block_size=pool.block_size, max_blocks=most,
                      tables=ctypes.addressof(flat), half=int(pool.k.dtype == torch.float16))
        return spec, batch, work.logits[:rows], chosen, (token_ids, held, flat)
