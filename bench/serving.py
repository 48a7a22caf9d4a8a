"""Serving throughput: 16 concurrent streaming clients against the same 16 requests served one at a time.

    .venv/bin/python bench/serving.py [--clients 16] [--max-tokens 128] [--json] [--device cuda]

Starts `forwardpass serve` on a free loopback port, drives it with the official `openai` client, and
prints generated tokens per second both ways and their ratio.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import socket
import subprocess
import sys
import tempfile
import time

import httpx
import openai
from common import checked_device, machine

from forwardpass.cli.options import add_device_option, positive_int
from forwardpass.pipeline import STORAGE

QUESTIONS = ["Why is the sky blue?", "Name three birds and describe them.", "Write a poem about rain.",
             "Explain how a bicycle works.", "What is a prime number?", "Describe a busy market.",
             "How do plants grow?", "Tell a story about a fox."]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stream_one(client: openai.OpenAI, i: int, max_tokens: int) -> int:
    stream = client.chat.completions.create(
        model="bench", messages=[{"role": "user", "content": QUESTIONS[i % len(QUESTIONS)]}], max_tokens=max_tokens,
        temperature=0, stream=True, stream_options={"include_usage": True}, extra_body={"ignore_eos": True})
    return [c for c in stream if c.usage is not None][0].usage.completion_tokens


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=positive_int, default=16)
    ap.add_argument("--max-tokens", type=positive_int, default=128)
    ap.add_argument("--storage", default="fp32", choices=list(STORAGE))
    ap.add_argument("--json", action="store_true")
    add_device_option(ap)
    args = ap.parse_args()
    device = checked_device(args.device)
    port = free_port()
    log = tempfile.TemporaryFile("w+")  # the server's log: its last line says why, if it does not start
    server = subprocess.Popen([sys.executable, "-m", "forwardpass", "serve", "--port", str(port), "--served-model-name",
                               "bench", "--storage", args.storage, "--kv-cache-gib", "1", "--device", device],
                              stderr=log)
    print("starting the server ...", file=sys.stderr)
    try:
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
    result = {"benchmark": "serving", "storage": args.storage, "clients": args.clients,
              "max_tokens": args.max_tokens, "one_at_a_time_tokens_per_s": round(serial, 1),
              "concurrent_tokens_per_s": round(together, 1), "ratio": round(together / serial, 2)} | machine(device)
    if args.json:
        print(json.dumps(result))
    else:
        print(f"one at a time: {serial:.1f} tok/s   {args.clients} concurrent: {together:.1f} tok/s   "
              f"ratio {together / serial:.2f}×   (load average {result['load_average']})")


if __name__ == "__main__":
    main()
