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


def port_number(text: str) -> int:
    """An argparse type: a TCP port, 1 to 65535."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 0 < value < 65536:
        raise argparse.ArgumentTypeError(f"must be a port number from 1 to 65535, got {text}")
    return value


def seconds(text: str) -> float:
    """An argparse type: a finite number of seconds ≥ 0."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds ≥ 0, got {text}")
    return value


def check_listen(host: str, port: int) -> None:
    """Raise a one-line error now, before a model loads, if `host:port` cannot be listened on."""
    import socket

    from ..errors import ForwardpassError

    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        with socket.socket(family, kind, proto) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(address)
    except OSError as e:
        raise ForwardpassError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
