"""The KV cache's formats side by side: top-1 agreement and change in perplexity of float16 and q8_0 pairs against
float32 pairs over bench/text.txt (600 tokens of the default model), and of each against the fp32 reference (the whole
text in one pass of the fp32 model, the reference bench/speed.py's accuracy table holds every storage mode to).

    .venv/bin/python bench/kv_accuracy.py [--storage stored,fp32] [--model PATH] [--json]

Each storage mode's model runs the text over a pool of each format two ways: the decode path (token by token through
the engine's runner: the native step where it binds the pool) and the prefill path (the whole text in one pass of the
PyTorch blocks over the pool, each pair stored in the format, then read back by attention). Beside them: the largest
change of a logit against float32 pairs, the pool's bytes per token and the tokens a 1 GiB pool holds."""

from __future__ import annotations

import argparse
import json
import math
import platform
import subprocess
import sys

from common import TEXT, as_tensor, machine

FORMATS = ("float32", "float16", "q8_0")


def cpu_name() -> str:
    """lscpu's model name (the processor's own), or what platform says."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        return next(line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name"))
    except (OSError, subprocess.CalledProcessError, StopIteration):
        return platform.processor() or platform.machine()


def measure(path, storages: list[str]) -> dict:
    import torch

    import forwardpass
    from forwardpass.engine import BlockPool
    from forwardpass.engine.paged import PagedBatch
    from forwardpass.engine.rows import NATIVE, Chunk, Rows
    from forwardpass.engine.runner import Runner

    def scored(logits: torch.Tensor, ids: list[int]) -> tuple[torch.Tensor, float]:
        """Each position's top-1 token and the text's perplexity under `logits` (one row a position)."""
        nll = torch.nn.functional.cross_entropy(logits[:-1], torch.tensor(ids[1:]))
        return logits.argmax(-1), math.exp(nll.item())

    @torch.inference_mode()
    def over_pool(fp, ids: list[int], name: str, decode: bool) -> tuple[torch.Tensor, bool]:
        """Logits at every position of `ids` over a pool of one of `name` pairs, and whether the native step ran."""
        pool = BlockPool(fp.config, -(-len(ids) // 16), 16, name)
        table = [pool.allocate() for _ in range(pool.num_blocks)]
        if not decode:
            logits, _ = fp.model(torch.tensor([ids]), PagedBatch(pool, [table], [0]))
            return logits[0].float(), False
        runner = Runner(fp.model, pool)
        rows = [as_tensor(runner.step(Rows([Chunk([t], table, i)])).logits[0]).float() for i, t in enumerate(ids)]
        return torch.stack(rows), runner.capabilities is NATIVE

    reference = forwardpass.load(path, storage="fp32")
    ids = reference.encode(TEXT)
    with torch.inference_mode():
        top_ref, ppl_ref = scored(reference.model(torch.tensor([ids]))[0][0].float(), ids)
    rows = []
    for storage in storages:
        fp = reference if storage == "fp32" else forwardpass.load(path, storage=storage)
        for decode in (True, False):
            runs = {name: over_pool(fp, ids, name, decode) for name in FORMATS}
            wide, _ = runs["float32"]
            top_wide, ppl_wide = scored(wide, ids)
            for name, (logits, native) in runs.items():
                top, ppl = scored(logits, ids)
                per_token = BlockPool.block_bytes(fp.config, 1, name)
                rows.append({"storage": storage, "path": "decode" if decode else "prefill", "kv": name,
                             "native": native, "top1_vs_float32_pairs": (top == top_wide).float().mean().item(),
                             "perplexity": ppl, "perplexity_delta_vs_float32_pairs": ppl - ppl_wide,
                             "max_logit_change": (logits - wide).abs().max().item(),
                             "top1_vs_fp32": (top == top_ref).float().mean().item(),
                             "perplexity_delta_vs_fp32": ppl - ppl_ref, "bytes_per_token": per_token,
                             "tokens_per_gib": 2**30 // per_token})
    return {"tokens": len(ids), "fp32_perplexity": ppl_ref, "rows": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--storage", default="stored", help="comma-separated storage modes (default: stored)")
    ap.add_argument("--model", default=None, help="a model file (default: the embedded SmolLM2-135M-Instruct)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args()
    from forwardpass import kernels
    from forwardpass.config import STORAGE_MODES

    storages = args.storage.split(",")
    bad = [s for s in storages if s not in STORAGE_MODES]
    if bad:
        sys.exit(f"error: unknown storage {bad[0]!r}; choose from {', '.join(STORAGE_MODES)}")
    facts = machine() | {"cpu": cpu_name(), "kernels": kernels.isa()}
    result = measure(args.model, storages)
    facts["load_average_after"] = machine()["load_average"]
    if args.json:
        print(json.dumps({"machine": facts} | result))
        return
    print(f"{facts['date']}, {facts['cpu']}, {facts['kernels']} kernels, load average {facts['load_average']} → "
          f"{facts['load_average_after']}; {result['tokens']} tokens, fp32 perplexity {result['fp32_perplexity']:.3f}")
    print("| mode | path | KV pairs | top-1 vs float32 pairs | Δ perplexity | largest Δ logit | top-1 vs fp32 | "
          "Δ perplexity vs fp32 | bytes per token | tokens per GiB |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in result["rows"]:
        path = r["path"] + (" (native)" if r["native"] else "")
        print(f"| {r['storage']} | {path} | {r['kv']} | {r['top1_vs_float32_pairs']:.2%} | "
              f"{r['perplexity_delta_vs_float32_pairs']:+.3f} | {r['max_logit_change']:.3f} | "
              f"{r['top1_vs_fp32']:.2%} | {r['perplexity_delta_vs_fp32']:+.3f} | {r['bytes_per_token']:,} | "
              f"{r['tokens_per_gib']:,} |")


if __name__ == "__main__":
    main()
