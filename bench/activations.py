"""What 8-bit activations cost in accuracy: for each installed chat model, top-1 agreement with the fp32 reference and
the change in perplexity over bench/text.txt of the stored weights with exact activations (`--activations exact`, the
default) and with q8 ones (`--activations q8`), on the prefill path (the whole text in one pass) and the decode path
(token by token through the engine's runner: the native step); beside them llama.cpp on the same file and text (its
own arithmetic: 8-bit activations against the same blocks), where llama-cpp-python is installed. Each change of
perplexity comes with its standard error over the text's tokens (a paired difference: the same tokens scored twice), and
each row's perplexity against llama.cpp's too; the mean KL divergence from fp32's next-token distribution says how far
a mode moves the whole distribution, not only the text's tokens.

    .venv/bin/python bench/activations.py [--model smollm2-135m,gemma3-270m] [--threads 2] [--json]

The reference is the same file's weights widened to float32 and run in float32 (`--storage fp32`), one pass."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

from common import TEXT, as_tensor, machine
from kv_accuracy import cpu_name

MODES = ("exact", "q8")


CHUNK = 64  # positions whose float64 log probabilities are held at once (Gemma's vocabulary: 2 MB a position)


def scored(logits, ids: list[int], ref=None):
    """Each position's top-1 token, each next token's negative log-likelihood (n - 1 of them) under `logits` (one row a
    position) and, given the reference's logits `ref`, the mean over positions of KL(ref ‖ logits) between next-token
    distributions (as llama.cpp's perplexity tool gives it); a chunk of positions at a time."""
    import torch

    nll, kl = [], 0.0
    for i in range(0, len(ids) - 1, CHUNK):
        end = min(i + CHUNK, len(ids) - 1)
        logp = torch.log_softmax(logits[i:end].double(), -1)
        nll.append(-logp.gather(1, torch.tensor(ids[i + 1:end + 1])[:, None])[:, 0])
        if ref is not None:
            p = torch.log_softmax(ref[i:end].double(), -1)
            kl += (p.exp() * (p - logp)).sum().item()
    return logits.argmax(-1), torch.cat(nll), kl / (len(ids) - 1)


def compared(nll, nll_ref) -> tuple[float, float]:
    """exp(mean nll) - exp(mean nll_ref) and its standard error over the tokens (the delta method on the per-token
    pairs, the same tokens scored twice, whose spread is far smaller than either perplexity's; tokens taken as
    independent, as llama.cpp's perplexity tool takes them)."""
    ppl, ppl_ref = math.exp(nll.mean().item()), math.exp(nll_ref.mean().item())
    return ppl - ppl_ref, (ppl * nll - ppl_ref * nll_ref).std().item() / math.sqrt(len(nll))


def decoded(fp, ids: list[int]):
    """Logits at every position of `ids`, a token a step through the engine's runner (the native step for a native
    model), over a float16 pool as the engine's default keeps a quantized model's pairs."""
    import torch

    from forwardpass.engine import BlockPool
    from forwardpass.engine.rows import Chunk, Rows
    from forwardpass.engine.runner import Runner

    pool = BlockPool(fp.config, -(-len(ids) // 16), 16, fp.kv_format())
    table = [pool.allocate() for _ in range(pool.num_blocks)]
    runner = Runner(fp.model, pool)
    with torch.inference_mode():
        return torch.stack([as_tensor(runner.step(Rows([Chunk([t], table, i)])).logits[0]).float()
                            for i, t in enumerate(ids)])


def llama_cpp_logits(path: str, ids: list[int], threads: int):
    """llama.cpp's logits at every position of `ids` (one sequence, every row wanted), or None without it."""
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        return None
    import numpy as np
    import torch
    from llama_c import LlamaCpp

    ll = LlamaCpp(path, threads, len(ids) + 1, n_batch=512)
    try:
        rows = []
        for at in range(0, len(ids), ll.n_batch):
            b = ll.batch
            b.n_tokens = 0
            for j, t in enumerate(ids[at:at + ll.n_batch]):
                b.token[j], b.pos[j], b.n_seq_id[j], b.logits[j] = t, at + j, 1, True
                b.seq_id[j][0] = 0
                b.n_tokens += 1
            if ll.L.llama_decode(ll.ctx, b):
                raise RuntimeError("llama_decode failed")
            rows += [np.ctypeslib.as_array(ll.L.llama_get_logits_ith(ll.ctx, j), shape=(ll.n_vocab,)).copy()
                     for j in range(b.n_tokens)]
        return torch.from_numpy(np.stack(rows))
    finally:
        ll.close()


def measure(name: str, threads: int) -> dict:
    import torch

    import forwardpass
    from forwardpass.packaged import resolve_model

    path = str(resolve_model(name))
    reference = forwardpass.load(path, storage="fp32")
    ids = reference.encode(TEXT)
    with torch.inference_mode():
        ref = reference.model(torch.tensor([ids]))[0][0].float()
    top_ref, nll_ref, _ = scored(ref, ids)
    del reference
    nlls = {}

    def row(mode: str, path_name: str, logits) -> dict:
        top, nll, kl = scored(logits, ids, ref)
        nlls[mode, path_name] = nll
        delta, se = compared(nll, nll_ref)
        return {"mode": mode, "path": path_name, "top1_vs_fp32": (top == top_ref).float().mean().item(),
                "perplexity": math.exp(nll.mean().item()), "perplexity_delta": delta, "perplexity_delta_se": se,
                "kl_divergence": kl}

    rows = []
    for mode in MODES:
        torch_fp = forwardpass.load(path, activations=mode)  # the PyTorch blocks over the stored tiles
        with torch.inference_mode():
            rows.append(row(mode, "prefill", torch_fp.model(torch.tensor([ids]))[0][0].float()))
        del torch_fp
        native = forwardpass.load(path, activations=mode, backend="native")  # what the commands run
        rows.append(row(mode, "decode", decoded(native, ids)))
    theirs = llama_cpp_logits(path, ids, threads)
    if theirs is not None:
        rows.append(row("llama.cpp", "one pass", theirs))
        theirs_nll = nlls["llama.cpp", "one pass"]
        for r in rows[:-1]:  # each row's perplexity against llama.cpp's, paired over the same tokens
            r["vs_llama_cpp"], r["vs_llama_cpp_se"] = compared(nlls[r["mode"], r["path"]], theirs_nll)
    return {"model": name, "file": os.path.basename(path), "tokens": len(ids),
            "fp32_perplexity": math.exp(nll_ref.mean().item()), "rows": rows, "llama_cpp": theirs is not None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m,gemma3-270m", help="comma-separated installed names or files")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="llama.cpp's threads")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args()
    from forwardpass import kernels
    from forwardpass.errors import ForwardpassError

    facts = machine() | {"cpu": cpu_name(), "kernels": kernels.isa()}
    try:
        results = [measure(m, args.threads) for m in args.model.split(",")]
    except ForwardpassError as e:
        sys.exit(f"error: {e}")
    facts["load_average_after"] = machine()["load_average"]
    if args.json:
        print(json.dumps({"machine": facts, "models": results}))
        return
    print(f"{facts['date']}, {facts['cpu']}, {facts['kernels']} kernels, load average {facts['load_average']} → "
          f"{facts['load_average_after']}")
    if not all(r["llama_cpp"] for r in results):
        print("llama.cpp: not installed (.venv/bin/pip install llama-cpp-python), its rows left out")
    print("| model (file, tokens, fp32 perplexity) | activations | path | top-1 vs fp32 | perplexity | Δ perplexity "
          "(± s.e.) | KL divergence from fp32 | perplexity − llama.cpp's (± s.e.) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        what = f"{r['model']} ({r['file']}, {r['tokens']}, {r['fp32_perplexity']:.3f})"
        for x in r["rows"]:
            theirs = (f"{x['vs_llama_cpp']:+.3f} ± {x['vs_llama_cpp_se']:.3f}" if "vs_llama_cpp" in x else "")
            print(f"| {what} | {x['mode']} | {x['path']} | {x['top1_vs_fp32']:.2%} | {x['perplexity']:.3f} | "
                  f"{x['perplexity_delta']:+.3f} ± {x['perplexity_delta_se']:.3f} | {x['kl_divergence']:.5f} | "
                  f"{theirs} |")


if __name__ == "__main__":
    main()
