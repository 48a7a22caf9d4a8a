"""`forwardpass serve --replicas 2` (1 thread per replica) joining a Ray cluster of 2 CPUs, as a user joins one: the
same answers as one server, prefix-aware routing against round-robin, a replica killed mid-load, a cluster already
serving refused; and the parts (routing keys, metric labels, the in-process ASGI call) on their own. `batch
--replicas`: test_scale_batch.py. Skipped without the extra forwardpass[ray]."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from server_helpers import free_port, running_server

pytest.importorskip("ray.serve", reason="the extra forwardpass[ray] is not installed")

from forwardpass.scale import asgi  # noqa: E402
from forwardpass.scale.prompt_keys import CHUNK, prefix_hashes, route_key  # noqa: E402
from forwardpass.server.exposition import labelled  # noqa: E402

KEY = "sekret"
AUTH = {"Authorization": f"Bearer {KEY}"}
NAME = "smol"


@pytest.fixture(scope="module")
def head(tmp_path_factory):
    """`ray start --head` with 2 CPUs: the cluster the serve tests join; its address."""
    port = free_port()
    log = tmp_path_factory.mktemp("head") / "ray-start.log"
    proc = subprocess.Popen([str(Path(sys.executable).parent / "ray"), "start", "--head", "--block", f"--port={port}",
                             "--num-cpus=2", "--include-dashboard=false", "--disable-usage-stats"],
                            stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.time() + 60
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            assert proc.poll() is None and time.time() < deadline, log.read_text()
            time.sleep(0.5)
        yield f"127.0.0.1:{port}"
    finally:  # every process of the cluster's session, its workers too (`ray stop` would stop every cluster here)
        for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
            with contextlib.suppress(OSError):
                if os.getsid(pid) == proc.pid:
                    os.kill(pid, signal.SIGKILL)
        proc.wait()
        current = Path("/tmp/ray/ray_current_cluster")  # where `ray.init(address="auto")` would look for it
        with contextlib.suppress(OSError):
            if current.read_text().strip().endswith(f":{port}"):
                current.unlink()


def serve_command(head: str, port: int, routing: str = "prefix") -> list[str]:
    return [sys.executable, "-m", "forwardpass", "serve", "--replicas", "2", "--threads-per-replica", "1", "--routing",
            routing, "--ray-address", head, "--port", str(port)]


JOIN = os.environ | {"RAY_AUTH_MODE": "token"}  # the head made a token (~/.ray/auth_token): a driver given an
# address uses it only when told to


@contextlib.contextmanager
def replicas(head: str, port: int, routing: str):
    """`forwardpass serve --replicas 2` in fp32 (the `smollm` fixture's arithmetic) on the cluster; its base URL."""
    proc = subprocess.Popen([*serve_command(head, port, routing), "--json", "--storage", "fp32",
                             "--kv-cache-gib", "0.05", "--served-model-name", NAME, "--api-key", KEY,
                             "--shutdown-grace", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, env=JOIN)
    try:
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        info = json.loads(line)
        assert info.get("replicas") == 2 and info["threads_per_replica"] == 1 and info["routing"] == routing, info
        yield f"http://127.0.0.1:{port}"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=90) == 0
        assert "Traceback" not in proc.stderr.read()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture(scope="module")
def served(head):
    """The replicas the tests share: prefix routing, until `switch` restarts them with another (on the same port: the
    cluster's Serve keeps the address it first listened on)."""
    port = free_port()
    with contextlib.ExitStack() as stack:
        state = {"port": port, "url": stack.enter_context(replicas(head, port, "prefix"))}

        def switch(routing: str) -> str:
            stack.close()
            state["url"] = stack.enter_context(replicas(head, port, routing))
            return state["url"]
        state["switch"] = switch
        yield state


def chat(url: str, messages: list[dict], max_tokens: int = 8, **extra) -> dict:
    r = httpx.post(f"{url}/v1/chat/completions", headers=AUTH, timeout=120,
                   json={"model": NAME, "messages": messages, "max_tokens": max_tokens, "temperature": 0, **extra})
    assert r.status_code == 200, r.text
    return r.json()


def metric(text: str, name: str) -> dict[str, float]:
    """One counter's value per replica label."""
    pattern = rf'^{re.escape(name)}{{replica="([^"]+)"[^}}]*}} (\S+)$'
    return {m[1]: float(m[2]) for m in re.finditer(pattern, text, re.M)}


def metrics(url: str) -> str:
    r = httpx.get(f"{url}/metrics", headers=AUTH, timeout=30)
    assert r.status_code == 200, r.text
    return r.text


PROMPTS = ["The capital of France is", "List three colors:", "Write a haiku about rain.", "What is 12 times 12?"]


def test_replicas_answer_as_one_server_does(served, smollm):
    """Greedy answers through the replicas equal the single server's, plain and streamed; the routes, auth and
    errors are the single server's; /health counts the replicas; a client leaving mid-stream ends its request."""
    url = served["url"]
    with running_server(smollm, api_key=KEY) as (single, _):
        for prompt in PROMPTS:
            messages = [{"role": "user", "content": prompt}]
            expected = chat(single, messages, 16, model="smollm")["choices"][0]["message"]
            assert chat(url, messages, 16)["choices"][0]["message"] == expected
            body = {"model": NAME, "messages": messages, "max_tokens": 16, "temperature": 0, "stream": True}
            with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, headers=AUTH, timeout=120) as s:
                events = [json.loads(line[6:]) for line in s.iter_lines() if line.startswith("data: {")]
            assert "".join(e["choices"][0]["delta"].get("content") or "" for e in events) == expected["content"]
    assert httpx.get(f"{url}/health", timeout=30).json() == {"status": "ok", "replicas": {"ready": 2, "wanted": 2}}
    assert httpx.get(f"{url}/v1/models", timeout=30).status_code == 401
    assert httpx.get(f"{url}/metrics", timeout=30).status_code == 401
    r = httpx.post(f"{url}/v1/chat/completions", headers=AUTH, json={"model": NAME, "messages": [], "bogus": 1})
    assert r.status_code == 400 and r.json()["error"]["message"].startswith("unsupported field 'bogus'")
    r = httpx.post(f"{url}/v1/chat/completions", headers=AUTH, content=b"x" * (2 << 20))
    assert r.status_code == 413
    text = metrics(url)
    assert "forwardpass:replicas_ready 2" in text and len(metric(text, "forwardpass:replica_pid")) == 2
    # a client that leaves, mid-stream or before a plain answer, is gone for its replica too: its requests are
    # aborted, not decoded to the end
    before = sum(metric(text, "vllm:generation_tokens_total").values())
    body = {"model": NAME, "prompt": "Count: 1, 2,", "max_tokens": 1000, "ignore_eos": True, "stream": True}
    with httpx.stream("POST", f"{url}/v1/completions", json=body, headers=AUTH, timeout=120) as s:
        assert s.status_code == 200 and next(s.iter_lines()).startswith("data: {")
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{url}/v1/completions", json=body | {"stream": False}, headers=AUTH, timeout=2)
    time.sleep(2)  # the replicas post their metrics every half second
    deadline = time.time() + 30
    while any(metric(text := metrics(url), "vllm:num_requests_running").values()):
        assert time.time() < deadline, "the abandoned request kept running"
        time.sleep(0.5)
    assert sum(metric(text, "vllm:generation_tokens_total").values()) - before < 1000


