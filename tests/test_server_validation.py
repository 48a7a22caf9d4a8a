"""Every request body that does not validate is a 400 in the API's own error shape naming the field at fault (never
pydantic's 422); JSON types are exact (a boolean is no number); every number has its range; paths and methods no
route serves answer in the same shapes."""

from __future__ import annotations

import json
import re

import openai
import pytest
from fastapi.testclient import TestClient

from forwardpass.engine import Engine, EngineConfig
from forwardpass.sampling_params import MAX_SEED
from forwardpass.server import ServerConfig, build_app
from forwardpass.server.protocol import CompletionRequest

MODEL = "smollm"
ASK = [{"role": "user", "content": "hi"}]
CALL = {"role": "assistant", "content": None, "tool_calls": [
    {"id": "call_1", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}]}


@pytest.fixture(scope="module")
def client(smollm):
    engine = Engine(smollm, EngineConfig(kv_cache_bytes=64 * 2**20))
    engine.start()  # nothing here should reach it; a body wrongly accepted gets its answer rather than hanging
    yield TestClient(build_app(engine, ServerConfig(MODEL)), raise_server_exceptions=False)
    engine.stop()


def openai_error(r, status: int) -> dict:
    assert r.status_code == status, r.text
    body = r.json()
    assert list(body) == ["error"] and set(body["error"]) == {"message", "type", "param", "code"}, body
    assert body["error"]["type"] == {400: "invalid_request_error", 404: "not_found_error",
                                     405: "invalid_request_error"}[status]
    return body["error"]


def anthropic_error(r, status: int) -> dict:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"type", "error"} and body["type"] == "error" and set(body["error"]) == {"type", "message"}
    return body["error"]


