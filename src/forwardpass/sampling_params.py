"""SamplingParams: how to choose each next token, and when to stop, checked when made (no PyTorch here: a command
refuses a bad setting before it imports the engine). The processors that apply them: sampling.py."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .errors import ForwardpassError

if TYPE_CHECKING:
    from .constraints import Constraint


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

    def __post_init__(self) -> None:
        if isinstance(self.stop, str):
            self.stop = [self.stop]
        check = _Checker()
        check.number("temperature", self.temperature, low=0.0)
        check.number("top_p", self.top_p, low=0.0, high=1.0, low_open=True)
        check.number("min_p", self.min_p, low=0.0, high=1.0)
        check.number("repetition_penalty", self.repetition_penalty, low=0.0, low_open=True)
        check.number("presence_penalty", self.presence_penalty, low=-2.0, high=2.0)
        check.number("frequency_penalty", self.frequency_penalty, low=-2.0, high=2.0)
        check.integer("top_k", self.top_k, low=0)
        check.integer("max_tokens", self.max_tokens, low=1)
        if self.logprobs is not None:
            check.integer("logprobs", self.logprobs, low=0, high=20)
        if self.seed is not None:
            check.integer("seed", self.seed, low=0, high=2**63 - 1)
        if any(not isinstance(s, str) or not s for s in self.stop):
            raise ForwardpassError("stop must be a list of non-empty strings")
        for token_id in self.stop_token_ids:
            check.integer("a stop token id", token_id, low=0)
        for token_id, bias in self.logit_bias.items():
            check.integer("a logit_bias token id", token_id, low=0)
            check.number(f"logit_bias[{token_id}]", bias, low=-100.0, high=100.0)

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


class _Checker:
    def number(self, name, value, low=None, high=None, low_open=False) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value) or math.isinf(value):
            raise ForwardpassError(f"{name} must be a finite number, got {value!r}")
        if low is not None and (value < low or (low_open and value == low)):
            raise ForwardpassError(f"{name} must be {'>' if low_open else '≥'} {low}, got {value}")
        if high is not None and value > high:
            raise ForwardpassError(f"{name} must be ≤ {high}, got {value}")

    def integer(self, name, value, low=None, high=None) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ForwardpassError(f"{name} must be an integer, got {value!r}")
        self.number(name, value, low, high)
