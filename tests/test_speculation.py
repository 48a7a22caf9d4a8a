"""Speculative decoding by prompt lookup (engine/speculation.py, step_plan.py): the lookup and the draft length's
adaptation, and the engine's output token for token the same with and without drafting — greedy and seeded sampling,
stop strings, penalties, logit bias, log-probabilities, structured output, among concurrent requests with preemption —
while drafts are really made and kept."""

from __future__ import annotations

import pytest
from stepping import run

from forwardpass import kernels
from forwardpass.engine import BlockPool, Engine, EngineConfig, speculation
from forwardpass.engine.speculation import (
    MOST_K,
    PAUSE,
    PRIOR_SHARE,
    Drafter,
    Lookup,
    Predicted,
    StepCost,
    best_k,
    looped,
)
from forwardpass.errors import ForwardpassError
from forwardpass.sampling import SamplingParams
from forwardpass.structured.constraints import Constraint

PASSAGE = ("The river rises in the northern hills, runs south past the old mill and the stone bridge, and reaches "
           "the sea at the harbour town, where the fishing boats come in at dawn and the market opens at six.")


def test_lookup_proposes_what_followed_the_latest_longest_match():
    lookup = Lookup()
    tokens = [1, 2, 3, 4, 5, 9, 2, 3, 7, 8, 1, 2, 3]
    assert lookup.propose(tokens, 3) == [4, 5, 9]  # (1, 2, 3) at 0 wins over the later, shorter (2, 3) at 6
    assert Lookup().propose([1, 2, 3, 4, 2, 3], 5) == [4, 2, 3]
    assert Lookup().propose([5, 6, 7], 4) == []  # no earlier occurrence: no draft
    assert Lookup().propose([1, 2, 1, 2], 0) == []
    grown = Lookup()
    assert grown.propose([4, 5, 6], 2) == []
    assert grown.propose([4, 5, 6, 4, 5], 2) == [6, 4]  # indexed as tokens come


def test_lookup_follows_the_occurrence_whose_context_matches_furthest_back():
    """Of the occurrences of the last 3 tokens, the one preceded by more of the text's own last tokens (a copy under
    way) wins over a later one that matches only the 3; among equals, the latest."""
    copied = [7, 8, 9, 1, 2, 3, 4, 5]
    text = copied + [0, 1, 2, 3, 6, 6] + [7, 8, 9, 1, 2, 3]  # (1, 2, 3) after (7, 8, 9) at 3, after (0) at 9
    assert Lookup().match(text, 2) == ([4, 5], 6)
    assert Lookup().match([1, 2, 3, 4, 0, 1, 2, 3, 5, 9, 1, 2, 3], 1) == ([5], 3)  # equally shallow: the latest


def test_a_loop_drafts_its_next_turns_past_the_texts_end():
    """A deep match whose place lies near the text's end (the text going round a loop) drafts as far as asked, the
    loop's turns again; a shallow one stops where the text does."""
    loop = [5, 6, 7] * 4  # 12 tokens: (5, 6, 7) last seen 3 back, its context matching 9 tokens back
    assert Lookup().match(loop, 8) == ([5, 6, 7, 5, 6, 7, 5, 6], 9)
    assert Lookup().match([1, 2, 3, 4, 2, 3], 5) == ([4, 2, 3], 2)  # shallow: no guess past the end
    assert looped([1, 2, 9, 9], 2, 5) == [9, 9, 9, 9, 9] and looped([1, 2], 2, 3) == []


def test_the_draft_length_is_the_one_that_pays_most():
    """Long drafts where nearly every position is kept, short ones where fewer are, none where a draft row costs more
    than it is likely to earn; a dearer row never lengthens the draft."""
    assert best_k(0.98, 0.3) == MOST_K
    assert 1 < best_k(0.8, 0.3) < MOST_K
    assert best_k(0.3, 0.5) == 0 and best_k(0.0, 0.0) == 0
    for p in (0.5, 0.7, 0.9, 0.99):
        ks = [best_k(p, share) for share in (0.05, 0.2, 0.4, 0.8)]
        assert ks == sorted(ks, reverse=True)


