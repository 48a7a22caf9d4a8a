"""`forwardpass serve` as a user starts it: binds loopback, prints its address, serves, and refuses bad options."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import httpx
from server_helpers import free_port


def test_serve_starts_on_loopback_and_answers():
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "forwardpass", "serve", "--port", str(port), "--json",
                             "--kv-cache-gib", "0.25", "--served-model-name", "smol"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        info = json.loads(proc.stdout.readline())
        assert info["address"] == f"http://127.0.0.1:{port}/v1" and info["model"] == "smol"
        deadline = time.time() + 60
        while True:
            try:
                r = httpx.post(f"http://127.0.0.1:{port}/v1/completions", timeout=30,
                               json={"model": "smol", "prompt": "The three primary colors are", "max_tokens": 3,
                                     "temperature": 0})
                break
            except httpx.ConnectError:
                assert time.time() < deadline, proc.stderr.read()
                time.sleep(0.2)
        assert r.json()["choices"][0]["text"] == " the primary colors"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_serve_rejects_bad_options():
    r = subprocess.run([sys.executable, "-m", "forwardpass", "serve", "--max-num-seqs", "0"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and "--max-num-seqs must be positive" in r.stderr and "Traceback" not in r.stderr
