"""Request bodies of OpenAI's Responses API (`POST /v1/responses`): its input items, function tools, text format and
sampling, validated by pydantic, and read into the chat route's messages and request (protocol.py), so that a
response is generated exactly as a chat completion is. What the API offers that this server cannot do is refused by
name, never served as if it were absent."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, StrictBool, Tag, field_validator, model_validator
from pydantic_core import PydanticCustomError

from .protocol import Strict, bounded
from .quoting import quoted

# Fields of the Responses API forwardpass does not implement, and why (any other unknown field: "not a field")
UNSUPPORTED = {
    "conversation": "conversations are not implemented: continue one with previous_response_id",
    "prompt": "prompt templates are not implemented: send the input itself",
    "max_tool_calls": "only function tools are served, and the client makes their calls",
    "context_management": "context management is not implemented", "service_tier": "there are no service tiers",
    "prompt_cache_retention": "the prefix cache keeps prompts in memory while they fit: there is no retention to set",
    "prompt_cache_options": "the prefix cache works without options", "moderation": "there is no moderation",
    "image": "this model reads and writes text", "background_options": "background responses are not implemented",
    "access_programs": "there are no access programs",
}
NOT_REASONING = "this model does not reason in a separate channel"
Status = Literal["in_progress", "completed", "incomplete"]


def unsupported(what: str, value: str, why: str, field: str | None = None) -> PydanticCustomError:
    """A refusal naming the value at fault (`field`: where it is, below the validated field)."""
    return PydanticCustomError("unsupported_value", "{what} {value} is not supported: {why}",
                               {"what": what, "value": quoted(value), "why": why} | ({"field": field} if field else {}))


def known_types(entries, known, what: str, why: str):
    """`entries` where each one's "type", given as a string, is among `known`; the first other refused at its index.
    Anything not a list of objects is left for the field's own validation to say."""
    for i, entry in enumerate(entries if isinstance(entries, list) else []):
        kind = entry.get("type") if isinstance(entry, dict) else None
        if isinstance(kind, str) and kind not in known:
            raise unsupported(what, kind, why, f"{i}.type")
    return entries


def refuse_set(value, what: str, why: str, allowed=(None,)):
    """`value` where it is one of `allowed`; otherwise refused by name."""
    if value in allowed:
        return value
    raise unsupported(what, str(value), why)


class InputText(Strict):
    type: Literal["input_text"]
    text: str


class OutputText(Strict):
    """An assistant turn's text, as an earlier response's output carries it (its annotations and logprobs are not
    read: the model reads the text)."""

    type: Literal["output_text"]
    text: str
    annotations: list[dict[str, Any]] = []
    logprobs: list[dict[str, Any]] | None = None


PART_KINDS = {"input_text", "output_text"}


class MessageItem(Strict):
    type: Literal["message"] = "message"
    role: Literal["user", "system", "developer", "assistant"]
    content: str | list[Annotated[InputText | OutputText, Field(discriminator="type")]]
    id: str | None = None
    status: Status | None = None
    phase: Literal["commentary", "final_answer"] | None = None

    @field_validator("content", mode="before")
    @classmethod
    def _text_parts(cls, content):
        for j, part in enumerate(content if isinstance(content, list) else []):
            kind = part.get("type") if isinstance(part, dict) else None
            if isinstance(kind, str) and kind not in PART_KINDS:
                raise unsupported("content parts of type", kind, "this model reads text parts only", f"{j}.type")
        return content

    @model_validator(mode="after")
    def _parts_of_role(self) -> MessageItem:
        """An assistant turn holds output_text parts; the others input_text parts."""
        want = "output_text" if self.role == "assistant" else "input_text"
        for j, part in enumerate(self.content if isinstance(self.content, list) else []):
            if part.type != want:
                raise PydanticCustomError("part_of_role", "a {role} message holds {want} parts, not {kind}",
                                          {"role": self.role, "want": want, "kind": part.type,
                                           "field": f"content.{j}.type"})
        return self

    @property
    def text(self) -> str:
        return self.content if isinstance(self.content, str) else "".join(p.text for p in self.content)


class FunctionCallItem(Strict):
    type: Literal["function_call"]
    call_id: str
    name: str
    arguments: str  # JSON text
    id: str | None = None
    status: Status | None = None


class FunctionCallOutputItem(Strict):
    type: Literal["function_call_output"]
    call_id: str
    output: str | list[InputText]
    id: str | None = None
    status: Status | None = None

    @property
    def text(self) -> str:
        return self.output if isinstance(self.output, str) else "".join(p.text for p in self.output)


ITEMS = {"message": "MessageItem", "function_call": "FunctionCallItem",
         "function_call_output": "FunctionCallOutputItem"}


def item_kind(item) -> str | None:
    """The model an input item is read as: by its type; a message may leave its type out."""
    kind = item.get("type", "message" if "role" in item else None) if isinstance(item, dict) else None
    return ITEMS.get(kind)


