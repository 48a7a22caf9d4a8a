"""FastAPI routes of the OpenAI wire format: /v1/models, /v1/completions, /v1/chat/completions (plain or
SSE streams), /health and /metrics. Every error is an OpenAI-style JSON body; the server keeps serving.

A request's engine work ends with it: a client that goes away (streaming or not) has its requests aborted and
their blocks freed at the next step. A request the engine ends early (a failure, the time limit, a shutdown)
answers with an error: a status and an error body, or in a stream its final chunk's finish_reason followed
by an `error` event, as OpenAI's own streams report errors."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import threading
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import BaseModel, ValidationError
from starlette.exceptions import HTTPException

from ..constraints import Constraint, Grammar
from ..embeddings import Embedder
from ..engine import Engine, RequestOutput
from ..engine.sequence import Error
from ..errors import ConstraintError, ContextLengthError, EngineUnavailableError, ForwardpassError
from ..sampling import SamplingParams
from . import messages as messages_api
from . import tools
from .auth import authorize as check_key
from .body import read_body, refusal
from .errors import APIError
from .messages import MessagesRequest
from .protocol import (
    UNSUPPORTED,
    ChatCompletionRequest,
    CompletionRequest,
    DetokenizeRequest,
    EmbeddingRequest,
    TokenizeRequest,
)

log = logging.getLogger("forwardpass.server")

DEFAULT_MAX_TOKENS = 1024  # a chat request that names no limit gets this many (or what the context and pool leave)
COMPLETION_MAX_TOKENS = 16  # OpenAI's default for /v1/completions


@dataclass
class ServerConfig:
    model_name: str
    api_key: str | None = None
    max_body_bytes: int = 1 << 20
    default_max_tokens: int = DEFAULT_MAX_TOKENS
    constraint_timeout: float = 10.0  # seconds a request's constraint may take to compile (and its time limit's rest)


def engine_error(error: Error, req) -> APIError:
    """The HTTP answer to a request the engine ended early (`req`: its body, whose constraint a refusal names)."""
    status, code = {"shutdown": (503, "server_shutdown"), "timeout": (504, "timeout"),
                    "constraint": (400, "invalid_constraint")}.get(error.kind, (500, None))
    return APIError(status, error.message, code, req.constraint_field if error.kind == "constraint" else None)


async def client_gone(request: Request) -> None:
    """Returns once the client has disconnected (the request's body already read)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


class GraceOver:
    """Set, on the event loop, when a shutdown's grace period is over: every response still open then ends with its
    final event, whether or not the engine's thread has ended its requests yet (under load one step can outlast the
    HTTP server's own wait, which would cut the responses off)."""

    def __init__(self):
        self.loop: asyncio.AbstractEventLoop | None = None
        self.event: asyncio.Event | None = None

    def wait(self) -> asyncio.Future:
        """On the event loop: a future done once the grace period is over."""
        if self.event is None:
            self.loop, self.event = asyncio.get_running_loop(), asyncio.Event()
        return asyncio.ensure_future(self.event.wait())

    def begin(self, grace: float) -> None:
        """From any thread: the grace period starts now."""
        if self.loop is not None:  # else no response was ever opened: none is left to end
            self.loop.call_soon_threadsafe(lambda: self.loop.call_later(grace, self.event.set))


class Submission:
    """One API request's engine requests, one per choice; iterate for (choice index, output) until all finish.
    `groups`: each prompt with its choices' parameters (choice indices run through them in order). The first choice
    of each prompt is submitted at once (so a refusal is an HTTP error before any response starts); the others when
    its first output arrives, its prompt then being in the cache: they share the prompt's full blocks through the
    prefix cache instead of each computing and holding its own. If the client disconnects, or the iteration stops
    early, every unfinished one is aborted; once a shutdown's grace period is over (GraceOver), each unfinished
    choice ends there and then with finish reason "abort" and the shutdown's error."""

    def __init__(self, engine: Engine, request: Request, groups: list[tuple[list[int], list[SamplingParams]]],
                 grammar: Grammar | None = None, arrival: float | None = None):
        self.engine, self.request = engine, request
        self.extra = {"grammar": grammar, "arrival": arrival}  # every choice shares the request's compiled constraint
        self.loop = asyncio.get_running_loop()
        self.queue: asyncio.Queue = asyncio.Queue()
        leaders, self.pending, index = [], {}, 0  # pending: a prompt's first choice → the choices that follow it
        for prompt_ids, params in groups:
            for p in params[1:]:  # the first is checked as it is submitted
                engine.check_request(prompt_ids, p)
            leaders.append((index, prompt_ids, params[0]))
            self.pending[index] = [(index + j, prompt_ids, p) for j, p in enumerate(params[1:], 1)]
            index += len(params)
        self.running: dict[str, int] = {}  # engine request id → choice index
        try:
            for i, prompt_ids, p in leaders:
                self.running[engine.submit(prompt_ids, p, lambda o, i=i: self._deliver(i, o), **self.extra)] = i
        except BaseException:
            self.abort()  # nothing of a refused request keeps running
            raise

    def _deliver(self, i: int, out: RequestOutput) -> None:
        """From the engine's thread: hand the output to the event loop."""
        try:
            self.loop.call_soon_threadsafe(self._arrived, i, out)
        except RuntimeError:  # the event loop is closed: nobody is left to read it
            pass

    def _arrived(self, i: int, out: RequestOutput) -> None:
        for j, prompt_ids, p in self.pending.pop(i, []):  # a prompt's first choice is computed: the others join it
            try:
                self.running[self.engine.submit(prompt_ids, p, lambda o, j=j: self._deliver(j, o), **self.extra)] = j
            except ForwardpassError as e:  # the engine stopped taking requests meanwhile
                self.queue.put_nowait((j, RequestOutput(f"choice-{j}", None, "", finish_reason="error",
                                                        error=Error(str(e), "failed"))))
        self.queue.put_nowait((i, out))

    def abort(self) -> None:
        for request_id in self.running:
            self.engine.abort(request_id)
        self.running, self.pending = {}, {}

    def _cut_by_shutdown(self) -> list[tuple[int, RequestOutput]]:
        """The final output of every unfinished choice, the grace period being over; their engine requests aborted."""
        error = Error("the server is shutting down", "shutdown")
        unfinished = [(rid, i) for rid, i in self.running.items()] + [
            (f"choice-{j}", j) for followers in self.pending.values() for j, _, _ in followers]
        ends = [(i, RequestOutput(rid, None, "", finish_reason="abort", error=error)) for rid, i in unfinished]
        self.abort()
        return sorted(ends, key=lambda end: end[0])

    async def __aiter__(self) -> AsyncIterator[list[tuple[int, RequestOutput]]]:
        """Everything delivered since the last iteration, in order, as (choice index, output) pairs: a burst of
        tokens made in one step goes out as one piece, not one per token."""
        gone = asyncio.ensure_future(client_gone(self.request))
        over = self.request.app.state.grace_over.wait()
        try:
            while self.running:
                get = asyncio.ensure_future(self.queue.get())
                await asyncio.wait({get, gone, over}, return_when=asyncio.FIRST_COMPLETED)
                if not get.done():
                    get.cancel()
                    if not gone.done():
                        yield self._cut_by_shutdown()
                    return
                ready = [get.result()]
                while not self.queue.empty():
                    ready.append(self.queue.get_nowait())
                for _, out in ready:
                    if out.finish_reason is not None:
                        self.running.pop(out.request_id, None)
                yield ready
        finally:
            gone.cancel()
            over.cancel()
            self.abort()


@contextlib.contextmanager
def constraint_errors(req, field: str | None = None):
    """A constraint that cannot be enforced is a 400 naming the field that carried it."""
    try:
        yield
    except ConstraintError as e:
        raise APIError(400, str(e), "invalid_constraint", field or req.constraint_field) from None


def by_choice(ready: list[tuple[int, RequestOutput]]) -> list[tuple[int, list[RequestOutput]]]:
    """Outputs grouped by choice index, in the order each choice first appears."""
    groups: dict[int, list[RequestOutput]] = {}
    for i, out in ready:
        groups.setdefault(i, []).append(out)
    return list(groups.items())


def build_app(engine: Engine, config: ServerConfig, embedder: Embedder | None = None) -> FastAPI:
    """The routes over `engine`, and /v1/embeddings over `embedder` when the server has one."""
    app = FastAPI(title="forwardpass", docs_url=None, redoc_url=None)
    app.state.grace_over = GraceOver()  # told by the server (serve.py) when a shutdown begins
    embedding_lock = threading.Lock()  # one embedding batch at a time: each already uses every core
    tokenizer, context = engine.pipeline.tokenizer, engine.pipeline.config.context_length
    created = int(time.time())

    def anthropic(request: Request) -> bool:
        """The request came to the Messages API: its errors take Anthropic's shape."""
        return request.url.path.startswith("/v1/messages")

    @app.exception_handler(APIError)
    async def api_error(request: Request, e: APIError) -> JSONResponse:
        return e.response(anthropic(request))

    @app.exception_handler(HTTPException)
    async def no_route(request: Request, e: HTTPException) -> JSONResponse:
        """A path no route serves (404), or a method its route does not take (405), in the API's error shape."""
        method, path = request.method, request.url.path
        if e.status_code == 404:
            message = f"no route {method} {path}"
        elif e.status_code == 405:
            message = f"{method} is not allowed on {path}; use {(e.headers or {}).get('Allow', 'another method')}"
        else:
            message = str(e.detail)
        response = APIError(e.status_code, message).response(anthropic(request))
        response.headers.update(e.headers or {})
        return response

    @app.exception_handler(ForwardpassError)
    async def refused(request: Request, e: ForwardpassError) -> JSONResponse:
        """What the library refuses with a one-line reason is the client's 400 (text it cannot tokenize, a prompt
        past the context, a sampling value out of range), or 503 when the engine takes no requests."""
        if isinstance(e, EngineUnavailableError):
            return APIError(503, str(e), "server_unavailable").response(anthropic(request))
        code = "context_length_exceeded" if isinstance(e, ContextLengthError) else None
        return APIError(400, str(e), code, e.param).response(anthropic(request))

    @app.exception_handler(Exception)
    async def internal_error(request: Request, e: Exception) -> JSONResponse:
        log.error("internal error", exc_info=e)
        return APIError(500, f"internal error: {type(e).__name__}: {e}").response(anthropic(request))

    def authorize(request: Request) -> None:
        check_key(request, config.api_key)

    async def body(request: Request, schema: type[BaseModel], unsupported: dict = UNSUPPORTED,
                   served: str | None = None) -> BaseModel:
        authorize(request)
        raw = await read_body(request, config.max_body_bytes)
        try:
            data = json.loads(raw)
            json.dumps(data, ensure_ascii=False).encode()  # a lone surrogate escape ("\udfff") is no text
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise APIError(400, f"request body is not valid JSON: {e}") from None
        except UnicodeEncodeError:
            raise APIError(400, "request body holds an unpaired UTF-16 surrogate escape: not valid Unicode") from None
        except RecursionError:
            raise APIError(400, "request body is nested too deeply") from None
        try:
            parsed = schema.model_validate(data)
        except ValidationError as e:
            raise refusal(e, data, unsupported) from None
        served = served or config.model_name
        if parsed.model is not None and parsed.model != served:
            raise APIError(404, f"model {parsed.model!r} does not exist; this server serves {served!r} here",
                           "model_not_found", "model")
        return parsed

    @app.get("/health")
    async def health() -> JSONResponse:
        """200 while requests are served; 503 once the engine has failed (restart it) or is shutting down."""
        try:
            if not engine.healthy:
                raise EngineUnavailableError(f"the engine stopped after an internal error: {engine.failure}")
            engine.check_available()
        except EngineUnavailableError as e:
            return JSONResponse({"status": "unavailable", "reason": str(e)}, status_code=503)
        return JSONResponse({"status": "ok"})

    @app.get("/metrics")
    async def metrics(request: Request) -> Response:
        authorize(request)
        return Response(engine.metrics.render(), media_type=CONTENT_TYPE_LATEST)

    @app.get("/v1/models")
    async def models(request: Request) -> dict:
        authorize(request)
        listed = [{"id": config.model_name, "object": "model", "created": created, "owned_by": "forwardpass",
                   "max_model_len": context}]
        if embedder is not None:
            listed.append({"id": embedder.name, "object": "model", "created": created, "owned_by": "forwardpass",
                           "max_model_len": embedder.max_tokens})
        return {"object": "list", "data": listed}

    @app.post("/v1/embeddings")
    async def embeddings(request: Request) -> dict:
        """OpenAI's embeddings: unit vectors from the embedding model, float lists or base64 float32."""
        if embedder is None:
            authorize(request)
            raise APIError(404, "this server has no embedding model (start it with --embedding-model)",
                           "model_not_found", "model")
        req = await body(request, EmbeddingRequest, served=embedder.name)
        inputs = req.input if isinstance(req.input, list) else [req.input]
        if not inputs:
            raise APIError(400, "input holds nothing to embed", param="input")
        if len(inputs) > 2048:
            raise APIError(400, f"input holds {len(inputs)} items; at most 2048 per request", param="input")
        if isinstance(inputs[0], int):  # one input as token ids
            inputs = [inputs]
        if req.dimensions is not None and req.dimensions != embedder.dimensions:
            raise APIError(400, f"{embedder.name} makes {embedder.dimensions}-dimensional vectors and cannot shorten "
                                f"them", param="dimensions")
        ids = [embedder.encode(x) if isinstance(x, str) else list(x) for x in inputs]

        def run():
            with embedding_lock:
                return embedder.embed(ids)
        vectors = await asyncio.to_thread(run)
        if req.encoding_format == "base64":
            data = [base64.b64encode(v.numpy().astype("<f4").tobytes()).decode() for v in vectors]
        else:
            data = vectors.tolist()
        tokens = sum(len(x) for x in ids)
        return {"object": "list", "model": embedder.name, "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
                "data": [{"object": "embedding", "index": i, "embedding": e} for i, e in enumerate(data)]}

    def params_for(req, prompt_ids: list[int], max_tokens: int | None, logprobs: int | None) -> list[SamplingParams]:
        """One SamplingParams per choice. With no max_tokens: the server's default, or less where the context or
        the pool leaves less room (a prompt that leaves none is refused)."""
        budget = max_tokens
        if budget is None:
            budget = min(config.default_max_tokens, engine.token_room(prompt_ids))
            budget = max(budget, 1)  # a prompt that leaves no room: check_request names why
        with constraint_errors(req):
            params = [req.sampling(budget, logprobs, seed_offset=i) for i in range(req.n)]
        engine.check_request(prompt_ids, params[0])
        return params

    async def compiled(req, constraint: Constraint | None, arrival: float) -> Grammar | None:
        """The request's constraint compiled on a worker thread while the event loop goes on serving (once for all
        its choices and prompts); a 400 naming the field if it cannot be enforced or takes longer to compile than
        the server's limit, or than what is left of the request's time limit."""
        if constraint is None:
            return None
        limit = config.constraint_timeout
        if engine.config.request_timeout is not None:
            limit = min(limit, engine.config.request_timeout - (time.perf_counter() - arrival))
        compiling = asyncio.wrap_future(engine.grammars.submit(constraint))
        with constraint_errors(req):
            try:  # shielded: the compile goes on for the others waiting on it, and is kept for the next request
                return await asyncio.wait_for(asyncio.shield(compiling), max(limit, 0.0))
            except asyncio.TimeoutError:
                compiling.add_done_callback(lambda f: f.cancelled() or f.exception())  # its outcome is not ours now
                raise ConstraintError(f"the constraint did not compile within {limit:.3g} s, the server's limit: make "
                                      f"it smaller or simpler") from None

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

    def chat_reply(text: str, reason: str | None, calls: dict | None, parallel: bool = True) -> tuple[dict, str | None]:
        """The assistant message of a finished choice, and its finish reason: with tools, a reply made of calls is
        returned as tool_calls (finish reason "tool_calls"); without `parallel`, its first call only."""
        made = tools.parse(text, calls, parallel) if calls else None
        if made is None:
            return {"role": "assistant", "content": text}, reason
        return {"role": "assistant", "content": None, "tool_calls": made}, "tool_calls" if reason == "stop" else reason

    async def respond(request: Request, req, groups: list[tuple[list[int], list[SamplingParams]]], chat: bool,
                      calls: dict | None = None):
        """`groups`: each prompt and its choices' parameters (Submission). `calls`: the functions the reply may call
        (chat with tools, tool_choice not "none")."""
        rid = f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex[:24]}"
        kind = "chat.completion" if chat else "text_completion"
        params = [p for _, ps in groups for p in ps]
        prompt_of = [k for k, (_, ps) in enumerate(groups) for _ in ps]  # choice index → its prompt's
        prompt_tokens = sum(len(prompt_ids) for prompt_ids, _ in groups)
        with_logprobs = params[0].logprobs is not None
        arrival = time.perf_counter()
        grammar = await compiled(req, params[0].constraint, arrival)
        with constraint_errors(req):
            submission = Submission(engine, request, groups, grammar, arrival)
        if req.stream:
            return StreamingResponse(stream_events(submission, req, prompt_tokens, prompt_of, params, chat, rid, calls),
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
                lp = {"content": [chat_logprob(o) for o in logs[i]]} if with_logprobs else None
                message, reason = chat_reply(texts[i], reasons[i], calls, req.parallel_tool_calls)
                choices.append({"index": i, "message": message, "logprobs": lp, "finish_reason": reason})
            else:
                choices.append({"index": i, "text": texts[i], "logprobs": completion_logprobs(logs[i])
                                if with_logprobs else None, "finish_reason": reasons[i]})
        return {"id": rid, "object": kind, "created": int(time.time()), "model": config.model_name,
                "choices": choices, "usage": usage(prompt_tokens, completion_tokens, sum(cached.values()))}

    def completion_logprobs(outs: list[RequestOutput], offset: int = 0) -> dict:
        tokens, offsets = [], []
        for o in outs:
            offsets.append(offset)
            tokens.append(piece(o.logprob.token_id))
            offset += len(o.text)
        return {"tokens": tokens, "token_logprobs": [o.logprob.logprob for o in outs],
                "top_logprobs": [{piece(i): v for i, v in o.logprob.top} for o in outs], "text_offset": offsets}

    async def stream_events(submission, req, prompt_tokens, prompt_of, params, chat, rid, calls) -> AsyncIterator[str]:
        """Server-sent events. A forced tool call streams as OpenAI's do: its id and name, then its arguments piece
        by piece. With tools and tool_choice "auto", a choice's text is held until it ends: then it goes out as
        content, or as its tool calls (each whole, in one delta) if it is made of calls."""
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
                    lp = {"content": [chat_logprob(o) for o in held_scored[i]]} \
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
                    lp = {"content": [chat_logprob(o) for o in held_scored[i]]} if held_scored[i] else None
                    yield chunk([{"index": i, "delta": delta, "logprobs": lp, "finish_reason": reason}])
                elif chat:
                    lp = {"content": [chat_logprob(o) for o in scored]} if scored else None
                    yield chunk([{"index": i, "delta": {"content": text} if text else {}, "logprobs": lp,
                                  "finish_reason": last.finish_reason}])
                else:
                    lp = completion_logprobs(scored, offsets[i]) if scored else None
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

    @app.post("/v1/completions")
    async def completions(request: Request):
        req = await body(request, CompletionRequest)
        texts = req.listed(req.prompt)
        if any(isinstance(t, str) for t in texts) and tokenizer is None:
            raise APIError(400, "this model has no tokenizer: send the prompt as token ids")
        prompts = [tokenizer.encode(t) if isinstance(t, str) else list(t) for t in texts]
        max_tokens = req.max_tokens if req.max_tokens is not None else COMPLETION_MAX_TOKENS
        groups = [(ids, params_for(req, ids, max_tokens, req.logprobs)) for ids in prompts]
        return await respond(request, req, groups, chat=False)

    def chat_ids(messages: list, add_generation_prompt: bool = True, functions: dict | None = None) -> list[int]:
        """The ids of messages (and the tools they may call) rendered through the model's chat template, as the
        chat route runs them."""
        if tokenizer is None or not tokenizer.chat_template:
            raise APIError(400, "this model has no chat template: send a prompt (to /v1/completions), not messages",
                           param="messages")
        takes = tokenizer.template_takes_tools
        with constraint_errors(None, "messages"):
            rendered = tools.render([m.model_dump(exclude_none=True) for m in messages], functions or {}, takes)
        declared = [{"type": "function", "function": f} for f in (functions or {}).values()] if takes else None
        return tokenizer.encode_chat(rendered, add_generation_prompt, declared)

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request):
        req = await body(request, ChatCompletionRequest)
        if not req.messages:
            raise APIError(400, "messages must hold at least one message", param="messages")
        with constraint_errors(None, "tools"):
            functions = req.functions()
        prompt_ids = chat_ids(req.messages, functions=functions)
        max_tokens = req.max_completion_tokens if req.max_completion_tokens is not None else req.max_tokens
        logprobs = (req.top_logprobs or 0) if req.logprobs else None
        params = params_for(req, prompt_ids, max_tokens, logprobs)
        return await respond(request, req, [(prompt_ids, params)], chat=True,
                             calls=None if req.tool_mode == "none" else functions)

    @app.post("/v1/messages")
    async def messages(request: Request):
        """Anthropic's Messages API: the chat route's generation, answered as content blocks."""
        req = await body(request, MessagesRequest, messages_api.UNSUPPORTED)
        with constraint_errors(req):
            chat, declared = req.chat()
            functions = tools.functions(declared)
            params = req.sampling(functions)
        prompt_ids = chat_ids(chat, functions=functions)
        calls = None if req.tool_mode == "none" else functions
        arrival = time.perf_counter()
        grammar = await compiled(req, params.constraint, arrival)
        with constraint_errors(req):
            submission = Submission(engine, request, [(prompt_ids, [params])], grammar, arrival)
        if req.stream:
            return StreamingResponse(message_events(submission, prompt_ids, calls, req),
                                     media_type="text/event-stream")
        text, last = "", None
        async for ready in submission:
            for _, out in ready:
                if out.error is not None:
                    raise engine_error(out.error, req)
                text, last = text + out.text, out
        made = tools.parse(text, calls, req.parallel_tool_calls) if calls else None
        return {"id": messages_api.message_id(), "type": "message", "role": "assistant", "model": config.model_name,
                "content": messages_api.content_blocks(text, made),
                "stop_reason": messages_api.stop_reason(last.finish_reason, last.stop_string, made),
                "stop_sequence": last.stop_string, "usage": message_usage(prompt_ids, last)}

    def message_usage(prompt_ids: list[int], out: RequestOutput | None) -> dict:
        return {"input_tokens": len(prompt_ids), "output_tokens": out.completion_tokens if out else 0,
                "cache_read_input_tokens": out.cached_tokens if out else 0}

    async def message_events(submission, prompt_ids: list[int], calls: dict | None, req) -> AsyncIterator[str]:
        """Anthropic's stream: message_start, each content block (start, deltas, stop), message_delta with the stop
        reason and usage, message_stop. With tools the reply is held until it ends, then sent as its blocks."""
        event = messages_api.event
        yield event("message_start", {"message": {
            "id": messages_api.message_id(), "type": "message", "role": "assistant", "model": config.model_name,
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
        made = tools.parse(text, calls, req.parallel_tool_calls) if calls else None
        if calls is None:
            yield event("content_block_stop", {"index": 0})
        else:
            for k, block in enumerate(messages_api.content_blocks(text, made)):
                if block["type"] == "text":
                    yield event("content_block_start", {"index": k, "content_block": {"type": "text", "text": ""}})
                    delta = {"type": "text_delta", "text": block["text"]}
                else:
                    yield event("content_block_start", {"index": k, "content_block": block | {"input": {}}})
                    delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
                yield event("content_block_delta", {"index": k, "delta": delta})
                yield event("content_block_stop", {"index": k})
        finish, stop_string = (last.finish_reason, last.stop_string) if last is not None else ("abort", None)
        yield event("message_delta", {"delta": {"stop_reason": messages_api.stop_reason(finish, stop_string, made),
                                                "stop_sequence": stop_string},
                                      "usage": {"output_tokens": last.completion_tokens if last else 0}})
        yield event("message_stop", {})

    def need_tokenizer() -> None:
        if tokenizer is None:
            raise APIError(400, "this model has no tokenizer")

    @app.post("/tokenize")
    async def tokenize(request: Request) -> dict:
        """Token ids of a prompt (or of chat messages as the chat routes render them), and the context length."""
        req = await body(request, TokenizeRequest)
        need_tokenizer()
        if (req.prompt is None) == (req.messages is None):
            raise APIError(400, "send either prompt or messages", param="prompt")
        if req.messages is not None:
            with constraint_errors(None, "tools"):
                functions = tools.functions(req.tools or [])
            ids = chat_ids(req.messages, req.add_generation_prompt, functions)
        else:
            ids = tokenizer.encode(req.prompt)
        out = {"count": len(ids), "max_model_len": context, "tokens": ids}
        return out | ({"token_strs": [tokenizer.piece(i) for i in ids]} if req.return_token_strs else {})

    @app.post("/detokenize")
    async def detokenize(request: Request) -> dict:
        req = await body(request, DetokenizeRequest)
        need_tokenizer()
        tokenizer.check_ids(req.tokens)
        return {"prompt": tokenizer.decode(req.tokens)}

    return app