TURNS = 2


def conversation_hits(url: str) -> float:
    """8 conversations, 2 to each of 4 system prompts, TURNS turns each, in every turn the 8 in a shuffled order (one
    at a time, so round-robin's choices do not depend on timing), with a KV pool per replica that holds about half
    of the conversations' histories: the prompt tokens the replicas found in their prefix caches."""
    systems = [f"You are assistant number {i}. Answer in one short sentence, politely and plainly." for i in range(4)]
    before = sum(metric(metrics(url), "vllm:prefix_cache_hits_total").values())
    histories = [[{"role": "system", "content": systems[c % 4]}] for c in range(8)]
    order = random.Random(7)

    async def turn(client: httpx.AsyncClient, c: int, t: int) -> None:
        question = f"Turn {t} of conversation {c}. " + "Here is some context to keep in mind while answering. " * 3
        histories[c].append({"role": "user", "content": question + "Name a fruit."})
        r = await client.post("/v1/chat/completions", json={"model": NAME, "messages": histories[c], "max_tokens": 8,
                                                            "temperature": 0})
        assert r.status_code == 200, r.text
        histories[c].append(r.json()["choices"][0]["message"])

    async def run() -> None:
        async with httpx.AsyncClient(base_url=url, headers=AUTH, timeout=120) as client:
            for t in range(TURNS):
                arrivals = order.sample(range(8), 8)
                for c in arrivals:
                    await turn(client, c, t)

    asyncio.run(run())
    time.sleep(1.5)  # the replicas post their metrics every half second
    return sum(metric(metrics(url), "vllm:prefix_cache_hits_total").values()) - before


