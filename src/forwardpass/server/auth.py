"""The API key check every route that needs one makes: `Authorization: Bearer KEY` or `x-api-key: KEY`."""

from __future__ import annotations

import hashlib

from starlette.requests import Request

from .errors import APIError


def authorize(request: Request, api_key: str | None) -> None:
    """Raise a 401 unless the server has no key or the request carries it."""
    if api_key and request.headers.get("authorization") != f"Bearer {api_key}" and \
            request.headers.get("x-api-key") != api_key:
        raise APIError(401, "invalid or missing API key (send 'Authorization: Bearer <key>' or 'x-api-key: <key>')",
                       "invalid_api_key")


def partition(request: Request, api_key: str | None, user: str | None) -> str:
    """Whose recent requests a request may draft from (engine/suffix_drafts.py): the key it presented (as a hash) where
    the server takes keys, and the end user it names (OpenAI's `user`, Anthropic's `metadata.user_id`); "" for a
    server without a key and a request naming no user, whose requests share one."""
    key = ""
    if api_key:
        bearer = request.headers.get("authorization", "")
        presented = bearer.removeprefix("Bearer ") if bearer.startswith("Bearer ") else request.headers.get("x-api-key")
        key = hashlib.sha256((presented or "").encode()).hexdigest()[:16]
    return f"{key}/{user}" if user is not None else key
