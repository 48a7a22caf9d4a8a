"""The chat models one server serves, by id, and where each stands: loaded, being loaded for requests that wait on it,
failed with the reason, or unloaded; and what each one's file says of itself, for the listing (status.py). The
registry (registry.py) decides what to load and unload; this is the record it keeps, read by the routes.

A model that cannot be loaded (its file truncated, not a model, its memory not there) is kept with the reason, listed as
failed, and each request for it is refused with that reason, a 503; every new request tries loading it again, so a file
put right is served without a restart."""

from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import Future

from ..catalog import ModelSpec, describe
from ..errors import ForwardpassError
from .errors import APIError
from .quoting import quoted
from .to_engine import Served

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


class Roster:
    """Every model's standing, under one lock: the event loop (requests) and the engine thread (loads) both change
    it."""

    def __init__(self, specs: list[ModelSpec], ctx_size: int = 0):
        self.specs = {s.id: s for s in specs}
        self.first = specs[0].id
        self.ctx_size = ctx_size  # each model's context once loaded, where shorter than its own (0: its own)
        self.loaded: OrderedDict[str, Served] = OrderedDict()  # least recently used first
        self.loading: dict[str, Future] = {}
        self.failed: dict[str, str] = {}  # id → why it cannot be served: its last load failed, or its file is no model
        self.described: dict[str, dict] = {}  # id → what its file says of itself (read once)
        self.waiting: dict[str, int] = {}  # id → requests waiting for its load
        self._lock = threading.Lock()

    def named(self, model: str | None) -> str:
        """The id `model` names (None: the first), refused with a 404 where this server does not serve it."""
        model = self.first if model is None else model
        if model not in self.specs:
            served = ", ".join(repr(i) for i in self.specs)
            raise APIError(404, f"model {quoted(model)} does not exist; this server serves {served}",
                           "model_not_found", "model")
        return model

    def put(self, model: str, served: Served) -> None:
        """`model` loaded: served from now on, its last failure forgotten."""
        with self._lock:
            self.loaded[model] = served
            self.failed.pop(model, None)

    def fail(self, model: str, e: BaseException) -> str:
        """`model` could not be loaded, for `e`: kept as its failure, and why returned (`reason`)."""
        why = reason(e)
        with self._lock:
            self.failed[model] = why
        return why

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
