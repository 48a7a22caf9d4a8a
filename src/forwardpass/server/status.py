"""The server's state (/health), its metrics (/metrics, Prometheus, each series labelled with its model as vLLM
labels them) and the models it serves (/v1/models, /v1/models/{id})."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST

from ..catalog import describe
from ..errors import EngineUnavailableError, ForwardpassError
from .errors import APIError
from .exposition import labelled
from .front import Front


def router(s: Front) -> APIRouter:
    r = APIRouter()
    described: dict[str, dict] = {}  # id → what its file says (read once)

    @r.get("/health")
    async def health() -> JSONResponse:
        """200 while requests are served; 503 once an engine has failed (restart it) or is shutting down."""
        try:
            for _, served in s.registry.listing():
                if served is None:
                    continue
                if not served.engine.healthy:
                    raise EngineUnavailableError(f"the engine of {served.name!r} stopped after an internal error: "
                                                 f"{served.engine.failure}")
                served.engine.check_available()
        except EngineUnavailableError as e:
            return JSONResponse({"status": "unavailable", "reason": str(e)}, status_code=503)
        return JSONResponse({"status": "ok"})

    @r.get("/metrics")
    async def metrics(request: Request) -> Response:
        s.authorize(request)
        texts = {served.name: served.engine.metrics.render().decode() for _, served in s.registry.listing()
                 if served is not None}
        return Response(labelled(texts, "model_name"), media_type=CONTENT_TYPE_LATEST)

    def entry(spec, served) -> dict:
        """A chat model as /v1/models lists it: loaded or not, its family, quantization and context length."""
        if spec.id not in described:
            try:
                described[spec.id] = describe(spec.path)
            except (ForwardpassError, OSError):  # a model made in memory (tests): no file to ask
                described[spec.id] = {"family": "unknown", "quantization": "unknown", "context_length": served.context}
        about = dict(described[spec.id])
        if served is not None:
            about["context_length"] = served.context
        elif s.registry.ctx_size:
            about["context_length"] = min(about["context_length"], s.registry.ctx_size)
        return {"id": spec.id, "object": "model", "created": s.created, "owned_by": "forwardpass",
                "max_model_len": about["context_length"], "loaded": served is not None, "kind": "chat"} | about

    @r.get("/v1/models")
    async def models(request: Request) -> dict:
        s.authorize(request)
        listed = [entry(spec, served) for spec, served in s.registry.listing()]
        if s.embedder is not None:
            listed.append({"id": s.embedder.name, "object": "model", "created": s.created, "owned_by": "forwardpass",
                           "max_model_len": s.embedder.max_tokens, "loaded": True, "kind": "embedding"})
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
