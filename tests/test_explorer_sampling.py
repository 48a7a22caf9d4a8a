"""§03 of the explorer, what comes out: the article's five words on the real model, the logit lens, temperature, top-k
and top-p with the article's settings one click away, and greedy decoding's loop with one sample tried at every step.
The numbers are held against the model itself in Python; the page is driven in Chromium at 1280 and 390 px in both
languages: its presets set the article's states, its prose says the numbers its widgets compute, its verdicts say what
happened, and nothing on it is in the other language."""

from __future__ import annotations

import re

import pytest
import torch
from test_explorer_fixtures import (
    foreign_text,
    idle,
    needs_chromium,
    preset_button,
    readout,
    use_prompt,
)

from forwardpass.article.collapse import detect_loop
from forwardpass.explorer import compute, greedy, lens, story
from forwardpass.loop import generate
from forwardpass.sampling import SEED_CANDIDATES, SamplingParams, probabilities

LOOP_PROMPT = "I like to eat apples and bananas and"  # the widget's own default prompt


SEARCHED: dict[tuple, dict] = {}


def searched_loop(stored, prompt: str, steps: int, sample_at: int | None, seed: int) -> dict:
    """compute.greedy_loop's answer (under the model's lock, which the caller holds), computed once for the module:
    several tests read the same search."""
    key = (id(stored), prompt, steps, sample_at, seed)
    if key not in SEARCHED:
        SEARCHED[key] = compute.greedy_loop(stored, prompt, steps, sample_at, seed)
    return SEARCHED[key]
CHINESE = "猫坐在垫子上"


def own_logits(fp, prompt: str) -> torch.Tensor:
    """The model's next-token logits after `prompt`: a plain forward pass of fp.model, its last position."""
    with torch.inference_mode():
        return fp.model(torch.tensor([fp.encode(prompt)], device=fp.device), last_only=True)[0][0, 0].float()


# ---- the numbers, against the model -------------------------------------------------------------------------------
def test_the_five_words_are_scored_by_the_model(stored):
    with compute.model_lock(stored):
        d = story.candidates(stored)
    logits = own_logits(stored, "the cat sat on the")
    probs = torch.softmax(logits, -1)
    assert d["prompt"] == "the cat sat on the" and [w["word"] for w in d["words"]] == list(SEED_CANDIDATES)
    for w in d["words"]:
        first = w["ids"][0]
        assert w["ids"] == stored.encode("the cat sat on the " + w["word"])[5:]  # as the model spells it there
        assert w["logit"] == float(logits[first]) and w["probability"] == float(probs[first])
        assert w["rank"] == int((logits > logits[first]).sum()) + 1
        assert w["toy_logit"] == SEED_CANDIDATES[w["word"]]
    sofa = next(w for w in d["words"] if w["word"] == "sofa")  # " so" + "fa" on SmolLM2: the pieces multiplied
    assert sofa["pieces"] == [" so", "fa"]
    rest = torch.softmax(own_logits(stored, "the cat sat on the so"), -1)[sofa["ids"][1]]
    assert sofa["word_probability"] == pytest.approx(sofa["probability"] * float(rest), rel=1e-5)
    top = torch.topk(probs, 5).indices.tolist()
    assert [t["id"] for t in d["top"]] == top
    # and an independent forward pass (every position's logits, not only the last) agrees to float precision
    full = stored.next_token_logits(stored.encode("the cat sat on the"))
    assert [w["logit"] for w in d["words"]] == pytest.approx([float(full[w["ids"][0]]) for w in d["words"]], abs=1e-4)


@pytest.mark.parametrize("prompt", ["The cat sat on the mat, and the cat slept.", CHINESE])
def test_the_logit_lens_last_row_is_the_models_own_output_exactly(stored, prompt):
    with compute.model_lock(stored):
        d = lens.logit_lens(stored, prompt)
    logits = own_logits(stored, prompt)
    probs = torch.softmax(logits, -1)
    top = torch.topk(probs, lens.TOP).indices.tolist()
    want = [(i, float(logits[i]), float(probs[i])) for i in top]
    for row in (d["rows"][-1], d["model"]):  # exactly: the same floats, not close ones
        assert [(t["id"], t["logit"], t["probability"]) for t in row["top"]] == want
    assert d["last_row_is_the_models"] is True and len(d["rows"]) == stored.config.n_layers
    assert d["answer"]["id"] == top[0] and d["rows"][-1]["answer_rank"] == 1
    assert all(r["answer_rank"] == 1 for r in d["rows"][d["settled"] - 1:])


