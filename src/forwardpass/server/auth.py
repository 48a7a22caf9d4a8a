"""The API key check every route that needs one makes: `Authorization: Bearer KEY` or `x-api-key: KEY`, KEY one of the
server's keys; and the drafting partition a request's key and end user make."""

from __future__ import annotations

import hashlib

from starlette.requests import Request

from .errors import APIError

Keys = str | tuple[str, ...] | None  # the server's key, its keys, or none


def presented(request: Request, api_key: Keys) -> str | None:
    """The server's key the request carries, in either header; None if it carries none of them."""
    keys = (api_key,) if isinstance(api_key, str) else tuple(api_key or ())
    bearer = request.headers.get("authorization", "")
    for key in (bearer.removeprefix("Bearer ") if bearer.startswith("Bearer ") else None,
                request.headers.get("x-api-key")):
        if key is not None and key in keys:
            return key
    return None


def authorize(request: Request, api_key: Keys) -> None:
    """Raise a 401 unless the server has no key or the request carries one of its keys."""
    if api_key and presented(request, api_key) is None:
        raise APIError(401, "invalid or missing API key (send 'Authorization: Bearer <key>' or 'x-api-key: <key>')",
                       "invalid_api_key")


def partition(request: Request, api_key: Keys, user: str | None) -> str:
    """Whose recent requests a request may draft from (engine/suffix_drafts.py): the server's key it presented (as a
    hash) where the server takes keys, and the end user it names (OpenAI's `user`, Anthropic's `metadata.user_id`); ""
    for a server without a key and a request naming no user, whose requests share one."""
    key = ""
    if api_key:
        key = hashlib.sha256((presented(request, api_key) or "").encode()).hexdigest()[:16]
    return f"{key}/{user}" if user is not None else key
