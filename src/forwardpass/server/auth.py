"""The API key check every route that needs one makes: `Authorization: Bearer KEY` or `x-api-key: KEY`."""

from __future__ import annotations

from starlette.requests import Request

from .errors import APIError


def authorize(request: Request, api_key: str | None) -> None:
    """Raise a 401 unless the server has no key or the request carries it."""
    if api_key and request.headers.get("authorization") != f"Bearer {api_key}" and \
            request.headers.get("x-api-key") != api_key:
        raise APIError(401, "invalid or missing API key (send 'Authorization: Bearer <key>' or 'x-api-key: <key>')",
                       "invalid_api_key")
