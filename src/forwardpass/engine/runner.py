"""The runner: the engine's compute. One verb, `step`: any mix of rows over the paged pool (rows.py: decode rows, prompt
chunks, a token and its draft to verify) in, their logits and the ids the back end chose out, one result type whatever
the back end; the engine schedules, samples, stops and handles failures around it.

Two back ends, each declaring what it runs in one call (`capabilities`): the native step (native_step.py: whole steps in
one C call, greedy bursts, drafts beside decode rows, prompt chunks as rows each causal within its chunk) where it binds
the pool, and the PyTorch blocks (blocks_step.py) everywhere else (the reference mode, checked mode, CUDA, families
the native step does not run). A model read without PyTorch (a NativeModel) has only the first.

Eligibility is `NativeStep.binds`: its tensor walk (`fits`) once, when the runner is made (a model's weights are not
replaced while it is served), its switches (`ready`) before every step, in `backend` alone."""

from __future__ import annotations

import weakref

from ..errors import ForwardpassError
from ..weights.native_model import NativeModel, from_torch
from .blocks_step import BlocksStep
from .native_step import NativeStep
from .paged import BlockPool
from .rows import Capabilities, Rows, StepOutput

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
    def __init__(self, model, pool: BlockPool, checked: bool = False, reference: bool = False):
        """`checked`: the blocks verify every cache write; `reference`: always the PyTorch blocks (to compare with)."""
        self.pool = pool
        step = None if reference else native_step(model)
        self._native = step if step is not None and step.fits(pool) else None
        if isinstance(model, NativeModel) and self._native is None:
            raise ForwardpassError("the PyTorch blocks need the PyTorch model: load it with backend='torch'"
                                   if reference else
                                   f"the native step does not run over a {pool.format} KV pool on {pool.device}")
        self._blocks = BlocksStep(model, checked)

    def backend(self) -> NativeStep | BlocksStep:
        """The back end that runs the next step: the native step where it binds the pool now, else the blocks."""
        return self._native if self._native is not None and self._native.ready() else self._blocks

    @property
    def capabilities(self) -> Capabilities:
        """What the next step's back end runs in one call (rows.py: NATIVE or BLOCKS)."""
        return self.backend().capabilities

    def step(self, rows: Rows) -> StepOutput:
        """Run `rows` (writing their K and V into the pool) and return their logits (and chosen ids, where the back
        end chooses them)."""
        return self.backend().run(self.pool, rows)
