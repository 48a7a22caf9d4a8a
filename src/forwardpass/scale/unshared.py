"""What replicas cannot answer as one server does, refused by name at their front door. The Responses API's stored
responses live in the replica that made them (each keeps its own store), so a request naming an earlier response
(`previous_response_id`), or retrieving, deleting or listing the input of one, could reach a replica that never saw
it: refused, saying how to do without, rather than answered 404 on one try and 200 on the next."""

from __future__ import annotations

import json

from ..server.errors import APIError

WITHOUT = "each replica keeps its own stored responses"


def unshared(method: str, path: str, body: bytes) -> APIError | None:
    """The refusal for a request that needs a response stored by another replica, or None."""
    if path.startswith("/v1/responses/"):
        return APIError(400, f"{method} {path.split('?')[0][:80]} is not served with --replicas ({WITHOUT}): keep the "
                        "response the API returned", "unsupported_with_replicas")
    if method == "POST" and path == "/v1/responses":
        try:
            data = json.loads(body) if body else None
        except (json.JSONDecodeError, UnicodeDecodeError):
            return None  # the replica says what is wrong with it
        if isinstance(data, dict) and data.get("previous_response_id") is not None:
            return APIError(400, f"previous_response_id is not served with --replicas ({WITHOUT}): send the "
                            "conversation so far as `input` items", "unsupported_with_replicas",
                            "previous_response_id")
    return None
