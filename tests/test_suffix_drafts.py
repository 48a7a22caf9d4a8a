"""Drafts that learn across requests (engine/suffix_drafts.py): the history's drafts (the continuation most often seen
after the longest matching suffix, cut where its candidates disagree), its bounds, partitions that never share a draft
(API keys, end users, models), and the engine's output token for token the same with and without drafting from it —
greedy and seeded sampling, penalties, structured output, log-probabilities — while its drafts are really kept."""

from __future__ import annotations

import hashlib

import httpx
import pytest
from server_helpers import running_server
from starlette.requests import Request
from test_speculation import FixedCost, forced_call, kept, needs_kernels

from forwardpass.engine import Engine, EngineConfig
from forwardpass.engine.speculation import TRUSTED, Drafter, Lookup
from forwardpass.engine.suffix_drafts import END, KEY, History, SuffixDrafts
from forwardpass.sampling import SamplingParams
from forwardpass.server.auth import partition
from forwardpass.structured.constraints import Constraint


def test_the_continuation_most_often_seen_after_the_longest_suffix_is_drafted():
    h = History()
    h.add([1, 2, 3, 4, 5, 6])
    h.add([8, 2, 3, 4, 5, 7])
    h.add([9, 2, 3, 4, 5, 7])
    assert h.propose([0, 2, 3, 4], 8) == [5, 7]  # three candidates: 5 by all, then 7 by two of three
    assert h.propose([1, 2, 3, 4], 8) == [5, 6]  # the longest suffix (1, 2, 3, 4) leaves one candidate
    assert h.propose([0, 2, 3, 4], 1) == [5] and h.propose([2, 3, 4], 0) == []
    assert h.propose([3, 4], 4) == []  # shorter than KEY: nothing matches
    assert h.propose([4, 5, 6], 4) == []  # a stream's end is never crossed into the next
    split = History()
    for tail in ([6, 1], [7, 1], [8, 1]):
        split.add([1, 2, 3, 5, *tail])
    assert split.propose([1, 2, 3], 4) == [5]  # three ways after 5, none with MIN_SHARE of them: the draft stops
    recent = History()
    recent.add([1, 2, 3, 4])
    recent.add([1, 2, 3, 9])
    assert recent.propose([1, 2, 3], 2) == [9]  # a tie: the most recent


def index(h: History) -> dict[tuple[int, ...], list[int]]:
    """The index rebuilt from the tokens the history keeps."""
    places: dict[tuple[int, ...], list[int]] = {}
    first, at = h.start - h.base, h.start
    for n in h.lengths:
        stream = h.tokens[first:first + n]
        for i in range(KEY, n):
            places.setdefault(tuple(stream[i - KEY:i]), []).append(at + i)
        first, at = first + n, at + n
    return places


def test_the_history_is_bounded_and_forgets_its_oldest_streams_whole():
    h = History(limit=40)
    for i in range(30):
        h.add([i % 5, 1, 2, 3, 4, i % 7, 10 + i])
        assert h.size <= 40 and h.places == index(h)
        assert h.tokens[h.start - h.base - 1:h.start - h.base] in ([], [END])  # what it keeps begins a stream
    assert h.size == 40 and len(h.lengths) == 5 and len(h.tokens) <= 2 * 40
    assert h.propose([0, 1, 2, 3, 4], 3) == [25 % 7, 35]  # only the five latest streams draft
    long = History(limit=40)
    long.add(list(range(100)))
    assert long.size == 101  # a stream longer than the limit is kept alone (up to STREAM_TOKENS)
    assert long.propose([97, 98, 99], 2) == [] and long.propose([96, 97, 98], 2) == [99]