def test_a_wide_batch_drafts_only_what_is_nearly_sure_to_be_kept():
    """A draft row slows every row of its step: beside 15 other rows, a draft pays only where it is nearly sure to be
    kept, while alone the same odds draft long."""
    cost = StepCost()
    for rows in (1, 4, 16, 17, 20):
        cost.observe(rows, 3.0 + 0.7 * rows)
    wide, alone = cost.row_share(16), cost.row_share(1)
    assert best_k(0.8, alone, MOST_K) > 2
    assert best_k(0.8, wide, MOST_K, others=15) == 0
    assert best_k(0.99, wide, MOST_K, others=15) > 0
    ks = [best_k(0.9, wide, MOST_K, others=n) for n in (0, 3, 7, 15)]
    assert ks == sorted(ks, reverse=True) and ks[0] > ks[-1]


def test_the_step_cost_is_fitted_from_the_steps_seen():
    cost = StepCost()
    assert cost.row_share(1) == PRIOR_SHARE  # nothing seen yet
    for rows in (1, 3, 5, 1, 2):
        cost.observe(rows, 2.0 + 0.5 * rows)
    assert cost.row_share(1) == pytest.approx(0.5 / 2.5) and cost.row_share(4) == pytest.approx(0.5 / 4.0)


def test_drafting_stops_where_drafts_are_refused_but_probes_now_and_then():
    d = Drafter()
    tokens = [1, 2, 3] * 10  # a deep match: its prior keeps four positions in five
    assert d.propose(tokens, 8, 0.3) == [1, 2]
    for _ in range(6):
        d.update(4, 0)  # every draft refused at once
    assert best_k(d.odds["lookup deep"].p, 0.3, speculation.MOST_DEEP) == 0
    at = len(tokens)
    probes = [n for n in range(at, at + 200) if d.propose(tokens[:3] * (n // 3) + tokens[:n % 3], 8, 0.3)]
    assert probes[0] == at and len(probes) <= 4  # one token, at PAUSE, 2 PAUSE, 4 PAUSE … tokens apart
    assert [b - a for a, b in zip(probes, probes[1:], strict=False)] == [PAUSE * 2**i for i in range(len(probes) - 1)]
    for _ in range(12):
        d.update(4, 4)  # every draft kept: drafting pays again
    assert best_k(d.odds["lookup deep"].p, 0.3, speculation.MOST_DEEP) > 1


def test_a_copy_under_way_drafts_long_at_once_and_apart_from_shallow_matches():
    """A draft after a match of DEEP_MATCH tokens or more (the text's last tokens stand before the place it drafts
    from too) starts from odds of its own and runs past MOST_K; a shallow match's drafts start at one token, and a deep
    match's refusals leave the shallow odds as they were."""
    passage = list(range(100, 140))
    copying = passage + [7] + passage[:20]  # the passage being copied: its last 20 tokens precede position 20 too
    assert Lookup().match(copying, 4) == (passage[20:24], 16)
    d = Drafter()
    draft = d.propose(copying, 16, 0.05)
    assert d.source == "lookup deep" and draft == passage[20:20 + len(draft)] and len(draft) > 4
    for _ in range(3):
        d.update(len(draft), len(draft))
    assert len(d.propose(copying, 16, 0.05)) > MOST_K
    shallow = [5, 1, 2, 3, 9, 6, 1, 2, 3]  # (1, 2, 3) seen once before, after another token
    assert Lookup().match(shallow, 4) == ([9, 6, 1, 2], 3) and 3 < speculation.DEEP_MATCH
    fresh = Drafter()
    assert fresh.propose(shallow, 16, 0.3) == [9] and fresh.source == "lookup"
    before = d.odds["lookup deep"].p
    for _ in range(4):
        d.update(len(draft), 0)
    assert d.odds["lookup"].p == Drafter().odds["lookup"].p and d.odds["lookup deep"].p < before - 0.1


def FixedCost() -> StepCost:  # noqa: N802
    """A draft row's cost held at the prior share: how much a test sees drafted and kept does not hang on how fast
    the machine ran its steps (a busy machine fits other costs, and drafts less)."""
    return StepCost(held=PRIOR_SHARE)


def drafting_engine(stored, speculative: str, **config) -> Engine:
    engine = Engine(stored, EngineConfig(speculative=speculative, **config))
    engine.scheduler.planner.cost = FixedCost()
    return engine


def same_with_and_without(stored, prompts, params, **config) -> Engine:
    """Run the requests with drafting and without: every output (ids, text, log-probabilities, finish) equal; the
    drafting engine returned."""
    outs = {}
    for speculative in ("off", "ngram"):
        engine = drafting_engine(stored, speculative, **config)
        outs[speculative] = (engine, run(engine, prompts, params))
    (_, plain), (engine, drafted) = outs["off"], outs["ngram"]
    for a, b in zip(plain, drafted, strict=True):
        assert [(o.token_id, o.text, o.logprob, o.finish_reason, o.stop_string) for o in a] == \
               [(o.token_id, o.text, o.logprob, o.finish_reason, o.stop_string) for o in b]
    return engine


def grounded(stored, ask: str) -> list[int]:
    return stored.encode(stored.tokenizer.apply_chat_template([{"role": "user", "content": f"{ask}\n\n{PASSAGE}"}]))


needs_kernels = pytest.mark.skipif(not kernels.available(), reason="drafts are verified by the native step")


def kept(engine: Engine) -> tuple[float, float]:
    m = engine.metrics
    return m.draft_tokens.value, m.accepted_tokens.value


@needs_kernels
def test_greedy_output_is_the_same_with_drafts_kept(stored):
    engine = same_with_and_without(stored, [grounded(stored, "Repeat this text word for word:")],
                                   [SamplingParams(temperature=0, max_tokens=60)])
    drafted, accepted = kept(engine)
    assert drafted > 0 and accepted > 0.5 * drafted  # quoting its input, most drafts are right


@needs_kernels
def test_seeded_sampling_draws_the_same_tokens(stored):
    params = [SamplingParams(temperature=0.8, top_p=0.95, seed=s, max_tokens=50, logprobs=2) for s in (1, 2, 3)]
    engine = same_with_and_without(stored, [grounded(stored, "Repeat this text:")] * 3, params)
    assert kept(engine)[1] > 0


@needs_kernels
def test_stops_penalties_and_bias_apply_at_every_verified_position(stored):
    prompt = grounded(stored, "Copy this text exactly:")
    params = [SamplingParams(temperature=0, max_tokens=60, stop=["stone bridge"]),
              SamplingParams(temperature=0, max_tokens=40, repetition_penalty=1.3, presence_penalty=0.5,
                             frequency_penalty=0.3),
              SamplingParams(temperature=0.7, seed=5, max_tokens=40, logit_bias={stored.encode(" river")[0]: -100}),
              SamplingParams(temperature=0, max_tokens=7)]  # max_tokens cuts a draft short
    engine = same_with_and_without(stored, [prompt] * 4, params)
    assert kept(engine)[1] > 0


@needs_kernels
def test_structured_output_and_forced_tool_calls_are_the_same_with_drafts(stored):
    schema = {"type": "object", "properties": {"river": {"type": "string"}, "town": {"type": "string"}},
              "required": ["river", "town"], "additionalProperties": False}
    params = [SamplingParams(temperature=0, max_tokens=60, constraint=Constraint("json_schema", schema)),
              SamplingParams(temperature=0.6, seed=3, max_tokens=60, constraint=Constraint("json_schema", schema)),
              SamplingParams(temperature=0, max_tokens=30, constraint=Constraint("regex", r"The river [a-z ,]+\.")),
              SamplingParams(temperature=0, max_tokens=60, constraint=forced_call())]
    prompt = grounded(stored, "Give the river's course and the town as JSON, quoting the text:")
    engine = same_with_and_without(stored, [prompt] * 4, params)
    assert kept(engine)[1] > 0


def forced_call() -> Constraint:
    """The grammar the server gives a forced tool call (tool_choice "required") of a tool that takes a town."""
    from forwardpass.server.tools import constraint

    town = {"type": "object", "properties": {"town": {"type": "string"}}, "required": ["town"]}
    return constraint({"find_harbour": {"name": "find_harbour", "parameters": town}}, "required")


@needs_kernels
def test_concurrent_requests_with_preemption_are_the_same(stored):
    pool_bytes = 12 * BlockPool.block_bytes(stored.config, 16, stored.kv_dtype())
    prompts = [grounded(stored, ask) for ask in ("Repeat this text:", "Copy this text:", "Say this again:")]
    params = [SamplingParams(temperature=0, max_tokens=48, ignore_eos=True),
              SamplingParams(temperature=0.9, seed=7, max_tokens=48, ignore_eos=True),
              SamplingParams(temperature=0, max_tokens=48, ignore_eos=True)]
    engine = same_with_and_without(stored, prompts, params, kv_cache_bytes=pool_bytes, checked=False)
    assert engine.scheduler.preemptions > 0 and kept(engine)[1] > 0
    assert engine.pool.used == 0


def test_an_unknown_mode_is_refused(stored):
    with pytest.raises(ValueError, match="speculative must be one of suffix, ngram, off, got 'eagle'"):
        drafting_engine(stored, "eagle")


@needs_kernels
def test_drafting_switches_itself_off_on_text_without_repeats(stored):
    """Free prose, sampled: the lookup finds earlier occurrences of common tokens, their drafts are refused, and the
    request soon drafts nothing but rare one-token probes."""
    prompt = stored.encode(stored.tokenizer.apply_chat_template(
        [{"role": "user", "content": "Write a story about a fox who learns to sail."}]))
    params = SamplingParams(temperature=1.0, seed=11, max_tokens=200, ignore_eos=True)
    engine = same_with_and_without(stored, [prompt], [params])
    drafted, _ = kept(engine)
    assert engine.metrics.drafts.value > 0 and drafted <= 0.1 * 200  # it tried, and soon stopped


def test_predicted_tokens_are_followed_and_taken_up_again():
    """Predicted: drafts what comes next while the answer follows the prediction; where it leaves it, its last tokens
    are found again further on."""
    prompt = [100, 101]
    p = Predicted([1, 2, 3, 4, 5, 6, 7, 8], start=len(prompt))
    assert p.propose(prompt, 3) == [1, 2, 3]  # nothing answered yet: the prediction's start
    assert p.propose(prompt + [1, 2], 3) == [3, 4, 5]
    assert p.propose(prompt + [1, 2, 9], 3) == []  # left it, and 9 is nowhere in it
    assert p.propose(prompt + [1, 2, 9, 5, 6], 2) == [7, 8]  # (5, 6) found: taken up after it
    assert p.propose(prompt + [1, 2, 9, 5, 6, 7, 8], 2) == []  # all of it followed


@needs_kernels
def test_a_prediction_drafts_and_changes_nothing(stored):
    """A request that gives its expected output: the same tokens as without it, and most of it kept as drafts; a
    prediction token outside the vocabulary is refused before the request runs."""
    prompt = grounded(stored, "Say one short sentence about the river.")
    want = run(drafting_engine(stored, "off"), [prompt], [SamplingParams(temperature=0, max_tokens=30)])[0]
    answer = [o.token_id for o in want if o.token_id is not None]
    engine = drafting_engine(stored, "ngram")
    got = run(engine, [prompt], [SamplingParams(temperature=0, max_tokens=30, prediction=answer)])[0]
    assert [o.token_id for o in got] == [o.token_id for o in want]
    assert kept(engine)[1] >= 0.6 * len(answer)
    with pytest.raises(ForwardpassError, match="prediction names token 999999"):
        engine.submit(prompt, SamplingParams(max_tokens=4, prediction=[5, 999999]), lambda o: None)


def test_the_source_kept_more_often_drafts():
    """A prediction drafts first (the client vouches for it); once its drafts are refused, the request's own text
    does."""
    d = Drafter(predicted=Predicted([5, 6, 7, 8], start=3))
    tokens = [1, 2, 1]  # the lookup offers (2, 1), the prediction its start
    assert d.propose(tokens, 8, 0.0) == [5, 6, 7, 8] and d.source == "predicted"
    for _ in range(3):
        d.update(4, 0)
    assert d.propose(tokens, 8, 0.0) == [2, 1] and d.source == "lookup"
