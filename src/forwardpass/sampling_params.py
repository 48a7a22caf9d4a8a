"""SamplingParams: how to choose each next token, and when to stop, checked when made (no PyTorch here: a command
refuses a bad setting before it imports the engine). The processors that apply them: sampling.py."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .errors import ForwardpassError

if TYPE_CHECKING:
    from .structured.constraints import Constraint


MAX_SEED = 2**63 - 1  # seeds run 0..MAX_SEED
MAX_COUNT = 2**31 - 1  # top_k, max_tokens and token ids: far past any vocabulary or context, within a C int


@dataclass(frozen=True)
class Range:
    """The values a setting takes: low ≤ value ≤ high (low < value when low_open), None leaving a side open; an
    integer setting takes integers only. SamplingParams checks against these, and the server's request models
    declare the same bounds, so a request is refused with the same limits as a library call."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    integer: bool = False


RANGES = {
    "temperature": Range(0.0),
    "top_p": Range(0.0, 1.0, low_open=True),
    "min_p": Range(0.0, 1.0),
    "repetition_penalty": Range(0.0, low_open=True),
    "presence_penalty": Range(-2.0, 2.0),
    "frequency_penalty": Range(-2.0, 2.0),
    "logit_bias": Range(-100.0, 100.0),  # each token's bias
    "top_k": Range(0, MAX_COUNT, integer=True),
    "max_tokens": Range(1, MAX_COUNT, integer=True),
    "logprobs": Range(0, 20, integer=True),
    "seed": Range(0, MAX_SEED, integer=True),
    "token_id": Range(0, MAX_COUNT, integer=True),
}


def check_temperature(temperature: float) -> None:
    """A softmax temperature: any number ≥ 0 (0: the argmax)."""
    if isinstance(temperature, bool) or not isinstance(temperature, int | float) or not temperature >= 0:
        raise ForwardpassError(f"temperature must be a number ≥ 0, got {temperature}")


@dataclass
class SamplingParams:
    """How to choose each next token, and when to stop; names as the OpenAI API names them."""

    temperature: float = 1.0  # 0: greedy argmax
    top_k: int = 0  # 0: off
    top_p: float = 1.0  # 1: off
    min_p: float = 0.0  # 0: off
    repetition_penalty: float = 1.0  # 1: off; > 1 discourages every token already in prompt or output
    presence_penalty: float = 0.0  # subtracted once from each token already generated
    frequency_penalty: float = 0.0  # subtracted per occurrence in the generated text
    seed: int | None = None  # fixes the random stream: same seed, same tokens
    max_tokens: int = 128
    stop: list[str] = field(default_factory=list)
    stop_token_ids: list[int] = field(default_factory=list)  # end here too, as an end-of-turn token does (not kept)
    logprobs: int | None = None  # report the chosen token's log-probability and this many alternatives
    ignore_eos: bool = False
    logit_bias: dict[int, float] = field(default_factory=dict)  # token id → added to its logit, -100 to 100
    constraint: Constraint | None = None  # structured output: the grammar the text must match (constraints.py)
    prediction: list[int] = field(default_factory=list)  # the output's expected tokens: drafts start from them
    # (speculative decoding); they never change what is generated

    def __post_init__(self) -> None:
        if isinstance(self.stop, str):
            self.stop = [self.stop]
        for name in ("temperature", "top_p", "min_p", "repetition_penalty", "presence_penalty", "frequency_penalty",
                     "top_k", "max_tokens"):
            check(name, getattr(self, name))
        if self.logprobs is not None:
            check("logprobs", self.logprobs)
        if self.seed is not None:
            check("seed", self.seed)
        if any(not isinstance(s, str) or not s for s in self.stop):
            raise ForwardpassError("stop must be a list of non-empty strings")
        for token_id in self.stop_token_ids:
            check("token_id", token_id, "a stop token id")
        for token_id in self.prediction:
            check("token_id", token_id, "a prediction token id")
        for token_id, bias in self.logit_bias.items():
            check("token_id", token_id, "a logit_bias token id")
            check("logit_bias", bias, f"logit_bias[{token_id}]")

    def end_ids(self, eos_ids: list[int]) -> set[int]:
        """The tokens that end generation (not kept): the model's end-of-turn ids unless ignore_eos, and
        stop_token_ids."""
        return (set() if self.ignore_eos else set(eos_ids)) | set(self.stop_token_ids)

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    @property
    def penalized(self) -> bool:
        return self.repetition_penalty != 1.0 or self.presence_penalty != 0.0 or self.frequency_penalty != 0.0

    @property
    def argmax_only(self) -> bool:
        """Greedy with nothing else between the logits and the choice: the token is the raw logits' argmax."""
        return self.greedy and not self.penalized and not self.logit_bias and self.constraint is None


def check(name: str, value, label: str | None = None) -> None:
    """Refuses a value outside RANGES[name], naming it as `label` (the setting's name unless given)."""
    r, label = RANGES[name], label or name
    if r.integer and (isinstance(value, bool) or not isinstance(value, int)):
        raise ForwardpassError(f"{label} must be an integer, got {value!r}")
    finite = isinstance(value, int) or isinstance(value, float) and math.isfinite(value)
    if isinstance(value, bool) or not finite:
        raise ForwardpassError(f"{label} must be a finite number, got {value!r}")
    if r.low is not None and (value < r.low or (r.low_open and value == r.low)):
        raise ForwardpassError(f"{label} must be {'>' if r.low_open else '≥'} {r.low}, got {value}")
    if r.high is not None and value > r.high:
        raise ForwardpassError(f"{label} must be ≤ {r.high}, got {value}")