def test_the_logit_lens_endpoint_gives_the_same_floats(stored):
    from fastapi.testclient import TestClient

    from forwardpass.explorer.app import build_explorer

    client = TestClient(build_explorer(stored))
    d = client.post("/api/logit-lens", json={"prompt": "the cat sat on the"}).json()
    probs = torch.softmax(own_logits(stored, "the cat sat on the"), -1)
    top = torch.topk(probs, lens.TOP).indices.tolist()
    assert [(t["id"], t["probability"]) for t in d["rows"][-1]["top"]] == [(i, float(probs[i])) for i in top]
    five = client.post("/api/candidates", json={}).json()
    assert [w["word"] for w in five["words"]] == list(SEED_CANDIDATES)
    assert client.post("/api/logit-lens", json={"prompt": ""}).json()["code"] == "empty_prompt"


def test_the_greedy_search_equals_a_direct_count(stored):
    """The search (one batch through the engine) against each step run on its own, as a reader's single try would:
    the draw at that step alone (every step), then greedy decoding alone and the engine's loop test on the window (a
    quarter of the steps, step 10 among them: each such run is a whole generation; where the draw is greedy's own
    token the window is greedy's)."""
    steps, seed = 64, 1
    with compute.model_lock(stored):
        d = compute.greedy_loop(stored, LOOP_PROMPT, steps, 10, seed)
    ids = stored.encode(LOOP_PROMPT)
    base = generate(stored, ids, SamplingParams(temperature=0, max_tokens=steps, ignore_eos=True))
    assert base.loop is not None and d["greedy"]["loop"] == base.loop.to_dict()
    checked = [s for s in range(greedy.searched(steps)) if s % 4 == 1 or s == 10]
    broke, differ = [], 0
    for s in range(greedy.searched(steps)):
        head = base.token_ids[:s]
        draw = generate(stored, ids + head, SamplingParams(temperature=1.0, seed=seed, max_tokens=1, ignore_eos=True))
        assert d["rows"][s]["sampled_id"] == draw.token_ids[0], s
        differ += draw.token_ids[0] != base.token_ids[s]
        if s not in checked:
            continue
        tokens = head + draw.token_ids
        if draw.token_ids[0] == base.token_ids[s]:
            tokens = base.token_ids
        else:
            tokens += generate(stored, ids + tokens, SamplingParams(temperature=0, max_tokens=steps - s - 1,
                                                                    ignore_eos=True)).token_ids
        assert d["rows"][s]["text"] == stored.tokenizer.decode(tokens), s
        if detect_loop(tokens) is None:
            broke.append(s)
    assert [s for s in d["broke"] if s in checked] == broke and d["differ"] == differ and d["searched"] == 32
    assert d["forced"]["sample_at"] == 10 and d["forced"]["loop"] == d["rows"][10]["loop"]


def test_a_draw_equal_to_greedys_token_changes_nothing(stored):
    with compute.model_lock(stored):
        d = searched_loop(stored, LOOP_PROMPT, 64, None, 1)
    same = [r for r in d["rows"] if r["sampled_id"] == r["greedy_id"]]
    assert same  # with this prompt and seed several steps draw greedy's own token
    for r in same:
        assert r["same_token"] and r["same_text"] and r["text"] == d["greedy"]["text"]
        assert r["loop"] == d["greedy"]["loop"] and not r["broke"]


CAT = "🐱"  # greedy decoding does not loop after it within the window


def test_each_steps_outcome_is_said_against_what_greedy_did(stored):
    """Where greedy decoding does not loop there is no loop to break: a draw leaves it without a loop or brings one
    (the strip once counted "loop broken (29)" after a prompt whose verdict said greedy never looped)."""
    with compute.model_lock(stored):
        free = searched_loop(stored, CAT, 64, None, 1)
        looped = searched_loop(stored, LOOP_PROMPT, 64, None, 1)
    assert free["greedy"]["loop"] is None and looped["greedy"]["loop"] is not None
    same = lambda r: r["same_token"] or r["same_text"]  # noqa: E731
    for r in free["rows"]:
        assert r["outcome"] == ("same" if same(r) else "appeared" if r["loop"] else "changed")
    for r in looped["rows"]:
        assert r["outcome"] == ("same" if same(r) else "broke" if r["broke"] else "again")
    assert [r["step"] for r in looped["rows"] if r["outcome"] == "broke"] == looped["broke"]


