"""This machine's two roofs, measured: memory bandwidth (bytes/s) and matmul rate (FLOP/s)."""

from __future__ import annotations

import time

import torch

from . import kernels


def best_seconds(fn, repeats: int) -> float:
    """The fastest of `repeats` calls of fn, after one to warm up (CUDA's queued work included)."""
    fn()  # warm up
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return best


def memory_bandwidth(megabytes: int = 512, repeats: int = 5, device: str | torch.device = "cpu") -> float:
    """Read bandwidth in bytes/s: the best time to sum a buffer far larger than any cache. On the CPU also
    read in several concurrent streams per thread, as the decode kernels do (memory serves that faster here than
    one sequential stream per thread), and keep the faster."""
    x = torch.ones(megabytes * 2**20 // 4, dtype=torch.float32, device=device)
    seconds = best_seconds(lambda: x.sum(), repeats)
    if x.device.type == "cpu" and kernels.available():
        seconds = min(seconds, best_seconds(lambda: kernels.stream_read(x), repeats))
    return x.numel() * 4 / seconds


def matmul_rate(m: int, k: int, n: int, repeats: int = 5, dtype: torch.dtype = torch.float32,
                device: str | torch.device = "cpu") -> float:
    """FLOP/s of an (m × k) @ (k × n) matmul: 2 m k n FLOPs."""
    a = torch.randn(m, k, dtype=dtype, device=device)
    b = torch.randn(k, n, dtype=dtype, device=device)
    return 2 * m * k * n / best_seconds(lambda: a @ b, repeats)
