"""A request's body, read no further than a limit: a declared or actual size over it is a 413."""

from __future__ import annotations

from starlette.requests import Request

from .errors import APIError


async def read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise APIError(413, f"request body of {declared} bytes exceeds the limit of {limit}")
    raw = b""
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > limit:
            raise APIError(413, f"request body exceeds the limit of {limit} bytes")
    return raw
