"""The chat models one server serves, by the id requests name (catalog.py): each loaded on its first request, and the
least recently used idle one unloaded first when loading another would pass --max-models or the memory budget. One
thread — the one `run` is called in, where the first model was loaded — loads every model and steps every loaded
engine in turn, so that their kernels share one team of threads instead of competing for the same cores.

A request holds its model from the moment its body names it to its response's last byte (a lease, released by
`Leases` below): a model is unloaded only when no request holds it, none waits for it and its engine has no work.

A model that cannot be loaded (its file truncated, not a model, its memory not there) is kept with the reason, listed as
failed, and each request for it is refused with that reason, a 503; every new request tries loading it again, so a file
put right is served without a restart."""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future

from fastapi import Request

from ..catalog import ModelSpec, describe
from ..errors import ForwardpassError
from ..weights import return_freed_memory
from .errors import APIError
from .quoting import quoted
from .served import Served

log = logging.getLogger("forwardpass.server")
REASON_CHARS = 300  # a failure's reason, as refusals and the listing quote it, is cut past this


def reason(e: BaseException) -> str:
    """Why a model could not be loaded, in one line: the library's own message (a file's fault, or the system's), or
    the error's type and text."""
    text = str(e) if isinstance(e, (ForwardpassError, OSError)) else f"{type(e).__name__}: {e}"
    text = " ".join(text.split()) or type(e).__name__
    return text if len(text) <= REASON_CHARS else text[:REASON_CHARS - 1] + "…"


def unavailable(model: str, why: str) -> APIError:
    """The refusal of a request for a model that could not be loaded. The clients' own retries are told off
    (x-should-retry, which OpenAI's and Anthropic's SDKs obey): at once, they would fail the same way."""
    return APIError(503, f"model {model!r} is unavailable: loading it failed: {why}; the next request for it tries "
                         f"loading it again", "model_load_failed", headers={"x-should-retry": "false"})


