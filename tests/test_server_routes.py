"""Routes clients call on their first day: one model by id (`client.models.retrieve`) and Anthropic's token count
(`client.messages.count_tokens`), through the official clients."""

from __future__ import annotations

import json
import unicodedata
from types import SimpleNamespace

import anthropic
import httpx
import openai
import pytest
from server_helpers import MODEL, running_server


@pytest.fixture(scope="module")
def server(smollm):
    with running_server(smollm) as (url, _):
        yield url


def test_one_model_by_its_id(server):
    client = openai.OpenAI(base_url=server + "/v1", api_key="none")
    got = client.models.retrieve(MODEL)
    assert got.id == MODEL and got.object == "model"
    assert got.model_dump() == next(m.model_dump() for m in client.models.list().data if m.id == MODEL)
    with pytest.raises(openai.NotFoundError) as e:
        client.models.retrieve("gpt-4o")
    assert "'gpt-4o' does not exist" in str(e.value) and repr(MODEL) in str(e.value)


def test_count_tokens_is_what_the_model_reads(server, smollm):
    """The count equals the prompt tokens the same request, answered, reports, and the template's own count; a system
    prompt is counted as the template renders it (SmolLM2's replaces its default one), a tool adds to it."""
    client = anthropic.Anthropic(base_url=server, api_key="none")
    messages = [{"role": "user", "content": "Name a fruit."}]
    counted = client.messages.count_tokens(model=MODEL, messages=messages).input_tokens
    answered = client.messages.create(model=MODEL, max_tokens=2, messages=messages).usage.input_tokens
    want = len(smollm.tokenizer.encode_chat(messages, True, None))
    assert counted == answered == want
    with_system = client.messages.count_tokens(model=MODEL, messages=messages, system="Be brief.").input_tokens
    tool = {"name": "get_time", "description": "The time in a city.",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
    with_tool = client.messages.count_tokens(model=MODEL, messages=messages, tools=[tool]).input_tokens
    system = [{"role": "system", "content": "Be brief."}, *messages]
    assert with_system == len(smollm.tokenizer.encode_chat(system, True, None)) != counted
    assert with_tool > counted


def test_count_tokens_refuses_what_it_does_not_take(server):
    r = httpx.post(server + "/v1/messages/count_tokens", json={
        "model": MODEL, "max_tokens": 5, "messages": [{"role": "user", "content": "Hi"}]})
    assert r.status_code == 400 and "max_tokens" in r.text
    r = httpx.post(server + "/v1/messages/count_tokens", json={"model": "other", "messages": [
        {"role": "user", "content": "Hi"}]})
    assert r.status_code == 404


def test_count_tokens_errors_come_in_anthropics_shape(server):
    r = httpx.post(server + "/v1/messages/count_tokens", json={"model": MODEL, "messages": []})
    assert r.status_code == 400 and r.json()["type"] == "error" and r.json()["error"]["type"] == "invalid_request_error"


def test_cross_origin_pages_only_where_the_server_allows_them(smollm):
    """--cors-origins: a browser page from a listed origin gets its preflight answered and its answers readable; one
    from another origin, or any origin without the option, does not."""
    from fastapi.testclient import TestClient

    from forwardpass.engine import Engine, EngineConfig
    from forwardpass.server import ServerConfig, build_app

    engine = Engine(smollm, EngineConfig(kv_cache_bytes=16 * 2**20))
    preflight = {"Origin": "http://localhost:3000", "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "content-type,authorization"}
    with TestClient(build_app(engine, ServerConfig(MODEL, cors_origins=("http://localhost:3000",)))) as c:
        r = c.options("/v1/chat/completions", headers=preflight)
        assert r.status_code == 200 and r.headers["access-control-allow-origin"] == "http://localhost:3000"
        got = c.get("/v1/models", headers={"Origin": "http://localhost:3000"})
        assert got.headers["access-control-allow-origin"] == "http://localhost:3000"
        other = c.options("/v1/chat/completions", headers=preflight | {"Origin": "http://evil.example"})
        assert other.status_code == 400 and "access-control-allow-origin" not in other.headers
    with TestClient(build_app(engine, ServerConfig(MODEL))) as c:
        assert "access-control-allow-origin" not in c.get("/v1/models", headers={"Origin": "http://a.b"}).headers
        assert c.options("/v1/chat/completions", headers=preflight).status_code == 405


def test_one_log_line_per_request_with_its_true_counts(smollm, caplog):
    """The access log: each request once its response has ended, whole or streamed, with the usage the response
    reported; a refused one with its status."""
    import json as json_

    from fastapi.testclient import TestClient

    from forwardpass.engine import Engine, EngineConfig
    from forwardpass.server import ServerConfig, build_app

    engine = Engine(smollm, EngineConfig(kv_cache_bytes=16 * 2**20))
    engine.start()
    ask = {"model": MODEL, "max_tokens": 6, "temperature": 0, "messages": [{"role": "user", "content": "Hi"}]}
    try:
        with TestClient(build_app(engine, ServerConfig(MODEL, access_log="json"))) as c, \
                caplog.at_level("INFO", logger="forwardpass.server.access"):
            whole = c.post("/v1/chat/completions", json=ask | {"n": 2}).json()["usage"]
            with c.stream("POST", "/v1/chat/completions", json=ask | {"stream": True,
                                                                      "stream_options": {"include_usage": True}}) as s:
                events = [line.removeprefix("data: ") for line in s.iter_lines() if line.startswith("data: ")]
            streamed = json_.loads(events[-2])["usage"]
            assert c.post("/v1/chat/completions", json=ask | {"max_tokens": -1}).status_code == 400
    finally:
        engine.stop()
    lines = [json_.loads(r.getMessage()) for r in caplog.records if r.name == "forwardpass.server.access"]
    first, second, refused = lines
    for line, usage in ((first, whole), (second, streamed)):
        assert (line["prompt_tokens"], line["completion_tokens"]) == (usage["prompt_tokens"],
                                                                       usage["completion_tokens"])
        assert line["status"] == 200 and line["model"] == MODEL and 0 < line["ttft_s"] <= line["total_s"]
    assert refused["status"] == 400 and refused["prompt_tokens"] is None and refused["path"] == "/v1/chat/completions"


HOSTILE = ["a\nGET /v1/models · 200 · total 0.001 s", "a\r\nb", "a\rb", "\x1b[2J\x1b[H", "\x1b]0;owned\x07", "a\x00b",
           "a\x7fb", "a\u2028b", "a\u2029b", "a\x85b", "a\x9bb", "m" * 200_000]
PATHS = ["/v1/models/smollm%0A", "/nope%0D%0AGET%20/v1/models%20200", "/nope%1B%5B2J", "/nope%1B%5D0;owned%07",
         "/nope%E2%80%A8x", "/nope%C2%85x", "/" + "p" * 20_000]


def hostile_requests(c) -> list:
    """Every route that logs a model id, sent each hostile id, and paths no route serves holding the same."""
    sent = []
    for model in HOSTILE:
        chat = {"model": model, "messages": [{"role": "user", "content": "Hi"}]}
        sent += [c.post("/v1/chat/completions", json=chat), c.post("/v1/messages/count_tokens", json=chat),
                 c.post("/v1/completions", json={"model": model, "prompt": "Hi"}),
                 c.post("/tokenize", json={"model": model, "prompt": "Hi"}),
                 c.post("/v1/embeddings", json={"model": model, "input": "Hi"})]
    return sent + [c.get(path) for path in PATHS]


def unprintable(text: str) -> list[str]:
    """The characters of `text` that end a line or command a terminal (controls, line and paragraph separators)."""
    return [ch for ch in text if unicodedata.category(ch) in ("Cc", "Zl", "Zp")]


@pytest.mark.parametrize("form", ["text", "json"])
def test_what_a_client_sends_reaches_the_log_escaped_and_cut(smollm, caplog, form):
    """A model id or a path holding a newline, a terminal's escape or a separator is written escaped, one request one
    line; a long one cut, with its length; and the error answering it quotes it no further."""
    from fastapi.testclient import TestClient

    from forwardpass.engine import Engine, EngineConfig
    from forwardpass.server import ServerConfig, build_app

    engine = Engine(smollm, EngineConfig(kv_cache_bytes=16 * 2**20))
    embedder = SimpleNamespace(name="minilm", max_tokens=256)  # enough for /v1/embeddings to refuse another model
    with TestClient(build_app(engine, ServerConfig(MODEL, access_log=form), embedder)) as c, \
            caplog.at_level("INFO", logger="forwardpass.server.access"):
        answers = hostile_requests(c)
    assert all(r.status_code == 404 and len(r.content) < 2000 for r in answers), [r.text[:300] for r in answers]
    lines = [r.getMessage() for r in caplog.records if r.name == "forwardpass.server.access"]
    assert len(lines) == len(answers)
    for line in lines:
        assert not unprintable(line) and len(line) < 1000, line[:300]
    if form == "json":
        entries = [json.loads(line) for line in lines]
        assert all(line.isascii() for line in lines)  # U+2028 and its kind too are escapes
        assert {e["model"] for e in entries if e["path"] == "/tokenize"} == \
            {m if len(m) < 1000 else m[:120] + f"…(+{len(m) - 120} chars)" for m in HOSTILE}
        assert "/v1/models/smollm\n" in {e["path"] for e in entries}
    else:
        text = "\n".join(lines)
        for said in ("a\\nGET /v1/models", "a\\r\\nb", "\\x1b[2J\\x1b[H", "\\x1b]0;owned\\x07", "a\\x00b", "a\\x7fb",
                     "a\\u2028b", "a\\u2029b", "a\\x85b", "GET /v1/models/smollm\\n · 404", "/nope\\x1b[2J",
                     "m" * 120 + f"…(+{200_000 - 120} chars)", "p" * 119 + f"…(+{20_001 - 120} chars)"):
            assert said in text, said
