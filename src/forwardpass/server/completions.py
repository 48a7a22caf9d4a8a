"""OpenAI's /v1/completions and /v1/chat/completions over the engine: one JSON answer, or server-sent events."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from ..engine import RequestOutput
from ..engine.sequence import Error
from ..sampling import SamplingParams
from . import tools
from .errors import APIError
from .protocol import ChatCompletionRequest, CompletionRequest
from .served import COMPLETION_MAX_TOKENS, Served, constraint_errors, engine_error


def router(s: Served) -> APIRouter:
    r = APIRouter()

    @r.post("/v1/completions")
    async def completions(request: Request):
        req = await s.body(request, CompletionRequest)
        texts = req.listed(req.prompt)
        if any(isinstance(t, str) for t in texts) and s.tokenizer is None:
            raise APIError(400, "this model has no tokenizer: send the prompt as token ids")
        prompts = [s.tokenizer.encode(t) if isinstance(t, str) else list(t) for t in texts]
        max_tokens = req.max_tokens if req.max_tokens is not None else COMPLETION_MAX_TOKENS
        groups = [(ids, s.params_for(req, ids, max_tokens, req.logprobs)) for ids in prompts]
        return await respond(s, request, req, groups, chat=False)

    @r.post("/v1/chat/completions")
    async def chat_completions(request: Request):
        req = await s.body(request, ChatCompletionRequest)
        if not req.messages:
            raise APIError(400, "messages must hold at least one message", param="messages")
        with constraint_errors(None, "tools"):
            functions = req.functions()
        prompt_ids = s.chat_ids(req.messages, functions=functions)
        max_tokens = req.max_completion_tokens if req.max_completion_tokens is not None else req.max_tokens
        logprobs = (req.top_logprobs or 0) if req.logprobs else None
        params = s.params_for(req, prompt_ids, max_tokens, logprobs)
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

def chat_reply(text: str, reason: str | None, calls: dict | None, parallel: bool = True) -> tuple[dict, str | None]:
    """The assistant message of a finished choice, and its finish reason: with tools, a reply made of calls is
    returned as tool_calls (finish reason "tool_calls"); without `parallel`, its first call only."""
    made = tools.parse(text, calls, parallel) if calls else None
    if made is None:
        return {"role": "assistant", "content": text}, reason
    return {"role": "assistant", "content": None, "tool_calls": made}, "tool_calls" if reason == "stop" else reason


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
            message, reason = chat_reply(texts[i], reasons[i], calls, req.parallel_tool_calls)
            choices.append({"index": i, "message": message, "logprobs": lp, "finish_reason": reason})
        else:
            choices.append({"index": i, "text": texts[i], "logprobs": completion_logprobs(s, logs[i])
                            if with_logprobs else None, "finish_reason": reasons[i]})
    return {"id": rid, "object": kind, "created": int(time.time()), "model": s.config.model_name,
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
    """Server-sent events. A forced tool call streams as OpenAI's do: its id and name, then its arguments piece
    by piece. With tools and tool_choice "auto", a choice's text is held until it ends: then it goes out as
    content, or as its tool calls (each whole, in one delta) if it is made of calls."""
    kind = "chat.completion.chunk" if chat else "text_completion"
    with_logprobs = params[0].logprobs is not None
    now = int(time.time())

    def chunk(choices: list, **extra) -> str:
        data = {"id": rid, "object": kind, "created": now, "model": s.config.model_name, "choices": choices} | extra
        return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"

    if chat:
        for i in range(len(params)):
            yield chunk([{"index": i, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                          "finish_reason": None}])
    completion_tokens, cached, offsets = 0, {}, [0] * len(params)
    error: Error | None = None
    held, held_scored = [""] * len(params), [[] for _ in params]
    forced = [tools.ForcedCallStream() for _ in params] if calls is not None and req.forced_call else None
    async for ready in submission:
        for i, outs in by_choice(ready):
            last = outs[-1]
            text = "".join(o.text for o in outs)
            scored = [o for o in outs if o.token_id is not None] if with_logprobs else []
            if forced is not None:  # the call's name, then its arguments, as they are written
                deltas = forced[i].feed(text)
                held_scored[i] += scored
                if last.finish_reason is not None:
                    complete = tools.parse(forced[i].text, calls) is not None
                    rest = forced[i].finish(complete)
                    deltas = None if rest is None else deltas + rest
                if deltas is None:  # no call began (cut short): the text is the reply
                    delta = {"content": forced[i].text}
                elif deltas or last.finish_reason is not None:
                    delta = {"tool_calls": deltas} if deltas else {}
                else:
                    continue
                finish = last.finish_reason
                reason = "tool_calls" if finish == "stop" and deltas is not None else finish
                lp = {"content": [s.chat_logprob(o) for o in held_scored[i]]} \
                    if held_scored[i] and finish is not None else None
                yield chunk([{"index": i, "delta": delta, "logprobs": lp, "finish_reason": reason}])
            elif calls is not None:
                held[i] += text
                held_scored[i] += scored
                if last.finish_reason is None:
                    continue
                message, reason = chat_reply(held[i], last.finish_reason, calls, req.parallel_tool_calls)
                delta = {"content": message["content"]} if message["content"] is not None else {
                    "tool_calls": [c | {"index": k} for k, c in enumerate(message["tool_calls"])]}
                lp = {"content": [s.chat_logprob(o) for o in held_scored[i]]} if held_scored[i] else None
                yield chunk([{"index": i, "delta": delta, "logprobs": lp, "finish_reason": reason}])
            elif chat:
                lp = {"content": [s.chat_logprob(o) for o in scored]} if scored else None
                yield chunk([{"index": i, "delta": {"content": text} if text else {}, "logprobs": lp,
                              "finish_reason": last.finish_reason}])
            else:
                lp = completion_logprobs(s, scored, offsets[i]) if scored else None
                yield chunk([{"index": i, "text": text, "logprobs": lp, "finish_reason": last.finish_reason}])
            offsets[i] += len(text)
            if last.finish_reason is not None:
                completion_tokens += last.completion_tokens
                cached[prompt_of[i]] = last.cached_tokens
                error = error or last.error
    if req.stream_options is not None and req.stream_options.include_usage:
        yield chunk([], usage=usage(prompt_tokens, completion_tokens, sum(cached.values())))
    if error is not None:
        yield engine_error(error, req).event()
    yield "data: [DONE]\n\n"
