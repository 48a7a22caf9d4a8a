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


def others(args, models: list) -> dict:
    """The models a page may switch to, each loaded on first use: the embedded default, every installed one and every
    other --model (catalog.ModelSpec), each under its id."""
    from ..loader import load
    from ..packaged import NAMED, default_model_path, resolve_model
    from ..weights import read_config

    def loader(name):
        def load_it():  # --ctx-size holds where it fits; a model of a shorter context keeps its own
            path = default_model_path() if name is None else resolve_model(name)
            ctx = args.ctx_size and min(args.ctx_size, read_config(path).context_length)
            return load(path, device=args.device, storage=args.storage, kv_cache_dtype=args.kv_cache_dtype,
                        activations=args.activations, ctx_size=ctx)
        return load_it
    found = {name: loader(name) for name in NAMED}
    found.pop(models[0].typed or "smollm2-135m", None)  # the first, loaded already under its own id
    found.update({m.id: loader(m.typed) for m in models[1:]})
    return found


def run(args) -> int:
    check_listen(args.host, args.port)
    models = check_model(args)
    import uvicorn

    from ..explorer.app import build_explorer
    from ..loader import load  # PyTorch: imported once the options are known to be good

    fp = load(models[0].typed, device=args.device, progress=not args.json, storage=args.storage,
              kv_cache_dtype=args.kv_cache_dtype, activations=args.activations, ctx_size=args.ctx_size)
    if fp.tokenizer is None:
        raise ForwardpassError("the explorer needs a model with a tokenizer")
    address = f"http://{args.host}:{args.port}/"
    if args.json:
        print(json.dumps({"address": address, "model": fp.config.name}), flush=True)
    else:
        print(f"explorer for {fp.config.name} at {address}", file=sys.stderr, flush=True)
    uvicorn.run(build_explorer(fp, others(args, models), prepare=True), host=args.host, port=args.port,
                log_level="warning")
    return 0
