"""The native step: one call runs whole steps of a Llama-family model for a batch of rows over the engine's paged pool
(a single sequence is a pool of one). The runner (runner.py) calls it (`run`) where it binds the pool.

A decode step of a small model is ~20 framework ops per layer, each doing microseconds of work; their
dispatch costs as much as reading the weights. `kernels/decode_step.c` does the same arithmetic as the
blocks in one call: RMSNorm, Q/K/V, RoPE, the cache append, grouped-query attention, the output projection,
SwiGLU, the residual adds, the final norm and the unembedding, with the switches other families declare
(QK-norm, sandwich norms, GeGLU, scaled embeddings, per-layer sliding windows and RoPE tables, the attention
scale): Qwen2/3, Mistral, Phi-3 and Gemma 3 run through it as Llama does. It reads a NativeModel
(weights/native_model.py: the model file's tensors read without PyTorch, or a built Transformer's own) and writes into
the pool's blocks (float32, float16 or q8_0 pairs) in numpy memory; logits come back as numpy arrays. Nothing here
imports PyTorch."""

from __future__ import annotations

import ctypes
import threading
import weakref

import numpy as np

from .. import kernels
from ..errors import InvariantError, TokenIdError
from ..kernels.abi import KV_F16, KV_F32, KV_Q8_0, Batch, Model
from ..kernels.team import TeamSize, most_threads
from ..weights.native_model import NativeModel
from .paged import BlockPool
from .rows import NATIVE, Rows, StepOutput

_i = ctypes.c_int
PREFILL_ROWS = 64  # positions one native prefill call runs: its workspace grows with them
KV_FORMAT = {"float32": KV_F32, "float16": KV_F16, "q8_0": KV_Q8_0}  # a pool's format → abi.h's Batch.kv


