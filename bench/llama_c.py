"""llama.cpp at its fastest, the anchor every benchmark compares against: its C API through llama-cpp-python's
low-level bindings (one `llama_batch` per step, carrying every sequence's id, as llama.cpp's own server batches),
never the high-level `Llama.generate`, whose Python per token costs llama.cpp about a fifth of its batch-1 rate here.
Greedy: each step's token is the argmax of the row's logits. Imports no PyTorch (a worker's memory is llama.cpp's).

Its fastest settings are measured, not assumed:
- flash attention: which is faster depends on the CPU and the context, so a benchmark measures each point with it on
  and with it off and keeps the faster (`keep_faster`), saying which; `--llama-flash-attn on|off` pins one.
- extra buffer types (AMX, repacked weight layouts): faster where they work, but on some CPUs they crash
  llama_decode. A child process tries them (load, a prefill, a few steps); where it dies or fails and the same child
  without them succeeds, they stay off and the benchmark says so. The verdict is kept per CPU model,
  llama-cpp-python version, model file and device in the user's cache directory (bench-llama-cpp.json).

    .venv/bin/python bench/llama_c.py MODEL THREADS [--flash-attn on|off] [--extra-bufts on|off]
        # start to first token of "hi" (bench/startup.py runs this)
    .venv/bin/python bench/llama_c.py MODEL THREADS --probe --extra-bufts on   # the probe's child
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

_QUIET = None  # the log callback that drops llama.cpp's messages, kept alive as long as llama.cpp may call it

FLASH_ATTN = {"both": ("on", "off"), "on": ("on",), "off": ("off",)}  # --llama-flash-attn → the settings measured
PROBE_TIMEOUT_S = 600  # a probe child still running after this counts as failing
LOADED = "loaded"  # the probe child's line between its model load and its first llama_decode


class LlamaCpp:
    """One model file in one llama.cpp context for up to n_seq sequences of up to `positions` positions each
    (llama.cpp's default: a stream of cache cells per sequence, so no sequence's attention reads another's).
    flash_attn "on" or "off" (None: llama.cpp's default, which turns it on where the device supports it);
    extra_bufts None: as the probe found for this CPU and file (extra_bufts_work), its note in self.note."""

    def __init__(self, path: str, threads: int, positions: int, n_seq: int = 1, gpu: int | None = None,
                 n_batch: int = 512, flash_attn: str | None = None, extra_bufts: bool | None = None):
        import llama_cpp as L

        global _QUIET
        self.L = L
        self.note = None
        if extra_bufts is None:
            extra_bufts, self.note = extra_bufts_work(path, threads, gpu)
        if _QUIET is None:
            _QUIET = L.llama_log_callback(lambda level, text, data: None)
            L.llama_log_set(_QUIET, None)
        L.llama_backend_init()
        model_params = L.llama_model_default_params()
        model_params.n_gpu_layers = -1 if gpu is not None else 0
        model_params.main_gpu = gpu or 0
        model_params.use_extra_bufts = extra_bufts
        self.model = L.llama_model_load_from_file(str(path).encode(), model_params)
        if not self.model:
            raise RuntimeError(f"llama.cpp could not load {path}")
        self.vocab = L.llama_model_get_vocab(self.model)
        self.n_vocab = L.llama_vocab_n_tokens(self.vocab)
        params = L.llama_context_default_params()
        n_ctx = -(-positions // 256) * 256 * n_seq
        params.n_ctx, params.n_batch, params.n_ubatch, params.n_seq_max = n_ctx, n_batch, n_batch, n_seq
        params.n_threads = params.n_threads_batch = threads
        if flash_attn is not None:
            params.flash_attn_type = {"on": L.LLAMA_FLASH_ATTN_TYPE_ENABLED,
                                      "off": L.LLAMA_FLASH_ATTN_TYPE_DISABLED}[flash_attn]
        self.ctx = L.llama_init_from_model(self.model, params)
        if not self.ctx:
            raise RuntimeError(f"llama.cpp could not make a context of {positions} positions for {n_seq} sequences")
        self.n_batch = n_batch
        self.batch = L.llama_batch_init(n_batch, 0, n_seq)

    def tokenize(self, text: str) -> list[int]:
        """The text's ids, no BOS added, special tokens read as text (as forwardpass's encode)."""
        data = text.encode()
        room = (self.L.llama_token * (len(data) + 8))()
        n = self.L.llama_tokenize(self.vocab, data, len(data), room, len(room), False, False)
        if n < 0:
            raise RuntimeError(f"llama.cpp could not tokenize {len(data)} bytes")
        return list(room[:n])

    def clear(self) -> None:
        """Forget every sequence's cached positions."""
        self.L.llama_memory_clear(self.L.llama_get_memory(self.ctx), True)

    def decode(self, rows: list[tuple[int, int, int, bool]]) -> list[int]:
        """One llama_decode of rows (token, position, sequence id, wanted): the argmax of each wanted row's logits."""
        b = self.batch
        b.n_tokens = 0
        wanted = []
        for token, position, seq, want in rows:
            i = b.n_tokens
            b.token[i], b.pos[i], b.n_seq_id[i], b.logits[i] = token, position, 1, want
            b.seq_id[i][0] = seq
            b.n_tokens += 1
            if want:
                wanted.append(i)
        if self.L.llama_decode(self.ctx, b):
            raise RuntimeError("llama_decode failed")
        return [int(np.argmax(np.ctypeslib.as_array(self.L.llama_get_logits_ith(self.ctx, i), shape=(self.n_vocab,))))
                for i in wanted]

    def prefill(self, prompts: list[list[int]]) -> list[int]:
        """Each prompt as its own sequence (id = its index) from position 0, as few llama_decode calls as the batch
        holds; each prompt's first generated token."""
        rows = [(t, j, s, j == len(p) - 1) for s, p in enumerate(prompts) for j, t in enumerate(p)]
        first: list[int] = []
        for at in range(0, len(rows), self.n_batch):
            first += self.decode(rows[at:at + self.n_batch])
        return first

    def greedy(self, prompts: list[list[int]], new: int) -> tuple[list[list[int]], float, float]:
        """`new` greedy tokens for every prompt at once (the cache cleared first): prefill, then one step per token
        for every sequence together. Also the seconds to the first tokens (the prefill's) and to the last."""
        self.clear()
        start = time.perf_counter()
        tokens = self.prefill(prompts)
        first = time.perf_counter() - start
        out = [[t] for t in tokens]
        positions = [len(p) for p in prompts]
        for _ in range(new - 1):
            tokens = self.decode([(t, positions[s], s, True) for s, t in enumerate(tokens)])
            positions = [p + 1 for p in positions]
            for s, t in enumerate(tokens):
                out[s].append(t)
        return out, first, time.perf_counter() - start

    def close(self) -> None:
        self.L.llama_batch_free(self.batch)
        self.L.llama_free(self.ctx)
        self.L.llama_model_free(self.model)


def cores() -> int:
    """llama.cpp's threads: the cores this process may run on (fewer than the machine's under taskset)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


# ---- flash attention: both settings measured, the faster kept per point ----------------------------------------
def add_flash_attn_option(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--llama-flash-attn", choices=list(FLASH_ATTN), default="both",
                    help="llama.cpp's flash attention: measure each point with it on and off and keep the faster "
                         "(both, the default), or only this setting")


def faster(values: dict[str, float | None], lower: bool = False) -> str | None:
    """The setting with the highest value (the lowest where `lower`, as for seconds); on a tie the first named.
    None where no setting has a value."""
    known = {s: v for s, v in values.items() if v is not None and v == v}  # v == v: not NaN
    return (min if lower else max)(known, key=known.get) if known else None


def keep_faster(runs: dict[str, dict], points: dict[str, tuple[str, ...]]) -> dict:
    """One row from a benchmark's row for each flash-attention setting ({"on": row, "off": row}). At each point (a
    rate, higher is faster, with the fields measured in the same runs) the values of the setting whose rate is higher;
    every other field (load time, memory) from the row kept for the first point. `flash_attn` says which setting each
    point kept, `flash_attn_runs` holds every row. A skipped row is passed over; if all were, their reasons are
    joined into one (one, where they are the same)."""
    done = {s: r for s, r in runs.items() if "skipped" not in r}
    if not done:
        first = dict(next(iter(runs.values())))
        if len({r["skipped"] for r in runs.values()}) > 1:
            first["skipped"] = "; ".join(f"flash attention {s}: {r['skipped']}" for s, r in runs.items())
        return first
    kept = {p: faster({s: r.get(p) for s, r in done.items()}) for p in points}
    row = dict(done[kept[next(iter(points))] or next(iter(done))])
    for p, fields in points.items():
        if kept[p] is not None:
            row.update({f: done[kept[p]].get(f) for f in (p, *fields)})
    row["flash_attn"] = {p: s for p, s in kept.items() if s is not None}
    row["flash_attn_tried"] = list(runs)
    if len(runs) > 1:
        row["flash_attn_runs"] = runs
    return row


def flash_attn_note(kept: dict[str, str], tried: list[str], labels: dict[str, str] | None = None) -> str:
    """Which flash-attention setting llama.cpp's numbers come from, in words; `labels` names the points."""
    if len(tried) == 1:
        return f"llama.cpp: flash attention {tried[0]} (--llama-flash-attn {tried[0]})"
    used = [s for s in tried if s in kept.values()]
    if len(used) == 1:
        every = " at every point" if len(kept) > 1 else ""
        return f"llama.cpp: flash attention {used[0]} (the faster here of {' and '.join(tried)}{every})"
    at = {s: ", ".join((labels or {}).get(p, p) for p, v in kept.items() if v == s) for s in used}
    return "llama.cpp: " + "; ".join(f"flash attention {s} (faster here) at {at[s]}" for s in used)


