"""The Python API's chat and completion helpers: the same tokens the engine gives for the same ids, whole or streamed,
and clear errors for what they cannot take."""

from __future__ import annotations

import pytest

from forwardpass import ForwardpassError, SamplingParams, generate

MESSAGES = [{"role": "user", "content": "Name a fruit."}]


def test_chat_answers_through_the_template_as_generate_does(smollm):
    ids = smollm.tokenizer.encode_chat(MESSAGES, True, None)
    want = generate(smollm, ids, SamplingParams(temperature=0, max_tokens=16))
    got = smollm.chat(MESSAGES, temperature=0, max_tokens=16)
    assert (got.token_ids, got.text, got.prompt_ids) == (want.token_ids, want.text, ids)
    stream = smollm.chat(MESSAGES, stream=True, temperature=0, max_tokens=16)
    assert "".join(stream) == want.text and stream.result.token_ids == want.token_ids


def test_complete_takes_text_or_ids_and_sampling_by_name(smollm):
    want = generate(smollm, "Once upon a time", SamplingParams(temperature=0.7, seed=4, max_tokens=12))
    assert smollm.complete("Once upon a time", temperature=0.7, seed=4, max_tokens=12).text == want.text
    assert smollm.complete(smollm.encode("Once upon a time"), temperature=0.7, seed=4, max_tokens=12).text == want.text


@pytest.mark.parametrize("call,message", [
    (lambda fp: generate(fp, MESSAGES), r"use fp\.chat\(messages\)"),
    (lambda fp: fp.complete(MESSAGES), r"use fp\.chat\(messages\)"),
    (lambda fp: fp.chat("Name a fruit."), "messages must be a list"),
    (lambda fp: fp.chat(MESSAGES, temprature=0), "temprature"),
    (lambda fp: fp.chat(MESSAGES, temperature=-1), "temperature must be ≥ 0.0"),
])
def test_what_they_cannot_take_is_refused_by_name(smollm, call, message):
    with pytest.raises((ForwardpassError, TypeError), match=message):
        call(smollm)
