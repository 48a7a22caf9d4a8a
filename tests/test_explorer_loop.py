"""§04 of the explorer, the loop: both loops run on the loaded model and timed step by step (their work counts are
the loops' own and equal cost.py's), naive and cached drawn side by side on one scale, the article's states one
click away (5× and 10.5× on the toy, 69.5× for GPT-2 small at 100 tokens) with the prose carrying the same numbers
in both languages, the stepper saying no "step 13" after its last step. Browser tests at 1280 and 390 px, in English
and Chinese."""

from __future__ import annotations

import datetime
import re

import pytest
from fastapi.testclient import TestClient
from test_explorer_fixtures import (
    DEFAULT_PROMPT,
    foreign_text,
    idle,
    needs_chromium,
    preset_button,
    readout,
    run_many_users,
    set_range,
    use_prompt,
    wait_for,
)

from forwardpass import cost
from forwardpass.explorer import compute, loop_runs, timing
from forwardpass.explorer.app import build_explorer
from forwardpass.loop import generate
from forwardpass.sampling import SamplingParams

LOOP_WIDGETS = ("W-autoregress", "W-naive-vs-cached", "W-cost-toy", "W-cost-gpt2")


def times(x: float, lang: str) -> str:
    """A ratio as the page writes it: one decimal at most, "5×" / "5 倍"."""
    s = f"{x:.1f}".removesuffix(".0")
    return f"{s}×" if lang == "en" else f"{s} 倍"


# ---- the endpoint: both loops really run --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def client(stored):
    return TestClient(build_explorer(stored))


def test_both_loops_run_their_counts_are_cost_pys_and_their_tokens_the_teaching_loops(client, stored):
    steps = 12
    d = client.post("/api/loop-timing", json={"prompt": DEFAULT_PROMPT, "steps": steps}).json()
    p = len(stored.encode(DEFAULT_PROMPT))
    assert d["prompt_tokens"] == p and len(d["steps"]) == steps and d["n_layers"] == stored.config.n_layers
    naive = [s["naive_tokens"] for s in d["steps"]]
    cached = [s["cached_tokens"] for s in d["steps"]]
    assert naive == [p + i for i in range(steps)] and cached == [p] + [1] * (steps - 1)
    for n in range(1, steps + 1):  # every running total is cost.py's
        assert sum(naive[:n]) == cost.naive_work(p, n) and sum(cached[:n]) == cost.cached_work(p, n, count_prefill=True)
    assert d["naive_work"] == d["cost_naive_work"] == cost.naive_work(p, steps)
    assert d["cached_work"] == d["cost_cached_work"] == cost.cached_work(p, steps, count_prefill=True)
    # the same tokens as the seed's teaching loop (loop.py, naive=True), whose own work counters agree
    with compute.model_lock(stored):
        teaching = generate(stored, DEFAULT_PROMPT, SamplingParams(temperature=0, max_tokens=steps, ignore_eos=True),
                            naive=True)
    assert teaching.work == naive
    assert [s["naive_id"] for s in d["steps"]] == [s["cached_id"] for s in d["steps"]] == teaching.token_ids
    assert d["same_tokens"] is True
    # timed in runs: each step's median inside its range, the totals the medians of the runs' totals
    assert 1 <= d["runs"] <= loop_runs.MAX_RUNS and d["verdict"]["runs"] == d["runs"]
    for s in d["steps"]:
        for which in ("naive", "cached"):
            assert 0 < s[f"{which}_lo"] <= s[f"{which}_s"] <= s[f"{which}_hi"]
    for which in ("naive", "cached"):
        total = d[f"{which}_total"]
        assert total["lo"] <= d[f"{which}_total_s"] == total["median"] <= total["hi"]
    assert d["verdict"]["work_ratio"] == pytest.approx(d["naive_work"] / d["cached_work"])


def test_a_run_that_does_not_fit_the_budget_is_not_started(stored):
    with compute.model_lock(stored):
        d = loop_runs.timed_loops(stored, "the cat", 4, budget_s=0)
    assert d["runs"] == 1 and d["verdict"]["enough"] is False and d["verdict"]["faster"] is None