REFUSED = [  # (path, body, param, the message's start)
    ("/v1/completions", {"n": 200}, "n", "n must be ≤ 16, got 200"),
    ("/v1/chat/completions", {"logprobs": True, "top_logprobs": 50}, "top_logprobs",
     "top_logprobs must be ≤ 20, got 50"),
    ("/v1/completions", {"max_tokens": "five"}, "max_tokens", "max_tokens: Input should be a valid integer"),
    # a boolean is not a number
    ("/v1/completions", {"max_tokens": True}, "max_tokens", "max_tokens: Input should be a valid integer"),
    ("/v1/completions", {"n": True}, "n", "n: Input should be a valid integer"),
    ("/v1/completions", {"top_k": False}, "top_k", "top_k: Input should be a valid integer"),
    ("/v1/completions", {"seed": True}, "seed", "seed: Input should be a valid integer"),
    ("/v1/completions", {"logprobs": True}, "logprobs", "logprobs: Input should be a valid integer"),
    ("/v1/chat/completions", {"max_completion_tokens": True}, "max_completion_tokens",
     "max_completion_tokens: Input should be a valid integer"),
    ("/v1/completions", {"temperature": True}, "temperature", "temperature: Input should be a valid number"),
    ("/v1/completions", {"stop_token_ids": [True]}, "stop_token_ids.0",
     "stop_token_ids.0: Input should be a valid integer"),
    ("/v1/completions", {"prompt": [True, 5]}, "prompt.0", "prompt.0: Input should be a valid integer"),
    ("/v1/completions", {"stream": 1}, "stream", "stream: Input should be a valid boolean"),
    ("/detokenize", {"tokens": [1, False]}, "tokens.1", "tokens.1: Input should be a valid integer"),
    # ranges
    ("/v1/completions", {"top_k": 10**30}, "top_k", "top_k must be ≤ 2147483647, got 10"),
    ("/v1/completions", {"top_k": -1}, "top_k", "top_k must be ≥ 0, got -1"),
    ("/v1/completions", {"seed": -1}, "seed", "seed must be ≥ 0, got -1"),
    ("/v1/completions", {"seed": 2**64}, "seed", f"seed must be ≤ {MAX_SEED}"),
    ("/v1/completions", {"max_tokens": 0}, "max_tokens", "max_tokens must be ≥ 1, got 0"),
    ("/v1/completions", {"max_tokens": 10**30}, "max_tokens", "max_tokens must be ≤ 2147483647"),
    ("/v1/chat/completions", {"max_completion_tokens": 0}, "max_completion_tokens",
     "max_completion_tokens must be ≥ 1, got 0"),
    ("/v1/completions", {"temperature": -0.5}, "temperature", "temperature must be ≥ 0.0, got -0.5"),
    ("/v1/completions", {"top_p": 0}, "top_p", "top_p must be > 0.0, got 0"),
    ("/v1/completions", {"min_p": 1.5}, "min_p", "min_p must be ≤ 1.0, got 1.5"),
    ("/v1/completions", {"presence_penalty": 3}, "presence_penalty", "presence_penalty must be ≤ 2.0, got 3"),
    ("/v1/completions", {"frequency_penalty": -2.5}, "frequency_penalty", "frequency_penalty must be ≥ -2.0"),
    ("/v1/completions", {"repetition_penalty": 0}, "repetition_penalty", "repetition_penalty must be > 0.0"),
    ("/v1/completions", {"logprobs": 21}, "logprobs", "logprobs must be ≤ 20, got 21"),
    ("/v1/completions", {"n": 0}, "n", "n must be ≥ 1, got 0"),
    ("/v1/completions", {"logit_bias": {"7042": 101}}, "logit_bias.7042", "logit_bias.7042 must be ≤ 100.0, got 101"),
    ("/v1/completions", {"stop_token_ids": [-1]}, "stop_token_ids.0", "stop_token_ids.0 must be ≥ 0, got -1"),
    # logit_bias keys are token ids in ASCII digits ("²" is a digit to str.isdigit, not to int())
    ("/v1/completions", {"logit_bias": {"²": 1}}, "logit_bias",
     "logit_bias: keys are token ids (ASCII digits), got '²'"),
    ("/v1/completions", {"logit_bias": {"-1": 1}}, "logit_bias", "logit_bias: keys are token ids"),
    ("/v1/completions", {"stop": ""}, "stop", "stop: String should have at least 1 character"),
    ("/v1/chat/completions", {"stop": ["\n", ""]}, "stop.1", "stop.1: String should have at least 1 character"),
    # a tool message answers a call an earlier assistant message made
    ("/v1/chat/completions", {"messages": ASK + [{"role": "tool", "tool_call_id": "call_9", "content": "18"}]},
     "messages.1.tool_call_id",
     "messages.1.tool_call_id: 'call_9' answers no tool call of an earlier assistant message"),
    ("/v1/chat/completions", {"messages": ASK + [CALL, {"role": "tool", "tool_call_id": "call_2", "content": "18"}]},
     "messages.2.tool_call_id", "messages.2.tool_call_id: 'call_2' answers no tool call"),
    ("/tokenize", {"messages": [{"role": "tool", "tool_call_id": "call_1", "content": "18"}, CALL]},
     "messages.0.tool_call_id", "messages.0.tool_call_id: 'call_1' answers no tool call"),
    # the body itself
    ("/v1/chat/completions", {"messages": None}, "messages", "messages: Input should be a valid list"),
    ("/v1/chat/completions", {"stream_options": 5}, "stream_options", "stream_options must be a JSON object"),
]


@pytest.mark.parametrize("path,body,param,message", REFUSED, ids=[f"{p} {json.dumps(b)[:60]}" for p, b, *_ in REFUSED])
def test_a_value_that_does_not_validate_is_a_400_naming_its_field(client, path, body, param, message):
    base = {"/v1/completions": {"prompt": "hi", "max_tokens": 1}, "/v1/chat/completions": {"messages": ASK,
                                                                                            "max_tokens": 1}}
    r = client.post(path, json=base.get(path, {}) | body)
    error = openai_error(r, 400)
    assert error["param"] == param and error["message"].startswith(message) and error["code"] is None, error


@pytest.mark.parametrize("raw", [b'{"prompt": "hi", "temperature": NaN}', b'{"prompt": "hi", "top_p": Infinity}',
                                 b'{"prompt": "hi", "temperature": 1e400}'])
def test_numbers_are_finite(client, raw):
    error = openai_error(client.post("/v1/completions", content=raw, headers={"content-type": "application/json"}),
                         400)
    assert error["param"] in ("temperature", "top_p") and "should be a finite number" in error["message"]


def test_the_body_must_be_an_object(client):
    error = openai_error(client.post("/v1/completions", json=[1, 2]), 400)
    assert error["message"] == "the request body must be a JSON object" and error["param"] is None


