"""Starts the real server (uvicorn on a free loopback port) in a thread, for the tests."""

from __future__ import annotations

import contextlib
import socket
import threading
import time

import pytest

from forwardpass.engine import Engine, EngineConfig
from forwardpass.server import ServerConfig, build_app, make_server

MODEL = "smollm"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_server(loaded, engine_config: EngineConfig | None = None, api_key: str | None = None,
                   max_body_bytes: int = 1 << 20, default_max_tokens: int = 1024, embedder=None,
                   constraint_timeout: float = 10.0, sampling: dict | None = None):
    engine = Engine(loaded, engine_config or EngineConfig(kv_cache_bytes=256 * 2**20, checked=True))
    app = build_app(engine, ServerConfig(MODEL, api_key, max_body_bytes, default_max_tokens, constraint_timeout,
                                         sampling or {}), embedder)
    port = free_port()
    server = make_server(app, engine, "127.0.0.1", port)
    thread = threading.Thread(target=server.run, daemon=True)
    engine.start()
    thread.start()
    deadline = time.time() + 30
    while not server.started:
        if time.time() > deadline:
            raise RuntimeError("server did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}", engine
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        engine.stop()


def openai_fixtures():
    """Module-scoped fixtures for a test module to take in as `server, client = openai_fixtures()`: `server`, the URL of
    a server on SmolLM2 as `serve` starts it; `client`, the official openai client on it (no retries)."""

    @pytest.fixture(scope="module")
    def server(smollm):
        with running_server(smollm) as (url, _):
            yield url

    @pytest.fixture(scope="module")
    def client(server):
        import openai
        return openai.OpenAI(base_url=server + "/v1", api_key="none", max_retries=0, timeout=300)

    return server, client
