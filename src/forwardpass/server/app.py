"""The HTTP API over the engine: OpenAI's /v1/models, /v1/completions, /v1/chat/completions (plain or SSE streams),
/v1/responses and /v1/embeddings, Anthropic's /v1/messages, /tokenize and /detokenize, /health and /metrics, one
module each over one request → engine path (to_engine.py). Every error is a JSON body in the API's own shape; the
server keeps serving.

A request's engine work ends with it: a client that goes away (streaming or not) has its requests aborted and
their blocks freed at the next step. A request the engine ends early (a failure, the time limit, a shutdown)
answers with an error: a status and an error body, or in a stream its final chunk's finish_reason followed
by an `error` event, as OpenAI's own streams report errors."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from ..engine import Engine
from ..errors import ContextLengthError, EngineUnavailableError, ForwardpassError
from . import anthropic as anthropic_api
from . import completions, embeddings, page, responses, status, tokens
from .access_log import AccessLog
from .errors import APIError
from .quoting import CONTROLS, shown
from .registry import Leases, Registry
from .request_checks import Front
from .submission import GraceOver
from .to_engine import Served, ServerConfig

if TYPE_CHECKING:  # the embedding model needs PyTorch; a server without one never imports it
    from ..embeddings import Embedder

log = logging.getLogger("forwardpass.server")

__all__ = ["ServerConfig", "build_app"]


def build_app(models: Engine | Registry, config: ServerConfig, embedder: Embedder | None = None) -> FastAPI:
    """The routes over `models` (a registry of chat models, or one engine), and /v1/embeddings over `embedder` when
    the server has one."""
    app = FastAPI(title="forwardpass", docs_url=None, redoc_url=None)
    app.state.grace_over = GraceOver()  # told by the server (serve.py) when a shutdown begins
    _errors(app)
    registry = models if isinstance(models, Registry) else Registry.of(Served(models, config))
    front = Front(registry, config, embedder)
    for api in (status, completions, responses, anthropic_api, embeddings, tokens):
        app.include_router(api.router(front))
    app.add_middleware(Leases)
    app.add_middleware(ExactPaths)
    app.include_router(page.router())  # the chat page at GET /
    if config.access_log is not None:
        app.add_middleware(AccessLog, as_json=config.access_log == "json")
    if config.cors_origins:  # pages served from these origins may call the API from a browser (preflight answered)
        app.add_middleware(CORSMiddleware, allow_origins=list(config.cors_origins), allow_methods=["GET", "POST"],
                           allow_headers=["*"])
    return app


def anthropic(request: Request) -> bool:
    """The request came to the Messages API: its errors take Anthropic's shape."""
    return path(request).startswith("/v1/messages")


def path(request: Request) -> str:
    """The path as the client sent it, decoded (request.url.path has lost any tab, CR or LF in it, as URLs do)."""
    return request.scope["path"]


def not_routed(request: Request) -> APIError:
    return APIError(404, f"no route {request.method} {shown(path(request))}")


class ExactPaths:
    """ASGI middleware: a path holding a control character (a URL's %0A, %0D, %1B, …) names no route. A route's
    pattern ends in `$`, which also matches before a final newline: `/v1/models%0A` would be /v1/models."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and CONTROLS.search(scope["path"]):
            request = Request(scope)
            return await not_routed(request).response(anthropic(request))(scope, receive, send)
        await self.app(scope, receive, send)


def _errors(app: FastAPI) -> None:
    """Every error as a JSON body in the shape of the API it came to (Anthropic's under /v1/messages)."""

    @app.exception_handler(APIError)
    async def api_error(request: Request, e: APIError) -> JSONResponse:
        return e.response(anthropic(request))

    @app.exception_handler(HTTPException)
    async def no_route(request: Request, e: HTTPException) -> JSONResponse:
        """A path no route serves (404), or a method its route does not take (405), in the API's error shape."""
        method = request.method
        if e.status_code == 404:
            error = not_routed(request)
        elif e.status_code == 405:
            allowed = (e.headers or {}).get("Allow", "another method")
            error = APIError(405, f"{method} is not allowed on {shown(path(request))}; use {allowed}")
        else:
            error = APIError(e.status_code, str(e.detail))
        response = error.response(anthropic(request))
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
