"""Structured output and logit bias: the grammar holds token by token (the mask), the text always parses and
validates, through the engine and the official `openai` client, streamed or not, alone or among 16."""

from __future__ import annotations

import concurrent.futures
import json
import re

import jsonschema
import numpy as np
import openai
import pytest
from server_helpers import MODEL, running_server

from forwardpass.errors import ConstraintError, ForwardpassError
from forwardpass.loop import Generation, generate
from forwardpass.sampling import SamplingParams
from forwardpass.structured.constraints import Constraint, Grammars

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 24},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "height_m": {"type": "number"},
        "color": {"enum": ["red", "green", "blue"]},
        "pets": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 3},
        "address": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20},
                                                     "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
                    "required": ["city", "zip"], "additionalProperties": False},
    },
    "required": ["name", "age", "height_m", "color", "pets", "address"],
    "additionalProperties": False,
}
ASK = [{"role": "user", "content": "Describe a person as JSON."}]


@pytest.fixture(scope="module")
def client(stored):
    with running_server(stored) as (url, _):
        yield openai.OpenAI(base_url=url + "/v1", api_key="none", max_retries=0, timeout=300)


def person_format() -> dict:
    return {"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON, "strict": True}}


def test_the_mask_allows_exactly_the_tokens_that_keep_a_match(stored):
    """For `[0-9]+`, the first token may be any token made of digits only (and nothing else); after one, an
    end-of-turn token becomes allowed too."""
    tok = stored.tokenizer
    m = Grammars(tok, stored.config.vocab_size).compile(Constraint("regex", "[0-9]+")).matcher()
    allowed = m.allowed()
    assert isinstance(allowed, np.ndarray) and allowed.dtype == np.bool_ and allowed.shape == (tok.vocab_size,)
    digits = {i for i in range(stored.config.vocab_size) if re.fullmatch(rb"[0-9]+", tok.token_bytes(i))}
    assert set(np.flatnonzero(allowed).tolist()) == digits
    m.advance(min(digits))
    assert all(bool(m.allowed()[e]) for e in tok.eos_ids) and not m.finished


@pytest.mark.parametrize("kind,spec,message", [
    ("json_schema", {"type": "objekt"}, "Invalid type"), ("regex", "(", "invalid regex"),
    ("grammar", 'start: "a" | b', "unknown name"), ("choice", [], "non-empty list"), ("choice", ["a", 3], "list"),
    ("json_schema", "{}", "must be a JSON object"), ("xml", "<a/>", "unknown constraint kind"),
])
def test_a_constraint_that_cannot_be_is_refused_by_name(stored, kind, spec, message):
    with pytest.raises(ConstraintError, match=message):
        Grammars(stored.tokenizer, stored.config.vocab_size).compile(Constraint(kind, spec))


def test_engine_constraints_end_where_the_grammar_does(stored):
    prompt = stored.tokenizer.apply_chat_template([{"role": "user", "content": "Is water wet?"}])
    r = generate(stored, prompt, SamplingParams(temperature=0, max_tokens=20,
                                                constraint=Constraint("choice", ["yes", "no", "maybe so"])))
    assert r.text in ("yes", "no", "maybe so") and r.stop_reason == "stop"  # ended by the grammar, not a token
    r = generate(stored, prompt, SamplingParams(temperature=0, max_tokens=30,
                                                constraint=Constraint("regex", r"(Yes|No), [a-z ]{5,40}\.")))
    assert re.fullmatch(r"(Yes|No), [a-z ]{5,40}\.", r.text) and r.stop_reason == "stop"
    cut = generate(stored, prompt, SamplingParams(temperature=0, max_tokens=3, constraint=Constraint("json_schema",
                                                                                                     PERSON)))
    assert cut.stop_reason == "length" and cut.text.startswith('{"name":') and len(cut.token_ids) == 3
    grammar = 'start: "The answer is " ANSWER "."\nANSWER: "yes" | "no"'
    r = generate(stored, prompt, SamplingParams(temperature=0, max_tokens=20,
                                                constraint=Constraint("grammar", grammar)))
    assert r.text in ("The answer is yes.", "The answer is no.")
    with pytest.raises(ForwardpassError, match="not the naive one"):
        Generation(stored, prompt, SamplingParams(constraint=Constraint("json_object")), naive=True)


def test_sampled_json_still_validates(stored):
    """Every sampling option applies inside the grammar: temperature, top-k/p, penalties, seeds."""
    prompt = stored.tokenizer.apply_chat_template(ASK)
    for seed in range(3):
        r = generate(stored, prompt, SamplingParams(temperature=1.0, top_p=0.95, top_k=50, presence_penalty=0.5,
                                                    seed=seed, max_tokens=200,
                                                    constraint=Constraint("json_schema", PERSON)))
        assert r.stop_reason != "length", r.text  # complete: ended by the grammar or an end-of-turn token
        jsonschema.validate(json.loads(r.text), PERSON)


def test_logit_bias_moves_the_choice(stored):
    prompt = "The three primary colors are"
    plain = generate(stored, prompt, SamplingParams(temperature=0, max_tokens=1)).token_ids[0]
    banned = generate(stored, prompt, SamplingParams(temperature=0, max_tokens=1, logit_bias={plain: -100}))
    forced = generate(stored, prompt, SamplingParams(temperature=0, max_tokens=2, logit_bias={7042: 100}))
    assert banned.token_ids[0] != plain and forced.token_ids == [7042, 7042]
    with pytest.raises(ForwardpassError, match="logit_bias"):
        SamplingParams(logit_bias={5: 101})


def test_json_schema_through_the_openai_client(client):
    """A json_schema with nested objects, arrays, enums, numbers and required fields: the reply parses and
    validates, streamed and not."""
    r = client.chat.completions.create(model=MODEL, messages=ASK, max_tokens=200, temperature=0,
                                       response_format=person_format())
    assert r.choices[0].finish_reason == "stop"
    whole = r.choices[0].message.content
    jsonschema.validate(json.loads(whole), PERSON)
    stream = client.chat.completions.create(model=MODEL, messages=ASK, max_tokens=200, temperature=0,
                                            response_format=person_format(), stream=True)
    streamed = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert streamed == whole
    r = client.chat.completions.create(model=MODEL, messages=ASK, max_tokens=200, temperature=0,
                                       response_format={"type": "json_object"})
    assert isinstance(json.loads(r.choices[0].message.content), dict)


def test_json_schema_among_16_concurrent_requests(client):
    """16 at once, half streamed, half sampled: batching, streaming and sampling keep every reply valid."""
    def one(i: int) -> str:
        kw = {"model": MODEL, "messages": [{"role": "user", "content": f"Describe person number {i} as JSON."}],
              "max_tokens": 200, "response_format": person_format(),
              "temperature": 0 if i % 4 == 0 else 0.8, "seed": i}
        if i % 2:
            return "".join(c.choices[0].delta.content or "" for c in
                           client.chat.completions.create(**kw, stream=True) if c.choices)
        return client.chat.completions.create(**kw).choices[0].message.content

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        replies = list(pool.map(one, range(16)))
    for text in replies:
        jsonschema.validate(json.loads(text), PERSON)


def test_completions_take_vllm_structured_outputs(client):
    kw = {"model": MODEL, "prompt": "My phone number is", "max_tokens": 20, "temperature": 0}
    r = client.completions.create(**kw, extra_body={"structured_outputs": {"regex": r" [0-9]{3}-[0-9]{4}"}})
    assert re.fullmatch(r" [0-9]{3}-[0-9]{4}", r.choices[0].text) and r.choices[0].finish_reason == "stop"
    r = client.completions.create(**kw, extra_body={"structured_outputs": {"choice": [" secret", " unknown"]}})
    assert r.choices[0].text in (" secret", " unknown")
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 999}},
              "required": ["n"], "additionalProperties": False}
    r = client.completions.create(**kw | {"max_tokens": 40}, extra_body={"structured_outputs": {"json": schema}})
    jsonschema.validate(json.loads(r.choices[0].text), schema)
    assert r.choices[0].finish_reason == "stop"


