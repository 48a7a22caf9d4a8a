"""The runner: the engine's compute. It runs a step's rows over the paged pool — prefill chunks, and decode rows — and
returns their logits; the engine schedules, samples, stops and handles failures around it.

Two back ends: the native step (native.py: whole steps in one C call — decode rows, greedy bursts, and prefill chunks
as rows each causal within its chunk) where it binds the pool, and the PyTorch blocks (model.py) over the pool's block
tables everywhere else (the reference mode, checked mode, CUDA, families the native step does not run). A model read
without PyTorch (a NativeModel) has only the first."""

from __future__ import annotations

import weakref

from ..errors import ForwardpassError
from ..weights.native_model import NativeModel, from_torch
from .native import NativeStep
from .paged import BlockPool

# each model's native step, bound once (building it walks every layer) and shared by every engine on the model
_NATIVE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def native_step(model) -> NativeStep | None:
    """The model's native step (a NativeModel's, or a Transformer's where the step runs it), or None."""
    if model not in _NATIVE:
        if isinstance(model, NativeModel):
            _NATIVE[model] = NativeStep(model)
        else:  # the step owns the Transformer's description
            native = from_torch(model)
            _NATIVE[model] = NativeStep(native, owned=True) if native is not None else None
    return _NATIVE[model]


class Runner:
    def __init__(self, model, pool: BlockPool, checked: bool = False):
        self.model, self.pool, self.checked = model, pool, checked  # checked: PagedBatch verifies every write
        step = native_step(self.model)
        self._native = step if step is not None and step.fits(pool) else None  # the model's tensors checked once
        if self._native is None and isinstance(model, NativeModel):
            raise ForwardpassError(f"the native step does not run over a {pool.format} KV pool on {pool.device}")

    @property
    def native(self) -> NativeStep | None:
        """The native step where it binds the pool now: its tensors are checked once, for the runner's life (a model's
        weights are not replaced while it is served); the switches `ready` names before every step."""
        return self._native if self._native is not None and self._native.ready() else None

    def prefill(self, chunks: list[tuple[list[int], list[int], int]]):
        """Logits (rows, vocab_size) at each chunk's last token — numpy from the native step, a tensor from the blocks:
        chunk (ids, table, start) is the ids at positions start … start + len(ids) - 1 of the sequence whose blocks
        `table` lists, its K and V written into them. Through the native step where it binds the pool (each position a
        row, causal within its chunk), else `blocks`."""
        native = self.native
        if native is not None:
            return native.prefill(self.pool, chunks)
        return self.blocks(chunks)

    def blocks(self, chunks: list[tuple[list[int], list[int], int]]):
        """`prefill` through the PyTorch blocks (the reference): the chunks as one batch, padded to the longest."""
        if isinstance(self.model, NativeModel):
            raise ForwardpassError("the PyTorch blocks need the PyTorch model: load it with backend='torch'")
        import torch

        from .paged import PagedBatch

        width = max(len(ids) for ids, _, _ in chunks)
        rows = [ids + [0] * (width - len(ids)) for ids, _, _ in chunks]
        view = PagedBatch(self.pool, [table for _, table, _ in chunks], [start for _, _, start in chunks],
                          checked=self.checked)
        with torch.inference_mode():
            logits, _ = self.model(torch.tensor(rows, device=self.pool.k.device), view,
                                   n_tokens=[len(ids) for ids, _, _ in chunks], last_only=True)
        return logits[:, 0]

    def decode(self, tokens: list[int], lengths: list[int], tables: list[list[int]], n: int = 1,
               stop: tuple[int, ...] = ()):
        """A decode step for each row (row r's token at position lengths[r], after the pairs its table holds): the last
        step's logits (rows, vocab_size) and, from the native step, each row's chosen ids (n > 1: a greedy burst, each
        argmax fed back, as NativeStep.decode); from the PyTorch blocks (n must be 1) None, the caller samples."""
        native = self.native
        if native is not None:
            return native.decode(self.pool, tokens, lengths, tables, n, stop)
        if n != 1:
            raise ValueError("greedy bursts run on the native step only")
        rows = zip(tokens, tables, lengths, strict=True)
        return self.prefill([([token], table, length) for token, table, length in rows]), None
