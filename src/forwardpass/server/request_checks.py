"""What every request meets first: the key, the JSON body read and checked, and the model it names (to_engine.py's
Served, from the registry, loaded if it is not) — each failure in the API's own terms."""

from __future__ import annotations

import json
import threading
import time
from typing import TYPE_CHECKING

from fastapi import Request
from pydantic import BaseModel, ValidationError

from .auth import authorize as check_key
from .body import read_body, refusal
from .errors import APIError
from .protocol import UNSUPPORTED
from .quoting import quoted
from .registry import Registry
from .to_engine import Served, ServerConfig

if TYPE_CHECKING:  # the embedding model needs PyTorch; a server without one never imports it
    from ..embeddings import Embedder


class Front:
    """The server as the routes see it: its settings, its chat models (registry.py) and its embedding model."""

    def __init__(self, registry: Registry, config: ServerConfig, embedder: Embedder | None = None):
        self.registry, self.config, self.embedder = registry, config, embedder
        self.created = int(time.time())
        self.embedding_lock = threading.Lock()  # one embedding batch at a time: each already uses every core

    def authorize(self, request: Request) -> None:
        check_key(request, self.config.api_key)

    async def body(self, request: Request, schema: type[BaseModel], unsupported: dict = UNSUPPORTED) -> BaseModel:
        """The request's JSON body as `schema`, after its key: a 400 for what is not JSON or not the schema (a field
        it does not take named, `unsupported`'s with their reason)."""
        self.authorize(request)
        raw = await read_body(request, self.config.max_body_bytes)
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
        return parsed

    async def model(self, request: Request, schema: type[BaseModel],
                    unsupported: dict = UNSUPPORTED) -> tuple[BaseModel, Served]:
        """The body (as `body`) and the chat model it names (none named: the first), loaded if it is not; a 404
        naming the served ids for another."""
        parsed = await self.body(request, schema, unsupported)
        request.state.model = parsed.model or self.registry.first  # for the access log
        return parsed, await self.registry.get(parsed.model, request)

    def embedding_model(self, request: Request, parsed: BaseModel) -> Embedder:
        """The server's embedding model, which the body names (or leaves out); a 404 for another."""
        request.state.model = parsed.model or self.embedder.name
        if parsed.model is not None and parsed.model != self.embedder.name:
            raise APIError(404, f"model {quoted(parsed.model)} does not exist; this server embeds with "
                                f"{self.embedder.name!r}", "model_not_found", "model")
        return self.embedder
