"""Option pieces shared by the commands and the benchmarks: the device, and counts that must be ≥ 1."""

from __future__ import annotations

import argparse


def add_device_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N (default: cpu)")


def positive_int(text: str) -> int:
    """An argparse type: a whole number ≥ 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value
