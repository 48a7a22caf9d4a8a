"""The explorer end to end in headless Chromium (Debian's, driven by Playwright): every widget, live numbers."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path

import pytest
import uvicorn
from server_helpers import free_port

from forwardpass.explorer.app import build_explorer

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(os.environ.get("FORWARDPASS_ARTIFACTS", Path(__file__).parent.parent / "artifacts"))
WIDGETS = ["W-lookup", "W-stages", "W-depth", "W-residual", "W-block-steps", "W-reach", "W-split", "W-norm",
           "W-logits", "W-temperature", "W-top-k", "W-top-p", "W-greedy-loop", "W-autoregress", "W-naive-vs-cached",
           "W-cost-toy", "W-cost-gpt2", "W-cache-fill", "W-cache-memory", "W-ring-overflow", "W-position-bug",
           "W-intensity", "W-weights-vs-cache", "W-concurrency", "W-param-split", "W-loop-walk", "W-loop-cost"]

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed")


@contextlib.contextmanager
def explorer(pipeline):
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(build_explorer(pipeline), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        yield b
        b.close()


@pytest.fixture(scope="module")
def page(browser, smollm):
    with explorer(smollm) as url:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        external: list[str] = []
        page.on("request", lambda r: external.append(r.url) if not r.url.startswith(url) else None)
        page.goto(url)
        page.wait_for_selector("body[data-ready=true]", timeout=120_000)
        page.errors, page.external = errors, external
        yield page
        page.close()


def readout(page, widget: str) -> str:
    return page.locator(f'[data-widget="{widget}"] .readout').inner_text()


def set_range(page, selector: str, value) -> None:
    page.locator(selector).evaluate("(el, v) => { el.value = v; el.dispatchEvent(new Event('input')); }", str(value))


def wait_for(page, widget: str, text: str) -> str:
    script = "([w, t]) => document.querySelector(`[data-widget=\"${w}\"] .readout`).innerText.includes(t)"
    page.wait_for_function(script, arg=[widget, text], timeout=60_000)
    return readout(page, widget)


def test_loads_without_errors_or_network(page):
    assert page.errors == [] and page.external == []


def test_every_widget_in_order_with_a_control_and_a_readout(page):
    found = page.locator("[data-widget]").evaluate_all("els => els.map(e => e.dataset.widget)")
    assert found == WIDGETS
    for name in WIDGETS:
        w = page.locator(f'[data-widget="{name}"]')
        assert name in w.locator("h3").inner_text()
        assert w.locator(".readout").count() == 1
        assert w.locator("input, button, select").count() >= 1 or name in ("W-logits", "W-param-split")  # no control
        # in the article either: they show the raw scores and the parameter split as they are
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


def test_typing_a_prompt_updates_the_token_table(page, smollm):
    page.fill("#prompt", "the dog and the cat and the bird")
    pieces = [smollm.tokenizer.piece(i) for i in smollm.encode("the dog and the cat and the bird")]
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
    page.locator('[data-widget="W-ring-overflow"] .run').click()
    text = wait_for(page, "W-ring-overflow", "overwrote")
    assert "the guarded cache refused" in text
    assert "never overwritten silently" in page.locator('[data-widget="W-ring-overflow"] .correct').inner_text()
    page.locator('[data-widget="W-position-bug"] .run').click()
    wait_for(page, "W-position-bug", "")
    page.wait_for_function("document.querySelector('[data-widget=\"W-position-bug\"] .buggy').innerText.length > 0")
    assert "positions 0, 0, 0" in page.locator('[data-widget="W-position-bug"] .buggy').inner_text()


def test_screenshots_at_both_widths(page):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.evaluate("window.scrollTo(0, 0)")
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 1, f"page scrolls sideways at {width}px"
        page.screenshot(path=str(ARTIFACTS / f"explorer-{width}.png"), full_page=width == 1280)
        assert (ARTIFACTS / f"explorer-{width}.png").stat().st_size > 10_000
    page.set_viewport_size({"width": 1280, "height": 900})
