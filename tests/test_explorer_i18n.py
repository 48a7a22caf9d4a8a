"""The explorer in both languages, at 1280 and 390 px: every visible string in the page's language (only code,
token pieces, model text and the names test_explorer_fixtures.ALLOWED_LATIN lists stay Latin on the Chinese page),
and the toggle switching every string live, remembered in the address and in localStorage."""

from __future__ import annotations

import re

import pytest
from test_explorer_fixtures import (
    ALL_PAGES,
    foreign_text,
    idle,
    needs_chromium,
    readout,
    run_all,
    set_lang,
    set_range,
    wait_for,
)

pytestmark = needs_chromium


@pytest.mark.parametrize("width,lang", ALL_PAGES, ids=[f"{w}px-{lang}" for w, lang in ALL_PAGES])
def test_every_visible_string_is_in_the_pages_language(pages, width, lang):
    """At each width in each language: a width lays out (and abbreviates) its own labels."""
    page = pages(width, lang)
    run_all(page)  # the on-demand widgets' outputs too
    assert foreign_text(page) == []
    assert page.errors == []


def test_the_checker_finds_what_is_left_in_the_other_language(pages):
    """The check above would see an English word on the Chinese page, and a Chinese one on the English page."""
    page = pages(1280, "zh")
    probe = "el => { const p = document.createElement('p'); p.id = 'probe'; p.textContent = el; " \
            "document.querySelector('main').prepend(p); }"
    try:
        page.evaluate(probe, "温度 the temperature")
        assert ("P", "the temperature") in foreign_text(page)
        page.evaluate("document.getElementById('probe').textContent = '温度 d_model GPT-2 small 1.24 亿 GiB'")
        assert foreign_text(page) == []  # identifiers, names and units are not words to translate
    finally:
        page.evaluate("document.getElementById('probe').remove()")
    page = pages(1280, "en")
    try:
        page.evaluate(probe, "temperature 温度")
        assert any("温度" in t for _, t in foreign_text(page))
    finally:
        page.evaluate("document.getElementById('probe').remove()")


SNAPSHOT = """() => ({
  texts: Object.fromEntries([...document.querySelectorAll("[data-text]")].map(e => [e.dataset.text, e.textContent])),
  readouts: Object.fromEntries([...document.querySelectorAll("[data-widget]")].map(w =>
    [w.dataset.widget, w.querySelector(".readout").textContent])),
  runsOn: [...document.querySelectorAll(".runs-on")].map(e => e.textContent),
  charts: [...document.querySelectorAll(".chart, .grid, .figure")].map(e => e.getAttribute("aria-label")),
  status: document.getElementById("status").textContent,
})"""


def test_the_toggle_switches_every_string_live_and_is_remembered(pages):
    page = pages(1280, "en")
    run_all(page)
    set_range(page, "#depth-n", 48)
    wait_for(page, "W-depth", "N = 48")
    idle(page)
    english = page.evaluate(SNAPSHOT)
    set_lang(page, "zh")
    try:
        assert foreign_text(page, "zh") == []  # readouts, charts, tables, notices: all drawn again, in Chinese
        chinese = page.evaluate(SNAPSHOT)
        for part in ("texts", "readouts"):
            same = [k for k, v in chinese[part].items() if v == english[part][k]]
            assert same == [], (part, same)
        assert all(a != b for a, b in zip(chinese["runsOn"], english["runsOn"], strict=True))
        assert all(a != b for a, b in zip(chinese["charts"], english["charts"], strict=True) if a)
        # the page's state stayed: the slider, its result, no request asked again
        assert page.locator("#depth-n").input_value() == "48" and "N = 48" in readout(page, "W-depth")
        assert chinese["status"] == ""
        # remembered: in the address, and for the next page of this browser opened without ?lang=
        assert page.evaluate("new URL(location.href).searchParams.get('lang')") == "zh"
        other = page.context.new_page()
        try:
            other.goto(page.base)
            other.wait_for_selector("body[data-ready=true]", timeout=120_000)
            assert other.evaluate("document.documentElement.lang") == "zh-CN"
            assert re.search(r"[\u4e00-\u9fff]", other.locator("h1").inner_text())
        finally:
            other.close()
    finally:
        set_lang(page, "en")
    assert foreign_text(page, "en") == []
    back = page.evaluate(SNAPSHOT)
    assert back["texts"] == english["texts"] and back["readouts"] == english["readouts"]
