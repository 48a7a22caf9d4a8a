"""§05 of the explorer, the KV cache: exactly t pairs per layer after t tokens with the pairs each step wrote marked
(the prompt's at step 1), GPT-3's cache at the article's states (9 GiB at 2,048 tokens, a quarter at 512) with the
prose carrying the same numbers, the loaded model's own bytes per token beside GPT-3's, the ring buffer's verdict
checking what happened (room at capacity 16, the overwritten slot named below it, the engine's own refusal) with no
slot label cut on a phone, and the position bug's first divergence marked. Browser tests at 1280 and 390 px, in
English and Chinese."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from test_explorer_fixtures import (
    DEFAULT_PROMPT,
    foreign_text,
    idle,
    needs_chromium,
    preset_button,
    readout,
    set_range,
    wait_for,
)

from forwardpass import cost, preset
from forwardpass.explorer import compute
from forwardpass.explorer.app import build_explorer

CACHE_WIDGETS = ("W-cache-fill", "W-cache-memory", "W-cache-here", "W-ring-overflow", "W-position-bug")
RING = '[data-widget="W-ring-overflow"]'


# ---- the endpoints -----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def client(smollm):
    return TestClient(build_explorer(smollm))


@pytest.fixture(scope="module")
def default_client():
    """The explorer on the default model as `forwardpass explore` loads it (its weights as the file stores them)."""
    import forwardpass
    return TestClient(build_explorer(forwardpass.load()))


def test_the_models_own_kv_bytes_per_token(client, smollm):
    c, dtype = smollm.config, smollm.kv_dtype()
    d = client.get("/api/kv-here").json()
    per_token = 2 * c.n_layers * c.kv_heads * c.head_dim * dtype.itemsize
    assert d["model"]["per_token"] == d["model"]["pool_per_token"] == per_token == 46_080  # 2 × 30 × 3 × 64 × 4
    assert d["model"]["full_context_bytes"] == per_token * c.context_length
    gpt3 = preset("gpt3-175b")
    assert d["gpt3"]["per_token"] == cost.kv_bytes_per_token(gpt3, "fp16") == 2 * 96 * 12288 * 2
    assert d["gpt3"]["full_context_gib"] == 9.0 and d["ratio"] == pytest.approx(4_718_592 / 46_080)


def test_the_ring_reports_what_happened(client):
    room = client.post("/api/ring-overflow", json={"prompt": "One two three four five", "capacity": 16,
                                                   "steps": 10}).json()
    assert room["written"] == 14 and room["overwrites"] == [] and room["guard"] is None and room["refused"] is None
    over = client.post("/api/ring-overflow", json={"prompt": "One two three four five", "capacity": 8,
                                                   "steps": 10}).json()
    first = over["overwrites"][0]
    assert (first["slot"], first["position"], first["lost"], first["lost_piece"]) == (0, 8, 0, "One")
    assert [o["lost"] for o in over["overwrites"]] == over["overwritten_positions"] == [0, 1, 2, 3, 4, 5]
    assert over["refused"]["position"] == 8 and "never overwritten silently" in over["guard"]


def test_the_position_bug_reports_where_it_parts(client):
    d = client.post("/api/position-bug", json={"prompt": DEFAULT_PROMPT, "steps": 12}).json()
    k = d["first_difference"]
    assert k is not None and d["correct_pieces"][:k] == d["buggy_pieces"][:k]
    assert d["correct_pieces"][k] != d["buggy_pieces"][k]
    assert d["buggy_perplexity"] > d["correct_perplexity"] >= 1


def test_the_cache_widgets_answer_on_the_default_model(default_client):
    """Every widget of §05 answers on the default model, as `forwardpass explore` loads it (its speed:
    bench/explorer.py)."""
    asks = [("post", "/api/autoregress", {"prompt": DEFAULT_PROMPT, "steps": 12}),
            ("get", "/api/cache-memory?context=2048", None), ("get", "/api/kv-here", None),
            ("post", "/api/ring-overflow", {"prompt": "One two three four five", "capacity": 8, "steps": 10}),
            ("post", "/api/position-bug", {"prompt": DEFAULT_PROMPT, "steps": 12})]
    for method, path, body in asks:
        r = getattr(default_client, method)(path, **({"json": body} if body else {}))
        assert r.status_code == 200, (path, r.text)


def test_one_answer_for_the_models_bytes_per_token(default_client):
    """The cache filling up and the model's cache beside GPT-3's give one number for the same model: the engine's
    pool, in its dtype, named (the default model's reference blocks keep fp32 pairs, its engine fp16 ones)."""
    fill = default_client.post("/api/autoregress", json={"prompt": DEFAULT_PROMPT, "steps": 12}).json()
    here = default_client.get("/api/kv-here").json()["model"]
    assert (fill["kv_bytes_per_token"], fill["kv_dtype"]) == (here["per_token"], here["dtype"]) == (23_040, "fp16")
    assert fill["reference_kv_dtype"] == "fp32"  # what the blocks that ran the loop keep: said beside it


# ---- the page ---------------------------------------------------------------------------------------------------
pytestmark = needs_chromium


def run_ring(page, capacity: int, prompt: str = "One two three four five") -> str:
    page.fill("#ring-prompt", prompt)
    preset_button(page, "W-ring-overflow", "ring-capacity", capacity).click()
    page.wait_for_function("c => { const w = document.querySelector('[data-widget=\"W-ring-overflow\"]');"
                           " return w.dataset.state === 'current' && !w.hasAttribute('aria-busy') &&"
                           " w.querySelectorAll('.slots g.slot').length === c; }", arg=capacity, timeout=60_000)
    idle(page)
    return readout(page, "W-ring-overflow")


def test_cache_memory_presets_and_prose(any_page):
    page, lang = any_page, any_page.lang
    full, quarter = compute.cache_memory(2048), compute.cache_memory(512)
    assert (f"{full['gib']:.2f} GiB", f"{quarter['gib']:.2f} GiB") == ("9.00 GiB", "2.25 GiB")
    for n, want in [(512, quarter), (2048, full)]:
        preset_button(page, "W-cache-memory", "context", n).click()
        text = wait_for(page, "W-cache-memory", f"{n:,}")
        assert f"{want['gib']:.2f} GiB" in text
    prose = page.locator('[data-widget="W-cache-memory"] .told').inner_text()
    assert "9.00 GiB" in prose and "2.25 GiB" in prose and "2,048" in prose
    assert ("exactly a quarter" if lang == "en" else "正好四分之一") in prose


def test_the_cache_holds_t_pairs_after_t_tokens_and_marks_the_newest(any_page, stored):
    page = any_page
    with compute.model_lock(stored):
        steps = compute.autoregress(stored, DEFAULT_PROMPT, 12)["steps"]
    p = len(stored.encode(DEFAULT_PROMPT))
    grid = page.locator('[data-widget="W-cache-fill"] .grid')
    for at in (1, 2, 7, 12):
        set_range(page, "#fill-step", at)
        s = steps[at - 1]
        assert s["cache_pairs_per_layer"] == s["tokens_read"] == p + at - 1  # t pairs after t tokens
        for kind in ("K", "V"):
            row = grid.locator(f'rect[data-layer="0"][data-kind="{kind}"]')
            assert row.count() == s["tokens_read"]
            new = row.evaluate_all("rs => rs.map(r => r.dataset.new === 'true')")
            assert new[-1] is True  # the newest pair marked, at step 1 too
            assert sum(new) == (p if at == 1 else 1)  # the prompt's pairs at step 1, then exactly one per step
        text = readout(page, "W-cache-fill")
        t = f"{s['tokens_read']:,}"
        assert (f"read {t} tokens" in text and f"exactly {t} (K, V) pairs" in text) if page.lang == "en" else (
            f"共读过 {t} 个词元" in text and f"恰好存着 {t} 对" in text)
    assert grid.locator("line.tick").count() >= 3
    set_range(page, "#fill-step", 1)


def test_the_cache_filling_up_names_its_dtype_and_agrees_with_the_models_cache(any_page):
    page = any_page
    here = page.request.get(page.base + "api/kv-here").json()["model"]
    per = f"{here['per_token']:,}"
    fill, beside = readout(page, "W-cache-fill"), readout(page, "W-cache-here")
    assert here["dtype"] in fill and here["dtype"] in beside
    assert per in fill and per in beside


def test_the_rings_verdict_at_capacity_16_says_nothing_overflowed(any_page):
    """Once the box printed "guarded cache of 16: null" and the readout said the guarded cache "refused instead",
    though nothing overflowed."""
    page, lang = any_page, any_page.lang
    text = run_ring(page, 16)
    box = page.locator(RING).inner_text()
    assert "null" not in box
    if lang == "en":
        assert text.startswith("No overflow: all 14 pairs fit in the 16 slots") and "refused" not in text
        assert "had room for all 14 pairs" in page.locator(f"{RING} .correct").inner_text()
    else:
        assert text.startswith("没有溢出") and "拒绝" not in text
        assert "装得下全部 14 对" in page.locator(f"{RING} .correct").inner_text()
    assert page.locator(f"{RING} .slots g.slot").count() == 16


def test_the_ring_names_the_slot_it_overwrote_and_the_engines_refusal(any_page):
    page, lang = any_page, any_page.lang
    text = run_ring(page, 8)
    if lang == "en":
        assert 'overwrote slot 0: position 8 (" are") went into the slot that still held position 0 ("One")' in text
        assert "The guarded cache refused at position 8" in text
    else:
        assert "覆盖了槽位 0" in text and "位置 0（\"One\"）" in text and "在位置 8 拒绝写入" in text
    guard = page.locator(f"{RING} .correct .guard")
    assert "never overwritten silently" in guard.locator("code").inner_text()  # the engine's own words, as code
    assert ("asked to write position 8" if lang == "en" else "引擎的原话是") in guard.inner_text()
    # on the Chinese page the English message is glossed with its own numbers: 9 tokens for a cache of 8
    assert lang == "en" or "（意思是：序列 0 将要存 9 个词元，但缓存只有 8 个位置" in guard.inner_text()
    over = page.locator(f'{RING} .slots g.slot[data-slot="0"]').get_attribute("data-position")
    assert over == "8"


def test_no_slot_label_is_cut(any_page):
    page = any_page
    for capacity in (16, 8):
        run_ring(page, capacity)
        boxes = page.locator(f"{RING} .slots g.slot").evaluate_all("""gs => gs.map(g => {
          const r = g.querySelector('rect').getBBox(), t = g.querySelector('text').getBBox();
          return [t.x >= r.x, t.x + t.width <= r.x + r.width, g.querySelector('text').textContent]; })""")
        assert all(a and b for a, b, _ in boxes), boxes
        svg = page.locator(f"{RING} .slots svg").bounding_box()
        assert svg["x"] >= 0 and svg["x"] + svg["width"] <= page.width


def test_the_position_bug_marks_where_the_texts_part(any_page, stored):
    page, lang = any_page, any_page.lang
    with compute.model_lock(stored):
        want = compute.position_bug(stored, DEFAULT_PROMPT, 12)
    k = want["first_difference"]
    page.locator('[data-widget="W-position-bug"] .run').click()
    page.wait_for_function("document.querySelector('[data-widget=\"W-position-bug\"]').dataset.state === 'current'",
                           timeout=60_000)
    idle(page)
    for panel in ("correct", "buggy"):
        chips = page.locator(f'[data-widget="W-position-bug"] .{panel} .token')
        classes = chips.evaluate_all("cs => cs.map(c => c.classList.contains('parts'))")
        assert classes.index(True) == k and sum(classes) == 1
    text = readout(page, "W-position-bug")
    assert (f"at generated token {k + 1}" in text) if lang == "en" else (f"从第 {k + 1} 个生成的词元起" in text)
    assert f"{want['buggy_perplexity']:.1f}" in text and f"{want['correct_perplexity']:.1f}" in text
    assert "positions 0, 0, 0" in page.locator('[data-widget="W-position-bug"] .buggy').inner_text() or lang == "zh"


def test_the_models_cache_beside_gpt3(any_page, stored):
    page, c = any_page, stored.config
    per_token = 2 * c.n_layers * c.kv_heads * c.head_dim * stored.kv_dtype().itemsize  # the engine's pairs' bytes
    text = readout(page, "W-cache-here")
    assert f"{per_token:,}" in text and "4,718,592" in text and f"{4_718_592 / per_token:.1f}" in text
    text = page.locator('[data-widget="W-cache-here"] .told').inner_text()  # the full context and the engine's pool
    assert f"{per_token * c.context_length / 2**30:.2f} GiB" in text and "9.00 GiB" in text
    assert (f"sets aside exactly {per_token:,} bytes" in text) if page.lang == "en" else \
        (f"正好也是 {per_token:,} 字节" in text)
    for chart in page.locator('[data-widget="W-cache-here"] .chart').all():
        assert chart.locator("line.tick").count() >= 2


def test_every_chart_of_the_cache_has_ticked_axes(any_page):
    run_ring(any_page, 8)
    for chart in any_page.locator("#s05 .chart, #s05 .grid").all():
        assert chart.locator("line.tick").count() >= 2, chart.get_attribute("class")


def test_the_cache_is_all_in_the_pages_language(any_page):
    run_ring(any_page, 8)
    any_page.locator('[data-widget="W-position-bug"] .run').click()
    idle(any_page)
    found = [f for f in foreign_text(any_page) if f[0].split(" ")[0] in (*CACHE_WIDGETS, "s05")]
    assert found == []
