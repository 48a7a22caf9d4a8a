"""Speculative decoding against none, in one run: drafting by prompt lookup alone (`ngram`) and with the drafts
learnt across requests (`suffix`) beside no drafting (`off`). Decode tokens/s on tasks grounded in their input
(summarize, edit code — once more with the code given as the predicted output —, extract into a JSON schema, repeat a
list, quote an earlier chat turn) and on free prose, one request at a time on an engine of its own; an agent's loop
(agent_loop.py: eight turns, each editing the previous answer, through one engine); and the total rate of 16
concurrent requests (half grounded, half prose). Each request's output is checked to be the same token for token in
every mode.

    .venv/bin/python bench/speculative.py [--max-tokens 160] [--agent-tokens 200] [--runs 3] [--clients 16]
        [--row-share S] [--activations exact|q8] [--json]

A request's decode rate is its tokens after the first over the time from its first token to its last (prefill
excluded); the agent loop's, its turns' tokens over their times; batch-1 figures are medians of --runs runs, the modes
alternating. Acceptance is the share of drafted tokens kept (`suffix`'s); tokens per pass, the tokens each pass of the
model gave (`ngram`'s and `suffix`'s, over all runs: what drafting saves before what a draft row costs); copied, the
share of an answer's tokens that end a stretch of COPY tokens seen before them (in the prompt, the answer or, in the
agent's loop, an earlier turn): no drafting from the text keeps more, so 1 / (1 - copied) bounds a task's gain; long,
the share that ends a stretch of LONG_COPY tokens seen before (a passage or a line taken whole). The draft lengths
follow a draft row's cost as the steps measure it; `--row-share` holds it fixed instead, so that on a busy machine
the tokens per pass of two runs, and of the two drafting modes, compare.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from agent_loop import run_loop
from common import TEXT, checked_device, machine, median

from forwardpass.cli.options import add_device_option, add_threads_option, apply_threads, positive_int
from forwardpass.config import ACTIVATIONS

MODES = ("off", "ngram", "suffix")  # no drafting, prompt lookup alone, and with drafts learnt across requests
COPY = 2  # an answer's token counts as copied where it ends a stretch of this many tokens seen before it
LONG_COPY = 8  # and as a long copy where the stretch is this long: a passage or a line taken whole
CODE = '''def summarize(records):
    total = 0
    count = 0
    for record in records:
        if record.get("value") is None:
            continue
        total += record["value"]
        count += 1
    average = total / count if count else 0.0
    largest = max((r["value"] for r in records if r.get("value") is not None), default=None)
    return {"total": total, "count": count, "average": average, "largest": largest}
'''
ITEMS = ["apples", "bread", "cheddar cheese", "dish soap", "eggs", "flour", "green tea", "honey", "ice cream",
         "jam", "kale", "lemons", "milk", "noodles", "olive oil", "pears"]
PASSAGE = TEXT[:1200]
SCHEMA = {"type": "object", "properties": {
    "topics": {"type": "array", "items": {"type": "string", "maxLength": 60}, "maxItems": 5},
    "first_sentence": {"type": "string", "maxLength": 300}}, "required": ["topics", "first_sentence"],
    "additionalProperties": False}
EARLIER = ("A transformer turns text into tokens, each token into a vector, and passes the vectors through a stack of "
           "blocks; each block mixes information between positions with attention and then transforms each position "
           "with a small feed-forward network.")
GROUNDED = {
    "summarize": [{"role": "user", "content": f"Summarize this passage, quoting its key sentences:\n\n{PASSAGE}"}],
    "edit_code": [{"role": "user", "content": f"Rename `total` to `running_sum` in this code and give the whole "
                                              f"code back:\n\n{CODE}"}],
    "extract_json": [{"role": "user", "content": f"List the topics of this passage and quote its first sentence, "
                                                 f"as JSON:\n\n{PASSAGE}"}],
    "edit_code_predicted": [{"role": "user", "content": f"Rename `total` to `running_sum` in this code and give the "
                                                        f"whole code back:\n\n{CODE}"}],  # the code as `prediction`
    "repeat_list": [{"role": "user", "content": "Repeat this shopping list, one item per line, numbered:\n\n"
                                                + "\n".join(ITEMS)}],
    "quote_turn": [{"role": "user", "content": "How does a transformer process text?"},
                   {"role": "assistant", "content": EARLIER},
                   {"role": "user", "content": "Repeat your previous answer word for word."}],
}
PROSE = {
    "story": [{"role": "user", "content": "Write a short story about a fox who learns to sail."}],
    "explain": [{"role": "user", "content": "Explain why the sky is blue to a ten-year-old."}],
    "poem": [{"role": "user", "content": "Write a poem about rain in a city at night."}],
}


def engine_for(fp, speculative: str, share: float | None, seqs: int = 16):
    """An engine of mode `speculative`; `share`: a draft row's cost held at this share of a step (the draft lengths
    then hang on what is kept, not on how fast this machine ran its steps)."""
    from forwardpass.engine import Engine, EngineConfig
    from forwardpass.engine.speculation import StepCost

    engine = Engine(fp, EngineConfig(kv_cache_bytes=2**29, max_num_seqs=seqs, speculative=speculative))
    if share is not None:
        engine.scheduler.planner.cost = StepCost(held=share)
    return engine


def run(fp, speculative: str, requests: list[tuple[list[int], object]],
        share: float | None = None) -> tuple[list[dict], float, dict]:
    """Every request at once through one engine: each one's tokens and decode rate, the total generated tokens/s
    (first arrival to last token), and the engine's drafted and accepted counts."""
    engine = engine_for(fp, speculative, share, max(16, len(requests)))
    seen: list[dict] = [{"tokens": [], "times": []} for _ in requests]

    def taker(i):
        def take(out):
            if out.token_id is not None:
                seen[i]["tokens"].append(out.token_id)
                seen[i]["times"].append(time.perf_counter())
        return take

    start = time.perf_counter()
    for i, (prompt, params) in enumerate(requests):
        engine.submit(prompt, params, taker(i))
    engine.run_until_done()
    total = sum(len(s["tokens"]) for s in seen) / (time.perf_counter() - start)
    for s in seen:
        t = s.pop("times")
        s["decode_tps"] = (len(t) - 1) / (t[-1] - t[0]) if len(t) > 1 else float("nan")
    m = engine.metrics
    return seen, total, {"drafted": m.draft_tokens.value, "accepted": m.accepted_tokens.value}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-tokens", type=positive_int, default=160)
    ap.add_argument("--agent-tokens", type=positive_int, default=200)
    ap.add_argument("--runs", type=positive_int, default=3)
    ap.add_argument("--row-share", type=float, default=None,
                    help="hold a draft row's cost at this share of a step (default: fitted to the steps, as served)")
    ap.add_argument("--clients", type=positive_int, default=16)
    ap.add_argument("--activations", default="exact", choices=ACTIVATIONS,
                    help="how the integer products quantize their inputs (q8: llama.cpp's precision)")
    ap.add_argument("--json", action="store_true")
    add_device_option(ap)
    add_threads_option(ap)
    args = ap.parse_args()
    device = checked_device(args.device)
    apply_threads(args)

    import forwardpass
    from forwardpass.sampling import SamplingParams
    from forwardpass.structured.constraints import Constraint

    fp = forwardpass.load(device=device, activations=args.activations)
    tok = fp.tokenizer

    def request(messages, task):
        constraint = Constraint("json_schema", SCHEMA) if task == "extract_json" else None
        prediction = tok.encode_text(CODE) if task == "edit_code_predicted" else []
        return (tok.encode(tok.apply_chat_template(messages)),
                SamplingParams(temperature=0, max_tokens=args.max_tokens, constraint=constraint,
                               prediction=prediction))

    rows = []
    for kind, tasks in (("grounded", GROUNDED), ("prose", PROSE)):
        for task, messages in tasks.items():
            req = request(messages, task)
            rates, counts, outputs = {m: [] for m in MODES}, {m: {"drafted": 0, "accepted": 0} for m in MODES}, {}
            for _ in range(args.runs):
                for mode in MODES:
                    (seen,), _, c = run(fp, mode, [req], args.row_share)
                    rates[mode].append(seen["decode_tps"])
                    outputs.setdefault(mode, seen["tokens"])
                    counts[mode] = {k: counts[mode][k] + c[k] for k in counts[mode]}
            predicted = [(req[1].prediction, [])] if req[1].prediction else []  # a text drafts may come from
            rows.append(row(kind, task, rates, counts, outputs, args.runs, [*predicted, (req[0], outputs["off"])]))
            show(rows[-1], args.json)
    rates, counts, outputs = {m: [] for m in MODES}, {m: {"drafted": 0, "accepted": 0} for m in MODES}, {}
    texts: list[tuple[list[int], list[int]]] = []  # the first `off` run's turns: each one's prompt and answer
    for _ in range(args.runs):
        for mode in MODES:
            turns, tps, c = run_loop(fp, engine_for(fp, mode, args.row_share), CODE, args.agent_tokens)
            rates[mode].append(tps)
            outputs.setdefault(mode, [t for _, answer in turns for t in answer])
            if mode == "off" and not texts:
                texts = turns
            counts[mode] = {k: counts[mode][k] + c[k] for k in counts[mode]}
    agent = row("agent", "edit_8_turns", rates, counts, outputs, args.runs, texts)
    show(agent, args.json)
    mixed = [request(m, t) for t, m in [*GROUNDED.items(), *PROSE.items()]]
    many = [mixed[i % len(mixed)] for i in range(args.clients)]
    concurrent = {}
    for mode in MODES:
        seen, total, c = run(fp, mode, many, args.row_share)
        concurrent[mode] = {"total_tps": total, **c, "tokens": [s["tokens"] for s in seen]}
    tokens = [concurrent[mode].pop("tokens") for mode in MODES]
    same = all(t == tokens[0] for t in tokens)
    grounded = [r["speedup"] for r in rows if r["kind"] == "grounded"]
    prose = [r["speedup"] for r in rows if r["kind"] == "prose"]
    report = {"machine": machine(device), "max_tokens": args.max_tokens, "agent_tokens": args.agent_tokens,
              "row_share": args.row_share, "activations": args.activations,
              "runs": args.runs, "tasks": rows, "agent_loop": agent,
              "grounded_median_speedup": statistics.median(grounded), "prose_median_speedup": statistics.median(prose),
              "agent_speedup": agent["speedup"], "clients": args.clients, "concurrent": concurrent,
              "concurrent_same_tokens": same,
              "concurrent_speedup": concurrent["suffix"]["total_tps"] / concurrent["off"]["total_tps"]}
    if args.json:
        print(json.dumps(report))
        return
    print(f"{args.activations} activations; suffix against off: grounded median "
          f"{report['grounded_median_speedup']:.2f}×, agent loop "
          f"{report['agent_speedup']:.2f}×, prose median {report['prose_median_speedup']:.2f}×; {args.clients} "
          f"clients: " + ", ".join(f"{m} {concurrent[m]['total_tps']:.1f}" for m in MODES)
          + f" tok/s ({report['concurrent_speedup']:.2f}×, same tokens {same})")


