"""§00 of the explorer, the pipeline, in headless Chromium at 1280 and 390 px, in English and Chinese: the presets set
the article's states (N = 48: 3× and 379.6M), the prose's numbers are the ones its widgets compute (GPT-2 small's
124,439,808 and 7,087,872 per block, the two positions of one token sharing a row, the six stages' shapes on the
loaded model), the stage diagram draws the block band taller and lights its stages one by one, every chart has ticked
axes, and nothing is left in the other language."""

from __future__ import annotations

import re

from test_explorer_fixtures import (
    DEFAULT_PROMPT,
    foreign_text,
    idle,
    needs_chromium,
    preset_button,
    readout,
    use_prompt,
    wait_for,
)

from forwardpass import cost
from forwardpass.explorer import anatomy, compute, language

pytestmark = needs_chromium
MINE = {"s00", "W-lookup", "W-stages", "W-depth", "W-residual"}


def params(n: int, lang: str) -> str:
    """A parameter count as the page writes it (i18n.js fmt.params)."""
    if lang == "zh":
        return f"{n / 1e8:.2f} 亿" if n >= 1e8 else f"{n / 1e4:.1f} 万"
    return f"{n / 1e9:.1f}B" if n >= 1e9 else f"{n / 1e6:.1f}M"


def told(page, widget: str) -> str:
    return page.locator(f'[data-widget="{widget}"] .prose.told').inner_text()


def test_depth_presets_set_the_articles_states_and_the_prose_says_them(any_page):
    page, lang = any_page, any_page.lang
    gpt2, deep = cost.parameters(compute.GPT2), cost.parameters(compute.GPT2.with_(n_layers=48))
    ratio = f"{deep.total / gpt2.total:.2f}"
    assert ratio == "3.05" and params(deep.total, "en") == "379.6M"  # the article's 3× and 379.6M
    preset_button(page, "W-depth", "depth-n", 48).click()
    idle(page)
    assert page.locator("#depth-n").input_value() == "48"
    text = wait_for(page, "W-depth", "N = 48")
    assert params(deep.total, lang) in text and f"{deep.total:,}" in text and ratio in text
    prose = told(page, "W-depth")  # the prose's N = 48 and 3× are the same computation, whatever the slider says
    assert params(deep.total, lang) in prose and ratio in prose
    preset_button(page, "W-depth", "depth-n", 12).click()
    idle(page)
    text = wait_for(page, "W-depth", "N = 12")
    assert f"{gpt2.total:,}" == "124,439,808" and f"{gpt2.total:,}" in text and params(gpt2.total, lang) in text
    prose = told(page, "W-depth")
    assert f"{gpt2.total:,}" in prose and params(gpt2.total, lang) in prose and params(gpt2.per_block, lang) in prose
    # 7,087,872 per block said with what it holds beyond 12d² = 7,077,888: biases and the two LayerNorms
    d = 768
    for n in (gpt2.per_block, 12 * d * d, 9 * d, 4 * d):
        assert f"{n:,}" in prose, n
    assert gpt2.per_block == 12 * d * d + 13 * d == 7_087_872
    # read off the curve: the marked point's label is the readout's total
    labels = page.locator('[data-widget="W-depth"] .chart svg text').all_text_contents()
    assert params(gpt2.total, lang) in labels


def test_the_lookup_prose_names_the_prompts_shared_row(any_page, stored):
    page = any_page
    ids = stored.encode(DEFAULT_PROMPT)
    first = next(i for i, x in enumerate(ids) if ids.index(x) != i)  # the first repeat
    before = ids.index(ids[first])
    prose = told(page, "W-lookup")
    for value in (str(before), str(first), str(ids[first]), str(stored.config.d_model)):
        assert value in prose
    assert f'"{stored.tokenizer.piece(ids[first])}"' in prose  # the piece, as the tokenizer has it
    # the same vector, checked by the server on all d_model numbers
    with compute.model_lock(stored):
        tokens = compute.lookup(stored, DEFAULT_PROMPT)["tokens"]
    assert tokens[first]["same_as"] == before and tokens[first]["same_vector"] is True
    assert page.locator("#token-table tbody tr").count() == len(ids)


def test_a_prompt_without_a_repeat_is_pointed_at_the_default_prompts_repeat(any_page, stored):
    """The hint names the first repeated token of the page's own default prompt (the Chinese one where the model
    reads Chinese), as this model cuts it, and the readout counts rows from 0."""
    page, was = any_page, any_page.input_value("#prompt")
    default = language.CHINESE_PROMPT if page.lang == "zh" and language.reads_chinese(stored) else DEFAULT_PROMPT
    with compute.model_lock(stored):
        again = next(x for x in compute.lookup(stored, default)["tokens"] if x["same_as"] is not None)
    use_prompt(page, stored, "One two three")
    try:
        prose = told(page, "W-lookup")
        assert f'"{again.get("char") or stored.tokenizer.piece(again["id"])}"' in prose
        assert "行号从 0 数起" in readout(page, "W-lookup") if page.lang == "zh" else True
    finally:
        use_prompt(page, stored, was)