def test_the_sample_step_must_be_in_the_windows_first_half(stored):
    with pytest.raises(Exception) as e:
        compute.greedy_loop(stored, LOOP_PROMPT, 64, 40, 1)
    assert e.value.code == "sample_window" and e.value.params == {"n": 32}


# ---- the page -----------------------------------------------------------------------------------------------------
def widget(page, name):
    return page.locator(f'[data-widget="{name}"]')


def wait_current(page, name):
    page.wait_for_function("n => { const w = document.querySelector(`[data-widget=\"${n}\"]`);"
                           " return w.dataset.state === 'current' && !w.hasAttribute('aria-busy'); }",
                           arg=name, timeout=120_000)
    idle(page)


CONTROL = {"W-temperature": "temperature", "W-top-k": "top-k", "W-top-p": "top-p"}  # each widget's slider


def preset(page, name, value):
    preset_button(page, name, CONTROL[name], value).click()
    page.wait_for_function("([n, v]) => { const w = document.querySelector(`[data-widget=\"${n}\"]`);"
                           " return w.querySelector('input[type=range]').value === v"
                           " && !w.hasAttribute('aria-busy'); }",
                           arg=[name, str(value)], timeout=60_000)
    wait_current(page, name)


def kept_bars(page, name):
    """How many of the toy's five bars are drawn in the kept colour (the dropped ones are grey)."""
    fills = widget(page, name).locator(".toy svg rect").evaluate_all("els => els.map(e => e.getAttribute('fill'))")
    return sum(f != "#767676" and f != "#8a939e" for f in fills)


def told(page, name):
    return widget(page, name).locator(".prose.told").inner_text()


def toy(temperature=1.0):
    return probabilities(torch.tensor(list(SEED_CANDIDATES.values())), temperature).tolist()


@needs_chromium
def test_presets_set_the_articles_states(any_page):
    page = any_page
    preset(page, "W-temperature", 1)
    mat = "mat" if page.lang == "en" else "“mat”"  # a toy word in Chinese prose stands in quotation marks
    assert f"{100 * toy(1)[0]:.1f}%" == "68.7%" and f"{mat} 68.7%" in readout(page, "W-temperature")
    preset(page, "W-temperature", 0.1)
    assert f"{mat} 99.998%" in readout(page, "W-temperature")  # nearly everything, and said so: never "100.0%"
    preset(page, "W-top-k", 1)
    assert kept_bars(page, "W-top-k") == 1
    # each bar is the probability before the cut, and after the arrow what renormalizing makes of it
    bars = widget(page, "W-top-k").locator(".toy svg text").all_text_contents()
    assert "68.7% → 100%" in bars and "31.3% → 0" not in bars and any(b.endswith("→ 0") for b in bars)
    preset(page, "W-top-p", 0.9)
    assert kept_bars(page, "W-top-p") == 2
    probs = toy(1)
    bars = widget(page, "W-top-p").locator(".toy svg text").all_text_contents()
    assert f"68.7% → {100 * probs[0] / (probs[0] + probs[1]):.1f}%" in bars
    text = readout(page, "W-top-p")
    assert ("2 of 5 toy candidates survive (mat, rug)" if page.lang == "en" else "留下 2 个（“mat”、“rug”）") in text


