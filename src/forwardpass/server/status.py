"""The server's state (/health), its metrics (/metrics, Prometheus, each series labelled with its model as vLLM
labels them) and the models it serves (/v1/models, /v1/models/{id}), each with where it stands: loaded, loading,
unloaded, or failed with the reason (registry.py)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST

from ..errors import EngineUnavailableError
from .errors import APIError
from .exposition import labelled
from .quoting import quoted
from .request_checks import Front

UNKNOWN = {"family": "unknown", "quantization": "unknown", "context_length": None}  # a file that cannot be read


def router(s: Front) -> APIRouter:
    r = APIRouter()

    @r.get("/health")
    async def health() -> JSONResponse:
        """200 while requests are served; 503 once an engine has failed (restart it) or is shutting down. Models that
        could not be loaded are named (failed_models; the reasons are /v1/models', behind the key): the others are
        served all the same."""
        failed = s.registry.failures()
        named = {"failed_models": failed} if failed else {}
        try:
            for _, served in s.registry.listing():
                if served is None:
                    continue
                if not served.engine.healthy:
                    raise EngineUnavailableError(f"the engine of {served.name!r} stopped after an internal error: "
                                                 f"{served.engine.failure}")
                served.engine.check_available()
        except EngineUnavailableError as e:
            return JSONResponse({"status": "unavailable", "reason": str(e)} | named, status_code=503)
        return JSONResponse({"status": "ok"} | named)

    @r.get("/metrics")
    async def metrics(request: Request) -> Response:
        s.authorize(request)
        texts = {served.name: served.engine.metrics.render().decode() for _, served in s.registry.listing()
                 if served is not None}
        return Response(labelled(texts, "model_name"), media_type=CONTENT_TYPE_LATEST)

    def entry(spec, served) -> dict:
        """A chat model as /v1/models lists it: where it stands (status, and the reason where it failed), its family,
        quantization and context length."""
        about = dict(s.registry.about(spec.id) or UNKNOWN)
        if served is not None:
            about["context_length"] = served.context
        elif s.registry.ctx_size and about["context_length"] is not None:
            about["context_length"] = min(about["context_length"], s.registry.ctx_size)
        status, why = s.registry.state(spec.id)
        return {"id": spec.id, "object": "model", "created": s.created, "owned_by": "forwardpass",
                "max_model_len": about["context_length"], "loaded": served is not None, "status": status,
                "kind": "chat"} | about | ({"error": why} if why else {})

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
            raise APIError(404, f"model {quoted(model_id)} does not exist; this server serves {served}",
                           "model_not_found")
        return found[0]

    return r