def test_partitions_never_draft_from_each_other_and_are_bounded():
    drafts = SuffixDrafts("model.gguf", partitions=2)
    drafts.add("alice", [1, 2, 3, 4, 5])
    assert drafts.partition("alice").propose([1, 2, 3], 4) == [4, 5]
    assert drafts.partition("bob").propose([1, 2, 3], 4) == []  # alice's text is never bob's draft
    assert drafts.partition("").propose([1, 2, 3], 4) == []  # nor the shared partition's
    assert list(drafts.histories) == [("model.gguf", "bob"), ("model.gguf", "")]  # alice, least recent, dropped
    other = SuffixDrafts("other.gguf")
    drafts.add("bob", [1, 2, 3, 9])
    assert other.partition("bob").propose([1, 2, 3], 4) == []  # another model's engine: its own histories


def test_the_history_is_a_source_of_its_own_with_its_own_odds():
    h = History()
    h.add([7, 8, 9, 1, 2, 3, 4, 5])
    d = Drafter(history=h)
    tokens = [0, 1, 2, 3]  # the lookup finds nothing here; the history does
    assert d.propose(tokens, 8, 0.0) == [4, 5] and d.source == "history"
    assert d.propose(tokens, 0, 0.0) == [] and d.source == "lookup"  # no room: not even looked up
    d.propose(tokens, 8, 0.0)
    for _ in range(3):
        d.update(2, 0)
    assert d.odds["history"].p < d.odds["lookup"].p
    both = [1, 2, 3, 6, 1, 2, 3]  # the lookup offers (6, 1, 2, 3 …), the history (4, 5): the likelier drafts
    assert Drafter(history=h, odds=d.odds).propose(both, 8, 0.0)[0] == 6
    d.odds["lookup"].update(4, 0)
    d.odds["history"].update(2, 2)
    d.odds["history"].update(2, 2)
    assert Drafter(history=h, odds=d.odds).propose(both, 8, 0.0) == [4, 5]


def test_a_long_match_in_the_history_drafts_before_the_last_ngram():
    """The request's lookup follows its last 3 tokens' latest occurrence; the history's draft follows the same 9 tokens
    seen before, and drafts instead, however the two sources' odds stand."""
    text = [20, 21, 22, 23, 24, 25, 1, 2, 3, 6, 0, 20, 21, 22, 23, 24, 25, 1, 2, 3]
    assert Lookup().propose(text, 2) == [6, 0]
    h = History()
    h.add([20, 21, 22, 23, 24, 25, 1, 2, 3, 4, 5])
    assert h.match(text, 8) == ([4, 5], 9) and TRUSTED <= 9
    d = Drafter(history=h)
    d.odds["lookup"].update(2, 2)
    assert d.propose(text, 8, 0.0) == [4, 5] and d.source == "history deep"  # a deep match: DEEP_MATCH or more
    shallow = History()
    shallow.add([9, 2, 3, 4, 5])  # only (1, 2, 3)'s last two tokens and the key match: the likelier source drafts
    assert shallow.match(text, 8) == ([], 0)
    shallow.add([8, 1, 2, 3, 4, 5])
    assert shallow.match(text, 8) == ([4, 5], 3)
    assert Drafter(history=shallow, odds=d.odds).propose(text, 8, 0.0)[0] == 6


def test_how_often_history_drafts_were_kept_carries_over_to_the_next_request():
    h = History()
    h.add([7, 8, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11])
    first = Drafter()
    first.attach(h)
    assert first.propose([0, 1, 2, 3], 8, 0.3) == [4]  # the prior: one token
    for _ in range(4):
        first.update(1, 1)
    assert h.odds.p == first.odds["history"].p > 0.8
    later = Drafter()
    later.attach(h)
    assert len(later.propose([0, 1, 2, 3], 8, 0.3)) > 1  # starts where the last request's drafts ended
    later.update(8, 0)
    assert later.odds["history"].p < first.odds["history"].p and h.odds is not later.odds["history"]