# ---- extra buffer types: tried once in a child process ----------------------------------------------------------
def cpu_model() -> str:
    """The CPU's model name as lscpu prints it (/proc/cpuinfo), else what Python knows of the machine."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def llama_cpp_version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("llama_cpp_python")
    except PackageNotFoundError:
        return "unknown"


def probe_command(path: str | Path, threads: int, gpu: int | None, extra_bufts: bool) -> list[str]:
    return [sys.executable, __file__, str(path), str(threads), "--probe", "--extra-bufts",
            "on" if extra_bufts else "off", *(["--gpu", str(gpu)] if gpu is not None else [])]


def run_probe(command: list[str], timeout: float = PROBE_TIMEOUT_S) -> str | None:
    """Run one probe child: None where it exits 0, else what went wrong, in words. The child prints LOADED once
    the model is loaded, so a death after it is llama_decode's."""
    try:
        r = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else e.stdout or ""
        stage = "llama_decode" if LOADED in out.split() else "llama.cpp's model load"
        return f"{stage} with them did not finish in {timeout:.0f} s"
    if r.returncode == 0:
        return None
    stage = "llama_decode" if LOADED in r.stdout.split() else "llama.cpp's model load"
    if r.returncode < 0:
        try:
            name = signal.Signals(-r.returncode).name
        except ValueError:
            name = f"signal {-r.returncode}"
        return f"they crash {stage} on this CPU ({name})"
    last = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
    return f"{stage} fails with them on this CPU ({last})"


