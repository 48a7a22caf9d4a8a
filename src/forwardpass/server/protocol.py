"""Request bodies of the OpenAI wire format (the fields forwardpass serves), validated by pydantic."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator, model_validator
from pydantic_core import PydanticCustomError

from ..errors import ConstraintError
from ..sampling import SamplingParams
from ..sampling_params import MAX_COUNT, MAX_SEED, RANGES
from ..server_defaults import applied
from ..structured.constraints import Constraint
from . import tools
from .quoting import quoted

# Fields of OpenAI's chat and completions requests that forwardpass does not implement, and why: a request that
# carries one is refused with a 400 naming it, never served as if the field were absent. Any other field this
# module does not declare is refused the same way ("extra": "forbid" on every request model).
UNSUPPORTED = {
    "functions": "the deprecated function calling is not implemented: use tools",
    "function_call": "the deprecated function calling is not implemented: use tool_choice",
    "best_of": "best_of is not implemented (n is)", "suffix": "insertion (suffix) is not implemented",
    "audio": "audio output is not implemented", "modalities": "only text output is implemented",
    "service_tier": "there are no service tiers",
    "store": "completions are not stored", "metadata": "completions are not stored",
    "reasoning_effort": "this model does not reason in a separate channel",
    "web_search_options": "web search is not implemented",
}


MAX_PROMPTS = 64  # prompts in one completions request: each runs as its own engine request, n choices each
MAX_CHOICES = 16  # n


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def bounded(name: str) -> Any:
    """A number field taking what the sampler's setting `name` takes (sampling_params.RANGES): a JSON number (an
    integer where the setting is one), never a boolean, finite, within the range."""
    r = RANGES[name]
    low = {} if r.low is None else {"gt": r.low} if r.low_open else {"ge": r.low}
    if r.integer:
        return Annotated[int, Field(strict=True, le=r.high, **low)]
    return Annotated[float, Field(strict=True, allow_inf_nan=False, le=r.high, **low)]


TokenId = bounded("token_id")
Count = Annotated[int, Field(strict=True, ge=1, le=MAX_COUNT)]
Text = Annotated[str, Field(min_length=1)]


class StreamOptions(Strict):
    include_usage: StrictBool = False


class JSONSchemaFormat(Strict):
    name: str
    description: str | None = None
    schema_: dict[str, Any] = Field({}, alias="schema")  # {}: any JSON value
    strict: StrictBool | None = None  # the schema is always enforced, strict or not


class ResponseFormat(Strict):
    """OpenAI's structured output: free text, any JSON object, or JSON that validates against a schema."""

    type: Literal["text", "json_object", "json_schema"]
    json_schema: JSONSchemaFormat | None = None


class StructuredOutputs(Strict):
    """vLLM's structured-output extension (one of): a JSON schema, a regular expression the whole output matches, a
    list of choices, or a Lark grammar (llguidance's dialect)."""

    json_: dict[str, Any] | str | None = Field(None, alias="json")
    regex: str | None = None
    choice: list[str] | None = None
    grammar: str | None = None


