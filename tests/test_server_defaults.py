"""What a request that leaves out its sampling fields gets: the server's flags, else the model file's recommended
sampling (GGUF general.sampling.*), else llama-server's defaults; a field the request sets is its own."""

from __future__ import annotations

import httpx
from server_helpers import MODEL, running_server

from forwardpass import generate
from forwardpass.sampling import SamplingParams
from forwardpass.server.messages import MessagesRequest
from forwardpass.server.protocol import ChatCompletionRequest
from forwardpass.server_defaults import FALLBACK, applied, server_sampling
from forwardpass.weights.gguf_config import recommended

GREEDY = {"temperature": 0.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0, "repetition_penalty": 1.0}


def test_the_flag_wins_then_the_file_then_the_fallback():
    got = server_sampling({"temperature": 0.2, "top_k": None}, {"temperature": 0.6, "top_k": 20, "min_p": 0.1})
    assert got == {"temperature": 0.2, "top_k": 20, "top_p": FALLBACK["top_p"], "min_p": 0.1,
                   "repetition_penalty": FALLBACK["repetition_penalty"]}
    assert server_sampling({}, {}) == FALLBACK


def test_a_files_recommended_sampling_is_read_by_field_name():
    fields = {"general.sampling.temp": 0.6, "general.sampling.top_k": 20, "general.sampling.penalty_repeat": 1.1,
              "general.sampling.top_p": "0.9", "general.sampling.min_p": True, "general.name": "x"}
    assert recommended(fields) == {"temperature": 0.6, "top_k": 20, "repetition_penalty": 1.1}  # numbers only


def test_a_field_the_request_sets_is_its_own_and_the_rest_the_servers():
    defaults = {"temperature": 0.0, "top_k": 40, "min_p": 0.05}
    req = ChatCompletionRequest.model_validate({"messages": [{"role": "user", "content": "Hi"}], "top_k": 3})
    assert applied(req, defaults) == {"temperature": 0.0, "top_k": 3, "min_p": 0.05, "top_p": 1.0,
                                      "repetition_penalty": 1.0}
    assert applied(req, {})["temperature"] == 1.0  # no server defaults: the API's own (OpenAI's 1)
    messages = MessagesRequest.model_validate({"model": MODEL, "max_tokens": 4, "temperature": 0.5,
                                               "messages": [{"role": "user", "content": "Hi"}]})
    # Messages has no min_p: the server's applies
    assert applied(messages, defaults) == {"temperature": 0.5, "top_k": 40, "min_p": 0.05, "top_p": 1.0}


def test_a_bare_request_gets_the_servers_defaults(smollm):
    """A server told to be greedy answers a request that says nothing of sampling with the greedy text, on both APIs;
    a request that sets a temperature samples (seeded: the library's draw with the server's other defaults)."""
    prompt = "What is the capital of France? Answer in one word."
    ids = smollm.tokenizer.encode_chat([{"role": "user", "content": prompt}], True, None)
    want = generate(smollm, ids, SamplingParams(max_tokens=12, **GREEDY)).text
    with running_server(smollm, sampling=GREEDY | {"top_k": 40}) as (url, _):
        chat = httpx.post(url + "/v1/chat/completions", timeout=120, json={
            "model": MODEL, "max_tokens": 12, "messages": [{"role": "user", "content": prompt}]}).json()
        assert chat["choices"][0]["message"]["content"] == want  # top_k 40 leaves the argmax the argmax
        msg = httpx.post(url + "/v1/messages", timeout=120, json={
            "model": MODEL, "max_tokens": 12, "messages": [{"role": "user", "content": prompt}]}).json()
        assert msg["content"][0]["text"] == want
        seeded = httpx.post(url + "/v1/chat/completions", timeout=120, json={
            "model": MODEL, "max_tokens": 12, "temperature": 1.0, "seed": 3,
            "messages": [{"role": "user", "content": prompt}]}).json()
    drawn = generate(smollm, ids, SamplingParams(max_tokens=12, **GREEDY | {"temperature": 1.0, "top_k": 40},
                                                 seed=3)).text
    assert seeded["choices"][0]["message"]["content"] == drawn
