"""The explorer end to end in headless Chromium (Debian's, driven by Playwright): every widget live with the engine's
numbers, the prose in both languages, and a page readable at 1280 and 390 CSS pixels."""

from __future__ import annotations

import re

import pytest
from test_explorer_fixtures import (
    DEFAULT_PROMPT,
    chromium,
    idle,
    needs_chromium,
    open_page,
    readout,
    set_range,
    use_prompt,
    wait_for,
)

WIDGETS = ["W-lookup", "W-stages", "W-depth", "W-residual", "W-block-steps", "W-reach", "W-split", "W-norm",
           "W-logits", "W-temperature", "W-top-k", "W-top-p", "W-greedy-loop", "W-autoregress", "W-naive-vs-cached",
           "W-cost-toy", "W-cost-gpt2", "W-cache-fill", "W-cache-memory", "W-ring-overflow", "W-position-bug",
           "W-intensity", "W-weights-vs-cache", "W-concurrency", "W-param-split", "W-loop-walk", "W-loop-cost",
           "W-reopen"]  # SEED.md's widgets, in its order
PAGE = WIDGETS[:6] + ["W-attention"] + WIDGETS[6:]  # and attention opened up, after W-reach
WIDGETS_ON_PAGE = "els => [...document.querySelectorAll('[data-widget]')].map(e => e.dataset.widget)"

pytestmark = needs_chromium


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


@pytest.fixture(scope="module", params=[1280, 390], ids=["1280px", "390px"])
def page(request, browser, explorer_url):
    page = open_page(browser, explorer_url, request.param)
    yield page
    page.context.close()


def at_one_width(page) -> None:
    """Behaviour that does not depend on the page's width is checked at 1280 px only."""
    if page.width != 1280:
        pytest.skip("the same at every width: checked at 1280 px")


def test_loads_without_errors_or_network(page):
    assert page.errors == [] and page.external == []


def test_every_widget_in_order_with_a_control_and_a_readout(page):
    found = page.locator("[data-widget]").evaluate_all("els => els.map(e => e.dataset.widget)")
    assert [w for w in found if w in PAGE] == PAGE  # the article's widgets in its order (and any new ones between)
    for name in found:
        w = page.locator(f'[data-widget="{name}"]')
        title = w.locator("h3").inner_text()
        assert title.strip() and not title.startswith("W-")  # a plain title, not the widget's id
        assert w.locator(".readout").inner_text().strip()  # live: it has said something
        assert w.locator("[aria-live]").count() == 1 and w.locator("[aria-live=polite]").count() == 1
        # a control, unless the widget says it has none (W-logits and W-param-split: in the article either)
        assert w.locator("input, button, select").count() >= 1 or w.get_attribute("data-no-control") is not None
    for control in page.locator("input, select").all():  # every control has a label
        cid = control.get_attribute("id")
        labelled = cid and page.locator(f'label[for="{cid}"]').count() or control.evaluate("e => !!e.closest('label')")
        assert labelled, cid
    for chart in page.locator(".chart, .grid").all():  # every chart has a text alternative
        assert chart.get_attribute("role") == "img" and (chart.get_attribute("aria-label") or "").strip()


def test_depth_48(page):
    set_range(page, "#depth-n", 48)
    assert "379.6M" in wait_for(page, "W-depth", "N = 48")


def test_temperature_1_mat(page):
    set_range(page, "#temperature", 1)
    assert "mat 68.7%" in wait_for(page, "W-temperature", "T = 1.00")


def test_top_p_09_two_candidates(page):
    set_range(page, "#top-p", 0.9)
    assert "2 of 5 toy candidates survive (mat, rug)" in wait_for(page, "W-top-p", "p = 0.90")


def test_cache_memory(page):
    set_range(page, "#context", 2048)
    assert "9.00 GiB" in wait_for(page, "W-cache-memory", "2,048 tokens")
    set_range(page, "#context", 512)
    assert "2.25 GiB" in wait_for(page, "W-cache-memory", "512 tokens")


def test_concurrency_37(page):
    set_range(page, "#sequences", 36)
    assert "weights still heavier" in wait_for(page, "W-concurrency", "36 sequences")
    set_range(page, "#sequences", 37)
    assert "caches outweigh the weights" in wait_for(page, "W-concurrency", "37 sequences")


def test_intensity_16(page):
    set_range(page, "#intensity-p", 16)
    assert "prefill 16.0 FLOPs per byte" in wait_for(page, "W-intensity", "P = 16")


