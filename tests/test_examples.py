"""examples/ as a user runs them: each client against a real server (started as `serve --temperature 0` would be), the
Python API example in a process of its own, and the data files through the commands README.md shows them with."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import jsonschema
import pytest
from cli_helpers import in_process
from server_helpers import free_port, running_server

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SCHEMA = json.loads((EXAMPLES / "person.schema.json").read_text())
GREEDY = {"temperature": 0.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0, "repetition_penalty": 1.0}
CLIENTS = ["openai_chat.py", "anthropic_messages.py", "openai_structured.py", "openai_responses.py"]


@pytest.fixture(scope="module")
def server(smollm):
    with running_server(smollm, sampling=GREEDY) as (url, _):
        yield url


@pytest.fixture(scope="module")
def cli():
    with in_process() as run:
        yield run


def example(name: str, url: str, *args: str) -> subprocess.CompletedProcess:
    env = os.environ | {"FORWARDPASS_URL": f"{url}/v1"}
    env.pop("FORWARDPASS_MODEL", None)
    return subprocess.run([sys.executable, str(EXAMPLES / name), *args], capture_output=True, text=True, env=env,
                          timeout=300)


def test_openai_chat_streams_the_reply_the_server_gives_whole(server):
    r = example("openai_chat.py", server, "Name a fruit.")
    assert r.returncode == 0, r.stderr
    whole = httpx.post(f"{server}/v1/chat/completions", json={
        "model": "smollm", "messages": [{"role": "user", "content": "Name a fruit."}], "max_tokens": 48,
        "temperature": 0}).json()["choices"][0]
    assert r.stdout == whole["message"]["content"] != ""
    assert r.stderr == f"\n[smollm, finish: {whole['finish_reason']}]\n"


def test_anthropic_messages_streams_the_reply_the_server_gives_whole(server):
    r = example("anthropic_messages.py", server, "Name a fruit.")
    assert r.returncode == 0, r.stderr
    whole = httpx.post(f"{server}/v1/messages", json={
        "model": "smollm", "max_tokens": 48, "system": "You answer in one short sentence.",
        "messages": [{"role": "user", "content": "Name a fruit."}]}).json()
    assert r.stdout == whole["content"][0]["text"] != ""
    usage = whole["usage"]
    assert r.stderr == (f"\n[smollm, stop: {whole['stop_reason']}, {usage['input_tokens']} tokens in, "
                        f"{usage['output_tokens']} out]\n")


def test_openai_responses_streams_the_reply_then_continues_it(server):
    r = example("openai_responses.py", server, "Name a fruit.")
    assert r.returncode == 0, r.stderr
    ask = {"model": "smollm", "max_output_tokens": 48, "temperature": 0}
    first = httpx.post(f"{server}/v1/responses", json=ask | {"input": "Name a fruit."}, timeout=120).json()
    then = httpx.post(f"{server}/v1/responses", json=ask | {"input": "Say it again, shorter.",
                                                             "previous_response_id": first["id"]}, timeout=120).json()
    text = first["output"][0]["content"][0]["text"]
    assert r.stdout == text + "\n" + then["output"][0]["content"][0]["text"] + "\n" and text != ""
    usage = first["usage"]
    assert r.stderr == (f"[smollm, {first['status']}, {usage['input_tokens']} tokens in, "
                        f"{usage['output_tokens']} out]\n")


def test_openai_structured_prints_json_the_schema_accepts(server):
    r = example("openai_structured.py", server)
    assert r.returncode == 0, r.stderr
    person = json.loads(r.stdout)
    jsonschema.validate(person, SCHEMA)


@pytest.mark.parametrize("name", CLIENTS)
def test_a_client_without_a_server_says_so_in_one_line(name):
    r = example(name, f"http://127.0.0.1:{free_port()}")
    assert r.returncode == 1 and r.stdout == ""
    assert re.fullmatch(rf"{re.escape(name)}: no server at http://127\.0\.0\.1:\d+/v1 \(start one: "
                        r"\.venv/bin/forwardpass serve\)\n", r.stderr), r.stderr


def test_python_api_chats_then_completes():
    r = subprocess.run([sys.executable, str(EXAMPLES / "python_api.py"), "Name a fruit."], capture_output=True,
                       text=True, timeout=300, env={k: v for k, v in os.environ.items() if k != "FORWARDPASS_MODEL"})
    assert r.returncode == 0, r.stderr
    chat, completion = r.stdout.splitlines()
    assert chat != "" and completion == ("The three primary colors are the primary colors of the RGB color model: red, "
                                         "blue, and green.")
    assert re.fullmatch(r"\[chat: \d+ tokens, stop: (eos|length)\]\n\[complete: \d+ tokens/s, stop: length\]\n",
                        r.stderr), r.stderr


def test_batch_answers_every_request_of_the_example_file(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # the paths as README.md writes them
    out = tmp_path / "answers.jsonl"
    r = cli("batch", "examples/requests.jsonl", str(out), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["succeeded"] == 4
    asked = [json.loads(line)["custom_id"] for line in (EXAMPLES / "requests.jsonl").read_text().splitlines()]
    answers = [json.loads(line) for line in out.read_text().splitlines()]
    assert [a["custom_id"] for a in answers] == asked == ["fruit", "colors", "person", "sea"]
    assert all(a["error"] is None and a["response"]["status_code"] == 200 for a in answers)
    bodies = {a["custom_id"]: a["response"]["body"] for a in answers}
    assert bodies["colors"]["choices"][0]["text"].startswith(" the primary colors")
    jsonschema.validate(json.loads(bodies["person"]["choices"][0]["message"]["content"]), SCHEMA)
    assert bodies["sea"]["type"] == "message" and bodies["sea"]["content"][0]["text"] != ""


@pytest.mark.parametrize("given", ["file", "text"])  # --json-schema examples/person.schema.json, or "$(cat …)"
def test_generate_with_the_example_schema(cli, monkeypatch, given):
    monkeypatch.chdir(ROOT)
    schema = "examples/person.schema.json" if given == "file" else (EXAMPLES / "person.schema.json").read_text()
    r = cli("generate", "--chat", "A person, as JSON", "--json-schema", schema, "--max-tokens", "48", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["stop_reason"] == "stop"
    jsonschema.validate(json.loads(out["text"]), SCHEMA)


def test_every_example_is_listed_and_every_listed_path_exists():
    listing = (EXAMPLES / "README.md").read_text()
    files = sorted(p.name for p in EXAMPLES.iterdir() if p.name != "README.md" and not p.name.startswith("."))
    assert [f for f in files if f"examples/{f}" not in listing] == []
    readme = (ROOT / "README.md").read_text()
    named = set(re.findall(r"examples/[\w./-]*\w", listing + readme))
    assert "examples/requests.jsonl" in readme and [n for n in named if not (ROOT / n).exists()] == []
