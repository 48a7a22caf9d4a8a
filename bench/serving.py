"""Serving throughput: 16 concurrent streaming clients against the same 16 requests served one at a time, both
beside `forwardpass generate`'s own batch-1 decode rate on the same storage mode, in one run.

    .venv/bin/python bench/serving.py [--clients 16] [--max-tokens 128] [--storage stored] [--kv-cache-dtype float16]
                                      [--json] [--device cuda]

Runs `forwardpass generate --json` for the batch-1 rate, then starts `forwardpass serve` on a free loopback port,
drives it with the official `openai` client, and prints generated tokens per second each way and their ratios.
The batch-1 rate and one client's are medians of three runs (a single one moved ±10% here).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import subprocess
import sys
import tempfile
import time
from typing import TYPE_CHECKING

import httpx
from common import checked_device, free_port, machine, median

from forwardpass.cli.options import add_device_option, positive_int
from forwardpass.config import KV_CACHE_DTYPES, STORAGE_MODES

if TYPE_CHECKING:
    import openai

QUESTIONS = ["Why is the sky blue?", "Name three birds and describe them.", "Write a poem about rain.",
             "Explain how a bicycle works.", "What is a prime number?", "Describe a busy market.",
             "How do plants grow?", "Tell a story about a fox."]


def stream_one(client: openai.OpenAI, i: int, max_tokens: int, times: list | None = None) -> int:
    """One streamed chat request; its generated tokens. `times` gets the arrival of its first and last chunk."""
    stream = client.chat.completions.create(
        model="bench", messages=[{"role": "user", "content": QUESTIONS[i % len(QUESTIONS)]}], max_tokens=max_tokens,
        temperature=0, stream=True, stream_options={"include_usage": True}, extra_body={"ignore_eos": True})
    tokens = 0
    for chunk in stream:
        if times is not None and chunk.choices and chunk.choices[0].delta.content:
            now = time.perf_counter()
            times[:] = [times[0] if times else now, now]
        if chunk.usage is not None:
            tokens = chunk.usage.completion_tokens
    return tokens


def generate_rate(storage: str, kv_cache_dtype: str, device: str, max_tokens: int) -> float:
    """`forwardpass generate`'s decode tokens/s (batch 1, greedy) for the first question, as a user runs it."""
    out = subprocess.run([sys.executable, "-m", "forwardpass", "generate", "--chat", QUESTIONS[0], "--max-tokens",
                          str(max_tokens), "--storage", storage, "--kv-cache-dtype", kv_cache_dtype, "--device", device,
                          "--json"], capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"error: forwardpass generate failed: {(out.stderr.strip().splitlines() or ['no output'])[-1]}")
    return json.loads(out.stdout)["decode_tokens_per_s"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=positive_int, default=16)
    ap.add_argument("--max-tokens", type=positive_int, default=128)
    ap.add_argument("--storage", default="stored", choices=STORAGE_MODES)
    ap.add_argument("--kv-cache-dtype", default="auto", choices=KV_CACHE_DTYPES)
    ap.add_argument("--json", action="store_true")
    add_device_option(ap)
    args = ap.parse_args()
    device = checked_device(args.device)
    print("generate alone ...", file=sys.stderr)
    alone = median([generate_rate(args.storage, args.kv_cache_dtype, device, args.max_tokens) for _ in range(3)])
    port = free_port()
    log = tempfile.TemporaryFile("w+")  # the server's log: its last line says why, if it does not start
    server = subprocess.Popen([sys.executable, "-m", "forwardpass", "serve", "--port", str(port), "--served-model-name",
                               "bench", "--storage", args.storage, "--kv-cache-dtype", args.kv_cache_dtype,
                               "--kv-cache-gib", "1", "--device", device],
                              stderr=log)
    print("starting the server ...", file=sys.stderr)
    try:
        import openai

        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none", max_retries=0, timeout=600)
        deadline = time.time() + 120
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/health")
                break
            except httpx.ConnectError:
                if server.poll() is not None or time.time() > deadline:
                    log.seek(0)
                    last = (log.read().strip().splitlines() or ["no output"])[-1]
                    sys.exit(f"error: the server did not start: {last}")
                time.sleep(0.3)
        stream_one(client, 0, 4)  # warm up
        print("one at a time ...", file=sys.stderr)
        rates = []  # the decode rate as generate reports it: tokens after the first, over their time; median of 3
        for _ in range(3):
            times: list[float] = []
            rates.append((stream_one(client, 0, args.max_tokens, times) - 1) / (times[1] - times[0]))
        single = median(rates)
        start = time.perf_counter()
        serial_tokens = sum(stream_one(client, i, args.max_tokens) for i in range(args.clients))
        serial = serial_tokens / (time.perf_counter() - start)
        print(f"{args.clients} concurrent clients ...", file=sys.stderr)
        start = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(args.clients) as pool:
            concurrent_tokens = sum(pool.map(lambda i: stream_one(client, i, args.max_tokens), range(args.clients)))
        together = concurrent_tokens / (time.perf_counter() - start)
    finally:
        server.terminate()
        server.wait(timeout=30)
    result = {"benchmark": "serving", "storage": args.storage, "kv_cache_dtype": args.kv_cache_dtype,
              "clients": args.clients,
              "max_tokens": args.max_tokens, "generate_decode_tokens_per_s": round(alone, 1),
              "one_client_tokens_per_s": round(single, 1), "one_at_a_time_tokens_per_s": round(serial, 1),
              "concurrent_tokens_per_s": round(together, 1), "ratio": round(together / serial, 2),
              "one_client_over_generate": round(single / alone, 2),
              "concurrent_over_generate": round(together / alone, 2)} | machine(device)
    if args.json:
        print(json.dumps(result))
    else:
        print(f"generate alone: {alone:.1f} tok/s   one client: {single:.1f} tok/s ({single / alone:.2f}×)   "
              f"one at a time: {serial:.1f} tok/s   {args.clients} concurrent: {together:.1f} tok/s "
              f"({together / alone:.2f}× generate, {together / serial:.2f}× one at a time)   "
              f"(load average {result['load_average']})")


if __name__ == "__main__":
    main()
