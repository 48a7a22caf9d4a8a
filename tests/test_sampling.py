"""Sampling (seed §03): the toy distribution's facts and every processor, by exact values; the random stream (one
uniform per sampled token); the same results from a numpy array and a PyTorch tensor; no PyTorch needed."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap

import numpy as np
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
    next_token,
    probabilities,
    process,
    scale,
    top_k_mask,
    top_p_mask,
    values,
)

NAMES = list(SEED_CANDIDATES)
TOY = np.array(list(SEED_CANDIDATES.values()), dtype=np.float32)


def kept(logits: np.ndarray) -> list[str]:
    return [NAMES[i] for i in range(len(NAMES)) if logits[i] > float("-inf")]


def test_mat_leads_at_4():
    assert NAMES[int(TOY.argmax())] == "mat" and TOY.max() == 4.0


def test_mat_holds_68_7_percent_at_t1():
    p = probabilities(TOY, 1.0)
    assert p.dtype == np.float32 and p.shape == (5,)
    assert round(float(p[0]) * 100, 1) == 68.7
    assert float(p[0]) == pytest.approx(math.exp(4.0) / sum(math.exp(v) for v in SEED_CANDIDATES.values()))
    assert float(p.sum()) == pytest.approx(1.0)


def test_temperature_changes_shape_not_leader():
    cold, warm, hot = probabilities(TOY, 0.1), probabilities(TOY, 1.0), probabilities(TOY, 3.0)
    assert cold[0] > 0.9999  # T = 0.1: mat takes nearly everything
    assert int(cold.argmax()) == int(warm.argmax()) == int(hot.argmax()) == 0
    entropy = [float(-(p * np.log(p)).sum()) for p in (cold, warm, hot)]
    assert entropy[0] < entropy[1] < entropy[2]  # above 1 flattens the bars
    assert probabilities(TOY, 0).tolist() == [1.0, 0.0, 0.0, 0.0, 0.0]  # argmax is the T → 0 limit


def test_tiny_temperature_never_overflows():
    logits = (np.random.default_rng(0).standard_normal(49152) * 30).astype(np.float32)
    p = probabilities(logits, 1e-30)
    assert np.isfinite(p).all() and p[int(logits.argmax())] == 1.0


def test_top_k():
    assert kept(top_k_mask(TOY, 1)) == ["mat"]  # k = 1 is argmax
    assert kept(top_k_mask(TOY, 3)) == ["mat", "rug", "floor"]
    assert kept(top_k_mask(TOY, 0)) == NAMES
    tied = top_k_mask(np.array([3.0, 1.0, 3.0], dtype=np.float32), 1)
    assert tied.tolist() == [3.0, float("-inf"), 3.0]  # every token tied with the k-th stays


def test_top_p_09_keeps_exactly_mat_and_rug():
    assert kept(top_p_mask(TOY, 0.9)) == ["mat", "rug"]
    p = probabilities(TOY, 1.0)
    assert p[0] + p[1] > 0.9 > p[0]  # just over 90%
    assert kept(top_p_mask(TOY, 0.5)) == ["mat"]  # p smaller: the set shrinks to one
    assert kept(top_p_mask(TOY, 1.0)) == NAMES  # p → 1 keeps everything


def test_top_p_adapts_to_sharpness():
    assert kept(top_p_mask(TOY / 0.3, 0.9)) == ["mat"]  # sharper distribution keeps fewer


def test_top_p_counts_equal_logits_by_lower_id_first():
    flat = np.zeros(4, dtype=np.float32)  # four tokens of 25% each: ids 0 and 1 reach 50%
    assert np.isfinite(top_p_mask(flat, 0.5)).tolist() == [True, True, False, False]
    assert np.isfinite(top_p_mask(flat, 0.51)).tolist() == [True, True, True, False]


def full_sort_top_p(logits: np.ndarray, p: float) -> np.ndarray:
    """top-p by its definition, over the whole vocabulary sorted (best first, equal logits by lower id)."""
    order = np.argsort(-logits, kind="stable")
    e = np.exp(logits - logits.max())
    probs = (e / e.sum())[order]
    drop = np.cumsum(probs) - probs >= np.float32(p)
    drop[0] = False
    out = logits.copy()
    out[order[drop]] = -np.inf
    return out


def test_top_p_sorting_only_the_likeliest_tokens_keeps_what_a_full_sort_keeps():
    """top_p_mask sorts the likeliest tokens first and more only when they do not hold p: the same tokens kept as a
    sort of the whole vocabulary, on sharp and flat distributions, with ties and with tokens top-k removed."""
    rng = np.random.default_rng(1)
    for trial in range(200):
        n = int(rng.integers(1, 5000))
        logits = (rng.standard_normal(n) * rng.uniform(0.05, 12)).astype(np.float32)
        if trial % 3 == 0:
            logits = np.round(logits)  # many ties
        if trial % 4 == 0:
            logits = top_k_mask(logits, int(rng.integers(1, n + 1)))
        p = float(rng.uniform(0.01, 1.0))
        got, want = top_p_mask(logits, p), full_sort_top_p(logits, p)
        assert np.array_equal(np.isfinite(got), np.isfinite(want)), (trial, n, p)
        assert np.array_equal(got[np.isfinite(got)], logits[np.isfinite(got)])


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
        sigma = math.sqrt(float(p[i]) * (1 - float(p[i])) / len(draws))
        assert abs(freq - float(p[i])) < 5 * sigma


def test_different_seeds_draw_differently_and_no_seed_is_fresh():
    flat = np.zeros(1000, dtype=np.float32)

    def draws(params: SamplingParams) -> list[int]:
        g = make_generator(params)
        return [choose(flat, params, g) for _ in range(20)]

    assert draws(SamplingParams(seed=1)) != draws(SamplingParams(seed=2))
    assert draws(SamplingParams()) != draws(SamplingParams())  # fresh entropy each time


@pytest.mark.parametrize("params", [SamplingParams(temperature=0.8, seed=3),
                                    SamplingParams(temperature=1.2, top_k=3, top_p=0.9, min_p=0.01, seed=3,
                                                   repetition_penalty=1.3, presence_penalty=0.5, logprobs=2,
                                                   logit_bias={1: 2.0})])
def test_a_sampled_token_consumes_exactly_one_uniform(params):
    """Verifying a draft samples its positions in order: each draw must take one number from the stream, whatever
    the filters, so that drafting consumes the stream as plain decoding does."""
    sampler, counter = make_generator(params), make_generator(params)
    logits = (np.random.default_rng(5).standard_normal(300) * 3).astype(np.float32)
    out: list[int] = []
    for _ in range(25):
        token, _ = next_token(logits, params, sampler, [0, 1], out)
        out.append(token)
        counter.random()
    assert sampler.bit_generator.state == counter.bit_generator.state
    greedy = SamplingParams(temperature=0, seed=3)
    before = sampler.bit_generator.state
    next_token(logits, greedy, sampler, [], [])
    assert sampler.bit_generator.state == before  # argmax draws nothing


class Fixed:
    """A generator whose one uniform is chosen by the test."""

    def __init__(self, u: float):
        self.u = u

    def random(self) -> float:
        return self.u


def test_the_draw_is_the_inverse_cdf_and_never_a_removed_token():
    """u = 0 draws the first token the filters kept, u just under 1 the last (never a removed one after it, even
    where u × the total rounds up to the total), and u splits the kept tokens by their cumulative probability."""
    params = SamplingParams(temperature=1.0)
    logits = np.array([-np.inf, 0.0, -np.inf, 0.0, 0.0, -np.inf], dtype=np.float32)
    assert choose(logits, params, Fixed(0.0)) == 1
    assert choose(logits, params, Fixed(1 - 2**-53)) == 4
    assert [choose(logits, params, Fixed(u)) for u in (0.3, 0.34, 0.66, 0.67)] == [1, 3, 3, 4]


def test_no_token_to_draw_is_a_clear_error():
    with pytest.raises(ValueError, match="no token to draw"):
        choose(np.full(4, np.nan, dtype=np.float32), SamplingParams(), make_generator(SamplingParams(seed=0)))


def test_top_p_sampling_never_leaves_the_set():
    params = SamplingParams(temperature=1.0, top_p=0.9, seed=7)
    g = make_generator(params)
    assert {choose(process(TOY, params), params, g) for _ in range(2000)} == {0, 1}


def test_repetition_penalty_exact():
    logits = np.array([2.0, -2.0, 1.0, 0.5], dtype=np.float32)
    out = apply_penalties(logits, [0], [1], SamplingParams(repetition_penalty=2.0))
    assert out.tolist() == [1.0, -4.0, 1.0, 0.5]
    assert logits.tolist() == [2.0, -2.0, 1.0, 0.5]  # a new array: the input may be the engine's buffer


def test_presence_and_frequency_penalties_exact():
    logits = np.zeros(4, dtype=np.float32)
    out = apply_penalties(logits, [3], [1, 1, 2], SamplingParams(presence_penalty=0.5, frequency_penalty=0.25))
    assert out.tolist() == [0.0, -1.0, -0.75, 0.0]  # token 1: 0.5 + 2 × 0.25; token 2: 0.5 + 0.25; prompt untouched


def test_greedy_applies_penalties_then_argmax():
    params = SamplingParams(temperature=0, repetition_penalty=10.0)
    assert choose(process(TOY, params, prompt_ids=[0]), params, make_generator(params)) == 1


def test_process_leaves_its_input_alone():
    logits = TOY.copy()
    params = SamplingParams(temperature=0.5, top_k=2, repetition_penalty=2.0, presence_penalty=1.0,
                            logit_bias={4: 5.0})
    out = process(logits, params, [0], [1, 1], allowed=np.array([True, True, False, True, True]))
    assert np.array_equal(logits, TOY) and out is not logits
    assert kept(out) == ["mat", "roof"]  # roof: 0.1 + 5; floor masked; rug penalized below both


def test_logprobs():
    lp = logprob_of(TOY, 1, 2)
    ref = torch.log_softmax(torch.tensor(TOY), -1)
    assert lp.logprob == pytest.approx(ref[1].item())
    assert [i for i, _ in lp.top] == [0, 1] and lp.top[0][1] == pytest.approx(ref[0].item())
    assert all(isinstance(i, int) and isinstance(v, float) for i, v in lp.top)


def test_logprob_alternatives_are_by_value_then_lower_id():
    logits = np.array([1.0, 3.0, 2.0, 3.0, 2.0], dtype=np.float32)
    assert [i for i, _ in logprob_of(logits, 0, 4).top] == [1, 3, 2, 4]
    assert [i for i, _ in logprob_of(logits, 0, 20).top] == [1, 3, 2, 4, 0]  # n past the vocabulary: all of it
    assert logprob_of(logits, 0, 0).top == []


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


@pytest.mark.parametrize("values_", [[1.0, 3.0, 3.0, 2.0], [1.0, float("nan"), 5.0, float("nan")],
                                     [float("-inf")] * 3, [-2.5], [0.0, -0.0]])
def test_greedy_argmax_is_torchs(values_):
    """The first largest index, a NaN counting as the largest: exactly what torch.argmax returns, from an array or a
    tensor (bfloat16 too)."""
    t = torch.tensor(values_)
    assert argmax(t) == argmax(t.numpy()) == int(t.argmax())
    assert argmax(t.to(torch.bfloat16)) == int(t.to(torch.bfloat16).argmax())


@pytest.mark.parametrize("params", [SamplingParams(temperature=0, repetition_penalty=1.5, logit_bias={3: 4.0}),
                                    SamplingParams(temperature=0.7, top_k=50, top_p=0.9, min_p=0.02,
                                                   presence_penalty=0.4, frequency_penalty=0.3)])
def test_a_tensor_and_an_array_give_the_same_result(params):
    """The transition's callers pass PyTorch tensors: converted once, they give what the array gives."""
    rng = np.random.default_rng(2)
    array = (rng.standard_normal(1000) * 4).astype(np.float32)
    mask = rng.random(1000) < 0.7
    mask[int(array.argmax())] = True
    tensor = torch.from_numpy(array.copy())
    got = process(tensor, params, [1, 2], [3, 3, 4], torch.from_numpy(mask))
    want = process(array, params, [1, 2], [3, 3, 4], mask)
    assert isinstance(got, np.ndarray) and got.dtype == np.float32 and np.array_equal(got, want)
    assert np.array_equal(probabilities(tensor, 0.7), probabilities(array, 0.7))
    assert np.array_equal(scale(tensor, 0.7), scale(array, 0.7))
    assert logprob_of(tensor, 5, 3) == logprob_of(array, 5, 3)
    g1, g2 = make_generator(SamplingParams(seed=9)), make_generator(SamplingParams(seed=9))
    assert next_token(tensor, params, g1, [1], [2]) == next_token(array, params, g2, [1], [2])
    assert values(tensor.to(torch.bfloat16)).dtype == np.float32
    with torch.inference_mode():  # the engine's logits are inference tensors
        assert np.array_equal(values(torch.from_numpy(array) * 1), array)
    if torch.cuda.is_available():
        assert np.array_equal(process(tensor.cuda(), params, [1, 2], [3, 3, 4], mask), want)


