"""Batched decoding, engine to engine in one run: forwardpass's engine (the native batched step over the paged pool)
beside llama.cpp's own batching (one `llama_batch` carrying every sequence's id, through llama-cpp-python's C API,
as llama.cpp's server batches), on the same GGUF, the same prompts, greedy, the same number of new tokens.

    .venv/bin/python bench/batching.py [--sequences 1,4,16] [--max-tokens 128] [--storage stored] [--json]
                                       [--llama-flash-attn both|on|off]

Each engine runs in its own process. For each count of sequences: every prompt goes in at once, then each step
decodes one token for every sequence; the rate is all generated tokens over the wall time, prefill included.
forwardpass also reports the time to first token of a 512-token prompt arriving while 15 others decode, its prefill
in one step (a budget of 4096 tokens a step) or chunked (512, 128: decode rows and prefill share each step).
llama.cpp's rows need `llama-cpp-python` (see the README); without it they are skipped with a message. Each of its
counts runs with flash attention on and with it off, and keeps the faster (--llama-flash-attn pins one); where its
extra buffer types crash it on this CPU they are turned off. The output says which (bench/llama_c.py).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

from common import counts, machine
from llama_c import FLASH_ATTN, add_flash_attn_option, faster, flash_attn_note

from forwardpass.cli.options import positive_int
from forwardpass.config import ACTIVATIONS, STORAGE_MODES

QUESTIONS = ["Why is the sky blue?", "Name three birds and describe them.", "Write a poem about rain.",
             "Explain how a bicycle works.", "What is a prime number?", "Describe a busy market.",
             "How do plants grow?", "Tell a story about a fox."]


def prompts(count: int) -> list[list[int]]:
    """`count` chat prompts as token ids (the default model's tokenizer and template, read without its weights),
    the questions in turn."""
    import forwardpass
    from forwardpass.text.tokenizer import Tokenizer
    from forwardpass.weights.gguf_config import open_gguf

    reader = open_gguf(forwardpass.default_model_path())
    fields = {k: v for k, v in reader.fields.items() if k.startswith("tokenizer.")}
    tok = Tokenizer.from_gguf_fields(fields)
    return [tok.encode(tok.apply_chat_template([{"role": "user", "content": QUESTIONS[i % len(QUESTIONS)]}]))
            for i in range(count)]


def worker_forwardpass(counts: list[int], new: int, storage: str, activations: str = "exact") -> dict:
    import forwardpass
    from forwardpass.engine import Engine, EngineConfig
    from forwardpass.sampling import SamplingParams

    fp = forwardpass.load(storage=storage, activations=activations)
    engine = Engine(fp, EngineConfig(kv_cache_bytes=2**30, max_num_seqs=max(counts), max_num_batched_tokens=4096,
                                     speculative="off"))  # a token a step, as llama.cpp's batch decodes
    greedy = SamplingParams(temperature=0, max_tokens=new, ignore_eos=True)

    def rate(ids: list[list[int]]) -> float:
        generated = []
        start = time.perf_counter()
        for p in ids:
            engine.submit(p, greedy, lambda o: generated.append(o) if o.token_id is not None else None)
        engine.run_until_done()
        return len(generated) / (time.perf_counter() - start)

    def first_token_while_15_decode(budget: int) -> float:
        """Seconds from a 512-token prompt's arrival to its first token while 15 others decode, prefill chunks
        of at most `budget` tokens per step (decode rows included)."""
        busy = Engine(fp, EngineConfig(kv_cache_bytes=2**28, max_num_seqs=16, max_num_batched_tokens=budget))
        started: set[str] = set()
        for p in prompts(15):
            busy.submit(p, SamplingParams(temperature=0, max_tokens=400, ignore_eos=True),
                        lambda o: started.add(o.request_id))
        while len(started) < 15:  # every one of them decoding
            busy.step()
        long = [t for p in prompts(40) for t in p][:512]
        first: list[float] = []
        arrival = time.perf_counter()
        busy.submit(long, SamplingParams(temperature=0, max_tokens=1), lambda o: first.append(time.perf_counter()))
        while not first:
            busy.step()
        return first[0] - arrival

    rate(prompts(1))  # warm up
    return {"engine": f"forwardpass {storage}" + ("" if activations == "exact" else f", {activations} activations"),
            "tokens_per_s": {str(n): rate(prompts(n)) for n in counts},
            "ttft_512_while_15_decode_s": {str(b): first_token_while_15_decode(b) for b in (4096, 512, 128)}}


def worker_llama_cpp(counts: list[int], new: int, threads: int, flash_attn: str) -> dict:
    """llama.cpp's rate for each count with each flash-attention setting asked for (the two in turn at each count,
    so that a machine changing speed meets both), the faster kept."""
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        return {"engine": "llama.cpp", "skipped": "llama-cpp-python is not installed (see the README)"}
    from llama_c import LlamaCpp, extra_bufts_work

    import forwardpass

    path = str(forwardpass.default_model_path())
    extra_bufts, note = extra_bufts_work(path, threads)

    def rate(ids: list[list[int]], setting: str) -> float:
        llm = LlamaCpp(path, threads, max(map(len, ids)) + new, n_seq=len(ids), n_batch=max(512, sum(map(len, ids))),
                       flash_attn=setting, extra_bufts=extra_bufts)
        start = time.perf_counter()
        llm.greedy(ids, new)
        elapsed = time.perf_counter() - start
        llm.close()
        return len(ids) * new / elapsed

    settings = FLASH_ATTN[flash_attn]
    rate(prompts(1), settings[0])  # warm up
    runs = {s: {} for s in settings}
    for n in counts:
        for s in settings:
            runs[s][str(n)] = rate(prompts(n), s)
    kept = {n: faster({s: runs[s][n] for s in settings}) for n in runs[settings[0]]}
    return {"engine": "llama.cpp (llama_batch, many sequence ids)",
            "tokens_per_s": {n: runs[s][n] for n, s in kept.items()}, "flash_attn": kept,
            "flash_attn_tried": list(settings), "flash_attn_runs": runs, "extra_bufts": extra_bufts,
            "extra_bufts_note": note}


def run_worker(args: list[str]) -> dict:
    out = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True)
    if out.returncode < 0:
        return {"engine": args[1], "skipped": f"its process died of signal {-out.returncode}"}
    if out.returncode:
        return {"engine": args[1], "skipped": (out.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sequences", type=counts, default=[1, 4, 16])
    ap.add_argument("--max-tokens", type=positive_int, default=128)
    ap.add_argument("--storage", default="stored", choices=list(STORAGE_MODES))
    ap.add_argument("--activations", default="exact", choices=list(ACTIVATIONS),
                    help="forwardpass's integer products' inputs (q8: llama.cpp's precision)")
    add_flash_attn_option(ap)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--worker", choices=["forwardpass", "llama.cpp"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        import torch
        result = (worker_forwardpass(args.sequences, args.max_tokens, args.storage, args.activations)
                  if args.worker == "forwardpass"
                  else worker_llama_cpp(args.sequences, args.max_tokens, torch.get_num_threads(),
                                        args.llama_flash_attn))
        print(json.dumps(result))
        return
    common = ["--sequences", ",".join(map(str, args.sequences)), "--max-tokens", str(args.max_tokens)]
    print("forwardpass ...", file=sys.stderr)
    ours = run_worker(["--worker", "forwardpass", "--storage", args.storage, "--activations", args.activations,
                       *common])
    print("llama.cpp ...", file=sys.stderr)
    theirs = run_worker(["--worker", "llama.cpp", "--llama-flash-attn", args.llama_flash_attn, *common])
    result = {"benchmark": "batching", "max_tokens": args.max_tokens, "engines": [ours, theirs]} | machine("cpu")
    result["notes"] = []  # what llama.cpp's rates were measured with
    if "flash_attn" in theirs:
        labels = {str(n): f"{n} sequences" for n in args.sequences}
        result["notes"].append(flash_attn_note(theirs["flash_attn"], theirs["flash_attn_tried"], labels))
    if theirs.get("extra_bufts_note"):
        result["notes"].append(f"llama.cpp: {theirs['extra_bufts_note']}")
    if "tokens_per_s" in ours and "tokens_per_s" in theirs:
        result["ratio"] = {n: ours["tokens_per_s"][n] / theirs["tokens_per_s"][n] for n in ours["tokens_per_s"]}
    if args.json:
        print(json.dumps(result))
        return
    for e in (ours, theirs):
        rates = "   ".join(f"{n}: {r:.1f}" for n, r in e.get("tokens_per_s", {}).items())
        print(f"{e['engine']:45} {rates or e.get('skipped')}")
    for budget, seconds in ours.get("ttft_512_while_15_decode_s", {}).items():
        print(f"first token of a 512-token prompt while 15 decode, {budget} tokens a step: {seconds:.3f} s")
    if "ratio" in result:
        print("forwardpass / llama.cpp: " + "   ".join(f"{n}: {r:.2f}×" for n, r in result["ratio"].items()))
    for note in result["notes"]:
        print(note)
    print(f"(tokens/s, all sequences together; load average {result['load_average']})")


if __name__ == "__main__":
    main()
