"""The explorer's JSON endpoints: the numbers are the engine's, and bad input is a clear 400."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import httpx
import pytest
import torch
from fastapi.testclient import TestClient
from server_helpers import free_port

from forwardpass import cost, preset
from forwardpass.explorer.app import build_explorer
from forwardpass.sampling import SEED_CANDIDATES, probabilities


@pytest.fixture(scope="module")
def client(stored):
    return TestClient(build_explorer(stored))


def test_sampling_numbers_are_the_engines(client, stored):
    d = client.post("/api/sampling", json={"prompt": "the cat sat on the", "temperature": 0.7}).json()
    want = probabilities(torch.tensor(list(SEED_CANDIDATES.values())), 0.7)
    assert [t["probability"] for t in d["toy"]] == pytest.approx(want.tolist())
    real = probabilities(stored.next_token_logits(stored.encode("the cat sat on the")), 0.7)
    assert d["real"][0]["id"] == int(real.argmax()) and d["real"][0]["probability"] == pytest.approx(float(real.max()))
    assert d["vocab_size"] == 49152 and d["real_kept_count"] == 49152  # no filter: the full vocabulary


def test_temperature_zero_on_the_full_vocabulary(client):
    d = client.post("/api/sampling", json={"prompt": "the cat sat on the", "temperature": 0}).json()
    assert d["real"][0]["probability"] == 1.0 and d["toy"][0]["probability"] == 1.0


def test_reach_rows_are_distributions(client):
    d = client.post("/api/reach", json={"prompt": "the cat sat on the mat", "layer": 5, "head": 4, "token": 5}).json()
    assert len(d["attention"]) == 6 and sum(d["attention"]) == pytest.approx(1.0, abs=1e-3)


def test_cost_endpoints_match_cost_py(client):
    deep = preset("gpt2-small").with_(n_layers=48)
    assert client.get("/api/depth?n=48").json()["total"] == cost.parameters(deep).total
    assert client.get("/api/cache-memory?context=512").json()["gib"] == 2.25
    assert client.get("/api/concurrency?sequences=37").json()["caches_outweigh"] is True
    assert client.get("/api/intensity?prompt=16").json()["prefill"] == 16.0
    assert client.get("/api/work?prompt=20&new=100").json()["ratio"] == 69.5


def test_autoregress_cache_fill(client):
    d = client.post("/api/autoregress", json={"prompt": "the cat sat on the", "steps": 4}).json()
    assert [s["cache_pairs_per_layer"] for s in d["steps"]] == [5, 6, 7, 8]  # t pairs after t tokens
    assert [s["cached_work"] for s in d["steps"]] == [5, 1, 1, 1]
    assert [s["naive_work"] for s in d["steps"]] == [5, 6, 7, 8]


@pytest.mark.parametrize("method,path,body,message", [
    ("get", "/api/depth?n=0", None, "N must be between 1 and 200"),
    ("get", "/api/depth?n=abc", None, "bad query parameters"),
    ("get", "/api/concurrency?sequences=-3", None, "sequences must be between"),
    ("post", "/api/lookup", {"prompt": ""}, "type a prompt"),
    ("post", "/api/sampling", {"prompt": "hi", "top_p": 5}, "top_p must be ≤ 1.0"),
    ("post", "/api/reach", {"prompt": "hi", "layer": 99}, "layer < 30"),
    ("post", "/api/ring-overflow", {"prompt": "one two three four five six seven eight nine ten", "capacity": 6},
     "the prompt must fit the capacity"),
])
def test_bad_input_is_a_clear_400(client, method, path, body, message):
    r = getattr(client, method)(path, **({"json": body} if body is not None else {}))
    assert r.status_code == 400 and message in r.json()["error"]


def test_explore_command_serves_the_page():
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "forwardpass", "explore", "--port", str(port), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert json.loads(proc.stdout.readline())["address"] == f"http://127.0.0.1:{port}/"
        deadline = time.time() + 60
        while True:
            try:
                page = httpx.get(f"http://127.0.0.1:{port}/", timeout=10)
                break
            except httpx.ConnectError:
                assert time.time() < deadline
                time.sleep(0.2)
        assert page.status_code == 200 and 'src="/static/app.js"' in page.text
        section = httpx.get(f"http://127.0.0.1:{port}/static/sections/runnable.js", timeout=10)
        assert section.status_code == 200 and '"W-loop-cost"' in section.text  # each section's markup in its module
        assert "http" not in page.text.split("<body>")[0].replace('href="/static', "")  # no CDN, no outside fonts
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_values_that_once_failed_are_answered(client):
    """Context 0 divided by zero in the concurrency widget; a temperature float32 rounds to 0 drew from NaN."""
    r = client.get("/api/concurrency", params={"sequences": 4, "context": 0})
    assert r.status_code == 400 and "context must be between 1 and 2048" in r.json()["error"]
    for body in ({"temperature": 1e-50}, {"temperature": 1.0, "top_p": 1e-300}):
        assert client.post("/api/sample", json={"prompt": "the cat sat on the"} | body).status_code == 200
        view = client.post("/api/sampling", json={"prompt": "the cat sat on the"} | body)
        assert view.status_code == 200 and view.json()["real_kept_count"] >= 1


def test_models_have_display_names(stored):
    """The menu names a model by family, size and format; the id a request names stays the id."""
    from forwardpass.explorer.names import from_file

    client = TestClient(build_explorer(stored, {"gemma3-270m": lambda: stored, "again": lambda: stored}))
    names = client.get("/api/models").json()["display_names"]
    assert names == {stored.config.name: "SmolLM2 135M Instruct · Q4_1", "gemma3-270m": "Gemma 3 270M · Q4_K_M",
                     "again": "again"}  # not loaded, and no file known for it: its id
    assert client.get("/api/model").json()["display_name"] == "SmolLM2 135M Instruct · Q4_1"
    assert client.get("/api/model?model=again").json()["id"] == "again"
    names = client.get("/api/models").json()["display_names"]  # loaded now: its file's name, kept apart
    assert names["again"] == "SmolLM2 135M Instruct · Q4_1 (again)"
    assert from_file("Qwen3-0.6B-Q8_0.gguf") == "Qwen3 0.6B · Q8_0"
    assert from_file("Llama-3.2-1B-Instruct-f16.gguf") == "Llama 3.2 1B Instruct · F16"


@pytest.mark.parametrize("method,path,body,code,params", [
    ("get", "/api/depth?n=0", None, "range", {"what": "N", "lo": 1, "hi": 200}),
    ("get", "/api/depth?n=abc", None, "bad_query", {}),
    ("post", "/api/lookup", {"prompt": ""}, "empty_prompt", {}),
    ("post", "/api/ring-overflow", {"prompt": "one two three four five six seven eight nine ten", "capacity": 6},
     "ring_fit", {"tokens": 10, "capacity": 6}),
    ("post", "/api/lookup", {"prompt": "hi", "model": "nope"}, "no_model", {"model": "nope"}),
])
def test_refusals_name_the_pages_sentence_for_them(client, method, path, body, code, params):
    """Besides its English message, a refusal names the sentence the page says it in (in the page's language)."""
    r = getattr(client, method)(path, **({"json": body} if body is not None else {}))
    assert r.status_code == 400 and r.json()["code"] == code and r.json()["params"] == params
