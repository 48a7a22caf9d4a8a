"""The explorer's server: the page (static files, no network needed) and one JSON endpoint per widget."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel

from ..errors import ForwardpassError
from ..loaded import LoadedModel
from . import anatomy, answers, attention_map, compute, loop_runs, names
from .language import CHINESE_PROMPT, in_chinese, reads_chinese
from .toy import TOYS

STATIC = Path(__file__).parent / "static"
log = logging.getLogger("forwardpass.explorer")


class Prompt(BaseModel):
    prompt: str = "the cat sat on the"
    model: str | None = None  # one of /api/models; None: the one the explorer started with


class Story(BaseModel):
    """The toy example's sentence, in the page's example language (explorer/toy.py)."""
    toy: Literal["en", "zh"] = "en"
    model: str | None = None

    @property
    def prompt(self) -> str:
        return TOYS[self.toy].sentence


class Sampling(Prompt):
    toy: Literal["en", "zh"] = "en"  # the toy example's five words beside the real model's, in this language
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


class Models:
    """The models a page can switch between: the one the explorer started with, and others loaded on first use."""

    def __init__(self, first: LoadedModel, others: dict[str, Callable[[], LoadedModel]] | None = None):
        self.first = first.config.name
        self.loaded = {self.first: first}
        self.loaders = {k: v for k, v in (others or {}).items() if k != self.first}
        self.lock = threading.Lock()
        self.chinese: list[str | None] = []  # reader()'s answer, once known
        self.deciding = threading.Lock()

    def names(self) -> list[str]:
        return [self.first, *self.loaders]

    def display_names(self) -> dict[str, str]:
        """id → the name the page shows ("SmolLM2 135M Instruct · Q4_1")"""
        return names.unique({n: names.display_name(n, self.loaded.get(n)) for n in self.names()})

    def get(self, name: str | None) -> LoadedModel:
        name = name or self.first
        with self.lock:  # one load at a time; a failed one is said and may be tried again
            if name not in self.loaded:
                if name not in self.loaders:
                    raise compute.refuse("no_model", f"no model {name!r} here (this explorer has "
                                         f"{', '.join(self.names())})", model=name)
                self.loaded[name] = self.loaders[name]()
            return self.loaded[name]

    def reader(self) -> str | None:
        """The first model, in the menu's order, whose vocabulary reads Chinese (explorer/language.py), each loaded
        in turn to read it until one does; None where none here does (one that fails to load is passed over)."""
        with self.deciding:
            if not self.chinese:
                self.chinese.append(next((n for n in self.names() if self._reads_chinese(n)), None))
            return self.chinese[0]

    def _reads_chinese(self, name: str) -> bool:
        try:
            return reads_chinese(self.get(name))
        except Exception:  # noqa: BLE001 - not installed, or not loadable here: not the page's Chinese model
            log.warning("model %s could not be loaded to read its vocabulary", name, exc_info=True)
            return False


DEFAULT_PROMPT = "The cat sat on the mat, and the cat slept."  # the page's own (static/lib/state.js)
GREEDY_PROMPT = "I like to eat apples and bananas and"  # W-greedy-loop's own (static/sections/sampling.js)


def opening() -> list[tuple[str, BaseModel]]:
    """The slow answers a page asks for when it opens with the default prompt on the first model, in the order it
    shows them (tests/test_explorer_answers.py checks that the page asks exactly these)."""
    from .many_users import Body as Crowd
    return [("/api/candidates", Story()),  # the article's five words after its own sentence
            ("/api/ring-overflow", Steps(prompt="One two three four five", capacity=8, steps=10)),
            ("/api/loop-timing", Steps(prompt=DEFAULT_PROMPT, steps=12)),
            ("/api/greedy-loop", Steps(prompt=GREEDY_PROMPT, steps=64, seed=1)),  # folded, shown when opened
            ("/api/position-bug", Steps(prompt=DEFAULT_PROMPT, steps=12)),
            ("/api/many-users", Crowd()),
            ("/api/drafting", Steps(prompt=DEFAULT_PROMPT, steps=48))]  # both runs through the engine


def chinese_opening(model: str) -> list[tuple[str, BaseModel]]:
    """The Chinese page's slow answers, on `model`, the one that reads Chinese: the English page's on the Chinese
    example, then two of its prompt's that a large vocabulary makes slow (each step of the loop and the lens at every
    block unembed into the whole vocabulary: Gemma 3's 262,144 entries, five times SmolLM2's)."""
    return [*in_chinese(opening(), DEFAULT_PROMPT, model),
            ("/api/autoregress", Steps(prompt=CHINESE_PROMPT, steps=12, model=model)),
            ("/api/logit-lens", Prompt(prompt=CHINESE_PROMPT, model=model))]


def arithmetic(models: Models) -> dict[str, Callable[..., dict]]:
    """The GET endpoints: query parameters in, numbers out (formulas, and what a loaded model is)."""
    return {
        "/api/depth": lambda n=12: compute.depth(int(n)),
        "/api/split": lambda d=768: compute.split(int(d)),
        "/api/work": lambda prompt=5, new=12: compute.work(int(prompt), int(new)),
        "/api/cache-memory": lambda context=2048: compute.cache_memory(int(context)),
        "/api/concurrency": lambda sequences=1, context=2048: compute.concurrency(int(sequences), int(context)),
        "/api/intensity": lambda prompt=16: compute.intensity(int(prompt)),
        "/api/param-split": lambda: compute.param_split(),
        "/api/models": lambda: {"models": models.names(), "loaded": list(models.loaded),
                                "display_names": models.display_names()},
        "/api/chinese-reader": lambda: {"model": models.reader()},  # the Chinese page's model (None: none here)
        "/api/model": lambda model=None: compute.model_info(models.get(model)) | {
            "id": model or models.first, "display_name": models.display_names()[model or models.first]},
        "/api/loop-cost": lambda prompt=5, new=12, model=None: compute.loop_cost(models.get(model), int(prompt),
                                                                                  int(new)),
        "/api/norm-path": lambda model=None: anatomy.norm_path(models.get(model)),  # W-norm: the model's own
        "/api/kv-here": lambda model=None: loop_runs.kv_here(models.get(model)),  # W-cache-here: the model's own
    }


def computations(models: Models) -> dict[str, tuple[type[BaseModel], Callable[[BaseModel], dict]]]:
    """The POST endpoints that run a model: each one's body and what answers it, one computation at a time on a
    model."""
    from . import drafting, lens, many_users, mechanism, story

    def on_model(fn, body: Prompt, *args):
        """fn(model, prompt, *args) on the body's model, one computation at a time on it"""
        chosen = models.get(body.model)
        with compute.model_lock(chosen):
            return fn(chosen, body.prompt, *args)

    return {
        "/api/lookup": (Prompt, lambda b: on_model(compute.lookup, b)),
        "/api/stages": (Prompt, lambda b: on_model(anatomy.stages, b)),  # §00's picture: each stage's shape
        "/api/residual": (Steps, lambda b: on_model(compute.residual, b, b.mode)),
        "/api/block-steps": (Prompt, lambda b: on_model(compute.block_steps, b)),
        "/api/reach": (Steps, lambda b: on_model(compute.reach, b, b.layer, b.head, b.token)),
        "/api/attention-map": (Steps, lambda b: on_model(attention_map.attention_map, b, b.layer)),
        "/api/attention": (Steps, lambda b: on_model(compute.attention_steps, b, b.layer, b.head, b.token)),
        "/api/mechanism": (Steps, lambda b: on_model(mechanism.mechanism, b, b.layer, b.head, b.token)),  # one block
        "/api/candidates": (Story, lambda b: on_model(story.candidates, b)),  # §03: the article's five words
        "/api/logit-lens": (Prompt, lambda b: on_model(lens.logit_lens, b)),
        "/api/sampling": (Sampling, lambda b: on_model(compute.sampling_view, b, b.temperature, b.top_k, b.top_p,
                                                       b.min_p, b.toy)),
        "/api/sample": (Sampling, lambda b: on_model(compute.sample, b, b.temperature, b.top_k, b.top_p, b.seed)),
        "/api/greedy-loop": (Steps, lambda b: on_model(compute.greedy_loop, b, b.steps, b.sample_at, b.seed)),
        "/api/autoregress": (Steps, lambda b: on_model(compute.autoregress, b, b.steps)),
        "/api/loop-timing": (Steps, lambda b: on_model(loop_runs.timed_loops, b, b.steps)),  # both loops timed
        "/api/ring-overflow": (Steps, lambda b: on_model(compute.ring_overflow, b, b.capacity, b.steps)),
        "/api/position-bug": (Steps, lambda b: on_model(compute.position_bug, b, b.steps)),
        "/api/many-users": (many_users.Body, many_users.runner(models)),  # §06: many users on one engine
        "/api/drafting": (Steps, lambda b: on_model(drafting.run, b, b.steps)),  # drafts checked, with and without
    }


