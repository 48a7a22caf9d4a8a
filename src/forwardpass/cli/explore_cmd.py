"""`forwardpass explore`: the article's widgets in a local browser page, driven by the real model."""

from __future__ import annotations

import json
import sys

from ..errors import ForwardpassError
from .options import check_listen, check_model, port_number


def add_parser(sub):
    p = sub.add_parser("explore", help="the interactive explorer on http://127.0.0.1:8001 (no network needed)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=port_number, default=8001)
    return p


def others(args) -> dict:
    """The models a page may switch to, each loaded on first use: the embedded default and every named one."""
    from ..packaged import NAMED
    from ..pipeline import load

    def loader(name):
        return lambda: load(name, device=args.device, storage=args.storage, kv_cache_dtype=args.kv_cache_dtype)
    found = {"smollm2-135m": loader(None)} if args.model is not None else {}
    found.update({name: loader(name) for name in NAMED if name != args.model})
    return found


def run(args) -> int:
    check_listen(args.host, args.port)
    check_model(args)
    import uvicorn

    from ..explorer.app import build_explorer
    from ..pipeline import load  # PyTorch: imported once the options are known to be good

    fp = load(args.model, device=args.device, progress=not args.json, storage=args.storage,
              kv_cache_dtype=args.kv_cache_dtype)
    if fp.tokenizer is None:
        raise ForwardpassError("the explorer needs a model with a tokenizer")
    address = f"http://{args.host}:{args.port}/"
    if args.json:
        print(json.dumps({"address": address, "model": fp.config.name}), flush=True)
    else:
        print(f"explorer for {fp.config.name} at {address}", file=sys.stderr, flush=True)
    uvicorn.run(build_explorer(fp, others(args), prepare=True), host=args.host, port=args.port, log_level="warning")
    return 0
