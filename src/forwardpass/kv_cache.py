"""The KV cache (seed §05): a fixed-capacity, append-only store of every layer's keys and values.

One contiguous buffer per sequence row. After t tokens a row holds exactly t (K, V) pairs per layer;
a new token's position is the row's current length; writing past capacity raises instead of wrapping.
"""

from __future__ import annotations

import torch

from .config import ModelConfig
from .errors import ContextLengthError, InvariantError


class KVCache:
    """Keys and values for `batch` sequences, `capacity` positions each, all layers.

    k, v: (n_layers, batch, n_kv_heads, capacity, head_dim). `lengths[b]` counts the pairs row b holds.
    """

    def __init__(self, config: ModelConfig, batch: int, capacity: int, dtype: torch.dtype = torch.float32,
                 device: torch.device | str = "cpu", checked: bool = False):
        if batch <= 0 or capacity <= 0:
            raise ContextLengthError(f"a KV cache needs batch > 0 and capacity > 0, got {batch} and {capacity}")
        shape = (config.n_layers, batch, config.kv_heads, capacity, config.head_dim)
        self.k = torch.empty(shape, dtype=dtype, device=device)
        self.v = torch.empty(shape, dtype=dtype, device=device)
        self.capacity = capacity
        self.lengths = [0] * batch  # host-side: no device sync to learn where to write
        self.checked = checked
        self._pending: list[int] | None = None

    @property
    def batch(self) -> int:
        return len(self.lengths)

    def nbytes(self, tokens: int | None = None) -> int:
        """Bytes of K and V for `tokens` positions of every row (default: the full capacity)."""
        n_layers, batch, n_kv_heads, capacity, head_dim = self.k.shape
        per_position = 2 * n_layers * n_kv_heads * head_dim * self.k.element_size()
        return per_position * batch * (capacity if tokens is None else tokens)

    def begin(self, n_tokens: list[int], width: int) -> torch.Tensor:
        """Reserve `width` new slots per row (row b keeps n_tokens[b] of them); return positions (batch, width).

        Raises ContextLengthError before anything is written if a row would pass capacity.
        """
        if len(n_tokens) != self.batch:
            raise ContextLengthError(f"input has {len(n_tokens)} rows but the cache holds {self.batch}")
        for b, length in enumerate(self.lengths):
            if length + width > self.capacity:
                raise ContextLengthError(
                    f"sequence {b} would hold {length + width} tokens but the cache has room for "
                    f"{self.capacity} (the context length); it is never overwritten silently"
                )
        self._pending = list(n_tokens)
        start = torch.tensor(self.lengths, device=self.k.device)
        return start[:, None] + torch.arange(width, device=self.k.device)  # (batch, width)

    def write(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Append this step's k, v (batch, n_kv_heads, width, head_dim) at each row's length.

        Returns every layer-`layer` pair up to the longest row: (batch, n_kv_heads, max_len + width, head_dim).
        """
        width = k.shape[2]
        if len(set(self.lengths)) == 1:  # all rows aligned: one slice
            start = self.lengths[0]
            self.k[layer, :, :, start:start + width] = k
            self.v[layer, :, :, start:start + width] = v
        else:
            for b, start in enumerate(self.lengths):
                self.k[layer, b, :, start:start + width] = k[b]
                self.v[layer, b, :, start:start + width] = v[b]
        end = max(self.lengths) + width
        return self.k[layer, :, :, :end], self.v[layer, :, :, :end]

    def commit(self) -> None:
        """After every layer has written: each row now holds n_tokens[b] more pairs."""
        if self._pending is None:
            raise InvariantError("KV cache commit without a matching begin")
        self.lengths = [length + n for length, n in zip(self.lengths, self._pending, strict=True)]
        self._pending = None
