"""The OpenAI-compatible HTTP API over the engine (FastAPI + uvicorn)."""

from .app import ServerConfig, build_app
from .serve import make_server

__all__ = ["ServerConfig", "build_app", "make_server"]
