"""The prompt cache across a restart, in one run: a process computes a long prompt with `--prompt-cache` and exits;
then "restarted" processes, each a new process loading the model anew, answer a request sharing the prompt's first
--shared tokens and ending differently: with that cache folder (warm), with an empty one (cold, writing as it
computes) and without a prompt cache. Time to first token of each (from the request's submission, the model loaded),
the cold-to-warm ratio, and whether all three gave the same greedy tokens and log-probabilities.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import TEXT, machine, median

from forwardpass.cli.options import add_threads_option, apply_threads, positive_int
from forwardpass.config import KV_CACHE_DTYPES, STORAGE_MODES

ENDINGS = ("\n\nIn one sentence, what is this text about?", "\n\nName the three most important ideas above.")


def child(args) -> None:
    """One process: load, answer the prompt in --child's file once, print what happened as JSON."""
    import forwardpass
    from forwardpass.engine import Engine, EngineConfig
    from forwardpass.sampling import SamplingParams

    job = json.loads(Path(args.child).read_text())
    started = time.perf_counter()
    fp = forwardpass.load(storage=args.storage, kv_cache_dtype=args.kv_cache_dtype, backend="auto")
    loaded = time.perf_counter() - started
    engine = Engine(fp, EngineConfig(prompt_cache=job["folder"]))
    outs: list = []
    submitted = time.perf_counter()
    engine.submit(job["ids"], SamplingParams(temperature=0, max_tokens=args.max_tokens, logprobs=3), outs.append)
    first = None
    while engine.has_work():
        engine.step()
        if outs and first is None:
            first = time.perf_counter() - submitted
    cache = engine.prompt_cache
    flushed = cache is None or cache.store.flush(60)
    counts = {} if cache is None else {"hit_blocks": cache.store.stats.hit_blocks,
                                       "written_bytes": cache.store.stats.written_bytes,
                                       "read_bytes": cache.store.stats.read_bytes}
    print(json.dumps({"ttft_s": first, "load_s": loaded, "tokens": [o.token_id for o in outs],
                      "logprobs": [[o.logprob.logprob, o.logprob.top] for o in outs if o.logprob is not None],
                      "cached_tokens": outs[-1].cached_tokens, "flushed": flushed, **counts}))


def cpu() -> str:
    """The CPU's model name and its AVX-512 and AMX extensions, as /proc/cpuinfo gives them."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown"
    name = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")), "?")
    flags = next((line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), [])
    wide = sorted(f for f in set(flags) if f.startswith(("avx512", "amx")))
    return f"{name} ({' '.join(wide) or 'no AVX-512 or AMX'})"


def spawn(args, ids: list[int], folder: Path | None, scratch: Path) -> dict:
    """A new process answering `ids` with the prompt cache in `folder` (None: without one)."""
    job = scratch / "job.json"
    job.write_text(json.dumps({"ids": ids, "folder": None if folder is None else str(folder)}))
    cmd = [sys.executable, __file__, "--child", str(job), "--storage", args.storage, "--kv-cache-dtype",
           args.kv_cache_dtype, "--max-tokens", str(args.max_tokens)]
    cmd += ["--threads", str(args.threads)] if args.threads else []
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"error: a measured process failed: {(p.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", type=positive_int, default=2000, help="tokens the two requests share")
    ap.add_argument("--runs", type=positive_int, default=3)
    ap.add_argument("--storage", default="stored", choices=STORAGE_MODES)
    ap.add_argument("--kv-cache-dtype", default="auto", choices=KV_CACHE_DTYPES)
    ap.add_argument("--max-tokens", type=positive_int, default=16)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    add_threads_option(ap)
    args = ap.parse_args()
    apply_threads(args)
    if args.child:
        return child(args)

    import forwardpass

    fp = forwardpass.load(storage=args.storage, kv_cache_dtype=args.kv_cache_dtype, backend="auto")
    text_ids = fp.encode(TEXT)
    shared = (text_ids * (args.shared // len(text_ids) + 1))[:args.shared]
    first, second = (shared + fp.encode(ending) for ending in ENDINGS)
    rows = []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as scratch:
            scratch = Path(scratch)
            warmed = spawn(args, first, scratch / "cache", scratch)
            warm = spawn(args, second, scratch / "cache", scratch)
            cold = spawn(args, second, scratch / "empty", scratch)
            off = spawn(args, second, None, scratch)
            rows.append({"warming": warmed, "warm": warm, "cold": cold, "off": off,
                         "same": all(r["tokens"] == off["tokens"] and r["logprobs"] == off["logprobs"]
                                     for r in (warm, cold))})
    print(json.dumps(summary(args, fp.kv_format(), len(second), rows)) if args.json
          else table(args, fp.kv_format(), len(second), rows))


def summary(args, kv: str, prompt_tokens: int, rows: list[dict]) -> dict:
    ttft = {kind: median([r[kind]["ttft_s"] for r in rows]) for kind in ("warm", "cold", "off")}
    return {"machine": machine() | {"cpu_model": cpu()}, "storage": args.storage, "kv_format": kv,
            "shared_tokens": args.shared, "prompt_tokens": prompt_tokens, "runs": args.runs,
            "warm_ttft_s": ttft["warm"], "cold_ttft_s": ttft["cold"], "no_cache_ttft_s": ttft["off"],
            "ratio": ttft["cold"] / ttft["warm"], "same_tokens_and_logprobs": all(r["same"] for r in rows),
            "cached_tokens": rows[-1]["warm"]["cached_tokens"], "cache_bytes": rows[-1]["warming"]["written_bytes"],
            "read_bytes": rows[-1]["warm"]["read_bytes"],
            "each_run": [{"warm_ttft_s": r["warm"]["ttft_s"], "cold_ttft_s": r["cold"]["ttft_s"],
                          "no_cache_ttft_s": r["off"]["ttft_s"], "same": r["same"]} for r in rows]}


def table(args, kv: str, prompt_tokens: int, rows: list[dict]) -> str:
    s = summary(args, kv, prompt_tokens, rows)
    lines = [f"{args.shared} shared tokens of a {prompt_tokens}-token prompt, {args.storage} weights, {kv} KV pairs; "
             f"{s['cache_bytes'] / 2**20:.1f} MiB written by the warming process",
             f"CPU: {s['machine']['cpu_model']}; load average {s['machine']['load_average']}",
             "| run | no cache TTFT s | cold TTFT s | warm TTFT s | cold ÷ warm | same tokens and log-probs |",
             "| --- | --- | --- | --- | --- | --- |"]
    for i, r in enumerate(rows, 1):
        lines.append(f"| {i} | {r['off']['ttft_s']:.3f} | {r['cold']['ttft_s']:.3f} | {r['warm']['ttft_s']:.4f} | "
                     f"{r['cold']['ttft_s'] / r['warm']['ttft_s']:.1f}× | {'yes' if r['same'] else 'NO'} |")
    lines.append(f"median: no cache {s['no_cache_ttft_s']:.3f} s, cold {s['cold_ttft_s']:.3f} s, warm "
                 f"{s['warm_ttft_s']:.4f} s, **{s['ratio']:.1f}×**; {s['cached_tokens']} tokens read back "
                 f"({s['read_bytes'] / 2**20:.1f} MiB)")
    return "\n".join(lines)

if __name__ == "__main__":
    main()
