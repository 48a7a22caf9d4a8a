"""Shared by the benchmarks: the device check, machine facts recorded beside every result, medians, the fixed
text, and how forwardpass's prefill and batched throughput are timed."""

from __future__ import annotations

import os
import platform
import socket
import statistics
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

TEXT = (Path(__file__).parent / "text.txt").read_text()  # the prompts' and the accuracy check's source


def counts(text: str) -> list[int]:
    """An argparse type: comma-separated counts ≥ 1, sorted, each once."""
    from forwardpass.cli.options import checked

    return checked(lambda t: sorted({int(x) for x in t.split(",")}), lambda v: min(v) >= 1,
                   "comma-separated counts ≥ 1")(text)


def checked_device(name: str) -> str:
    """The device as torch names it, or exit with the reason it cannot be used (before any model loads)."""
    from forwardpass.devices import resolve_device
    from forwardpass.errors import ForwardpassError

    try:
        return str(resolve_device(name))
    except ForwardpassError as e:
        sys.exit(f"error: {e}")


def sync(device: str | torch.device) -> None:
    """Wait for the device's queued work (CUDA runs asynchronously), so that a clock read after it is fair."""
    import torch
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def as_tensor(x) -> torch.Tensor:
    """Logits as a tensor of their own: the native step's numpy arrays (valid only until its next call) copied, the
    PyTorch blocks' tensors cloned."""
    import numpy as np
    import torch

    return torch.from_numpy(np.array(x, copy=True)) if isinstance(x, np.ndarray) else x.clone()


def free_port() -> int:
    """A loopback port nobody listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def machine(device: str = "cpu") -> dict:
    import torch

    from forwardpass import kernels
    facts = {"date": time.strftime("%Y-%m-%d %H:%M"), "cpu": platform.processor() or platform.machine(),
             "cores": os.cpu_count(), "torch_threads": torch.get_num_threads(),
             "load_average": [round(x, 2) for x in os.getloadavg()], "device": device,
             "kernels": kernels.isa(), "tiles": kernels.tiles()}  # the build in use, and the tile unit (AMX)
    if torch.device(device).type == "cuda":
        facts["device_name"] = torch.cuda.get_device_name(device)
    return facts


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def prefill_tps(fp, ids: list[int], blocks: bool = False) -> float:
    """Tokens/s of one prefill of `ids` into a fresh paged pool as the engine's runner runs it (the native step where
    it binds; `blocks`: the PyTorch blocks), last position's logits only."""
    import torch

    from forwardpass.engine import BlockPool
    from forwardpass.engine.rows import Chunk, Rows
    from forwardpass.engine.runner import Runner

    with torch.inference_mode():
        pool = BlockPool(fp.config, -(-len(ids) // 16), 16, fp.kv_format(), fp.device)
        runner = Runner(fp.model, pool, reference=blocks)
        sync(fp.device)
        start = time.perf_counter()
        runner.step(Rows([Chunk(ids, list(range(pool.num_blocks)), 0)]))
        sync(fp.device)
        return len(ids) / (time.perf_counter() - start)


def batch_tps(fp, prompts: list[list[int]], params) -> float:
    """Generated tokens/s of every prompt at once through the engine's paged batch (no drafting)."""
    from forwardpass.engine import Engine, EngineConfig

    engine = Engine(fp, EngineConfig(kv_cache_bytes=2**30, max_num_seqs=len(prompts), speculative="off"))
    done = []
    start = time.perf_counter()
    for p in prompts:
        engine.submit(p, params, lambda o: done.append(o) if o.token_id is not None else None)
    engine.run_until_done()
    return len(done) / (time.perf_counter() - start)
