"""What the runner takes and gives, whatever its back end: a call's rows in (`Rows`: chunks of consecutive positions of
one sequence each: a decode row is a chunk of one token, a prompt chunk many, a token and its draft one chunk giving
logits at every position), their logits out (`StepOutput`); and what a back end runs in one call (`Capabilities`),
which the scheduler plans each step's rows within."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Capabilities:
    """What a back end runs in one call (the scheduler asks before it plans a step)."""

    bursts: bool  # several greedy steps of the same rows, each row's argmax fed back (Rows.steps > 1)
    drafts: bool  # chunks that give logits at every position beside other rows (a token and its draft to verify)
    decode_step: str  # what a failed call of decode rows is called in its requests' errors


NATIVE = Capabilities(bursts=True, drafts=True, decode_step="the decode step")  # native_step.py
BLOCKS = Capabilities(bursts=False, drafts=False, decode_step="the forward pass")  # blocks_step.py


@dataclass
class Chunk:
    """Positions start … start + len(ids) - 1 of one sequence, their K and V written into the blocks `table` lists;
    logits at the last position, or at every one (`every`)."""

    ids: list[int]
    table: list[int]
    start: int
    every: bool = False


@dataclass
class Rows:
    """One runner call: its chunks, and for decode rows (chunks of one token) how many greedy steps to run (each row's
    argmax fed back), stopping early where a row chooses one of `stop` (a burst)."""

    chunks: list[Chunk]
    steps: int = 1
    stop: tuple[int, ...] = ()


@dataclass
class StepOutput:
    """A call's logits, (E, vocab_size) float32, E the positions that give them in chunk order (valid until the runner's
    next call on this thread: copy to keep), and each of those positions' chosen ids (its argmax, a burst's tokens
    one per step) where the back end chooses them as it computes, else [] (the sampler chooses)."""

    logits: np.ndarray
    chosen: list[list[int]]
