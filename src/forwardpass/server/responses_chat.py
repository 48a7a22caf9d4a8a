"""A Responses request read as the chat route's: its input items as chat messages (after the conversation its
previous_response_id continues), its fields as a ChatCompletionRequest, and its items as the store lists them."""

from __future__ import annotations

import uuid

from pydantic import ValidationError

from .body import refusal
from .errors import APIError
from .protocol import ChatCompletionRequest
from .quoting import quoted
from .responses_request import FunctionCallItem, FunctionCallOutputItem, MessageItem, ResponsesRequest

ID_PREFIX = {"message": "msg", "function_call": "fc", "function_call_output": "fco"}


def item_id(kind: str) -> str:
    return f"{ID_PREFIX[kind]}_{uuid.uuid4().hex[:24]}"


class ResponsesChat(ChatCompletionRequest):
    """The chat request a Responses request is served as: its errors name the Responses fields."""

    @property
    def constraint_field(self) -> str:
        field = super().constraint_field
        return "text.format" if field == "response_format" else field


def items_of(req: ResponsesRequest) -> list:
    """The request's input as items (a text input is one user message)."""
    if isinstance(req.input, str):
        return [MessageItem(role="user", content=req.input)]
    return list(req.input)


def chat_messages(items: list, history: list[dict]) -> list[dict]:
    """The input items as chat messages (protocol.ChatMessage's fields) following `history`: a function_call joins
    the assistant turn before it, as chat's tool_calls; a function_call_output is a tool message answering a call
    of an earlier item (or of the history), refused naming its call_id otherwise."""
    called = {c["id"] for m in history for c in m.get("tool_calls") or []}
    out: list[dict] = []
    for i, item in enumerate(items):
        if isinstance(item, MessageItem):
            out.append({"role": item.role, "content": item.text})
        elif isinstance(item, FunctionCallItem):
            call = {"id": item.call_id, "type": "function",
                    "function": {"name": item.name, "arguments": item.arguments}}
            if out and out[-1]["role"] == "assistant":
                out[-1]["tool_calls"] = out[-1].get("tool_calls", []) + [call]
            else:
                out.append({"role": "assistant", "content": None, "tool_calls": [call]})
            called.add(item.call_id)
        elif isinstance(item, FunctionCallOutputItem):
            if item.call_id not in called:
                raise APIError(400, f"input.{i}: {quoted(item.call_id)} answers no function_call of an earlier item",
                               param=f"input.{i}.call_id")
            out.append({"role": "tool", "tool_call_id": item.call_id, "content": item.text})
    return out


def listed_items(items: list) -> list[dict]:
    """The input items as input_items.list returns them: each with its id and status."""
    out = []
    for item in items:
        d = item.model_dump(exclude_none=True, by_alias=True)
        d = {"id": item.id or item_id(item.type), "type": item.type} | d | {"status": "completed"}
        if isinstance(item, MessageItem):
            kind = "output_text" if item.role == "assistant" else "input_text"
            d["content"] = [{"type": kind, "text": item.text} | ({"annotations": []} if kind == "output_text" else {})]
        out.append(d)
    return out


def chat_request(req: ResponsesRequest, messages: list[dict]) -> ResponsesChat:
    """The chat request these messages and the request's fields make: the same sampling (each field the request
    leaves out takes the server's default), tools, tool_choice and constraint."""
    body: dict = {"model": req.model, "messages": messages, "parallel_tool_calls": req.parallel_tool_calls}
    for name in ("temperature", "top_p", "user"):
        if getattr(req, name) is not None:
            body[name] = getattr(req, name)
    if req.max_output_tokens is not None:
        body["max_completion_tokens"] = req.max_output_tokens
    if req.tools:
        body["tools"] = [{"type": "function", "function": t.model_dump(exclude={"type"}, exclude_none=True)}
                         for t in req.tools]
    if req.tool_choice is not None:
        c = req.tool_choice
        body["tool_choice"] = c if isinstance(c, str) else {"type": "function", "function": {"name": c.name}}
    f = req.json_format
    if f is not None:
        body["response_format"] = {"type": "json_object"} if f.type == "json_object" else {
            "type": "json_schema", "json_schema": {"name": f.name, "schema": f.schema_}}
    try:
        return ResponsesChat.model_validate(body)
    except ValidationError as e:  # what the Responses fields let through and chat's do not
        raise refusal(e, body, {}) from None