def test_refusals_keep_their_codes(client):
    error = openai_error(client.post("/v1/completions", json={"prompt": "hi", "echo": True}), 400)
    assert (error["param"], error["code"]) == ("echo", "unsupported_value")
    assert error["message"] == "echo: echoing the prompt back is not implemented"
    error = openai_error(client.post("/v1/completions", json={"prompt": "hi", "best_of": 2, "n": True}), 400)
    assert (error["param"], error["code"]) == ("best_of", "unsupported_field")


def test_a_tool_message_answering_an_earlier_call_is_taken(client):
    r = client.post("/tokenize", json={"messages": ASK + [CALL, {"role": "tool", "tool_call_id": "call_1",
                                                                 "content": "18"}]})
    assert r.status_code == 200, r.text


def test_the_official_client_raises_its_bad_request_error(client):
    """A 422 would reach an application as UnprocessableEntityError; the API's refusals are BadRequestError."""
    api = openai.OpenAI(base_url="http://testserver/v1", api_key="none", http_client=client, max_retries=0)
    for extra in ({"n": 200}, {"max_tokens": True}):
        with pytest.raises(openai.BadRequestError) as caught:
            api.completions.create(model=MODEL, prompt="hi", **{"max_tokens": 1} | extra)
        assert caught.value.body["param"] == next(iter(extra))


def test_choices_past_the_last_seed_wrap_around():
    req = CompletionRequest(prompt="hi", seed=MAX_SEED, n=2)
    assert [req.sampling(1, None, seed_offset=i).seed for i in range(2)] == [MAX_SEED, 0]


MESSAGE = {"model": MODEL, "max_tokens": 1}
USE = {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}]}
IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}


@pytest.mark.parametrize("messages,message", [
    ([{"role": "user", "content": [IMAGE]}],
     "messages.0.content.0: content blocks of type 'image' are not supported: this model reads text"),
    ([{"role": "user", "content": [{"type": "text", "text": "see:"}, {"type": "document", "source": {}}]}],
     "messages.0.content.1: content blocks of type 'document' are not supported: this model reads text"),
    ([{"role": "user", "content": []}], "messages.0.content: a message needs content: a text or at least one block"),
    ([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "x"}]}],
     "messages.0.content.0.tool_use_id: 'toolu_9' answers no tool_use block of an earlier message"),
    (ASK + [USE, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_2", "content": "x"}]}],
     "messages.2.content.0.tool_use_id: 'toolu_2' answers no tool_use block of an earlier message"),
    ([{"role": "user", "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}]}],
     "messages.0.content.0: a tool_use block belongs to an assistant message"),
    ([{"role": "user", "content": [{"type": "tool_use", "id": "toolu_1", "name": "f"}]}],
     "messages.0.content.0.input: Field required"),
    ([{"role": "user", "content": [{"type": "text", "text": "hi", "citations": []}]}],
     "unsupported field 'messages.0.content.0.citations': not a field of this API"),
    ([{"role": "user", "content": [{"text": "hi"}]}],
     "messages.0.content.0: a content block needs its type: text, tool_use or tool_result"),
])
def test_messages_refusals_name_the_block(client, messages, message):
    error = anthropic_error(client.post("/v1/messages", json=MESSAGE | {"messages": messages}), 400)
    assert error == {"type": "invalid_request_error", "message": message}


@pytest.mark.parametrize("extra,message", [
    ({"max_tokens": True}, "max_tokens: Input should be a valid integer"),
    ({"top_k": 10**30}, "top_k must be ≤ 2147483647"),
    ({"temperature": 1.5}, "temperature must be ≤ 1.0, got 1.5"),
    ({"stream": "yes"}, "stream: Input should be a valid boolean"),
    ({"stop_sequences": [""]}, "stop_sequences.0: String should have at least 1 character"),
])
def test_messages_values_are_checked(client, extra, message):
    error = anthropic_error(client.post("/v1/messages", json=MESSAGE | {"messages": ASK} | extra), 400)
    assert error["type"] == "invalid_request_error" and error["message"].startswith(message), error


@pytest.mark.parametrize("method,path,status,message", [
    ("POST", "/v1/foo", 404, "no route POST /v1/foo"),
    ("GET", "/v1/chat/completions", 405, "GET is not allowed on /v1/chat/completions; use POST"),
    ("GET", "/tokenize", 405, "GET is not allowed on /tokenize; use POST"),
    ("POST", "/health", 405, "POST is not allowed on /health; use GET"),
    ("DELETE", "/v1/models", 405, "DELETE is not allowed on /v1/models; use GET"),
    ("GET", "/metricz", 404, "no route GET /metricz"),
])
def test_no_route_answers_in_the_openai_shape(client, method, path, status, message):
    r = client.request(method, path)
    error = openai_error(r, status)
    assert (error["message"], error["param"], error["code"]) == (message, None, None)
    if status == 405:
        assert r.headers["allow"] == message.rsplit(" ", 1)[1]


@pytest.mark.parametrize("method,path,status,kind,message", [
    ("GET", "/v1/messages", 405, "invalid_request_error", "GET is not allowed on /v1/messages; use POST"),
    ("POST", "/v1/messages/batches", 404, "not_found_error", "no route POST /v1/messages/batches"),
])
def test_no_route_under_messages_answers_in_anthropics_shape(client, method, path, status, kind, message):
    assert anthropic_error(client.request(method, path), status) == {"type": kind, "message": message}


@pytest.mark.parametrize("path,body,param,message", [
    ("/v1/completions", {"prompt": "hi", "max_tokens": 9000}, "max_tokens", "max_tokens 9000 does not fit"),
    ("/v1/completions", {"prompt": "hi", "logit_bias": {"49152": 1}}, "logit_bias", "logit_bias names token 49152"),
    ("/v1/chat/completions", {"messages": ASK, "stop_token_ids": [60000]}, "stop_token_ids",
     "stop_token_ids names token 60000"),
])
def test_what_the_engine_refuses_names_the_field(client, path, body, param, message):
    """Values that pass the body's own checks but not the engine's (the context, the vocabulary) name their field."""
    error = openai_error(client.post(path, json=body), 400)
    assert error["param"] == param and error["message"].startswith(message), error


LONG = "x" * 200_000
TOOL = {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}}


