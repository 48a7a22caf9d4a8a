"""Anthropic's Messages API (/v1/messages) over the engine: the chat route's generation, answered as content blocks,
whole or as Anthropic's stream of events."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from ..engine import RequestOutput
from . import messages, tools
from .messages import MessagesInput, MessagesRequest
from .request_checks import Front
from .to_engine import Served, constraint_errors, engine_error, off_loop


def router(front: Front) -> APIRouter:
    r = APIRouter()

    @r.post("/v1/messages")
    async def create_message(request: Request):
        """Anthropic's Messages API: the chat route's generation, answered as content blocks."""
        req, s = await front.model(request, MessagesRequest, messages.UNSUPPORTED)
        with constraint_errors(req):
            chat, declared = req.chat()
            functions = tools.functions(declared)
            params = req.sampling(functions, s.config.sampling)
        prompt_ids = await off_loop(s.chat_ids, chat, functions=functions)
        calls = None if req.tool_mode == "none" else functions
        submission = await s.submit(request, req, [(prompt_ids, [params])], params.constraint)
        if req.stream:
            return StreamingResponse(message_events(s, submission, prompt_ids, calls, req),
                                     media_type="text/event-stream")
        text, last = "", None
        async for ready in submission:
            for _, out in ready:
                if out.error is not None:
                    raise engine_error(out.error, req)
                text, last = text + out.text, out
        made, whole = tools.read_calls(text, calls, req.parallel_tool_calls, forced(req)) if calls else (None, False)
        return {"id": messages.message_id(), "type": "message", "role": "assistant", "model": s.name,
                "content": messages.content_blocks(text, made),
                "stop_reason": messages.stop_reason(last.finish_reason, last.stop_string, made if whole else None),
                "stop_sequence": last.stop_string, "usage": message_usage(prompt_ids, last)}

    @r.post("/v1/messages/count_tokens")
    async def count_tokens(request: Request) -> dict:
        """Anthropic's token count: the tokens the model would read for these messages, system prompt and tools."""
        req, s = await front.model(request, MessagesInput, messages.UNSUPPORTED)
        with constraint_errors(req):
            chat, declared = req.chat()
            functions = tools.functions(declared)
        return {"input_tokens": len(await off_loop(s.chat_ids, chat, functions=functions))}

    return r


def forced(req: MessagesRequest) -> str | None:
    """The tool a forced call names ("required" for any): a call cut short still comes back as a tool_use block."""
    return None if req.tool_mode in ("none", "auto") else req.tool_mode


def message_usage(prompt_ids: list[int], out: RequestOutput | None) -> dict:
    return {"input_tokens": len(prompt_ids), "output_tokens": out.completion_tokens if out else 0,
            "cache_read_input_tokens": out.cached_tokens if out else 0}


async def message_events(s: Served, submission, prompt_ids: list[int], calls: dict | None, req) -> AsyncIterator[str]:
    """Anthropic's stream: message_start, each content block (start, deltas, stop), message_delta with the stop
    reason and usage, message_stop. With tools the reply is held until it ends, then sent as its blocks."""
    event = messages.event
    yield event("message_start", {"message": {
        "id": messages.message_id(), "type": "message", "role": "assistant", "model": s.name,
        "content": [], "stop_reason": None, "stop_sequence": None, "usage": message_usage(prompt_ids, None)}})
    text, last = "", None
    if calls is None:
        yield event("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}})
    async for ready in submission:
        for _, out in ready:
            text, last = text + out.text, out
            if calls is None and out.text:
                yield event("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": out.text}})
    if last is not None and last.error is not None:
        yield engine_error(last.error, req).event(anthropic=True)
        return
    made, whole = tools.read_calls(text, calls, req.parallel_tool_calls, forced(req)) if calls else (None, False)
    if calls is None:
        yield event("content_block_stop", {"index": 0})
    else:
        for k, block in enumerate(messages.content_blocks(text, made)):
            if block["type"] == "text":
                yield event("content_block_start", {"index": k, "content_block": {"type": "text", "text": ""}})
                delta = {"type": "text_delta", "text": block["text"]}
            else:
                yield event("content_block_start", {"index": k, "content_block": block | {"input": {}}})
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            yield event("content_block_delta", {"index": k, "delta": delta})
            yield event("content_block_stop", {"index": k})
    finish, stop_string = (last.finish_reason, last.stop_string) if last is not None else ("abort", None)
    yield event("message_delta", {"delta": {"stop_reason": messages.stop_reason(finish, stop_string,
                                                                             made if whole else None),
                                            "stop_sequence": stop_string},
                                  "usage": {"output_tokens": last.completion_tokens if last else 0}})
    yield event("message_stop", {})