def decide(command_for: Callable[[bool], list[str]], timeout: float = PROBE_TIMEOUT_S
           ) -> tuple[bool, str | None, bool]:
    """(use extra buffer types, the note where not, whether the verdict is theirs to keep): the probe with them; where
    it fails, again without them. Failing both ways says nothing about them: they stay on (the benchmark itself then
    reports llama.cpp's failure) and nothing is kept."""
    failed = run_probe(command_for(True), timeout)
    if failed is None:
        return True, None, True
    if run_probe(command_for(False), timeout) is not None:
        return True, None, False
    return False, f"extra buffer types off: {failed}", True


_VERDICTS: dict[str, tuple[bool, str | None]] = {}  # this process's answers, by the cache file's key


def verdict_file() -> Path:
    from forwardpass.packaged import cache_dir  # no PyTorch
    return cache_dir() / "bench-llama-cpp.json"


def extra_bufts_work(path: str | Path, threads: int, gpu: int | None = None) -> tuple[bool, str | None]:
    """Whether llama.cpp's extra buffer types work here with this file, and where not the note every table and JSON
    of the benchmark carries. Asked of child processes (decide) once per CPU model, llama-cpp-python version, model
    file and device; the answer is kept in verdict_file()."""
    path = Path(path)
    key = " | ".join([cpu_model(), f"llama-cpp-python {llama_cpp_version()}", f"{path.name} {path.stat().st_size}",
                      "cpu" if gpu is None else f"cuda:{gpu}"])
    if key in _VERDICTS:
        return _VERDICTS[key]
    file = verdict_file()
    try:
        known = json.loads(file.read_text())
    except (OSError, ValueError):
        known = {}
    if key in known:
        _VERDICTS[key] = known[key]["extra_bufts"], known[key]["note"]
        return _VERDICTS[key]
    on, note, definite = decide(lambda extra: probe_command(path, threads, gpu, extra))
    _VERDICTS[key] = on, note
    if definite:
        known[key] = {"extra_bufts": on, "note": note, "date": time.strftime("%Y-%m-%d %H:%M")}
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
            part = file.with_suffix(f".{os.getpid()}")
            part.write_text(json.dumps(known, indent=1))
            part.replace(file)
        except OSError:
            pass  # unwritable: the next process asks again
    return on, note


def main() -> None:
    ap = argparse.ArgumentParser(description="llama.cpp's start to the first token of 'hi', or the probe's child")
    ap.add_argument("model")
    ap.add_argument("threads", type=int)
    ap.add_argument("--flash-attn", choices=["on", "off"])
    ap.add_argument("--extra-bufts", choices=["on", "off"], help="default: as the probe found")
    ap.add_argument("--gpu", type=int)
    ap.add_argument("--probe", action="store_true", help="load, then a prefill of 32 tokens and two steps")
    args = ap.parse_args()
    extra = None if args.extra_bufts is None else args.extra_bufts == "on"
    if args.probe:
        llm = LlamaCpp(args.model, args.threads, positions=64, gpu=args.gpu, extra_bufts=extra)
        print(LOADED, flush=True)
        ids = (llm.tokenize("The quick brown fox jumps over the lazy dog. ") * 8)[:32]
        print(llm.greedy([ids], 3)[0][0])  # one llama_decode of 32 rows, then two of one row
        return
    llm = LlamaCpp(args.model, args.threads, positions=512, gpu=args.gpu, flash_attn=args.flash_attn,
                   extra_bufts=extra)
    print(llm.prefill([llm.tokenize("hi")])[0])


if __name__ == "__main__":
    main()