# ---- what the runs allow: timing.verdict on clear and on noisy runs -------------------------------------------------
NAIVE_TOKENS, CACHED_TOKENS = [12 + i for i in range(12)], [12] + [1] * 11


def runs(per_step: float, per_token: float, jitter: list[float], naive_extra: float = 0.0):
    """Each run's step times on a machine where a step costs per_step + per_token × tokens, run r scaled by
    1 + jitter[r] (naive steps also by 1 + naive_extra)."""
    naive = [[(per_step + per_token * t) * (1 + j) * (1 + naive_extra) for t in NAIVE_TOKENS] for j in jitter]
    cached = [[(per_step + per_token * t) * (1 + j) for t in CACHED_TOKENS] for j in jitter]
    return naive, cached


def test_clear_runs_say_the_gap_is_narrower_and_why():
    v = timing.verdict(*runs(0.010, 0.0005, [0, 0.05, -0.03]), NAIVE_TOKENS, CACHED_TOKENS)
    assert v["enough"] and v["faster"] == "cached" and v["gap"] == "narrower"
    assert v["fit"]["per_step_s"] == pytest.approx(0.010, rel=0.1) and v["fit"]["r2"] > 0.9
    assert 0.5 < v["fixed_share"] < 1  # the fixed part of each step: most of the cached loop's time here
    assert v["fixed_share"] < v["fixed_share_one"] < 1  # more still of a one-token step (the first step holds P)


def test_time_in_step_with_work_follows_it():
    v = timing.verdict(*runs(0.0, 0.001, [0, 0.02, -0.02]), NAIVE_TOKENS, CACHED_TOKENS)
    assert v["faster"] == "cached" and v["gap"] == "follows" and v["fixed_share"] is None


def test_runs_on_both_sides_of_one_are_too_noisy_to_tell():
    """One run where a busy moment fell on the cached loop: no loop is called faster, no gap, no line."""
    naive, cached = runs(0.010, 0.0005, [0, 0.05, -0.03])
    cached[1] = [x * 3 for x in cached[1]]
    v = timing.verdict(naive, cached, NAIVE_TOKENS, CACHED_TOKENS)
    assert v["time_ratio"]["lo"] < 1 < v["time_ratio"]["hi"]
    assert v["faster"] is None and v["gap"] is None and v["fixed_share"] is None


def test_a_gap_the_runs_disagree_on_is_not_told():
    naive, cached = runs(0.0, 0.001, [0, 0, 0])
    cached[2] = [x * 2 for x in cached[2]]  # one run's ratio twice the others': on both sides of the margin
    v = timing.verdict(naive, cached, NAIVE_TOKENS, CACHED_TOKENS)
    assert v["faster"] == "cached" and v["gap"] is None and v["fixed_share"] is None


def test_too_few_runs_say_nothing_about_time():
    v = timing.verdict(*runs(0.010, 0.0005, [0, 0.01]), NAIVE_TOKENS, CACHED_TOKENS)
    assert not v["enough"] and v["faster"] is None and v["gap"] is None and v["fixed_share"] is None


def test_the_loop_endpoints_refuse_clearly(client):
    r = client.post("/api/loop-timing", json={"prompt": "hi", "steps": 99})
    assert r.status_code == 400 and r.json()["code"] == "range" and r.json()["params"]["what"] == "steps"
    r = client.post("/api/loop-timing", json={"prompt": "", "steps": 4})
    assert r.status_code == 400 and r.json()["code"] == "empty_prompt"


# ---- the page ---------------------------------------------------------------------------------------------------
pytestmark = needs_chromium


SLIDER = {"W-cost-toy": "cost-toy-n", "W-cost-gpt2": "cost-gpt2-n"}


def press(page, widget: str, value) -> None:
    preset_button(page, widget, SLIDER[widget], value).click()


def told(page, widget: str) -> str:
    return page.locator(f'[data-widget="{widget}"] .told').inner_text()


