"""The options `serve` and `batch` share for running on Ray, and the spec every replica loads from them."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import ForwardpassError
from .options import positive_int
from .prompt_cache_options import prompt_cache_config


def add_ray_options(p, what: str) -> None:
    ray = p.add_argument_group(f"{what} on Ray (the extra forwardpass[ray])")
    ray.add_argument("--replicas", type=positive_int, default=None,
                     help=f"run N {what} on Ray (default: one engine in this process, no Ray)")
    ray.add_argument("--threads-per-replica", type=positive_int, default=None,
                     help="CPU threads each computes with (default: the cores divided among them)")
    ray.add_argument("--ray-address", default=None,
                     help="join this Ray cluster (e.g. auto, or ray://head:10001); default: a local one for this "
                          "command. The model path must exist on every node")


def refuse_without_replicas(args, *more: str) -> None:
    """Options that apply to --replicas only (`more`: a command's own) are refused without it."""
    for name in ("threads_per_replica", "ray_address", *more):
        if getattr(args, name) is not None:
            raise ForwardpassError(f"--{name.replace('_', '-')} applies to --replicas only")


def replica_spec(args, engine: dict, **server):
    """(the spec each replica loads, its threads). Without Ray: a one-line error saying how to install it."""
    try:
        import ray.data  # noqa: F401
        import ray.serve  # noqa: F401

        from ..scale.hosted import ReplicaSpec
    except ImportError as e:
        raise ForwardpassError(f"--replicas needs Ray ({e.name} is missing): pip install 'forwardpass[ray]'") from None
    from ..packaged import default_model_path, model_id, resolve_model

    path = default_model_path() if args.model is None else resolve_model(args.model)
    threads = args.threads_per_replica or max(1, (os.cpu_count() or 1) // args.replicas)
    spec = ReplicaSpec(model=str(Path(path).resolve()),
                       model_name=args.served_model_name or model_id(args.model, path),
                       storage=args.storage, kv_cache_dtype=args.kv_cache_dtype, ctx_size=args.ctx_size,
                       activations=args.activations,
                       device=args.device, engine=engine | prompt_cache_config(args),
                       default_max_tokens=args.default_max_tokens, **server)
    return spec, threads
