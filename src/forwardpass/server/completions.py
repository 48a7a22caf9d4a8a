"""OpenAI's /v1/completions and /v1/chat/completions over the engine: one JSON answer, or server-sent events."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from ..engine import RequestOutput
from ..sampling import SamplingParams
from . import tools
from .errors import APIError
from .protocol import ChatCompletionRequest, CompletionRequest
from .request_checks import Front
from .to_engine import COMPLETION_MAX_TOKENS, Served, constraint_errors, engine_error, off_loop


def router(front: Front) -> APIRouter:
    r = APIRouter()

    @r.post("/v1/completions")
    async def completions(request: Request):
        req, s = await front.model(request, CompletionRequest)
        texts = req.listed(req.prompt)
        if any(isinstance(t, str) for t in texts) and s.tokenizer is None:
            raise APIError(400, "this model has no tokenizer: send the prompt as token ids")
        max_tokens = req.max_tokens if req.max_tokens is not None else COMPLETION_MAX_TOKENS

        def grouped():
            prompts = [s.tokenizer.encode(t) if isinstance(t, str) else list(t) for t in texts]
            return [(ids, s.params_for(req, ids, max_tokens, req.logprobs)) for ids in prompts]
        groups = await off_loop(grouped)
        return await respond(s, request, req, groups, chat=False)

    @r.post("/v1/chat/completions")
    async def chat_completions(request: Request):
        req, s = await front.model(request, ChatCompletionRequest)
        if not req.messages:
            raise APIError(400, "messages must hold at least one message", param="messages")
        with constraint_errors(None, "tools"):
            functions = req.functions()
        prompt_ids = await off_loop(s.chat_ids, req.messages, functions=functions)
        max_tokens = req.max_completion_tokens if req.max_completion_tokens is not None else req.max_tokens
        logprobs = (req.top_logprobs or 0) if req.logprobs else None
        params = await off_loop(s.params_for, req, prompt_ids, max_tokens, logprobs)
        return await respond(s, request, req, [(prompt_ids, params)], chat=True,
                             calls=None if req.tool_mode == "none" else functions)

    return r


def by_choice(ready: list[tuple[int, RequestOutput]]) -> list[tuple[int, list[RequestOutput]]]:
    """Outputs grouped by choice index, in the order each choice first appears."""
    groups: dict[int, list[RequestOutput]] = {}
    for i, out in ready:
        groups.setdefault(i, []).append(out)
    return list(groups.items())


def usage(prompt_tokens: int, completion_tokens: int, cached: int) -> dict:
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens, "prompt_tokens_details": {"cached_tokens": cached}}


def finish_reason(finish: str | None, called: bool) -> str | None:
    """OpenAI's finish reason for a choice the engine ended with `finish`: "tool_calls" where it ended by itself
    ("stop") on whole calls, else the engine's own ("length", "abort", …)."""
    return "tool_calls" if called and finish == "stop" else finish


def chat_reply(text: str, reason: str | None, calls: dict | None, parallel: bool = True,
               forced: str | None = None) -> tuple[dict, str | None]:
    """The assistant message of a finished choice, and its finish reason: with tools, a reply made of calls is
    returned as tool_calls (finish reason "tool_calls"); without `parallel`, its first call only. A forced call
    (`forced`: the request's forced_call) cut short is tool_calls too, with the engine's reason ("length")."""
    made, whole = tools.read_calls(text, calls, parallel, forced) if calls else (None, False)
    if made is None:
        return {"role": "assistant", "content": text}, reason
    return {"role": "assistant", "content": None, "tool_calls": made}, finish_reason(reason, whole)


