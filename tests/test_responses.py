"""The Responses API (/v1/responses) through the official `openai` client: its text equals chat's for the same
messages, its stream's events come in OpenAI's order, stored responses are retrieved, listed, continued and deleted,
function tools and structured output go through chat's machinery, and what it cannot do is refused by name."""

from __future__ import annotations

import json

import httpx
import jsonschema
import openai
import pydantic
import pytest
from server_helpers import MODEL, openai_fixtures

from forwardpass.loop import generate
from forwardpass.sampling import SamplingParams
from forwardpass.server.responses_store import ResponseStore, Stored

WEATHER = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 30}}, "required": ["city"],
           "additionalProperties": False}
TOOL = {"type": "function", "name": "get_weather", "description": "The weather in a city", "parameters": WEATHER,
        "strict": True}
GREEDY = {"model": MODEL, "temperature": 0}


server, client = openai_fixtures()  # the module's server on SmolLM2, and the openai client on it


def chat_text(client, messages: list[dict], max_tokens: int) -> str:
    r = client.chat.completions.create(messages=messages, max_tokens=max_tokens, **GREEDY)
    return r.choices[0].message.content


def test_text_equals_chats_for_the_same_messages(client, smollm):
    r = client.responses.create(input="Name a fruit.", max_output_tokens=30, **GREEDY)
    assert r.status == "completed" and r.object == "response" and r.output[0].type == "message"
    assert r.output_text == chat_text(client, [{"role": "user", "content": "Name a fruit."}], 30)
    told = client.responses.create(instructions="Answer in French.", input=[
        {"role": "user", "content": [{"type": "input_text", "text": "Name a color."}]}], max_output_tokens=30, **GREEDY)
    assert told.output_text == chat_text(client, [{"role": "system", "content": "Answer in French."},
                                                  {"role": "user", "content": "Name a color."}], 30)
    assert told.instructions == "Answer in French." and told.temperature == 0


def test_usage_counts_the_tokens(client, smollm):
    messages = [{"role": "user", "content": "Say hi."}]
    r = client.responses.create(input="Say hi.", max_output_tokens=60, **GREEDY)
    prompt = smollm.tokenizer.apply_chat_template(messages)
    want = generate(smollm, prompt, SamplingParams(temperature=0, max_tokens=60))
    assert r.output_text == want.text and r.usage.input_tokens == len(want.prompt_ids)
    assert r.usage.output_tokens == len(want.token_ids) and r.status == "completed" and want.stop_reason == "eos"
    assert r.usage.total_tokens == r.usage.input_tokens + r.usage.output_tokens
    assert r.usage.output_tokens_details.reasoning_tokens == 0 and r.usage.input_tokens_details.cached_tokens >= 0


ORDER = ["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
         "response.output_text.done", "response.content_part.done", "response.output_item.done"]


def test_stream_events_in_openais_order(client):
    whole = client.responses.create(input="Name a fruit.", max_output_tokens=30, **GREEDY)
    with client.responses.stream(input="Name a fruit.", max_output_tokens=30, **GREEDY) as stream:
        events = list(stream)
        final = stream.get_final_response()
    kinds = [e.type for e in events]
    deltas = [e for e in events if e.type == "response.output_text.delta"]
    assert [k for k in kinds if k != "response.output_text.delta"] == ORDER + ["response.completed"]
    assert kinds[4:4 + len(deltas)] == ["response.output_text.delta"] * len(deltas) and deltas
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert "".join(d.delta for d in deltas) == whole.output_text == final.output_text
    item = events[2].item.id
    assert all(e.item_id == item and e.output_index == 0 and e.content_index == 0 for e in deltas)
    assert final.id == events[0].response.id and final.usage.output_tokens == whole.usage.output_tokens
    raw = list(client.responses.create(input="Name a fruit.", max_output_tokens=30, stream=True, **GREEDY))
    assert [e.type for e in raw] == kinds