def test_prefix_routing_finds_more_cached_prompt_than_round_robin(served):
    prefix = conversation_hits(served["url"])
    round_robin = conversation_hits(served["switch"]("round-robin"))
    print(f"prefix-cache hits: prefix routing {prefix:.0f}, round-robin {round_robin:.0f}")
    assert prefix >= 1.5 * round_robin, (prefix, round_robin)


def test_a_killed_replica_loses_no_request_unseen_and_is_replaced(served):
    """SIGKILL to one replica while 16 requests run: each either completes or fails visibly (an error status, or
    an error event ending its stream); nothing hangs; Ray starts a replacement and /health says so."""
    url = served["url"]
    pids = metric(metrics(url), "forwardpass:replica_pid")

    async def one(client: httpx.AsyncClient, i: int) -> str:
        body = {"model": NAME, "messages": [{"role": "user", "content": f"Count from 1 to {20 + i}."}],
                "max_tokens": 40, "temperature": 0, "ignore_eos": True, "stream": i % 2 == 1}
        if not body["stream"]:
            r = await client.post("/v1/chat/completions", json=body)
            if r.status_code != 200:
                assert r.json()["error"]["message"]
                return "failed"
            assert r.json()["choices"][0]["finish_reason"] == "length"
            return "answered"
        async with client.stream("POST", "/v1/chat/completions", json=body) as s:
            events = [line[6:] async for line in s.aiter_lines() if line.startswith("data: ")]
        if events[-1] != "[DONE]":
            assert json.loads(events[-1])["error"]["code"] == "replica_unavailable"
            return "failed"
        assert events[-1] == "[DONE]" and json.loads(events[-2])["choices"][0]["finish_reason"] == "length"
        return "answered"

    async def run() -> list[str]:
        async with httpx.AsyncClient(base_url=url, headers=AUTH, timeout=120) as client:
            tasks = [asyncio.create_task(one(client, i)) for i in range(16)]
            await asyncio.sleep(2)
            os.kill(int(min(pids.values())), signal.SIGKILL)
            return await asyncio.wait_for(asyncio.gather(*tasks), timeout=180)

    outcomes = asyncio.run(run())
    assert outcomes.count("answered") >= 8, outcomes  # those before and on the other replica, and the failed-over
    deadline = time.time() + 120
    while (health := httpx.get(f"{url}/health", timeout=30).json())["replicas"]["ready"] < 2:
        assert health["status"] == "ok" and health["replicas"]["wanted"] == 2
        assert time.time() < deadline, "the replica was not replaced"
        time.sleep(1)
    assert chat(url, [{"role": "user", "content": "Hello"}], 4)["choices"][0]["finish_reason"] == "length"


