"""Several chat models behind one server (server/registry.py): each answering under the id typed, loaded on its first
request, the least recently used idle one unloaded under --max-models or the memory budget with its memory given
back, a busy one never; and the registry's choices alone, on stand-in models."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import threading
import time
from types import SimpleNamespace

import httpx
import openai
import pytest
from server_helpers import free_port

from forwardpass.catalog import ModelSpec, spec, specs
from forwardpass.errors import ForwardpassError
from forwardpass.packaged import default_model_path
from forwardpass.server.errors import APIError
from forwardpass.server.registry import Registry

PATH = str(default_model_path())


class Serving:
    """`forwardpass serve` in a subprocess, its stderr read as it comes."""

    def __init__(self, *args: str):
        self.port = free_port()
        self.proc = subprocess.Popen([sys.executable, "-m", "forwardpass", "serve", "--port", str(self.port),
                                      "--kv-cache-gib", "0.125", "--log-format", "off", *args],
                                     stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        self.said: list[str] = []
        threading.Thread(target=lambda: self.said.extend(self.proc.stderr), daemon=True).start()
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.time() + 120
        while not any(line.startswith("serving ") for line in self.said):
            assert self.proc.poll() is None and time.time() < deadline, "".join(self.said)
            time.sleep(0.1)
        self.client = openai.OpenAI(base_url=self.url + "/v1", api_key="none", max_retries=0)

    def rss(self) -> int:
        """The server process's resident memory, in bytes."""
        with open(f"/proc/{self.proc.pid}/statm") as f:
            return int(f.read().split()[1]) * 4096

    def models(self) -> dict[str, dict]:
        return {m["id"]: m for m in httpx.get(self.url + "/v1/models").json()["data"]}

    def answer(self, model: str, max_tokens: int = 8) -> str:
        r = self.client.chat.completions.create(model=model, messages=[{"role": "user", "content": "Name a fruit."}],
                                                max_tokens=max_tokens, temperature=0)
        assert r.model == model
        return r.choices[0].message.content

    def close(self) -> str:
        self.proc.terminate()
        assert self.proc.wait(timeout=30) == 0
        return "".join(self.said)


@pytest.fixture(scope="module")
def two():
    """Two models at once: the default file under two aliases (the same weights: the same answers)."""
    s = Serving("--model", f"a={PATH}", "--model", f"b={PATH}", "--max-models", "2", "--ctx-size", "4096")
    yield s
    assert "Traceback" not in s.close()


def test_each_model_answers_under_its_typed_id(two):
    listed = two.models()
    assert list(listed) == ["a", "b"] and listed["a"]["loaded"] and not listed["b"]["loaded"]
    assert {k: listed["b"][k] for k in ("family", "quantization", "context_length", "max_model_len")} == \
        {"family": "llama", "quantization": "Q4_1", "context_length": 4096, "max_model_len": 4096}
    assert two.client.models.retrieve("b").id == "b"
    assert two.answer("a") == two.answer("b")
    assert two.models()["b"]["loaded"] and two.models()["b"]["context_length"] == 4096
    assert any(line.startswith("loaded b for a request in ") for line in two.said)
    with pytest.raises(openai.NotFoundError, match=r"model 'c' does not exist; this server serves 'a', 'b'"):
        two.answer("c")