def copied(texts: list[tuple[list[int], list[int]]], n: int = COPY) -> float:
    """The share of the answers' tokens that end an n-token stretch already seen before them (`texts`: (prompt, answer)
    pairs in the order one engine ran them; earlier ones count, as a drafter's history does). A drafted token is the
    one that followed the same last token or tokens somewhere before, so at n = 2 no drafting from the text can keep
    more: every other token takes a pass of its own, and a task can go at most 1 / (1 - copied) times as fast."""
    hits = total = 0
    seen: set[tuple[int, ...]] = set()
    for prompt, answer in texts:
        seq = prompt + answer
        for i in range(n - 1, len(seq)):
            gram = tuple(seq[i - n + 1:i + 1])
            if i >= len(prompt):
                hits, total = hits + (gram in seen), total + 1
            seen.add(gram)
    return hits / total if total else 0.0


def row(kind: str, task: str, rates: dict, counts: dict, outputs: dict, runs: int,
        texts: list[tuple[list[int], list[int]]]) -> dict:
    """One task's line: its medians in each mode, suffix's ratio to off (and ngram's), the share of suffix's drafted
    tokens kept, the tokens each pass of the model gave (ngram's and suffix's, over all runs), the share of the answer
    that copies text before it (`texts`: each request's prompt and answer) and whether every mode gave the same
    tokens."""
    tps, tokens = {m: median(rates[m]) for m in MODES}, len(outputs["off"])
    per_pass = {m: runs * tokens / (runs * tokens - counts[m]["accepted"]) for m in ("ngram", "suffix")}
    drafted = counts["suffix"]["drafted"]
    return {"kind": kind, "task": task, "tokens": tokens,
            "same_tokens": all(outputs[m] == outputs["off"] for m in MODES), **{f"{m}_tps": tps[m] for m in MODES},
            "speedup": tps["suffix"] / tps["off"], "ngram_speedup": tps["ngram"] / tps["off"],
            "acceptance": counts["suffix"]["accepted"] / drafted if drafted else 0.0,
            **{f"{m}_tokens_per_pass": per_pass[m] for m in per_pass}, "copied": copied(texts),
            "copied_long": copied(texts, LONG_COPY)}


def show(r: dict, quiet: bool) -> None:
    if not quiet:
        print(f"{r['kind']:8} {r['task']:19} {r['tokens']:4} tokens  " + "  ".join(f"{m} {r[m + '_tps']:6.1f}"
                                                                               for m in MODES)
              + f" tok/s  {r['speedup']:.2f}× (ngram {r['ngram_speedup']:.2f}×)  accepted {r['acceptance']:.0%}"
                f"  tokens/pass {r['suffix_tokens_per_pass']:.2f} (ngram {r['ngram_tokens_per_pass']:.2f})"
                f"  copied {r['copied']:.0%} (long {r['copied_long']:.0%})  same {r['same_tokens']}", flush=True)

if __name__ == "__main__":
    main()
