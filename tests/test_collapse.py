"""Repetition collapse (seed §03 W-greedy-loop): detected exactly, and escaped by seeded sampling."""

from __future__ import annotations

from forwardpass.article.collapse import Loop, detect_loop
from forwardpass.loop import generate
from forwardpass.sampling import SamplingParams

COLLAPSING = "I like to eat apples and bananas and"


def test_detector_reports_period_and_start():
    assert detect_loop([9, 8, 1, 2, 3, 1, 2, 3, 1, 2, 3]) == Loop(period=3, start=2, repeats=3.0)
    assert detect_loop([5, 7, 7, 7, 7]) == Loop(period=1, start=1, repeats=4.0)
    assert detect_loop([1, 2, 3, 4, 5, 6]) is None
    assert detect_loop([1, 2, 1, 2, 3]) is None  # the end must be inside the loop
    assert detect_loop([]) is None


def test_greedy_collapses_on_the_real_model(stored):
    r = generate(stored, COLLAPSING, SamplingParams(temperature=0, max_tokens=48))
    assert r.loop == Loop(period=8, start=0, repeats=6.0)
    block = stored.tokenizer.decode(r.token_ids[:8])
    assert r.text == block * 6 and block == " I'm going to eat them tomorrow."


def test_seeded_sampling_escapes(stored):
    for seed in (0, 1, 2, 3):
        r = generate(stored, COLLAPSING, SamplingParams(temperature=0.8, top_p=0.95, seed=seed, max_tokens=48))
        assert r.loop is None, (seed, r.text)
