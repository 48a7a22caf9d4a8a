"""`forwardpass serve`: the OpenAI-compatible API on 127.0.0.1 (unless told otherwise)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..engine import Engine, EngineConfig
from ..errors import ForwardpassError
from ..pipeline import load


def add_parser(sub):
    p = sub.add_parser("serve", help="serve the OpenAI-compatible API (continuous batching, paged KV cache)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--api-key", default=None, help="require 'Authorization: Bearer KEY'")
    p.add_argument("--served-model-name", default=None, help="the model id clients send (default: the file's name)")
    p.add_argument("--kv-cache-gib", type=float, default=1.0, help="KV block pool size (default 1 GiB)")
    p.add_argument("--block-size", type=int, default=16, help="tokens per KV block (default 16)")
    p.add_argument("--max-num-seqs", type=int, default=32, help="requests running at once (default 32)")
    p.add_argument("--max-num-batched-tokens", type=int, default=512, help="tokens per step (default 512)")
    p.add_argument("--no-prefix-caching", action="store_true", help="do not share cached prompt blocks")
    p.add_argument("--max-body-bytes", type=int, default=1 << 20, help="largest request body (default 1 MiB)")
    return p


def run(args) -> int:
    import uvicorn

    from ..server import ServerConfig, build_app

    for name in ("port", "block_size", "max_num_seqs", "max_num_batched_tokens", "max_body_bytes"):
        if getattr(args, name) <= 0:
            raise ForwardpassError(f"--{name.replace('_', '-')} must be positive")
    if args.kv_cache_gib <= 0:
        raise ForwardpassError("--kv-cache-gib must be positive")
    fp = load(args.model, device=args.device, storage=args.storage, progress=not args.json)
    engine = Engine(fp, EngineConfig(kv_cache_bytes=int(args.kv_cache_gib * 2**30), block_size=args.block_size,
                                     max_num_seqs=args.max_num_seqs, max_num_batched_tokens=args.max_num_batched_tokens,
                                     prefix_caching=not args.no_prefix_caching))
    name = args.served_model_name or Path(fp.source).name.removesuffix(".gguf")
    app = build_app(engine, ServerConfig(name, args.api_key, args.max_body_bytes))
    engine.start()
    address = f"http://{args.host}:{args.port}/v1"
    if args.json:
        print(json.dumps({"address": address, "model": name, "kv_blocks": engine.pool.num_blocks}), flush=True)
    else:
        print(f"serving {name} at {address} ({engine.pool.num_blocks} KV blocks of {args.block_size} tokens)",
              file=sys.stderr, flush=True)
    try:
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    finally:
        engine.stop()
    return 0