@needs_chromium
def test_the_prose_says_what_the_widgets_compute(any_page):
    """The article's numbers in the prose are read from the same results the presets show, in either language."""
    page = any_page
    probs = toy(1)
    for t in (1, 0.1):
        preset(page, "W-temperature", t)
        shown = re.search(r"mat”? ?(\d+\.\d+%)", readout(page, "W-temperature")).group(1)
        assert shown in told(page, "W-temperature")
    assert "68.7%" in told(page, "W-temperature") and "99.998%" in told(page, "W-temperature")
    preset(page, "W-top-p", 0.9)
    prose = told(page, "W-top-p")
    mass = f"{100 * (probs[0] + probs[1]):.1f}%"
    assert mass == "91.6%" and mass in prose and "mat" in prose and "rug" in prose
    assert ("exactly two survive" if page.lang == "en" else "恰好留下两个") in prose
    renorm = [f"{100 * p / (probs[0] + probs[1]):.1f}%" for p in probs[:2]]
    assert renorm == ["75.0%", "25.0%"] and all(r in prose for r in renorm)
    preset(page, "W-top-k", 1)
    prose = told(page, "W-top-k")
    assert f"{100 * (1 - probs[0]):.1f}%" in prose and ("k = 1" in prose)
    assert ("one candidate is left" if page.lang == "en" else "只剩一个候选") in prose
    assert ("its 68.7% becomes 100%" if page.lang == "en" else "它的 68.7% 变成 100%") in prose
    wait_current(page, "W-logits")
    prose = told(page, "W-logits")
    assert "4.0" in prose and "mat" in prose and "1.1" in prose  # mat leads at 4.0, 1.1 ahead of rug
    # the model's lead among the five is derived, and said naturally; the toy is never "the article's"
    assert ("also puts mat first" if page.lang == "en" else "同样让“mat”领先") in prose
    section = page.locator("#s03").inner_text()
    assert "the article" not in section and "文章里" not in section and "文章给" not in section
    assert page.lang == "en" or "先看分数是编出来的五个候选" in section
    # Chinese sets a toy word off in quotation marks, not in spaces; its blank is a line (横线), not a space (空格)
    if page.lang == "zh":
        assert "沿用一个例子：“" in section and "横线处的五个候选" in section and "空格处" not in section
        for widget in ("W-logits", "W-temperature", "W-top-k"):
            assert "“mat”" in told(page, widget) and " mat " not in told(page, widget)


@needs_chromium
def test_the_five_words_on_the_page_are_the_models(pages, stored):
    page = pages(1280, "en")
    wait_current(page, "W-logits")
    logits = own_logits(stored, "the cat sat on the")
    labels = widget(page, "W-logits").locator(".five svg text").all_text_contents()
    for w in SEED_CANDIDATES:
        first = stored.encode("the cat sat on the " + w)[5]
        assert f"{float(logits[first]):.2f} (rank {int((logits > logits[first]).sum()) + 1:,})" in labels
    prose = told(page, "W-logits")
    top = stored.tokenizer.piece(int(logits.argmax()))
    assert f'"{top}"' in prose and "never listed" in prose  # the model's own first choice is not one of the five
    # a top token that is only the start of a word (" cou") is said to be one, with how the model goes on after it
    with compute.model_lock(stored):
        d = story.candidates(stored)
    starts = [t for t in d["top"] if t["goes_on"]]
    assert [t["piece"] for t in starts] == [" cou"]  # SmolLM2's second choice; " couch" is a token of its own
    for t in starts:
        after = stored.tokenizer.piece(int(torch.softmax(own_logits(stored, "the cat sat on the" + t["piece"]), -1)
                                           .argmax()))
        assert after == t["goes_on"][0]["piece"] == "l"
        assert f'"{t["piece"]}", is not a word but the start of one' in prose and f'"{after}"' in prose


@needs_chromium
def test_the_lens_last_row_is_the_models_output_in_the_browser(any_page, stored):
    page = any_page
    wait_current(page, "W-logit-lens")
    rows = widget(page, "W-logit-lens").locator("tbody tr")
    cells = lambda r: r.locator("td").all_inner_texts()  # noqa: E731
    last, model = cells(rows.nth(rows.count() - 2)), cells(rows.nth(rows.count() - 1))
    assert last == model and len(last) == 5 and rows.count() == stored.config.n_layers + 1
    probs = torch.softmax(own_logits(stored, page.locator("#prompt").input_value()), -1)
    top = torch.topk(probs, 5)
    assert [c.split("\n")[-1] for c in last] == [f"{100 * p:.1f}%" for p in top.values.tolist()]  # none near 100%
    # every piece written as the page writes pieces: whitespace-only ones with ␣ ↵, never as a quoted blank
    with compute.model_lock(stored):
        d = lens.logit_lens(stored, page.locator("#prompt").input_value())
    shown = widget(page, "W-logit-lens").locator("tbody td .token").all_inner_texts()
    want = [readable(t["piece"]) for r in [*d["rows"], d["model"]] for t in r["top"][:5]]
    assert shown == want and any(x.startswith(("␣", "↵")) for x in shown)
    assert '" "' not in shown and '"\\n"' not in shown