def test_an_invalid_schema_names_its_field(client):
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model=MODEL, messages=ASK, max_tokens=5, response_format={
            "type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object", "required": 5}}})
    assert caught.value.body["param"] == "response_format" and caught.value.body["code"] == "invalid_constraint"


def test_logit_bias_through_the_openai_client(client, stored):
    kw = {"model": MODEL, "prompt": "The three primary colors are", "max_tokens": 3, "temperature": 0}
    r = client.completions.create(**kw, logit_bias={"7042": 100})
    assert r.choices[0].text == stored.tokenizer.decode([7042] * 3)


def test_stop_token_ids_end_before_the_token(client, stored):
    """vLLM's stop_token_ids: generation ends at the first such token, which is not kept."""
    prompt = "The three primary colors are"
    ids = generate(stored, prompt, SamplingParams(temperature=0, max_tokens=8)).token_ids
    at = next(i for i in range(2, len(ids)) if ids[i] not in ids[:i])  # the first chosen at i, not before
    r = client.completions.create(model=MODEL, prompt=prompt, max_tokens=8, temperature=0,
                                  extra_body={"stop_token_ids": [ids[at]]})
    assert r.choices[0].text == stored.tokenizer.decode(ids[:at]) and r.choices[0].finish_reason == "stop"
    assert r.usage.completion_tokens == at
    with pytest.raises(openai.BadRequestError, match="stop_token_ids names token 99999"):
        client.completions.create(model=MODEL, prompt=prompt, max_tokens=2, extra_body={"stop_token_ids": [99999]})
