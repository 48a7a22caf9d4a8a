"""An engine hosted in a Ray worker (a Serve replica, a Ray Data actor): the model loaded, and the engine's loop run,
in one thread of its own (Engine.run says why), with the single server's app over it."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from ..errors import ForwardpassError


@dataclass
class ReplicaSpec:
    """What every replica loads and how it serves: the same as `forwardpass serve`'s options."""
    model: str
    model_name: str
    storage: str | None = None
    kv_cache_dtype: str = "auto"
    ctx_size: int = 0  # 0: the model's trained context
    activations: str = "exact"  # how integer products quantize their inputs (config.ACTIVATIONS)
    device: str | None = "cpu"
    engine: dict = field(default_factory=dict)  # EngineConfig's fields
    api_key: str | tuple[str, ...] | None = None
    max_body_bytes: int = 1 << 20
    default_max_tokens: int = 1024
    constraint_timeout: float = 10.0  # seconds a request's constraint may take to compile
    sampling_flags: dict = field(default_factory=dict)  # serve's sampling flags (None: not given; server_defaults.py)
    embedding_model: str | None = None
    grace: float = 5.0
    board: str = "forwardpass-board"


class HostedEngine:
    """Returns once the model is loaded and the loop runs; raises ForwardpassError if loading failed."""

    def __init__(self, spec: ReplicaSpec):
        self.spec, self.engine, self.app, self.failed = spec, None, None, None
        self.closing = threading.Event()
        loaded = threading.Event()
        threading.Thread(target=self._main, args=(loaded,), name="forwardpass-engine", daemon=True).start()
        loaded.wait()
        if self.failed is not None:
            raise ForwardpassError(f"the engine could not start: {type(self.failed).__name__}: {self.failed}")

    def _main(self, loaded: threading.Event) -> None:
        from ..engine import Engine, EngineConfig
        from ..loader import load
        from ..server import ServerConfig, build_app
        from ..server_defaults import server_sampling

        s = self.spec
        try:
            fp = load(s.model, device=s.device, storage=s.storage, kv_cache_dtype=s.kv_cache_dtype,
                      ctx_size=s.ctx_size, backend="auto", activations=s.activations)
            self.engine = Engine(fp, EngineConfig(**s.engine))
            embedder = None
            if s.embedding_model is not None:
                from ..embeddings import load_embedder
                embedder = load_embedder(None if s.embedding_model == "default" else s.embedding_model, s.device)
            sampling = server_sampling(s.sampling_flags, fp.metadata.get("sampling", {}))
            self.app = build_app(self.engine, ServerConfig(s.model_name, s.api_key, s.max_body_bytes,
                                                           s.default_max_tokens, s.constraint_timeout,
                                                           sampling=sampling), embedder)
        except BaseException as e:  # noqa: BLE001 — said by the constructor
            self.failed = e
            return
        finally:
            loaded.set()
        self.engine.run(until=self.closing.is_set)

    def close(self) -> None:
        """Admit nothing more, let requests in flight finish within the grace period, then end the loop."""
        self.engine.drain(self.spec.grace)
        deadline = time.monotonic() + self.spec.grace + 1
        while self.engine.has_work() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.closing.set()
