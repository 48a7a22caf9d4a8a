"""`forwardpass serve`: the OpenAI-compatible API on 127.0.0.1 (unless told otherwise)."""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import signal
import sys
import threading
import time

from ..errors import ForwardpassError
from .options import (
    add_server_sampling,
    add_speculative_option,
    check_listen,
    check_model,
    port_number,
    positive_int,
    positive_seconds,
    seconds,
    server_flags,
)
from .prompt_cache_options import prompt_cache_config
from .replicas import add_ray_options, refuse_without_replicas, replica_spec


def add_parser(sub):
    p = sub.add_parser("serve", help="serve the OpenAI-compatible API (continuous batching, paged KV cache)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=port_number, default=8000)
    p.add_argument("--api-key", action="append", default=None, metavar="KEY",
                   help="require 'Authorization: Bearer KEY' (on /metrics too); given more than once, any of the keys "
                        "(drafts never learn across keys)")
    p.add_argument("--log-format", choices=("text", "json", "off"), default="text",
                   help="one line per request on stderr: method and path, status, model, tokens in and out, time to "
                        "first token, total time (default text)")
    p.add_argument("--cors-origins", default="", metavar="ORIGINS",
                   help="comma-separated origins whose browser pages may call the API, e.g. http://localhost:3000 "
                        "('*': any; default: none)")
    p.add_argument("--served-model-name", default=None,
                   help="the model id clients send (default: the installed name typed, else the file's name; with "
                        "several --model, name each ALIAS=PATH instead)")
    p.add_argument("--max-models", type=positive_int, default=4,
                   help="chat models loaded at once; the least recently used idle one is unloaded to load another "
                        "(default 4)")
    p.add_argument("--max-memory-gib", type=float, default=None,
                   help="the most memory the loaded chat models may hold together, weights and KV pools (default: 90%% "
                        "of the memory available at start)")
    p.add_argument("--kv-cache-gib", type=float, default=1.0, help="KV block pool size (default 1 GiB)")
    p.add_argument("--block-size", type=positive_int, default=16, help="tokens per KV block (default 16)")
    p.add_argument("--max-num-seqs", type=positive_int, default=32, help="requests running at once (default 32)")
    add_speculative_option(p)
    p.add_argument("--max-num-batched-tokens", type=positive_int, default=512, help="tokens per step (default 512)")
    p.add_argument("--no-prefix-caching", action="store_true", help="do not share cached prompt blocks")
    p.add_argument("--max-body-bytes", type=positive_int, default=1 << 20, help="largest request body (default 1 MiB)")
    p.add_argument("--max-tokens", "--default-max-tokens", dest="default_max_tokens", type=positive_int, default=1024,
                   help="new tokens for a chat request that sets no max_tokens (default 1024)")
    p.add_argument("--request-timeout", type=seconds, default=600.0,
                   help="end a request this many seconds after it arrives (default 600; 0: no limit)")
    p.add_argument("--constraint-timeout", type=positive_seconds, default=10.0,
                   help="seconds a request's grammar, JSON schema or regular expression may take to compile before "
                        "it is refused with a 400 (default 10)")
    p.add_argument("--embedding-model", nargs="?", const="default", metavar="PATH",
                   help="also serve /v1/embeddings: the embedded all-MiniLM-L6-v2, or a BERT sentence-embedding "
                        "model at PATH (a directory or a zip of one)")
    p.add_argument("--shutdown-grace", type=seconds, default=5.0,
                   help="on SIGTERM, seconds requests in flight may still run before they are ended (default 5)")
    add_server_sampling(p)
    add_ray_options(p, "engine replicas behind the same routes")
    ray = p.add_argument_group("routing among replicas")
    ray.add_argument("--routing", choices=("prefix", "round-robin", "pow2"), default=None,
                     help="how requests pick a replica: the one caching the longest prompt prefix, balanced against "
                          "load (default); each in turn; or the less loaded of two at random")
    return p


def routes(app) -> list[str]:
    """The API's routes as `METHOD /path`, in the order they were added (routers included as they are, unprefixed)."""
    said = []
    for r in app.routes:
        if hasattr(r, "original_router"):
            said += routes(r.original_router)
        elif getattr(r, "methods", None) and r.path != "/openapi.json":
            path = re.sub(r":\w+}", "}", r.path)  # /v1/models/{model_id}, without its converter
            said += [f"{m} {path}" for m in sorted(r.methods) if m != "HEAD"]
    return said


def banner(models: list, address: str, served, block_size: int, embedder, app, threads: int, registry) -> str:
    """What `serve` says when it starts: where, what, with what, and what a bare request gets."""
    told = ", ".join(f"{k.replace('_', ' ')} {v:g}" for k, v in served.sampling.items())
    engine = served.engine
    lines = [f"serving {models[0].id} at {address}" + (f", embeddings with {embedder.name}" if embedder else "")]
    if len(models) > 1:
        budget = f"{registry.max_bytes / 2**30:.1f} GiB"
        lines.append(f"  also {', '.join(m.id for m in models[1:])}, each loaded on its first request (at most "
                     f"{registry.max_models} at once, {budget} in all)")
    lines.append(f"  {threads} thread(s); KV pool {engine.pool.num_blocks} blocks of {block_size} tokens")
    if engine.prompt_cache is not None:
        store = engine.prompt_cache.store
        lines.append(f"  prompt cache in {store.root}: {store.used / 2**20:.1f} MiB held, at most "
                     f"{store.limit / 2**20:.0f} MiB")
    lines += [f"  a request that leaves out sampling gets {told}",
              "  routes: " + ", ".join(routes(app))]
    return "\n".join(lines)


def access_log(log_format: str) -> str | None:
    """The access log's form, its lines going to stderr as they are; None: off."""
    if log_format == "off":
        return None
    import logging
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    access = logging.getLogger("forwardpass.server.access")
    access.addHandler(handler)
    access.setLevel(logging.INFO)
    access.propagate = False
    return log_format


ORIGIN = re.compile(r"https?://(?:\[[0-9A-Fa-f:.]+\]|[^\s/:@?#\[\]]+)(?::(\d{1,5}))?")  # scheme://host[:port]


def origins(text: str) -> tuple[str, ...]:
    """--cors-origins as a tuple; an origin that is not '*' or scheme://host[:port], its port from 1 to 65535, is
    refused by name."""
    listed = tuple(o.strip().rstrip("/") for o in text.split(",") if o.strip())
    for o in listed:
        if o != "*" and not is_origin(o):
            raise ForwardpassError(f"--cors-origins: {o!r} is not an origin (scheme://host[:port], the port from 1 to "
                                   f"65535, or '*')")
    return listed


def is_origin(text: str) -> bool:
    m = ORIGIN.fullmatch(text)
    return m is not None and (m[1] is None or 1 <= int(m[1]) <= 65535)


def run(args) -> int:
    for name, value in (("kv-cache-gib", args.kv_cache_gib), ("max-memory-gib", args.max_memory_gib)):
        if value is not None and not (math.isfinite(value) and value > 0):
            raise ForwardpassError(f"--{name} must be a positive number, got {value}")
    if args.ray_address is None:  # a joined cluster's Serve listens on its own node, perhaps on this port already
        check_listen(args.host, args.port)
    flags, cors = server_flags(args), origins(args.cors_origins)
    models = check_model(args)  # (with replicas, the path must exist on every node: here too)
    if args.replicas is not None:
        if cors:
            raise ForwardpassError("--cors-origins applies to one server, not yet to --replicas")
        if len(models) > 1:
            raise ForwardpassError("several --model apply to one server, not yet to --replicas")
        args.model = models[0].typed
        return run_replicas(args, flags)
    refuse_without_replicas(args, "routing")
    from ..kernels.team import most_threads  # PyTorch: imported once the options are known to be good
    from ..server import ServerConfig, build_app, make_server

    engine_config = {"kv_cache_bytes": int(args.kv_cache_gib * 2**30), "block_size": args.block_size,
                     "max_num_seqs": args.max_num_seqs, "max_num_batched_tokens": args.max_num_batched_tokens,
                     "prefix_caching": not args.no_prefix_caching, "request_timeout": args.request_timeout or None,
                     "speculative": args.speculative}
    config = ServerConfig(models[0].id, tuple(args.api_key or ()) or None, args.max_body_bytes, args.default_max_tokens,
                          constraint_timeout=args.constraint_timeout, cors_origins=cors,
                          access_log=access_log(args.log_format))
    registry = hosting(args, models, config, engine_config, flags)
    first = registry.load_now(models[0].id, progress=not args.json)
    embedder = None
    if args.embedding_model is not None:
        from ..embeddings import load_embedder
        embedder = load_embedder(None if args.embedding_model == "default" else args.embedding_model, args.device)
    app = build_app(registry, config, embedder)
    server = make_server(app, registry, args.host, args.port, args.shutdown_grace)
    address = f"http://{args.host}:{args.port}/v1"
    if args.json:
        print(json.dumps({"address": address, "model": models[0].id, "models": [m.id for m in models],
                          "kv_blocks": first.engine.pool.num_blocks, "sampling": first.sampling,
                          "embedding_model": embedder.name if embedder else None, "threads": most_threads(),
                          "prompt_cache": args.prompt_cache,
                          "routes": routes(app)}), flush=True)
    else:
        print(banner(models, address, first, args.block_size, embedder, app, most_threads(), registry),
              file=sys.stderr, flush=True)
    # The engines run in this thread, where the first model was loaded (registry.py says why); HTTP in another.
    http = threading.Thread(target=server.run, name="forwardpass-http", daemon=True)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, server.handle_exit)
    http.start()
    registry.run(until=lambda: not http.is_alive())
    http.join()
    if not server.started:
        raise ForwardpassError(f"could not listen on {args.host}:{args.port}")
    if not args.json:
        print(f"stopped serving {', '.join(m.id for m in models)}", file=sys.stderr, flush=True)
    return 0


