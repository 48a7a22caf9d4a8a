"""Serving many sequences at once: a paged KV cache, a continuous-batching scheduler, and the engine."""

from .engine import Engine, EngineConfig
from .paged import BlockPool
from .sequence import RequestOutput

__all__ = ["BlockPool", "Engine", "EngineConfig", "RequestOutput"]