def test_typing_a_prompt_updates_the_token_table(page, stored):
    page.fill("#prompt", "the dog and the cat and the bird")
    pieces = [stored.tokenizer.piece(i) for i in stored.encode("the dog and the cat and the bird")]
    page.wait_for_function("n => document.querySelectorAll('#token-table tbody tr').length === n", arg=len(pieces),
                           timeout=60_000)
    cells = page.locator("#token-table tbody tr td:nth-child(3)").all_inner_texts()
    assert cells == [f'"{p}"' for p in pieces]
    set_range(page, "#lookup-pos", 3)
    assert "positions 3 and 6 share that id" in wait_for(page, "W-lookup", "position 3:")


def test_keyboard_moves_a_slider(page):
    page.locator("#split-d").focus()
    page.keyboard.press("ArrowRight")
    assert "d = 832" in wait_for(page, "W-split", "d = 832")


def test_bugs_run_side_by_side(page):
    at_one_width(page)
    page.locator('[data-widget="W-ring-overflow"] .run').click()
    text = wait_for(page, "W-ring-overflow", "overwrote")
    assert "The guarded cache refused" in text
    assert "never overwritten silently" in page.locator('[data-widget="W-ring-overflow"] .correct').inner_text()
    page.locator('[data-widget="W-position-bug"] .run').click()
    wait_for(page, "W-position-bug", "")
    page.wait_for_function("document.querySelector('[data-widget=\"W-position-bug\"] .buggy').innerText.length > 0")
    assert "positions 0, 0, 0" in page.locator('[data-widget="W-position-bug"] .buggy').inner_text()


# ---- the article: prose in both languages, state kept across the toggle ------------------------------------------
CJK = re.compile(r"[\u4e00-\u9fff]")


def texts(page) -> dict[str, str]:
    return dict(page.locator("[data-text]").evaluate_all("els => els.map(e => [e.dataset.text, e.textContent])"))


def test_prose_in_both_languages_for_every_section_and_widget(page):
    sections = page.locator("main > section[id]").evaluate_all("els => els.map(e => e.id)")
    assert len(sections) == 9
    set_range(page, "#depth-n", 48)
    wait_for(page, "W-depth", "N = 48")
    english = texts(page)
    for sid in sections:
        assert len(english[f"intro-{sid}"]) > 20 and english[f"title-{sid}"]
    for name in page.evaluate(WIDGETS_ON_PAGE):
        for part in ("title", "before", "after"):
            assert english[f"{part}-{name}"].strip(), (part, name)
    page.locator('[data-lang="zh"]').click()
    chinese = texts(page)
    try:
        assert chinese.keys() == english.keys()
        for key, words in chinese.items():  # every string changed; the prose (title-/intro-/before-/after-) Chinese
            assert words != english[key], key
            assert CJK.search(words) or not key.startswith(("title-", "intro-", "before-", "after-")), key
        assert page.evaluate("document.documentElement.lang") == "zh-CN"
        # the widgets kept their state: the slider, its readout, the prompt's tables
        assert page.locator("#depth-n").input_value() == "48" and "N = 48" in readout(page, "W-depth")
        assert page.locator("#token-table tbody tr").count() > 1
    finally:
        page.locator('[data-lang="en"]').click()
    assert texts(page) == english


# ---- readable everywhere ------------------------------------------------------------------------------------------
SIZES = """() => {  // rendered size of every visible text: CSS font size, times the SVG's scale inside a chart
  const out = [], walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walk.nextNode()) {
    const node = walk.currentNode, el = node.parentElement;
    if (!node.textContent.trim() || !el.getClientRects().length) continue;
    let size = parseFloat(getComputedStyle(el).fontSize);
    const svg = el.closest("svg");
    if (svg) size *= svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
    out.push([node.textContent.trim().slice(0, 40), size]);
  }
  return out;
}"""

CONTRAST = """() => {  // WCAG contrast of every visible text against the first opaque background behind it
  const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => [r, g, b]
    .map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
    .reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0);
  const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
  const back = (el) => { for (; el; el = el.parentElement) { const c = rgb(getComputedStyle(el).backgroundColor);
    if (c.length === 3 || c[3] > 0.5) return c.slice(0, 3); } return [255, 255, 255]; };
  const out = [], walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walk.nextNode()) {
    const node = walk.currentNode, el = node.parentElement;
    if (!node.textContent.trim() || !el.getClientRects().length) continue;
    const color = el.closest("svg") ? rgb(getComputedStyle(el).fill) : rgb(getComputedStyle(el).color);
    out.push([node.textContent.trim().slice(0, 30), ratio(color, back(el))]);
  }
  document.querySelectorAll(".chart rect, .figure line, .chart polyline").forEach((m) => {  // outlined: its outline
    const style = getComputedStyle(m), c = rgb(style.stroke !== "none" ? style.stroke : style.fill);
    out.push(["mark", ratio(c, [255, 255, 255]) * 1.5]);  // marks need 3:1: scaled to compare against 4.5
  });
  return out;
}"""


