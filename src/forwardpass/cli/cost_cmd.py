"""`forwardpass cost MODEL`: the seed's arithmetic for any model, as tables, JSON or a plot."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from ..article import cost
from ..config import ACTIVATIONS, PRESETS, ModelConfig, preset
from ..errors import ForwardpassError
from ..packaged import NAMED, default_model_path, model_id, resolve_model
from ..weights import read_config

DTYPES = list(cost.BYTES_PER_WEIGHT)


def add_parser(sub):
    p = sub.add_parser("cost", help="parameters, FLOPs, bytes, KV cache, intensity and concurrency of a model")
    p.add_argument("target", nargs="?", default=None, metavar="MODEL",
                   help=f"a preset ({', '.join(PRESETS)}) or a model file (default: the embedded model)")
    p.add_argument("--context", type=int, default=None, help="tokens held per sequence (default: context length)")
    p.add_argument("--prompt", type=int, default=16, help="prompt tokens P (default 16)")
    p.add_argument("--new", type=int, default=100, help="generated tokens (default 100)")
    p.add_argument("--dtype", default="fp16", choices=DTYPES, help="weight storage (default fp16)")
    p.add_argument("--concurrency", type=int, default=1, help="concurrent sequences S (default 1)")
    p.add_argument("--plot", metavar="FILE", help="write the seed's curves as a PNG")
    p.add_argument("--measure", action="store_true",
                   help="measure this machine's bandwidth and matmul rate, predict prefill and decode, run them")
    p.add_argument("--plan", action="store_true",
                   help="size a deployment: the replicas, CPUs and memory --rate requests/s of --prompt and --new "
                        "tokens need, from one replica measured here (weights as stored)")
    p.add_argument("--rate", type=float, default=None, help="with --plan: target requests per second")
    p.add_argument("--threads-per-replica", type=int, default=None,
                   help="with --plan: CPU threads each replica computes with (default 1)")
    p.add_argument("--activations", default=None, choices=ACTIVATIONS,
                   help="with --plan: how the replica's integer products quantize their inputs (default exact)")
    p.add_argument("--max-batch", type=int, default=None,
                   help="with --plan: the most requests a replica is measured answering at once (default 16)")
    return p


def resolve_config(target: str | None) -> tuple[ModelConfig, str | None]:
    """A preset's config, or a model file's (metadata only). Returns the file path too, if any."""
    if target is None:
        path = default_model_path()
        return read_config(path), str(path)
    if target in PRESETS:
        return preset(target), None
    if target in NAMED or Path(target).exists():
        path = resolve_model(target)
        return read_config(path), str(path)
    raise ForwardpassError(f"unknown model {target!r}: not a preset ({', '.join(PRESETS)}), not an installed model "
                           f"({', '.join(NAMED)}) and not a file")


def report(c: ModelConfig, context: int, prompt: int, new: int, dtype: str, concurrency: int) -> dict:
    """Every number `cost` prints, as one dict."""
    for name, value in (("context", context), ("prompt", prompt), ("new", new), ("concurrency", concurrency)):
        if value <= 0:
            raise ForwardpassError(f"--{name} must be a positive integer, got {value}")
    if context > c.context_length:
        raise ForwardpassError(f"--context {context} exceeds the model's context length {c.context_length}")
    kv_dtype = dtype if dtype in ("fp32", "fp16", "bf16") else "fp16"
    weights = cost.weight_bytes(c, dtype)
    cache = cost.kv_bytes(c, context, kv_dtype, concurrency)
    return {
        "model": c.name, "config": c.to_dict(),
        "settings": {"context": context, "prompt": prompt, "new": new, "dtype": dtype, "kv_dtype": kv_dtype,
                     "concurrency": concurrency},
        "parameters": cost.parameters(c).to_dict(),
        "flops": {"matmul_per_token": cost.matmul_flops(c, 1),
                  "attention_per_token_at_context": cost.attention_flops(c, 1, context - 1),
                  "prefill": cost.forward_flops(c, prompt),
                  "decode_step_at_context": cost.forward_flops(c, 1, context - 1)},
        "memory": {"weights_bytes": weights, "kv_bytes_per_token": cost.kv_bytes_per_token(c, kv_dtype),
                   "kv_bytes_per_sequence": cost.kv_bytes(c, context, kv_dtype),
                   "kv_bytes_all_sequences": cache, "total_bytes": weights + cache,
                   "crossover_sequences": cost.crossover_sequences(c, context, kv_dtype)},
        "intensity": {"prefill": cost.intensity(c, prompt, dtype), "decode": cost.intensity(c, 1, dtype)},
        "loop": {"naive_work": cost.naive_work(prompt, new), "cached_work": cost.cached_work(prompt, new),
                 "naive_over_cached": cost.naive_over_cached(prompt, new),
                 "naive_over_cached_with_prefill": cost.naive_over_cached(prompt, new, count_prefill=True)},
    }


def run(args) -> int:
    if args.plot:
        folder = Path(args.plot).resolve().parent
        if not folder.is_dir():
            raise ForwardpassError(f"--plot {args.plot}: the directory {folder} does not exist")
    if args.target is not None and args.model is not None and args.target != args.model:
        raise ForwardpassError(f"name the model once: MODEL is {args.target!r} but --model is {args.model!r}")
    if not args.plan:
        for name in ("rate", "threads_per_replica", "max_batch", "activations"):
            if getattr(args, name) is not None:
                raise ForwardpassError(f"--{name.replace('_', '-')} applies to --plan only")
    elif args.rate is None or not (math.isfinite(args.rate) and args.rate > 0):
        raise ForwardpassError(f"--plan needs --rate, a positive number of requests per second (got {args.rate})")
    else:
        args.threads_per_replica = 1 if args.threads_per_replica is None else args.threads_per_replica
        args.max_batch = 16 if args.max_batch is None else args.max_batch
        if args.threads_per_replica <= 0 or args.max_batch <= 0:
            raise ForwardpassError("--threads-per-replica and --max-batch must be positive integers")
    c, path = resolve_config(args.target or args.model)
    if args.plan and path is None:
        raise ForwardpassError("--plan measures a replica: give a model file, not a preset")
    context = c.context_length if args.context is None else args.context
    data = report(c, context, args.prompt, args.new, args.dtype, args.concurrency)
    typed = args.target or args.model
    data["model"] = typed if path is None else model_id(typed, path)  # a preset's name, or the id a server serves
    data["name"] = c.name
    if args.measure:
        from ..article.measure import measure
        data["measured"] = measure(c, path, args.prompt, args.new, args.device, progress=not args.json)
    if args.plan:
        from ..plan import measure_replica, plan
        if not args.json:
            print(f"measuring one replica ({args.threads_per_replica} thread(s), up to {args.max_batch} requests at "
                  "once)…", file=sys.stderr, flush=True)
        measured = measure_replica(path, None, args.device or "cpu", args.prompt, args.new, args.max_batch,
                                   args.threads_per_replica, args.activations or "exact")
        data["plan"] = plan(measured, args.rate, args.threads_per_replica) | {"measured": measured}
    if args.plot:
        from ..article.cost_plot import plot
        plot(c, context, args.dtype, args.plot)
        data["plot"] = args.plot
    if args.json:
        print(json.dumps(data))
    else:
        show(data)
    return 0


def _gib(n: float) -> str:
    return f"{n / cost.GiB:,.2f} GiB" if n >= cost.GiB / 10 else f"{n / 2**20:,.2f} MiB"


def show(d: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    s, p, m = d["settings"], d["parameters"], d["memory"]
    console = Console()
    t = Table(title=f"{d['model']} · weights {s['dtype']}, KV cache {s['kv_dtype']}", show_header=False)
    t.add_column(style="bold")
    t.add_column(justify="right")
    rows = [
        ("parameters", f"{p['total']:,}"),
        ("  embeddings (V × d)", f"{p['embeddings']:,}"), ("  positions", f"{p['positions']:,}"),
        ("  attention (all blocks)", f"{p['attention']:,}"), ("  FFN (all blocks)", f"{p['ffn']:,}"),
        ("  norms", f"{p['norms']:,}"), ("  separate unembedding", f"{p['unembedding']:,}"),
        ("per block", f"{p['per_block']:,}"), ("FFN share of a block", f"{p['ffn_share_of_block']:.1%}"),
        ("share in the blocks", f"{p['blocks_share']:.1%}"),
        ("matmul FLOPs per token", f"{d['flops']['matmul_per_token']:,}"),
        (f"attention FLOPs per token at {s['context']:,} tokens", f"{d['flops']['attention_per_token_at_context']:,}"),
        (f"prefill FLOPs, P = {s['prompt']}", f"{d['flops']['prefill']:,}"),
        ("weights", _gib(m["weights_bytes"])), ("KV cache per token", f"{m['kv_bytes_per_token']:,} B"),
        (f"KV cache per sequence ({s['context']:,} tokens)", _gib(m["kv_bytes_per_sequence"])),
        (f"KV cache × {s['concurrency']} sequences", _gib(m["kv_bytes_all_sequences"])),
        ("weights + caches", _gib(m["total_bytes"])),
        ("caches outweigh weights from", f"{m['crossover_sequences']:,} sequences"),
        (f"intensity, prefill P = {s['prompt']}", f"{d['intensity']['prefill']:.1f} FLOPs/byte"),
        ("intensity, decode", f"{d['intensity']['decode']:.1f} FLOPs/byte"),
        (f"naive / cached work, P = {s['prompt']}, {s['new']} new", f"{d['loop']['naive_over_cached']:.1f}×"),
        ("  counting the cached prefill", f"{d['loop']['naive_over_cached_with_prefill']:.1f}×"),
    ]
    for row in rows:
        t.add_row(*row)
    console.print(t)
    if "measured" in d:
        show_measured(console, d["measured"])
    if "plan" in d:
        show_plan(console, d["plan"])
    if "plot" in d:
        console.print(f"plot written to {d['plot']}")


def show_measured(console, r: dict) -> None:
    from rich.table import Table

    t = Table(title=f"this machine ({r['device']}, {r['dtype']} weights, load average {r['load_average']})")
    for col in ("", "predicted", "measured", "measured / predicted"):
        t.add_column(col, justify="right")
    t.add_row("memory bandwidth", "", f"{r['bandwidth_bytes_per_s'] / 1e9:.1f} GB/s", "")
    t.add_row(f"matmul rate ({r['matmul_shape']})", "", f"{r['matmul_flops_per_s'] / 1e9:.1f} GFLOP/s", "")
    for key in ("prefill", "decode"):
        pred, got = r[f"predicted_{key}_tokens_per_s"], r[f"measured_{key}_tokens_per_s"]
        t.add_row(f"{key} tokens/s", f"{pred:.1f}", f"{got:.1f}", f"{got / pred:.0%}")
    console.print(t)


def show_plan(console, p: dict) -> None:
    from rich.table import Table

    m = p["measured"]
    t = Table(title=f"one replica, measured ({m['threads']} thread(s), {m['storage']} weights, {m['activations']} "
                    f"activations, P = {m['prompt']}, N = {m['new']}, load average {m['load_average']})")
    for col in ("requests at once", "round (s)", "requests/s", "tokens/s"):
        t.add_column(col, justify="right")
    for r in m["rounds"]:
        t.add_row(str(r["batch"]), f"{r['seconds']:.2f}", f"{r['requests_per_s']:.2f}", f"{r['tokens_per_s']:.1f}")
    console.print(t)
    t = Table(title=f"plan for {p['rate']:g} requests/s", show_header=False)
    t.add_column(style="bold")
    t.add_column(justify="right")
    t.add_row("replicas", f"{p['replicas']} (each {p['batch_per_replica']} requests at once, "
                          f"{p['replica_requests_per_s']:.2f} requests/s, {p['latency_s']:.2f} s per request)")
    t.add_row("CPUs", f"{p['cpus']} ({p['threads_per_replica']} per replica)")
    t.add_row("memory", f"{_gib(p['memory_bytes'])} ({_gib(p['memory_per_replica_bytes'])} per replica)")
    t.add_row("capacity", f"{p['capacity_requests_per_s']:.2f} requests/s")
    console.print(t)