def test_max_output_tokens_ends_incomplete(client):
    r = client.responses.create(input="Tell me a long story.", max_output_tokens=5, **GREEDY)
    assert r.status == "incomplete" and r.incomplete_details.reason == "max_output_tokens"
    assert r.usage.output_tokens == 5 and r.output[0].status == "incomplete"
    events = list(client.responses.create(input="Tell me a long story.", max_output_tokens=5, stream=True, **GREEDY))
    assert events[-1].type == "response.incomplete"
    assert events[-1].response.incomplete_details.reason == "max_output_tokens"


def test_retrieve_list_delete(client):
    r = client.responses.create(input=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
                                max_output_tokens=10, **GREEDY)
    got = client.responses.retrieve(r.id)
    assert got.id == r.id and got.output_text == r.output_text
    items = client.responses.input_items.list(r.id)
    assert [(i.role, i.content[0].text) for i in items.data] == [("user", "Hi"), ("system", "Be brief.")]
    ascending = client.responses.input_items.list(r.id, order="asc", limit=1)
    assert [i.role for i in ascending.data] == ["system"] and ascending.has_more
    client.responses.delete(r.id)
    with pytest.raises(openai.NotFoundError) as e:
        client.responses.retrieve(r.id)
    assert r.id in e.value.message


def test_previous_response_id_continues_the_conversation(client):
    first = client.responses.create(input="My name is Ada.", max_output_tokens=20, **GREEDY)
    then = client.responses.create(input="What is my name?", previous_response_id=first.id, max_output_tokens=20,
                                   **GREEDY)
    assert then.previous_response_id == first.id
    assert then.output_text == chat_text(client, [{"role": "user", "content": "My name is Ada."},
                                                  {"role": "assistant", "content": first.output_text},
                                                  {"role": "user", "content": "What is my name?"}], 20)


def test_store_false_keeps_nothing(client):
    r = client.responses.create(input="Hi", max_output_tokens=3, store=False, **GREEDY)
    for call in (lambda: client.responses.retrieve(r.id),
                 lambda: client.responses.create(input="Hi", previous_response_id=r.id, **GREEDY)):
        with pytest.raises(openai.NotFoundError) as e:
            call()
        assert r.id in e.value.message
    assert e.value.body["param"] == "previous_response_id"


def test_the_store_forgets_the_least_recently_used():
    store = ResponseStore(2)
    for rid in "abc":
        store.put(Stored({"id": rid}, [], []))
        store.get("a")  # used: kept
    assert list(store.kept) == ["c", "a"]


def test_a_forced_function_call_and_its_output(client):
    ask = "What is the weather in Paris?"
    r = client.responses.create(input=ask, tools=[TOOL], tool_choice="required", max_output_tokens=60, **GREEDY)
    (call,) = r.output
    assert call.type == "function_call" and call.name == "get_weather" and call.call_id
    jsonschema.validate(json.loads(call.arguments), WEATHER)
    named = client.responses.create(input=ask, tools=[TOOL], tool_choice={"type": "function", "name": "get_weather"},
                                    max_output_tokens=60, **GREEDY)
    assert named.output[0].arguments == call.arguments
    answered = [{"type": "function_call_output", "call_id": call.call_id, "output": "18 degrees and sunny"}]
    then = client.responses.create(input=answered, previous_response_id=r.id, tools=[TOOL], max_output_tokens=20,
                                   **GREEDY)
    whole = client.responses.create(input=[{"role": "user", "content": ask}, *r.output, answered[0]],
                                    tools=[TOOL], max_output_tokens=20, **GREEDY)
    assert then.status == whole.status == "completed" and then.output_text == whole.output_text
    events = list(client.responses.create(input=ask, tools=[TOOL], tool_choice="required", max_output_tokens=60,
                                          stream=True, **GREEDY))
    kinds = [e.type for e in events]
    assert kinds[2:] == ["response.output_item.added", "response.function_call_arguments.delta",
                         "response.function_call_arguments.done", "response.output_item.done", "response.completed"]
    assert events[-1].response.output[0].arguments == call.arguments