def _errors(app: FastAPI) -> None:
    """A refusal is a 400 with the page's own sentence for it (code and params, in its language); anything else a
    500 that says what it was."""
    @app.exception_handler(ForwardpassError)
    async def bad_input(_: Request, e: ForwardpassError) -> JSONResponse:
        return JSONResponse({"error": str(e), "code": getattr(e, "code", None), "params": getattr(e, "params", {})},
                            status_code=400)

    @app.exception_handler(Exception)
    async def internal_error(_: Request, e: Exception) -> JSONResponse:
        log.error("internal error", exc_info=e)
        return JSONResponse({"error": f"internal error: {type(e).__name__}: {e}", "code": "internal",
                             "params": {"type": type(e).__name__}}, status_code=500)


def _get_route(fn: Callable[..., dict]):
    async def route(request: Request):
        try:
            return fn(**dict(request.query_params))
        except (TypeError, ValueError) as e:
            raise compute.refuse("bad_query", f"bad query parameters: {e}") from None
    return route


def _post_route(ask: Callable[..., dict], path: str, shape: type[BaseModel]):
    """POST `path`: its body as `shape`, answered through `ask` (?fresh=1: a new answer, not the remembered one)"""
    def route(body, request: Request):
        return ask(path, body, request.query_params.get("fresh") == "1")
    route.__annotations__ = {"body": shape, "request": Request}
    return route


