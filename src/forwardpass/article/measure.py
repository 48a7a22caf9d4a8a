"""Prediction beside measurement: this machine's roofs turned into prefill and decode rates, then run."""

from __future__ import annotations

import os

import torch

from ..config import ModelConfig
from ..devices import resolve_device
from ..errors import ForwardpassError
from ..loaded import LoadedModel
from ..loader import load
from . import cost
from .machine import matmul_rate, memory_bandwidth

MAX_RANDOM_BYTES = 8 * 2**30  # presets get random weights (speed does not depend on their values)


def measure(c: ModelConfig, path: str | None, prompt: int, new: int, device: str = "cpu",
            progress: bool = False) -> dict:
    """Measure bandwidth and matmul rate, predict the model's fp32 prefill and decode rates, then run it."""
    from ..loop import generate
    from ..model import Transformer
    from ..sampling import SamplingParams

    dev = resolve_device(device)
    if path is not None:
        fp = load(path, device=dev, progress=progress)
    else:
        if cost.weight_bytes(c, "fp32") > MAX_RANDOM_BYTES:
            raise ForwardpassError(f"{c.name} is too large to instantiate here for --measure "
                                   f"({cost.weight_bytes(c, 'fp32') / 2**30:.0f} GiB in fp32)")
        with torch.device(dev):
            fp = LoadedModel(Transformer(c).eval(), None, c.name, {})
    bandwidth = memory_bandwidth(device=dev)
    rate = matmul_rate(prompt, c.d_model, c.hidden, device=dev)
    ids = torch.randint(0, c.vocab_size, (prompt,)).tolist()
    params = SamplingParams(temperature=0, max_tokens=new, ignore_eos=True)
    generate(fp, ids, SamplingParams(temperature=0, max_tokens=2, ignore_eos=True))  # warm up
    result = generate(fp, ids, params)
    return {
        "device": str(dev), "dtype": "fp32", "load_average": round(os.getloadavg()[0], 2),
        "bandwidth_bytes_per_s": bandwidth, "matmul_flops_per_s": rate,
        "matmul_shape": f"{prompt}×{c.d_model} @ {c.d_model}×{c.hidden}",
        "predicted_prefill_tokens_per_s": cost.compute_bound_prefill_tokens_per_s(c, rate, prompt),
        "predicted_decode_tokens_per_s": cost.roofline_decode_tokens_per_s(c, bandwidth, prompt + new // 2,
                                                                           "fp32", "fp32"),
        "measured_prefill_tokens_per_s": result.prefill_tokens_per_s,
        "measured_decode_tokens_per_s": result.decode_tokens_per_s,
    }
