"""§06 measured here: this machine's read bandwidth and matrix-multiply rate (measured once per process, in well under a
second), its ridge point (FLOPs per byte = rate / bandwidth) beside published GPUs' ratios, and the loaded model's own
KV cache beside its weights. The page draws; every number and every "compute-bound" comes from here."""

from __future__ import annotations

import math
import threading
import time

import torch

from ..article.machine import matmul_rate, memory_bandwidth
from ..engine import BlockPool
from ..loaded import LoadedModel
from ..model import RotaryEmbedding

# Published peak rates (dense 16-bit tensor-core FLOP/s, memory bandwidth in bytes/s) from the makers' datasheets:
# quoted, not measured here.
PUBLISHED = [
    {"key": "a100", "name": "NVIDIA A100 SXM 80GB", "flops": 312e12, "bandwidth": 2.039e12, "dtype": "bf16",
     "source": "NVIDIA A100 datasheet: 312 TFLOP/s BF16 dense, 2,039 GB/s HBM2e"},
    {"key": "h100", "name": "NVIDIA H100 SXM", "flops": 989.4e12, "bandwidth": 3.35e12, "dtype": "bf16",
     "source": "NVIDIA H100 datasheet: 989 TFLOP/s BF16 dense, 3.35 TB/s HBM3"},
]
MATMUL = 1024  # the probe: a float32 (MATMUL × MATMUL) @ (MATMUL × MATMUL) matmul
L3 = "/sys/devices/system/cpu/cpu0/cache/index3/size"
_measured: dict[str, dict] = {}
_lock = threading.Lock()


def bound(intensity: float, ridge: float) -> str:
    """'compute' where a step's FLOPs per byte reach the machine's ridge point, else 'memory'."""
    return "compute" if intensity >= ridge else "memory"


def default_device() -> str:
    """Where the explorer's models run: the GPU where there is one, else the CPU."""
    return "cuda" if torch.cuda.is_available() else "cpu"


def probe_megabytes() -> int:
    """A buffer twice the last-level cache (at least 512 MiB): read from memory, not from the cache (this machine's
    L3 can hold hundreds of MiB)."""
    try:
        with open(L3) as f:
            size = f.read().strip().upper()
        mib = int(size[:-1]) // 1024 if size.endswith("K") else int(size[:-1]) if size.endswith("M") else 0
    except (OSError, ValueError):
        mib = 0
    return min(max(512, 2 * mib), 2048)


def measure(device: torch.device | str | None = None) -> dict:
    """This machine's two roofs on `device`, measured once per process (later calls return the first answer):
    read bandwidth (a buffer larger than the caches, best of 3) and a float32 1024³ matmul's rate (best of 3)."""
    device = torch.device(device or default_device())
    with _lock:
        if str(device) not in _measured:
            start = time.perf_counter()
            megabytes = probe_megabytes() if device.type == "cpu" else 1024
            bandwidth = memory_bandwidth(megabytes=megabytes, repeats=3, device=device)
            rate = matmul_rate(MATMUL, MATMUL, MATMUL, repeats=3, device=device)
            _measured[str(device)] = {
                "device": device.type, "threads": torch.get_num_threads() if device.type == "cpu" else None,
                "bandwidth": bandwidth, "buffer_mib": megabytes, "flops": rate, "dtype": "float32",
                "matmul": f"{MATMUL}×{MATMUL} @ {MATMUL}×{MATMUL}", "ridge": rate / bandwidth,
                "seconds": time.perf_counter() - start}
        return _measured[str(device)]


def machines(device: torch.device | str | None = None) -> list[dict]:
    """This machine (measured) first, then the published GPUs; each with its ridge point."""
    here = measure(device) | {"key": "here", "name": None, "measured": True}
    return [here] + [g | {"ridge": g["flops"] / g["bandwidth"], "measured": False} for g in PUBLISHED]


def roofline(ridge: float, lo: float = 0.5, hi: float = 1024.0) -> list[list[float]]:
    """[intensity, share of the machine's matmul rate it can use] from lo to hi: min(1, intensity / ridge), on a log
    scale of intensity (and the ridge itself, where the roof bends)."""
    xs = sorted({lo * 2 ** (k / 4) for k in range(int(4 * math.log2(hi / lo)) + 1)} | ({ridge} if lo < ridge < hi
                                                                                        else set()))
    return [[x, min(1.0, x / ridge)] for x in xs]


def intensity_here(prefill: float, decode: float, device: torch.device | str | None = None) -> dict:
    """Where a prefill of `prefill` and a decode of `decode` FLOPs per byte stand on each machine."""
    out = []
    for m in machines(device):
        out.append(m | {"prefill_bound": bound(prefill, m["ridge"]), "decode_bound": bound(decode, m["ridge"]),
                        "prefill_share": min(1.0, prefill / m["ridge"]), "decode_share": min(1.0, decode / m["ridge"]),
                        "compute_bound_from": math.ceil(m["ridge"]), "roofline": roofline(m["ridge"])})
    return {"machines": out}


def weight_bytes(fp: LoadedModel) -> int:
    """The bytes of the weights as this process holds them (parameters and quantized blocks; the rotary tables,
    which are computed, not loaded, left out; a tensor held twice counted once)."""
    seen, total = set(), 0
    rotary = {id(b) for m in fp.model.modules() if isinstance(m, RotaryEmbedding) for b in m.buffers()}
    for t in [*fp.model.parameters(), *fp.model.buffers()]:
        if id(t) in rotary or t.data_ptr() in seen:
            continue
        seen.add(t.data_ptr())
        total += t.numel() * t.element_size()
    return total


def model_cache(fp: LoadedModel, context: int | None = None) -> dict:
    """The loaded model's KV cache per token (in its KV pool's dtype) and per sequence at `context` (default: its
    full context), beside its weights as loaded: the concurrency past which the caches outweigh the weights."""
    c = fp.config
    context = context or c.context_length
    per_token = BlockPool.block_bytes(c, 1, fp.kv_format())
    weights = weight_bytes(fp)
    per_sequence = per_token * context
    return {"kv_dtype": fp.kv_format(), "per_token": per_token, "context": context,
            "n_layers": c.n_layers, "kv_heads": c.kv_heads, "head_dim": c.head_dim,
            "per_sequence": per_sequence, "weights": weights, "weights_per_sequence": weights / per_sequence,
            "crossover": int(weights // per_sequence) + 1,
            # §07's last line: the tokens that end this model's loop (its end-of-text and end-of-turn tokens)
            "end_tokens": [fp.tokenizer.piece(i) for i in fp.tokenizer.eos_ids] if fp.tokenizer is not None else []}


def register(app, models) -> threading.Thread:
    """GET /api/model-cache on `app` (the machine's rates come with /api/intensity). The rates are measured now, in the
    background, while no page is asking the model for anything yet (a request that needs them first waits for them):
    the thread measuring them."""
    measuring = threading.Thread(target=measure, name="forwardpass-machine-rates", daemon=True)
    measuring.start()

    def route(model: str | None = None) -> dict:
        return model_cache(models.get(model))

    app.add_api_route("/api/model-cache", route, methods=["GET"])
    return measuring