def test_models_answer_at_once_and_metrics_say_which(two):
    out: dict[str, str] = {}
    threads = [threading.Thread(target=lambda m=m: out.__setitem__(m, two.answer(m, 24))) for m in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out["a"] == out["b"] and out["a"]
    text = httpx.get(two.url + "/metrics").text
    counts = dict(re.findall(r'^vllm:generation_tokens_total\{model_name="(\w)"\} (\S+)$', text, re.M))
    assert set(counts) == {"a", "b"} and all(float(v) > 0 for v in counts.values())
    assert text.count("# TYPE vllm:generation_tokens_total counter") == 1


def test_the_memory_budget_unloads_the_least_recently_used_and_its_memory_is_given_back():
    # each model: its file's 94 MiB and a KV pool of 128 MiB; a budget of 0.3 GiB holds one
    s = Serving("--model", f"a={PATH}", "--model", f"b={PATH}", "--max-memory-gib", "0.3")
    try:
        for model in ("a", "b", "a"):  # each once: what a first answer leaves (the pool's pages, the heap) is there
            s.answer(model)
        before = s.rss()
        for model in ("b", "a", "b", "a"):
            s.answer(model)
            assert [m for m, about in s.models().items() if about["loaded"]] == [model]
        after = s.rss()
        weights = int(re.search(r"loaded b for a request in \S+ s: (\d+) MiB of weights", "".join(s.said))[1]) * 2**20
        # four loads and four unloads: a model's memory not given back would leave ≥ one copy of its weights more
        assert after - before < weights / 2, (before, after, weights)
        assert sum(line.startswith("unloaded ") for line in s.said) == 6
    finally:
        assert "Traceback" not in s.close()


def test_a_busy_model_is_not_unloaded_under_it():
    s = Serving("--model", f"a={PATH}", "--model", f"b={PATH}", "--max-models", "1")
    try:
        body = {"model": "a", "prompt": "Count: 1, 2, 3,", "max_tokens": 60, "ignore_eos": True, "stream": True,
                "temperature": 0}
        with httpx.stream("POST", s.url + "/v1/completions", json=body, timeout=120) as stream:
            lines = stream.iter_lines()
            first = next(line for line in lines if line.startswith("data: "))
            asked = threading.Thread(target=lambda: s.answer("b"))  # waits for a's stream to end, then loads b
            asked.start()
            events = [first, *(line for line in lines if line.startswith("data: "))]
        asked.join(timeout=120)
        assert not asked.is_alive() and events[-1] == "data: [DONE]"
        assert '"finish_reason":"length"' in events[-2].replace(" ", "")
        assert [m for m, about in s.models().items() if about["loaded"]] == ["b"]
    finally:
        assert "Traceback" not in s.close()


# ---- models that cannot be loaded ------------------------------------------------------------------------
BROKEN = {"t": "truncated GGUF file (the file ends at byte 1000000, inside its header)",
          "h": "truncated GGUF file (tensor blk.15.attn_output.weight runs past the end of the file)",
          "d": "no config.json beside the safetensors weights"}


@pytest.fixture(scope="module")
def broken(tmp_path_factory):
    """The default model beside three that cannot be loaded: its file's first MB, its first half and an empty directory
    (a file that does not start as a GGUF file does is refused before the server starts)."""
    folder = tmp_path_factory.mktemp("broken")
    whole = default_model_path().read_bytes()
    (folder / "t.gguf").write_bytes(whole[:1_000_000])
    (folder / "h.gguf").write_bytes(whole[:len(whole) // 2])
    (folder / "d").mkdir()
    s = Serving("--model", f"a={PATH}", *(f"--model={m}={folder / f}" for m, f in
                                          (("t", "t.gguf"), ("h", "h.gguf"), ("d", "d"))))
    yield s
    assert "Traceback" not in s.close()


def test_a_model_that_cannot_be_loaded_is_listed_as_failed_with_its_reason(broken):
    r = httpx.get(broken.url + "/v1/models")
    assert r.status_code == 200, r.text
    listed = {m["id"]: m for m in r.json()["data"]}
    assert list(listed) == ["a", *BROKEN] and listed["a"]["status"] == "loaded" and listed["a"]["loaded"]
    for model, reason in BROKEN.items():
        about = listed[model]
        assert about["status"] == "failed" and not about["loaded"] and about["error"].endswith(reason), about
        assert about["family"] == "unknown" and about["context_length"] is None
        assert httpx.get(f"{broken.url}/v1/models/{model}").json() == about
    assert [m.id for m in broken.client.models.list()] == ["a", *BROKEN]
    assert broken.client.models.retrieve("t").id == "t"


@pytest.mark.parametrize("path,body", [
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4}),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4, "stream": True}),
    ("/v1/completions", {"prompt": "Hi", "max_tokens": 4}),
    ("/v1/messages", {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4}),
    ("/v1/messages/count_tokens", {"messages": [{"role": "user", "content": "Hi"}]}),
    ("/tokenize", {"prompt": "Hi"}),
])
def test_a_request_for_a_model_that_cannot_be_loaded_is_refused_with_why(broken, path, body):
    for model, reason in BROKEN.items():
        r = httpx.post(broken.url + path, json={"model": model, **body}, timeout=60)
        assert r.status_code == 503, r.text
        assert r.headers["x-should-retry"] == "false"  # the SDKs' own retries would fail the same way at once
        if path.startswith("/v1/messages"):
            assert (r.json()["type"], r.json()["error"]["type"]) == ("error", "api_error")  # no overload that passes
            message = r.json()["error"]["message"]
        else:
            error = r.json()["error"]
            assert (error["type"], error["code"]) == ("server_error", "model_load_failed")
            message = error["message"]
        assert message.startswith(f"model {model!r} is unavailable: loading it failed: ") and reason in message
        assert message.endswith("; the next request for it tries loading it again") and "\n" not in message
    assert broken.answer("a")  # the loaded model is served all along
    assert broken.models()["t"]["status"] == "failed"


