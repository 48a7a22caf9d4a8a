"""Anthropic's Messages API (`POST /v1/messages`) over the same engine as the OpenAI routes: a request is read
into the chat route's messages and tools, generated the same way, and answered as content blocks (text and
tool_use), with Anthropic's stop reasons, usage, error bodies and streaming events."""

from __future__ import annotations

import json
import uuid
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, StrictBool, Tag, field_validator, model_validator
from pydantic_core import PydanticCustomError

from ..errors import ConstraintError
from ..sampling import SamplingParams
from ..server_defaults import applied
from ..structured.constraints import Constraint
from . import tools
from .protocol import ChatMessage, Strict, Text, Tool, bounded
from .quoting import quoted

# Fields of the Messages API forwardpass does not implement: a request carrying one is refused by name
UNSUPPORTED = {
    "thinking": "this model does not reason in a separate channel",
    "service_tier": "there are no service tiers", "container": "there are no containers",
    "mcp_servers": "MCP servers are not implemented", "context_management": "context management is not implemented",
    "speed": "there is one speed", "inference_geo": "inference runs where this server runs",
    "diagnostics": "prompt-cache diagnostics are not implemented", "workspace_id": "there are no workspaces",
    "output_config.effort": "this model does not reason in a separate channel",
}


class TextBlock(Strict):
    type: Literal["text"]
    text: str
    cache_control: dict | None = None  # a prompt-caching hint: the prefix cache works without it


class ToolUseBlock(Strict):
    type: Literal["tool_use"]
    id: str
    name: str
    input: dict[str, Any]
    cache_control: dict | None = None


class ToolResultBlock(Strict):
    type: Literal["tool_result"]
    tool_use_id: str
    content: str | list[TextBlock] = ""
    is_error: StrictBool = False
    cache_control: dict | None = None


BLOCKS = {"text": "TextBlock", "tool_use": "ToolUseBlock", "tool_result": "ToolResultBlock"}


def block_kind(block) -> str | None:
    """The model a content block is read as, by its type. (Tagged with the model's name, not the type: an error's
    location names the tag, and "text" is also a field of a text block.)"""
    return BLOCKS.get(block.get("type") if isinstance(block, dict) else getattr(block, "type", None))


Block = Annotated[Annotated[TextBlock, Tag("TextBlock")] | Annotated[ToolUseBlock, Tag("ToolUseBlock")]
                  | Annotated[ToolResultBlock, Tag("ToolResultBlock")],
                  Discriminator(block_kind, custom_error_type="block_type",
                                custom_error_message="a content block needs its type: text, tool_use or tool_result")]


class Message(Strict):
    role: Literal["user", "assistant"]
    content: str | list[Block]

    @field_validator("content", mode="before")
    @classmethod
    def _known_blocks(cls, content):
        """A message holds text or at least one block; a block of a kind this model cannot read (an image, a
        document) is refused by its place and kind."""
        if content == []:
            raise PydanticCustomError("no_content", "a message needs content: a text or at least one block")
        for i, block in enumerate(content if isinstance(content, list) else []):
            kind = block.get("type") if isinstance(block, dict) else None
            if isinstance(kind, str) and kind not in BLOCKS:
                raise PydanticCustomError("unsupported_value", "content blocks of type {kind} are not supported: "
                                                               "this model reads text",
                                          {"kind": quoted(kind), "field": str(i)})
        return content


