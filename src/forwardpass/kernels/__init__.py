"""Native kernels, compiled on first use with the machine's C compiler and loaded with ctypes.

The 8-bit and 4-bit weight matrix-vector products behind int8 and q4 decode (`quant_gemv.c`). Where no
compiler or no AVX-512 (F and BW) is present, `available()` is False and callers use the plain PyTorch path."""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import torch

SOURCE = Path(__file__).parent / "quant_gemv.c"


def _cache_dir() -> Path:
    root = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return root / "forwardpass" / "kernels"


def _build() -> ctypes.CDLL | None:
    if os.environ.get("FORWARDPASS_NO_KERNELS") or not shutil.which("cc"):
        return None
    cpu = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    if "avx512f" not in cpu or "avx512bw" not in cpu:
        return None
    code = SOURCE.read_bytes()
    target = _cache_dir() / f"quant_gemv-{hashlib.sha256(code).hexdigest()[:16]}.so"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        flags = ["-O3", "-march=native", "-fopenmp", "-shared", "-fPIC", "-std=c11"]
        r = subprocess.run(["cc", *flags, str(SOURCE), "-o", str(tmp)], capture_output=True, text=True)
        if r.returncode:
            return None
        tmp.replace(target)
    lib = ctypes.CDLL(str(target))
    p, i = ctypes.c_void_p, ctypes.c_int
    lib.q8_gemv.restype = lib.q4_gemv.restype = None
    lib.q8_gemv.argtypes = [p, i, i, p, p, p, i, p]
    lib.q4_gemv.argtypes = [p, i, i, p, p, p, i, p]
    return lib


_LIB: ctypes.CDLL | None | bool = False  # False: not built yet


def available() -> bool:
    global _LIB
    if _LIB is False:
        _LIB = _build()
    return _LIB is not None


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
