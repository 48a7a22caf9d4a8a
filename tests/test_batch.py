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
from cli_helpers import in_process

from forwardpass.batch import run_batch
from forwardpass.engine import Engine, EngineConfig
from forwardpass.errors import ForwardpassError
from forwardpass.loop import generate
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


def batch(stored, requests: Path, output: Path, stop: threading.Event | None = None, **kw):
    engine = Engine(stored, EngineConfig(kv_cache_bytes=256 * 2**20))
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


def assert_answered_as_alone(stored, out: list[dict], indices: tuple[int, ...]) -> None:
    """Each of these answers (request(i), 3 tokens) says what the request's greedy text alone says."""
    for i in indices:
        body = request(i)["body"]
        prompt = body.get("prompt") or stored.tokenizer.apply_chat_template(body["messages"])
        want = generate(stored, prompt, SamplingParams(temperature=0, max_tokens=3)).text
        got = out[i]["response"]["body"]["choices"][0]
        assert out[i]["response"]["status_code"] == 200 and (got.get("text") or got["message"]["content"]) == want


def answers(out: list[dict]) -> list[tuple]:
    """What each answer says, less what differs between runs (its response id, its creation time)."""
    def said(body):  # (the usage's cached tokens depend on what the prefix cache held then)
        return body and {k: v for k, v in body.items() if k not in ("id", "created", "usage")}
    return [(r["id"], r["custom_id"], r["error"], r["response"] and (r["response"]["status_code"],
                                                                      said(r["response"]["body"]))) for r in out]


@pytest.fixture(scope="module")
def full(stored, tmp_path_factory):
    """200 requests (and three lines that are not requests) answered in one run."""
    d = tmp_path_factory.mktemp("batch")
    extra = ['{"custom_id": "bad-json", ', json.dumps({"custom_id": "streamed", "url": "/v1/chat/completions",
                                                       "body": {"messages": [], "stream": True}}),
             json.dumps({"custom_id": "unknown", "method": "POST", "url": "/v1/chat/completions",
                         "body": {"model": "m", "messages": [{"role": "user", "content": "hi"}], "best_of": 2}})]
    write_requests(d / "in.jsonl", 200, extra=extra)
    seen = []
    report = batch(stored, d / "in.jsonl", d / "out.jsonl", progress=lambda done, total: seen.append((done, total)))
    return d, report, rows(d / "out.jsonl"), seen


def test_two_hundred_requests_answered_in_order(stored, full):
    _, report, out, seen = full
    assert [r["custom_id"] for r in out[:200]] == [f"r{i}" for i in range(200)]
    assert report.requests == 203 and report.succeeded == 200 and report.failed == 3 and not report.interrupted
    assert seen[-1] == (203, 203) and [d for d, _ in seen] == list(range(1, 204))  # progress, one line at a time
    assert_answered_as_alone(stored, out, (0, 3, 120))


def test_lines_that_are_not_requests_are_answered_with_why(full):
    _, _, out, _ = full
    bad, streamed, unknown = out[200:]
    assert bad["custom_id"] is None and "line 201 is not JSON" in bad["error"]["message"]
    assert streamed["custom_id"] == "streamed" and "stream" in streamed["error"]["message"]
    assert unknown["response"]["status_code"] == 400 and "best_of" in json.dumps(unknown["response"]["body"])