def test_no_small_text_no_sideways_scroll_enough_contrast(page):
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 1
    small = [(t, round(size, 1)) for t, size in page.evaluate(SIZES) if size < 11]
    assert small == [], small[:5]
    faint = [(t, round(r, 2)) for t, r in page.evaluate(CONTRAST) if r < 4.5]
    assert faint == [], faint[:5]


def test_every_slider_shows_its_value(page):
    set_range(page, "#sequences", 7)
    for slider in page.locator("input[type=range]").all():
        value = slider.input_value()
        out = slider.evaluate("e => e.nextElementSibling && e.nextElementSibling.tagName === 'OUTPUT' ? "
                              "e.nextElementSibling.textContent : null")
        assert out == value and slider.get_attribute("aria-valuetext") == value


def test_tables_keep_every_column_on_screen(page):
    set_range(page, "#lc-new", 12)
    page.wait_for_timeout(300)  # the slider's debounce, after which its widget asks again and redraws its table
    idle(page)
    cost = page.locator('[data-widget="W-loop-cost"] td[data-label="cost"]').first
    cost.wait_for(state="visible")
    box = cost.bounding_box()
    assert cost.inner_text().strip() and box["x"] >= 0 and box["x"] + box["width"] <= page.width


# ---- honest demos: each once a defect -----------------------------------------------------------------------------
def test_the_default_prompt_shows_a_shared_row_and_explains_the_leading_space(page, stored):
    at_one_width(page)
    assert page.locator("#prompt").get_attribute("value") == DEFAULT_PROMPT
    use_prompt(page, stored, DEFAULT_PROMPT)
    ids = page.locator("#token-table tbody tr td:nth-child(2)").all_inner_texts()
    repeated = next(i for i, x in enumerate(ids) if ids.count(x) > 1)
    set_range(page, "#lookup-pos", repeated)
    assert "share that id and that row" in wait_for(page, "W-lookup", f"position {repeated}:")
    set_range(page, "#lookup-pos", 0)  # "The": a capital and no space, another token than " the"
    assert 'another token, id' in wait_for(page, "W-lookup", "position 0:")
    told = page.locator('[data-widget="W-lookup"] .told').inner_text()  # the prose says why
    assert "a capital letter and a leading space are part of the piece" in told


def test_byte_pieces_are_named_not_replaced(page, stored):
    at_one_width(page)
    use_prompt(page, stored, "猫 the cat")
    cells = page.locator("#token-table tbody tr td:nth-child(3)").all_inner_texts()
    # 猫 is three byte tokens, E7 8C AB: each written as its byte and named with the character it is part of
    assert "\ufffd" not in "".join(cells) and cells[0].split()[0] == "⟨E7⟩"
    assert all("(猫)" in c for c in cells if "⟨" in c) and "".join(c.split()[0] for c in cells if "⟨" in c).replace(
        "⟩⟨", " ") == "⟨E7 8C AB⟩"
    told = page.locator('[data-widget="W-lookup"] .told').inner_text()
    assert "⟨E7 8C AB⟩" in told.replace("⟩ + ⟨", " ") and "猫" in told
    assert "raw byte" in page.locator('[data-widget="W-lookup"] .token-writing').inner_text()  # the writing, said once
    use_prompt(page, stored, DEFAULT_PROMPT)


def test_greedy_loop_verdict_states_its_window_and_is_the_engines(page, stored):
    at_one_width(page)
    from forwardpass.explorer import compute

    page.locator('[data-widget="W-greedy-loop"] .run').click()
    text = wait_for(page, "W-greedy-loop", "generated tokens")
    with compute.model_lock(stored):
        want = compute.greedy_loop(stored, page.locator("#loop-prompt").input_value(), 64, 10, 1)
    assert text.startswith("over 64 generated tokens")
    for key in ("greedy", "forced"):
        loop = want[key]["loop"]
        assert (f"period {loop['period']} from token {loop['start']}" if loop else "no loop") in text


