"""A pool block's pairs as bytes and back: K then V, every layer, in the pool's own format (what a prompt-cache file's
payload holds). The pool's arrays on the CPU; its PyTorch tensors on another device."""

from __future__ import annotations

import numpy as np

from ..paged import BlockPool


def payload_bytes(pool: BlockPool) -> int:
    """Bytes of one block's payload."""
    return pool.nbytes() // pool.num_blocks


def block_payload(pool: BlockPool, block: int) -> np.ndarray:
    """A copy of `block`'s pairs: (bytes,) uint8, K's then V's."""
    if pool.k_array is not None:
        return np.stack([pool.k_array[:, block], pool.v_array[:, block]]).reshape(-1).view(np.uint8)
    import torch

    pair = torch.stack([pool.k[:, block], pool.v[:, block]]).contiguous()
    return pair.view(torch.uint8).cpu().numpy().reshape(-1)


def fill_block(pool: BlockPool, block: int, payload: memoryview) -> None:
    """Write `payload` (block_payload's bytes) into `block`."""
    if pool.k_array is not None:
        pair = np.frombuffer(payload, dtype=pool.k_array.dtype).reshape(2, *pool.k_array[:, block].shape)
        pool.k_array[:, block], pool.v_array[:, block] = pair[0], pair[1]
        return
    import torch

    raw = torch.frombuffer(bytearray(payload), dtype=torch.uint8).to(pool.k.device)
    pair = raw.view(pool.k.dtype).reshape(2, *pool.k[:, block].shape)
    pool.k[:, block], pool.v[:, block] = pair[0], pair[1]
