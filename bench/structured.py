"""The cost of structured output, in one run: the constraint libraries' grammar compile and per-token mask time on
the default model's vocabulary (llguidance, which forwardpass uses, beside xgrammar where it is installed), and the
engine's decode rate with and without a JSON schema on the same requests (alone, and 16 at once).

    .venv/bin/python bench/structured.py [--max-tokens 128] [--json] [--device cpu]

The masks are driven along the tokens of one valid document of a schema with nested objects, arrays, enums and
numbers; every token of it must be allowed (a library that refuses one is reported as failing). xgrammar is
optional (`pip install --no-deps xgrammar apache-tvm-ffi`): it is not a dependency of forwardpass.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from common import checked_device, machine

from forwardpass.cli.options import add_device_option, positive_int
from forwardpass.structured.constraints import COMPACT, Constraint, guidance_tokenizer

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"}, "age": {"type": "integer", "minimum": 0},
        "color": {"enum": ["red", "green", "blue"]}, "scores": {"type": "array", "items": {"type": "number"}},
        "address": {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
                    "required": ["city", "zip"], "additionalProperties": False},
    },
    "required": ["name", "age", "color", "scores", "address"], "additionalProperties": False,
}
DOCUMENT = {"name": "Ada Lovelace", "age": 36, "color": "blue", "scores": [1.5, 2, -325.0],
            "address": {"city": "London", "zip": "W1"}}
# a bounded schema for the decode runs: a small model given an unbounded string or number may never close it
BOUNDED = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 24}, "age": {"type": "integer", "minimum": 0,
                                                                         "maximum": 120},
                   "color": {"enum": ["red", "green", "blue"]},
                   "pets": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 3}},
    "required": ["name", "age", "color", "pets"], "additionalProperties": False,
}


def bits_allow(words, token: int) -> bool:
    return bool((int(words[token // 32]) >> (token % 32)) & 1)


def llguidance_masks(tokenizer, vocab_size: int, ids: list[int]) -> dict:
    import llguidance
    import torch

    start = time.perf_counter()
    vocab = guidance_tokenizer(tokenizer, vocab_size)
    built = time.perf_counter() - start
    start = time.perf_counter()
    m = llguidance.LLMatcher(vocab, llguidance.LLMatcher.grammar_from_json_schema(SCHEMA, defaults=COMPACT))
    compiled = time.perf_counter() - start
    words = torch.zeros((vocab_size + 31) // 32, dtype=torch.int32)
    times, ok = [], True
    for token in ids:
        start = time.perf_counter()
        m.unsafe_compute_mask_ptr(words.data_ptr(), words.numel() * 4)
        times.append(time.perf_counter() - start)
        ok = ok and bits_allow(words, token) and m.consume_token(token)
    return summary("llguidance", built, compiled, times, ok and m.is_accepting())


def xgrammar_masks(tokenizer, vocab_size: int, ids: list[int]) -> dict:
    try:
        import xgrammar
    except ImportError:
        return {"library": "xgrammar", "skipped": "not installed"}
    start = time.perf_counter()
    vocab = [tokenizer.token_bytes(i) for i in range(tokenizer.vocab_size)]  # each token's bytes, as xgrammar's RAW
    info = xgrammar.TokenizerInfo(vocab, xgrammar.VocabType.RAW, vocab_size=vocab_size,
                                  stop_token_ids=tokenizer.eos_ids)
    compiler = xgrammar.GrammarCompiler(info)
    built = time.perf_counter() - start
    start = time.perf_counter()
    grammar = compiler.compile_json_schema(json.dumps(SCHEMA), any_whitespace=False, separators=(",", ":"))
    compiled = time.perf_counter() - start
    m = xgrammar.GrammarMatcher(grammar)
    words = xgrammar.allocate_token_bitmask(1, vocab_size)
    times, ok = [], True
    for token in ids:
        start = time.perf_counter()
        m.fill_next_token_bitmask(words)
        times.append(time.perf_counter() - start)
        ok = ok and bits_allow(words[0], token) and m.accept_token(token)
    return summary("xgrammar", built, compiled, times, ok)


def summary(library: str, built: float, compiled: float, times: list[float], ok: bool) -> dict:
    return {"library": library, "tokenizer_s": round(built, 3), "compile_ms": round(compiled * 1e3, 2),
            "mask_us_median": round(statistics.median(times) * 1e6, 1), "mask_us_max": round(max(times) * 1e6, 1),
            "accepts_the_document": ok}


def decode_rates(loaded, max_tokens: int) -> dict:
    """Decode tokens/s through the engine (each request's tokens after its first, over the time from the last
    request's first token to the end), 1 and 16 requests at once, without and with the bounded schema. Free text
    decodes in greedy bursts; a constrained row runs one token a step (its mask comes between steps)."""
    from forwardpass.engine import Engine, EngineConfig
    from forwardpass.sampling import SamplingParams

    tok = loaded.tokenizer
    prompts = [tok.encode(tok.apply_chat_template([{"role": "user", "content": f"Describe person {i} as JSON."}]))
               for i in range(16)]
    rates = {}
    for label, constraint in (("free", None), ("json_schema", Constraint("json_schema", BOUNDED))):
        for n in (1, 16):
            engine = Engine(loaded, EngineConfig(kv_cache_bytes=2**29))
            first, last, tokens = {}, 0.0, 0
            params = SamplingParams(temperature=0, max_tokens=max_tokens, constraint=constraint, ignore_eos=True)

            def seen(out, first=first):
                nonlocal last, tokens
                first.setdefault(out.request_id, time.perf_counter())
                last = time.perf_counter()
                tokens = tokens + (out.token_id is not None)

            for p in prompts[:n]:
                engine.submit(p, params, seen)
            engine.run_until_done()
            rates[f"{label}, {n} at once"] = round((tokens - n) / (last - max(first.values())), 1)
    return rates


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-tokens", type=positive_int, default=128)
    ap.add_argument("--json", action="store_true")
    add_device_option(ap)
    args = ap.parse_args()
    device = checked_device(args.device)
    from forwardpass import load

    loaded = load(device=device)
    tok, vocab = loaded.tokenizer, loaded.config.vocab_size
    ids = tok.encode(json.dumps(DOCUMENT, separators=(",", ":")))
    report = {"benchmark": "structured", "vocab_size": vocab, "document_tokens": len(ids),
              "masks": [llguidance_masks(tok, vocab, ids), xgrammar_masks(tok, vocab, ids)],
              "decode_tokens_per_s": decode_rates(loaded, args.max_tokens)} | machine(device)
    if args.json:
        print(json.dumps(report))
        return
    print(f"{report['date']}, load average {report['load_average']}; vocabulary {vocab}, "
          f"a {len(ids)}-token document")
    for m in report["masks"]:
        if "skipped" in m:
            print(f"  {m['library']:11} skipped: {m['skipped']}")
            continue
        print(f"  {m['library']:11} vocabulary {m['tokenizer_s']} s, schema compile {m['compile_ms']} ms, mask "
              f"{m['mask_us_median']} µs median ({m['mask_us_max']} max), accepts the document: "
              f"{m['accepts_the_document']}")
    rates = report["decode_tokens_per_s"]
    for n in (1, 16):
        free, constrained = rates[f"free, {n} at once"], rates[f"json_schema, {n} at once"]
        print(f"  decode, {n:2} at once: {free} tok/s free, {constrained} with a JSON schema "
              f"({constrained / free:.2f}×)")


if __name__ == "__main__":
    main()