async def respond(s: Served, request: Request, req, groups: list[tuple[list[int], list[SamplingParams]]], chat: bool,
                  calls: dict | None = None):
    """`groups`: each prompt and its choices' parameters (Submission). `calls`: the functions the reply may call
    (chat with tools, tool_choice not "none")."""
    rid = f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex[:24]}"
    kind = "chat.completion" if chat else "text_completion"
    params = [p for _, ps in groups for p in ps]
    prompt_of = [k for k, (_, ps) in enumerate(groups) for _ in ps]  # choice index → its prompt's
    prompt_tokens = sum(len(prompt_ids) for prompt_ids, _ in groups)
    with_logprobs = params[0].logprobs is not None
    submission = await s.submit(request, req, groups, params[0].constraint)
    if req.stream:
        return StreamingResponse(stream_events(s, submission, req, prompt_tokens, prompt_of, params, chat, rid, calls),
                                 media_type="text/event-stream")
    texts, reasons = [""] * len(params), [None] * len(params)
    logs: list[list[RequestOutput]] = [[] for _ in params]
    completion_tokens, cached = 0, {}  # each prompt's cached tokens, as its last choice to finish found them
    try:
        async for ready in submission:
            for i, out in ready:
                if out.error is not None:
                    raise engine_error(out.error, req)
                texts[i] += out.text
                if out.token_id is not None and with_logprobs:
                    logs[i].append(out)
                if out.finish_reason is not None:
                    reasons[i] = out.finish_reason
                    completion_tokens += out.completion_tokens
                    cached[prompt_of[i]] = out.cached_tokens
    finally:
        submission.abort()  # the other choices of a request that failed
    choices = []
    for i in range(len(params)):
        if chat:
            lp = {"content": [s.chat_logprob(o) for o in logs[i]]} if with_logprobs else None
            message, reason = chat_reply(texts[i], reasons[i], calls, req.parallel_tool_calls, req.forced_call)
            choices.append({"index": i, "message": message, "logprobs": lp, "finish_reason": reason})
        else:
            choices.append({"index": i, "text": texts[i], "logprobs": completion_logprobs(s, logs[i])
                            if with_logprobs else None, "finish_reason": reasons[i]})
    return {"id": rid, "object": kind, "created": int(time.time()), "model": s.name,
            "choices": choices, "usage": usage(prompt_tokens, completion_tokens, sum(cached.values()))}


def completion_logprobs(s: Served, outs: list[RequestOutput], offset: int = 0) -> dict:
    tokens, offsets = [], []
    for o in outs:
        offsets.append(offset)
        tokens.append(s.piece(o.logprob.token_id))
        offset += len(o.text)
    return {"tokens": tokens, "token_logprobs": [o.logprob.logprob for o in outs],
            "top_logprobs": [{s.piece(i): v for i, v in o.logprob.top} for o in outs], "text_offset": offsets}


async def stream_events(s: Served, submission, req, prompt_tokens, prompt_of, params, chat, rid,
                        calls) -> AsyncIterator[str]:
    """Server-sent events: each choice's pieces as its writer makes them (a completion's text, a chat's content, a
    chat's reply held for its tool calls, a forced tool call), then the usage if asked, an error event if the
    engine ended a choice early, and [DONE]."""
    kind = "chat.completion.chunk" if chat else "text_completion"
    with_logprobs = params[0].logprobs is not None
    now = int(time.time())

    def chunk(choices: list, **extra) -> str:
        data = {"id": rid, "object": kind, "created": now, "model": s.name, "choices": choices} | extra
        return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"

    if chat:
        for i in range(len(params)):
            yield chunk([{"index": i, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                          "finish_reason": None}])
    n = len(params)
    writer = (ForcedCall(s, calls, n, req.forced_call) if calls is not None and req.forced_call
              else HeldCalls(s, req, calls, n) if calls is not None else ChatText(s) if chat else CompletionText(s, n))
    completion_tokens, cached, error = 0, {}, None
    async for ready in submission:
        for i, outs in by_choice(ready):
            last = outs[-1]
            scored = [o for o in outs if o.token_id is not None] if with_logprobs else []
            choice = writer.choice(i, "".join(o.text for o in outs), scored, last.finish_reason)
            if choice is not None:
                yield chunk([choice])
            if last.finish_reason is not None:
                completion_tokens += last.completion_tokens
                cached[prompt_of[i]] = last.cached_tokens
                error = error or last.error
    if req.stream_options is not None and req.stream_options.include_usage:
        yield chunk([], usage=usage(prompt_tokens, completion_tokens, sum(cached.values())))
    if error is not None:
        yield engine_error(error, req).event()
    yield "data: [DONE]\n\n"


