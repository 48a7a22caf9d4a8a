"""FastAPI routes of the OpenAI wire format: /v1/models, /v1/completions, /v1/chat/completions (plain or
SSE streams), /health and /metrics. Every error is an OpenAI-style JSON body; the server keeps serving."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import BaseModel, ValidationError

from ..engine import Engine, RequestOutput
from ..errors import ContextLengthError, ForwardpassError
from ..sampling import SamplingParams
from .errors import APIError
from .protocol import ChatCompletionRequest, CompletionRequest


@dataclass
class ServerConfig:
    model_name: str
    api_key: str | None = None
    max_body_bytes: int = 1 << 20


def build_app(engine: Engine, config: ServerConfig) -> FastAPI:
    app = FastAPI(title="forwardpass", docs_url=None, redoc_url=None)
    tokenizer, context = engine.pipeline.tokenizer, engine.pipeline.config.context_length
    created = int(time.time())

    @app.exception_handler(APIError)
    async def api_error(_: Request, e: APIError) -> JSONResponse:
        return e.response()

    def authorize(request: Request) -> None:
        if config.api_key and request.headers.get("authorization") != f"Bearer {config.api_key}":
            raise APIError(401, "invalid or missing API key (send 'Authorization: Bearer <key>')", "invalid_api_key")

    async def body(request: Request, schema: type[BaseModel]) -> BaseModel:
        authorize(request)
        declared = request.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > config.max_body_bytes:
            raise APIError(413, f"request body of {declared} bytes exceeds the limit of {config.max_body_bytes}")
        raw = b""
        async for chunk in request.stream():
            raw += chunk
            if len(raw) > config.max_body_bytes:
                raise APIError(413, f"request body exceeds the limit of {config.max_body_bytes} bytes")
        try:
            data = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise APIError(400, f"request body is not valid JSON: {e}") from None
        try:
            parsed = schema.model_validate(data)
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise APIError(422, f"{where}: {first['msg']}", param=where or None) from None
        if parsed.model is not None and parsed.model != config.model_name:
            raise APIError(404, f"model {parsed.model!r} does not exist; this server serves {config.model_name!r}",
                           "model_not_found", "model")
        return parsed

    @app.get("/health")
    async def health() -> dict:
        return {"status": "ok"}

    @app.get("/metrics")
    async def metrics() -> Response:
        return Response(engine.metrics.render(), media_type=CONTENT_TYPE_LATEST)

    @app.get("/v1/models")
    async def models(request: Request) -> dict:
        authorize(request)
        return {"object": "list", "data": [{"id": config.model_name, "object": "model", "created": created,
                                            "owned_by": "forwardpass", "max_model_len": context}]}

    def params_for(req, prompt_ids: list[int], max_tokens: int | None, logprobs: int | None) -> list[SamplingParams]:
        budget = context - len(prompt_ids) if max_tokens is None else max_tokens
        try:
            params = [req.sampling(budget, logprobs, seed_offset=i) for i in range(req.n)]
            engine.check_request(prompt_ids, params[0])
        except ContextLengthError as e:
            raise APIError(400, str(e), "context_length_exceeded") from None
        except ForwardpassError as e:
            raise APIError(400, str(e)) from None
        return params

    async def outputs(request: Request, prompt_ids: list[int], params: list[SamplingParams],
                      stream: bool) -> AsyncIterator[tuple[int, RequestOutput]]:
        """Submit one engine request per choice; yield (choice index, output) until all finish. A client
        that goes away has its unfinished requests aborted (their blocks are freed)."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue()
        ids = [engine.submit(prompt_ids, p, lambda o, i=i: loop.call_soon_threadsafe(queue.put_nowait, (i, o)))
               for i, p in enumerate(params)]
        running = set(ids)
        try:
            while running:
                try:
                    index, out = await asyncio.wait_for(queue.get(), timeout=0.5)
                except asyncio.TimeoutError:
                    if not stream and await request.is_disconnected():
                        return
                    continue
                if out.finish_reason is not None:
                    running.discard(out.request_id)
                yield index, out
        finally:
            for request_id in running:
                engine.abort(request_id)

    def piece(token_id: int) -> str:
        return tokenizer.piece(token_id) if tokenizer is not None else str(token_id)

    def chat_logprob(out: RequestOutput) -> dict:
        lp = out.logprob
        return {"token": piece(lp.token_id), "logprob": lp.logprob, "bytes": list(tokenizer.token_bytes(lp.token_id)),
                "top_logprobs": [{"token": piece(i), "logprob": v, "bytes": list(tokenizer.token_bytes(i))}
                                 for i, v in lp.top]}

    def usage(prompt_tokens: int, completion_tokens: int, cached: int) -> dict:
        return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens, "prompt_tokens_details": {"cached_tokens": cached}}

    async def respond(request: Request, req, prompt_ids: list[int], params: list[SamplingParams], chat: bool):
        rid = f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex[:24]}"
        kind = "chat.completion" if chat else "text_completion"
        with_logprobs = params[0].logprobs is not None
        if req.stream:
            return StreamingResponse(stream_events(request, req, prompt_ids, params, chat, rid),
                                     media_type="text/event-stream")
        texts, reasons = [""] * len(params), [None] * len(params)
        logs: list[list[RequestOutput]] = [[] for _ in params]
        completion_tokens, cached = 0, 0
        async for i, out in outputs(request, prompt_ids, params, stream=False):
            texts[i] += out.text
            if out.token_id is not None and with_logprobs:
                logs[i].append(out)
            if out.finish_reason is not None:
                reasons[i] = out.finish_reason
                completion_tokens += out.completion_tokens
                cached = out.cached_tokens
        choices = []
        for i in range(len(params)):
            if chat:
                lp = {"content": [chat_logprob(o) for o in logs[i]]} if with_logprobs else None
                choices.append({"index": i, "message": {"role": "assistant", "content": texts[i]}, "logprobs": lp,
                                "finish_reason": reasons[i]})
            else:
                choices.append({"index": i, "text": texts[i], "logprobs": completion_logprobs(logs[i])
                                if with_logprobs else None, "finish_reason": reasons[i]})
        return {"id": rid, "object": kind, "created": int(time.time()), "model": config.model_name,
                "choices": choices, "usage": usage(len(prompt_ids), completion_tokens, cached)}

    def completion_logprobs(outs: list[RequestOutput], offset: int = 0) -> dict:
        tokens, offsets = [], []
        for o in outs:
            offsets.append(offset)
            tokens.append(piece(o.logprob.token_id))
            offset += len(o.text)
        return {"tokens": tokens, "token_logprobs": [o.logprob.logprob for o in outs],
                "top_logprobs": [{piece(i): v for i, v in o.logprob.top} for o in outs], "text_offset": offsets}

    async def stream_events(request, req, prompt_ids, params, chat, rid) -> AsyncIterator[str]:
        kind = "chat.completion.chunk" if chat else "text_completion"
        with_logprobs = params[0].logprobs is not None
        now = int(time.time())

        def chunk(choices: list, **extra) -> str:
            data = {"id": rid, "object": kind, "created": now, "model": config.model_name, "choices": choices} | extra
            return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"

        if chat:
            for i in range(len(params)):
                yield chunk([{"index": i, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                              "finish_reason": None}])
        completion_tokens, cached, offsets = 0, 0, [0] * len(params)
        async for i, out in outputs(request, prompt_ids, params, stream=True):
            has_lp = with_logprobs and out.token_id is not None
            if chat:
                lp = {"content": [chat_logprob(out)]} if has_lp else None
                yield chunk([{"index": i, "delta": {"content": out.text} if out.text else {}, "logprobs": lp,
                              "finish_reason": out.finish_reason}])
            else:
                lp = completion_logprobs([out], offsets[i]) if has_lp else None
                yield chunk([{"index": i, "text": out.text, "logprobs": lp, "finish_reason": out.finish_reason}])
            offsets[i] += len(out.text)
            if out.finish_reason is not None:
                completion_tokens += out.completion_tokens
                cached = out.cached_tokens
        if req.stream_options is not None and req.stream_options.include_usage:
            yield chunk([], usage=usage(len(prompt_ids), completion_tokens, cached))
        yield "data: [DONE]\n\n"

    @app.post("/v1/completions")
    async def completions(request: Request):
        req = await body(request, CompletionRequest)
        if isinstance(req.prompt, str):
            if tokenizer is None:
                raise APIError(400, "this model has no tokenizer: send the prompt as token ids")
            prompt_ids = tokenizer.encode(req.prompt)
        else:
            prompt_ids = list(req.prompt)
        params = params_for(req, prompt_ids, req.max_tokens if req.max_tokens is not None else 16, req.logprobs)
        return await respond(request, req, prompt_ids, params, chat=False)

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request):
        req = await body(request, ChatCompletionRequest)
        if not req.messages:
            raise APIError(400, "messages must hold at least one message", param="messages")
        if tokenizer is None or not tokenizer.chat_template:
            raise APIError(400, "this model has no chat template; use /v1/completions")
        try:
            prompt = tokenizer.apply_chat_template([m.model_dump() for m in req.messages])
        except ForwardpassError as e:
            raise APIError(400, str(e)) from None
        prompt_ids = tokenizer.encode(prompt)
        max_tokens = req.max_completion_tokens if req.max_completion_tokens is not None else req.max_tokens
        logprobs = (req.top_logprobs or 0) if req.logprobs else None
        params = params_for(req, prompt_ids, max_tokens, logprobs)
        return await respond(request, req, prompt_ids, params, chat=True)

    return app
