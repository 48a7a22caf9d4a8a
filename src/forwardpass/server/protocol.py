"""Request bodies of the OpenAI wire format (the fields forwardpass serves), validated by pydantic."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..sampling import SamplingParams

# Fields of OpenAI's chat and completions requests that forwardpass does not implement, and why: a request that
# carries one is refused with a 400 naming it, never served as if the field were absent. Any other field this
# module does not declare is refused the same way ("extra": "forbid" on every request model).
UNSUPPORTED = {
    "response_format": "structured output is not implemented",
    "tools": "tool calling is not implemented", "tool_choice": "tool calling is not implemented",
    "parallel_tool_calls": "tool calling is not implemented", "functions": "function calling is not implemented",
    "function_call": "function calling is not implemented", "logit_bias": "logit_bias is not implemented",
    "best_of": "best_of is not implemented (n is)", "suffix": "insertion (suffix) is not implemented",
    "audio": "audio output is not implemented", "modalities": "only text output is implemented",
    "prediction": "predicted outputs are not implemented", "service_tier": "there are no service tiers",
    "store": "completions are not stored", "metadata": "completions are not stored",
    "reasoning_effort": "this model does not reason in a separate channel",
    "web_search_options": "web search is not implemented",
}


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StreamOptions(Strict):
    include_usage: bool = False


class SamplingFields(Strict):
    model: str | None = None
    user: str | None = None  # who the end user is, for the caller's own records: it changes nothing generated
    max_tokens: int | None = None
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    seed: int | None = None
    stop: str | list[str] | None = None
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    repetition_penalty: float = 1.0
    ignore_eos: bool = False  # an extension (as in vLLM): keep generating past end-of-turn tokens
    n: int = Field(1, ge=1, le=16)
    stream: bool = False
    stream_options: StreamOptions | None = None

    def sampling(self, max_tokens: int, logprobs: int | None, seed_offset: int = 0) -> SamplingParams:
        stop = [self.stop] if isinstance(self.stop, str) else list(self.stop or [])
        return SamplingParams(
            temperature=self.temperature, top_p=self.top_p, top_k=self.top_k, min_p=self.min_p,
            seed=None if self.seed is None else self.seed + seed_offset, stop=stop,
            presence_penalty=self.presence_penalty, frequency_penalty=self.frequency_penalty,
            repetition_penalty=self.repetition_penalty, max_tokens=max_tokens, logprobs=logprobs,
            ignore_eos=self.ignore_eos)


class CompletionRequest(SamplingFields):
    prompt: str | list[int]
    logprobs: int | None = Field(None, ge=0, le=20)
    echo: Literal[False] = False


class ChatMessage(Strict):
    role: Literal["system", "user", "assistant", "developer", "tool"]
    content: str


class ChatCompletionRequest(SamplingFields):
    messages: list[ChatMessage]
    max_completion_tokens: int | None = None
    logprobs: bool = False
    top_logprobs: int | None = Field(None, ge=0, le=20)


class TokenizeRequest(Strict):
    """vLLM's POST /tokenize: a prompt, or chat messages rendered through the model's template."""

    model: str | None = None
    prompt: str | None = None
    messages: list[ChatMessage] | None = None
    add_generation_prompt: bool = True  # messages only: end with the assistant's turn opening
    return_token_strs: bool = False


class DetokenizeRequest(Strict):
    model: str | None = None
    tokens: list[int]