@pytest.mark.parametrize("path,body", [
    ("/v1/chat/completions", {"model": LONG, "messages": ASK}),
    ("/v1/completions", {"prompt": "hi", LONG: 1}),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi", LONG: 1}]}),
    ("/v1/completions", {"prompt": "hi", "logit_bias": {LONG: 1}}),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": [{"type": LONG}]}]}),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi", LONG: 1}]}]}),
    ("/v1/chat/completions", {"messages": [{"role": "tool", "content": "x", "tool_call_id": LONG}]}),
    ("/v1/chat/completions", {"messages": ASK, "tools": [TOOL],
                              "tool_choice": {"type": "function", "function": {"name": LONG}}}),
    ("/v1/chat/completions", {"messages": [*ASK, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": LONG, "arguments": "{"}}]}, *ASK]}),
    ("/v1/messages", MESSAGE | {"model": LONG, "messages": ASK}),
    ("/v1/messages", MESSAGE | {"messages": [{"role": "user", "content": [{"type": LONG}]}]}),
    ("/v1/messages", MESSAGE | {"messages": [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": LONG, "content": "x"}]}]}),
    ("/v1/models/" + LONG[:20_000], None),  # a URL as long as a client sends
    ("/v1/" + LONG[:20_000], None),
])
def test_an_error_quotes_what_the_client_sent_cut_to_what_a_reader_needs(client, path, body):
    """A value the client sent (a model id, a field's name, a type, an id, a path) is quoted by its first characters
    and how many more it had, not echoed whole."""
    r = client.post(path, json=body) if body is not None else client.get(path)
    assert 400 <= r.status_code < 500 and len(r.content) < 1000, r.text[:300]
    cut = re.search(r"…\(\+(\d+) chars\)", r.text)
    assert cut and int(cut[1]) > 19_000, r.text


CONTROLS = ["%0A", "%0D%0A", "%0D", "%00", "%09", "%1B", "%7F", "%C2%85", "%C2%9B", "%E2%80%A8", "%E2%80%A9"]


def test_a_path_holding_a_control_character_names_no_route(client):
    """Each route matches its path exactly: the path with a newline after it (which a pattern ending in `$` would
    still match), or any control character in it, is a 404 in the API's shape."""
    from forwardpass.cli.serve_cmd import routes

    for route in routes(client.app):
        method, path = route.split(" ")
        path = path.replace("{model_id}", MODEL).replace("{name}", "index.html")
        for control in CONTROLS:
            for hostile in (path + control, path[:4] + control + path[4:]):
                r = client.request(method, hostile)
                error = (anthropic_error if hostile.startswith("/v1/messages") else openai_error)(r, 404)
                assert error["message"].startswith(f"no route {method} /"), (hostile, error)