def build_explorer(fp: LoadedModel, others: dict[str, Callable[[], LoadedModel]] | None = None,
                   prepare: bool = False) -> FastAPI:
    """The explorer on `fp`; `others` name models a page may switch to, each loaded when first asked for. `prepare`:
    compute the opening page's slow answers now, in the background (app.state.prepared: that thread), the English
    page's on `fp`, then the Chinese page's on the model that reads Chinese."""
    from . import machine_rates

    app = FastAPI(title="forwardpass explorer", docs_url=None, redoc_url=None)
    models, remembered = Models(fp, others), answers.Answers()
    _errors(app)
    app.add_api_route("/", lambda: FileResponse(STATIC / "index.html"), methods=["GET"])
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    for path, fn in arithmetic(models).items():
        app.add_api_route(path, _get_route(fn), methods=["GET"])
    measuring = machine_rates.register(app, models)  # §06: the model's cache beside its weights, this machine's rates
    posts = computations(models)

    def ask(path: str, body: BaseModel, fresh: bool = False) -> dict:
        """the answer to `body` at `path`, remembered (answers.py) under the model it names (None: the first)"""
        asked = body.model_dump() | {"model": body.model or models.first}
        return remembered.get(path, asked, lambda: posts[path][1](body), fresh)

    for path, (shape, _) in posts.items():
        app.add_api_route(path, _post_route(ask, path, shape), methods=["POST"])
    app.state.answers = remembered
    # after this machine's rates are measured (machine_rates.register started that): neither slows the other's timing
    stop = threading.Event()

    def chinese_page() -> None:
        """the Chinese page's opening answers, on the model that reads Chinese (loaded now: none where none does)"""
        reader = models.reader()
        for p, b in chinese_opening(reader) if reader else []:
            if stop.is_set():
                return
            ask(p, b)

    asks = [machine_rates.measure, *(lambda p=p, b=b: ask(p, b) for p, b in opening()), chinese_page]
    app.state.prepared = answers.prepare(asks, stop) if prepare else None

    def finish() -> None:
        """The background work ends before the server does (a thread inside PyTorch as the process exits aborts it):
        nothing more is prepared, and what is under way finishes."""
        stop.set()
        for thread in (measuring, app.state.prepared):
            if thread is not None:
                thread.join()

    app.router.on_shutdown.append(finish)
    return app


@contextlib.contextmanager
def served(app: FastAPI):
    """`app` served by uvicorn in a thread of this process on a free loopback port (the tests' and the benchmark's
    explorer): its address, until the block ends."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the explorer's server did not start")
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
