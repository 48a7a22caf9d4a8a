"""Fixtures and helpers for the explorer's browser tests (no tests here). A section's test module gets one headless
Chromium for the whole module, on the explorer every module shares (tests/conftest.py):

    pages(width, lang)   a ready page at that width (px) and language, opened on first use and reused
    any_page             1280 px in English and 390 px in Chinese (PAGES: each width and each language)

Helpers: readout, set_range, wait_for, idle, use_prompt, run_all, set_lang, and foreign_text (visible text in the
other language)."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

import pytest

from forwardpass.explorer.app import build_explorer, served

CHROMIUM = "/usr/bin/chromium"
DEFAULT_PROMPT = "The cat sat on the mat, and the cat slept."
ALL_PAGES = [(width, lang) for width in (1280, 390) for lang in ("en", "zh")]
PAGES = [(1280, "en"), (390, "zh")]  # any_page's (conftest.py): each width and each language, in two pages
needs_chromium = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed")


@contextlib.contextmanager
def explorer(loaded, others=None):
    """The explorer on `loaded` (and the models `others` names) on a free port, as `forwardpass explore` starts it
    (its opening answers prepared in the background): its address."""
    with served(build_explorer(loaded, others, prepare=True)) as url:
        yield url


@contextlib.contextmanager
def chromium():
    """Debian's headless Chromium, driven by Playwright."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        try:
            yield b
        finally:
            b.close()


def open_page(browser, url: str, width: int, lang: str | None = None, unfold: bool = True):
    """A new page in a context of its own (its own storage) at `width`, ready (every widget answered), with every
    deeper widget's fold opened unless `unfold` is False (the reading path as a first reader meets it).
    page.errors collects console errors, page.external requests that left the explorer."""
    page = browser.new_context(viewport={"width": width, "height": 900}).new_page()
    page.width, page.base, page.lang = width, url, lang or "en"
    page.errors, page.external = [], []
    page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.on("request", lambda r: page.external.append(r.url) if not r.url.startswith(url) else None)
    page.goto(url + (f"?lang={lang}" if lang else ""))
    page.wait_for_selector("body[data-ready=true]", timeout=120_000)
    idle(page)
    if unfold:
        unfold_all(page)
    return page


def unfold_all(page) -> None:
    """Every folded widget opened (each draws itself again at its box's width as it opens)."""
    page.evaluate("document.querySelectorAll('details.deeper').forEach(d => { d.open = true; })")
    page.wait_for_function("[...document.querySelectorAll('details.deeper')].every(d => d.open)")


@contextlib.contextmanager
def page_set(url: str):
    """at(width=1280, lang="en"): one page per width and language, opened on first use and kept, in that language;
    on one Chromium, of the explorer at `url`."""
    with chromium() as browser:
        opened = {}

        def at(width: int = 1280, lang: str = "en"):
            if (width, lang) not in opened:
                opened[width, lang] = open_page(browser, url, width, lang)
            page = opened[width, lang]
            set_lang(page, lang)  # a test may have toggled it
            return page

        at.browser, at.url = browser, url
        try:
            yield at
        finally:
            for page in opened.values():
                page.context.close()


def set_lang(page, lang: str) -> None:
    """The language toggle pressed (nothing if it is that language already)."""
    if page.evaluate("document.documentElement.lang") != ("zh-CN" if lang == "zh" else "en"):
        page.locator(f'[data-lang="{lang}"]').click()
    page.lang = lang


def readout(page, widget: str) -> str:
    return page.locator(f'[data-widget="{widget}"] .readout').inner_text()


def set_range(page, selector: str, value) -> None:
    page.locator(selector).evaluate("(el, v) => { el.value = v; el.dispatchEvent(new Event('input')); }", str(value))


def wait_for(page, widget: str, text: str) -> str:
    script = "([w, t]) => document.querySelector(`[data-widget=\"${w}\"] .readout`).innerText.includes(t)"
    page.wait_for_function(script, arg=[widget, text], timeout=60_000)
    return readout(page, widget)


def idle(page) -> None:
    """No request in flight (the status line at the top is empty then): every widget has its answer."""
    page.wait_for_function("document.getElementById('status').textContent === ''", timeout=60_000)


def use_prompt(page, stored, prompt: str) -> None:
    """`prompt` typed at the top, and every widget that follows it answered."""
    page.fill("#prompt", prompt)
    page.wait_for_function("n => document.querySelectorAll('#token-table tbody tr').length === n",
                           arg=len(stored.encode(prompt)), timeout=60_000)
    idle(page)


def asked_on_opening(browser, url: str, shapes: dict, lang: str | None = None) -> list[tuple[str, object]]:
    """What a new page at 1280 px (in `lang`) POSTs to the endpoints `shapes` names (path → its request model) from
    its opening until it is ready: (path, the body read by that model), in the order sent."""
    asked = []
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()

    def seen(request):
        path = request.url.removeprefix(url.rstrip("/")).split("?")[0]
        if request.method == "POST" and path in shapes:
            asked.append((path, shapes[path](**request.post_data_json)))

    page.on("request", seen)
    page.goto(url + (f"?lang={lang}" if lang else ""))
    page.wait_for_selector("body[data-ready=true]", timeout=120_000)
    page.context.close()
    return asked