def test_the_sampler_and_the_grammar_mask_run_without_pytorch():
    """sampling.py and constraints.py never import PyTorch: a seeded, grammar-constrained draw in a process where
    importing it fails."""
    code = textwrap.dedent("""
        import sys
        sys.modules["torch"] = None  # any `import torch` now raises
        import numpy as np
        from forwardpass.structured.constraints import Constraint, Grammars
        from forwardpass.sampling import SamplingParams, make_generator, next_token
        from forwardpass.text.byte_level_bpe import BYTE_CHARS
        from forwardpass.text.tokenizer import Tokenizer

        tokens = BYTE_CHARS + ["<|im_end|>"]  # one token a byte, then an end-of-turn token
        tok = Tokenizer.from_gguf_fields({"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.tokens": tokens,
                                          "tokenizer.ggml.merges": [], "tokenizer.ggml.token_type": [1] * 256 + [3]})
        matcher = Grammars(tok, len(tokens)).compile(Constraint("regex", "[0-9]{3}")).matcher()
        params = SamplingParams(temperature=1.0, seed=4)
        g, out = make_generator(params), []
        while not matcher.finished:
            allowed = matcher.allowed()
            assert isinstance(allowed, np.ndarray) and allowed.dtype == np.bool_ and allowed.shape == (257,)
            token, _ = next_token(np.zeros(257, dtype=np.float32), params, g, [], out, allowed=allowed)
            matcher.advance(token)
            out.append(token)
        print(tok.decode(out), "torch" in sys.modules and sys.modules["torch"] is not None)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    text, imported = r.stdout.split()
    assert len(text) == 3 and text.isdigit() and imported == "False"


@pytest.mark.parametrize("kwargs", [{"temperature": 1e-50}, {"top_p": 1e-300}, {"repetition_penalty": 1e-300},
                                    {"repetition_penalty": 1e300, "temperature": 1e300},
                                    {"temperature": 5e-324, "top_p": 1e-300, "repetition_penalty": 5e-324}])
def test_settings_float32_cannot_hold_still_sample(kwargs):
    """Accepted values that round to 0 or infinity in float32 give a distribution, never NaN (they once made
    sampling raise inside the engine's thread, which stopped every request)."""
    logits = (np.random.default_rng(3).standard_normal(1000) * 10).astype(np.float32)
    params = SamplingParams(seed=0, **kwargs)
    processed = process(logits, params, [1, 2, int(logits.argmax())], [3, 3])
    assert not np.isnan(processed).any() and processed.max() < float("inf")
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
    x = np.array(logits, dtype=np.float32)
    seen = [i % len(logits) for i in history]
    processed = process(x, params, seen[: len(seen) // 2], seen[len(seen) // 2:])
    assert not np.isnan(processed).any() and not (processed == float("inf")).any()
    token = choose(processed, params, make_generator(params))
    assert 0 <= token < len(logits) and processed[token] > float("-inf")
