"""The explorer's honest states: a widget's error inside that widget, a result that is out of date saying so, every
widget following the prompt or naming its own input, a model switch keeping the page, and a first paint under a
second. Each was once a defect (issue 37)."""

from __future__ import annotations

import re

import pytest
from test_explorer_fixtures import (
    DEFAULT_PROMPT,
    idle,
    needs_chromium,
    open_page,
    readout,
    set_range,
    use_prompt,
    wait_for,
)

pytestmark = needs_chromium
CJK = re.compile(r"[\u4e00-\u9fff]")


def state_of(page, widget: str) -> str:
    return page.locator(f'[data-widget="{widget}"]').get_attribute("data-state")


def wait_state(page, widget: str, state: str) -> None:
    page.wait_for_function("([w, s]) => document.querySelector(`[data-widget=\"${w}\"]`).dataset.state === s",
                           arg=[widget, state], timeout=60_000)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_widgets_error_shows_inside_it_and_marks_its_last_result(pages, stored, lang):
    """The ring with a prompt longer than its slots is refused (400): the refusal shows in the ring's own box, in the
    page's language, and the run before it stays on screen marked out of date, not as if it were current."""
    page, w = pages(1280, lang), '[data-widget="W-ring-overflow"]'
    page.fill("#ring-prompt", "One two three four five")
    set_range(page, "#ring-capacity", 8)
    page.locator(f"{w} .run").click()
    wait_state(page, "W-ring-overflow", "current")
    long = "one two three four five six seven eight nine ten eleven twelve thirteen"
    assert len(stored.encode(long)) > 6
    page.fill("#ring-prompt", long)
    set_range(page, "#ring-capacity", 6)
    assert state_of(page, "W-ring-overflow") == "stale"  # its inputs moved on: said before it is even run
    page.locator(f"{w} .run").click()
    notice = page.locator(f"{w} .notice.error")
    notice.wait_for(state="visible", timeout=60_000)
    idle(page)
    text = notice.inner_text()
    assert ("6 slots" in text) if lang == "en" else (CJK.search(text) and "6" in text)
    assert state_of(page, "W-ring-overflow") == "stale"  # the previous run still shown, marked
    assert page.locator("#status").inner_text() == ""  # not the status line at the top
    button, box = page.locator(f"{w} .run").bounding_box(), notice.bounding_box()
    assert 0 < box["y"] - button["y"] < 600  # beside the button pressed, not thousands of pixels away
    page.fill("#ring-prompt", "One two three four five")
    set_range(page, "#ring-capacity", 8)
    page.locator(f"{w} .run").click()
    wait_state(page, "W-ring-overflow", "current")
    assert not notice.is_visible()


def test_an_explorer_that_does_not_answer_is_said_in_each_widget_asked(pages):
    page = pages(1280, "en")
    page.evaluate("""() => {  // a server that has gone: every request fails
      window.__fetch = window.fetch; window.fetch = () => Promise.reject(new TypeError("Failed to fetch")); }""")
    try:
        set_range(page, "#intensity-p", 33)  # a widget with a result: kept, marked out of date
        notice = page.locator('[data-widget="W-intensity"] .notice.error')
        notice.wait_for(state="visible", timeout=60_000)
        assert "did not answer" in notice.inner_text() and state_of(page, "W-intensity") == "stale"
        page.fill("#loop-prompt", "I like to eat apples and apples and")  # one run at open only: its first result
        page.locator('[data-widget="W-greedy-loop"] .run').click()    # kept, out of date, the error said
        wait_state(page, "W-greedy-loop", "stale")
        assert "did not answer" in page.locator('[data-widget="W-greedy-loop"] .notice.error').inner_text()
    finally:
        page.evaluate("() => { window.fetch = window.__fetch; }")
    set_range(page, "#intensity-p", 16)
    wait_state(page, "W-intensity", "current")
    assert "P = 16" in readout(page, "W-intensity") and not notice.is_visible()


def test_results_follow_the_prompt_or_say_they_are_out_of_date(pages, stored):
    page = pages(1280, "en")
    use_prompt(page, stored, DEFAULT_PROMPT)
    for w in ("W-position-bug", "W-greedy-loop"):
        page.locator(f'[data-widget="{w}"] .run').click()
        wait_state(page, w, "current")
    use_prompt(page, stored, "the dog and the cat and the bird")
    # the page's prompt moved on: the position bug (run on it) says so; the greedy loop runs on its own prompt
    assert state_of(page, "W-position-bug") == "stale"
    assert "prompt changed" in page.locator('[data-widget="W-position-bug"] .notice').inner_text()
    assert state_of(page, "W-greedy-loop") == "current"
    assert "its own prompt" in page.locator('[data-widget="W-greedy-loop"] .runs-on').inner_text()
    automatic = page.locator("[data-widget]").evaluate_all("ws => ws.map(w => [w.dataset.widget, w.dataset.state])")
    assert [w for w, s in automatic if s != "current" and w not in ("W-position-bug",)] == []
    ids = stored.encode("the dog and the cat and the bird")
    pieces = [f"{i}: \"{stored.tokenizer.piece(t)}\"" for i, t in enumerate(ids)]
    assert page.locator("#reach-token option").all_inner_texts() == pieces
    page.locator('[data-widget="W-position-bug"] .run').click()
    wait_state(page, "W-position-bug", "current")
    assert not page.locator('[data-widget="W-position-bug"] .notice').is_visible()
    for w in page.locator("[data-widget] .runs-on").all():  # every widget says what it runs on
        assert w.inner_text().strip()
    use_prompt(page, stored, DEFAULT_PROMPT)