def test_an_unanswered_call_id_is_refused_by_name(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(input=[{"type": "function_call_output", "call_id": "call_x", "output": "1"}], **GREEDY)
    assert e.value.body["param"] == "input.0.call_id" and "call_x" in e.value.message


def test_a_json_schema_format_validates(client):
    schema = {"type": "object", "properties": {"fruit": {"type": "string", "maxLength": 20}}, "required": ["fruit"],
              "additionalProperties": False}
    r = client.responses.create(input="Name a fruit as JSON.", max_output_tokens=40, **GREEDY,
                                text={"format": {"type": "json_schema", "name": "fruit", "schema": schema}})
    jsonschema.validate(json.loads(r.output_text), schema)
    assert r.text.format.type == "json_schema"
    anything = client.responses.create(input="Name a fruit as JSON.", max_output_tokens=40, **GREEDY,
                                       text={"format": {"type": "json_object"}})
    assert isinstance(json.loads(anything.output_text), dict)


REFUSED = [
    ({"tools": [{"type": "web_search"}]}, "tools.0.type", "web_search"),
    ({"tools": [{"type": "file_search", "vector_store_ids": ["v"]}]}, "tools.0.type", "file_search"),
    ({"tools": [{"type": "code_interpreter", "container": {"type": "auto"}}]}, "tools.0.type", "code_interpreter"),
    ({"tools": [{"type": "computer_use_preview", "display_width": 1, "display_height": 1, "environment": "linux"}]},
     "tools.0.type", "computer_use_preview"),
    ({"background": True}, "background", "True"),
    ({"reasoning": {"effort": "high"}}, "reasoning.effort", "high"),
    ({"include": ["message.output_text.logprobs"]}, "include.0", "message.output_text.logprobs"),
    ({"conversation": "conv_1"}, "conversation", "conversation"),
    ({"prompt": {"id": "pmpt_1"}}, "prompt", "prompt"),
    ({"truncation": "auto"}, "truncation", "auto"),
    ({"seed": 1}, "seed", "seed"),
    ({"input": []}, "input", "at least one"),
    ({"top_logprobs": 2}, "top_logprobs", "2"),
    ({"text": {"verbosity": "low"}}, "text.verbosity", "low"),
    ({"max_output_tokens": 9000}, "max_output_tokens", "9000"),
    ({"service_tier": "flex"}, "service_tier", "service_tier"),
    ({"input": [{"type": "reasoning", "summary": []}]}, "input.0.type", "reasoning"),
    ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]},
     "input.0.content.0.type", "input_image"),
]


@pytest.mark.parametrize(("extra", "param", "named"), REFUSED)
def test_what_it_cannot_do_is_refused_by_name(server, extra, param, named):
    r = httpx.post(server + "/v1/responses", json={"model": MODEL, "input": "Hi"} | extra, timeout=60)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["param"] == param and named in error["message"] and error["type"] == "invalid_request_error"


def test_chat_and_messages_are_unchanged(client, server):
    assert client.chat.completions.create(messages=[{"role": "user", "content": "Hi"}], max_tokens=3, **GREEDY)
    r = httpx.post(server + "/v1/messages", json={"model": MODEL, "max_tokens": 3, "messages": [
        {"role": "user", "content": "Hi"}]}, timeout=60)
    assert r.status_code == 200 and r.json()["type"] == "message"


def test_the_stream_helper_assembles_calls_and_parsed_output(client):
    """responses.stream's own bookkeeping (items by output_index, calls by call_id) accepts the events as sent."""
    with client.responses.stream(input="What is the weather in Paris?", tools=[TOOL], tool_choice="required",
                                 max_output_tokens=60, **GREEDY) as stream:
        final = stream.get_final_response()
    (call,) = final.output
    assert call.type == "function_call" and json.loads(call.arguments)["city"]

    class Fruit(pydantic.BaseModel):
        fruit: str = pydantic.Field(max_length=20)

    with client.responses.stream(input="Name a fruit as JSON.", text_format=Fruit, max_output_tokens=40,
                                 **GREEDY) as stream:
        parsed = stream.get_final_response().output_parsed
    assert isinstance(parsed, Fruit)