def test_presets_set_the_articles_states_and_the_prose_carries_the_same_numbers(any_page):
    page, lang = any_page, any_page.lang
    first, twelfth, gpt2 = compute.work(5, 1), compute.work(5, 12), compute.work(20, 100)
    generated = {"en": "{n} token", "zh": "已生成 {n} 个词元"}[lang]
    for widget, value, want in [("W-cost-toy", 1, first), ("W-cost-toy", 12, twelfth), ("W-cost-gpt2", 100, gpt2)]:
        press(page, widget, value)
        text = wait_for(page, widget, generated.format(n=value))
        # both counts, named: the steps after the prompt, and the prefill counted in both loops
        assert times(want["ratio"], lang) in text and times(want["ratio_with_prefill"], lang) in text, (widget, text)
        assert preset_button(page, widget, SLIDER[widget], value).get_attribute("aria-pressed") == "true"
        assert page.locator(f'[data-widget="{widget}"] input[type=range]').input_value() == str(value)
    assert [times(x, lang) for x in (first["ratio"], twelfth["ratio"], gpt2["ratio"])] == (
        ["5×", "10.5×", "69.5×"] if lang == "en" else ["5 倍", "10.5 倍", "69.5 倍"])  # the article's numbers
    # the prose says the article's states from the same computation, whatever the slider shows now
    set_range(page, "#cost-toy-n", 30)
    wait_for(page, "W-cost-toy", "30")
    toy = told(page, "W-cost-toy")
    assert times(first["ratio"], lang) in toy and times(twelfth["ratio"], lang) in toy
    assert times(gpt2["ratio"], lang) in told(page, "W-cost-gpt2")
    idle(page)


def test_naive_and_cached_share_one_scale(any_page, stored):
    """The per-step columns of both loops on one axis: heights in proportion to the tokens each step ran (the
    prompt's 12 against the naive loop's 23 at its last step are not drawn alike)."""
    page = any_page
    chart = page.locator('[data-widget="W-naive-vs-cached"] .chart.work')
    cols = chart.locator("rect[data-series]").evaluate_all(
        "rs => rs.map(r => [+r.dataset.series, +r.dataset.group, +r.dataset.value, r.getBBox().height])")
    p, steps = len(stored.encode(DEFAULT_PROMPT)), 12
    assert sorted((s, g, v) for s, g, v, _ in cols) == sorted(
        [(0, i, p + i) for i in range(steps)] + [(1, 0, p)] + [(1, i, 1) for i in range(1, steps)])
    scale = {round(h / v, 6) for _, _, v, h in cols}
    assert max(scale) - min(scale) < 1e-3 * max(scale)  # one scale for every column of both series
    height = {(s, g): h for s, g, _, h in cols}
    assert height[0, steps - 1] / height[1, 0] == pytest.approx((p + steps - 1) / p, rel=1e-3)
    assert chart.locator("line.tick").count() >= 4


def test_the_stepper_names_no_step_after_its_last(any_page):
    page, lang = any_page, any_page.lang
    set_range(page, "#auto-step", 12)
    text = wait_for(page, "W-autoregress", "12")
    assert ("step 13" not in text and "last of the 12 steps" in text) if lang == "en" else (
        "第 13 步" not in text and "最后一步" in text)
    set_range(page, "#auto-step", 2)
    text = readout(page, "W-autoregress")
    if lang == "en":
        assert "the token chosen at step 1" in text and "step 3" in text
    set_range(page, "#auto-step", 1)
    assert "第 2 步" in readout(page, "W-autoregress") if lang == "zh" else "step 2" in readout(page, "W-autoregress")


def test_counts_read_as_words_in_the_loop(any_page):
    page = any_page
    set_range(page, "#nvc-step", 5)
    set_range(page, "#auto-step", 2)
    set_range(page, "#cost-toy-n", 1)
    wait_for(page, "W-cost-toy", "1")
    idle(page)
    body = " ".join(page.locator(f'[data-widget="{w}"]').inner_text() for w in LOOP_WIDGETS)
    assert not re.search(r"(?<![\d.,])1 (tokens|steps|pairs)\b", body)
    press(page, "W-cost-toy", 12)
    idle(page)


