"""Speed, side by side in one run: forwardpass (each storage mode), Hugging Face transformers and llama.cpp
on the same GGUF, the same prompts, the same machine.

    .venv/bin/python bench/speed.py [--runs 3] [--json] [--only forwardpass:fp16,...] [--omp-wait-policy P]
                                    [--long 3072] [--device cuda] [--model gemma3-270m | PATH]
                                    [--llama-flash-attn both|on|off]

Each engine runs in its own process (so peak memory is its own): prefill tokens/s of a 128-token prompt (and of a
1,024-token one),
time to first token, decode tokens/s (batch 1, 128 new tokens, one a step: forwardpass's drafting off,
bench/speculative.py measures it; and after a --long-token prompt, where attention
reads as many bytes as the weights: forwardpass and llama.cpp), throughput of 16 sequences × 128 new
tokens, peak resident memory — medians of --runs runs, and each as a ratio to forwardpass fp32. Then the
decode roofline (bytes each mode reads per token over this machine's read bandwidth, the better of samples
taken just before and after each decode run: it drifts between about 20 and 63 GB/s here, so a run whose two
samples differ by more than 15% — the machine changed speed during it — is run again, up to 4 times) and each storage
mode's accuracy cost against fp32 over bench/text.txt (600 tokens): top-1 agreement and perplexity.
llama.cpp comes from `llama-cpp-python` (see the README); without it that row is skipped with a message. It runs
once with flash attention on and once with it off, each in its own process, and each point (prefill and TTFT, decode,
decode at --long, the batch of 16) keeps the faster, its load time and memory those of the run kept for decode; a note
under the table says which (--llama-flash-attn pins one). Where llama.cpp's extra buffer types crash it on this CPU
they are turned off, and the note says so (bench/llama_c.py).
--model runs another model file (default: the embedded one) through every engine; an engine that cannot load it
(transformers reads few GGUF architectures) is reported as skipped with its error.
On --device cuda every engine runs there (llama.cpp only if its build offloads to a GPU; the roofline then uses
the device's own read bandwidth) and the peak device memory is shown beside the resident memory.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

from common import TEXT, as_tensor, batch_tps, checked_device, machine, median, prefill_tps, sync
from llama_c import FLASH_ATTN, add_flash_attn_option, cores, flash_attn_note, keep_faster

from forwardpass.cli.options import add_device_option, checked, positive_int
from forwardpass.config import KV_CACHE_DTYPES, STORAGE_MODES

PROMPT, NEW, BATCH = 128, 128, 16
PREFILL_LONG = 1024  # the second prefill point: a prompt of this many tokens
LONG = 3072  # the default --long prompt
STEADY, STEADY_TRIES = 1.15, 4  # bandwidth samples around a decode run within 15% of each other, or up to 4 tries
# llama.cpp's points, each kept from the faster flash-attention setting: its rate, and what was measured with it
LLAMA_POINTS = {"decode_tps": (), "prefill_tps": ("ttft_s",), "prefill_long_tps": (), "decode_long_tps": (),
                "batch16_tps": ()}


_PEAK_BEFORE_PROBES = 0  # this worker's peak resident memory as it stood before each bandwidth probe (bytes)


def probed_bandwidth(device: str) -> float:
    """memory_bandwidth(), its 256 MB buffer left out of this worker's peak memory (an engine's memory is what it
    holds, not the roofline's probe): the peak so far is kept, and once the buffer is freed Linux's high-water mark is
    reset to the current size (/proc/self/clear_refs). Where that cannot be done the probe stays counted."""
    from forwardpass.article.machine import memory_bandwidth, peak_resident_bytes
    global _PEAK_BEFORE_PROBES
    _PEAK_BEFORE_PROBES = max(_PEAK_BEFORE_PROBES, peak_resident_bytes())
    bandwidth = memory_bandwidth(256, 3, device)
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass
    return bandwidth


def peak_memory(device: str) -> dict:
    """Peak resident memory of this process, and on a GPU the peak memory its tensors took there (MB). Where /proc
    says it, the process's own high-water mark: ru_maxrss also counts what the driver held when it forked this worker
    (Linux keeps it across exec), so every worker would seem to hold at least the driver's memory."""
    from forwardpass.article.machine import peak_resident_bytes
    peak = {"peak_rss_mb": max(_PEAK_BEFORE_PROBES, peak_resident_bytes()) / 2**20}
    if device.startswith("cuda"):
        import torch
        peak["peak_device_mb"] = torch.cuda.max_memory_allocated(device) / 2**20
    return peak


