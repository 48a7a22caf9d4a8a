"""The OpenAI-compatible HTTP API over the engine (FastAPI + uvicorn).

The app and its server are imported on first use: what the replicas' ingress takes from here (auth, body, errors)
needs neither PyTorch nor the engine."""

import importlib

LAZY = {"ServerConfig": "app", "build_app": "app", "make_server": "serve"}


def __getattr__(name: str):
    if name not in LAZY:
        raise AttributeError(f"module 'forwardpass.server' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{LAZY[name]}", __name__), name)


__all__ = ["ServerConfig", "build_app", "make_server"]