def test_health_and_the_log_say_which_models_cannot_be_loaded(broken):
    r = httpx.get(broken.url + "/health")
    assert r.status_code == 200 and r.json() == {"status": "ok", "failed_models": list(BROKEN)}
    said = "".join(broken.said)
    for model, reason in BROKEN.items():  # at start, from its file; and on each request's try
        assert re.search(rf"^cannot load {model}: \S+: {re.escape(reason)}; requests for it are refused", said, re.M)
    assert re.search(rf"^could not load t for a request: \S+: {re.escape(BROKEN['t'])}$", said, re.M)


# ---- the registry's choices, on stand-ins --------------------------------------------------------------
class StandIn:
    """What the registry reads of a loaded model: its id, bytes, leases and whether its engine has work."""

    def __init__(self, name: str, nbytes: int):
        self.name, self.nbytes, self.leases, self.work = name, nbytes, 0, False
        self.weight_bytes, self.kv_bytes = nbytes, 0
        self.engine = SimpleNamespace(has_work=lambda: self.work, tick=lambda: False, drain=lambda grace: None)


def registry(max_models=None, max_bytes=None, sizes=None):
    sizes = sizes or {}
    opened = []

    def open_model(spec, wake, progress=False):
        opened.append(spec.id)
        return StandIn(spec.id, sizes.get(spec.id, 10))
    return Registry([ModelSpec(i, i) for i in "abc"], open_model, lambda s: sizes.get(s.id, 10), max_models,
                    max_bytes, wait=0.5), opened


def ask(r: Registry, model: str) -> StandIn:
    """A request's view: get() on an event loop while the registry's thread loads what it asks for."""
    async def get():
        task = asyncio.ensure_future(r.get(model, SimpleNamespace(state=SimpleNamespace())))
        while not task.done():
            r._load_asked()
            await asyncio.sleep(0.01)
        return task.result()
    return asyncio.run(get())


def test_unloads_the_least_recently_used_idle_model_first():
    r, opened = registry(max_models=2)
    a, b = ask(r, "a"), ask(r, "b")
    a.leases = b.leases = 0
    ask(r, "a").leases = 0  # a used after b: b is the least recently used
    ask(r, "c")
    assert list(r.loaded) == ["a", "c"] and opened == ["a", "b", "c"] and r.unloads == 1


def test_never_unloads_a_model_in_use_and_says_so_when_it_cannot_wait():
    r, _ = registry(max_models=1)
    ask(r, "a")  # still leased: a request holds it
    with pytest.raises(APIError, match="model 'b' could not be loaded within 0.5 s: every loaded model is answering"):
        ask(r, "b")
    assert list(r.loaded) == ["a"]
    r.loaded["a"].leases, r.loaded["a"].work = 0, True  # released, but its engine still has work
    with pytest.raises(APIError):
        ask(r, "b")
    r.loaded["a"].work = False
    assert ask(r, "b").name == "b" and list(r.loaded) == ["b"]


def test_the_memory_budget_unloads_as_many_as_it_takes():
    r, _ = registry(max_bytes=100, sizes={"a": 40, "b": 40, "c": 90})
    for m in "ab":
        ask(r, m).leases = 0
    ask(r, "c")
    assert list(r.loaded) == ["c"] and r.unloads == 2


