"""The OpenAI-compatible HTTP API over the engine (FastAPI + uvicorn).

The app and its server are imported on first use: what the replicas' ingress takes from here (auth, body, errors)
needs neither PyTorch nor the engine."""

from ..lazy_imports import lazy_names

LAZY = {"ServerConfig": "app", "build_app": "app", "make_server": "serve"}
__getattr__ = lazy_names(__name__, LAZY, globals())


__all__ = ["ServerConfig", "build_app", "make_server"]