Item = Annotated[Annotated[MessageItem, Tag("MessageItem")] | Annotated[FunctionCallItem, Tag("FunctionCallItem")]
                 | Annotated[FunctionCallOutputItem, Tag("FunctionCallOutputItem")],
                 Discriminator(item_kind, custom_error_type="item_type", custom_error_message=(
                     "an input item needs its type: message, function_call or function_call_output"))]


class FunctionTool(Strict):
    """A function tool, in the Responses API's flat shape."""

    type: Literal["function"]
    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: StrictBool | None = None  # the arguments are always held to the schema when a call is forced


class FunctionChoice(Strict):
    type: Literal["function"]
    name: str


class TextFormat(Strict):
    type: Literal["text", "json_object", "json_schema"]
    name: str | None = None  # json_schema: the schema's name
    schema_: dict[str, Any] | None = Field(None, alias="schema")
    description: str | None = None
    strict: StrictBool | None = None  # the schema is always enforced, strict or not

    @model_validator(mode="after")
    def _schema(self) -> TextFormat:
        if self.type == "json_schema" and (self.schema_ is None or not self.name):
            raise ValueError("a format of type json_schema needs its name and schema")
        return self


class TextConfig(Strict):
    format: TextFormat | None = None
    verbosity: str | None = None

    @field_validator("verbosity")
    @classmethod
    def _no_verbosity(cls, verbosity):
        return refuse_set(verbosity, "verbosity", "no setting of this model's makes it say more or less")


class StreamOptions(Strict):
    include_obfuscation: Literal[False] = False  # events are sent as they are, without padding


class ResponsesRequest(Strict):
    model: str | None = None
    input: str | list[Item]
    instructions: str | None = None  # a system message before the input; not carried to the next response
    previous_response_id: str | None = None
    store: StrictBool = True
    metadata: dict[str, str] | None = None  # kept with the response and returned with it
    tools: list[FunctionTool] | None = None
    tool_choice: Literal["none", "auto", "required"] | FunctionChoice | None = None
    parallel_tool_calls: StrictBool = True
    text: TextConfig | None = None
    max_output_tokens: bounded("max_tokens") | None = None
    temperature: bounded("temperature") | None = None
    top_p: bounded("top_p") | None = None
    top_logprobs: int | None = None
    stream: StrictBool = False
    stream_options: StreamOptions | None = None
    background: StrictBool | None = None
    truncation: str | None = None
    reasoning: dict[str, Any] | None = None
    include: list[str] | None = None
    user: str | None = None  # the caller's own records: these change nothing generated
    safety_identifier: str | None = None
    prompt_cache_key: str | None = None  # the prefix cache finds shared prompts by their tokens

    @field_validator("input", mode="before")
    @classmethod
    def _known_items(cls, items):
        return known_types(items, ITEMS, "input items of type",
                           "this server reads messages, function calls and their outputs")

    @field_validator("tools", mode="before")
    @classmethod
    def _function_tools(cls, tools):
        return known_types(tools, ("function",), "tools of type",
                           "only function tools are served (built-in tools run in OpenAI's own service)")

    @field_validator("tool_choice", mode="before")
    @classmethod
    def _function_choice(cls, choice):
        kind = choice.get("type") if isinstance(choice, dict) else None
        if isinstance(kind, str) and kind != "function":
            raise unsupported("tool_choice of type", kind, "only function tools are served", "type")
        return choice

    @field_validator("top_logprobs")
    @classmethod
    def _no_logprobs(cls, top_logprobs):
        return refuse_set(top_logprobs, "top_logprobs", "log-probabilities are not served on this route", (None, 0))

    @field_validator("background")
    @classmethod
    def _foreground(cls, background):
        return refuse_set(background, "background", "a response is generated while its request waits", (None, False))

    @field_validator("truncation")
    @classmethod
    def _no_truncation(cls, truncation):
        return refuse_set(truncation, "truncation", "the input is never cut: one past the context is refused",
                          (None, "disabled"))

    @field_validator("reasoning")
    @classmethod
    def _no_reasoning(cls, reasoning):
        for key, value in (reasoning or {}).items():
            if value is not None and (key, value) != ("effort", "none"):
                raise unsupported(f"reasoning.{key}", str(value), NOT_REASONING, key)
        return reasoning

    @field_validator("include")
    @classmethod
    def _nothing_to_include(cls, include):
        for i, value in enumerate(include or []):
            raise unsupported("include value", value, "this server fills nothing beyond the response itself", str(i))
        return include

    @model_validator(mode="after")
    def _format_or_tools(self) -> ResponsesRequest:
        if self.json_format is not None and self.tools and self.tool_choice != "none":
            raise PydanticCustomError("format_and_tools", "text.format and tools cannot apply together (unless "
                                      "tool_choice is 'none')", {"field": "text.format"})
        return self

    @property
    def json_format(self) -> TextFormat | None:
        f = self.text.format if self.text is not None else None
        return f if f is not None and f.type != "text" else None
