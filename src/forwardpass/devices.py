"""PyTorch, imported where it is needed and not before (`import forwardpass` and the native path start without it),
and the devices and dtypes a load names."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from .errors import ForwardpassError

if TYPE_CHECKING:
    import torch

INSTALL_TORCH = "pip install 'forwardpass[torch]' (the CPU build: pip install torch==2.13.0)"


def torch_module(why: str):
    """PyTorch, imported for `why`; where it is not installed, a ForwardpassError saying so in one line."""
    try:
        import torch
    except ImportError as e:
        raise ForwardpassError(f"{why} needs PyTorch, which cannot be imported ({e}): {INSTALL_TORCH}") from None
    from .kernels.team import most_threads

    torch.set_num_threads(most_threads())  # --threads, where it was given before PyTorch was imported
    return torch


def has_gpu() -> bool:
    """Whether this machine shows an NVIDIA GPU to its processes, without importing PyTorch to ask."""
    return os.path.exists("/proc/driver/nvidia/version") or os.path.exists("/dev/nvidia0")


def resolve_device(device: str | torch.device | None) -> torch.device:
    """'cpu', 'cuda', 'cuda:1', … or None for the best available; a clear error if it does not exist."""
    torch = torch_module(f"device {device!r}")
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except RuntimeError:
        raise ForwardpassError(f"unknown device {device!r} (try 'cpu' or 'cuda')") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ForwardpassError(f"device {device!r} requested but CUDA is not available on this machine")
    return dev


DTYPES = ("float32", "fp32", "bfloat16", "bf16", "float16", "fp16")  # --dtype's names


def resolve_dtype(dtype: str | torch.dtype) -> torch.dtype:
    torch = torch_module(f"dtype {dtype!r}")
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype not in DTYPES:
        raise ForwardpassError(f"unknown dtype {dtype!r}; choose from {', '.join(DTYPES)}")
    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}.get(dtype) or getattr(torch, dtype)