def windows(tokenize) -> list[list[int]]:
    """BATCH different 128-token prompts cut from the same text (the first is the batch-1 prompt)."""
    ids = tokenize(TEXT)
    return [ids[i * 20:i * 20 + PROMPT] for i in range(BATCH)]


def long_prompt(tokenize, n: int) -> list[int]:
    """n tokens of the text, repeated as often as it takes."""
    ids = tokenize(TEXT)
    return (ids * (n // len(ids) + 1))[:n]


def decode_bytes(model) -> int:
    """Bytes of weights one decode step reads: every tensor once, except lookup tables (the embedding table
    when the unembedding has its own copy, the RoPE tables), of which one row is read."""
    from forwardpass.quant import QuantizedEmbedding
    table = model.tok_embeddings
    tied = (table.table is model.lm_head if isinstance(table, QuantizedEmbedding)
            else getattr(model.lm_head, "weight", None) is table.weight)
    seen, total = set(), 0
    for name, t in list(model.named_parameters()) + list(model.named_buffers()):
        if id(t) in seen:
            continue
        seen.add(id(t))
        row = t[0].numel() * t.element_size()
        lookup = name.startswith("rope.") or (name.startswith("tok_embeddings.") and not tied)
        total += row if lookup else t.numel() * t.element_size()
    return total


# ---- workers: one engine each, in its own process ---------------------------------------------------
def worker_forwardpass(path: Path, storage: str, runs: int, device: str, long: int, kv_cache_dtype: str,
                       activations: str = "exact") -> dict:
    import forwardpass
    from forwardpass.engine import BlockPool
    from forwardpass.loop import generate
    from forwardpass.sampling import SamplingParams

    start = time.perf_counter()
    fp = forwardpass.load(path, storage=storage, device=device, kv_cache_dtype=kv_cache_dtype, activations=activations)
    load_s = time.perf_counter() - start
    prompts = windows(fp.encode)
    params = SamplingParams(temperature=0, max_tokens=NEW, ignore_eos=True)
    plain = {"speculative": "off"}  # decode one token a step, as the others do (drafting: bench/speculative.py)
    generate(fp, prompts[0][:16], SamplingParams(temperature=0, max_tokens=4), **plain)  # warm up
    # the roofline: bytes one decode step reads (the weights, the cache at mid-generation) over the bandwidth
    per_token = decode_bytes(fp.model) + BlockPool.block_bytes(fp.config, 1, fp.kv_format()) * (PROMPT + NEW // 2)
    prefill, ttft, decode, shares, roofs, samples = [], [], [], [], [], []
    for _ in range(runs):
        prefill.append(prefill_tps(fp, prompts[0]))
        for _ in range(STEADY_TRIES):  # a run during which the bandwidth changed has no one roofline: repeat it
            before = probed_bandwidth(device)
            r = generate(fp, prompts[0], params, **plain)
            after = probed_bandwidth(device)
            if max(before, after) <= STEADY * min(before, after):
                break
        samples.append([before / 1e9, after / 1e9])
        roof = max(before, after) / per_token
        ttft.append(r.prefill_seconds)
        decode.append(r.decode_tokens_per_s)
        shares.append(r.decode_tokens_per_s / roof)
        roofs.append(roof)
    at_long = generate(fp, long_prompt(fp.encode, long), params, **plain).decode_tokens_per_s if long else None
    prefill_long = median([prefill_tps(fp, long_prompt(fp.encode, PREFILL_LONG)) for _ in range(runs)])
    kv = "" if kv_cache_dtype == "auto" else f" ({kv_cache_dtype} KV)"
    kv += "" if activations == "exact" else f" ({activations} activations)"
    return {"engine": f"forwardpass {storage}{kv}", "load_s": load_s, "prefill_tps": median(prefill),
            "ttft_s": median(ttft), "decode_tps": median(decode), "decode_long_tps": at_long,
            "prefill_long_tps": prefill_long, "batch16_tps": batch_tps(fp, prompts, params),
            **peak_memory(device), "bytes_per_decode_token": per_token,
            "roofline_decode_tps": median(roofs), "roofline_share": median(shares), "bandwidth_gb_s_around": samples}


def worker_transformers(path: Path, runs: int, device: str) -> dict:
    import torch
    import transformers

    start = time.perf_counter()
    tok = transformers.AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    model = transformers.AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32)
    model.to(device)
    load_s = time.perf_counter() - start
    prompts = windows(lambda s: tok(s)["input_ids"])
    ids = torch.tensor([prompts[0]], device=device)
    kw = {"do_sample": False, "pad_token_id": 2}
    with torch.inference_mode():
        model.generate(ids[:, :16], max_new_tokens=4, **kw)
        prefill, ttft, decode = [], [], []
        for _ in range(runs):
            sync(device)
            t = time.perf_counter()
            model(ids)
            sync(device)
            prefill.append(PROMPT / (time.perf_counter() - t))
            t = time.perf_counter()
            model.generate(ids, max_new_tokens=1, min_new_tokens=1, **kw)
            sync(device)
            first = time.perf_counter() - t
            t = time.perf_counter()
            model.generate(ids, max_new_tokens=NEW, min_new_tokens=NEW, **kw)
            sync(device)
            ttft.append(first)
            decode.append((NEW - 1) / (time.perf_counter() - t - first))
        t = time.perf_counter()
        out = model.generate(torch.tensor(prompts, device=device), max_new_tokens=NEW, min_new_tokens=NEW, **kw)
        sync(device)
        batch_tps = (out.shape[1] - PROMPT) * BATCH / (time.perf_counter() - t)
    return {"engine": "transformers fp32", "load_s": load_s, "prefill_tps": median(prefill), "ttft_s": median(ttft),
            "decode_tps": median(decode), "batch16_tps": batch_tps, **peak_memory(device)}


def worker_llama_cpp(path: Path, runs: int, device: str, long: int, flash_attn: str) -> dict:
    """llama.cpp's rates on the same file through its C API (llama_c.py), with flash attention on or off, in a process
    that never imports PyTorch (its memory is llama.cpp's). Its 16 sequences run as llama.cpp's server runs them: one
    llama_batch a step. Extra buffer types as the probe found them on this CPU."""
    try:
        import llama_cpp
    except ImportError:
        return {"engine": "llama.cpp", "skipped": "llama-cpp-python is not installed (see the README)"}
    from llama_c import LlamaCpp, extra_bufts_work

    gpu = int(device.partition(":")[2] or 0) if device.startswith("cuda") else None
    if gpu is not None and not llama_cpp.llama_supports_gpu_offload():
        return {"engine": "llama.cpp", "skipped": "this llama-cpp-python build runs on the CPU only (rebuild it with "
                                                  "CMAKE_ARGS=-DGGML_CUDA=on to compare on the GPU)"}
    threads = cores()
    extra_bufts, note = extra_bufts_work(path, threads, gpu)
    settings = {"gpu": gpu, "flash_attn": flash_attn, "extra_bufts": extra_bufts}
    start = time.perf_counter()
    llm = LlamaCpp(str(path), threads, max(PROMPT, long, PREFILL_LONG) + NEW, **settings)
    load_s = time.perf_counter() - start
    prompts = windows(llm.tokenize)

    def run(ids: list[int]) -> tuple[float, float]:
        """Seconds to the first token of `ids` (a fresh cache) and decode tokens/s of the NEW - 1 after it."""
        _, first, last = llm.greedy([ids], NEW)
        return first, (NEW - 1) / (last - first)

    llm.greedy([prompts[0][:16]], 4)  # warm up
    ttft, decode = zip(*(run(prompts[0]) for _ in range(runs)), strict=True)
    prefill = [PROMPT / s for s in ttft]  # one llama_decode of the prompt, its last row's logits
    at_long = run(long_prompt(llm.tokenize, long))[1] if long else None
    prefill_long = median([PREFILL_LONG / llm.greedy([long_prompt(llm.tokenize, PREFILL_LONG)], 1)[1]
                           for _ in range(runs)])
    llm.close()
    together = LlamaCpp(str(path), threads, PROMPT + NEW, n_seq=BATCH, **settings)
    together.greedy(prompts, 2)  # warm up
    t = time.perf_counter()
    together.greedy(prompts, NEW)
    batch = BATCH * NEW / (time.perf_counter() - t)
    together.close()
    return {"engine": "llama.cpp", "load_s": load_s, "prefill_tps": median(prefill),
            "ttft_s": median(ttft), "decode_tps": median(decode), "decode_long_tps": at_long,
            "prefill_long_tps": prefill_long, "batch16_tps": batch,
            "peak_rss_mb": peak_memory("cpu")["peak_rss_mb"], "flash_attn": flash_attn, "extra_bufts": extra_bufts,
            "extra_bufts_note": note, "llama_cpp_version": llama_cpp.__version__}


def worker_accuracy(path: Path, device: str) -> dict:
    """Top-1 agreement with fp32 and perplexity over the fixed text, for each storage mode."""
    import torch

    import forwardpass

    def scored(logits: torch.Tensor, ids: list[int]) -> tuple[torch.Tensor, float, int]:
        """Each position's top-1 token, the text's perplexity under `logits` (one row a position), its length."""
        nll = torch.nn.functional.cross_entropy(logits[:-1], torch.tensor(ids[1:], device=logits.device))
        return logits.argmax(-1).cpu(), math.exp(nll.item()), len(ids)

    def decoded(fp, ids: list[int], kv: str) -> torch.Tensor | None:
        """Logits at every position of `ids`, each token a decode step over a pool of one of `kv` pairs, as the
        engine's runner steps it: the native step where it binds the pool, else the PyTorch blocks. None where a
        float16 pool is asked for and the native step does not read it."""
        from forwardpass.engine import BlockPool
        from forwardpass.engine.rows import NATIVE, Chunk, Rows
        from forwardpass.engine.runner import Runner

        pool = BlockPool(fp.config, -(-len(ids) // 16), 16, kv, fp.model.device)
        table = [pool.allocate() for _ in range(pool.num_blocks)]
        runner = Runner(fp.model, pool)
        if kv == "float16" and runner.capabilities is not NATIVE:
            return None
        with torch.inference_mode():  # each row copied: the native step's next call reuses its logits
            return torch.stack([as_tensor(runner.step(Rows([Chunk([t], table, i)])).logits[0]).float()
                                for i, t in enumerate(ids)])

    def run(storage: str, one_by_one: bool = False):
        """Logits at every position of the text: in one forward (the prefill path), or token by token over a
        float32 pool (the decode path: the native step where it binds)."""
        fp = forwardpass.load(path, storage=storage, device=device)
        ids = fp.encode(TEXT)
        if one_by_one:
            logits = decoded(fp, ids, "float32")
        else:
            with torch.inference_mode():
                logits = fp.model(torch.tensor([ids], device=device))[0][0].float()
        return scored(logits, ids)

    def half_pool() -> tuple[torch.Tensor, float, int] | None:
        """The default mode's decode path as the engine runs it with --kv-cache-dtype float16: the native step token
        by token over a pool of binary16 pairs (None where that step does not run)."""
        fp = forwardpass.load(path, device=device, kv_cache_dtype="float16")
        ids = fp.encode(TEXT)
        logits = decoded(fp, ids, fp.kv_format())
        return None if logits is None else scored(logits, ids)

    reference, ppl32, n = run("fp32")

    def row(top1: torch.Tensor, ppl: float) -> dict:
        return {"top1_agreement": (top1 == reference).float().mean().item(), "perplexity": ppl,
                "perplexity_delta": ppl - ppl32}

    out = {"tokens": n, "fp32": row(reference, ppl32)}
    for s in STORAGE_MODES:
        for label, one_by_one in (("", False), (" decode path", True)):
            if s == "fp32" and not one_by_one:
                continue
            out[s + label] = row(*run(s, one_by_one)[:2])
    half = half_pool()
    if half is not None:
        out["stored decode path, float16 KV"] = row(*half[:2])
    return out


# ---- the driver -------------------------------------------------------------------------------------
def spawn(spec: str, runs: int, wait_policy: str, device: str, model: Path, long: int, kv_cache_dtype: str,
          flash_attn: str = "both") -> dict:
    print(f"  {spec}" + (f" (flash attention {flash_attn})" if spec == "llama.cpp" else "") + " …", file=sys.stderr,
          flush=True)
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if wait_policy != "default":
        env["OMP_WAIT_POLICY"] = wait_policy
    r = subprocess.run([sys.executable, __file__, "--worker", spec, "--runs", str(runs), "--device", device,
                        "--model", str(model), "--long", str(long), "--kv-cache-dtype", kv_cache_dtype,
                        "--llama-flash-attn", flash_attn], capture_output=True, text=True, env=env)
    if r.returncode:
        last = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"
        return {"engine": spec, "skipped": f"failed: {last}"}
    return json.loads(r.stdout.strip().splitlines()[-1])


def spawn_llama_cpp(flash_attn: str, *args) -> dict:
    """llama.cpp's row: a worker for each flash-attention setting asked for, the faster kept at each point."""
    return keep_faster({s: spawn("llama.cpp", *args, flash_attn=s) for s in FLASH_ATTN[flash_attn]}, LLAMA_POINTS)


def llama_notes(report: dict) -> list[str]:
    """What the llama.cpp row's numbers were measured with, in words (the table prints them under it)."""
    labels = {"decode_tps": "decode", "prefill_tps": "prefill and TTFT", "prefill_long_tps": f"prefill @{PREFILL_LONG}",
              "decode_long_tps": f"decode @{report['long']}", "batch16_tps": f"{BATCH}×{NEW}"}
    notes = []
    for r in report["rows"]:
        if r["engine"] == "llama.cpp" and "skipped" not in r:
            notes.append(flash_attn_note(r["flash_attn"], r["flash_attn_tried"], labels))
            if r.get("extra_bufts_note"):
                notes.append(f"llama.cpp: {r['extra_bufts_note']}")
    return notes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=positive_int, default=3)
    ap.add_argument("--only", default=None,
                    help="comma-separated: forwardpass:STORAGE[:ACTIVATIONS] (exact or q8: --activations), "
                         "transformers, llama.cpp, accuracy")
    ap.add_argument("--omp-wait-policy", default="default", choices=["default", "PASSIVE", "ACTIVE"],
                    help="OpenMP wait policy of every engine's process (default: the runtime's own)")
    ap.add_argument("--long", type=checked(int, lambda v: v >= 0, "a count of tokens ≥ 0"), default=LONG, metavar="N",
                    help=f"also decode after an N-token prompt (forwardpass and llama.cpp; 0: not; default {LONG})")
    ap.add_argument("--kv-cache-dtype", default="auto", choices=KV_CACHE_DTYPES,
                    help="forwardpass's KV cache (default auto: the model's dtype)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--save", metavar="FILE", help="also write the report as JSON to FILE")
    ap.add_argument("--model", default=None, help="a model name (gemma3-270m) or GGUF path (default: the embedded one)")
    add_flash_attn_option(ap)
    add_device_option(ap)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    import forwardpass
    from forwardpass.packaged import resolve_model
    try:
        model = resolve_model(args.model) if args.model else forwardpass.default_model_path()
    except forwardpass.ForwardpassError as e:
        sys.exit(f"error: {e}")
    if args.worker == "llama.cpp":  # the driver checked the device; PyTorch stays out of llama.cpp's memory
        print(json.dumps(worker_llama_cpp(model, args.runs, args.device, args.long, args.llama_flash_attn)))
        return
    import torch

    torch.set_num_threads(os.cpu_count())
    device = checked_device(args.device)
    if args.worker:
        kind, _, mode = args.worker.partition(":")
        storage, _, activations = mode.partition(":")
        result = {"forwardpass": lambda: worker_forwardpass(model, storage, args.runs, device, args.long,
                                                            args.kv_cache_dtype, activations or "exact"),
                  "transformers": lambda: worker_transformers(model, args.runs, device),
                  "accuracy": lambda: worker_accuracy(model, device)}[kind]()
        print(json.dumps(result))
        return
    specs = args.only.split(",") if args.only else [f"forwardpass:{s}" for s in STORAGE_MODES] + [
        "transformers", "llama.cpp", "accuracy"]
    from forwardpass.article.machine import memory_bandwidth
    bandwidth = memory_bandwidth(device=device)
    before = machine(device)
    common = (args.runs, args.omp_wait_policy, device, model, args.long, args.kv_cache_dtype)
    rows = [spawn_llama_cpp(args.llama_flash_attn, *common) if s == "llama.cpp" else spawn(s, *common) for s in specs]
    accuracy = next((r for r in rows if "tokens" in r), None)
    rows = [r for r in rows if "engine" in r]
    base = next((r for r in rows if r["engine"] == "forwardpass fp32" and "skipped" not in r), None)
    report = {"benchmark": "speed", "model": str(model), "omp_wait_policy": args.omp_wait_policy, "long": args.long,
              "bandwidth_gb_s": bandwidth / 1e9, "machine": before, "after": machine(device), "rows": rows,
              "accuracy": accuracy}
    report["notes"] = llama_notes(report)
    if args.save:
        Path(args.save).write_text(json.dumps(report, indent=1))
    if args.json:
        print(json.dumps(report))
        return
    show(report, base)


def show(report: dict, base: dict | None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=max(Console().width, 130))
    where = report["machine"].get("device_name", report["machine"]["device"])
    t = Table(title=f"{PROMPT}-token prompt, {NEW} new tokens on {where} · {report['machine']['date']} · "
                    f"OMP_WAIT_POLICY {report['omp_wait_policy']} · load average "
                    f"{report['machine']['load_average'][0]} → {report['after']['load_average'][0]}")
    long = [f"decode @{report['long']} tok/s"] if report["long"] else []  # --long 0: no such column
    columns = ["engine", "prefill tok/s", f"prefill @{PREFILL_LONG}", "TTFT s", "decode tok/s", *long,
               f"{BATCH}×{NEW} tok/s", "peak RSS MB",
               "decode vs roofline"]
    for col in columns:
        t.add_column(col, justify="left" if col == "engine" else "right")
    for r in report["rows"]:
        if "skipped" in r:
            t.add_row(r["engine"], f"skipped: {r['skipped']}", *[""] * (len(columns) - 2))
            continue

        def ratio(key, r=r):
            return f" ({r[key] / base[key]:.2f}×)" if base is not None and base.get(key) else ""
        roof = f"{r['roofline_share']:.0%} of {r['roofline_decode_tps']:.0f}" if "roofline_share" in r else ""
        peak = f"{r['peak_rss_mb']:.0f}" + (f" + {r['peak_device_mb']:.0f} GPU" if "peak_device_mb" in r else "")
        at_long = [f"{r['decode_long_tps']:.1f}{ratio('decode_long_tps')}" if r.get("decode_long_tps") else ""]
        at_prefill = f"{r['prefill_long_tps']:.1f}{ratio('prefill_long_tps')}" if r.get("prefill_long_tps") else ""
        t.add_row(r["engine"], f"{r['prefill_tps']:.1f}{ratio('prefill_tps')}", at_prefill, f"{r['ttft_s']:.3f}",
                  f"{r['decode_tps']:.1f}{ratio('decode_tps')}", *(at_long if long else []),
                  f"{r['batch16_tps']:.1f}{ratio('batch16_tps')}", peak, roof)
    console.print(t)
    for note in report["notes"]:
        console.print(note)
    console.print(f"memory bandwidth (read, measured at the start): {report['bandwidth_gb_s']:.1f} GB/s; each "
                  "roofline uses the bandwidth sampled just before and after that engine's decode runs (runs where "
                  "the two differ by over 15% are repeated)")
    if report["accuracy"]:
        a = Table(title=f"accuracy cost vs fp32 over bench/text.txt ({report['accuracy']['tokens']} tokens)")
        for col in ("storage", "top-1 agreement", "perplexity", "Δ perplexity"):
            a.add_column(col, justify="right")
        for s, x in report["accuracy"].items():
            if s != "tokens":
                a.add_row(s, f"{x['top1_agreement']:.2%}", f"{x['perplexity']:.3f}", f"{x['perplexity_delta']:+.3f}")
        console.print(a)


if __name__ == "__main__":
    main()
