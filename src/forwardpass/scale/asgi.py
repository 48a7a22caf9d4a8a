"""One HTTP request through an ASGI app in-process, its response streamed back as it is sent: how a replica runs
the single server's own routes for a request its ingress forwarded. Closing the stream early is the client going
away (the app sees `http.disconnect` and aborts the request's engine work)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass


@dataclass
class Forwarded:
    """What an ingress forwards of a request: enough for the app to see the same request."""
    method: str
    path: str
    query: bytes
    headers: list[tuple[bytes, bytes]]
    body: bytes


async def call(app, request: Forwarded) -> AsyncIterator[tuple[int, list, bytes] | bytes]:
    """Yield (status, headers, first body piece) once the response starts with a body, then each further body piece.
    Waiting for the first piece means an ingress learns of a failure before it has said anything to its client."""
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": request.method,
             "scheme": "http", "path": request.path, "raw_path": request.path.encode(), "root_path": "",
             "query_string": request.query, "headers": request.headers, "client": ("ingress", 0),
             "server": ("replica", 0)}
    sent: asyncio.Queue = asyncio.Queue()
    gone = asyncio.Event()
    body_given = False

    async def receive() -> dict:
        nonlocal body_given
        if not body_given:
            body_given = True
            return {"type": "http.request", "body": request.body, "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        await sent.put(message)

    async def run() -> None:
        try:
            await app(scope, receive, send)
        finally:
            await sent.put(None)  # the app returned (or failed): no more messages

    task = asyncio.create_task(run())
    try:
        start, first = None, None
        while (message := await sent.get()) is not None:
            if message["type"] == "http.response.start":
                start = (message["status"], [(k, v) for k, v in message.get("headers", [])])
                continue
            if message["type"] != "http.response.body":
                continue
            piece, more = message.get("body", b""), message.get("more_body", False)
            if first is None:
                if not piece and more:
                    continue  # an empty piece before the first real one says nothing yet
                first = piece
                yield (start[0], start[1], piece)
            elif piece:
                yield piece
            if not more:
                break
        await task  # re-raises what the app raised
    finally:
        gone.set()
        if not task.done():
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(task), timeout=5)
            task.cancel()
