"""torch.compile against eager on the PyTorch path: prefill, and the batched engine's decode steps.

    .venv/bin/python bench/compile.py [--storage fp32] [--rounds 5] [--json] [--device cuda]

Decode runs the native step, which torch.compile cannot reach; what runs in PyTorch is prefill
and the engine's batched steps. Their pure tensor parts — each block's two norms and its feed-forward (SwiGLU)
— are compiled (inductor, dynamic shapes); attention stays eager, since it writes the KV cache. Eager and
compiled alternate round by round in one process, so both see the same machine.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import TYPE_CHECKING

from common import TEXT, batch_tps, checked_device, machine, median, prefill_tps
from rich.console import Console

import forwardpass
from forwardpass.cli.options import add_device_option, positive_int
from forwardpass.config import STORAGE_MODES
from forwardpass.sampling_params import SamplingParams

if TYPE_CHECKING:
    import torch

PARTS = ("attn_norm", "ffn_norm", "ffn")


def set_compiled(model: torch.nn.Module, compiled: bool) -> None:
    import torch

    for block in model.blocks:
        for name in PARTS:
            part = getattr(block, name)
            part = getattr(part, "_orig_mod", part)
            setattr(block, name, torch.compile(part, dynamic=True) if compiled else part)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--storage", default="fp32", choices=STORAGE_MODES)
    ap.add_argument("--rounds", type=positive_int, default=5)
    ap.add_argument("--json", action="store_true")
    add_device_option(ap)
    args = ap.parse_args()
    device = checked_device(args.device)
    console = Console(stderr=True)
    with console.status("loading the model…"):
        fp = forwardpass.load(storage=args.storage, device=device)
    text = fp.encode(TEXT)
    ids, prompts = text[:128], [text[8 * i: 8 * i + 64] for i in range(16)]
    params = SamplingParams(temperature=0, max_tokens=64, ignore_eos=True)
    start = time.perf_counter()
    with console.status("compiling (first call of each shape)…"):
        set_compiled(fp.model, True)
        prefill_tps(fp, ids, blocks=True)
        batch_tps(fp, prompts[:2], SamplingParams(temperature=0, max_tokens=2, ignore_eos=True))
    compile_s = time.perf_counter() - start
    runs = {mode: {"prefill": [], "engine": []} for mode in ("eager", "compiled")}
    for r in range(args.rounds):
        for mode in runs:
            console.log(f"round {r + 1}/{args.rounds}: {mode}")
            set_compiled(fp.model, mode == "compiled")
            runs[mode]["prefill"].append(prefill_tps(fp, ids, blocks=True))
            runs[mode]["engine"].append(batch_tps(fp, prompts, params))
    report = {"benchmark": "compile", "storage": args.storage, "machine": machine(device), "compile_s": compile_s,
              "runs": runs, "median": {m: {k: median(v) for k, v in r.items()} for m, r in runs.items()}}
    if args.json:
        print(json.dumps(report))
        return
    e, c = report["median"]["eager"], report["median"]["compiled"]
    print(f"compile and first calls: {compile_s:.1f} s")
    print(f"prefill (128 tokens):      eager {e['prefill']:.1f}  compiled {c['prefill']:.1f} tok/s "
          f"({c['prefill'] / e['prefill']:.2f}×)")
    print(f"engine (16 × 64, batched): eager {e['engine']:.1f}  compiled {c['engine']:.1f} tok/s "
          f"({c['engine'] / e['engine']:.2f}×)")


if __name__ == "__main__":
    main()
