"""OpenAI's Responses API (`/v1/responses`) over the chat route's path: a request's input items become the chat
messages (after the conversation its previous_response_id continues) and its fields the chat request
(responses_chat.py), generated as a chat completion is and answered as output items — a message with output_text, or
function_call items — whole or as OpenAI's stream of events (responses_events.py). Responses are kept for
retrieve, input_items.list and previous_response_id in a bounded store (responses_store.py)."""

from __future__ import annotations

import contextlib
import time
import uuid
from dataclasses import dataclass, field

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from ..engine import RequestOutput
from ..errors import ForwardpassError
from ..sampling import SamplingParams
from .completions import chat_reply
from .errors import APIError
from .quoting import quoted
from .request_checks import Front
from .responses_chat import ResponsesChat, chat_messages, chat_request, item_id, items_of, listed_items
from .responses_events import response_events
from .responses_request import UNSUPPORTED, ResponsesRequest
from .responses_store import ResponseStore, Stored
from .to_engine import Served, constraint_errors, engine_error, off_loop

# the chat route's fields, as a Responses request names them where an error points at one
PARAMS = {"messages": "input", "max_tokens": "max_output_tokens", "response_format": "text.format"}
MAX_LISTED = 100  # input items per page of input_items.list


@contextlib.contextmanager
def responses_params():
    """Errors of the chat path, pointing at the Responses field that carried what they name."""
    try:
        yield
    except (APIError, ForwardpassError) as e:
        e.param = PARAMS.get(e.param, e.param)
        raise


def router(front: Front) -> APIRouter:
    r = APIRouter()
    store = ResponseStore(front.config.stored_responses)

    @r.post("/v1/responses")
    async def create(request: Request):
        req, s = await front.model(request, ResponsesRequest, UNSUPPORTED)
        history = store.get(req.previous_response_id, "previous_response_id").conversation \
            if req.previous_response_id is not None else []
        with responses_params():
            job = await prepared(s, req, history)
            submission = await s.submit(request, job.chat, [(job.prompt_ids, [job.params])], job.params.constraint)
        keep = store.put if req.store else (lambda stored: None)
        if req.stream:
            return StreamingResponse(response_events(job, submission, lambda final: keep(job.stored(final))),
                                     media_type="text/event-stream")
        text, last = "", None
        async for ready in submission:
            for _, out in ready:
                if out.error is not None:
                    raise engine_error(out.error, job.chat)
                text, last = text + out.text, out
        final = job.finished(text, last)
        keep(job.stored(final))
        return final

    @r.get("/v1/responses/{rid}")
    async def retrieve(request: Request, rid: str) -> dict:
        front.authorize(request)
        refuse_query(request, "stream", "include")
        return store.get(rid).response

    @r.delete("/v1/responses/{rid}")
    async def delete(request: Request, rid: str) -> dict:
        front.authorize(request)
        store.delete(rid)
        return {"id": rid, "object": "response", "deleted": True}

    @r.get("/v1/responses/{rid}/input_items")
    async def input_items(request: Request, rid: str) -> dict:
        front.authorize(request)
        refuse_query(request, "include")
        return listed(store.get(rid).input_items, request.query_params)

    return r


async def prepared(s: Served, req: ResponsesRequest, history: list[dict]) -> Job:
    """The request as the chat route serves it: messages, prompt ids, sampling, the functions it may call."""
    items = items_of(req)
    conversation = history + chat_messages(items, history)
    told = [{"role": "system", "content": req.instructions}] if req.instructions is not None else []
    if not told + conversation:
        raise APIError(400, "input must hold at least one item", param="input")
    chat = chat_request(req, told + conversation)
    with constraint_errors(None, "tools"):
        functions = chat.functions()
    prompt_ids = await off_loop(s.chat_ids, chat.messages, functions=functions)
    params = await off_loop(s.params_for, chat, prompt_ids, chat.max_completion_tokens, None)
    calls = None if chat.tool_mode == "none" else functions
    return Job(s, req, chat, prompt_ids, params[0], calls, listed_items(items), conversation)


def refuse_query(request: Request, *names: str) -> None:
    for name in names:
        value = request.query_params.get(name)
        if value is not None and value not in ("", "false"):
            raise APIError(400, f"query parameter {name}={quoted(value)} is not supported here", param=name)


