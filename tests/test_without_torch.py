"""The CPU product path without PyTorch: `generate`, `serve` (through the official OpenAI client) and `batch` run in a
process where `import torch` fails, and give the tokens the PyTorch-built model gives (the same file loaded by the
PyTorch loader, run by the same engine in this process). What needs PyTorch says so in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from server_helpers import free_port, running_server

import forwardpass
from forwardpass.engine import EngineConfig
from forwardpass.loop import generate
from forwardpass.sampling import SamplingParams
from forwardpass.server_defaults import server_sampling

pytestmark = pytest.mark.slow

# the CLI in a process where PyTorch cannot be imported (None in sys.modules: every `import torch` raises ImportError)
NO_TORCH = "import sys; sys.modules['torch'] = None; from forwardpass.cli import main; sys.exit(main(sys.argv[1:]))"
PROMPT = "The three primary colors are"
SAMPLED = {"temperature": 0.8, "top_p": 0.95, "seed": 11}
MESSAGES = [{"role": "user", "content": "Name a fruit and its color."}]


def without_torch(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    return subprocess.run([sys.executable, "-c", NO_TORCH, *args], capture_output=True, text=True, timeout=timeout,
                          env=env)


@pytest.fixture(scope="module")
def reference():
    """The default model built by the PyTorch loader (the native step then runs the Transformer's own tensors)."""
    fp = forwardpass.load(backend="torch")
    assert not fp.native
    return fp


@pytest.mark.parametrize("sampling", [{"temperature": 0}, SAMPLED], ids=["greedy", "seeded"])
def test_generate_without_torch_gives_the_pytorch_models_tokens(reference, sampling):
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in sampling.items()]
    r = without_torch("generate", PROMPT, "--max-tokens", "40", "--json", "--threads", "2", *flags)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    want = generate(reference, PROMPT, SamplingParams(max_tokens=40, **sampling))
    assert got["token_ids"] == want.token_ids and got["text"] == want.text
    assert len(want.token_ids) > 10


def test_a_command_that_needs_torch_says_so_in_one_line():
    for args in (["generate", "hi", "--storage", "fp32"], ["generate", "hi", "--naive"], ["embed", "hello"]):
        r = without_torch(*args, "--max-tokens", "2") if args[0] == "generate" else without_torch(*args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "needs PyTorch" in lines[0] and "forwardpass[torch]" in lines[0], (args, lines)


def test_serve_without_torch_answers_the_openai_client_as_the_pytorch_model_does(reference):
    from openai import OpenAI

    port = free_port()
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    server = subprocess.Popen([sys.executable, "-c", NO_TORCH, "serve", "--port", str(port), "--log-format", "off",
                               "--kv-cache-gib", "0.25"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True, env=env)
    try:
        deadline = time.time() + 120
        while True:
            assert server.poll() is None, server.stderr.read()
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.time() < deadline, "the server did not start"
            time.sleep(0.2)
        answers = {}
        sampling = server_sampling({}, reference.metadata.get("sampling", {}))
        with running_server(reference, EngineConfig(kv_cache_bytes=2**28), sampling=sampling) as (url, _):
            for name, base in (("native", f"http://127.0.0.1:{port}/v1"), ("torch", f"{url}/v1")):
                client = OpenAI(base_url=base, api_key="none")
                model = client.models.list().data[0].id
                answers[name] = [client.chat.completions.create(model=model, messages=MESSAGES, max_tokens=32,
                                                                **s).choices[0].message.content
                                 for s in ({"temperature": 0}, SAMPLED)]
        assert answers["native"] == answers["torch"]
        assert all(len(a) > 5 for a in answers["native"])
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_batch_without_torch_writes_the_pytorch_models_answers(reference, tmp_path: Path):
    from forwardpass.batch import run_batch
    from forwardpass.engine import Engine
    from forwardpass.server import ServerConfig, build_app

    bodies = [{"model": "m", "prompt": f"{i}. A short list of colors:", "max_tokens": 12, "temperature": 0}
              for i in range(3)]
    bodies.append({"model": "m", "messages": MESSAGES, "max_tokens": 12, **SAMPLED})
    requests = tmp_path / "in.jsonl"
    requests.write_text("".join(json.dumps({"custom_id": f"r{i}", "method": "POST",
                                            "url": "/v1/chat/completions" if "messages" in b else "/v1/completions",
                                            "body": b}) + "\n" for i, b in enumerate(bodies)))
    r = without_torch("batch", str(requests), str(tmp_path / "native.jsonl"), "--served-model-name", "m",
                      "--kv-cache-gib", "0.25")
    assert r.returncode == 0, r.stderr
    engine = Engine(reference, EngineConfig(kv_cache_bytes=2**28))
    sampling = server_sampling({}, reference.metadata.get("sampling", {}))
    run_batch(engine, build_app(engine, ServerConfig("m", sampling=sampling)), requests, tmp_path / "torch.jsonl")

    def texts(path: Path) -> list[str]:
        out = []
        for line in path.read_text().splitlines():
            choice = json.loads(line)["response"]["body"]["choices"][0]
            out.append(choice.get("text") or choice["message"]["content"])
        return out
    assert texts(tmp_path / "native.jsonl") == texts(tmp_path / "torch.jsonl")
    assert len(texts(tmp_path / "native.jsonl")) == 4
