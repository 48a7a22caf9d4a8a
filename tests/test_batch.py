"""`forwardpass batch`: a JSONL file of OpenAI-shaped requests answered offline through the server's routes, in the
input's order, resumable after an interruption, bad lines answered with why."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from forwardpass.batch import run_batch
from forwardpass.engine import Engine, EngineConfig
from forwardpass.errors import ForwardpassError
from forwardpass.generate import generate
from forwardpass.sampling import SamplingParams
from forwardpass.server import ServerConfig, build_app

TOPICS = ["the sea", "a cat", "rain", "bread", "a clock", "the moon", "music", "snow"]


def request(i: int, max_tokens: int = 3) -> dict:
    if i % 8:  # mostly plain completions (short prompts), every eighth a chat
        body = {"model": "m", "prompt": f"{i}: once upon a time, {TOPICS[i % 8]}", "max_tokens": max_tokens,
                "temperature": 0}
        return {"custom_id": f"r{i}", "method": "POST", "url": "/v1/completions", "body": body}
    body = {"model": "m", "messages": [{"role": "user", "content": f"Say one word about {TOPICS[i % 8]} ({i})."}],
            "max_tokens": max_tokens, "temperature": 0}
    return {"custom_id": f"r{i}", "method": "POST", "url": "/v1/chat/completions", "body": body}


def write_requests(path: Path, n: int, max_tokens: int = 3, extra: list[str] = ()) -> list[str]:
    lines = [json.dumps(request(i, max_tokens)) for i in range(n)] + list(extra)
    path.write_text("\n".join(lines) + "\n")
    return lines


def batch(smollm, requests: Path, output: Path, stop: threading.Event | None = None, **kw):
    engine = Engine(smollm, EngineConfig(kv_cache_bytes=256 * 2**20))
    app = build_app(engine, ServerConfig("m"))
    return run_batch(engine, app, requests, output, stop=stop, **kw)


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def interrupted(proc: subprocess.Popen, output: Path, lines: int) -> tuple[str, str]:
    """SIGINT to a `batch` command once `output` holds `lines` answers; its stdout and stderr after it exits 130."""
    deadline = time.time() + 180
    while time.time() < deadline and proc.poll() is None:
        if output.exists() and len(output.read_text().splitlines()) >= lines:
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    return out, err


def assert_answered_as_alone(smollm, out: list[dict], indices: tuple[int, ...]) -> None:
    """Each of these answers (request(i), 3 tokens) says what the request's greedy text alone says."""
    for i in indices:
        body = request(i)["body"]
        prompt = body.get("prompt") or smollm.tokenizer.apply_chat_template(body["messages"])
        want = generate(smollm, prompt, SamplingParams(temperature=0, max_tokens=3)).text
        got = out[i]["response"]["body"]["choices"][0]
        assert out[i]["response"]["status_code"] == 200 and (got.get("text") or got["message"]["content"]) == want


def answers(out: list[dict]) -> list[tuple]:
    """What each answer says, less what differs between runs (its response id, its creation time)."""
    def said(body):  # (the usage's cached tokens depend on what the prefix cache held then)
        return body and {k: v for k, v in body.items() if k not in ("id", "created", "usage")}
    return [(r["id"], r["custom_id"], r["error"], r["response"] and (r["response"]["status_code"],
                                                                      said(r["response"]["body"]))) for r in out]


@pytest.fixture(scope="module")
def full(smollm, tmp_path_factory):
    """200 requests (and three lines that are not requests) answered in one run."""
    d = tmp_path_factory.mktemp("batch")
    extra = ['{"custom_id": "bad-json", ', json.dumps({"custom_id": "streamed", "url": "/v1/chat/completions",
                                                       "body": {"messages": [], "stream": True}}),
             json.dumps({"custom_id": "unknown", "method": "POST", "url": "/v1/chat/completions",
                         "body": {"model": "m", "messages": [{"role": "user", "content": "hi"}], "best_of": 2}})]
    write_requests(d / "in.jsonl", 200, extra=extra)
    seen = []
    report = batch(smollm, d / "in.jsonl", d / "out.jsonl", progress=lambda done, total: seen.append((done, total)))
    return d, report, rows(d / "out.jsonl"), seen


