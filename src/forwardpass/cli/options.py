"""Option pieces shared by the commands and the benchmarks: the device, checked numbers (counts ≥ 1, ports, seconds),
and whether an address can be listened on."""

from __future__ import annotations

import argparse
import sys

from ..config import SPECULATIVE_MODES


def add_device_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N (default: cpu)")


def add_threads_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--threads", type=positive_int, default=None,
                   help="the most CPU threads a step runs, at most the cores this process may use (default: "
                        "OMP_NUM_THREADS, else those cores); fewer run while other processes hold cores")


def add_speculative_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--speculative", choices=SPECULATIVE_MODES, default="suffix",
                   help="suffix (default): draft each request's next tokens from its own text and from what recent "
                        "requests of the same API key and user continued with, and verify them in one step (the same "
                        "output, faster where it repeats its input or earlier answers); ngram: from its own text "
                        "only; off: one token per step")


def apply_threads(args: argparse.Namespace) -> None:
    """--threads, for the whole process (kernels/team.py), capped with a warning at the cores this process may use:
    a thread without a core of its own holds up the others at every barrier of every step."""
    if getattr(args, "threads", None) is not None:
        from ..kernels.team import cores, set_threads
        usable = cores()
        if args.threads > usable:
            print(f"forwardpass: warning: --threads {args.threads} is more than the {usable} cores this process may "
                  f"use; running {usable}", file=sys.stderr, flush=True)
            args.threads = usable
        set_threads(args.threads)


def check_model(args: argparse.Namespace) -> list:
    """The models --model names (catalog.ModelSpec; none: the embedded default), each refused now if it is missing or
    a file that does not start as a GGUF file does, before PyTorch loads (after the command's other options: those are
    checked first). Its metadata is parsed once, by the load."""
    from ..catalog import specs
    from ..weights import model_file
    listed = specs(args.model if isinstance(args.model, list) else None if args.model is None else [args.model],
                   getattr(args, "served_model_name", None))
    for spec in listed:
        model_file(spec.path)
    return listed


def checked(convert, ok, must: str):
    """An argparse type: `convert(text)` where `ok` holds for it, else the one-line error 'must be {must}, got …'."""
    def parse(text: str):
        try:
            value = convert(text)
        except ValueError:
            value = None
        if value is None or not ok(value):
            raise argparse.ArgumentTypeError(f"must be {must}, got {text}")
        return value
    return parse


positive_int = checked(int, lambda v: v >= 1, "a positive integer")
port_number = checked(int, lambda v: 0 < v < 65536, "a port number from 1 to 65535")
seconds = checked(float, lambda v: 0 <= v < float("inf"), "a number of seconds ≥ 0")
positive_seconds = checked(float, lambda v: 0 < v < float("inf"), "a number of seconds > 0")


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


def add_server_sampling(p: argparse.ArgumentParser) -> None:
    """The sampling a request gets for each field it leaves out (llama-server's names; server_defaults.py)."""
    from ..server_defaults import FALLBACK
    g = p.add_argument_group("sampling for requests that leave it out (else the model file's recommended, else "
                             "these defaults)")
    g.add_argument("--temperature", type=float, default=None, help=f"(default {FALLBACK['temperature']})")
    g.add_argument("--top-k", type=int, default=None, help=f"0: off (default {FALLBACK['top_k']})")
    g.add_argument("--top-p", type=float, default=None, help=f"(default {FALLBACK['top_p']})")
    g.add_argument("--min-p", type=float, default=None, help=f"(default {FALLBACK['min_p']})")
    g.add_argument("--repeat-penalty", type=float, default=None, dest="repetition_penalty",
                   help=f"1: off (default {FALLBACK['repetition_penalty']})")


def server_flags(args: argparse.Namespace) -> dict:
    """The sampling flags as given (None: not given), each checked against a request's own limits."""
    from ..errors import ForwardpassError
    from ..sampling_params import SamplingParams
    from ..server_defaults import FALLBACK, FLAGS
    flags = {f: getattr(args, f) for f in FALLBACK}
    for f, value in flags.items():
        try:
            if value is not None:
                SamplingParams(**{f: value})
        except ForwardpassError as e:
            raise ForwardpassError(f"{FLAGS[f]}: {e}") from None
    return flags
