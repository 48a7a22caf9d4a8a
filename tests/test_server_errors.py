"""Bad requests get OpenAI-style JSON errors with the right status, and the server keeps serving."""

from __future__ import annotations

import httpx
import pytest
from server_helpers import MODEL, running_server

KEY = "sk-secret"


@pytest.fixture(scope="module")
def url(smollm):
    with running_server(smollm, api_key=KEY, max_body_bytes=4096) as (base, _):
        yield base


def post(url: str, path: str, body=None, raw: bytes | None = None, key: str | None = KEY) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    if raw is not None:
        return httpx.post(url + path, content=raw, headers=headers | {"content-type": "application/json"}, timeout=60)
    return httpx.post(url + path, json=body, headers=headers, timeout=60)


CASES = [
    ("malformed JSON", "/v1/completions", None, b'{"prompt": "hi",', KEY, 400, "not valid JSON"),
    ("no API key", "/v1/completions", {"prompt": "hi"}, None, "", 401, "invalid or missing API key"),
    ("wrong API key", "/v1/chat/completions", {"messages": []}, None, "sk-wrong", 401, "invalid or missing API key"),
    ("unknown model", "/v1/completions", {"model": "gpt-9", "prompt": "hi"}, None, KEY, 404, "'gpt-9' does not exist"),
    ("prompt past context", "/v1/completions", {"model": MODEL, "prompt": list(range(10, 8300))}, None, KEY, 413,
     "exceeds the limit"),
    ("max_tokens cannot fit", "/v1/completions", {"prompt": "hi", "max_tokens": 9000}, None, KEY, 400,
     "max_tokens 9000 does not fit"),
    ("negative temperature", "/v1/completions", {"prompt": "hi", "temperature": -1}, None, KEY, 400,
     "temperature must be ≥ 0.0"),
    ("top_p out of range", "/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}], "top_p": 2},
     None, KEY, 400, "top_p must be ≤ 1.0"),
    ("empty messages", "/v1/chat/completions", {"messages": []}, None, KEY, 400, "at least one message"),
    ("wrong type", "/v1/completions", {"prompt": "hi", "max_tokens": "many"}, None, KEY, 400, "max_tokens"),
    ("missing field", "/v1/chat/completions", {"model": MODEL}, None, KEY, 400, "messages: Field required"),
    ("oversized body", "/v1/completions", {"prompt": "x" * 10000}, None, KEY, 413, "exceeds the limit of 4096"),
    ("token id out of range", "/v1/completions", {"prompt": [1, 49152]}, None, KEY, 400, "token id 49152"),
    ("bad n", "/v1/completions", {"prompt": "hi", "n": 0}, None, KEY, 400, "n must be ≥ 1, got 0"),
    ("too many prompts", "/v1/completions", {"prompt": [[1]] * 65}, None, KEY, 400,
     "prompt: at most 64 prompts a request"),
    ("a list of prompts, one empty", "/v1/completions", {"prompt": ["hi", ""]}, None, KEY, 400, "the prompt is empty"),
    ("a list of prompts, one too long", "/v1/completions", {"prompt": [[1], list(range(10, 8300))]}, None, KEY, 413,
     "exceeds the limit"),
    ("a list mixing texts and ids", "/v1/completions", {"prompt": ["hi", 5]}, None, KEY, 400, "prompt"),
    ("a schema that is not one", "/v1/chat/completions",
     {"messages": [{"role": "user", "content": "hi"}],
      "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "objekt"}}}},
     None, KEY, 400, "invalid json schema: Invalid type: objekt"),
    ("a regex that is not one", "/v1/completions", {"prompt": "hi", "structured_outputs": {"regex": "[0-9"}},
     None, KEY, 400, "invalid regex"),
    ("two constraints", "/v1/completions", {"prompt": "hi", "response_format": {"type": "json_object"},
                                            "structured_outputs": {"regex": "a+"}},
     None, KEY, 400, "give response_format or structured_outputs, not both"),
    ("a json_schema format without its schema", "/v1/chat/completions",
     {"messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "json_schema"}},
     None, KEY, 400, "needs a json_schema"),
    ("functions", "/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}], "functions": []}, None,
     KEY, 400, "unsupported field 'functions': the deprecated function calling is not implemented: use tools"),
    ("logit_bias past the vocabulary", "/v1/completions", {"prompt": "hi", "logit_bias": {"49152": 5}}, None, KEY,
     400, "logit_bias names token 49152"),
    ("logit_bias too strong", "/v1/completions", {"prompt": "hi", "logit_bias": {"7042": -101}}, None, KEY, 400,
     "logit_bias.7042 must be ≥ -100.0"),
    ("logit_bias key not an id", "/v1/completions", {"prompt": "hi", "logit_bias": {"cat": 1}}, None, KEY, 400,
     "logit_bias: keys are token ids"),
    ("a made-up field", "/v1/completions", {"prompt": "hi", "temprature": 0}, None, KEY, 400,
     "unsupported field 'temprature': not a field of this API"),
    ("a message field", "/v1/chat/completions", {"messages": [{"role": "user", "content": "hi", "name": "ann"}]},
     None, KEY, 400, "unsupported field 'messages.0.name'"),
    ("a stream option", "/v1/completions", {"prompt": "hi", "stream": True,
                                            "stream_options": {"include_usage": True, "continuous_usage": True}},
     None, KEY, 400, "unsupported field 'stream_options.continuous_usage'"),
]


@pytest.mark.parametrize("name,path,body,raw,key,status,message", CASES, ids=[c[0] for c in CASES])
def test_error(url, name, path, body, raw, key, status, message):
    r = post(url, path, body, raw, key)
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert message in error["message"] and error["type"]


def test_prompt_past_context_in_a_small_body(smollm):
    with running_server(smollm) as (base, _):
        r = httpx.post(base + "/v1/completions", json={"prompt": "word " * 8300, "max_tokens": 1}, timeout=60)
        assert r.status_code == 400 and r.json()["error"]["code"] == "context_length_exceeded"
        assert "the context length is 8192" in r.json()["error"]["message"]


def test_still_serving_after_errors(url):
    for _, path, body, raw, key, *_ in CASES:
        post(url, path, body, raw, key)
    r = post(url, "/v1/completions", {"prompt": "The three primary colors are", "max_tokens": 3, "temperature": 0})
    assert r.status_code == 200 and r.json()["choices"][0]["text"] == " the primary colors"


def test_an_unsupported_field_is_named_through_the_official_client(url):
    """The error reaches an application as the client's BadRequestError, with the field in `param`."""
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=url + "/v1", api_key=KEY)
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}], max_tokens=3,
                                       service_tier="flex")
    assert caught.value.body["param"] == "service_tier" and caught.value.body["code"] == "unsupported_field"
    ok = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}], max_tokens=2,
                                        user="ann")  # accepted: it changes nothing generated
    assert ok.choices[0].message.content is not None