def test_the_lookup_slider_label_follows_a_shorter_prompt(pages, stored):
    page = pages(1280, "en")
    use_prompt(page, stored, DEFAULT_PROMPT)
    set_range(page, "#lookup-pos", 9)
    wait_for(page, "W-lookup", "position 9:")
    short = "the cat sat on the"
    use_prompt(page, stored, short)
    last = len(stored.encode(short)) - 1
    assert page.locator("#lookup-pos + output").inner_text() == str(last)
    assert page.locator("#lookup-pos").input_value() == str(last)
    rows = page.locator("#token-table tbody tr")
    assert rows.nth(last).get_attribute("class") == "current"
    assert readout(page, "W-lookup").startswith(f"position {last}:")
    use_prompt(page, stored, DEFAULT_PROMPT)


def test_switching_the_model_keeps_the_prompt_and_the_page(pages, stored):
    """On the Chinese page (the language not the default, so that the reload below keeps it or fails)."""
    lang = "zh"
    page = pages(1280, lang)
    page.errors.clear()  # (the tests above asked for refusals on purpose)
    first = page.locator("#model-select option").first
    assert first.get_attribute("value") == stored.config.name  # the id stays the id
    assert first.inner_text() == "SmolLM2 135M Instruct · Q4_1"  # the name is the family, size and format
    prompt = "the dog and the cat"
    use_prompt(page, stored, prompt)
    set_range(page, "#depth-n", 30)
    wait_for(page, "W-depth", "N = 30")
    page.evaluate("window.__same_page = true")
    page.select_option("#model-select", "smollm-again")
    page.wait_for_function("new URL(location.href).searchParams.get('model') === 'smollm-again'")
    idle(page)
    assert page.evaluate("window.__same_page") is True  # no reload
    assert page.locator("#prompt").input_value() == prompt
    assert page.locator("#depth-n").input_value() == "30"
    assert page.locator("#token-table tbody tr").count() == len(stored.encode(prompt))
    assert page.locator("#model-select option").nth(1).inner_text() == "SmolLM2 135M Instruct · Q4_1 (smollm-again)"
    assert page.locator("#model-name").inner_text() == "SmolLM2 135M Instruct · Q4_1 (smollm-again)"
    # a reload (or the address shared) opens the same page: the model, the language and the prompt
    page.reload()
    page.wait_for_selector("body[data-ready=true]", timeout=120_000)
    idle(page)
    assert page.locator("#prompt").input_value() == prompt
    assert page.locator("#model-select").input_value() == "smollm-again"
    assert page.evaluate("document.documentElement.lang") == ("zh-CN" if lang == "zh" else "en")
    page.select_option("#model-select", stored.config.name)
    page.wait_for_function("!new URL(location.href).searchParams.has('model')")
    idle(page)
    use_prompt(page, stored, DEFAULT_PROMPT)
    assert page.errors == [], page.errors


def test_a_model_it_does_not_have_is_said_beside_the_menu(pages):
    base = pages(1280, "zh")
    page = open_page(base.context.browser, base.base + "?model=nope&lang=zh", 1280)
    try:
        error = page.locator("#model-error")
        assert error.is_visible() and CJK.search(error.inner_text()) and "nope" in error.inner_text()
        first = page.locator("#model-select option").first.get_attribute("value")
        assert page.locator("#model-select").input_value() == first  # and the page runs on the first model
    finally:
        page.context.close()


def test_the_words_are_on_the_page_before_any_data_is_asked_for(pages):
    """Every section's title and prose are written before the page's first request for data, so the article reads
    while the model computes (its speed: bench/explorer.py)."""
    base = pages(1280, "en")
    page = base.context.browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    try:
        page.goto(base.base, wait_until="commit")
        page.wait_for_function("performance.getEntriesByName('first-contentful-paint').length > 0", timeout=60_000)
        page.wait_for_selector("body[data-ready=true]", timeout=120_000)
        words = page.evaluate("performance.getEntriesByName('forwardpass:text')[0].startTime")
        asked = page.evaluate("Math.min(...performance.getEntriesByType('resource')"
                              ".filter((r) => new URL(r.name).pathname.startsWith('/api/')).map((r) => r.startTime))")
        assert words <= asked
        assert page.locator("h1").inner_text().strip() and page.locator("#s07 h2").inner_text().strip()
    finally:
        page.context.close()