class Answer(tuple):
    """a body, hashable and compared by value"""

    def __new__(cls, body: dict):
        return super().__new__(cls, sorted(body.items()))


def run_many_users(page) -> None:
    """W-many-users run (its readout emptied first, so that the one waited for is this run's) and answered."""
    page.evaluate("document.querySelector('[data-widget=\"W-many-users\"] .readout').textContent = ''")
    page.locator('[data-widget="W-many-users"] button.run').click()
    page.wait_for_function("() => { const w = document.querySelector('[data-widget=\"W-many-users\"]');"
                           " return w.dataset.state === 'current' && !w.hasAttribute('aria-busy')"
                           " && w.querySelector('.readout').textContent !== ''; }", timeout=300_000)
    idle(page)


def run_all(page) -> None:
    """Every on-demand widget run (its button pressed), and answered."""
    for button in page.locator("[data-widget] button.run").all():
        button.click()
        idle(page)
    page.wait_for_function("[...document.querySelectorAll('[data-widget]')].every(w => !w.hasAttribute('aria-busy'))")


# ---- the language check --------------------------------------------------------------------------------------------
# What may stay Latin on the Chinese page besides code (<code>, data-code), token pieces and model text (data-token),
# citations (<cite>), the language buttons (data-lang), identifiers (a word with "_": d_model) and the model menu's
# names: names of things and units that Chinese writing about these models keeps as they are.
# Latin that Chinese technical writing keeps as it is: names, abbreviations, units
ALLOWED_LATIN = ["GPT-2 small", "GPT-2", "GPT-3", "Transformer", "forwardpass", "Llama", "FFN", "KV", "softmax",
                 "logits", "logit lens", "logit", "argmax", "top-k", "top-p", "Top-k", "Top-p", "fp16", "fp32", "GiB",
                 "MiB", "KiB", "GB/s", "TB/s", "GFLOP/s", "TFLOP/s", "FLOPs", "FLOP", "GPU", "CPU", "NVIDIA", "A100",
                 "H100", "SXM", "RoPE", "LayerNorm", "RMSNorm", "Roofline", "tok/s", "ms", "PyTorch"]

VISIBLE_TEXT = """(names) => {  // [where, text] of every visible text node and text-bearing attribute, and the menu
  const skip = "code, cite, [data-token], [data-code], [data-lang], script, style";
  const shown = (el) => el.getClientRects().length && getComputedStyle(el).visibility !== "hidden";
  const out = [], walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walk.nextNode()) {
    const node = walk.currentNode, el = node.parentElement;
    if (!node.textContent.trim() || el.closest(skip) || !shown(el)) continue;
    const where = el.closest("[data-widget]")?.dataset.widget || el.closest("section[id], header")?.id || el.tagName;
    out.push([where, node.textContent.trim()]);
  }
  for (const el of document.querySelectorAll("[aria-label], [title], [placeholder], td[data-label], th[data-label]")) {
    if (el.closest("[data-lang]") || !shown(el)) continue;
    const where = el.closest("[data-widget]")?.dataset.widget || el.tagName;
    for (const a of ["aria-label", "title", "placeholder", "data-label"])
      if (el.hasAttribute(a)) out.push([`${where} @${a}`, el.getAttribute(a).replace(/"(?:[^"\\\\]|\\\\.)*"/g, "")]);
  }
  out.push(["<title>", document.title]);
  return out;
}"""


def foreign_text(page, lang: str | None = None) -> list[tuple[str, str]]:
    """Visible text that is not in the page's language: on the Chinese page any Latin word (two letters or more)
    outside the exceptions above; on the English page any Chinese character outside token pieces."""
    lang = lang or page.lang
    names = page.locator("#model-select option").all_inner_texts()
    found = []
    for where, text in page.evaluate(VISIBLE_TEXT, names):
        if lang == "zh":
            for name in sorted(names + ALLOWED_LATIN, key=len, reverse=True):
                text = text.replace(name, " ")
            words = [w for w in re.findall(r"[A-Za-z][A-Za-z0-9_]*", text) if "_" not in w
                     and len(re.sub(r"[^A-Za-z]", "", w)) >= 2]
            if words:
                found.append((where, " ".join(words)))
        elif re.search(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]", text):
            found.append((where, text))
    return found


def preset_button(page, widget: str, control: str, value):
    """The preset button of `widget` that sets the control with id `control` to `value` (lib/told.js: data-set)."""
    buttons = page.locator(f'[data-widget="{widget}"] button.preset')
    at = buttons.evaluate_all("(bs, [c, v]) => bs.findIndex((b) => String(JSON.parse(b.dataset.set)[c]) === String(v))",
                              [control, str(value)])
    assert at >= 0, f"{widget} has no preset setting {control} to {value}"
    return buttons.nth(at)