def aligned(floats: int, to: int = 64) -> tuple[np.ndarray, int]:
    """A float32 buffer of at least `floats` numbers and the address of its first `to`-byte boundary."""
    buffer = np.empty(floats + to // 4, dtype=np.float32)
    return buffer, -(-buffer.ctypes.data // to) * to


class _Workspace(threading.local):
    """One Python thread's buffers for the step, made when it first decodes (or meets a larger cache) and reused
    for every token after: a step allocates nothing. Each thread its own, so threads may decode at once."""

    def __init__(self):
        self.spec: Model | None = None
        self.memory: np.ndarray | None = None
        self.room = 0  # the cache capacity `memory` is sized for
        self.logits: np.ndarray | None = None  # a batch's logits, (rows, vocab_size), reused
        self.team: TeamSize | None = None  # how many threads this thread's steps run
        self.usage = (ctypes.c_double * 2)()


class NativeStep:
    """The native step bound to one NativeModel: held here where the step owns it (a Transformer's description, made
    for the step), else only referred to, so that a model read without PyTorch is freed with its last user (runner.py
    keeps each model's step beside the model, not holding it)."""

    capabilities = NATIVE  # bursts, and drafts to verify beside other rows: any mix of rows is one call

    def __init__(self, model: NativeModel, owned: bool = False):
        self.spec = model.spec
        self._model, self._owned = weakref.ref(model), model if owned else None
        self._work = _Workspace()

    @property
    def model(self) -> NativeModel:
        """The description the step reads."""
        model = self._model()
        if model is None:
            raise InvariantError("the native step's model was freed")
        return model

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
            work.memory, spec.work = aligned(kernels.library().decode_workspace(ctypes.byref(spec)))
            work.spec, work.room = spec, spec.capacity
        work.spec.capacity = capacity  # fewer slots need less of the workspace
        work.spec.team = work.team.threads
        return work.spec

    def _observe(self) -> None:
        """Tell this thread's team size how its last call's threads ran."""
        work = self._work
        kernels.library().decode_usage(work.usage)
        work.team.observe(work.usage[0], work.usage[1])

    def binds(self, pool: BlockPool) -> bool:
        """The one eligibility check: whether the step runs over this pool now, its two parts below (the runner asks
        `fits` once for its life, `ready` before every step)."""
        return self.fits(pool) and self.ready()

    def fits(self, pool: BlockPool) -> bool:
        """A block pool of float32, float16 or q8_0 pairs in numpy memory (engine/paged.py), and the model's tensors
        still those described (NativeModel.current: a walk over every slot the step points into)."""
        return pool.format in KV_FORMAT and pool.k_array is not None and self.model.current()

    def ready(self) -> bool:
        """The switches a model may turn while it is served (NativeModel.ready: checked mode, the residual
        counterfactual), cheap enough to ask before every step."""
        return self.model.ready()

    def run(self, pool: BlockPool, rows: Rows) -> StepOutput:
        """The runner's one verb on this back end: decode rows (and bursts) in one call (`decode`); chunks giving
        logits at every position (drafts to verify) beside the rest in one call; prompt chunks in calls of at most
        PREFILL_ROWS rows (`prefill`)."""
        chunks = rows.chunks
        if all(len(c.ids) == 1 for c in chunks):
            logits, chosen = self.decode(pool, [c.ids[0] for c in chunks], [c.start for c in chunks],
                                         [c.table for c in chunks], rows.steps, rows.stop)
            return StepOutput(logits, chosen)
        if any(c.every for c in chunks):
            flat = [(token, c.start + i, c.table, i, c.every or i == len(c.ids) - 1)
                    for c in chunks for i, token in enumerate(c.ids)]
            emit = None if all(e for *_, e in flat) else [int(e) for *_, e in flat]
            logits, chosen = self.step(pool, [t for t, *_ in flat], [p for _, p, *_ in flat],
                                       [t for _, _, t, _, _ in flat], chunk=[i for *_, i, _ in flat], emit=emit)
            return StepOutput(logits, chosen)
        logits = self.prefill(pool, [(c.ids, c.table, c.start) for c in chunks])
        return StepOutput(logits, [[] for _ in chunks])

    def decode(self, pool: BlockPool, tokens: list[int], lengths: list[int], tables: list[list[int]], n: int = 1,
               stop: tuple[int, ...] = ()) -> tuple[np.ndarray, list[list[int]]]:
        """n decode steps of M sequences over the paged `pool` in one native call: row r's token at position
        lengths[r] (the pairs its sequence holds), reading its pairs through its block table and writing its new K and V
        into slot lengths[r]; with n > 1 each row's argmax fed back, until n steps are done or some row chooses one of
        `stop` (chosen, not fed back). Every weight is read from memory once per step for all M rows, and every row's
        table must hold the slots its steps write. Returns the last step's logits (M, vocab_size), valid until the next
        call on this thread, and each row's chosen ids (as many for every row)."""
        return self.step(pool, tokens, lengths, tables, n=n, stop=stop)

    def prefill(self, pool: BlockPool, chunks: list[tuple[list[int], list[int], int]]) -> np.ndarray:
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
            out.append(logits.copy())
        return np.concatenate(out)

    def step(self, pool: BlockPool, tokens: list[int], lengths: list[int], tables: list[list[int]],
             chunk: list[int] | None = None, emit: list[int] | None = None, n: int = 1,
             stop: tuple[int, ...] = ()) -> tuple[np.ndarray, list[list[int]]]:
        """One native call over any mix of rows (abi.h's Batch): `decode`'s rows, and with `chunk` rows that continue
        the sequence of the row before them (chunk[r]: how many rows before r are its sequence's previous positions,
        each row seeing their new K and V), only the rows `emit` names giving logits. Returns the emitted rows' logits
        (E, vocab_size) float32, valid until the next call on this thread, and chosen ids, E the rows with logits."""
        rows = len(tokens)
        most = max(len(t) for t in tables)
        for r, (length, table) in enumerate(zip(lengths, tables, strict=True)):
            if length + n > len(table) * pool.block_size:
                raise InvariantError(f"row {r} has {len(table)} blocks, too few for its slot {length + n - 1}")
        bad = [t for t in tokens if not 0 <= t < self.spec.vocab_size]
        if bad:
            raise TokenIdError(f"token id {bad[0]} is outside the vocabulary [0, {self.spec.vocab_size})")
        model = self.model  # held for the call, whoever else lets it go
        spec = self._workspace(max(lengths) + n, rows)
        model.cover(max(lengths) + n)
        work = self._work
        emitted = rows if emit is None else sum(1 for e in emit if e)
        if work.logits is None or work.logits.shape[0] < emitted:
            work.logits = np.empty((emitted, self.spec.vocab_size), dtype=np.float32)
        logits, ints = work.logits[:emitted], _i * rows
        token_ids, held, stops = ints(*tokens), ints(*lengths), (_i * len(stop))(*stop)
        flat = (_i * (rows * most))(*[b for t in tables for b in t + [0] * (most - len(t))])
        chunks = ints(*chunk) if chunk is not None else None
        emits = ints(*emit) if emit is not None else None
        batch = Batch(rows=rows, tokens=ctypes.addressof(token_ids), positions=ctypes.addressof(held),
                      lengths=ctypes.addressof(held), k=pool.k_array.ctypes.data, v=pool.v_array.ctypes.data,
                      slots=pool.num_blocks * pool.block_size, block_size=pool.block_size, max_blocks=most,
                      tables=ctypes.addressof(flat), kv=KV_FORMAT[pool.format],
                      chunk=ctypes.addressof(chunks) if chunks is not None else None,
                      emit=ctypes.addressof(emits) if emits is not None else None)
        chosen = (_i * (n * emitted))()
        done = kernels.library().decode_batch(ctypes.byref(spec), ctypes.byref(batch), n, stops, len(stop),
                                              logits.ctypes.data, chosen)
        self._observe()
        if done < 1:
            raise InvariantError(f"native step refused: n {n}, lengths {lengths}, chunk {chunk}, tables {tables}")
        return logits, [[chosen[i * emitted + r] for i in range(done)] for r in range(emitted)]
