"""Prefill through the native step against the PyTorch blocks, in one run: tokens/s of a prompt of each length into a
fresh paged pool, in chunks of the engine's step budget, the two paths alternating; and how far apart their last
logits are.

    .venv/bin/python bench/prefill.py [--tokens 128,1024] [--runs 5] [--storage stored] [--kv-cache-dtype auto]
                                      [--json]

The prompt is bench/text.txt, repeated as far as a length needs. Rates are medians of --runs runs.
"""

from __future__ import annotations

import argparse
import json
import time

from common import TEXT, as_tensor, counts, machine, median

from forwardpass.cli.options import add_threads_option, apply_threads, positive_int
from forwardpass.config import KV_CACHE_DTYPES, STORAGE_MODES

BUDGET = 512  # tokens a step prefills (EngineConfig.max_num_batched_tokens)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=counts, default=[128, 1024])
    ap.add_argument("--runs", type=positive_int, default=5)
    ap.add_argument("--storage", default="stored", choices=STORAGE_MODES)
    ap.add_argument("--kv-cache-dtype", default="auto", choices=KV_CACHE_DTYPES)
    ap.add_argument("--json", action="store_true")
    add_threads_option(ap)
    args = ap.parse_args()
    apply_threads(args)

    import torch

    import forwardpass
    from forwardpass.engine import BlockPool
    from forwardpass.engine.rows import NATIVE, Chunk, Rows
    from forwardpass.engine.runner import Runner

    fp = forwardpass.load(storage=args.storage, kv_cache_dtype=args.kv_cache_dtype)
    ids = fp.encode(TEXT)
    rows = []
    for n in args.tokens:
        prompt = (ids * (n // len(ids) + 1))[:n]
        pool = BlockPool(fp.config, -(-n // 16), 16, fp.kv_format())
        table = list(range(pool.num_blocks))
        runner, reference = Runner(fp.model, pool), Runner(fp.model, pool, reference=True)
        if runner.capabilities is not NATIVE:
            raise SystemExit("error: the native step does not bind this model here")
        paths = {name: lambda chunks, r=r: r.step(Rows([Chunk(*c) for c in chunks])).logits
                 for name, r in (("native", runner), ("blocks", reference))}
        rates: dict[str, list[float]] = {name: [] for name in paths}
        last = {}
        with torch.inference_mode():
            for _ in range(args.runs):
                for name, run in paths.items():
                    start = time.perf_counter()
                    for at in range(0, n, BUDGET):
                        logits = run([(prompt[at:at + BUDGET], table, at)])
                    rates[name].append(n / (time.perf_counter() - start))
                    last[name] = as_tensor(logits[0])
        diff = (last["native"] - last["blocks"]).abs().max().item()
        rows.append({"tokens": n, "native_tps": median(rates["native"]), "blocks_tps": median(rates["blocks"]),
                     "ratio": median(rates["native"]) / median(rates["blocks"]), "logit_max_diff": diff,
                     "same_argmax": bool(last["native"].argmax() == last["blocks"].argmax())})
        if not args.json:
            r = rows[-1]
            print(f"{n:5} tokens  native {r['native_tps']:7.1f}  blocks {r['blocks_tps']:7.1f} tok/s  "
                  f"{r['ratio']:.2f}×  last logits within {diff:.2g}, same argmax {r['same_argmax']}", flush=True)
    if args.json:
        print(json.dumps({"machine": machine(), "storage": args.storage, "kv": fp.kv_format(), "runs": args.runs,
                          "rows": rows}))


if __name__ == "__main__":
    main()
