"""`forwardpass serve` as a user starts it: binds loopback, prints its address, serves, shuts down gently on
SIGTERM, and refuses bad options before loading anything."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest
from server_helpers import free_port


def test_serve_answers_then_sigterm_ends_streams_and_exits():
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "forwardpass", "serve", "--port", str(port), "--json",
                             "--kv-cache-gib", "0.25", "--served-model-name", "smol", "--shutdown-grace", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        info = json.loads(proc.stdout.readline())
        assert info["address"] == f"http://127.0.0.1:{port}/v1" and info["model"] == "smol"
        assert {"POST /v1/chat/completions", "POST /v1/messages", "GET /health"} <= set(info["routes"])
        assert info["threads"] >= 1 and info["embedding_model"] is None and info["sampling"]["temperature"] == 0.8
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
        # a stream in flight when SIGTERM arrives ends within the grace period with a final event saying why
        body = {"model": "smol", "prompt": "Count: 1, 2, 3,", "max_tokens": 3000, "ignore_eos": True, "stream": True}
        with httpx.stream("POST", f"http://127.0.0.1:{port}/v1/completions", json=body, timeout=60) as s:
            lines = s.iter_lines()
            started = [next(lines) for _ in range(6)]
            proc.send_signal(signal.SIGTERM)
            events = [line.removeprefix("data: ") for line in started + list(lines) if line.startswith("data: ")]
        assert events[-1] == "[DONE]" and json.loads(events[-2])["error"]["code"] == "server_shutdown"
        assert json.loads(events[-3])["choices"][0]["finish_reason"] == "abort"
        assert proc.wait(timeout=30) == 0
        assert "Traceback" not in proc.stderr.read()
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"http://127.0.0.1:{port}/health")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.parametrize("args,message", [
    (["--max-num-seqs", "0"], "--max-num-seqs: must be a positive integer"),
    (["--port", "70000"], "--port: must be a port number from 1 to 65535, got 70000"),
    (["--kv-cache-gib", "nan"], "--kv-cache-gib must be a positive number, got nan"),
    (["--kv-cache-gib", "inf"], "--kv-cache-gib must be a positive number, got inf"),
    (["--shutdown-grace", "-1"], "--shutdown-grace: must be a number of seconds ≥ 0"),
    (["--request-timeout", "inf"], "--request-timeout: must be a number of seconds ≥ 0"),
    (["--constraint-timeout", "0"], "--constraint-timeout: must be a number of seconds > 0"),
    (["--constraint-timeout", "soon"], "--constraint-timeout: must be a number of seconds > 0"),
    (["--temperature", "-1"], "--temperature: temperature must be ≥ 0.0, got -1"),
    (["--top-p", "1.5"], "--top-p: top_p must be"),
    (["--cors-origins", "http://a.example:99999"], "--cors-origins: 'http://a.example:99999' is not an origin"),
    (["--cors-origins", "https://a.example,http://b.example:80x"], "'http://b.example:80x' is not an origin"),
    (["--cors-origins", "http://a.example:0"], "'http://a.example:0' is not an origin"),
])
def test_serve_rejects_bad_options_before_loading(args, message):
    r = subprocess.run([sys.executable, "-m", "forwardpass", "serve", *args, "--model", "/nonexistent.gguf"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_serve_names_a_port_in_use():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = subprocess.run([sys.executable, "-m", "forwardpass", "serve", "--port", str(port), "--model",
                            "/nonexistent.gguf"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("command", [["serve"], ["batch", "in.jsonl", "out.jsonl"]])
def test_replicas_without_ray_say_how_to_install_it(command, tmp_path):
    """Without the extra forwardpass[ray] (here hidden behind a `ray` that cannot be imported), `--replicas` is a
    one-line error naming the extra; the Ray options without `--replicas` are refused whether Ray is there or not."""
    (tmp_path / "ray").mkdir()
    (tmp_path / "ray" / "__init__.py").write_text('raise ModuleNotFoundError("No module named \'ray\'", name="ray")\n')
    (tmp_path / "in.jsonl").write_text("")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    r = subprocess.run([sys.executable, "-m", "forwardpass", *command, "--replicas", "2"], capture_output=True,
                       text=True, timeout=120, env=env, cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "--replicas needs Ray (ray is missing): pip install 'forwardpass[ray]'" in r.stderr
    r = subprocess.run([sys.executable, "-m", "forwardpass", *command, "--ray-address", "auto"], capture_output=True,
                       text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 2 and "--ray-address applies to --replicas only" in r.stderr, r.stderr