ONE = re.compile(r"(?<![\d.,])\b1 ((full|prompt|first-token) )?(tokens|steps|pairs|calls|requests|blocks|sequences|"
                 r"slots|candidates|positions|times|preemptions|caches|entries)\b|\b1 of them take\b|\blast 1 tokens\b")


def many_users_run(page, settings: dict) -> None:
    for key, value in settings.items():
        set_range(page, f"#mu-{key}", value)
    run_many_users(page)


def test_a_count_of_one_takes_a_singular_noun_on_the_whole_page(pages, stored):
    """A one-token prompt, one decode call, one token per block of the lens, one request, one shared block, one token
    of the system prompt left over: no "1 tokens" anywhere in the English page's widgets."""
    page = pages(1280, "en")
    use_prompt(page, stored, "Hi")
    assert len(stored.encode("Hi")) == 1
    found = []

    def look(where: str) -> None:
        for widget, text in page.evaluate("() => [...document.querySelectorAll('[data-widget]')]"
                                          ".map(w => [w.dataset.widget, w.innerText])"):
            found.extend((where, widget, m.group(0)) for m in ONE.finditer(text))

    try:
        for selector, value in [("#nvc-step", 1), ("#fill-step", 1), ("#auto-step", 1), ("#lc-new", 2),
                                ("#lens-k", 1)]:
            set_range(page, selector, value)
        page.wait_for_timeout(300)  # the debounced runs start
        idle(page)
        look("one-token prompt")
        many_users_run(page, {"requests": 1})
        look("one request")
        many_users_run(page, {"requests": 2, "system": 17, "own": 8, "new": 4})
        look("one shared block")
    finally:
        for selector, value in [("#lc-new", 12), ("#lens-k", 5)]:
            set_range(page, selector, value)
        use_prompt(page, stored, DEFAULT_PROMPT)
    assert not found, "\n".join(map(str, sorted(set(found))))


def test_the_measured_times_on_the_page_are_one_real_run(pages, stored):
    page = pages(1280, "en")
    with page.expect_response(lambda r: r.url.endswith("/api/loop-timing?fresh=1")) as answer:  # a new run
        page.locator('[data-widget="W-naive-vs-cached"] button.run').click()
    d = answer.value.json()
    idle(page)
    set_range(page, "#nvc-step", 12)
    text = readout(page, "W-naive-vs-cached")
    ms = lambda s: f"{1000 * s:.1f}"  # noqa: E731
    assert f"naive {d['naive_work']} tokens in {ms(d['naive_total_s'])} ms" in text
    assert f"cached {d['cached_work']} tokens in {ms(d['cached_total_s'])} ms" in text
    assert (f"medians of {d['runs']} runs" in text) if d["runs"] > 1 else "(one run)" in text
    last = d["steps"][-1]
    assert f"sent {last['naive_tokens']} tokens through the model in {ms(last['naive_s'])} ms" in text
    prose = told(page, "W-naive-vs-cached")
    assert "Both loops chose the same 12 tokens" in prose
    p = len(stored.encode(DEFAULT_PROMPT))
    # the formula the prose writes, summed, is the tokens the naive loop fed (step 12 feeds P + 11)
    assert "Σ (P + i − 1)" in prose and sum(p + i - 1 for i in range(1, 13)) == d["naive_work"]
    assert d["naive_work"] == sum(s["naive_tokens"] for s in d["steps"]) and last["naive_tokens"] == p + 11
    assert f"= {cost.naive_work(p, 12)}" in prose and f"= {cost.cached_work(p, 12, count_prefill=True)}" in prose
    clock = datetime.datetime.fromtimestamp(d["measured_at"]).strftime("%H:%M:%S")
    assert f"measured at {clock} by the server running this page" in prose
    use_prompt(page, stored, "the dog saw the cat")  # away and back: the newer run is shown, not the first one
    use_prompt(page, stored, DEFAULT_PROMPT)
    assert f"measured at {clock} by the server running this page" in told(page, "W-naive-vs-cached")


