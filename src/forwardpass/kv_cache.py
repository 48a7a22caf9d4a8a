"""The KV cache (seed §05): a fixed-capacity, append-only store of every layer's keys and values.

One contiguous buffer per sequence row. After t tokens a row holds exactly t (K, V) pairs per layer;
a new token's position is the row's current length; writing past capacity raises instead of wrapping,
unless the caller chose the explicit "sliding" policy (drop the oldest pairs, positions keep counting).
"""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

import torch

from .config import ModelConfig
from .errors import ContextLengthError, InvariantError

Policy = Literal["error", "sliding"]


@runtime_checkable
class Cache(Protocol):
    """What the model asks of a KV cache, for one step of `batch` rows: the contiguous KVCache here and the engine's
    paged view (engine/paged.py PagedBatch) both give it, with the seed's invariants: after t tokens a row holds t
    pairs per layer, a new token's position is its row's length, appending never rewrites a pair a row holds
    (checked at every write in checked mode), and a full cache raises unless its policy says otherwise."""

    lengths: list[int]  # pairs each row holds
    policy: Policy
    checked: bool

    @property
    def batch(self) -> int: ...

    def next_position(self, row: int = 0) -> int:
        """The position row's next token takes."""

    def begin(self, n_tokens: list[int], width: int) -> torch.Tensor:
        """Room for `width` new slots per row, n_tokens[b] of them real; their positions (batch, width)."""

    def write(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Append k, v (batch, n_kv_heads, width, head_dim); every pair so far (batch, n_kv_heads, L, head_dim)."""

    def commit(self) -> None:
        """After every layer has written: each row holds its new pairs."""


class KVCache:
    """Keys and values for `batch` sequences, `capacity` positions each, all layers.

    k, v: (n_layers, batch, n_kv_heads, capacity, head_dim). Row b's slot j holds the pair of absolute
    position start[b] + j; lengths[b] counts the pairs it holds (start stays 0 unless the policy slides).
    """

    def __init__(self, config: ModelConfig, batch: int, capacity: int, dtype: torch.dtype = torch.float32,
                 device: torch.device | str = "cpu", checked: bool = False, policy: Policy = "error"):
        if batch <= 0 or capacity <= 0:
            raise ContextLengthError(f"a KV cache needs batch > 0 and capacity > 0, got {batch} and {capacity}")
        if policy not in ("error", "sliding"):
            raise ContextLengthError(f"unknown cache policy {policy!r}; choose 'error' or 'sliding'")
        if policy == "sliding" and config.positions == "learned":
            raise ContextLengthError("a sliding cache needs RoPE: learned positions end at the context length")
        shape = (config.n_layers, batch, config.kv_heads, capacity, config.head_dim)
        self.k = torch.empty(shape, dtype=dtype, device=device)
        self.v = torch.empty(shape, dtype=dtype, device=device)
        self.capacity, self.policy, self.checked = capacity, policy, checked
        self.lengths = [0] * batch  # host-side: no device sync to learn where to write
        self.start = [0] * batch  # absolute position of slot 0
        self._pending: list[int] | None = None

    @property
    def batch(self) -> int:
        return len(self.lengths)

    def nbytes(self, tokens: int | None = None) -> int:
        """Bytes of K and V for `tokens` positions of every row (default: the full capacity):
        2 × n_layers × n_kv_heads × head_dim × tokens × bytes per element, per row."""
        n_layers, batch, n_kv_heads, capacity, head_dim = self.k.shape
        per_position = 2 * n_layers * n_kv_heads * head_dim * self.k.element_size()
        return per_position * batch * (capacity if tokens is None else tokens)

    def next_position(self, row: int = 0) -> int:
        return self.start[row] + self.lengths[row]

    def begin(self, n_tokens: list[int], width: int) -> torch.Tensor:
        """Reserve `width` new slots per row (`reserve`); return their positions (batch, width)."""
        self.reserve(n_tokens, width)
        first = torch.tensor([s + n for s, n in zip(self.start, self.lengths, strict=True)], device=self.k.device)
        return first[:, None] + torch.arange(width, device=self.k.device)  # (batch, width)

    def reserve(self, n_tokens: list[int], width: int) -> None:
        """Reserve `width` new slots per row (row b keeps n_tokens[b] of them) until `commit`.

        Raises ContextLengthError before anything is written if a row would pass capacity (policy "error"),
        or slides the oldest pairs out first (policy "sliding"). Zeroes the slots a shorter row reads, masked
        out, past its own new ones."""
        if len(n_tokens) != self.batch:
            raise ContextLengthError(f"input has {len(n_tokens)} rows but the cache holds {self.batch}")
        if width > self.capacity:
            raise ContextLengthError(f"{width} new tokens do not fit a cache of capacity {self.capacity}")
        for b, length in enumerate(self.lengths):
            if length + width > self.capacity:
                if self.policy == "error":
                    raise ContextLengthError(
                        f"sequence {b} would hold {length + width} tokens but the cache has room for "
                        f"{self.capacity} (the context length); it is never overwritten silently")
                self._slide(b, length + width - self.capacity)
        held = max(self.lengths)
        for b, length in enumerate(self.lengths):
            if length < held:  # a shorter row reads, masked out, up to slot held + width: those slots must hold
                self.k[:, b, :, length + width:held + width] = 0  # numbers, not whatever the memory held
                self.v[:, b, :, length + width:held + width] = 0  # (a NaN there is NaN after the mask)
        self._pending = list(n_tokens)

    def _slide(self, b: int, drop: int) -> None:
        """Sliding policy: forget row b's `drop` oldest pairs; the rest keep their (already rotated) keys."""
        keep = self.lengths[b] - drop
        self.k[:, b, :, :keep] = self.k[:, b, :, drop:drop + keep].clone()
        self.v[:, b, :, :keep] = self.v[:, b, :, drop:drop + keep].clone()
        self.start[b] += drop
        self.lengths[b] = keep

    def write(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Append this step's k, v (batch, n_kv_heads, width, head_dim) at each row's length.

        Returns every layer-`layer` pair up to the longest row: (batch, n_kv_heads, max_len + width, head_dim)."""
        width = k.shape[2]
        held = max(self.lengths)
        before = (self.k[layer, :, :, :held].clone(), self.v[layer, :, :, :held].clone()) if self.checked else None
        self._store(layer, k, v)
        if before is not None:
            self._check_unchanged(layer, *before)
        end = held + width
        return self.k[layer, :, :, :end], self.v[layer, :, :, :end]

    def _store(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> None:
        width = k.shape[2]
        if len(set(self.lengths)) == 1:  # all rows aligned: one slice
            start = self.lengths[0]
            self.k[layer, :, :, start:start + width] = k
            self.v[layer, :, :, start:start + width] = v
        else:
            for b, start in enumerate(self.lengths):
                self.k[layer, b, :, start:start + width] = k[b]
                self.v[layer, b, :, start:start + width] = v[b]

    def _check_unchanged(self, layer: int, k_before: torch.Tensor, v_before: torch.Tensor) -> None:
        """Invariant 2: appending never rewrites a pair a row already holds."""
        for b, length in enumerate(self.lengths):
            same_k = torch.equal(self.k[layer, b, :, :length], k_before[b, :, :length])
            if not same_k or not torch.equal(self.v[layer, b, :, :length], v_before[b, :, :length]):
                raise InvariantError(f"layer {layer}: appending to sequence {b} rewrote a (K, V) pair it already "
                                     f"held (the cache must be append-only)")

    def commit(self, written: list[int] | None = None) -> None:
        """After every layer has written: each row now holds n_tokens[b] more pairs — or written[b], at most
        that, where a multi-step call stopped early (the slots past it were never read as pairs)."""
        if self._pending is None:
            raise InvariantError("KV cache commit without a matching begin")
        written = self._pending if written is None else written
        if len(written) != self.batch or not all(0 <= w <= n for w, n in zip(written, self._pending, strict=True)):
            raise InvariantError(f"KV cache commit of {written} pairs after reserving {self._pending}")
        self.lengths = [length + n for length, n in zip(self.lengths, written, strict=True)]
        self._pending = None