class Registry:
    def __init__(self, specs: list[ModelSpec], open_model: Callable[[ModelSpec, threading.Event], Served] | None = None,
                 estimate: Callable[[ModelSpec], int] = lambda spec: 0, max_models: int | None = None,
                 max_bytes: int | None = None, wait: float = 600.0, say: Callable[[str], None] = lambda line: None,
                 ctx_size: int = 0):
        self.specs = {s.id: s for s in specs}
        self.first = specs[0].id
        self.open_model, self.estimate = open_model, estimate
        self.max_models, self.max_bytes, self.wait, self.say = max_models, max_bytes, wait, say
        self.ctx_size = ctx_size  # each model's context once loaded, where shorter than its own (0: its own)
        self.wake = threading.Event()  # set by every engine's arrivals and by a load asked for
        self.loaded: OrderedDict[str, Served] = OrderedDict()  # least recently used first
        self.loading: dict[str, Future] = {}
        self.failed: dict[str, str] = {}  # id → why it cannot be served: its last load failed, or its file is no model
        self.described: dict[str, dict] = {}  # id → what its file says of itself (read once)
        self.waiting: dict[str, int] = {}  # id → requests waiting for its load
        self.unloads = 0
        self.draining = False
        self._lock = threading.Lock()

    @classmethod
    def of(cls, served: Served) -> Registry:
        """A registry of one model, already loaded, never unloaded."""
        registry = cls([ModelSpec(served.name, served.engine.pipeline.source)])
        registry.loaded[served.name] = served
        return registry

    # ---- the event loop's side ---------------------------------------------------------------------
    async def get(self, model: str | None, request: Request) -> Served:
        """The model `model` names (None: the first), loaded if need be, leased to `request` until it is answered."""
        model = self.first if model is None else model
        if model not in self.specs:
            served = ", ".join(repr(i) for i in self.specs)
            raise APIError(404, f"model {quoted(model)} does not exist; this server serves {served}",
                           "model_not_found", "model")
        while True:
            with self._lock:
                served = self.loaded.get(model)
                if served is not None:
                    self.loaded.move_to_end(model)
                    served.leases += 1
                    request.state.leases = [*getattr(request.state, "leases", ()), served]
                    return served
                if self.draining:
                    raise APIError(503, "the server is shutting down", "server_unavailable")
                future = self.loading.get(model)
                if future is None:
                    future = self.loading[model] = Future()
                    self.wake.set()
                self.waiting[model] = self.waiting.get(model, 0) + 1
            try:
                await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(future)), self.wait)
            except asyncio.TimeoutError:
                raise APIError(503, f"model {model!r} could not be loaded within {self.wait:g} s: every loaded model "
                                    f"is answering requests", "model_busy") from None
            finally:
                with self._lock:
                    self.waiting[model] -= 1

    @staticmethod
    def release(served: Served) -> None:
        served.leases -= 1

    def listing(self) -> list[tuple[ModelSpec, Served | None]]:
        with self._lock:
            return [(spec, self.loaded.get(i)) for i, spec in self.specs.items()]

    def about(self, model: str) -> dict | None:
        """What `model`'s file says of itself (catalog.describe: family, quantization, context length), read once;
        None where it cannot be read. Then, while the model is not loaded, that is why it cannot be (a load would fail
        the same way): it is kept as its failure, and read again next time."""
        if model in self.described:
            return self.described[model]
        try:
            self.described[model] = describe(self.specs[model].path)
        except (ForwardpassError, OSError) as e:  # and a model made in memory (tests): no file to ask
            with self._lock:
                if model not in self.loaded:
                    self.failed[model] = reason(e)
            return None
        return self.described[model]

    def state(self, model: str) -> tuple[str, str | None]:
        """Where `model` stands — "loaded", "loading" (a request waits for it), "failed" (with the reason: its last
        load failed, or its file cannot be read) or "unloaded" — and the reason where it failed."""
        with self._lock:
            if model in self.loaded:
                return "loaded", None
            if model in self.loading:
                return "loading", None
            if model in self.failed:
                return "failed", self.failed[model]
            return "unloaded", None

    def failures(self) -> list[str]:
        """The models that failed (state), in the order they are served."""
        with self._lock:
            return [i for i in self.specs if i in self.failed and i not in self.loaded and i not in self.loading]

    def drain(self, grace: float) -> None:
        """Shut down gently: no more loads, every engine drained (Engine.drain)."""
        with self._lock:
            self.draining = True
            engines = [s.engine for s in self.loaded.values()]
        for engine in engines:
            engine.drain(grace)
        self.wake.set()

    # ---- the engine thread's side ------------------------------------------------------------------
    def load_now(self, model: str, progress: bool = False) -> Served:
        """Load `model` in the calling thread (the first, before the server starts), and read what the others' files
        say of them: one that cannot be read is said now, and listed as failed."""
        served = self.open_model(self.specs[model], self.wake, progress)
        with self._lock:
            self.loaded[model] = served
        for other in self.specs:
            if other != model and self.about(other) is None:
                self.say(f"cannot load {other}: {self.failed[other]}; requests for it are refused, each trying again")
        return served

    def run(self, until: Callable[[], bool] = lambda: False) -> None:
        """Load what requests ask for and step every loaded engine in turn, until `until()`."""
        while not until():
            self._load_asked()
            if not self._step_each():
                self.wake.wait(timeout=0.5)
                self.wake.clear()

    def _step_each(self) -> bool:
        """One step of every loaded engine with work; False if none had any."""
        with self._lock:
            engines = [s.engine for s in self.loaded.values()]
        worked = False
        for engine in engines:
            worked = engine.tick() or worked
        return worked

    def _load_asked(self) -> None:
        for model, future in list(self.loading.items()):
            if not self.waiting.get(model):  # every request that asked gave up waiting: nothing to load it for
                self._settle(model, future, APIError(503, f"model {model!r} is no longer asked for", "model_busy"))
            elif self.draining:
                self._settle(model, future, APIError(503, "the server is shutting down", "server_unavailable"))
            else:
                self._load(model, future)

    def _load(self, model: str, future: Future) -> None:
        """Load `model` for the requests waiting on `future` once there is room for it (until then it stays asked
        for); a load that fails is kept as the model's failure and refused to them."""
        try:
            if not self._make_room(model):
                return
            start = time.perf_counter()
            served = self.open_model(self.specs[model], self.wake)
        except Exception as e:  # noqa: BLE001 — the operator's file, said to the clients that asked for it
            self._fail(model, future, e)
            return
        with self._lock:
            self.loaded[model] = served
            self.failed.pop(model, None)
        weights, kv = served.weight_bytes / 2**20, served.kv_bytes / 2**20
        self.say(f"loaded {model} for a request in {time.perf_counter() - start:.1f} s: {weights:.0f} MiB of "
                 f"weights, a KV pool of {kv:.0f} MiB")
        self._settle(model, future, None)

    def _fail(self, model: str, future: Future, e: Exception) -> None:
        why = reason(e)
        with self._lock:
            self.failed[model] = why
        if not isinstance(e, (ForwardpassError, OSError)):  # not the file's fault: where it was, for the operator
            log.error("loading %s failed", model, exc_info=e)
        self.say(f"could not load {model} for a request: {why}")
        self._settle(model, future, unavailable(model, why))

    def _settle(self, model: str, future: Future, error: Exception | None) -> None:
        with self._lock:
            del self.loading[model]
        future.set_exception(error) if error is not None else future.set_result(None)

    def _make_room(self, model: str) -> bool:
        """Unload least recently used idle models until `model` fits both limits; False (nothing unloaded) if the
        models that are busy leave no room now."""
        need = self.estimate(self.specs[model])
        with self._lock:
            kept = list(self.loaded.items())
            idle = [i for i, s in kept if s.leases == 0 and not self.waiting.get(i) and not s.engine.has_work()]
            unload: list[str] = []
            while not self._fits(len(kept) - len(unload), sum(s.nbytes for i, s in kept if i not in unload), need):
                if len(unload) == len(idle):
                    return False
                unload.append(idle[len(unload)])
            for i in unload:
                del self.loaded[i]
        if unload:  # nothing refers to their engines now: their memory goes back to the system
            self.say(f"unloaded {', '.join(unload)} (least recently used) to load {model}")
            self.unloads += len(unload)
            gc.collect()
            return_freed_memory()
        return True

    def _fits(self, count: int, used: int, need: int) -> bool:
        return (self.max_models is None or count < self.max_models) and \
            (self.max_bytes is None or used + need <= self.max_bytes or count == 0)


class Leases:
    """ASGI middleware: a request's models are released once its response is over (a stream's last event sent, or the
    client gone)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        try:
            await self.app(scope, receive, send)
        finally:
            for served in scope.get("state", {}).get("leases", ()):
                Registry.release(served)
