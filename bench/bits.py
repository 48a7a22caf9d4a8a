"""Whether two CPUs compute the same bits: a digest of the logits each installed chat model gives a fixed text, token by
token through the engine's runner (the native step) in each activation mode, recorded per CPU and kernel build in
bench/bits.json and compared with every record there (this CPU's own too: whether a change kept its bits). On one CPU
the tile unit gives the vector unit's bits and any thread count the same (the tests say so); builds differ in the order
of attention's horizontal sums, so a record is of one build. Across CPUs no single machine's tests can tell.

    .venv/bin/python bench/bits.py [--model smollm2-135m,gemma3-270m] [--threads N] [--save] [--json]

Each digest covers 64 tokens of bench/text.txt, a prompt of 48 then 16 single steps, over a float16 pool; the first
position whose logits differ from a record is named. `--save` adds (or replaces) this CPU's record."""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

from common import TEXT, machine
from kv_accuracy import cpu_name

from forwardpass.cli.options import add_threads_option, apply_threads

RECORDS = Path(__file__).with_name("bits.json")
MODES = ("exact", "q8")
PROMPT, STEPS = 48, 16


def digests(name: str, activations: str) -> list[str]:
    """A digest of each row of logits: the prompt's last, then each single step's."""
    import numpy as np
    import torch

    import forwardpass
    from forwardpass.engine import BlockPool
    from forwardpass.engine.rows import Chunk, Rows
    from forwardpass.engine.runner import Runner

    fp = forwardpass.load(name, activations=activations)
    ids = fp.encode(TEXT)[:PROMPT + STEPS]
    pool = BlockPool(fp.config, -(-len(ids) // 16), 16, fp.kv_format())
    table = [pool.allocate() for _ in range(pool.num_blocks)]
    runner = Runner(fp.model, pool)
    rows = []
    with torch.inference_mode():
        rows.append(np.array(runner.step(Rows([Chunk(ids[:PROMPT], table, 0)])).logits[0], dtype=np.float32))
        for i in range(PROMPT, len(ids)):
            rows.append(np.array(runner.step(Rows([Chunk([ids[i]], table, i)])).logits[0], dtype=np.float32))
    return [hashlib.sha256(r.tobytes()).hexdigest()[:16] for r in rows]


def compare(mine: dict, theirs: dict) -> str:
    """Where this CPU's digests first differ from a record's, in words."""
    said = []
    for key, rows in mine.items():
        other = theirs.get(key)
        if other is None:
            said.append(f"{key}: not recorded there")
        elif other != rows:
            first = next(i for i, (a, b) in enumerate(zip(rows, other, strict=True)) if a != b)
            said.append(f"{key}: differs from row {first} on (0: the prompt's last)")
    return "; ".join(said) or "the same bits"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m,gemma3-270m")
    ap.add_argument("--save", action="store_true", help="record this CPU's digests in bench/bits.json")
    ap.add_argument("--json", action="store_true")
    add_threads_option(ap)  # any count gives the same bits: attention's parts do not follow it
    args = ap.parse_args()
    apply_threads(args)
    facts = machine()
    mine = {f"{name} {mode}": digests(name, mode) for name in args.model.split(",") for mode in MODES}
    records = json.loads(RECORDS.read_text()) if RECORDS.exists() else {}
    here = f"{cpu_name()} ({facts['kernels']} kernels, tiles {'on' if facts['tiles'] else 'off'})"
    against = {cpu: compare(mine, record["digests"]) for cpu, record in records.items()}  # this CPU's own record too
    if args.save:
        records[here] = {"date": facts["date"], "digests": mine}
        RECORDS.write_text(json.dumps(records, indent=1, sort_keys=True) + "\n")
    if args.json:
        print(json.dumps({"machine": facts, "cpu": here, "digests": mine, "against": against}, indent=2))
        return
    print(f"{here}: {len(mine)} runs of {PROMPT + STEPS} tokens")
    for cpu, said in against.items():
        print(f"  against {cpu}: {said}")
    if not against:
        print("  no CPU recorded in bench/bits.json")


if __name__ == "__main__":
    main()