def shown_for(page, answer: dict) -> str:
    """The prose W-naive-vs-cached writes for `answer`, served in place of a new run."""
    page.route("**/api/loop-timing?fresh=1", lambda route: route.fulfill(json=answer))
    try:
        page.locator('[data-widget="W-naive-vs-cached"] button.run').click()
        page.wait_for_function("() => !document.querySelector('[data-widget=\"W-naive-vs-cached\"]')"
                               ".hasAttribute('aria-busy')")
        idle(page)
    finally:
        page.unroute("**/api/loop-timing?fresh=1")
    return told(page, "W-naive-vs-cached")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_noisy_run_is_said_to_be_too_noisy_and_a_clear_one_says_why(pages, lang):
    """Once one run on a busy machine, a 1-token cached step slower than a 13-token naive one, was drawn as a finding
    ("a straight line says why") and kept for every later reader. The page says what the runs' verdict allows."""
    page = pages(1280, lang)
    real = page.request.post(page.base + "api/loop-timing", data={"prompt": DEFAULT_PROMPT, "steps": 12}).json()
    naive, cached = runs(0.010, 0.0005, [0, 0.05, -0.03])
    cached[1] = [x * 3 for x in cached[1]]  # a busy moment on the cached loop in one run
    noisy = real | {"runs": 3, "verdict": timing.verdict(naive, cached, NAIVE_TOKENS, CACHED_TOKENS),
                    "naive_total_s": 0.5, "cached_total_s": 0.4, "fit": {"per_step_s": 0.03, "per_token_s": 0.001}}
    clear = real | {"runs": 3, "verdict": timing.verdict(*runs(0.010, 0.0005, [0, 0.05, -0.03]), NAIVE_TOKENS,
                                                          CACHED_TOKENS)}
    try:
        said = shown_for(page, noisy)
        lo, hi = (f"{noisy['verdict']['time_ratio'][k]:.1f}".removesuffix(".0") for k in ("lo", "hi"))
        if lang == "en":
            assert "Timing too noisy to conclude" in said and "straight line" not in said and "narrower" not in said
            assert f"from {lo}× to {hi}×" in said and "medians of 3 runs" in said  # how noisy the kept answer was
        else:
            assert "计时噪声太大，下不了结论" in said and "直线" not in said and f"从 {lo} 倍到 {hi} 倍" in said
        said = shown_for(page, clear)
        share = f"{100 * clear['verdict']['fixed_share']:.1f}%"
        one = f"{100 * clear['verdict']['fixed_share_one']:.1f}%"  # and of each one-token step, said apart
        assert one in said and ("all 12 steps" in said if lang == "en" else "全部 12 步" in said)
        # runs that all give one ratio are said to agree, not as a range from a value to itself
        same = real | {"runs": 3, "verdict": timing.verdict(*runs(0.010, 0.0005, [0, 0, 0]), NAIVE_TOKENS,
                                                             CACHED_TOKENS)}
        said = shown_for(page, same)
        assert not re.search(r"从 (\S+) 倍到 \1 倍|from (\S+)× to \2×", said)
        assert ("all 3 runs agree" in said) if lang == "en" else ("3 次运行结果一致" in said)
        if lang == "en":
            assert "is narrower than the work gap" in said and "A straight line" in said and share in said
        else:
            assert "比" in said and "拟合成一条直线" in said and share in said
    finally:
        shown_for(page, real)


def test_every_chart_of_the_loop_has_ticked_axes_with_titles(any_page):
    for chart in any_page.locator("#s04 .chart").all():
        assert chart.locator("line.tick").count() >= 4
        numbers = [t for t in chart.locator("svg text").all_text_contents() if re.fullmatch(r"[\d.,]+\s?[KMB万亿]?", t)]
        assert len(numbers) >= 4  # tick labels on both axes
        titles = chart.locator('svg text[font-weight="600"]').all_text_contents()
        assert len(titles) >= 2  # the value axis's title (with its unit) and the step axis's


def test_the_loop_is_all_in_the_pages_language(any_page):
    found = [f for f in foreign_text(any_page) if f[0].split(" ")[0] in (*LOOP_WIDGETS, "s04")]
    assert not found, "\n".join(map(str, sorted(set(found))))
    assert not [e for e in any_page.errors if "W-" in e and any(w in e for w in LOOP_WIDGETS)]
