"""Serving many sequences at once: a paged KV cache, a continuous-batching scheduler, and the engine."""

from .engine import Engine, EngineConfig, RequestOutput
from .paged import BlockPool

__all__ = ["BlockPool", "Engine", "EngineConfig", "RequestOutput"]
