"""Start-up and memory, side by side in one run: a fresh process that loads a model file and makes one token,
timed from outside, and its own peak resident memory (MEASURE); forwardpass (`forwardpass generate "hi" --max-tokens 1`
in each storage mode asked for) beside llama.cpp (llama-cpp-python loading the same file and evaluating the same
prompt).

    .venv/bin/python bench/startup.py [--runs 3] [--storage stored,fp32,q4] [--synthetic Q4_0] [--model gemma3-270m]
                                      [--commands] [--json] [--llama-flash-attn both|on|off]

Files: the embedded default model, with --synthetic a 1.1 B Llama-shaped GGUF of random weights in that format
(weights/synthetic.py, written once into a temporary directory), and each --model (a path, or an installed model's
name). Each row is the median of --runs fresh
processes; ratios are to llama.cpp on the same file. The peak memory of a model's file includes what it keeps of the
file: llama.cpp maps the file and computes from the map, forwardpass copies each tensor once into its own layout.
--commands adds the commands that run no model (help, the analytic cost, a refused option), which start without
PyTorch. llama.cpp runs with flash attention on and with it off, the faster start kept (--llama-flash-attn pins one),
and without its extra buffer types where they crash it on this CPU; a note under each file's table says which
(bench/llama_c.py).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import machine, median
from llama_c import FLASH_ATTN, add_flash_attn_option, cores, extra_bufts_work, faster, flash_attn_note

LLAMA_C = Path(__file__).parent / "llama_c.py"  # run as a script: llama.cpp's start to the first token of "hi"



# Runs a command as its own child and writes its seconds and peak resident memory. A child's ru_maxrss counts what its
# parent held when it forked (Linux keeps the high-water mark across exec): measured from this driver, which imports
# PyTorch, every process would seem to hold at least the driver's 230 MB. This small process forks the command instead.
MEASURE = """
import resource, subprocess, sys, time
start = time.perf_counter()
code = subprocess.call(sys.argv[2:])
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * (1 if sys.platform == "darwin" else 1024)
open(sys.argv[1], "w").write(f"{seconds} {peak}")
sys.exit(code)
"""


def timed(cmd: list[str]) -> tuple[float, float, str]:
    """Wall seconds and peak resident memory (bytes) of one process, measured by a small process that runs it (MEASURE),
    and its stdout."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err, \
            tempfile.NamedTemporaryFile("r") as report:
        p = subprocess.run([sys.executable, "-c", MEASURE, report.name, *cmd], stdout=out, stderr=err, text=True)
        out.seek(0), err.seek(0)
        if p.returncode:
            raise RuntimeError((err.read().strip().splitlines() or [f"exit {p.returncode}"])[-1])
        seconds, peak = report.read().split()
        return float(seconds), float(peak), out.read()


def measure(cmd: list[str], runs: int) -> dict:
    results = [timed(cmd) for _ in range(runs)]
    return {"start_to_first_token_s": median([r[0] for r in results]),
            "peak_rss_mb": median([r[1] for r in results]) / 2**20}


NO_MODEL = [["--help"], ["cost", "--json"], ["serve", "--kv-cache-gib", "nan"]]  # the last one is refused (exit 2)


def command_rows(runs: int) -> list[dict]:
    rows = []
    for args in NO_MODEL:
        seconds = []
        for _ in range(runs):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "forwardpass", *args], capture_output=True)
            seconds.append(time.perf_counter() - start)
        rows.append({"command": " ".join(["forwardpass", *args]), "seconds": median(seconds)})
    return rows


def llama_cpp_row(path: Path, threads: int, runs: int, flash_attn: str) -> dict:
    """llama.cpp's start to first token with each flash-attention setting asked for, the faster kept; extra buffer
    types as the probe found them (asked before any timed run)."""
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        return {"engine": "llama.cpp", "skipped": "llama-cpp-python is not installed (see the README)"}
    extra_bufts, note = extra_bufts_work(path, threads)
    tried = {}
    for setting in FLASH_ATTN[flash_attn]:
        cmd = [sys.executable, str(LLAMA_C), str(path), str(threads), "--flash-attn", setting,
               "--extra-bufts", "on" if extra_bufts else "off"]
        try:
            tried[setting] = measure(cmd, runs)
        except RuntimeError as e:
            tried[setting] = {"skipped": f"failed: {e}"}
    kept = faster({s: r.get("start_to_first_token_s") for s, r in tried.items()}, lower=True)
    return {"engine": "llama.cpp", **tried[kept or next(iter(tried))], "flash_attn": kept,
            "flash_attn_tried": list(tried), "flash_attn_runs": tried, "extra_bufts": extra_bufts,
            "extra_bufts_note": note}