def readable(s: str) -> str:
    """A piece as lib/i18n.js pieceLabel writes it (no raw bytes here): whitespace-only as ␣ ↵ ⇥, else quoted."""
    import json
    if s and s.isspace():
        return "".join({" ": "␣", "\n": "↵", "\t": "⇥", "\r": "␍"}.get(ch, "␣") for ch in s)
    return json.dumps(s, ensure_ascii=False)


@needs_chromium
def test_the_lens_says_only_the_last_block_when_the_answer_comes_there(pages, stored):
    """On "def f():" the answer (a line break and an indent) first tops a row after block 30 of 30: the prose says
    "only after the last block", never "from block 30 on", and writes the answer's whitespace visibly."""
    prompt = "def f():"
    with compute.model_lock(stored):
        d = lens.logit_lens(stored, prompt)
    n = stored.config.n_layers
    assert d["first_top"] == d["settled"] == n and d["answer"]["piece"].isspace()
    answer = readable(d["answer"]["piece"])
    for lang in ("en", "zh"):
        page = pages(1280, lang)
        use_prompt(page, stored, prompt)
        try:
            wait_current(page, "W-logit-lens")
            prose = told(page, "W-logit-lens")
            assert answer in prose and answer.startswith("↵␣")
            if lang == "en":
                assert f"only after the last block, block {n}" in prose and "from block" not in prose
            else:
                assert f"只在最后一个块（第 {n} 个）之后" in prose and "个块起" not in prose
                assert "logit lens" in prose and "透镜" not in page.locator("#s03").inner_text()
        finally:
            use_prompt(page, stored, "The cat sat on the mat, and the cat slept.")


@needs_chromium
def test_the_seed_is_in_the_pages_language(pages):
    page = pages(1280, "zh")
    w = widget(page, "W-greedy-loop")
    assert w.get_attribute("data-state") == "current"  # run once at open, on the seed it shows
    assert w.locator(".s03-seed").inner_text() == "随机种子 1"
    assert "seed" not in w.inner_text().lower()
    page.locator('[data-lang="en"]').click()
    try:
        assert w.locator(".s03-seed").inner_text() == "seed 1"
    finally:
        page.locator('[data-lang="zh"]').click()
    assert w.locator(".s03-seed").inner_text() == "随机种子 1"


def run_greedy(page, button=".run"):
    w = widget(page, "W-greedy-loop")
    w.locator(".readout").evaluate("e => { e.textContent = ''; }")
    w.locator(button).click()
    page.wait_for_function("document.querySelector('[data-widget=\"W-greedy-loop\"] .readout').textContent !== ''",
                           timeout=180_000)
    wait_current(page, "W-greedy-loop")


def pick_step(page, step):
    page.locator("#loop-at").evaluate("(e, v) => { e.value = v; e.dispatchEvent(new Event('input')); }", str(step))


@needs_chromium
def test_the_greedy_verdict_when_the_draw_is_greedys_own_token(pages, stored):
    """Once the verdict said "the sample changed the text, and greedy decoding after it looped again" when the draw
    was greedy's own token and both texts were the same."""
    with compute.model_lock(stored):
        d = searched_loop(stored, LOOP_PROMPT, 64, None, 1)
    same = next(r["step"] for r in d["rows"] if r["same_token"])
    for lang in ("en", "zh"):
        page = pages(1280, lang)
        run_greedy(page)
        pick_step(page, same)
        text = readout(page, "W-greedy-loop")
        if lang == "en":
            assert f"one sample at step {same} (seed 1)" in text and "greedy's own token" in text
            assert "the text is identical and the loop untouched" in text and "changed the text" not in text
        else:
            assert f"在第 {same} 步采样一次（随机种子 1）" in text and "正是贪心会取的词元" in text
            assert "文字完全相同" in text
        forced = widget(page, "W-greedy-loop").locator(".forced").inner_text().split("\n", 1)[1]
        assert forced == widget(page, "W-greedy-loop").locator(".greedy").inner_text().split("\n", 1)[1]


