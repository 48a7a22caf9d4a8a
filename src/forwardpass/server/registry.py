"""The chat models one server serves, by the id requests name (catalog.py): each loaded on its first request, and the
least recently used idle one unloaded first when loading another would pass --max-models or the memory budget. One
thread — the one `run` is called in, where the first model was loaded — loads every model and steps every loaded
engine in turn, so that their kernels share one team of threads instead of competing for the same cores.

A request holds its model from the moment its body names it to its response's last byte (a lease, released by
`Leases` below): a model is unloaded only when no request holds it, none waits for it and its engine has no work.

Where each model stands, and why one that failed to load did (refused until a request's load succeeds), is the
roster's (roster.py)."""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future

from fastapi import Request

from ..catalog import ModelSpec
from ..errors import ForwardpassError
from ..weights import return_freed_memory
from .errors import APIError
from .roster import Roster, unavailable
from .to_engine import Served

log = logging.getLogger("forwardpass.server")


def least_recently_used(loaded: dict[str, Served], waiting: dict[str, int], need: int, max_models: int | None,
                        max_bytes: int | None) -> list[str] | None:
    """The models to unload, least recently used first (`loaded` is in that order), so that one more, of `need` bytes,
    fits: fewer than `max_models` then loaded, and `need` within `max_bytes` beside the rest (or nothing else loaded).
    Only idle ones go: none a request holds or waits for, none whose engine has work. None if the busy ones leave no
    room now."""
    kept = list(loaded.items())
    idle = [i for i, s in kept if s.leases == 0 and not waiting.get(i) and not s.engine.has_work()]
    unload: list[str] = []
    while True:
        count, used = len(kept) - len(unload), sum(s.nbytes for i, s in kept if i not in unload)
        if (max_models is None or count < max_models) and (max_bytes is None or used + need <= max_bytes or count == 0):
            return unload
        if len(unload) == len(idle):
            return None
        unload.append(idle[len(unload)])


class Registry(Roster):
    """The roster's models loaded for the requests that name them, unloaded least recently used, stepped by one
    thread."""

    def __init__(self, specs: list[ModelSpec], open_model: Callable[[ModelSpec, threading.Event], Served] | None = None,
                 estimate: Callable[[ModelSpec], int] = lambda spec: 0, max_models: int | None = None,
                 max_bytes: int | None = None, wait: float = 600.0, say: Callable[[str], None] = lambda line: None,
                 ctx_size: int = 0):
        super().__init__(specs, ctx_size)
        self.open_model, self.estimate = open_model, estimate
        self.max_models, self.max_bytes, self.wait, self.say = max_models, max_bytes, wait, say
        self.wake = threading.Event()  # set by every engine's arrivals and by a load asked for
        self.unloads = 0
        self.draining = False

    @classmethod
    def of(cls, served: Served) -> Registry:
        """A registry of one model, already loaded, never unloaded."""
        registry = cls([ModelSpec(served.name, served.engine.loaded.source)])
        registry.loaded[served.name] = served
        return registry

    # ---- the event loop's side ---------------------------------------------------------------------
    async def get(self, model: str | None, request: Request) -> Served:
        """The model `model` names (None: the first), loaded if need be, leased to `request` until it is answered."""
        model = self.named(model)
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
        self.put(model, served)
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
        self.put(model, served)
        weights, kv = served.weight_bytes / 2**20, served.kv_bytes / 2**20
        self.say(f"loaded {model} for a request in {time.perf_counter() - start:.1f} s: {weights:.0f} MiB of "
                 f"weights, a KV pool of {kv:.0f} MiB")
        self._settle(model, future, None)

    def _fail(self, model: str, future: Future, e: Exception) -> None:
        why = self.fail(model, e)
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
            unload = least_recently_used(self.loaded, self.waiting, need, self.max_models, self.max_bytes)
            if unload is None:
                return False
            for i in unload:
                del self.loaded[i]
        if unload:  # nothing refers to their engines now: their memory goes back to the system
            self.say(f"unloaded {', '.join(unload)} (least recently used) to load {model}")
            self.unloads += len(unload)
            gc.collect()
            return_freed_memory()
        return True


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