def test_a_request_partition_is_its_key_and_its_user():
    def request(**headers) -> Request:
        return Request({"type": "http", "headers": [(k.replace("_", "-").encode(), v.encode())
                                                    for k, v in headers.items()]})

    digest = hashlib.sha256(b"k1").hexdigest()[:16]
    assert partition(request(authorization="Bearer k1"), "k1", None) == digest
    assert partition(request(x_api_key="k1"), "k1", None) == digest  # either header, one key: one partition
    assert partition(request(authorization="Bearer k1"), "k1", "alice") == f"{digest}/alice"
    assert partition(request(authorization="Bearer k2"), "k2", "alice") != f"{digest}/alice"
    assert partition(request(authorization="Bearer anything"), None, None) == ""  # no keys: one shared partition
    assert partition(request(), None, "alice") == "/alice"
    two = ("k1", "k2")  # a server of two keys: each its own partition, whichever header carries it
    assert partition(request(x_api_key="k2"), two, None) == hashlib.sha256(b"k2").hexdigest()[:16]
    assert partition(request(authorization="Bearer k1"), two, None) == digest


def drafting_engine(stored, speculative: str) -> Engine:
    engine = Engine(stored, EngineConfig(kv_cache_bytes=256 * 2**20, speculative=speculative))
    engine.scheduler.planner.cost = FixedCost()
    return engine


def session(engine: Engine, rounds: list[list[tuple[list[int], SamplingParams, str]]]) -> list[list]:
    """Rounds of requests (prompt, params, partition), each round run to its end before the next is submitted (so
    that it may draft from the ones before); every request's outputs, in order."""
    outs: dict[str, list] = {}
    ids = []
    for requests in rounds:
        ids += [engine.submit(p, q, lambda o: outs.setdefault(o.request_id, []).append(o), partition=part)
                for p, q, part in requests]
        engine.run_until_done()
    return [[(o.token_id, o.text, o.logprob, o.finish_reason, o.stop_string) for o in outs[i]] for i in ids]


def chat(stored, content: str) -> list[int]:
    return stored.encode(stored.tokenizer.apply_chat_template([{"role": "user", "content": content}]))


STORY = "Write a story about a fox who learns to sail."


@needs_kernels
def test_a_repeated_request_drafts_from_the_first_and_changes_nothing(stored):
    """Free prose, asked again: its own text offers little, the first answer nearly all of it. Every mode's output
    is the one without drafting."""
    prompt = chat(stored, STORY)
    schema = {"type": "object", "properties": {"fox": {"type": "string"}, "boat": {"type": "string"}},
              "required": ["fox", "boat"], "additionalProperties": False}
    first = [(prompt, SamplingParams(temperature=0, max_tokens=60, ignore_eos=True), "")]
    again = [(prompt, p, "") for p in (
        SamplingParams(temperature=0, max_tokens=60, ignore_eos=True, logprobs=2),
        SamplingParams(temperature=0.7, seed=4, max_tokens=40, logprobs=1),
        SamplingParams(temperature=0, max_tokens=40, repetition_penalty=1.2, presence_penalty=0.3,
                       frequency_penalty=0.2, stop=["sail"]),
        SamplingParams(temperature=0, max_tokens=50, constraint=Constraint("json_schema", schema)),
        SamplingParams(temperature=0, max_tokens=50, constraint=forced_call()))]
    engines = {mode: drafting_engine(stored, mode) for mode in ("off", "ngram", "suffix")}
    outs = {mode: session(engine, [first, again[:1], again[1:]]) for mode, engine in engines.items()}
    assert outs["suffix"] == outs["off"] == outs["ngram"]
    gained = kept(engines["suffix"])[1] - kept(engines["ngram"])[1]
    assert gained >= 0.6 * 60  # the second greedy answer, drafted from the first, kept nearly whole


def accepted_of(engine: Engine, rounds) -> float:
    """The drafted tokens the last round kept, the rounds run in turn."""
    session(engine, rounds[:-1])
    before = kept(engine)[1]
    session(engine, rounds[-1:])
    return kept(engine)[1] - before