def listed(items: list[dict], query) -> dict:
    """A page of input items: `order` (newest first by default), `after` an item's id, at most `limit`."""
    order = query.get("order", "desc")
    if order not in ("asc", "desc"):
        raise APIError(400, f"order must be 'asc' or 'desc', got {quoted(order)}", param="order")
    limit = query.get("limit", "20")
    if not (limit.isascii() and limit.isdigit() and 1 <= int(limit) <= MAX_LISTED):
        raise APIError(400, f"limit must be an integer from 1 to {MAX_LISTED}, got {quoted(limit)}", param="limit")
    items = items if order == "asc" else items[::-1]
    start = 0
    if "after" in query:
        ids = [item["id"] for item in items]
        if query["after"] not in ids:
            raise APIError(400, f"after names no input item of this response: {quoted(query['after'])}",
                           param="after")
        start = ids.index(query["after"]) + 1
    page = items[start:start + int(limit)]
    return {"object": "list", "data": page, "first_id": page[0]["id"] if page else None,
            "last_id": page[-1]["id"] if page else None, "has_more": start + int(limit) < len(items)}


@dataclass
class Job:
    """One Responses request as it is served: what makes its Response object, in progress and at its end."""

    s: Served
    req: ResponsesRequest
    chat: ResponsesChat
    prompt_ids: list[int]
    params: SamplingParams
    calls: dict | None  # the functions the reply may call (tools, tool_choice not "none")
    items: list[dict]  # the input items, as input_items.list returns them
    conversation: list[dict]  # chat messages: the history it continues and its input (not its instructions)
    id: str = field(default_factory=lambda: f"resp_{uuid.uuid4().hex[:24]}")
    created: int = field(default_factory=lambda: int(time.time()))
    message_id: str = field(default_factory=lambda: item_id("message"))

    def response(self, status: str, output: list[dict] | None = None, usage: dict | None = None,
                 incomplete: dict | None = None, error: dict | None = None) -> dict:
        req = self.req
        choice = req.tool_choice or "auto"
        return {
            "id": self.id, "object": "response", "created_at": self.created, "status": status,
            "completed_at": int(time.time()) if status == "completed" else None, "error": error,
            "incomplete_details": incomplete, "instructions": req.instructions, "model": self.s.name,
            "output": output or [], "max_output_tokens": req.max_output_tokens,
            "previous_response_id": req.previous_response_id, "parallel_tool_calls": req.parallel_tool_calls,
            "temperature": self.params.temperature, "top_p": self.params.top_p,
            "tools": [t.model_dump() for t in req.tools or []],
            "tool_choice": choice if isinstance(choice, str) else choice.model_dump(),
            "text": {"format": req.text.format.model_dump(by_alias=True, exclude_none=True)
                     if req.text is not None and req.text.format is not None else {"type": "text"}},
            "truncation": "disabled", "store": req.store, "background": False, "reasoning": None,
            "metadata": req.metadata or {}, "user": req.user, "usage": usage}

    def finished(self, text: str, last: RequestOutput) -> dict:
        """The Response object of a reply that ended by itself ("completed") or at its token limit ("incomplete",
        for max_output_tokens): its output items, read as the chat route reads a reply, and its usage."""
        done = last.finish_reason == "stop"
        message, _ = chat_reply(text, last.finish_reason, self.calls, self.req.parallel_tool_calls,
                                self.chat.forced_call)
        output = self.output(message, "completed" if done else "incomplete")
        usage = {"input_tokens": len(self.prompt_ids), "output_tokens": last.completion_tokens,
                 "total_tokens": len(self.prompt_ids) + last.completion_tokens,
                 "input_tokens_details": {"cached_tokens": last.cached_tokens, "cache_write_tokens": 0},
                 "output_tokens_details": {"reasoning_tokens": 0}}
        return self.response("completed" if done else "incomplete", output, usage,
                             None if done else {"reason": "max_output_tokens"})

    def failed(self, message: str) -> dict:
        return self.response("failed", error={"code": "server_error", "message": message})

    def output(self, message: dict, status: str) -> list[dict]:
        """A chat reply's message as output items: its calls as function_call items, else its text as a message."""
        if message.get("tool_calls") is not None:
            return [{"type": "function_call", "id": item_id("function_call"), "call_id": c["id"],
                     "name": c["function"]["name"], "arguments": c["function"]["arguments"], "status": status}
                    for c in message["tool_calls"]]
        return [{"type": "message", "id": self.message_id, "role": "assistant", "status": status,
                 "content": [{"type": "output_text", "text": message["content"], "annotations": [], "logprobs": []}]}]

    def stored(self, final: dict) -> Stored:
        """The response as the store keeps it: the conversation goes on with its output as the assistant's turn."""
        calls = [{"id": o["call_id"], "type": "function", "function": {"name": o["name"], "arguments": o["arguments"]}}
                 for o in final["output"] if o["type"] == "function_call"]
        text = "".join(p["text"] for o in final["output"] if o["type"] == "message" for p in o["content"])
        turn = {"role": "assistant", "content": text or None, "tool_calls": calls} if calls else \
            {"role": "assistant", "content": text}
        return Stored(final, self.items, self.conversation + ([turn] if final["output"] else []))
