"""The replicas' front door: one Ray Serve deployment that keeps the single server's HTTP surface. It answers
/health (replicas ready / wanted) and /metrics (every replica's series, labelled `replica`) itself, and forwards
every other request, unchanged, to an engine replica chosen by the router from the prompt's prefix. A replica that
dies before its answer has begun is replaced by another (up to `ATTEMPTS` tries); one that dies mid-stream ends the
stream with an error event, so a client either gets its whole answer or sees it fail."""

from __future__ import annotations

import asyncio
import logging

import ray
from ray import serve
from ray.exceptions import ActorDiedError, ActorUnavailableError, RayActorError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..server.auth import authorize
from ..server.body import read_body
from ..server.errors import APIError
from ..server.exposition import labelled
from . import asgi
from .prompt_keys import prefix_hashes, route_key
from .replica import NAMESPACE
from .unshared import unshared

log = logging.getLogger("forwardpass.scale")

ATTEMPTS = 3  # replicas tried for one request before it is refused
GONE = (ActorDiedError, ActorUnavailableError, RayActorError)



class Ingress:
    def __init__(self, engines, wanted: int, api_key: str | tuple[str, ...] | None, max_body_bytes: int, board: str,
                 app_name: str, request_timeout: float | None = None, deployment: str = "EngineReplica"):
        self.engines, self.wanted, self.api_key, self.max_body_bytes = engines, wanted, api_key, max_body_bytes
        self.board_name, self.app_name, self.deployment = board, app_name, deployment
        # a request's answer begins within the engine's own time limit (it ends the request then) or never will
        self.first_timeout = request_timeout + 30 if request_timeout else None

    def ready(self) -> int:
        status = serve.status().applications.get(self.app_name)
        overview = status.deployments.get(self.deployment) if status else None
        return overview.replica_states.get("RUNNING", 0) if overview else 0

    async def __call__(self, request: Request) -> Response:
        anthropic = request.url.path.startswith("/v1/messages")
        try:
            if request.method == "GET" and request.url.path == "/health":
                return await self.health()
            if request.method == "GET" and request.url.path == "/metrics":
                return await self.metrics(request)
            return await self.forward(request, anthropic)
        except APIError as e:
            return e.response(anthropic)

    async def health(self) -> JSONResponse:
        """200 while at least one replica serves; the count ready and the count wanted either way."""
        ready = await asyncio.to_thread(self.ready)
        body = {"status": "ok" if ready else "unavailable", "replicas": {"ready": ready, "wanted": self.wanted}}
        return JSONResponse(body, status_code=200 if ready else 503)

    async def metrics(self, request: Request) -> Response:
        authorize(request, self.api_key)
        board = ray.get_actor(self.board_name, namespace=NAMESPACE)
        posts = await board.read.remote(within=5.0)
        ready = await asyncio.to_thread(self.ready)
        extra = ["# HELP forwardpass:replicas_ready Engine replicas serving.",
                 "# TYPE forwardpass:replicas_ready gauge", f"forwardpass:replicas_ready {ready}",
                 "# HELP forwardpass:replicas_wanted Engine replicas asked for.",
                 "# TYPE forwardpass:replicas_wanted gauge", f"forwardpass:replicas_wanted {self.wanted}",
                 "# HELP forwardpass:replica_pid Each replica's process id.", "# TYPE forwardpass:replica_pid gauge"]
        extra += [f'forwardpass:replica_pid{{replica="{r}"}} {pid}' for r, (pid, _) in sorted(posts.items())]
        text = labelled({r: t for r, (_, t) in posts.items()}, "replica", extra)
        return Response(text, media_type="text/plain; version=0.0.4; charset=utf-8")

    async def forward(self, request: Request, anthropic: bool) -> Response:
        body = await read_body(request, self.max_body_bytes)
        if (refusal := unshared(request.method, request.url.path, body)) is not None:
            raise refusal
        forwarded = asgi.Forwarded(request.method, request.url.path, request.url.query.encode(),
                                   [(k.lower(), v) for k, v in request.headers.raw], body)
        prefix = prefix_hashes(route_key(request.url.path, body))
        failure = None
        for attempt in range(ATTEMPTS):
            stream = self.engines.options(stream=True).forward.remote(forwarded, prefix=prefix)
            try:
                status, headers, first = await asyncio.wait_for(stream.__anext__(), self.first_timeout)
            except GONE as e:  # the replica died before answering: another one answers instead
                failure = e
                log.warning("replica gone before answering (try %d of %d): %s", attempt + 1, ATTEMPTS, e)
                await asyncio.sleep(0.5 * (attempt + 1))
                continue
            except asyncio.TimeoutError:  # the engine ends its requests sooner: no replica took this one
                stream.cancel()
                raise APIError(503, f"no replica answered within {self.first_timeout:.0f} s; retry",
                               "replica_unavailable") from None
            except asyncio.CancelledError:  # the client went away: so does its request, on its replica
                stream.cancel()
                raise
            except StopAsyncIteration:
                raise APIError(500, "the replica ended the request without an answer") from None
            except Exception as e:  # noqa: BLE001 — said to the client as the single server says internal errors
                stream.cancel()
                raise APIError(500, f"internal error: {type(e).__name__}: {e}") from None
            return Relay(status, headers, first, stream, anthropic)
        raise APIError(503, f"no replica could answer after {ATTEMPTS} tries ({type(failure).__name__}); retry",
                       "replica_unavailable")


class Relay(Response):
    """A replica's response passed through as it arrives: its status and headers, then its body pieces."""

    def __init__(self, status: int, headers: list, first: bytes, stream, anthropic: bool):
        self.status_code, self.raw_headers, self.background = status, list(headers), None
        self.first, self.stream, self.anthropic = first, stream, anthropic
        self.sse = any(k == b"content-type" and v.startswith(b"text/event-stream") for k, v in headers)

    async def __call__(self, scope, receive, send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        try:
            await send({"type": "http.response.body", "body": self.first, "more_body": True})
            async for piece in self.stream:
                await send({"type": "http.response.body", "body": piece, "more_body": True})
        except GONE as e:
            log.warning("replica gone mid-answer: %s", e)
            if not self.sse:
                raise  # the connection is cut short: the client sees the answer fail
            error = APIError(503, "the replica answering this request stopped; retry", "replica_unavailable")
            await send({"type": "http.response.body", "body": error.event(self.anthropic).encode(), "more_body": True})
        finally:
            self.stream.cancel()
        await send({"type": "http.response.body", "body": b"", "more_body": False})