class SamplingFields(Strict):
    model: str | None = None
    user: str | None = None  # who the end user is: it changes nothing generated (its drafts come from its own requests)
    max_tokens: bounded("max_tokens") | None = None
    temperature: bounded("temperature") = 1.0
    top_p: bounded("top_p") = 1.0
    top_k: bounded("top_k") = 0
    min_p: bounded("min_p") = 0.0
    seed: bounded("seed") | None = None  # choice i of n draws with seed + i (past MAX_SEED: from 0 again)
    stop: Text | list[Text] | None = None
    presence_penalty: bounded("presence_penalty") = 0.0
    frequency_penalty: bounded("frequency_penalty") = 0.0
    repetition_penalty: bounded("repetition_penalty") = 1.0
    ignore_eos: StrictBool = False  # an extension (as in vLLM): keep generating past end-of-turn tokens
    stop_token_ids: list[TokenId] | None = None  # an extension (as in vLLM): stop at these tokens (not kept)
    n: Annotated[int, Field(strict=True, ge=1, le=MAX_CHOICES)] = 1
    stream: StrictBool = False
    stream_options: StreamOptions | None = None
    # token id (as a string, as JSON keys are) → added to its logit
    logit_bias: dict[str, bounded("logit_bias")] | None = None
    response_format: ResponseFormat | None = None
    structured_outputs: StructuredOutputs | None = None  # an extension (as in vLLM)
    # an extension (as llama-server's): a GBNF grammar the whole output matches; "" is none, as there
    grammar: str | None = None

    def constraining(self) -> list[str]:
        """The fields given that constrain the output, in the order errors name them (a response_format of type
        text constrains nothing)."""
        given = {"response_format": self.response_format is not None and self.response_format.type != "text",
                 "structured_outputs": self.structured_outputs is not None, "grammar": bool(self.grammar)}
        return [name for name, present in given.items() if present]

    @property
    def constraint_field(self) -> str:
        return (self.constraining() or ["response_format"])[-1]

    def constraint(self) -> Constraint | None:
        """The one constraint the request names (response_format, structured_outputs or grammar), if any."""
        given = self.constraining()
        if len(given) > 1:
            raise ConstraintError(f"give {given[0]} or {given[1]}, not both" if len(given) == 2 else
                                  f"give one of {', '.join(given[:-1])} and {given[-1]}, not {len(given)}")
        if self.grammar:
            return Constraint("gbnf", self.grammar)
        f = self.response_format
        if f is not None:
            if f.type == "json_schema":
                if f.json_schema is None:
                    raise ConstraintError("response_format of type json_schema needs a json_schema")
                return Constraint("json_schema", f.json_schema.schema_)
            return None if f.type == "text" else Constraint("json_object")
        s = self.structured_outputs
        if s is None:
            return None
        named = {k: v for k, v in (("json", s.json_), ("regex", s.regex), ("choice", s.choice),
                                   ("grammar", s.grammar)) if v is not None}
        if len(named) != 1:
            raise ConstraintError("structured_outputs takes exactly one of json, regex, choice and grammar")
        (kind, spec), = named.items()
        if kind == "json" and isinstance(spec, str):
            try:
                spec = json.loads(spec)
            except json.JSONDecodeError as e:
                raise ConstraintError(f"structured_outputs.json is not JSON: {e}") from None
        return Constraint("json_schema" if kind == "json" else kind, spec)

    @field_validator("logit_bias")
    @classmethod
    def _token_ids(cls, bias: dict[str, float] | None) -> dict[str, float] | None:
        for key in bias or {}:
            if not (key.isascii() and key.isdigit() and int(key) <= MAX_COUNT):
                raise PydanticCustomError("token_id", "keys are token ids (ASCII digits), got {key}",
                                          {"key": quoted(key)})
        return bias

    def bias(self) -> dict[int, float]:
        return {int(key): value for key, value in (self.logit_bias or {}).items()}

    def sampling(self, max_tokens: int, logprobs: int | None, seed_offset: int = 0,
                 defaults: dict | None = None) -> SamplingParams:
        """The request's sampling; `defaults`: the server's, for the fields it leaves out (server_defaults.py)."""
        stop = [self.stop] if isinstance(self.stop, str) else list(self.stop or [])
        seed = None if self.seed is None else (self.seed + seed_offset) % (MAX_SEED + 1)
        return SamplingParams(
            **applied(self, defaults or {}), seed=seed, stop=stop,
            presence_penalty=self.presence_penalty, frequency_penalty=self.frequency_penalty,
            max_tokens=max_tokens, logprobs=logprobs,
            ignore_eos=self.ignore_eos, logit_bias=self.bias(), constraint=self.constraint(),
            stop_token_ids=list(self.stop_token_ids or []))


class CompletionRequest(SamplingFields):
    prompt: str | list[TokenId] | list[str] | list[list[TokenId]]  # one prompt (text or ids), or a list of them
    logprobs: bounded("logprobs") | None = None
    echo: StrictBool = False

    @staticmethod
    def listed(prompt) -> list[str | list[int]]:
        """A `prompt` field's prompts: itself (a text or token ids), or each of the list it is."""
        return prompt if isinstance(prompt, list) and prompt and not isinstance(prompt[0], int) else [prompt]

    @field_validator("echo")
    @classmethod
    def _no_echo(cls, echo: bool) -> bool:
        if echo:
            raise PydanticCustomError("unsupported_value", "echoing the prompt back is not implemented")
        return echo

    @field_validator("prompt")
    @classmethod
    def _some_prompts(cls, prompt):
        if len(cls.listed(prompt)) > MAX_PROMPTS:
            raise ValueError(f"at most {MAX_PROMPTS} prompts a request, got {len(prompt)}")
        return prompt


class CalledFunction(Strict):
    name: str
    arguments: str  # JSON text, as OpenAI sends it


class ToolCall(Strict):
    id: str
    type: Literal["function"] = "function"
    function: CalledFunction


def text_parts(content):
    """OpenAI's content parts: text parts are joined into one text, as the Messages route joins text blocks; a part of
    another kind (an image, audio, a file) or a field of a part beyond its text is refused by name."""
    if not isinstance(content, list):
        return content
    texts = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else type(part).__name__
        if kind != "text":
            raise PydanticCustomError("unsupported_value", "content parts of type {kind} are not supported: "
                                                           "this model reads text parts only",
                                      {"kind": quoted(str(kind))})
        extra = sorted(set(part) - {"type", "text"})
        if extra or not isinstance(part.get("text"), str):
            why = f"field {quoted(extra[0])} is not supported" if extra else "needs its text as a string"
            raise PydanticCustomError("unsupported_value", "a text part {why}", {"why": why})
        texts.append(part["text"])
    return "".join(texts)


