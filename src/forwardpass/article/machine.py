"""This machine's two roofs, measured: memory bandwidth (bytes/s) and matmul rate (FLOP/s); and this process's peak
resident memory (asked without PyTorch, which is imported only to measure the roofs)."""

from __future__ import annotations

import resource
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


def best_seconds(fn, repeats: int) -> float:
    """The fastest of `repeats` calls of fn, after one to warm up (CUDA's queued work included)."""
    import torch

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
    import torch

    from .. import kernels

    x = torch.ones(megabytes * 2**20 // 4, dtype=torch.float32, device=device)
    seconds = best_seconds(lambda: x.sum(), repeats)
    if x.device.type == "cpu" and kernels.available():
        seconds = min(seconds, best_seconds(lambda: kernels.stream_read(x), repeats))
    return x.numel() * 4 / seconds


def matmul_rate(m: int, k: int, n: int, repeats: int = 5, dtype: torch.dtype | None = None,
                device: str | torch.device = "cpu") -> float:
    """FLOP/s of an (m × k) @ (k × n) matmul (dtype default float32): 2 m k n FLOPs."""
    import torch

    dtype = dtype or torch.float32
    a = torch.randn(m, k, dtype=dtype, device=device)
    b = torch.randn(k, n, dtype=dtype, device=device)
    return 2 * m * k * n / best_seconds(lambda: a @ b, repeats)


def peak_resident_bytes() -> int:
    """This process's peak resident memory. Where /proc says it, its own high-water mark: ru_maxrss also counts what
    its parent held when it forked this process (Linux keeps that across exec)."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)
