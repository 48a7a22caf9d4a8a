"""`forwardpass batch IN.jsonl OUT.jsonl`: OpenAI-shaped requests answered offline, in order, resumably (batch.py)."""

from __future__ import annotations

import json
import math
import signal
import sys
import threading
from pathlib import Path

from ..errors import ForwardpassError
from .options import add_server_sampling, add_speculative_option, check_model, positive_int, server_flags
from .replicas import add_ray_options, refuse_without_replicas, replica_spec


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
    add_speculative_option(p)
    p.add_argument("--default-max-tokens", type=positive_int, default=1024,
                   help="new tokens for a chat request that sets no max_tokens (default 1024)")
    add_server_sampling(p)
    add_ray_options(p, "engine actors answering through Ray Data")
    return p


def run(args) -> int:
    if not args.requests.is_file():
        raise ForwardpassError(f"{args.requests}: no such file")
    if not (math.isfinite(args.kv_cache_gib) and args.kv_cache_gib > 0):
        raise ForwardpassError(f"--kv-cache-gib must be a positive number, got {args.kv_cache_gib}")
    if args.replicas is None:
        refuse_without_replicas(args)
    args.sampling_flags = server_flags(args)
    models = check_model(args)
    if args.replicas is not None and len(models) > 1:
        raise ForwardpassError("several --model apply to one process, not yet to --replicas")
    args.model = models[0].typed if args.replicas is not None else args.model
    from ..batch import resumable, writing
    resumable(args.requests, args.output)  # an output that is not a new file or an earlier run's is refused now
    with writing(args.output):  # and one that another batch is writing
        report = answer_all(args, models)
    if args.json:
        print(json.dumps(report.__dict__))
    else:
        cut = " — interrupted" if report.interrupted else ""
        print(f"{report.succeeded} answered, {report.failed} failed, {report.skipped} already in {args.output} "
              f"({report.requests} requests, {report.seconds:.1f} s){cut}", file=sys.stderr)
        for failure in report.failures:
            print(f"  {failure}", file=sys.stderr)
    return 130 if report.interrupted else 0


def answer_all(args, models: list):
    """The requests not yet answered, answered (through Ray with --replicas), with a progress bar: the run's report.
    SIGINT or SIGTERM stops it with what is written resumable."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

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
            return on_ray(args, progress, stop)
        from ..batch import run_batch  # PyTorch: imported once the options are known to be good
        from ..server import ServerConfig, build_app
        from .serve_cmd import hosting

        config = ServerConfig(models[0].id, default_max_tokens=args.default_max_tokens)
        registry = hosting(args, models, config, {"kv_cache_bytes": int(args.kv_cache_gib * 2**30),
                                                  "max_num_seqs": args.max_num_seqs,
                                                  "speculative": args.speculative}, args.sampling_flags)
        registry.load_now(models[0].id, progress=not args.json)
        app = build_app(registry, config)
        return run_batch(registry, app, args.requests, args.output, concurrency=args.concurrency or 64,
                         progress=progress, stop=stop)


def on_ray(args, progress, stop):
    """The same answers from `--replicas` engine actors through Ray Data."""
    spec, threads = replica_spec(args, {"kv_cache_bytes": int(args.kv_cache_gib * 2**30),
                                        "max_num_seqs": args.max_num_seqs, "speculative": args.speculative},
                                       sampling_flags=args.sampling_flags)
    from ..scale.data import run_on_ray
    return run_on_ray(spec, args.requests, args.output, args.replicas, threads, args.ray_address, progress, stop,
                      rows_per_batch=args.concurrency or 16)