@needs_kernels
def test_a_partition_never_drafts_from_another(stored):
    """Bob asks what Alice asked: drafting exactly as by prompt lookup alone (his own history is empty), never from
    Alice's answer, which Alice herself drafts from."""
    prompt = chat(stored, STORY)
    params = SamplingParams(temperature=0, max_tokens=48, ignore_eos=True)
    alice, bob, alice_again = [(prompt, params, "alice")], [(prompt, params, "bob")], [(prompt, params, "alice")]
    alone = accepted_of(drafting_engine(stored, "ngram"), [alice, bob])
    engine = drafting_engine(stored, "suffix")
    assert accepted_of(engine, [alice, bob]) == alone
    assert accepted_of(engine, [alice_again]) > alone + 0.5 * 48
    histories = engine.outputs.history.histories
    assert set(histories) == {(stored.source, "alice"), (stored.source, "bob")}
    bob_text, alice_text = histories[(stored.source, "bob")].tokens, histories[(stored.source, "alice")].tokens
    assert len(alice_text) == 2 * len(bob_text) and alice_text == 2 * bob_text  # his own request, hers twice


@needs_kernels
def test_the_server_keeps_each_key_and_user_apart(stored):
    """Requests through the server land in the partition of the key they present and the user they name, OpenAI's
    `user` and Anthropic's `metadata.user_id` alike."""
    config = EngineConfig(kv_cache_bytes=64 * 2**20)
    with running_server(stored, config, api_key="k1") as (url, engine):
        headers = {"authorization": "Bearer k1"}
        for user in ("alice", "bob"):
            r = httpx.post(f"{url}/v1/chat/completions", headers=headers, timeout=120, json={
                "messages": [{"role": "user", "content": f"Say hello to {user}."}], "max_tokens": 8,
                "temperature": 0, "user": user})
            assert r.status_code == 200, r.text
        r = httpx.post(f"{url}/v1/messages", headers={"x-api-key": "k1"}, timeout=120, json={
            "model": "smollm", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4,
            "metadata": {"user_id": "carol"}})
        assert r.status_code == 200, r.text
        digest = hashlib.sha256(b"k1").hexdigest()[:16]
        histories = engine.outputs.history.histories
        assert set(histories) == {(stored.source, f"{digest}/{u}") for u in ("alice", "bob", "carol")}
        alice = stored.tokenizer.decode(histories[(stored.source, f"{digest}/alice")].tokens[:-1])
        bob = stored.tokenizer.decode(histories[(stored.source, f"{digest}/bob")].tokens[:-1])
        assert "alice" in alice and "alice" not in bob and "bob" in bob


@needs_kernels
def test_two_keys_never_draft_from_each_other_through_the_server(stored):
    """A server of two keys: the same question under each, the second key's drafting is prompt lookup's alone (its
    partition holds nothing of the first's answer), and the first key asking again drafts from its own first answer;
    a key the server does not take is refused."""
    config = EngineConfig(kv_cache_bytes=64 * 2**20)
    with running_server(stored, config, api_key=("k1", "k2")) as (url, engine):
        engine.scheduler.planner.cost = FixedCost()

        def ask(key: str) -> tuple[str, float]:
            before = kept(engine)[1]
            r = httpx.post(f"{url}/v1/chat/completions", headers={"authorization": f"Bearer {key}"}, timeout=120,
                           json={"messages": [{"role": "user", "content": STORY}], "max_tokens": 48,
                                 "temperature": 0, "ignore_eos": True})
            assert r.status_code == 200, r.text
            return r.json()["choices"][0]["message"]["content"], kept(engine)[1] - before

        first, _ = ask("k1")
        second, by_lookup = ask("k2")
        again, by_history = ask("k1")
        assert first == second == again
        assert by_history > by_lookup + 0.5 * 48
        digests = {hashlib.sha256(k).hexdigest()[:16] for k in (b"k1", b"k2")}
        assert set(engine.outputs.history.histories) == {(stored.source, d) for d in digests}
        assert httpx.post(f"{url}/v1/chat/completions", headers={"authorization": "Bearer k3"}, json={
            "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}).status_code == 401


def test_an_unknown_mode_is_refused_by_name(stored):
    with pytest.raises(ValueError, match="speculative must be one of suffix, ngram, off, got 'eagle'"):
        Engine(stored, EngineConfig(speculative="eagle"))