def hosting(args, models: list, config, engine_config: dict, flags: dict):
    """The registry of the chat models `serve` and `batch` answer for: each loaded as the options say, with the
    engine they configure, under --max-models (where the command has it) and the memory budget."""
    from ..engine import EngineConfig
    from ..server.registry import Registry
    from ..server.to_engine import estimate, opener

    load_options = {"device": args.device, "storage": args.storage, "kv_cache_dtype": args.kv_cache_dtype,
                    "activations": args.activations,
                    "ctx_size": args.ctx_size, "backend": "auto"}
    budget = getattr(args, "max_memory_gib", None)
    max_bytes = int(budget * 2**30) if budget is not None else int(0.9 * available_memory())
    open_model = opener(config, load_options, EngineConfig(**engine_config, **prompt_cache_config(args)), flags)
    say = (lambda line: None) if args.json else (lambda line: print(line, file=sys.stderr, flush=True))
    return Registry(models, open_model, lambda spec: estimate(spec, args.storage, engine_config["kv_cache_bytes"]),
                    getattr(args, "max_models", None), max_bytes, getattr(args, "request_timeout", 0) or 600.0, say,
                    args.ctx_size)


def available_memory() -> int:
    """Bytes of memory the system could give now (MemAvailable), or all of it where that cannot be read."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def run_replicas(args, flags: dict) -> int:
    """`serve --replicas N`: the routes on Ray Serve's proxy, the engines in N replicas; ends on SIGINT/SIGTERM."""
    args.routing = args.routing or "prefix"
    spec, threads = replica_spec(
        args, {"kv_cache_bytes": int(args.kv_cache_gib * 2**30), "block_size": args.block_size,
               "max_num_seqs": args.max_num_seqs, "max_num_batched_tokens": args.max_num_batched_tokens,
               "prefix_caching": not args.no_prefix_caching, "request_timeout": args.request_timeout or None,
               "speculative": args.speculative},
        api_key=tuple(args.api_key or ()) or None, max_body_bytes=args.max_body_bytes,
        constraint_timeout=args.constraint_timeout, embedding_model=args.embedding_model, grace=args.shutdown_grace,
        sampling_flags=flags)
    if not args.json:
        print(f"starting {args.replicas} replicas of {threads} thread(s) on Ray Serve…", file=sys.stderr, flush=True)
    out = sys.stdout
    with contextlib.redirect_stdout(sys.stderr):  # what Ray prints goes to stderr: stdout is this command's
        return serve_replicas(args, spec, threads, out)


def serve_replicas(args, spec, threads: int, out) -> int:
    from ..scale import cluster

    running = cluster.start(spec, args.replicas, threads, args.host, args.port, args.routing, args.ray_address)
    signals: list[int] = []  # a handler that only appends: a second signal inside the first cannot deadlock it
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda sig, frame: signals.append(sig))
    if args.json:
        print(json.dumps({"address": running.address, "model": spec.model_name, "replicas": args.replicas,
                          "threads_per_replica": threads, "routing": args.routing}), file=out, flush=True)
    else:
        print(f"serving {spec.model_name} at {running.address} ({args.replicas} replicas × {threads} thread(s), "
              f"{args.routing} routing)", file=sys.stderr, flush=True)
    while not signals:
        time.sleep(0.2)
    running.stop()
    return 0
