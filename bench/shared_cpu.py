"""Decode on a CPU another process is using: batch-1 decode tokens/s with the machine idle, then beside one busy
process (a spinning loop, as a build or a browser tab would be), forwardpass and llama.cpp in the same run, each
at its default settings (every core the process may use).

    .venv/bin/python bench/shared_cpu.py [--runs 3] [--busy 1] [--threads N] [--json] [--model PATH]

Each engine runs in its own process: a 16-token prompt, then 128 greedy tokens, timed from the first token to the
last; the median of --runs such runs idle, then of --runs with --busy spinning processes started beside it.
The ratios: each engine's loaded rate over its idle one, and forwardpass's rates over llama.cpp's. llama.cpp comes
from `llama-cpp-python` (see the README); without it its row is skipped with a message.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from common import machine, median

from forwardpass.cli.options import positive_int

PROMPT, NEW = 16, 128
SPIN = "while True: pass"


def spinners(n: int) -> list[subprocess.Popen]:
    """n processes that each keep a core busy until killed."""
    procs = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(n)]
    time.sleep(0.5)  # running, and the scheduler has seen them
    return procs


def idle_then_busy(decode, runs: int, busy: int) -> dict:
    """decode() → tokens/s: the median of `runs` calls idle, then of `runs` beside `busy` spinning processes."""
    idle = median([decode() for _ in range(runs)])
    procs = spinners(busy)
    try:
        loaded = median([decode() for _ in range(runs)])
    finally:
        for p in procs:
            p.kill()
            p.wait()
    return {"idle_tps": idle, "busy_tps": loaded, "kept": loaded / idle}


def worker_forwardpass(path: Path, runs: int, busy: int, threads: int | None) -> dict:
    import forwardpass
    from forwardpass.kernels.team import most_threads, set_threads
    from forwardpass.loop import generate
    from forwardpass.sampling import SamplingParams

    set_threads(threads)
    fp = forwardpass.load(path)
    ids = fp.encode(open(Path(__file__).parent / "text.txt").read())[:PROMPT]
    params = SamplingParams(temperature=0, max_tokens=NEW, ignore_eos=True)
    generate(fp, ids, SamplingParams(temperature=0, max_tokens=4))  # warm up
    return {"engine": f"forwardpass ({most_threads()} threads at most)",
            **idle_then_busy(lambda: generate(fp, ids, params, speculative="off").decode_tokens_per_s, runs, busy)}


def worker_llama_cpp(path: Path, runs: int, busy: int, threads: int | None) -> dict:
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        return {"engine": "llama.cpp", "skipped": "llama-cpp-python is not installed (see the README)"}
    from llama_c import LlamaCpp

    threads = threads or len(os.sched_getaffinity(0))
    llm = LlamaCpp(str(path), threads, PROMPT + NEW)
    ids = llm.tokenize(open(Path(__file__).parent / "text.txt").read())[:PROMPT]
    llm.greedy([ids], 4)  # warm up

    def decode() -> float:
        _, first, last = llm.greedy([ids], NEW)
        return (NEW - 1) / (last - first)
    try:
        return {"engine": f"llama.cpp ({threads} threads)", **idle_then_busy(decode, runs, busy)}
    finally:
        llm.close()


def spawn(engine: str, args) -> dict:
    print(f"  {engine} …", file=sys.stderr, flush=True)
    command = [sys.executable, __file__, "--worker", engine, "--runs", str(args.runs), "--busy", str(args.busy),
               "--model", str(args.model_path)] + (["--threads", str(args.threads)] if args.threads else [])
    r = subprocess.run(command, capture_output=True, text=True)
    if r.returncode:
        last = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"
        return {"engine": engine, "skipped": f"failed: {last}"}
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=positive_int, default=3)
    ap.add_argument("--busy", type=positive_int, default=1, help="spinning processes beside the decode (default 1)")
    ap.add_argument("--threads", type=positive_int, default=None,
                    help="threads each engine may use (default: the cores this process may run on)")
    ap.add_argument("--model", default=None, help="a model name (gemma3-270m) or GGUF path (default: the embedded one)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    import forwardpass
    from forwardpass.packaged import resolve_model
    try:
        args.model_path = resolve_model(args.model) if args.model else forwardpass.default_model_path()
    except forwardpass.ForwardpassError as e:
        sys.exit(f"error: {e}")
    if args.worker:
        work = {"forwardpass": worker_forwardpass, "llama.cpp": worker_llama_cpp}[args.worker]
        print(json.dumps(work(args.model_path, args.runs, args.busy, args.threads)))
        return
    before = machine()
    rows = [spawn(e, args) for e in ("forwardpass", "llama.cpp")]
    report = {"benchmark": "shared_cpu", "model": str(args.model_path), "busy": args.busy, "machine": before,
              "after": machine(), "rows": rows}
    ours, theirs = rows
    if "skipped" not in ours and "skipped" not in theirs:
        report["vs_llama_cpp"] = {"idle": ours["idle_tps"] / theirs["idle_tps"],
                                  "busy": ours["busy_tps"] / theirs["busy_tps"]}
    if args.json:
        print(json.dumps(report))
        return
    print(f"{before['date']}, {before['cpu']}, {before['cores']} cores, load average {before['load_average']}, "
          f"{args.busy} busy process(es) beside")
    print(f"{'engine':<36}{'idle tok/s':>12}{'busy tok/s':>12}{'busy/idle':>11}")
    for r in rows:
        if "skipped" in r:
            print(f"{r['engine']:<36}skipped: {r['skipped']}")
        else:
            print(f"{r['engine']:<36}{r['idle_tps']:>12.1f}{r['busy_tps']:>12.1f}{r['kept']:>10.2f}x")
    if "vs_llama_cpp" in report:
        v = report["vs_llama_cpp"]
        print(f"forwardpass / llama.cpp: {v['idle']:.2f}x idle, {v['busy']:.2f}x beside a busy process")


if __name__ == "__main__":
    main()
