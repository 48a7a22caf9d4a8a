"""The reading path: the core story in the page, the deeper widgets folded under a one-line summary. A first reader's
page (nothing opened) is at most 15,000 px tall at 1280 px in either language; no widget opens empty, folded or not;
a fold opened draws its widget at its box's width; a link to a folded widget opens its fold."""

from __future__ import annotations

import pytest
from test_explorer_fixtures import needs_chromium, open_page

pytestmark = needs_chromium
MAX_HEIGHT = 15_000  # px at 1280 px with every fold closed


@pytest.fixture(scope="module")
def first_reader(pages):
    """pages at 1280 and 390 px as a first reader opens them: every fold closed"""
    opened = {}

    def at(width: int, lang: str):
        if (width, lang) not in opened:
            opened[width, lang] = open_page(pages.browser, pages.url, width, lang, unfold=False)
        return opened[width, lang]
    yield at
    for page in opened.values():
        page.context.close()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_folded_page_is_a_twenty_minute_read(first_reader, lang):
    page = first_reader(1280, lang)
    assert page.locator("details.deeper").count() >= 10
    assert page.locator("details.deeper[open]").count() == 0
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height <= MAX_HEIGHT, height
    summaries = page.locator("details.deeper > summary").all_inner_texts()
    assert all(0 < len(s) <= 120 for s in summaries)  # one line each


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_no_widget_opens_empty(first_reader, lang):
    page = first_reader(1280, lang)
    page.wait_for_function("[...document.querySelectorAll('[data-widget]')].every(w => !w.hasAttribute('aria-busy'))",
                           timeout=120_000)
    states = page.evaluate("Object.fromEntries([...document.querySelectorAll('[data-widget]')]"
                           ".map(w => [w.dataset.widget, w.dataset.state]))")
    assert {w: s for w, s in states.items() if s != "current"} == {}


def test_a_fold_opened_on_a_phone_draws_its_widget_at_its_width(first_reader):
    page = first_reader(390, "en")
    fold = page.locator('details.deeper[data-fold="W-residual"]')
    fold.locator("summary").click()
    page.wait_for_function("() => document.querySelector('details.deeper[data-fold=\"W-residual\"]').open")
    box = fold.locator('[data-widget="W-residual"]').bounding_box()
    for svg in fold.locator("svg").all():
        b = svg.bounding_box()
        assert b["width"] > 0 and b["x"] + b["width"] <= box["x"] + box["width"] + 1
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    fold.locator("summary").click()


def test_a_link_to_a_folded_widget_opens_its_fold(first_reader):
    page = first_reader(1280, "en")
    page.locator('details.deeper[data-fold="W-reopen"] > summary').click()  # the recap's links, folded themselves
    link = page.locator('[data-widget="W-reopen"] a[href="#h-W-many-users"]').first
    assert not page.locator('details.deeper[data-fold="W-many-users"]').evaluate("d => d.open")
    link.click()
    assert page.locator('details.deeper[data-fold="W-many-users"]').evaluate("d => d.open")
    assert page.locator("#h-W-many-users").is_visible()


def test_chinese_is_never_set_in_italics(first_reader):
    page = first_reader(1280, "zh")
    slanted = page.evaluate("""() => [...document.querySelectorAll('main *')]
      .filter(e => getComputedStyle(e).fontStyle === 'italic'
        && [...e.childNodes].some(n => n.nodeType === 3 && /[\\u4e00-\\u9fff]/.test(n.textContent)))
      .map(e => e.textContent.slice(0, 40))""")
    assert slanted == []
