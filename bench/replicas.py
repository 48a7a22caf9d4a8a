"""Replicas on Ray Serve against the plan's prediction: `forwardpass serve --replicas K` for K = 1 and 2 (one thread
each), each driven at its planned concurrency by closed-loop clients sending requests of P prompt tokens and N new
ones, beside what `forwardpass cost --plan` predicted from one replica measured alone, in one run.

    .venv/bin/python bench/replicas.py [--prompt 64] [--new 64] [--seconds 30] [--json]

Needs the extra forwardpass[ray]. The replicas, Serve's proxy and ingress, and the clients share this machine's
cores: the gap between prediction and measurement is what they cost.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time

import httpx
from common import free_port, machine

from forwardpass.cli.options import positive_int

WORDS = "the quick brown fox jumps over a lazy dog while seven small birds sing in old green trees".split()


def plan(prompt: int, new: int, threads: int) -> dict:
    r = subprocess.run([sys.executable, "-m", "forwardpass", "cost", "--plan", "--rate", "1", "--prompt", str(prompt),
                        "--new", str(new), "--threads-per-replica", str(threads), "--json"],
                       capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"cost --plan failed: {r.stderr.strip()}")
    return json.loads(r.stdout)["plan"]


def prompt_text(i: int, tokens: int) -> str:
    """About `tokens` tokens of text, different for each request (no prefix-cache hits beyond the template)."""
    return f"Request {i}: " + " ".join(WORDS[(i + k) % len(WORDS)] for k in range(tokens))


def drive(url: str, clients: int, prompt: int, new: int, seconds: float) -> dict:
    """`clients` loops, each sending one completion after another for `seconds`: requests and tokens per second."""
    done, tokens, stop_at = [], [], time.perf_counter() + seconds
    lock = threading.Lock()

    def loop(c: int) -> None:
        i = c
        with httpx.Client(base_url=url, timeout=300) as client:
            while time.perf_counter() < stop_at:
                r = client.post("/v1/completions", json={"model": "bench", "prompt": prompt_text(i, prompt),
                                                         "max_tokens": new, "temperature": 0, "ignore_eos": True})
                r.raise_for_status()
                with lock:
                    done.append(time.perf_counter())
                    tokens.append(r.json()["usage"]["completion_tokens"])
                i += clients

    start = time.perf_counter()
    threads = [threading.Thread(target=loop, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    return {"clients": clients, "requests": len(done), "seconds": wall, "requests_per_s": len(done) / wall,
            "tokens_per_s": sum(tokens) / wall}


def served(replicas: int, clients: int, prompt: int, new: int, seconds: float) -> dict:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "forwardpass", "serve", "--replicas", str(replicas),
                             "--threads-per-replica", "1", "--port", str(port), "--json", "--served-model-name",
                             "bench", "--kv-cache-gib", "0.25"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        line = proc.stdout.readline()
        if not line:
            sys.exit(f"serve --replicas {replicas} did not start: {proc.stderr.read()[-2000:]}")
        url = f"http://127.0.0.1:{port}"
        drive(url, clients, prompt, 4, 3)  # warm up every replica
        return drive(url, clients, prompt, new, seconds)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=90)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prompt", type=positive_int, default=64, help="prompt tokens per request (default 64)")
    ap.add_argument("--new", type=positive_int, default=64, help="new tokens per request (default 64)")
    ap.add_argument("--seconds", type=positive_int, default=30, help="seconds of load per run (default 30)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    predicted = plan(args.prompt, args.new, 1)
    rows = []
    for replicas in (1, 2):
        clients = replicas * predicted["batch_per_replica"]
        got = served(replicas, clients, args.prompt, args.new, args.seconds)
        expect = replicas * predicted["replica_requests_per_s"]
        rows.append({"replicas": replicas, **got, "predicted_requests_per_s": expect,
                     "measured_over_predicted": got["requests_per_s"] / expect})
    result = {"machine": machine(), "prompt": args.prompt, "new": args.new, "plan": predicted, "runs": rows}
    if args.json:
        print(json.dumps(result))
        return
    print(f"one replica measured alone: {predicted['replica_requests_per_s']:.2f} requests/s at "
          f"{predicted['batch_per_replica']} at once (P = {args.prompt}, N = {args.new}, 1 thread)")
    print(f"{'replicas':>8} {'clients':>7} {'predicted req/s':>16} {'measured req/s':>15} {'tok/s':>7} {'ratio':>6}")
    for r in rows:
        print(f"{r['replicas']:>8} {r['clients']:>7} {r['predicted_requests_per_s']:>16.2f} "
              f"{r['requests_per_s']:>15.2f} {r['tokens_per_s']:>7.1f} {r['measured_over_predicted']:>6.0%}")
    print(f"load average {result['machine']['load_average']}")


if __name__ == "__main__":
    main()