@needs_chromium
def test_the_search_count_is_the_engines_and_redraw_changes_the_seed(pages, stored):
    page = pages(1280, "en")
    run_greedy(page)
    with compute.model_lock(stored):
        d = searched_loop(stored, LOOP_PROMPT, 64, None, 1)
    k = len(d["broke"])
    text = readout(page, "W-greedy-loop")
    assert (f"breaks the loop at {k} of the 32" if k else "breaks the loop at none of them") in text
    assert f"differs from greedy's token at {d['differ']}" in text
    strip = widget(page, "W-greedy-loop").locator(".strip")
    assert strip.locator("rect[data-step]").count() == 32
    assert f"the loop is broken at {k}" in strip.get_attribute("aria-label")
    broke_here = d["rows"][10]["broke"]
    pick_step(page, 10)
    assert ("step 10, the one shown, is one of them" if broke_here else "step 10, the one shown, is not") in \
        readout(page, "W-greedy-loop") or k == 0
    seeds = [widget(page, "W-greedy-loop").locator(".s03-seed").inner_text()]
    run_greedy(page, ".redraw")  # a new seed, shown, and the search run again on it
    seeds.append(widget(page, "W-greedy-loop").locator(".s03-seed").inner_text())
    assert len(set(seeds)) == 2 and seeds[0] == "seed 1"
    seed = int(seeds[-1].split()[-1])
    assert f"(seed {seed})" in readout(page, "W-greedy-loop")
    with compute.model_lock(stored):
        again = compute.greedy_loop(stored, LOOP_PROMPT, 64, None, seed)
    k = len(again["broke"])
    assert (f"breaks the loop at {k} of the 32" if k else "breaks the loop at none of them") in \
        readout(page, "W-greedy-loop")


@needs_chromium
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_strips_legend_counts_only_what_happened(pages, stored, lang):
    page = pages(1280, lang)
    before = page.locator("#loop-prompt").input_value()
    page.fill("#loop-prompt", CAT)
    try:
        with page.expect_response(lambda r: "/api/greedy-loop" in r.url) as answer:  # at the seed the page holds
            run_greedy(page)
        d = answer.value.json()
        assert d["greedy"]["loop"] is None
        legend = widget(page, "W-greedy-loop").locator(".strip svg text").all_text_contents()
        counted = {m.group(1): int(m.group(2)) for x in legend if (m := re.fullmatch(r"(.+) \((\d+)\)", x))}
        assert not [name for name in counted if ("broken" in name or "again" in name or "打破" in name
                                                 or "又绕回" in name)]
        outcomes = [r["outcome"] for r in d["rows"]]
        assert sorted(counted.values()) == sorted(outcomes.count(k) for k in ("same", "changed", "appeared"))
    finally:
        page.fill("#loop-prompt", before)


@needs_chromium
def test_byte_pieces_read_as_bytes_and_stay_out_of_the_bars(pages, stored):
    for width in (1280, 390):
        page = pages(width, "en")
        use_prompt(page, stored, CHINESE)
        try:
            wait_current(page, "W-temperature")
            chart = widget(page, "W-temperature").locator(".real")
            words = chart.locator("svg text").all_text_contents()
            assert not any("<0x" in w for w in words) and any("⟨" in w for w in words)
            overlaps = chart.evaluate("""el => {  // a label whose box reaches into a bar's
              const bars = [...el.querySelectorAll('rect')].map(r => r.getBBox());
              return [...el.querySelectorAll('text')].filter(t => {
                const b = t.getBBox();
                return bars.some(r => b.x < r.x + r.width && r.x < b.x + b.width
                  && b.y < r.y + r.height && r.y < b.y + b.height);
              }).map(t => t.textContent); }""")
            assert overlaps == []  # and no note of its own: the page says how a byte is written once, in §1
            assert "raw byte" not in widget(page, "W-temperature").inner_text()
        finally:
            use_prompt(page, stored, "The cat sat on the mat, and the cat slept.")


@needs_chromium
def test_nothing_on_the_section_is_in_the_other_language(any_page, stored):
    page = any_page
    run_greedy(page)
    assert [x for x in foreign_text(page) if x[0].startswith(("W-logit", "W-temp", "W-top", "W-greedy", "s03"))] == []
    use_prompt(page, stored, CHINESE)
    try:
        assert [x for x in foreign_text(page) if x[0].startswith(("W-logit", "W-temp", "W-top", "s03"))] == []
    finally:
        use_prompt(page, stored, "The cat sat on the mat, and the cat slept.")