def test_a_run_cut_mid_write_resumes_where_it_stopped(stored, full, tmp_path):
    d, _, out, _ = full
    lines = (d / "out.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "out.jsonl").write_text("".join(lines[:170]) + lines[170][:37])  # 170 answers and half of one
    report = batch(stored, d / "in.jsonl", tmp_path / "out.jsonl")
    assert report.skipped == 170 and report.succeeded + report.failed == 33
    assert answers(rows(tmp_path / "out.jsonl")) == answers(out)  # the same 203 answers, in order, once each
    again = batch(stored, d / "in.jsonl", tmp_path / "out.jsonl")  # complete: nothing to add, nothing doubled
    assert again.skipped == 203 and again.succeeded == again.failed == 0
    assert answers(rows(tmp_path / "out.jsonl")) == answers(out)


def test_stop_writes_an_ordered_prefix_and_the_next_run_finishes(stored, tmp_path):
    write_requests(tmp_path / "in.jsonl", 30, max_tokens=8)
    stop = threading.Event()
    first = batch(stored, tmp_path / "in.jsonl", tmp_path / "out.jsonl", stop=stop, concurrency=8,
                  progress=lambda done, total: stop.set() if done == 10 else None)
    kept = rows(tmp_path / "out.jsonl")
    assert first.interrupted and 10 <= len(kept) < 30
    assert [r["custom_id"] for r in kept] == [f"r{i}" for i in range(len(kept))]
    second = batch(stored, tmp_path / "in.jsonl", tmp_path / "out.jsonl")
    assert second.skipped == len(kept) and not second.interrupted
    assert [r["custom_id"] for r in rows(tmp_path / "out.jsonl")] == [f"r{i}" for i in range(30)]


def test_files_that_cannot_be_answered_are_refused_before_anything_runs(stored, tmp_path):
    write_requests(tmp_path / "in.jsonl", 3, extra=[json.dumps(request(1))])
    with pytest.raises(ForwardpassError, match="custom_id 'r1' is on lines 2 and 4"):
        batch(stored, tmp_path / "in.jsonl", tmp_path / "out.jsonl")
    assert not (tmp_path / "out.jsonl").exists()
    write_requests(tmp_path / "in.jsonl", 3)
    (tmp_path / "out.jsonl").write_text("not an answer\n" + json.dumps({"custom_id": "r0"}) + "\n")
    with pytest.raises(ForwardpassError, match="line 1 is not a batch answer"):
        batch(stored, tmp_path / "in.jsonl", tmp_path / "out.jsonl")


def test_the_command_stops_on_sigint_and_resumes(stored, tmp_path):
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
    again = batch(stored, tmp_path / "in.jsonl", tmp_path / "out.jsonl")
    assert again.skipped == len(done) and not again.interrupted
    assert [r["custom_id"] for r in rows(tmp_path / "out.jsonl")] == [f"r{i}" for i in range(24)]


@pytest.fixture(scope="module")
def cli():
    with in_process() as run:
        yield run


@pytest.fixture
def no_model(monkeypatch):
    """A command that would load the model fails the test: it was to refuse before."""
    from forwardpass import loader

    def load(*args, **kwargs):
        raise AssertionError("the model was loaded")
    monkeypatch.setattr(loader, "load", load)


ANSWER = json.dumps({"id": "batch_req_1", "custom_id": "r0", "response": {"status_code": 200, "body": {"x": "é"}},
                     "error": None}, ensure_ascii=False).encode()
REFUSED = {  # what an existing output holds, and the line that is not an earlier run's answer
    "notes, no newline": (b"my notes", 1),
    "notes": (b"my notes\n", 1),
    "not UTF-8": (b"\xff\xfe\x00binary\n\x80", 1),
    "an answer, then notes": (ANSWER + b"\nmy notes\n", 2),
    "an answer, then notes without a newline": (ANSWER + b"\nmy notes", 2),
    "an answer, then a blank line": (ANSWER + b"\n\n", 2),
    "JSON with other keys": (b'{"id": "batch_req_1", "custom_id": "r0"}\n', 1),
    "an answer whose response is not one": (ANSWER.replace(b'"status_code": 200, ', b"") + b"\n", 1),
    "cut, then written after": (ANSWER[:30] + b"\n", 1),
}


@pytest.mark.parametrize("held", REFUSED.values(), ids=REFUSED.keys())
def test_an_output_that_is_not_an_earlier_runs_is_refused_and_left_as_it_is(held, cli, no_model, tmp_path):
    data, line = held
    write_requests(tmp_path / "in.jsonl", 3)
    out = tmp_path / "out.jsonl"
    out.write_bytes(data)
    r = cli("batch", str(tmp_path / "in.jsonl"), str(out), "--served-model-name", "m")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == (f"forwardpass: error: {out}: line {line} is not a batch answer; give another output file "
                        f"({out} is left as it is)\n")
    assert out.read_bytes() == data


def test_an_output_answering_other_requests_is_refused_and_left_as_it_is(cli, no_model, tmp_path):
    write_requests(tmp_path / "in.jsonl", 3)
    out = tmp_path / "out.jsonl"
    data = ANSWER + b"\n" + ANSWER.replace(b'"r0"', b'"r9"') + b"\n"
    out.write_bytes(data)
    r = cli("batch", str(tmp_path / "in.jsonl"), str(out), "--served-model-name", "m")
    assert r.returncode == 2 and r.stderr == (f"forwardpass: error: {out}: line 2 answers 'r9', which "
                                              f"{tmp_path / 'in.jsonl'} does not ask; give another output file ({out} "
                                              f"is left as it is)\n")
    assert out.read_bytes() == data


def test_an_output_that_cannot_be_written_is_refused_before_the_model_loads(cli, no_model, tmp_path):
    write_requests(tmp_path / "in.jsonl", 3)
    (tmp_path / "notes.txt").write_bytes(b"my notes")
    for output, message in [
        (tmp_path / "nope" / "out.jsonl", f"{tmp_path / 'nope' / 'out.jsonl'}: no such directory {tmp_path / 'nope'}"),
        (tmp_path / "notes.txt" / "out.jsonl", f"{tmp_path / 'notes.txt' / 'out.jsonl'}: {tmp_path / 'notes.txt'} is "
                                               "not a directory"),
        (tmp_path, f"{tmp_path} is a directory; give the output file's path"),
        (tmp_path / "in.jsonl", "the output file must not be the input file"),
    ]:
        r = cli("batch", str(tmp_path / "in.jsonl"), str(output), "--served-model-name", "m")
        assert (r.returncode, r.stdout, r.stderr) == (2, "", f"forwardpass: error: {message}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "notes.txt"]
    assert (tmp_path / "notes.txt").read_bytes() == b"my notes"


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write any file")
def test_a_file_or_directory_without_write_permission_is_refused(cli, no_model, tmp_path):
    write_requests(tmp_path / "in.jsonl", 3)
    (tmp_path / "locked").mkdir()
    (tmp_path / "out.jsonl").write_bytes(b"")
    (tmp_path / "out.jsonl").chmod(0o444)
    (tmp_path / "locked").chmod(0o555)
    try:
        r = cli("batch", str(tmp_path / "in.jsonl"), str(tmp_path / "out.jsonl"), "--served-model-name", "m")
        assert r.returncode == 2 and r.stderr == (f"forwardpass: error: {tmp_path / 'out.jsonl'}: cannot read and "
                                                  "append to it (Permission denied)\n")
        r = cli("batch", str(tmp_path / "in.jsonl"), str(tmp_path / "locked" / "out.jsonl"))
        assert r.returncode == 2 and r.stderr == (f"forwardpass: error: {tmp_path / 'locked' / 'out.jsonl'}: cannot "
                                                  f"create a file in {tmp_path / 'locked'} (permission denied)\n")
    finally:
        (tmp_path / "locked").chmod(0o755)


def test_an_empty_output_and_one_cut_mid_character_are_resumed(cli, tmp_path):
    """An empty file is written; an answer cut inside a character (the last line) is dropped and redone."""
    write_requests(tmp_path / "in.jsonl", 3)
    (tmp_path / "out.jsonl").write_bytes(b"")
    r = cli("batch", str(tmp_path / "in.jsonl"), str(tmp_path / "out.jsonl"), "--served-model-name", "m")
    assert r.returncode == 0, r.stderr
    full = (tmp_path / "out.jsonl").read_bytes()
    assert [row["custom_id"] for row in rows(tmp_path / "out.jsonl")] == ["r0", "r1", "r2"]
    lines = full.splitlines(keepends=True)
    cut = lines[1][:-3] + "é".encode()[:1]  # the second answer, up to half of a two-byte character
    (tmp_path / "out.jsonl").write_bytes(lines[0] + cut)
    r = cli("batch", str(tmp_path / "in.jsonl"), str(tmp_path / "out.jsonl"), "--served-model-name", "m", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["skipped"] == 1, r.stderr
    assert answers(rows(tmp_path / "out.jsonl")) == answers([json.loads(line) for line in lines])


def test_a_failure_to_write_an_answer_ends_the_command_with_one_line(cli, tmp_path):
    """Answers that stop fitting (here a file size limit, as a full disk) end the run with exit 2 and one line; the
    next run resumes from the whole answers written."""
    import resource

    write_requests(tmp_path / "in.jsonl", 8)
    out = tmp_path / "out.jsonl"
    cmd = [sys.executable, "-m", "forwardpass", "batch", str(tmp_path / "in.jsonl"), str(out), "--json",
           "--served-model-name", "m", "--concurrency", "2"]
    limit = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (1500, 1500))  # noqa: E731
    r = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=limit, timeout=300,
                       env={**os.environ, "OMP_WAIT_POLICY": "PASSIVE"})
    assert r.returncode == 2 and r.stderr == (f"forwardpass: error: {out}: cannot write the answers (File too large); "
                                              "those written whole are kept: run the same command again to resume\n")
    assert out.stat().st_size == 1500  # whole answers, then one cut at the limit
    kept = out.read_bytes().count(b"\n")
    again = cli("batch", str(tmp_path / "in.jsonl"), str(out), "--served-model-name", "m", "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["skipped"] == kept >= 1, again.stderr
    assert [row["custom_id"] for row in rows(out)] == [f"r{i}" for i in range(8)]


def test_a_line_separator_inside_a_request_is_text(stored, tmp_path):
    """JSON allows U+2028, U+2029, U+0085 and form feeds raw inside a string; only a newline ends a JSONL line, so
    such a request is one request, answered, never broken into lines that are not JSON."""
    prompt = "Lines\u2028paragraphs\u2029next\x85and a feed\x0c: once upon a time"
    line = {"custom_id": "odd", "method": "POST", "url": "/v1/completions",
            "body": {"model": "m", "prompt": prompt, "max_tokens": 2, "temperature": 0}}
    requests = tmp_path / "in.jsonl"
    requests.write_text(json.dumps(line, ensure_ascii=False) + "\r\n", encoding="utf-8")
    report = batch(stored, requests, tmp_path / "out.jsonl")
    out = rows(tmp_path / "out.jsonl")
    assert report.requests == 1 and report.succeeded == 1, report
    want = generate(stored, stored.tokenizer.encode(prompt), SamplingParams(temperature=0, max_tokens=2)).text
    assert out[0]["custom_id"] == "odd" and out[0]["response"]["body"]["choices"][0]["text"] == want


def test_a_responses_request_is_answered_as_the_chat_request_of_the_same_message(stored, tmp_path):
    """The Batch API's /v1/responses lines: the response's text is the chat completion's for the same message."""
    say = "Say one word about the sea."
    lines = [{"custom_id": "resp", "method": "POST", "url": "/v1/responses",
              "body": {"model": "m", "input": say, "max_output_tokens": 4, "temperature": 0}},
             {"custom_id": "chat", "method": "POST", "url": "/v1/chat/completions",
              "body": {"model": "m", "messages": [{"role": "user", "content": say}], "max_tokens": 4,
                       "temperature": 0}}]
    requests = tmp_path / "in.jsonl"
    requests.write_text("".join(json.dumps(line) + "\n" for line in lines))
    report = batch(stored, requests, tmp_path / "out.jsonl")
    resp, chat = rows(tmp_path / "out.jsonl")
    assert report.succeeded == 2 and resp["response"]["status_code"] == 200, report.failures
    body = resp["response"]["body"]
    text = "".join(part["text"] for item in body["output"] if item["type"] == "message" for part in item["content"])
    assert body["object"] == "response" and text == chat["response"]["body"]["choices"][0]["message"]["content"]
    assert text


def test_a_byte_order_mark_before_the_first_line_is_not_part_of_it(stored, tmp_path):
    """Windows editors save UTF-8 with a byte-order mark first: the first request is answered as the others are."""
    requests = tmp_path / "in.jsonl"
    write_requests(requests, 2)
    requests.write_bytes("\ufeff".encode() + requests.read_bytes())
    report = batch(stored, requests, tmp_path / "out.jsonl")
    assert report.succeeded == 2 and report.failed == 0, report.failures
    assert_answered_as_alone(stored, rows(tmp_path / "out.jsonl"), (0, 1))


def test_a_second_batch_writing_the_same_output_is_refused_and_leaves_it_as_it_is(cli, no_model, tmp_path):
    """Two runs appending to one output would each write every answer: while one holds the file (a lock, released
    when that run ends), another is refused in one line before its model loads."""
    import fcntl

    write_requests(tmp_path / "in.jsonl", 3)
    out = tmp_path / "out.jsonl"
    out.write_bytes(ANSWER + b"\n")
    with open(out, "ab") as writing:  # a first run, in this process (its pid)
        fcntl.flock(writing, fcntl.LOCK_EX | fcntl.LOCK_NB)
        r = cli("batch", str(tmp_path / "in.jsonl"), str(out), "--served-model-name", "m")
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == (f"forwardpass: error: another batch is writing {out} (pid {os.getpid()}); run this one again "
                        "once it ends, or give another output file\n")
    assert out.read_bytes() == ANSWER + b"\n"
