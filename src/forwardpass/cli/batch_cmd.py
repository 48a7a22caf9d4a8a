"""`forwardpass batch IN.jsonl OUT.jsonl`: OpenAI-shaped requests answered offline, in order, resumably (batch.py)."""

from __future__ import annotations

import json
import math
import signal
import sys
import threading
from pathlib import Path

from ..errors import ForwardpassError
from ..pipeline import load
from .options import positive_int


def add_parser(sub):
    p = sub.add_parser("batch", help="answer a JSONL file of OpenAI-shaped requests offline (the Batch API's format), "
                                     "in order; run again to resume")
    p.add_argument("requests", type=Path, help="input: one {custom_id, method, url, body} per line")
    p.add_argument("output", type=Path, help="answers, in the input's order (appended to when resuming)")
    p.add_argument("--served-model-name", default=None,
                   help="the model id the requests name (default: the file's name); another is answered 404")
    p.add_argument("--concurrency", type=positive_int, default=None,
                   help="requests in flight at once (default 64); with --replicas, per actor (default 16)")
    p.add_argument("--kv-cache-gib", type=float, default=1.0, help="KV block pool size (default 1 GiB)")
    p.add_argument("--max-num-seqs", type=positive_int, default=32, help="requests decoding at once (default 32)")
    p.add_argument("--default-max-tokens", type=positive_int, default=1024,
                   help="new tokens for a chat request that sets no max_tokens (default 1024)")
    ray = p.add_argument_group("engine actors on Ray Data (the extra forwardpass[ray])")
    ray.add_argument("--replicas", type=positive_int, default=None,
                     help="answer on N engine actors through Ray Data (default: one engine in this process, no Ray)")
    ray.add_argument("--threads-per-replica", type=positive_int, default=None,
                     help="CPU threads each actor computes with (default: the cores divided among the actors)")
    ray.add_argument("--ray-address", default=None,
                     help="join this Ray cluster; default: a local one for this command. The model path must exist "
                          "on every node")
    return p


def run(args) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    from ..batch import run_batch
    from ..engine import Engine, EngineConfig
    from ..server import ServerConfig, build_app

    if not args.requests.is_file():
        raise ForwardpassError(f"{args.requests}: no such file")
    if args.output.resolve() == args.requests.resolve():
        raise ForwardpassError("the output file must not be the input file")
    if not (math.isfinite(args.kv_cache_gib) and args.kv_cache_gib > 0):
        raise ForwardpassError(f"--kv-cache-gib must be a positive number, got {args.kv_cache_gib}")
    if args.replicas is None:
        for name in ("threads_per_replica", "ray_address"):
            if getattr(args, name) is not None:
                raise ForwardpassError(f"--{name.replace('_', '-')} applies to --replicas only")
    stop = threading.Event()

    def interrupt(sig, frame) -> None:  # finish what runs, write every answer before the first unfinished one
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        print("forwardpass: stopping: the requests running finish; run the same command again to resume",
              file=sys.stderr, flush=True)

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, interrupt)
    with Progress("{task.description}", BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  disable=args.json, transient=True) as bar:
        task = bar.add_task("answering", total=None)
        progress = lambda done, total: bar.update(task, completed=done, total=total)  # noqa: E731
        if args.replicas is not None:
            report = on_ray(args, progress, stop)
        else:
            fp = load(args.model, device=args.device, storage=args.storage, progress=not args.json)
            engine = Engine(fp, EngineConfig(kv_cache_bytes=int(args.kv_cache_gib * 2**30),
                                             max_num_seqs=args.max_num_seqs))
            name = args.served_model_name or Path(fp.source).name.removesuffix(".gguf")
            app = build_app(engine, ServerConfig(name, default_max_tokens=args.default_max_tokens))
            report = run_batch(engine, app, args.requests, args.output, concurrency=args.concurrency or 64,
                               progress=progress, stop=stop)
    if args.json:
        print(json.dumps(report.__dict__))
    else:
        cut = " — interrupted" if report.interrupted else ""
        print(f"{report.succeeded} answered, {report.failed} failed, {report.skipped} already in {args.output} "
              f"({report.requests} requests, {report.seconds:.1f} s){cut}", file=sys.stderr)
        for failure in report.failures:
            print(f"  {failure}", file=sys.stderr)
    return 130 if report.interrupted else 0


def on_ray(args, progress, stop):
    """The same answers from `--replicas` engine actors through Ray Data."""
    import os

    try:
        from ..scale.data import run_on_ray
        from ..scale.hosted import ReplicaSpec
    except ImportError as e:
        raise ForwardpassError(f"--replicas needs Ray Data ({e.name} is missing): pip install 'forwardpass[ray]'") \
            from None
    from ..models import resolve_model
    from ..pipeline import default_model_path

    path = default_model_path() if args.model is None else resolve_model(args.model)
    threads = args.threads_per_replica or max(1, (os.cpu_count() or 1) // args.replicas)
    spec = ReplicaSpec(model=str(Path(path).resolve()),
                       model_name=args.served_model_name or Path(path).name.removesuffix(".gguf"),
                       storage=args.storage, device=args.device,
                       engine={"kv_cache_bytes": int(args.kv_cache_gib * 2**30), "max_num_seqs": args.max_num_seqs},
                       default_max_tokens=args.default_max_tokens)
    return run_on_ray(spec, args.requests, args.output, args.replicas, threads, args.ray_address, progress, stop,
                      rows_per_batch=args.concurrency or 16)