def test_two_hundred_requests_answered_in_order(smollm, full):
    _, report, out, seen = full
    assert [r["custom_id"] for r in out[:200]] == [f"r{i}" for i in range(200)]
    assert report.requests == 203 and report.succeeded == 200 and report.failed == 3 and not report.interrupted
    assert seen[-1] == (203, 203) and [d for d, _ in seen] == list(range(1, 204))  # progress, one line at a time
    assert_answered_as_alone(smollm, out, (0, 3, 120))


def test_lines_that_are_not_requests_are_answered_with_why(full):
    _, _, out, _ = full
    bad, streamed, unknown = out[200:]
    assert bad["custom_id"] is None and "line 201 is not JSON" in bad["error"]["message"]
    assert streamed["custom_id"] == "streamed" and "stream" in streamed["error"]["message"]
    assert unknown["response"]["status_code"] == 400 and "best_of" in json.dumps(unknown["response"]["body"])


def test_a_run_cut_mid_write_resumes_where_it_stopped(smollm, full, tmp_path):
    d, _, out, _ = full
    lines = (d / "out.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "out.jsonl").write_text("".join(lines[:170]) + lines[170][:37])  # 170 answers and half of one
    report = batch(smollm, d / "in.jsonl", tmp_path / "out.jsonl")
    assert report.skipped == 170 and report.succeeded + report.failed == 33
    assert answers(rows(tmp_path / "out.jsonl")) == answers(out)  # the same 203 answers, in order, once each
    again = batch(smollm, d / "in.jsonl", tmp_path / "out.jsonl")  # complete: nothing to add, nothing doubled
    assert again.skipped == 203 and again.succeeded == again.failed == 0
    assert answers(rows(tmp_path / "out.jsonl")) == answers(out)


def test_stop_writes_an_ordered_prefix_and_the_next_run_finishes(smollm, tmp_path):
    write_requests(tmp_path / "in.jsonl", 30, max_tokens=8)
    stop = threading.Event()
    first = batch(smollm, tmp_path / "in.jsonl", tmp_path / "out.jsonl", stop=stop, concurrency=8,
                  progress=lambda done, total: stop.set() if done == 10 else None)
    kept = rows(tmp_path / "out.jsonl")
    assert first.interrupted and 10 <= len(kept) < 30
    assert [r["custom_id"] for r in kept] == [f"r{i}" for i in range(len(kept))]
    second = batch(smollm, tmp_path / "in.jsonl", tmp_path / "out.jsonl")
    assert second.skipped == len(kept) and not second.interrupted
    assert [r["custom_id"] for r in rows(tmp_path / "out.jsonl")] == [f"r{i}" for i in range(30)]


def test_files_that_cannot_be_answered_are_refused_before_anything_runs(smollm, tmp_path):
    write_requests(tmp_path / "in.jsonl", 3, extra=[json.dumps(request(1))])
    with pytest.raises(ForwardpassError, match="custom_id 'r1' is on lines 2 and 4"):
        batch(smollm, tmp_path / "in.jsonl", tmp_path / "out.jsonl")
    assert not (tmp_path / "out.jsonl").exists()
    write_requests(tmp_path / "in.jsonl", 3)
    (tmp_path / "out.jsonl").write_text("not an answer\n" + json.dumps({"custom_id": "r0"}) + "\n")
    with pytest.raises(ForwardpassError, match="line 1 is not a batch answer"):
        batch(smollm, tmp_path / "in.jsonl", tmp_path / "out.jsonl")


def test_the_command_stops_on_sigint_and_resumes(smollm, tmp_path):
    """The CLI: SIGINT mid-run exits 130 with an ordered prefix written, which a next run completes."""
    write_requests(tmp_path / "in.jsonl", 24, max_tokens=16)
    cmd = [sys.executable, "-m", "forwardpass", "batch", str(tmp_path / "in.jsonl"), str(tmp_path / "out.jsonl"),
           "--json", "--concurrency", "4", "--served-model-name", "m"]
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    out, err = interrupted(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env),
                           tmp_path / "out.jsonl", 4)
    first = json.loads(out)
    assert first["interrupted"] and "run the same command again to resume" in err
    done = rows(tmp_path / "out.jsonl")
    assert [r["custom_id"] for r in done] == [f"r{i}" for i in range(len(done))] and len(done) < 24
    again = batch(smollm, tmp_path / "in.jsonl", tmp_path / "out.jsonl")
    assert again.skipped == len(done) and not again.interrupted
    assert [r["custom_id"] for r in rows(tmp_path / "out.jsonl")] == [f"r{i}" for i in range(24)]
