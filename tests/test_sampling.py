"""Sampling (seed §03): the toy distribution's facts and every processor, by exact values."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from forwardpass.errors import ForwardpassError
from forwardpass.sampling import (
    SEED_CANDIDATES,
    SamplingParams,
    apply_penalties,
    argmax,
    choose,
    logprob_of,
    make_generator,
    min_p_mask,
    probabilities,
    process,
    top_k_mask,
    top_p_mask,
)

NAMES = list(SEED_CANDIDATES)
TOY = torch.tensor(list(SEED_CANDIDATES.values()))


def kept(logits: torch.Tensor) -> list[str]:
    return [NAMES[i] for i in range(len(NAMES)) if logits[i] > float("-inf")]


def test_mat_leads_at_4():
    assert NAMES[int(TOY.argmax())] == "mat" and TOY.max().item() == 4.0


def test_mat_holds_68_7_percent_at_t1():
    p = probabilities(TOY, 1.0)
    assert round(p[0].item() * 100, 1) == 68.7
    assert p[0].item() == pytest.approx(math.exp(4.0) / sum(math.exp(v) for v in SEED_CANDIDATES.values()))
    assert p.sum().item() == pytest.approx(1.0)


def test_temperature_changes_shape_not_leader():
    cold, warm, hot = probabilities(TOY, 0.1), probabilities(TOY, 1.0), probabilities(TOY, 3.0)
    assert cold[0].item() > 0.9999  # T = 0.1: mat takes nearly everything
    assert int(cold.argmax()) == int(warm.argmax()) == int(hot.argmax()) == 0
    entropy = [-(p * p.log()).sum().item() for p in (cold, warm, hot)]
    assert entropy[0] < entropy[1] < entropy[2]  # above 1 flattens the bars
    assert probabilities(TOY, 0).tolist() == [1.0, 0.0, 0.0, 0.0, 0.0]  # argmax is the T → 0 limit


def test_tiny_temperature_never_overflows():
    logits = torch.randn(49152) * 30
    p = probabilities(logits, 1e-30)
    assert torch.isfinite(p).all() and p[int(logits.argmax())].item() == 1.0


def test_top_k():
    assert kept(top_k_mask(TOY, 1)) == ["mat"]  # k = 1 is argmax
    assert kept(top_k_mask(TOY, 3)) == ["mat", "rug", "floor"]
    assert kept(top_k_mask(TOY, 0)) == NAMES


def test_top_p_09_keeps_exactly_mat_and_rug():
    assert kept(top_p_mask(TOY, 0.9)) == ["mat", "rug"]
    p = probabilities(TOY, 1.0)
    assert p[0] + p[1] > 0.9 > p[0]  # just over 90%
    assert kept(top_p_mask(TOY, 0.5)) == ["mat"]  # p smaller: the set shrinks to one
    assert kept(top_p_mask(TOY, 1.0)) == NAMES  # p → 1 keeps everything


def test_top_p_adapts_to_sharpness():
    assert kept(top_p_mask(TOY / 0.3, 0.9)) == ["mat"]  # sharper distribution keeps fewer


def test_min_p():
    # p_max = 0.6875; 0.1 × that = 0.069 keeps mat (0.688) and rug (0.229), drops floor (0.042)
    assert kept(min_p_mask(TOY, 0.1)) == ["mat", "rug"]
    assert kept(min_p_mask(TOY, 0.05)) == ["mat", "rug", "floor"]


def test_seeded_sampling_is_reproducible_and_follows_the_distribution():
    params = SamplingParams(temperature=1.0, seed=1234)
    draws = [choose(process(TOY, params), params, g) for g in [make_generator(params)] for _ in range(20000)]
    again = [choose(process(TOY, params), params, g) for g in [make_generator(params)] for _ in range(20000)]
    assert draws == again
    p = probabilities(TOY, 1.0)
    for i in range(5):
        freq = draws.count(i) / len(draws)
        sigma = math.sqrt(p[i].item() * (1 - p[i].item()) / len(draws))
        assert abs(freq - p[i].item()) < 5 * sigma


def test_top_p_sampling_never_leaves_the_set():
    params = SamplingParams(temperature=1.0, top_p=0.9, seed=7)
    g = make_generator(params)
    assert {choose(process(TOY, params), params, g) for _ in range(2000)} == {0, 1}


def test_repetition_penalty_exact():
    logits = torch.tensor([2.0, -2.0, 1.0, 0.5])
    out = apply_penalties(logits, [0], [1], SamplingParams(repetition_penalty=2.0))
    assert out.tolist() == [1.0, -4.0, 1.0, 0.5]


def test_presence_and_frequency_penalties_exact():
    logits = torch.zeros(4)
    out = apply_penalties(logits, [3], [1, 1, 2], SamplingParams(presence_penalty=0.5, frequency_penalty=0.25))
    assert out.tolist() == [0.0, -1.0, -0.75, 0.0]  # token 1: 0.5 + 2 × 0.25; token 2: 0.5 + 0.25; prompt untouched


def test_greedy_applies_penalties_then_argmax():
    params = SamplingParams(temperature=0, repetition_penalty=10.0)
    assert choose(process(TOY, params, prompt_ids=[0]), params, make_generator(params)) == 1


def test_logprobs():
    lp = logprob_of(TOY, 1, 2)
    ref = torch.log_softmax(TOY, -1)
    assert lp.logprob == pytest.approx(ref[1].item())
    assert [i for i, _ in lp.top] == [0, 1] and lp.top[0][1] == pytest.approx(ref[0].item())


@pytest.mark.parametrize("kwargs,message", [
    ({"temperature": -0.5}, "temperature must be ≥ 0.0"),
    ({"temperature": float("nan")}, "temperature must be a finite number"),
    ({"top_p": 0.0}, "top_p must be > 0.0"),
    ({"top_p": 1.5}, "top_p must be ≤ 1.0"),
    ({"top_p": float("nan")}, "top_p must be a finite number"),
    ({"top_k": -1}, "top_k must be ≥ 0"),
    ({"top_k": 2.5}, "top_k must be an integer"),
    ({"min_p": 2.0}, "min_p must be ≤ 1.0"),
    ({"repetition_penalty": 0.0}, "repetition_penalty must be > 0.0"),
    ({"presence_penalty": 3.0}, "presence_penalty must be ≤ 2.0"),
    ({"max_tokens": 0}, "max_tokens must be ≥ 1"),
    ({"stop": [""]}, "stop must be a list of non-empty strings"),
])
def test_invalid_parameters(kwargs, message):
    with pytest.raises(ForwardpassError, match=message):
        SamplingParams(**kwargs)


@pytest.mark.parametrize("values", [[1.0, 3.0, 3.0, 2.0], [1.0, float("nan"), 5.0, float("nan")], [float("-inf")] * 3,
                                    [-2.5], [0.0, -0.0]])
def test_greedy_argmax_is_torchs(values):
    """The first largest index, a NaN counting as the largest: exactly what torch.argmax returns."""
    t = torch.tensor(values)
    assert argmax(t) == int(t.argmax())
    assert argmax(t.to(torch.bfloat16)) == int(t.to(torch.bfloat16).argmax())


@pytest.mark.parametrize("kwargs", [{"temperature": 1e-50}, {"top_p": 1e-300}, {"repetition_penalty": 1e-300},
                                    {"repetition_penalty": 1e300, "temperature": 1e300},
                                    {"temperature": 5e-324, "top_p": 1e-300, "repetition_penalty": 5e-324}])
def test_settings_float32_cannot_hold_still_sample(kwargs):
    """Accepted values that round to 0 or infinity in float32 give a distribution, never NaN (they once made
    sampling raise inside the engine's thread, which stopped every request)."""
    logits = torch.randn(1000) * 10
    params = SamplingParams(seed=0, **kwargs)
    processed = process(logits, params, [1, 2, int(logits.argmax())], [3, 3])
    assert not processed.isnan().any() and processed.max() < float("inf")
    token = choose(processed, params, make_generator(params))
    assert processed[token] > float("-inf")


finite = st.floats(min_value=-3e38, max_value=3e38, allow_nan=False)
any_positive = st.floats(min_value=5e-324, max_value=1.7e308, exclude_min=False)


@settings(max_examples=300, deadline=None)
@given(logits=st.lists(finite, min_size=1, max_size=40), temperature=st.one_of(st.just(0.0), any_positive),
       top_k=st.integers(0, 50), top_p=st.floats(min_value=5e-324, max_value=1.0), min_p=st.floats(0.0, 1.0),
       repetition_penalty=any_positive, presence=st.floats(-2.0, 2.0), frequency=st.floats(-2.0, 2.0),
       history=st.lists(st.integers(0, 39), max_size=20), seed=st.integers(0, 2**63 - 1))
def test_every_accepted_setting_gives_a_distribution(logits, temperature, top_k, top_p, min_p, repetition_penalty,
                                                     presence, frequency, history, seed):
    """Sampling is total: any SamplingParams the checks accept, on any finite logits, draws a token that the
    filters kept, from processed logits free of NaN and +inf."""
    params = SamplingParams(temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p, seed=seed,
                            repetition_penalty=repetition_penalty, presence_penalty=presence,
                            frequency_penalty=frequency)
    x = torch.tensor(logits)
    seen = [i % len(logits) for i in history]
    processed = process(x, params, seen[: len(seen) // 2], seen[len(seen) // 2:])
    assert not processed.isnan().any() and not (processed == float("inf")).any()
    token = choose(processed, params, make_generator(params))
    assert 0 <= token < len(logits) and processed[token] > float("-inf")
