"""The explorer's server: the page (static files, no network needed) and one JSON endpoint per widget."""

from __future__ import annotations

import logging
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel

from ..errors import ForwardpassError
from ..pipeline import Pipeline
from . import compute

STATIC = Path(__file__).parent / "static"
log = logging.getLogger("forwardpass.explorer")


class Prompt(BaseModel):
    prompt: str = "the cat sat on the"


class Sampling(Prompt):
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    min_p: float = 0.0
    seed: int = 0


class Steps(Prompt):
    steps: int = 8
    capacity: int = 8
    sample_at: int | None = None
    seed: int = 0
    mode: str = "add"
    layer: int = 0
    head: int = 0
    token: int = 0


def build_explorer(fp: Pipeline) -> FastAPI:
    app = FastAPI(title="forwardpass explorer", docs_url=None, redoc_url=None)
    model_lock = compute.model_lock(fp)

    @app.exception_handler(ForwardpassError)
    async def bad_input(_: Request, e: ForwardpassError) -> JSONResponse:
        return JSONResponse({"error": str(e)}, status_code=400)

    @app.exception_handler(Exception)
    async def internal_error(_: Request, e: Exception) -> JSONResponse:
        log.error("internal error", exc_info=e)
        return JSONResponse({"error": f"internal error: {type(e).__name__}: {e}"}, status_code=500)

    @app.get("/")
    async def index() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    get = {  # pure arithmetic: query parameters in, numbers out
        "/api/depth": lambda n=12: compute.depth(int(n)),
        "/api/split": lambda d=768: compute.split(int(d)),
        "/api/work": lambda prompt=5, new=12: compute.work(int(prompt), int(new)),
        "/api/cache-memory": lambda context=2048: compute.cache_memory(int(context)),
        "/api/concurrency": lambda sequences=1, context=2048: compute.concurrency(int(sequences), int(context)),
        "/api/intensity": lambda prompt=16: compute.intensity(int(prompt)),
        "/api/param-split": lambda: compute.param_split(),
        "/api/model": lambda: compute.model_info(fp),
        "/api/loop-cost": lambda prompt=5, new=12: compute.loop_cost(fp, int(prompt), int(new)),
    }
    for path, fn in get.items():
        async def route(request: Request, fn=fn):
            try:
                return fn(**dict(request.query_params))
            except (TypeError, ValueError) as e:
                raise ForwardpassError(f"bad query parameters: {e}") from None
        app.add_api_route(path, route, methods=["GET"])

    @app.post("/api/lookup")
    def lookup(body: Prompt):
        with model_lock:
            return compute.lookup(fp, body.prompt)

    @app.post("/api/residual")
    def residual(body: Steps):
        with model_lock:
            return compute.residual(fp, body.prompt, body.mode)

    @app.post("/api/block-steps")
    def block_steps(body: Prompt):
        with model_lock:
            return compute.block_steps(fp, body.prompt)

    @app.post("/api/reach")
    def reach(body: Steps):
        with model_lock:
            return compute.reach(fp, body.prompt, body.layer, body.head, body.token)

    @app.post("/api/attention")
    def attention(body: Steps):
        with model_lock:
            return compute.attention_steps(fp, body.prompt, body.layer, body.head, body.token)

    @app.post("/api/sampling")
    def sampling(body: Sampling):
        with model_lock:
            return compute.sampling_view(fp, body.prompt, body.temperature, body.top_k, body.top_p, body.min_p)

    @app.post("/api/sample")
    def sample(body: Sampling):
        with model_lock:
            return compute.sample(fp, body.prompt, body.temperature, body.top_k, body.top_p, body.seed)

    @app.post("/api/greedy-loop")
    def greedy_loop(body: Steps):
        with model_lock:
            return compute.greedy_loop(fp, body.prompt, body.steps, body.sample_at, body.seed)

    @app.post("/api/autoregress")
    def autoregress(body: Steps):
        with model_lock:
            return compute.autoregress(fp, body.prompt, body.steps)

    @app.post("/api/ring-overflow")
    def ring_overflow(body: Steps):
        with model_lock:
            return compute.ring_overflow(fp, body.prompt, body.capacity, body.steps)

    @app.post("/api/position-bug")
    def position_bug(body: Steps):
        with model_lock:
            return compute.position_bug(fp, body.prompt, body.steps)

    return app