def test_ring_overflow_shows_its_prompt_and_its_slots(page):
    at_one_width(page)
    page.fill("#ring-prompt", "Red green blue")
    set_range(page, "#ring-capacity", 6)
    page.locator('[data-widget="W-ring-overflow"] .run').click()
    page.wait_for_function("(document.querySelector('[data-widget=\"W-ring-overflow\"] .slots')"
                           ".getAttribute('aria-label') || '').startsWith('slots 0 to 5')", timeout=60_000)
    slots = page.locator('[data-widget="W-ring-overflow"] .slots svg rect')
    assert slots.count() == 6
    label = page.locator('[data-widget="W-ring-overflow"] .slots').get_attribute("aria-label")
    assert label.startswith("slots 0 to 5 hold positions")


def test_charts_are_drawn_at_their_defaults_with_full_labels(page):
    dots = page.locator('[data-widget="W-cost-toy"] .chart circle').count()
    assert dots >= 2 * 2  # two series of at least two points: not blank at the default
    for chart in page.locator(".chart").all():
        words = chart.locator("svg text").all_text_contents()
        assert not any(w.endswith("…") for w in words)


def test_counts_read_as_words(page):
    at_one_width(page)
    set_range(page, "#sequences", 1)
    wait_for(page, "W-concurrency", "1 sequence:")
    set_range(page, "#top-k", 5)
    wait_for(page, "W-top-k", "k = 5")
    body = page.locator("body").inner_text() + " ".join(page.locator("svg text").all_text_contents())
    assert not re.search(r"(?<![\d.,])1 (tokens|caches|sequences)\b", body) and "-0.0%" not in body


def test_attention_opened_up_is_the_engines(page, stored):
    at_one_width(page)
    from forwardpass.explorer import compute

    set_range(page, "#att-layer", 4)  # blocks and heads as a reader counts them, from 1: index 3, head index 2
    set_range(page, "#att-head", 3)
    text = wait_for(page, "W-attention", "block 4, head 3 (")
    token = int(page.locator("#att-token").input_value())
    with compute.model_lock(stored):
        want = compute.attention_steps(stored, page.locator("#prompt").input_value(), 3, 2, token)
    assert f"{sum(not a for a in want['allowed'])} masked" in text
    rows = page.locator('[data-widget="W-attention"] tbody tr').all()
    weights = [float(r.locator('td[data-label="weight"]').inner_text()) for r in rows]
    assert weights == pytest.approx(want["weights"], abs=1e-4) and sum(weights) == pytest.approx(1, abs=1e-3)
    assert all(w == 0 for w, a in zip(weights, want["allowed"], strict=True) if not a)


def test_reopen_links_every_section_and_returns_to_the_prompt(page):
    at_one_width(page)
    links = page.locator('[data-widget="W-reopen"] .recap a').evaluate_all("els => els.map(e => e.hash)")
    assert links == [f"#s0{i}" for i in (0, 1, 3, 4, 5, 6)] + ["#drafting", "#s07"]  # every section but the recap
    page.locator('[data-widget="W-reopen"] .reopen').click()
    assert page.evaluate("document.activeElement.id") == "prompt"


CHANGE = """async (w) => {  // move the widget's first control to another value; its readout must change
  const root = document.querySelector(`[data-widget="${w}"]`), readout = root.querySelector(".readout");
  const before = readout.textContent;
  const range = root.querySelector("input[type=range]"), radio = root.querySelector("input[type=radio]:not(:checked)");
  const button = root.querySelector("button.next, button.run, button.reopen");
  let cleared = false;  // a button's output: anything it says after its readout was emptied
  if (button && button.matches(".run, .reopen")) {  // run on demand: its button is its control
    readout.textContent = "";
    cleared = true;
    button.click();
  } else if (range) {
    range.value = range.value === range.max ? range.min : range.max;
    range.dispatchEvent(new Event("input"));
  } else if (radio) {
    radio.checked = true;
    radio.dispatchEvent(new Event("change"));
  } else if (button) {
    button.click();
  } else return "no control";
  const moved = () => readout.textContent !== "" && (cleared || readout.textContent !== before);
  for (let i = 0; i < 600 && !moved(); i++) await new Promise((r) => setTimeout(r, 100));
  return moved() ? "changed" : "unchanged";
}"""


def test_moving_each_widgets_control_changes_its_output(page):
    at_one_width(page)
    found = page.evaluate(WIDGETS_ON_PAGE)
    moved = {name: page.evaluate(CHANGE, name) for name in found}
    without = set(page.locator("[data-no-control]").evaluate_all("els => els.map(e => e.dataset.widget)"))
    assert {n for n, how in moved.items() if how == "no control"} == without >= {"W-logits", "W-param-split"}
    assert [n for n, how in moved.items() if how == "unchanged"] == []