def rows_for(path: Path, storages: list[str], runs: int, flash_attn: str) -> list[dict]:
    rows = [llama_cpp_row(path, cores(), runs, flash_attn)]
    for storage in storages:
        cmd = [sys.executable, "-m", "forwardpass", "generate", "hi", "--max-tokens", "1", "--storage", storage,
               "--model", str(path), "--json"]
        try:
            rows.append({"engine": f"forwardpass {storage}", **measure(cmd, runs)})
        except RuntimeError as e:
            rows.append({"engine": f"forwardpass {storage}", "skipped": f"failed: {e}"})
    return rows


def llama_notes(rows: list[dict]) -> list[str]:
    """What llama.cpp's row was measured with, in words."""
    notes = []
    for r in rows:
        if r["engine"] == "llama.cpp" and r.get("flash_attn"):
            notes.append(flash_attn_note({"start": r["flash_attn"]}, r["flash_attn_tried"]))
        if r["engine"] == "llama.cpp" and r.get("extra_bufts_note"):
            notes.append(f"llama.cpp: {r['extra_bufts_note']}")
    return notes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--storage", default="stored,fp32,q4", help="forwardpass storage modes, comma-separated")
    ap.add_argument("--synthetic", metavar="FORMAT",
                    help="also a 1.1 B model in this GGUF format (Q4_0, Q4_K, Q4_K_M, …)")
    ap.add_argument("--model", action="append", default=[], metavar="NAME_OR_PATH",
                    help="also this model file, or an installed model by name (gemma3-270m); repeatable")
    ap.add_argument("--commands", action="store_true", help="also the commands that run no model")
    ap.add_argument("--json", action="store_true")
    add_flash_attn_option(ap)
    args = ap.parse_args()
    import compileall

    import forwardpass
    from forwardpass.errors import ForwardpassError

    # bytecode as an installed package has it: where PYTHONDONTWRITEBYTECODE is set, an edited module would otherwise
    # be compiled again in every measured process
    compileall.compile_dir(Path(forwardpass.__file__).parent, quiet=1)
    from forwardpass.packaged import resolve_model
    from forwardpass.weights import model_file
    files = {"default (SmolLM2-135M Q4_1)": forwardpass.default_model_path()}
    for name in args.model:
        try:
            files[name] = model_file(resolve_model(name))
        except ForwardpassError as e:
            ap.error(str(e))
    with tempfile.TemporaryDirectory() as tmp:
        if args.synthetic:
            from forwardpass.weights.synthetic import SHAPE_1B, file_format, write_synthetic_gguf
            kind, mixed = file_format(args.synthetic)
            name = args.synthetic.upper()
            print(f"writing a 1.1 B {name} file …", file=sys.stderr)
            files[f"synthetic 1.1 B {name}"] = write_synthetic_gguf(
                Path(tmp) / "synthetic.gguf", files["default (SmolLM2-135M Q4_1)"], kind, mixed=mixed, **SHAPE_1B)
        report = {"machine": machine(), "runs": args.runs, "files": {}}
        for name, path in files.items():
            print(f"  {name} …", file=sys.stderr, flush=True)
            rows = rows_for(path, args.storage.split(","), args.runs, args.llama_flash_attn)
            report["files"][name] = {"file_mb": path.stat().st_size / 2**20, "rows": rows, "notes": llama_notes(rows)}
        if args.commands:
            report["commands"] = command_rows(args.runs)
    if args.json:
        print(json.dumps(report, indent=1))
        return
    print(f"{report['machine']['date']}, load average {report['machine']['load_average']}, medians of {args.runs}")
    for name, f in report["files"].items():
        base = next((r for r in f["rows"] if r["engine"] == "llama.cpp" and "skipped" not in r), None)
        print(f"\n{name}: {f['file_mb']:.0f} MB file")
        print(f"{'engine':24} {'start→token s':>14} {'× llama.cpp':>12} {'peak RSS MB':>12} {'× llama.cpp':>12}")
        for r in f["rows"]:
            if "skipped" in r:
                print(f"{r['engine']:24} {r['skipped']}")
                continue
            t, m = r["start_to_first_token_s"], r["peak_rss_mb"]
            rt = f"{t / base['start_to_first_token_s']:.2f}" if base else "—"
            rm = f"{m / base['peak_rss_mb']:.2f}" if base else "—"
            print(f"{r['engine']:24} {t:14.2f} {rt:>12} {m:12.0f} {rm:>12}")
        for note in f["notes"]:
            print(note)
    if args.commands:
        print("\ncommands that run no model (start to exit):")
        for r in report["commands"]:
            print(f"  {r['command']:40} {r['seconds']:6.2f} s")


if __name__ == "__main__":
    main()