class AnthropicTool(Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    description: str | None = None
    input_schema: dict[str, Any]
    type: Literal["custom"] | None = None
    cache_control: dict | None = None


class ToolChoice(Strict):
    type: Literal["auto", "any", "tool", "none"]
    name: str | None = None
    disable_parallel_tool_use: StrictBool | None = None  # at most one call (a forced call is one call either way)


class OutputFormat(Strict):
    type: Literal["json_schema"]
    schema_: dict[str, Any] = Field(alias="schema")


class OutputConfig(Strict):
    format: OutputFormat | None = None  # structured output: the reply is JSON valid against the schema


class Metadata(Strict):
    user_id: str | None = None  # the caller's end user: it changes nothing generated (its drafts come from its own)


class MessagesInput(Strict):
    """What a model reads of a Messages request: its messages, system prompt and tools (all that count_tokens takes)."""

    model: str | None = None
    messages: list[Message] = Field(min_length=1)
    system: str | list[TextBlock] | None = None
    tools: list[AnthropicTool] | None = None
    tool_choice: ToolChoice | None = None

    @model_validator(mode="after")
    def _tool_blocks(self) -> MessagesRequest:
        """tool_use blocks come from the assistant; tool_result blocks from the user, each answering a tool_use block
        of an earlier message."""
        called: set[str] = set()
        for i, m in enumerate(self.messages):
            blocks = [] if isinstance(m.content, str) else m.content
            for j, b in enumerate(blocks):
                field = f"messages.{i}.content.{j}"
                if isinstance(b, ToolUseBlock) and m.role != "assistant":
                    raise PydanticCustomError("misplaced_block", "a tool_use block belongs to an assistant message",
                                              {"field": field})
                if isinstance(b, ToolResultBlock) and m.role != "user":
                    raise PydanticCustomError("misplaced_block", "a tool_result block belongs to a user message",
                                              {"field": field})
                if isinstance(b, ToolResultBlock) and b.tool_use_id not in called:
                    raise PydanticCustomError("unknown_tool_use", "{id} answers no tool_use block of an earlier "
                                                                  "message", {"id": quoted(b.tool_use_id),
                                                                              "field": field + ".tool_use_id"})
            called |= {b.id for b in blocks if isinstance(b, ToolUseBlock)}
        return self

    @property
    def parallel_tool_calls(self) -> bool:
        """Several calls may come back from one reply (as the chat route's field of that name)."""
        return not (self.tool_choice is not None and self.tool_choice.disable_parallel_tool_use)

    @property
    def constraint_field(self) -> str:
        """Where a constraint error points."""
        return "tool_choice"

    def chat(self) -> tuple[list[ChatMessage], list[Tool]]:
        """The request as the chat route's messages and tools: a tool_use block is an assistant's tool call, a
        tool_result block a tool message answering it."""
        out = []
        if self.system is not None:
            out.append(ChatMessage(role="system", content=text_of(self.system)))
        for m in self.messages:
            blocks = [TextBlock(type="text", text=m.content)] if isinstance(m.content, str) else m.content
            text = "".join(b.text for b in blocks if isinstance(b, TextBlock))
            calls = [{"id": b.id, "type": "function", "function": {"name": b.name, "arguments": json.dumps(b.input)}}
                     for b in blocks if isinstance(b, ToolUseBlock)]
            results = [b for b in blocks if isinstance(b, ToolResultBlock)]
            for r in results:
                out.append(ChatMessage(role="tool", tool_call_id=r.tool_use_id,
                                       content=("Error: " if r.is_error else "") + text_of(r.content)))
            if text or calls or not results:
                out.append(ChatMessage(role=m.role, content=(text or None) if calls else text,
                                       tool_calls=calls or None))
        declared = [Tool(type="function", function={"name": t.name, "description": t.description,
                                                    "parameters": t.input_schema}) for t in self.tools or []]
        return out, declared

    @property
    def tool_mode(self) -> str:
        """As the chat route's: "none", "auto", "required" or the name of the function that must be called."""
        c = self.tool_choice
        if c is None:
            return "auto" if self.tools else "none"
        if c.type == "tool":
            if not c.name:
                raise ConstraintError("tool_choice of type 'tool' needs the tool's name")
            return c.name
        return {"any": "required"}.get(c.type, c.type)


class MessagesRequest(MessagesInput):
    max_tokens: bounded("max_tokens")
    temperature: Annotated[float, Field(strict=True, ge=0.0, le=1.0)] = 1.0  # Anthropic's range
    top_p: bounded("top_p") = 1.0
    top_k: bounded("top_k") = 0
    stop_sequences: list[Text] | None = None
    stream: StrictBool = False
    metadata: Metadata | None = None
    output_config: OutputConfig | None = None
    cache_control: dict | None = None  # a prompt-caching hint: the prefix cache works without it
    user_profile_id: str | None = None  # whom the caller acts for: it changes nothing generated

    @property
    def constraint_field(self) -> str:
        """Where a constraint error points."""
        return "output_config" if self.output_config is not None and self.tool_choice is None else "tool_choice"

    def sampling(self, functions: dict[str, dict], defaults: dict | None = None) -> SamplingParams:
        """The request's sampling; `defaults`: the server's, for the fields it leaves out (server_defaults.py)."""
        mode = self.tool_mode
        forced = None if mode in ("none", "auto") else mode
        schema = self.output_config.format if self.output_config is not None else None
        if schema is not None and mode != "none":
            raise ConstraintError("output_config.format and tools cannot apply together (unless tool_choice is none)")
        constraint = tools.constraint(functions, forced) if forced else \
            Constraint("json_schema", schema.schema_) if schema is not None else None
        return SamplingParams(**applied(self, defaults or {}),
                              stop=list(self.stop_sequences or []), max_tokens=self.max_tokens, constraint=constraint)


def text_of(content: str | list[TextBlock]) -> str:
    return content if isinstance(content, str) else "".join(b.text for b in content)


def message_id() -> str:
    return f"msg_{uuid.uuid4().hex[:24]}"


def content_blocks(text: str, calls: list[dict] | None) -> list[dict]:
    """A reply as content blocks: its tool calls as tool_use blocks (a call cut short: its input as far as it was
    written; a forced call cut before its name: none), else its text."""
    if calls is not None:
        return [{"type": "tool_use", "id": "toolu_" + c["id"].removeprefix("call_"), "name": c["function"]["name"],
                 "input": tools.arguments_value(c["function"]["arguments"])} for c in calls]
    return [{"type": "text", "text": text}]


def stop_reason(finish: str | None, stop_string: str | None, calls: list[dict] | None) -> str | None:
    if calls and finish == "stop":
        return "tool_use"
    if finish == "length":
        return "max_tokens"
    if finish == "stop":
        return "stop_sequence" if stop_string is not None else "end_turn"
    return finish


def event(name: str, data: dict) -> str:
    return f"event: {name}\ndata: {json.dumps(data | {'type': name}, ensure_ascii=False)}\n\n"
