"""The loop (seed §04): cached and naive generation, stop conditions, streaming, work counters."""

from __future__ import annotations

import pytest
import torch

from forwardpass import Transformer, preset
from forwardpass.errors import ContextLengthError, ForwardpassError
from forwardpass.loaded import LoadedModel
from forwardpass.loop import Generation, generate
from forwardpass.sampling import SamplingParams
from forwardpass.text.detokenize import TextStream

GREEDY = SamplingParams(temperature=0, max_tokens=24)


@pytest.mark.parametrize("prompt", ["The three primary colors are", "def add(a, b):\n"])
def test_cached_and_naive_agree_on_real_model(smollm, prompt):
    cached = generate(smollm, prompt, GREEDY)
    naive = generate(smollm, prompt, GREEDY, naive=True)
    assert cached.token_ids == naive.token_ids and cached.text == naive.text
    P, n = len(cached.prompt_ids), len(cached.work)
    assert cached.work == [P] + [1] * (n - 1)  # prefill once, then the newest token only
    assert naive.work == [P + i for i in range(n)]  # the whole prefix, every step


def toy_pipeline() -> LoadedModel:
    torch.manual_seed(0)
    return LoadedModel(Transformer(preset("toy")).eval(), None, "toy", {})


@pytest.mark.parametrize("P,n,ratio", [(5, 1, 5.0), (5, 12, 10.5), (20, 100, 69.5)])
def test_work_counters_give_the_seeds_ratios(P, n, ratio):
    """Seed §04: naive step i runs P + i tokens; cached runs only the newest. The article counts the cached
    side as one token per generated token (the prompt already in the cache); counting the cached prefill too
    gives the smaller ratio below."""
    fp = toy_pipeline()
    prompt = list(range(100, 100 + P))
    params = SamplingParams(temperature=0, max_tokens=n)
    cached, naive = generate(fp, prompt, params), generate(fp, prompt, params, naive=True)
    assert cached.token_ids == naive.token_ids and len(cached.work) == n
    assert sum(naive.work) / len(cached.work) == ratio
    assert sum(naive.work) / sum(cached.work) == (P * n + n * (n - 1) / 2) / (P + n - 1)


def test_streamed_deltas_make_the_text(smollm):
    g = Generation(smollm, "Once upon a time", SamplingParams(temperature=0, max_tokens=30))
    deltas = list(g)
    assert "".join(deltas) == g.result.text == smollm.tokenizer.decode(g.result.token_ids)
    assert len(deltas) > 10 and g.result.stop_reason == "length" and len(g.result.token_ids) == 30


def test_stop_string_across_tokens(smollm):
    full = generate(smollm, "The three primary colors are", GREEDY)
    assert "RGB color" in full.text
    pieces = [smollm.tokenizer.piece(i) for i in full.token_ids]
    assert " RGB" in pieces and " color" in pieces  # the stop string below spans two tokens
    g = Generation(smollm, "The three primary colors are", SamplingParams(temperature=0, max_tokens=24,
                                                                          stop=["RGB col"]))
    deltas = list(g)
    r = g.result
    assert r.stop_reason == "stop" and r.text == full.text[:full.text.index("RGB col")]
    assert "".join(deltas) == r.text and not any("RGB" in d for d in deltas)  # no partial stop string shown


def test_stop_prefix_that_never_completes_is_flushed(smollm):
    r = generate(smollm, "The three primary colors are", SamplingParams(temperature=0, max_tokens=24,
                                                                        stop=["RGB color wheel"]))
    assert r.stop_reason == "length" and r.text == generate(smollm, "The three primary colors are", GREEDY).text


def test_stops_at_end_of_turn(smollm):
    prompt = smollm.tokenizer.apply_chat_template([{"role": "user", "content": "Name a fruit."}])
    r = generate(smollm, prompt, SamplingParams(temperature=0, max_tokens=64))
    assert r.stop_reason == "eos" and 2 not in r.token_ids and len(r.token_ids) < 64
    assert "<|im_end|>" not in r.text


