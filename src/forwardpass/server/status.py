"""The server's state (/health), its metrics (/metrics, Prometheus) and the models it serves (/v1/models)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST

from ..errors import EngineUnavailableError
from .errors import APIError
from .served import Served


def router(s: Served) -> APIRouter:
    r = APIRouter()

    @r.get("/health")
    async def health() -> JSONResponse:
        """200 while requests are served; 503 once the engine has failed (restart it) or is shutting down."""
        try:
            if not s.engine.healthy:
                raise EngineUnavailableError(f"the engine stopped after an internal error: {s.engine.failure}")
            s.engine.check_available()
        except EngineUnavailableError as e:
            return JSONResponse({"status": "unavailable", "reason": str(e)}, status_code=503)
        return JSONResponse({"status": "ok"})

    @r.get("/metrics")
    async def metrics(request: Request) -> Response:
        s.authorize(request)
        return Response(s.engine.metrics.render(), media_type=CONTENT_TYPE_LATEST)

    @r.get("/v1/models")
    async def models(request: Request) -> dict:
        s.authorize(request)
        listed = [{"id": s.config.model_name, "object": "model", "created": s.created, "owned_by": "forwardpass",
                   "max_model_len": s.context}]
        if s.embedder is not None:
            listed.append({"id": s.embedder.name, "object": "model", "created": s.created, "owned_by": "forwardpass",
                           "max_model_len": s.embedder.max_tokens})
        return {"object": "list", "data": listed}

    @r.get("/v1/models/{model_id:path}")
    async def model(model_id: str, request: Request) -> dict:
        """One served model, as /v1/models lists it; another id is a 404."""
        listed = (await models(request))["data"]
        found = [m for m in listed if m["id"] == model_id]
        if not found:
            served = ", ".join(repr(m["id"]) for m in listed)
            raise APIError(404, f"model {model_id!r} does not exist; this server serves {served}", "model_not_found")
        return found[0]

    return r
