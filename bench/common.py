"""Shared by the benchmarks: machine facts recorded beside every result, medians, progress."""

from __future__ import annotations

import os
import platform
import statistics
import time

import torch


def machine() -> dict:
    return {"date": time.strftime("%Y-%m-%d %H:%M"), "cpu": platform.processor() or platform.machine(),
            "cores": os.cpu_count(), "torch_threads": torch.get_num_threads(),
            "load_average": [round(x, 2) for x in os.getloadavg()]}


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")