class Prediction(Strict):
    """OpenAI's predicted output: text the answer is expected to repeat (a file being edited, say). Drafts start from
    it (speculative decoding); the answer is what it is without it."""

    type: Literal["content"]
    content: str

    @field_validator("content", mode="before")
    @classmethod
    def _text_parts(cls, content):
        return text_parts(content)


class ChatMessage(Strict):
    role: Literal["system", "user", "assistant", "developer", "tool"]
    content: str | None = None  # None only for an assistant message that carries tool_calls
    tool_calls: list[ToolCall] | None = None  # assistant
    tool_call_id: str | None = None  # tool

    @field_validator("content", mode="before")
    @classmethod
    def _text_parts(cls, content):
        return text_parts(content)

    @model_validator(mode="after")
    def _shape(self) -> ChatMessage:
        if self.content is None and not (self.role == "assistant" and self.tool_calls):
            raise ValueError("content is required (it may be null only in an assistant message with tool_calls)")
        if self.tool_calls and self.role != "assistant":
            raise ValueError("only an assistant message carries tool_calls")
        if self.role == "tool" and not self.tool_call_id:
            raise ValueError("a tool message needs the tool_call_id it answers")
        return self


def answered_calls(messages: list[ChatMessage]) -> None:
    """Each tool message answers a call an earlier assistant message made (refused naming its tool_call_id)."""
    called: set[str] = set()
    for i, m in enumerate(messages):
        if m.role == "tool" and m.tool_call_id not in called:
            raise PydanticCustomError("unknown_tool_call", "{id} answers no tool call of an earlier assistant message",
                                      {"id": quoted(m.tool_call_id), "field": f"messages.{i}.tool_call_id"})
        called |= {c.id for c in m.tool_calls or []}


class Function(Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    description: str | None = None
    parameters: dict[str, Any] | None = None  # a JSON schema of the arguments object
    strict: StrictBool | None = None  # the arguments are always held to the schema when a call is forced


class Tool(Strict):
    type: Literal["function"]
    function: Function


class FunctionName(Strict):
    name: str


class NamedToolChoice(Strict):
    type: Literal["function"]
    function: FunctionName


class ChatCompletionRequest(SamplingFields):
    messages: list[ChatMessage]
    max_completion_tokens: bounded("max_tokens") | None = None
    logprobs: StrictBool = False
    top_logprobs: bounded("logprobs") | None = None
    tools: list[Tool] | None = None
    tool_choice: Literal["none", "auto", "required"] | NamedToolChoice | None = None
    # a forced call is one call; "auto" reads back all the model writes, or the first
    parallel_tool_calls: StrictBool = True
    prediction: Prediction | None = None

    @model_validator(mode="after")
    def _answers(self) -> ChatCompletionRequest:
        answered_calls(self.messages)
        return self

    @property
    def tool_mode(self) -> str:
        """"none", "auto" (the default with tools), "required", or the name of the function that must be called."""
        choice = self.tool_choice or ("auto" if self.tools else "none")
        return choice.function.name if isinstance(choice, NamedToolChoice) else choice

    @property
    def forced_call(self) -> str | None:
        return None if self.tool_mode in ("none", "auto") else self.tool_mode

    def functions(self) -> dict[str, dict]:
        return tools.functions(self.tools or [])

    @property
    def constraint_field(self) -> str:
        return "tool_choice" if self.forced_call else super().constraint_field

    def constraint(self) -> Constraint | None:
        """A forced tool call's grammar, or the response format's."""
        own = super().constraint()
        if self.tool_mode != "none" and own is not None:
            raise ConstraintError(f"{super().constraint_field} and tools cannot apply together (unless tool_choice is "
                                  f"'none')")
        return tools.constraint(self.functions(), self.forced_call) if self.forced_call else own


class TokenizeRequest(Strict):
    """vLLM's POST /tokenize: a prompt, or chat messages rendered through the model's template."""

    model: str | None = None
    prompt: str | None = None
    messages: list[ChatMessage] | None = None
    add_generation_prompt: StrictBool = True  # messages only: end with the assistant's turn opening
    tools: list[Tool] | None = None  # messages only: the tools described as the chat route describes them
    return_token_strs: StrictBool = False

    @model_validator(mode="after")
    def _answers(self) -> TokenizeRequest:
        answered_calls(self.messages or [])
        return self


class DetokenizeRequest(Strict):
    model: str | None = None
    tokens: list[TokenId]


class EmbeddingRequest(Strict):
    """OpenAI's POST /v1/embeddings: one input or a batch, as text or token ids."""

    input: str | list[str] | list[TokenId] | list[list[TokenId]]
    model: str | None = None
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: Count | None = None  # only the model's own: its vectors cannot be shortened
    user: str | None = None
