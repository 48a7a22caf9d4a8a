"""The paged KV cache: one pool of fixed-size blocks per model, a block table per sequence, a free list,
reference counts, and prefix caching (prefix_cache.py: full blocks found again by the hash of everything up to them)."""

from __future__ import annotations

import math
import mmap
from collections import OrderedDict
from typing import TYPE_CHECKING

import numpy as np

from ..config import ModelConfig
from ..errors import ContextLengthError, InvariantError
from ..kv_q8_0 import NUMPY_KV, dequantize, kv_name, quantize, row_bytes, torch_dtype
from .prefix_cache import PrefixCache

if TYPE_CHECKING:
    import torch

def zeroed(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """Zeros that take memory only as they are written: a private anonymous mapping, which reads as the system's zero
    page and gets a page of its own (4 KiB: no huge pages, which would make each layer's first written block cost
    2 MiB) where first written, so a server's 1 GiB pool costs nothing until its blocks fill (np.zeros may write,
    so hold, every byte from the start). The array keeps the mapping alive."""
    count = math.prod(shape) * np.dtype(dtype).itemsize
    pages = mmap.mmap(-1, max(count, 1), flags=mmap.MAP_PRIVATE)  # shared, even reading would take memory
    return np.frombuffer(pages, dtype=np.uint8)[:count].view(dtype).reshape(shape)


class BlockPool(PrefixCache):
    """K and V for `num_blocks` blocks of `block_size` token slots, every layer.

    k, v: (n_layers, num_blocks, n_kv_heads, block_size, head_dim) in the pool's format (float32, float16, bfloat16),
    or for q8_0 (n_layers, num_blocks, n_kv_heads, block_size, head_dim / 32 × 34) bytes, each slot's row as q8_0 blocks
    (kv_q8_0.py). Within a block each K/V head's slots lie together, so attention, which reads one head's keys
    position after position, reads memory in one stream (with the heads interleaved slot by slot, a 3-head model's
    long-context decode read about three times the bytes it used).

    On the CPU the pairs live in numpy arrays (`k_array`, `v_array`: the native step's); `k` and `v` are PyTorch views
    of them for the PyTorch blocks, made when first asked for. On another device they are PyTorch tensors there.
    Its blocks are handed out oldest freed first, and found again by the prefix cache it is (PrefixCache)."""

    def __init__(self, config: ModelConfig, num_blocks: int, block_size: int = 16, dtype="float32",
                 device="cpu", prefix_caching: bool = True):
        if num_blocks <= 0 or block_size <= 0:
            raise ContextLengthError(f"a block pool needs blocks > 0 and block_size > 0, got {num_blocks} and "
                                     f"{block_size}")
        self.format = kv_name(dtype)  # float32, float16, bfloat16 or q8_0
        row = row_bytes(config.head_dim, self.format)  # refuses a format it does not know, by name
        width = row if self.format == "q8_0" else config.head_dim
        shape = (config.n_layers, num_blocks, config.kv_heads, block_size, width)
        self.device = str(device)
        self.k_array = self.v_array = None
        self._tensors: tuple | None = None
        try:
            if self.device == "cpu":
                self.k_array, self.v_array = (zeroed(shape, NUMPY_KV[self.format]) for _ in range(2))
            else:
                import torch

                dtype = torch_dtype(self.format)
                self._tensors = tuple(torch.zeros(shape, dtype=dtype, device=device) for _ in range(2))
        except (OSError, MemoryError, RuntimeError) as e:  # the system's refusal (CUDA's is a RuntimeError)
            gib = num_blocks * self.block_bytes(config, block_size, self.format) / 2**30
            reason = str(e).splitlines()[0][:160]
            raise ContextLengthError(f"a KV pool of {gib:.3g} GiB ({num_blocks} blocks of {block_size} tokens) cannot "
                                     f"be allocated on {device}: {reason}") from None
        super().__init__(block_size, prefix_caching)
        self.num_blocks = num_blocks
        self._bytes = num_blocks * self.block_bytes(config, block_size, self.format)
        self.ref_count = [0] * num_blocks
        self.free: OrderedDict[int, None] = OrderedDict((b, None) for b in range(num_blocks))  # oldest first

    def _torch(self) -> tuple[torch.Tensor, torch.Tensor]:
        if self._tensors is None:  # PyTorch views of the numpy arrays: the same memory
            import torch

            with torch.inference_mode(False):  # plain tensors, even when first asked for inside inference mode
                views = [torch.from_numpy(a) for a in (self.k_array, self.v_array)]
            if self.format == "bfloat16":
                views = [t.view(torch.bfloat16) for t in views]
            self._tensors = tuple(views)
        return self._tensors

    @property
    def k(self) -> torch.Tensor:
        return self._torch()[0]

    @property
    def v(self) -> torch.Tensor:
        return self._torch()[1]

    @staticmethod
    def block_bytes(config: ModelConfig, block_size: int, dtype) -> int:
        """Bytes of K and V one block holds, every layer, in a KV format (by name or PyTorch dtype; q8_0: its blocks'
        bytes, scales included)."""
        return 2 * config.n_layers * config.kv_heads * block_size * row_bytes(config.head_dim, dtype)

    @property
    def used(self) -> int:
        return self.num_blocks - len(self.free)

    def usage(self) -> float:
        return self.used / self.num_blocks

    def nbytes(self) -> int:
        return self._bytes

    def allocate(self) -> int:
        """A free block with reference count 1 (the oldest freed first; its cached contents are forgotten)."""
        if not self.free:
            raise ContextLengthError("the KV block pool is exhausted")
        block, _ = self.free.popitem(last=False)
        self.forget(block)
        self.ref_count[block] = 1
        return block

    def share(self, block: int) -> None:
        if self.ref_count[block] == 0:
            self.free.pop(block)
        self.ref_count[block] += 1

    def release(self, blocks: list[int]) -> None:
        """Drop one reference to each block; a block nobody uses returns to the free list (still findable
        by its hash until it is handed out again)."""
        for block in blocks:
            if self.ref_count[block] <= 0:
                raise InvariantError(f"block {block} released more often than it was taken")
            self.ref_count[block] -= 1
            if self.ref_count[block] == 0:
                self.free[block] = None

    def match_prefix(self, tokens: list[int]) -> list[int]:
        """Blocks already holding the longest run of full blocks at the start of `tokens` (PrefixCache.lookup), shared
        (ref +1)."""
        found = self.lookup(tokens)
        for block in found:
            self.share(block)
        return found

    def check(self, tables: list[list[int]]) -> None:
        """Invariants: each block's reference count equals the live sequences using it; free + used = pool."""
        counts = [0] * self.num_blocks
        for table in tables:
            for block in table:
                counts[block] += 1
        if counts != self.ref_count:
            bad = next(b for b in range(self.num_blocks) if counts[b] != self.ref_count[b])
            raise InvariantError(f"block {bad} has reference count {self.ref_count[bad]} but {counts[bad]} "
                                 f"live sequences use it")
        in_use = sum(1 for c in counts if c)
        if in_use + len(self.free) != self.num_blocks or any(counts[b] for b in self.free):
            raise InvariantError(f"free ({len(self.free)}) + used ({in_use}) != pool ({self.num_blocks})")


class PagedBatch:
    """The cache contract the model calls (kv_cache.Cache: `begin`, `write`, `commit`) over a batch of block
    tables. In checked mode every write verifies that no pair a row already held changed (a table that sends a new
    pair onto an old one is caught, not silently served)."""

    def __init__(self, pool: BlockPool, tables: list[list[int]], lengths: list[int], checked: bool = False):
        self.pool, self.tables, self.lengths, self.checked = pool, tables, list(lengths), checked
        self.policy = "error"
        self._pending: list[int] | None = None

    @property
    def batch(self) -> int:
        return len(self.lengths)

    def next_position(self, row: int = 0) -> int:
        return self.lengths[row]

    def begin(self, n_tokens: list[int], width: int) -> torch.Tensor:
        import torch

        device, bs = self.pool.k.device, self.pool.block_size
        for b, (length, n) in enumerate(zip(self.lengths, n_tokens, strict=True)):
            if length + n > len(self.tables[b]) * bs:
                raise InvariantError(f"sequence {b} has {len(self.tables[b])} blocks, too few for {length + n} tokens")
        self._pending = list(n_tokens)
        most = max(len(t) for t in self.tables)
        table = torch.tensor([t + [0] * (most - len(t)) for t in self.tables], device=device)  # (batch, blocks)
        end = max(self.lengths) + width  # every row's pairs, padded to the longest
        j = torch.arange(end, device=device)
        block = table[:, (j // bs).clamp(max=most - 1)]  # (batch, end): the pool block of each position
        lengths, kept_n = torch.tensor(self.lengths, device=device), torch.tensor(n_tokens, device=device)
        held = j[None] < (lengths + kept_n)[:, None]
        # (block, slot in it) of every pair read, padding reading block 0's first, and of every real new pair written
        self.read_at = (torch.where(held, block, 0), torch.where(held, j % bs, 0))
        positions = lengths[:, None] + torch.arange(width, device=device)  # (batch, width)
        kept = torch.arange(width, device=device)[None] < kept_n[:, None]  # the real (not padding) new tokens
        # which token of k (batch, n_kv_heads, width, head_dim) each real new pair is, and where it goes
        self.rows, self.cols = kept.nonzero(as_tuple=True)
        self.write_at = (block.gather(1, positions)[kept], (positions % bs)[kept])
        return positions

    def write(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Store the real new pairs in their blocks (rounded to the pool's dtype, or quantized to q8_0 blocks); return
        each row's pairs as the pool holds them, in k's dtype (batch, n_kv_heads, end, head_dim)."""
        import torch

        pool_k, pool_v = self.pool.k[layer], self.pool.v[layer]  # (num_blocks, n_kv_heads, block_size, head_dim)
        (rb, ro), (wb, wo) = self.read_at, self.write_at
        held = [(rb[b, :n], ro[b, :n]) for b, n in enumerate(self.lengths)] if self.checked else None
        before = [(pool_k[b, :, o].clone(), pool_v[b, :, o].clone()) for b, o in held] if held else None
        store = quantize if self.pool.format == "q8_0" else lambda x: x.to(pool_k.dtype)
        pool_k[wb, :, wo] = store(k.transpose(1, 2)[self.rows, self.cols])  # (N, n_kv_heads, head_dim)
        pool_v[wb, :, wo] = store(v.transpose(1, 2)[self.rows, self.cols])
        if before is not None:
            for row, ((b, o), (k_before, v_before)) in enumerate(zip(held, before, strict=True)):
                if not (torch.equal(pool_k[b, :, o], k_before) and torch.equal(pool_v[b, :, o], v_before)):
                    raise InvariantError(f"layer {layer}: appending to sequence {row} rewrote a (K, V) pair it "
                                         f"already held (its block table sends a new pair onto an old one)")
        keys, values = pool_k[rb, :, ro], pool_v[rb, :, ro]  # (batch, end, n_kv_heads, head_dim or its blocks' bytes)
        if self.pool.format == "q8_0":
            keys, values = dequantize(keys, k.dtype), dequantize(values, v.dtype)
        return keys.transpose(1, 2).to(k.dtype), values.transpose(1, 2).to(v.dtype)

    def commit(self) -> None:
        self.lengths = [length + n for length, n in zip(self.lengths, self._pending, strict=True)]
        self._pending = None
