"""The prompt cache: full KV blocks kept on disk across restarts (`--prompt-cache DIR`), found again by the chain key
of their tokens under a namespace of everything that makes them valid, and read back instead of computed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .blocks import payload_bytes
from .namespace import namespace
from .prefix import DiskPrefix
from .stats import PromptCacheStats
from .store import DiskStore

if TYPE_CHECKING:
    from ...loaded import LoadedModel
    from ..paged import BlockPool

DEFAULT_BYTES = 4 * 2**30

__all__ = ["DEFAULT_BYTES", "DiskPrefix", "DiskStore", "PromptCacheStats", "open_prompt_cache"]


def open_prompt_cache(loaded: LoadedModel, pool: BlockPool, folder: str, limit: int) -> DiskPrefix:
    """The prompt cache in `folder` (made if missing), at most `limit` bytes, for an engine over `loaded` and `pool`."""
    return DiskPrefix(pool, DiskStore(folder, limit, namespace(loaded, pool.block_size), payload_bytes(pool)))
