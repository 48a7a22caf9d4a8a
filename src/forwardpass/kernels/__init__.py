"""Native kernels, compiled on first use with the machine's C compiler and loaded with ctypes.

The 8-bit and 4-bit weight matrix-vector products behind int8 and q4 decode (`gemv.h`, `quant_gemv.c`), and
a whole Llama decode step in one call (`decode_step.c`, driven by `forwardpass.fused_decode`), and a read
of memory in concurrent streams (`stream_read.c`, the bandwidth roof of `forwardpass.machine`). Where no
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

SOURCES = [Path(__file__).parent / n for n in ("quant_gemv.c", "decode_step.c", "stream_read.c")]
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
    lib.q8_gemv.restype = lib.q4_gemv.restype = None
    lib.q8_gemv.argtypes = [p, i, i, p, p, p, i, p]
    lib.q4_gemv.argtypes = [p, i, i, p, p, p, i, p]
    lib.decode_step.restype = ctypes.c_int
    lib.decode_step.argtypes = [p, i, i, i, p]
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


def q8_gemv(x: torch.Tensor, q: torch.Tensor, scale: torch.Tensor, minimum: torch.Tensor) -> torch.Tensor:
    """x (M, K) float32 @ Wᵀ, W = minimum + scale × q with q (N, K) uint8, scale and minimum (N, K/32) float32.
    Call only where available(); K must be a multiple of 32."""
    M, K = x.shape
    x = x.contiguous()
    y = torch.empty(M, q.shape[0], dtype=torch.float32)
    _LIB.q8_gemv(x.data_ptr(), M, K, q.data_ptr(), scale.data_ptr(), minimum.data_ptr(), q.shape[0], y.data_ptr())
    return y


def q4_gemv(x: torch.Tensor, q: torch.Tensor, scale: torch.Tensor, minimum: torch.Tensor) -> torch.Tensor:
    """x (M, K) float32 @ Wᵀ, W given as q (N, K/2) packed nibbles, scale and minimum (N, K/32) float32."""
    M, K = x.shape
    x = x.contiguous()
    y = torch.empty(M, q.shape[0], dtype=torch.float32)
    _LIB.q4_gemv(x.data_ptr(), M, K, q.data_ptr(), scale.data_ptr(), minimum.data_ptr(), q.shape[0], y.data_ptr())
    return y


def stream_read(x: torch.Tensor) -> float:
    """Sum of a float32 CPU tensor, read in 4 concurrent streams per thread (machine.memory_bandwidth)."""
    x = x.contiguous().view(-1)
    usable = x.numel() - x.numel() % (64 * 64)  # whole 16-float vectors for every stream of every thread
    return _LIB.stream_read(x.data_ptr(), usable)
