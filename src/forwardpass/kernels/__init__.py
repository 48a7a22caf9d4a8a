"""Native kernels, compiled on first use with the machine's C compiler and loaded with ctypes.

Matrix-vector products over weights as they are stored — fp32, fp16, bf16, 8- and 4-bit blocks (`gemv.h`;
`gemv.c` runs a decode step's few rows at a time), a whole Llama decode step in one call (`decode_step.c`,
driven by `forwardpass.fused_decode`), and a read of memory in concurrent streams (`stream_read.c`, the
bandwidth roof of `forwardpass.machine`). Where no
compiler or no AVX-512 (F, BW, VL, VNNI) is present, `available()` is False and callers use the PyTorch path.
FORWARDPASS_NO_KERNELS=1 turns them off."""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import torch

SOURCES = [Path(__file__).parent / n for n in ("gemv.c", "decode_step.c", "stream_read.c")]
HEADERS = [Path(__file__).parent / "gemv.h"]


def _cache_dir() -> Path:
    root = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return root / "forwardpass" / "kernels"


def _build() -> ctypes.CDLL | None:
    if os.environ.get("FORWARDPASS_NO_KERNELS") or not shutil.which("cc"):
        return None
    cpu = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    if any(flag not in cpu for flag in ("avx512f", "avx512bw", "avx512vl", "avx512_vnni")):
        return None
    code = b"".join(p.read_bytes() for p in SOURCES + HEADERS)
    target = _cache_dir() / f"kernels-{hashlib.sha256(code).hexdigest()[:16]}.so"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        flags = ["-O3", "-march=native", "-fopenmp", "-shared", "-fPIC", "-std=c11"]
        r = subprocess.run(["cc", *flags, *map(str, SOURCES), "-o", str(tmp)], capture_output=True, text=True)
        if r.returncode:
            return None
        tmp.replace(target)
    lib = ctypes.CDLL(str(target))
    p, i = ctypes.c_void_p, ctypes.c_int
    lib.gemv.restype = None
    lib.gemv.argtypes = [p, i, i, i, p, p, p, i, p]
    lib.decode_step.restype = ctypes.c_int
    lib.decode_step.argtypes = [p, i, i, i, p, p]
    lib.decode_workspace.restype = ctypes.c_size_t
    lib.decode_workspace.argtypes = [p]
    lib.decode_threads.restype = i
    lib.decode_threads.argtypes = []
    lib.decode_greedy.restype = ctypes.c_int
    lib.decode_greedy.argtypes = [p, i, i, i, i, p, i, p, p]
    lib.decode_batch.restype = ctypes.c_int
    lib.decode_batch.argtypes = [p, p, p, p]
    lib.decode_batch_greedy.restype = ctypes.c_int
    lib.decode_batch_greedy.argtypes = [p, p, i, p, i, p, p]
    lib.stream_read.restype = ctypes.c_float
    lib.stream_read.argtypes = [p, ctypes.c_size_t]
    return lib


_LIB: ctypes.CDLL | None | bool = False  # False: not built yet


def available() -> bool:
    global _LIB
    if _LIB is False:
        _LIB = _build()
    return _LIB is not None


def library() -> ctypes.CDLL:
    """The loaded kernels; call only where available()."""
    return _LIB


KINDS = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2, 4: 4, 8: 8}  # gemv.h: F32, F16, BF16, Q4, Q8


def gemv(x: torch.Tensor, kind: torch.dtype | int, w: torch.Tensor, n: int, scale: torch.Tensor | None = None,
         minimum: torch.Tensor | None = None) -> torch.Tensor:
    """x (M, K) float32 @ Wᵀ → (M, n) float32, W stored as `kind`: a float dtype (w (n, K)), or 8 or 4 bits
    tiled as quant.QuantizedLinear stores them (w (groups, K/32, 512 or 256) bytes, scale and minimum
    (groups, K/32, 16) float32, groups = n/16 rounded up). Call only where available(); quantized K a multiple
    of 32. Every tensor contiguous and on the CPU."""
    M, K = x.shape
    x = x.contiguous()
    y = torch.empty(M, n, dtype=torch.float32)
    scales = [None if t is None else t.data_ptr() for t in (scale, minimum)]
    _LIB.gemv(x.data_ptr(), M, KINDS[kind], K, w.data_ptr(), *scales, n, y.data_ptr())
    return y


def stream_read(x: torch.Tensor) -> float:
    """Sum of a float32 CPU tensor, read in 4 concurrent streams per thread (machine.memory_bandwidth)."""
    x = x.contiguous().view(-1)
    usable = x.numel() - x.numel() % (64 * 64)  # whole 16-float vectors for every stream of every thread
    return _LIB.stream_read(x.data_ptr(), usable)
