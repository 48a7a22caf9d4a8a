"""The integer matrix products alone: a decode step's rows against the default model's weight shapes, in the kernel
build this CPU runs (or the one FORWARDPASS_KERNELS forces), with float32 and with float16 block scales.

    .venv/bin/python bench/kernels.py [--rows 1,2,4,16] [--repeats 30] [--json]

Each product is `kernels.gemv`, the decode step's own product (gemv.h: gemv_part, on every thread), timed as the
best of `repeats` calls on random tiles; "GMAC/s" counts rows × N × K multiply-adds. The shapes are the default
model's Q/K/V, gate and up, down and unembedding (N × K). The weights of all but the unembedding fit in L2 and L3
together, so the small shapes show the arithmetic, and the 49152-row unembedding shows memory.
"""

from __future__ import annotations

import argparse
import functools
import json

from common import counts, machine

from forwardpass.cli.options import positive_int

SHAPES = {"qkv": (960, 576), "gate_up": (3072, 576), "down": (576, 1536), "unembedding": (49152, 576)}
FORMATS = [("q4", 4, "float16"), ("q4", 4, "float32"), ("q8", 8, "float16"), ("q8", 8, "float32")]


def measure(rows: list[int], repeats: int) -> list[dict]:
    import torch

    from forwardpass import kernels
    from forwardpass.article.machine import best_seconds
    from forwardpass.quant import GROUP

    results = []
    g = torch.Generator().manual_seed(0)
    for shape_name, (n, k) in SHAPES.items():
        groups = (n + GROUP - 1) // GROUP
        for name, bits, scale_type in FORMATS:
            q = torch.randint(0, 256, (groups, k // 32, 512 if bits == 8 else 256), generator=g, dtype=torch.uint8)
            scale = (torch.rand(groups, k // 32, GROUP, generator=g) * 0.02).to(getattr(torch, scale_type))
            minimum = (-torch.rand(groups, k // 32, GROUP, generator=g) * 0.2).to(getattr(torch, scale_type))
            for m in rows:
                x = torch.randn(m, k, generator=g)
                seconds = best_seconds(functools.partial(kernels.gemv, x, bits, q, n, scale, minimum), repeats)
                results.append({"shape": shape_name, "n": n, "k": k, "weights": name, "scales": scale_type,
                                "rows": m, "us": seconds * 1e6, "gmac_per_s": m * n * k / seconds / 1e9})
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=counts, default=[1, 2, 4, 16])
    ap.add_argument("--repeats", type=positive_int, default=30)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    from forwardpass import kernels

    if not kernels.available():
        raise SystemExit("error: the native kernels are not available here (see `forwardpass --help`)")
    result = {"benchmark": "kernels", "build": kernels.isa(), "products": measure(args.rows, args.repeats)}
    result |= machine("cpu")
    if args.json:
        print(json.dumps(result))
        return
    print(f"{result['build']} kernels, {result['torch_threads']} threads, best of {args.repeats}; "
          f"µs per product (GMAC/s)")
    print(f"{'shape':12} {'N × K':12} {'weights':8} {'scales':8} " + "".join(f"{m:>18} rows" for m in args.rows))
    for i in range(0, len(result["products"]), len(args.rows)):
        line = result["products"][i:i + len(args.rows)]
        p = line[0]
        cells = "".join(f"{r['us']:>13.1f} ({r['gmac_per_s']:4.1f})" for r in line)
        print(f"{p['shape']:12} {p['n']:>5} × {p['k']:<5} {p['weights']:8} {p['scales']:8} {cells}")
    print(f"(load average {result['load_average']})")


if __name__ == "__main__":
    main()