def test_a_cluster_already_serving_is_refused_and_keeps_serving(served, head):
    """A second `serve` on the cluster would replace the first's application, or ask for an address its Serve does
    not listen on: each is refused in one line, and the replicas already there go on answering."""
    port = served["port"]
    for asked, message in ((port, "already serves a forwardpass application"),
                           (free_port(), f"listens on 127.0.0.1:{port}, not 127.0.0.1:")):
        r = subprocess.run(serve_command(head, asked), capture_output=True, text=True, timeout=120, env=JOIN)
        assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert chat(served["url"], [{"role": "user", "content": "Hello"}], 4)["choices"][0]["finish_reason"] == "length"


def test_too_many_replicas_for_the_cores_is_refused_before_ray_starts():
    r = subprocess.run([sys.executable, "-m", "forwardpass", "serve", "--replicas", str(os.cpu_count() + 1),
                        "--threads-per-replica", "1", "--port", str(free_port())], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"need {os.cpu_count() + 1} CPUs; this machine has {os.cpu_count()}" in r.stderr


def test_route_keys_and_prefix_hashes():
    system = {"role": "system", "content": "s" * (3 * CHUNK)}
    one = json.dumps({"messages": [system, {"role": "user", "content": "a"}]}).encode()
    two = json.dumps({"messages": [system, {"role": "user", "content": "b"}], "max_tokens": 3}).encode()
    a, b = prefix_hashes(route_key("/v1/chat/completions", one)), prefix_hashes(route_key("/v1/chat/completions", two))
    assert len(a) == 3 and a == b  # the same system prompt: the same whole chunks, whatever follows
    other = prefix_hashes(route_key("/v1/chat/completions", one.replace(b"ssss", b"sssx", 1)))
    assert other[0] != a[0] and other[1:] != a[1:]  # a change in the first chunk changes every hash after it
    assert route_key("/v1/completions", b'{"prompt": "abc"}') == "abc"
    assert route_key("/v1/messages", b'{"system": "be brief", "messages": [{"role": "user", "content": "x"}]}') == \
        'system\x1f"be brief"\x1euser\x1fx'
    assert route_key("/v1/chat/completions", b"not json") == "" and prefix_hashes("") == []


def test_labelled_merges_families_with_a_replica_label():
    one = ("# HELP c Things.\n# TYPE c counter\nc_total 3.0\n"
           '# HELP h Hist.\n# TYPE h histogram\nh_bucket{le="1"} 2.0\n')
    two = "# HELP c Things.\n# TYPE c counter\nc_total 5.0\n"
    text = labelled({"a": one, "b": two}, "replica", ["up 1"])
    assert text.splitlines() == ["up 1", "# HELP c Things.", "# TYPE c counter", 'c_total{replica="a"} 3.0',
                                 'c_total{replica="b"} 5.0', "# HELP h Hist.", "# TYPE h histogram",
                                 'h_bucket{replica="a",le="1"} 2.0']


def test_in_process_call_streams_and_tells_the_app_the_client_left():
    seen = []

    async def app(scope, receive, send):
        assert (await receive())["body"] == b"hi"
        await send({"type": "http.response.start", "status": 201, "headers": [(b"x", b"1")]})
        await send({"type": "http.response.body", "body": b"", "more_body": True})
        await send({"type": "http.response.body", "body": b"one", "more_body": True})
        await send({"type": "http.response.body", "body": b"two", "more_body": True})
        seen.append((await receive())["type"])

    async def run() -> list:
        stream = asgi.call(app, asgi.Forwarded("POST", "/x", b"", [], b"hi"))
        got = [await stream.__anext__(), await stream.__anext__()]
        await stream.aclose()  # the ingress's client went away
        return got

    assert asyncio.run(run()) == [(201, [(b"x", b"1")], b"one"), b"two"]
    assert seen == ["http.disconnect"]