def test_the_stage_diagram_lights_stage_by_stage_with_the_models_shapes(any_page, stored):
    page, c = any_page, stored.config
    w = '[data-widget="W-stages"]'
    with compute.model_lock(stored):
        want = anatomy.stages(stored, DEFAULT_PROMPT)
    T = len(stored.encode(DEFAULT_PROMPT))
    assert want["ids_shape"] == [1, T] and want["logits"] == [1, T, c.vocab_size] and want["blocks_run"] == c.n_layers
    page.locator(f"{w} .prev").click()
    for _ in range(6):
        page.locator(f"{w} .prev").click()
    for at in range(6):
        states = page.locator(f"{w} g.stage").evaluate_all("gs => gs.map(g => g.dataset.state)")
        assert states == ["done"] * at + ["lit"] + ["todo"] * (5 - at)
        assert readout(page, "W-stages").startswith(("stage", "第"))
        assert str(at + 1) in readout(page, "W-stages")
        page.locator(f"{w} .next").click()
    # the band is N blocks, drawn taller than every other stage
    band = page.locator(f'{w} g.stage[data-stage="2"]')
    assert band.get_attribute("data-blocks") == str(c.n_layers)
    assert band.locator("rect.slab").count() == min(c.n_layers, 48)
    heights = [page.locator(f'{w} g.stage[data-stage="{i}"] rect').first.bounding_box()["height"] for i in range(6)]
    assert heights[2] > 3 * max(h for i, h in enumerate(heights) if i != 2)
    # the shapes on the arrows and in the prose: the model's own, for this prompt
    shapes = [f"(1, {T})", f"(1, {T}, {c.d_model})", f"(1, {T}, {c.vocab_size})"]
    labels = " ".join(page.locator(f"{w} svg text").all_text_contents())
    prose = told(page, "W-stages")
    for s in shapes:
        assert s in labels and s in prose
    assert str(T) in prose and str(c.n_layers) in prose and f'"{want["next"]["piece"]}"' in prose
    # a RoPE model adds no position at the embedding, and its box says so
    assert want["positions"] == "rope" and ("RoPE" in labels) and "+ 位置" not in labels and "+ position" not in labels


def test_the_residual_prose_is_both_runs(any_page, stored):
    page = any_page
    with compute.model_lock(stored):
        add = compute.residual(stored, DEFAULT_PROMPT, "add")
        replace = compute.residual(stored, DEFAULT_PROMPT, "replace")
    prose = told(page, "W-residual")
    for run in (add, replace):
        top = run["next"][0]
        assert f'"{top["piece"]}"' in prose and f"{100 * top['probability']:.1f}%" in prose
    assert " × ".join(map(str, add["stream_shapes"][0])) in prose and str(len(add["stream_shapes"])) in prose
    page.locator('[data-widget="W-residual"] input[value=replace]').check()
    try:
        assert f"{100 * replace['next'][0]['probability']:.1f}%" in readout(page, "W-residual")
    finally:
        page.locator('[data-widget="W-residual"] input[value=add]').check()


def test_every_chart_of_values_has_ticked_axes(any_page):
    for chart in any_page.locator("#s00 .chart").all():
        assert chart.locator("line.tick").count() >= 3
        labels = [t for t in chart.locator("svg text").all_text_contents() if re.fullmatch(r"[\d.,]+\s?[%MK亿万]*", t)]
        assert len(labels) >= 3  # the ticks are numbered


def test_no_text_in_the_other_language_and_no_errors(any_page):
    assert [f for f in foreign_text(any_page) if f[0].split(" @")[0] in MINE] == []
    assert [e for e in any_page.errors if any(k in e for k in ("W-lookup", "W-stages", "W-depth", "W-residual"))] == []


def test_the_section_follows_a_new_prompt(pages, stored):
    page = pages(1280, "en")
    prompt = "the dog saw the dog"
    use_prompt(page, stored, prompt)
    T = len(stored.encode(prompt))
    page.wait_for_function("t => document.querySelector('[data-widget=\"W-stages\"] .prose.told').innerText"
                           ".includes(`(1, ${t})`)", arg=T, timeout=30_000)
    assert f"{T} tokens" in told(page, "W-stages")
    assert "positions 1 and 4" in told(page, "W-lookup")
    use_prompt(page, stored, DEFAULT_PROMPT)
