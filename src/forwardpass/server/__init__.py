"""The OpenAI-compatible HTTP API over the engine (FastAPI + uvicorn)."""

from .app import ServerConfig, build_app

__all__ = ["ServerConfig", "build_app"]