# One writer per kind of stream: choice(i, text, scored, finish) → choice i's entry of the next chunk, or None (nothing
# to send yet). `scored`: the outputs that carry a token's logprobs (empty without logprobs).

class CompletionText:
    """/v1/completions: the text as it comes, its logprobs with their offsets in the choice's text."""

    def __init__(self, s: Served, n: int):
        self.s, self.offsets = s, [0] * n

    def choice(self, i: int, text: str, scored: list, finish: str | None) -> dict:
        lp = completion_logprobs(self.s, scored, self.offsets[i]) if scored else None
        self.offsets[i] += len(text)
        return {"index": i, "text": text, "logprobs": lp, "finish_reason": finish}


class ChatText:
    """A chat without tools: the content as it comes."""

    def __init__(self, s: Served):
        self.s = s

    def choice(self, i: int, text: str, scored: list, finish: str | None) -> dict:
        lp = {"content": [self.s.chat_logprob(o) for o in scored]} if scored else None
        return {"index": i, "delta": {"content": text} if text else {}, "logprobs": lp, "finish_reason": finish}


class HeldCalls:
    """A chat with tools and tool_choice "auto": a choice's text is held until it ends, then goes out as content, or
    as its tool calls (each whole, in one delta) if it is made of calls."""

    def __init__(self, s: Served, req, calls: dict, n: int):
        self.s, self.req, self.calls = s, req, calls
        self.held, self.scored = [""] * n, [[] for _ in range(n)]

    def choice(self, i: int, text: str, scored: list, finish: str | None) -> dict | None:
        self.held[i] += text
        self.scored[i] += scored
        if finish is None:
            return None
        message, reason = chat_reply(self.held[i], finish, self.calls, self.req.parallel_tool_calls)
        delta = {"content": message["content"]} if message["content"] is not None else {
            "tool_calls": [c | {"index": k} for k, c in enumerate(message["tool_calls"])]}
        lp = {"content": [self.s.chat_logprob(o) for o in self.scored[i]]} if self.scored[i] else None
        return {"index": i, "delta": delta, "logprobs": lp, "finish_reason": reason}


class ForcedCall:
    """A forced tool call (`forced`: a function's name or "required"), as OpenAI's streams send one: its id and name,
    then its arguments piece by piece; cut short, the arguments as far as they were written (finish reason
    "length"), never the text with its `<tool_call>` wrapper."""

    def __init__(self, s: Served, calls: dict, n: int, forced: str):
        self.s, self.calls = s, calls
        names = tools.callable_names(calls, forced)
        self.streams, self.scored = [tools.ForcedCallStream(names) for _ in range(n)], [[] for _ in range(n)]

    def choice(self, i: int, text: str, scored: list, finish: str | None) -> dict | None:
        stream = self.streams[i]
        deltas = stream.feed(text)
        self.scored[i] += scored
        whole = finish is not None and tools.parse(stream.text, self.calls) is not None
        if finish is not None:
            deltas += stream.finish(whole)
        if not deltas and finish is None:
            return None
        lp = {"content": [self.s.chat_logprob(o) for o in self.scored[i]]} \
            if self.scored[i] and finish is not None else None
        return {"index": i, "delta": {"tool_calls": deltas} if deltas else {}, "logprobs": lp,
                "finish_reason": finish_reason(finish, whole)}
