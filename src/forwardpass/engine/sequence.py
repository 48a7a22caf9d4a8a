"""One request's state inside the engine: its tokens, its blocks, its sampler and its stop conditions."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..sampling import SamplingParams, TokenLogprob
from ..structured.constraints import Matcher
from ..text.detokenize import TextStream
from .speculation import Drafter


@dataclass
class RequestOutput:
    """What one step produced for one request (streamed to its caller)."""

    request_id: str
    token_id: int | None  # None for a finish without a new token (an end-of-turn token, an abort)
    text: str  # new text that is safe to show
    logprob: TokenLogprob | None = None
    finish_reason: str | None = None  # "stop", "length", "abort" (cancelled), "error" (failed), None while running
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    error: Error | None = None  # why an "abort" or "error" ended it; None when the client itself went away
    stop_string: str | None = None  # the stop string that ended it ("stop")


@dataclass(frozen=True)
class Error:
    """Why the engine ended a request early: a message for the client and a kind the server maps to a status."""

    message: str
    kind: str  # "shutdown", "timeout", "constraint" (the grammar library refused the constraint) or "failed"


@dataclass
class Sequence:
    """One owner writes each field after it is made (the objects it holds change their own state: the matcher, the text
    stream, the drafter, the generator): admission.py makes it with the first block of fields; the block tables
    (tables.py) write `blocks`, `hashes`, `disk_keys`, `num_computed`, `cached_tokens`; the scheduler `preemptions`;
    the outputs (outputs.py) `output_ids`, `first_token_at`, `last_token_at`, `finish_reason`."""

    request_id: str
    prompt_ids: list[int]
    params: SamplingParams
    generator: np.random.Generator  # its own random stream (sampling.make_generator)
    text: TextStream | None
    on_output: Callable[[RequestOutput], None]
    eos_ids: set[int]
    arrival: float = field(default_factory=time.perf_counter)
    deadline: float | None = None  # perf_counter time past which the engine ends it (the server's time limit)
    matcher: Matcher | None = None  # structured output: where the text is in its grammar
    partition: str = ""  # whose recent requests it may draft from and feeds (suffix_drafts.py): "" one shared
    drafter: Drafter = field(default_factory=Drafter)  # speculative decoding's lookup and draft length (speculation.py)
    # the block tables'
    blocks: list[int] = field(default_factory=list)
    hashes: list[int] = field(default_factory=list)  # prefix hash of each full block, in order
    disk_keys: list[bytes] = field(default_factory=list)  # the prompt cache's chain key of each full block, as needed
    num_computed: int = 0  # tokens whose (K, V) pairs are in the cache
    cached_tokens: int = 0  # prompt tokens found in the prefix cache
    # the scheduler's
    preemptions: int = 0
    # the outputs'
    output_ids: list[int] = field(default_factory=list)
    first_token_at: float | None = None
    last_token_at: float | None = None
    finish_reason: str | None = None

    @property
    def token_ids(self) -> list[int]:
        return self.prompt_ids + self.output_ids

    @property
    def num_tokens(self) -> int:
        return len(self.prompt_ids) + len(self.output_ids)

    @property
    def to_compute(self) -> int:
        """Tokens still to run through the model before the next token can be sampled."""
        return self.num_tokens - self.num_computed