def test_utf8_never_split():
    class Bytes:  # a tokenizer whose tokens are single bytes of UTF-8
        eos_ids: list[int] = []

        def decode(self, ids):
            return bytes(ids).decode("utf-8", errors="replace")

    s = TextStream(Bytes())
    shown = [s.add(b) for b in "né 😀!".encode()]
    assert "".join(shown) + s.flush() == "né 😀!" and not any("\ufffd" in d for d in shown)


def test_stop_string_hold_back_unit():
    class Chars:
        def decode(self, ids):
            return "".join(chr(i) for i in ids)

    s = TextStream(Chars(), stop=["END"])
    out = [s.add(ord(c)) for c in "abcENxEND"]
    assert out == ["a", "b", "c", "", "", "ENx", "", "", ""] and s.stopped == "END" and s.text == "abcENx"


def test_streamed_text_is_the_whole_decode(smollm):
    """Decoding only the ids since the last settled character gives, piece by piece, exactly the text of all of
    them: accents, emoji, CJK, a byte split across tokens."""
    text = "Voilà: naïve café ☕, 東京 😀😀 — done.\n  indented\tand tabbed ⚽!"
    ids = smollm.encode(text)
    s = TextStream(smollm.tokenizer)
    shown = [s.add(i) for i in ids]
    assert "".join(shown) + s.flush() == smollm.tokenizer.decode(ids) == text
    assert not any("\ufffd" in d for d in shown)


def test_streamed_text_keeps_spaces_a_tokenizer_strips_at_the_start():
    class Metaspace:  # like SentencePiece: the decoded text loses its leading space
        def decode(self, ids):
            return "".join(chr(i) for i in ids).lstrip(" ")

    s = TextStream(Metaspace())
    shown = [s.add(ord(c)) for c in " a b  c"]
    assert "".join(shown) + s.flush() == "a b  c"


def test_logprobs_in_result(smollm):
    r = generate(smollm, "The cat", SamplingParams(temperature=0, max_tokens=3, logprobs=2))
    assert len(r.logprobs) == 3
    for lp, tid in zip(r.logprobs, r.token_ids, strict=True):
        assert lp.token_id == tid and lp.top[0][0] == tid and lp.logprob == pytest.approx(lp.top[0][1])


def test_seeded_generation_is_reproducible(smollm):
    params = SamplingParams(temperature=0.9, top_k=50, seed=42, max_tokens=16)
    first, second = (generate(smollm, "Tell me a story", params) for _ in range(2))
    assert first.token_ids == second.token_ids


def test_bad_prompts(smollm):
    with pytest.raises(ForwardpassError, match="the prompt is empty"):
        generate(smollm, "", GREEDY)
    with pytest.raises(ContextLengthError, match="leaving no room to generate"):
        generate(smollm, [5] * 8192, GREEDY)


def test_stops_at_context_length():
    fp = toy_pipeline()
    r = generate(fp, list(range(1020)), SamplingParams(temperature=0, max_tokens=50))
    assert r.stop_reason == "length" and len(r.token_ids) == 4  # context 1024


@pytest.mark.parametrize("params", [
    SamplingParams(temperature=0, max_tokens=13),  # not a whole number of bursts
    SamplingParams(temperature=0, max_tokens=64),  # ends at the end-of-turn token inside a burst
    SamplingParams(temperature=0, max_tokens=40, stop=["."]),  # a stop string inside a burst
])
def test_greedy_bursts_generate_what_single_steps_do(smollm, monkeypatch, params):
    """Plain greedy runs up to BURST native steps per call; every result is the one a step per call gives."""
    from forwardpass.engine import step_plan as generation  # where the cached loop's bursts are set
    prompt = smollm.tokenizer.apply_chat_template([{"role": "user", "content": "Write two sentences about the sea."}])
    burst = Generation(smollm, prompt, params)
    deltas = list(burst)
    monkeypatch.setattr(generation, "BURST", 1)
    single = generate(smollm, prompt, params)
    b = burst.result
    assert (b.token_ids, b.text, b.stop_reason, b.work) == (single.token_ids, single.text, single.stop_reason,
                                                             single.work)
    assert "".join(deltas) == b.text and len(b.token_ids) > 5
    assert b.stop_reason == {13: "length", 64: "eos", 40: "stop"}[params.max_tokens]
