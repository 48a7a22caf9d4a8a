"""What the replicas' front door reads from a request without Ray: its prompt as the router keys it, and the requests
it refuses because the replicas do not share them (scale/prompt_keys.py, scale/unshared.py)."""

from __future__ import annotations

import json

from forwardpass.scale.prompt_keys import prefix_hashes, route_key
from forwardpass.scale.unshared import unshared


def test_a_responses_request_is_keyed_by_its_instructions_and_input():
    brief = "Be brief and answer in one sentence, plainly, without lists. " * 2  # more than a chunk
    string = json.dumps({"instructions": brief, "input": "x" * 200}).encode()
    items = json.dumps({"instructions": brief, "input": [{"role": "user", "content": "x" * 200}]}).encode()
    chat = json.dumps({"messages": [{"role": "user", "content": "x" * 200}]}).encode()
    assert route_key("/v1/responses", string) == route_key("/v1/responses", items) != ""
    assert route_key("/v1/responses", string).endswith(route_key("/v1/chat/completions", chat))
    other = json.dumps({"instructions": brief, "input": "y" * 200}).encode()
    assert prefix_hashes(route_key("/v1/responses", other))[0] == prefix_hashes(route_key("/v1/responses", string))[0]
    assert prefix_hashes(route_key("/v1/responses", other))[-1] != prefix_hashes(route_key("/v1/responses", string))[-1]
    assert route_key("/v1/responses", b'{"input": 3}') == "" and route_key("/v1/responses", b"[") == ""


def test_a_stored_response_is_refused_by_name_on_replicas():
    named = unshared("POST", "/v1/responses", json.dumps({"input": "hi", "previous_response_id": "resp_1"}).encode())
    assert named.status == 400 and named.param == "previous_response_id" and "--replicas" in named.message
    for method, path in (("GET", "/v1/responses/resp_1"), ("DELETE", "/v1/responses/resp_1"),
                         ("GET", "/v1/responses/resp_1/input_items")):
        refusal = unshared(method, path, b"")
        assert refusal.status == 400 and refusal.code == "unsupported_with_replicas" and path in refusal.message
    assert unshared("POST", "/v1/responses", b'{"input": "hi"}') is None
    assert unshared("POST", "/v1/responses", b"not json") is None
    assert unshared("POST", "/v1/chat/completions", b'{"previous_response_id": "x"}') is None