def test_a_model_that_fails_to_load_is_said_and_tried_again():
    calls = []

    def open_model(spec, wake, progress=False):
        calls.append(spec.id)
        if len(calls) == 1:
            raise ForwardpassError("no room on the disk")
        return StandIn(spec.id, 1)
    r = Registry([ModelSpec("a", "a")], open_model)
    with pytest.raises(APIError, match="model 'a' is unavailable: loading it failed: no room on the disk; the next "
                                       "request for it tries loading it again") as refused:
        ask(r, "a")
    assert refused.value.status == 503 and r.state("a") == ("failed", "no room on the disk") and r.failures() == ["a"]
    assert ask(r, "a").name == "a" and calls == ["a", "a"]
    assert r.state("a") == ("loaded", None) and r.failures() == []


def test_any_failure_to_load_is_a_refusal_in_one_line_and_the_registry_goes_on():
    def estimate(spec):
        if spec.id == "a":
            raise ForwardpassError("a.gguf: truncated GGUF file")
        return 1

    def open_model(spec, wake, progress=False):
        if spec.id == "b":
            raise RuntimeError("out of memory\n" + "allocating " * 100)
        return StandIn(spec.id, 1)
    r = Registry([ModelSpec(i, i) for i in "abc"], open_model, estimate, max_bytes=100, wait=0.5)
    with pytest.raises(APIError, match=r"^model 'a' is unavailable: loading it failed: a.gguf: truncated GGUF file;"):
        ask(r, "a")
    with pytest.raises(APIError) as refused:
        ask(r, "b")
    why = r.state("b")[1]
    assert why.startswith("RuntimeError: out of memory allocating ") and len(why) == 300 and why.endswith("…")
    assert why in refused.value.message and "\n" not in refused.value.message
    assert ask(r, "c").name == "c" and r.failures() == ["a", "b"]


# ---- naming ----------------------------------------------------------------------------------------------
def test_ids_are_the_names_typed_or_aliases():
    assert spec(f"fast={PATH}") == ModelSpec("fast", PATH)
    assert spec(PATH) == ModelSpec("SmolLM2-135M-Instruct.Q4_1", PATH)
    assert spec(None).id == "SmolLM2-135M-Instruct.Q4_1"
    with pytest.raises(ForwardpassError, match="two --model values are served as 'x'"):
        specs([f"x={PATH}", f"x={PATH}"])
    with pytest.raises(ForwardpassError, match="an alias is ALIAS=PATH"):
        spec("=" + PATH)


@pytest.mark.parametrize("args,message", [
    (["--model", PATH, "--model", PATH], "two --model values are served as 'SmolLM2-135M-Instruct.Q4_1'"),
    (["--model", f"a={PATH}", "--model", f"b={PATH}", "--served-model-name", "x"], "--served-model-name names one"),
    (["--model", f"a={PATH}", "--model", "b=/nowhere.gguf"], "model file not found: /nowhere.gguf"),
    (["--model", f"a={PATH}", "--model", f"b={__file__}"], "not a GGUF file (starts with b'\"\"\"S', expected"),
    (["--max-memory-gib", "-1"], "--max-memory-gib must be a positive number, got -1"),
    (["--max-models", "0"], "--max-models: must be a positive integer"),
])
def test_serve_refuses_bad_model_lists_before_loading(args, message):
    r = subprocess.run([sys.executable, "-m", "forwardpass", "serve", "--port", str(free_port()), *args],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr


def test_batch_answers_each_request_with_the_model_it_names(tmp_path):
    lines = [{"custom_id": m, "method": "POST", "url": "/v1/chat/completions",
              "body": {"model": m, "messages": [{"role": "user", "content": "Name a fruit."}], "max_tokens": 6,
                       "temperature": 0}} for m in ("a", "b", "c")]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    r = subprocess.run([sys.executable, "-m", "forwardpass", "batch", str(tmp_path / "in.jsonl"),
                        str(tmp_path / "out.jsonl"), "--model", f"a={PATH}", "--model", f"b={PATH}", "--json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = {a["custom_id"]: a["response"] for a in map(json.loads, (tmp_path / "out.jsonl").read_text().splitlines())}
    assert [out[m]["status_code"] for m in "abc"] == [200, 200, 404]
    assert [out[m]["body"]["model"] for m in "ab"] == ["a", "b"]
    assert out["a"]["body"]["choices"][0]["message"] == out["b"]["body"]["choices"][0]["message"]
    assert "this server serves 'a', 'b'" in out["c"]["body"]["error"]["message"]
