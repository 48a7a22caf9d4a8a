"""§01–§02 of the explorer, inside a block: the attention map of every head (its rows sum to 1 and are the
step-by-step table's weights, in Python against the model and in the browser), reach as a fan of real weights
against the FFN's one column, the block's weights split 12d² with GPT-2's biases and norms said, pre- vs post-norm
with the norms the gradient crosses counted on the loaded model, and the section's prose in both languages carrying
the numbers its widgets compute. Browser tests at 1280 and 390 px, in English and Chinese."""

from __future__ import annotations

import re

import pytest
import torch
from fastapi.testclient import TestClient
from test_explorer_fixtures import (
    DEFAULT_PROMPT,
    foreign_text,
    idle,
    needs_chromium,
    preset_button,
    readout,
    set_range,
    use_prompt,
    wait_for,
)

from forwardpass import cost
from forwardpass.explorer import compute
from forwardpass.explorer.app import build_explorer

PROMPT = "the cat sat on the mat and the cat slept"


# ---- the endpoints, against the model -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def client(stored):
    return TestClient(build_explorer(stored))


def test_attention_map_rows_sum_to_one_and_are_the_step_tables(client, stored):
    c = stored.config
    d = client.post("/api/attention-map", json={"prompt": PROMPT, "layer": 4}).json()
    T = len(stored.encode(PROMPT))
    assert d["n_heads"] == c.n_heads == len(d["heads"]) and d["n_kv_heads"] == c.kv_heads and len(d["pieces"]) == T
    for head in d["heads"]:
        assert [len(row) for row in head] == list(range(1, T + 1))  # the causal half: row i reads keys 0 … i
        assert [sum(row) for row in head] == pytest.approx([1.0] * T, abs=1e-4)
    for h in (0, c.n_heads - 1):
        for token in (0, T // 2, T - 1):
            steps = client.post("/api/attention", json={"prompt": PROMPT, "layer": 4, "head": h, "token": token}).json()
            assert d["heads"][h][token] == pytest.approx(steps["weights"][: token + 1], abs=2e-5)
            assert all(w == 0 for w in steps["weights"][token + 1:])  # the empty upper triangle


def test_attention_map_is_the_models_attention(stored):
    """The map's weights are those the model's own attention uses (Attention.weights, the reference softmax)."""
    from forwardpass.explorer.attention_map import attention_map

    with compute.model_lock(stored):
        d = attention_map(stored, PROMPT, 7)
        block, normed, rope, window = compute._attention_inputs(stored, stored.encode(PROMPT), 7)
        with torch.inference_mode():
            want = block.attn.weights(normed, rope, window)[0]
    for h, head in enumerate(d["heads"]):
        for i, row in enumerate(head):
            assert row == pytest.approx(want[h, i, : i + 1].tolist(), abs=1e-4)


def test_attention_map_refuses_a_layer_past_the_model(client, stored):
    r = client.post("/api/attention-map", json={"prompt": PROMPT, "layer": stored.config.n_layers})
    assert r.status_code == 400 and r.json()["code"] == "range"
    assert r.json()["params"] == {"what": "layer", "lo": 0, "hi": stored.config.n_layers - 1}


def test_norm_path_counts_the_models_norms(client, stored):
    d = client.get("/api/norm-path").json()
    n = stored.config.n_layers
    assert d["n_layers"] == n and d["model_norm_position"] == "pre"
    assert d["crossed"] == {"pre": 0, "post": 2 * n} and d["per_block"] == {"pre": 0, "post": 2}


def test_split_says_what_gpt2s_block_adds_to_12d2(client):
    d = client.get("/api/split?d=768").json()
    assert d["block"] == 7_077_888 == 12 * 768**2 and d["ffn_share"] == pytest.approx(2 / 3)
    parts = d["block_parts"]
    assert parts["block"] == 7_087_872 == cost.parameters(compute.GPT2).per_block
    assert parts["biases"] == 9 * 768 and parts["norms"] == 4 * 768  # 13d = 9,984
    small = client.get("/api/split?d=64").json()
    assert small["ffn_share"] == pytest.approx(2 / 3) and small["block"] == 12 * 64**2
    assert small["block_parts"]["block"] == 12 * 64**2 + 13 * 64


def test_block_steps_say_what_each_branch_added(client, stored):
    d = client.post("/api/block-steps", json={"prompt": PROMPT}).json()
    assert [b["block"] for b in d["blocks"]] == list(range(stored.config.n_layers))
    assert all(b["attention_added"] > 0 and b["ffn_added"] > 0 for b in d["blocks"])
    for a, b in zip(d["blocks"], d["blocks"][1:], strict=False):  # one block's output is the next one's input
        assert b["stream_in"] == pytest.approx(a["stream_out"], rel=1e-5)


# ---- in the browser -------------------------------------------------------------------------------------------------
MINE = {"s01", "W-block-steps", "W-reach", "W-attention-map", "W-attention", "W-split", "W-norm"}


def told(page, widget: str) -> str:
    return page.locator(f'[data-widget="{widget}"] .prose.told').inner_text()


MAP_ROWS = """() => {  // head → query → [weights] from the drawn cells
  const out = {};
  for (const r of document.querySelectorAll('#attention-maps rect[data-q]')) {
    const h = r.dataset.head, q = +r.dataset.q;
    ((out[h] ??= [])[q] ??= [])[+r.dataset.k] = +r.dataset.w;
  }
  return out;
}"""


@needs_chromium
def test_the_attention_map_rows_sum_to_one_and_a_clicked_row_opens_the_same_weights(any_page, stored):
    page, c = any_page, stored.config
    T = len(stored.encode(DEFAULT_PROMPT))
    block = int(page.locator("#map-layer").input_value())  # blocks are numbered from 1 on the page
    layer = block - 1  # and from 0 in the engine
    maps = page.evaluate(MAP_ROWS)
    assert len(maps) == c.n_heads and all(len(rows) == T for rows in maps.values())
    for rows in maps.values():
        assert [len(r) for r in rows] == list(range(1, T + 1))  # causal: the upper triangle holds no cell
        assert [sum(r) for r in rows] == pytest.approx([1.0] * T, abs=1e-3)
    with compute.model_lock(stored):  # the drawn weights are the model's
        from forwardpass.explorer.attention_map import attention_map
        want = attention_map(stored, DEFAULT_PROMPT, layer)
    for got, row in zip(maps["1"], want["heads"][1], strict=True):
        assert got == pytest.approx(row, abs=1e-6)
    # the maps' titles, the readout and the slider count blocks and heads from 1, as blocks: never "layer"
    titles = page.locator("#attention-maps g.head > text:first-child").all_text_contents()
    assert titles == [(f"head {h}" if page.lang == "en" else f"第 {h} 个头") for h in range(1, c.n_heads + 1)]
    said = readout(page, "W-attention-map")
    assert said.startswith(f"block {block}:" if page.lang == "en" else f"第 {block} 块："), said
    assert ("KV heads" if page.lang == "en" else "KV 头") in said
    assert page.locator("#map-layer").get_attribute("min") == "1"
    assert page.locator("#map-layer").get_attribute("max") == str(c.n_layers)
    head, query = c.n_heads - 1, T - 3
    page.locator(f'#attention-maps rect[data-head="{head}"][data-q="{query}"][data-k="0"]').click()
    text = wait_for(page, "W-attention", f"head {head + 1} (" if page.lang == "en" else f"第 {head + 1} 个头（")
    idle(page)
    assert page.locator("#att-layer").input_value() == str(block)
    assert page.locator("#att-head").input_value() == str(head + 1)
    assert page.locator("#att-token").input_value() == str(query)
    said = readout(page, "W-attention")
    kv = head // (c.n_heads // c.kv_heads)
    assert (f"block {block}, head {head + 1} (KV head {kv + 1})" if page.lang == "en"
            else f"第 {block} 块、第 {head + 1} 个头（KV 头 {kv + 1}）") in said, said
    cells = page.locator('[data-widget="W-attention"] tbody tr td:last-child').all_inner_texts()
    weights = [float(x) for x in cells]
    assert weights[: query + 1] == pytest.approx(maps[str(head)][query], abs=1e-4)  # the row clicked, step by step
    assert all(w == 0 for w in weights[query + 1:])
    detail = page.locator('[data-widget="W-attention-map"] .map-detail').inner_text()
    assert str(query) in detail and f"{maps[str(head)][query][0]:.4f}" in detail and text
    assert (f"head {head + 1}:" if page.lang == "en" else f"第 {head + 1} 个头：") in detail


@needs_chromium
def test_the_norm_picture_counts_the_norms_the_gradient_crosses_on_the_models_blocks(any_page, stored):
    page, N = any_page, stored.config.n_layers
    w, figure = '[data-widget="W-norm"]', '[data-widget="W-norm"] .placement'
    try:
        for mode, crossed in (("pre", 0), ("post", 2 * N)):
            page.locator(f"{w} input[value={mode}]").check()
            assert page.locator(figure).get_attribute("data-crossed") == str(crossed)
            drawn = page.locator(f"{figure} g.norm-block").count()
            assert drawn == 3 and page.locator(f"{figure} g.norm-block").last.get_attribute("data-block") == str(N - 1)
            assert page.locator(f"{figure} circle.crossing").count() == (0 if mode == "pre" else 2 * drawn)
            assert page.locator(f"{figure} g.norm.on-stream").count() == (0 if mode == "pre" else 2 * drawn)
            assert page.locator(f"{figure} g.norm.branch").count() == (2 * drawn if mode == "pre" else 0)
            words = " ".join(page.locator(f"{figure} svg text").all_text_contents())
            # the end of the stack is drawn at the bottom, and said so (never "top"); the count is of norms inside
            # the blocks, the final norm outside them said so in the prose
            assert ("end of the stack" if page.lang == "en" else "这摞块的末端") in words
            assert "top" not in words and "顶" not in words
            assert ("inside the blocks" if page.lang == "en" else "在块里") in words
            if mode == "pre":
                assert ("final norm after the last block is outside the blocks" if page.lang == "en"
                        else "最终归一化在块外") in told(page, "W-norm")
            for text in (words, readout(page, "W-norm"), told(page, "W-norm")):
                assert re.search(rf"(?<!\d){crossed}(?!\d)", text), text
                assert mode == "pre" or str(N) in text
    finally:
        page.locator(f"{w} input[value=pre]").check()


@needs_chromium
def test_reach_is_a_fan_of_the_heads_weights_against_the_ffns_one_line(any_page, stored):
    page = any_page
    fan = '[data-widget="W-reach"] .fan'
    token, block, head = (int(page.locator(f"#reach-{x}").input_value()) for x in ("token", "layer", "head"))
    with compute.model_lock(stored):  # the sliders count blocks and heads from 1, the engine from 0
        want = compute.reach(stored, DEFAULT_PROMPT, block - 1, head - 1, token)
    assert (f"block {block}, head {head}" if page.lang == "en" else f"第 {block} 块第 {head} 个头") in told(
        page, "W-reach")
    lines = page.locator(f"{fan} line.reach").evaluate_all("ls => ls.map(l => [+l.dataset.k, +l.dataset.w])")
    attention, ffn = lines[:-1], lines[-1]
    assert [k for k, _ in attention] == list(range(token + 1)) and ffn == [token, 1]
    assert [w for _, w in attention] == pytest.approx(want["attention"], abs=1e-6)
    page.locator(f"{fan} text.pick").first.click()  # the first token: one position, said in the singular
    wait_for(page, "W-reach", "0")
    page.wait_for_function("() => document.getElementById('reach-token').value === '0'")
    idle(page)
    assert page.locator(f"{fan} line.reach").count() == 2
    said = readout(page, "W-reach") + told(page, "W-reach") + " ".join(
        page.locator(f"{fan} svg text").all_text_contents())
    assert not re.search(r"\b1 positions\b", said)
    page.select_option("#reach-token", str(len(stored.encode(DEFAULT_PROMPT)) - 1))
    idle(page)


@needs_chromium
def test_split_presets_and_the_prose_on_12d2_and_gpt2s_block(any_page, stored):
    page = any_page
    preset_button(page, "W-split", "split-d", 64).click()
    text = wait_for(page, "W-split", "d = 64")
    assert "66.7%" in text and f"{12 * 64 * 64:,}" in text
    prose = told(page, "W-split")
    for n in (4 * 64 * 64, 8 * 64 * 64, 12 * 64 * 64, 13 * 64, 12 * 64 * 64 + 13 * 64, 7_087_872):
        assert f"{n:,}" in prose, n
    assert "66.7%" in prose
    preset_button(page, "W-split", "split-d", 768).click()
    text = wait_for(page, "W-split", "d = 768")
    prose = told(page, "W-split")
    for n in (7_077_888, 7_087_872, 9_984):  # the two per-block counts, and what lies between them
        assert f"{n:,}" in prose, n
    assert page.locator("#split-d").input_value() == "768"
    if page.lang == "zh":  # the FFN's two matrices in the mechanism's words; 64 is not GPT-2 small's
        section = page.locator('[data-widget="W-split"]').evaluate("w => w.closest('section').innerText")
        assert "上投影一个，下投影一个" in section and "GPT-2 small 的 768，或很窄的 64" in section
        assert "升维" not in section and "降维" not in section
    # the rule and the exception: the loaded model's own blocks (SwiGLU, shared KV heads) are not two thirds FFN
    p = cost.parameters(stored.config)
    attention, ffn = p.attention // p.n_layers, p.ffn // p.n_layers
    assert (ffn, attention + ffn) == (2_654_208, 3_538_944)  # SmolLM2-135M: 75%
    for x in ("75.0%", f"{ffn:,}", f"{attention + ffn:,}", "SwiGLU"):
        assert x in prose, x
    assert ("not two thirds" if page.lang == "en" else "而不是三分之二") in prose
    assert "two thirds at every width" not in text and "任何宽度下都是三分之二" not in text  # said once, below


@needs_chromium
def test_block_steps_prose_is_the_models(any_page, stored):
    with compute.model_lock(stored):
        d = compute.block_steps(stored, DEFAULT_PROMPT)
    first, last = d["blocks"][0], d["blocks"][-1]
    page, n = any_page, len(d["blocks"])
    prose = told(page, "W-block-steps")
    for x in (first["stream_in"], first["attention_added"], first["ffn_added"], last["stream_out"]):
        assert f"{x:.1f}" in prose
    # blocks numbered from 1 to N, and the stream's size called its norm
    if page.lang == "en":
        assert "enters block 1 with norm" in prose and f"leaves block {n} with norm" in prose and "length" not in prose
    else:
        assert "进入第 1 块" in prose and f"离开第 {n} 块" in prose and "长度" not in prose and "范数" in prose
    bars = page.locator('[data-widget="W-block-steps"] .chart svg text').all_text_contents()
    zero = "block 0" if page.lang == "en" else "第 0 块"
    assert ("block 1" if page.lang == "en" else "第 1 块") in bars and zero not in bars
    assert zero not in page.locator('[data-widget="W-block-steps"]').inner_text()
    # a falling norm explained, and which blocks the chart draws: every ⌈N / 10⌉-th from block 1, and the last
    every = -(-n // 10)
    drawn = [i + 1 for i in range(n) if i % every == 0 or i == n - 1]
    assert all(("block" if page.lang == "en" else "第") + f" {b}" in " ".join(bars) for b in drawn)
    assert ("can make the norm smaller" if page.lang == "en" else "范数也可能变小") in prose
    assert every == 1 or (f"every {every}th block" if page.lang == "en" else f"每 {every} 块画一块") in prose or (
        every == 2 and ("odd-numbered" in prose or "奇数块" in prose))


@needs_chromium
def test_every_chart_has_ticked_axes_and_no_text_is_in_the_other_language(any_page):
    for chart in any_page.locator("#s01 .chart").all():
        assert chart.locator("line.tick").count() >= 3
    assert any_page.locator("#attention-maps line.tick").count() >= 5  # the colour scale and each map's ends
    assert [f for f in foreign_text(any_page) if f[0].split(" @")[0] in MINE] == []
    # one word for a block: never "layer" / "层" in the section's labels, readouts, pictures or aria text (the FFN's
    # "hidden layer" and a block's "sublayers" are other things)
    said = any_page.evaluate("""() => [...document.querySelectorAll('#s01 label, #s01 .readout, #s01 svg text, #s01 h3,'
      + ' #s01 .prose.told, #s01 caption, #s01 th')].map(e => e.textContent)
      .concat([...document.querySelectorAll('#s01 [aria-label]')].map(e => e.getAttribute('aria-label')))""")
    bad = [x for x in said if re.search(r"\blayers?\b|(?<!隐藏)(?<!子)层", x)]
    assert bad == []


@needs_chromium
def test_the_section_follows_the_prompt(pages, stored):
    page = pages(1280, "en")
    prompt = "the dog saw the cat"
    use_prompt(page, stored, prompt)
    T = len(stored.encode(prompt))
    page.wait_for_function("t => document.querySelectorAll('#attention-maps rect[data-q][data-head=\"0\"]').length"
                           " === t * (t + 1) / 2", arg=T, timeout=30_000)
    assert page.locator("#reach-token option").count() == T and page.locator("#att-token option").count() == T
    set_range(page, "#map-layer", 5)
    wait_for(page, "W-attention-map", "block 5:")
    set_range(page, "#map-layer", 3)
    use_prompt(page, stored, DEFAULT_PROMPT)


@needs_chromium
def test_attention_maps_are_ticked_throughout_and_a_long_prompt_keeps_them_short(pages, stored):
    """Every map labels indices along both axes (not only the first and last), and a long prompt shrinks the cells
    rather than stretching the page: every head fits in the figure's bounded height."""
    page = pages(1280, "en")

    def labels():
        return page.evaluate("""() => [...document.querySelectorAll('#attention-maps g.head[data-head="0"] text')]
          .map(e => e.textContent).filter(s => /^\\d+$/.test(s)).map(Number)""")

    T = len(stored.encode(DEFAULT_PROMPT))
    assert set(range(T)) <= set(labels())  # a short prompt: every index on its axes
    long = " ".join(["the cat sat on the mat and then the dog sat on the rug"] * 12)
    use_prompt(page, stored, long)
    T = len(stored.encode(long))
    page.wait_for_function("t => document.querySelectorAll('#attention-maps rect[data-q][data-head=\"0\"]').length"
                           " === t * (t + 1) / 2", arg=T, timeout=60_000)
    shown = sorted(set(labels()))
    assert shown[0] == 0 and shown[-1] == T - 1 and len(shown) >= 6
    assert page.locator("#attention-maps").bounding_box()["height"] <= 1400
    use_prompt(page, stored, DEFAULT_PROMPT)


@needs_chromium
def test_the_attention_maps_head_counts_say_none_in_words(any_page):
    """A head count of zero is said in Chinese as 没有一个, never as "0 个"."""
    prose = told(any_page, "W-attention-map")
    assert any_page.lang == "en" or ("个头里" in prose and not re.search(r"[，：]0 个", prose))
