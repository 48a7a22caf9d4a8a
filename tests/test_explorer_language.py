"""The reader's language: the Chinese page runs on a model whose vocabulary reads Chinese (Gemma 3 270M here, beside
SmolLM2, which spells most Chinese characters in bytes), with the toy example in Chinese scored by that model; a
Chinese prompt on a byte-splitting model is said so, with a one-click switch to the one that reads it; byte tokens are
written one way on the whole page and explained once; and each family's block is described by its own configuration.
Numbers in Python against the models; the page in Chromium at 1280 and 390 px, in both languages. Skipped where
Gemma 3's packages are not installed."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
import torch
from test_explorer_fixtures import (
    PAGES,
    Answer,
    asked_on_opening,
    chromium,
    foreign_text,
    idle,
    needs_chromium,
    readout,
    run_all,
    use_prompt,
)

import forwardpass
from forwardpass.errors import ModelFileError
from forwardpass.explorer import story
from forwardpass.explorer.app import build_explorer, chinese_opening, served
from forwardpass.explorer.language import reads_chinese
from forwardpass.explorer.toy import TOYS

ZH_PROMPT = "猫坐在垫子上，然后猫睡着了。"  # the Chinese page's own (static/lib/state.js)
READER = "gemma3-270m"


@pytest.fixture(scope="module")
def gemma():
    from forwardpass.packaged import gemma3_270m
    try:
        return forwardpass.load(gemma3_270m())
    except ModelFileError as e:
        pytest.skip(str(e))


# ---- the vocabulary and the toy, in Python ----------------------------------------------------------------------
def test_a_model_reads_chinese_when_its_vocabulary_holds_common_characters_whole(stored, gemma):
    assert reads_chinese(gemma) and not reads_chinese(stored)
    assert all(len(gemma.tokenizer.encode_text(c)) == 1 for c in "猫的是")
    assert len(stored.tokenizer.encode_text("猫")) == 3  # its UTF-8 bytes


def test_the_chinese_toy_is_scored_by_the_model(gemma):
    d = story.candidates(gemma, TOYS["zh"].sentence)
    toy = TOYS["zh"]
    assert d["prompt"] == toy.sentence == "猫坐在" and [w["word"] for w in d["words"]] == list(toy.words)
    ids = gemma.encode(toy.sentence)
    with torch.inference_mode():
        logits = gemma.model(torch.tensor([ids]), last_only=True)[0][0, 0].float()
    for w in d["words"]:
        assert w["toy_logit"] == toy.words[w["word"]]
        assert gemma.encode(toy.sentence + w["word"]) == ids + w["ids"]  # the word's own pieces, after the sentence
        assert "".join(w["pieces"]) == w["word"] and not any("<0x" in p for p in w["pieces"])
        assert w["logit"] == pytest.approx(float(logits[w["ids"][0]]), abs=1e-4)


# ---- the page --------------------------------------------------------------------------------------------------------
@needs_chromium
def test_the_chinese_page_opens_on_answers_prepared_on_the_reader(reader_app, site):
    """The explorer prepares the Chinese page's slow answers on the model that reads Chinese, after the English
    page's; a Chinese page opened then asks exactly those of the slow endpoints (a drift fails here)."""
    reader_app.state.prepared.join(900)
    assert not reader_app.state.prepared.is_alive()
    prepared = {(path, Answer(body.model_dump())) for path, body in chinese_opening(READER)}
    assert all(reader_app.state.answers.known(path, dict(body)) for path, body in prepared)
    shapes = {path: type(body) for path, body in chinese_opening(READER)}
    browser, url = site
    asked = {(path, Answer(body.model_dump())) for path, body in asked_on_opening(browser, url, shapes, "zh")}
    assert asked == prepared



@pytest.fixture(scope="module")
def reader_app(stored, gemma):
    """One explorer on SmolLM2 that also offers Gemma 3 270M, as `forwardpass explore` starts it (the opening answers
    of both pages prepared in the background)."""
    return build_explorer(stored, {READER: lambda: gemma}, prepare=True)


@pytest.fixture(scope="module")
def site(reader_app):
    """(browser, url): that explorer served, and one Chromium."""
    with chromium() as browser, served(reader_app) as url:
        yield browser, url


def opened(site, width: int, lang: str, **query):
    """A new page at `width` in `lang`, `query` in its address (model, prompt), ready and with every fold open
    (as test_explorer_fixtures.open_page opens one)."""
    browser, url = site
    page = browser.new_context(viewport={"width": width, "height": 900}).new_page()
    page.width, page.base, page.lang, page.errors = width, url, lang, []
    page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.goto(url + "?" + urlencode({"lang": lang} | query))
    page.wait_for_selector("body[data-ready=true]", timeout=120_000)
    idle(page)
    page.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true; })")
    return page


def pieces(page) -> list[str]:
    return page.locator("#token-table tbody tr td:nth-child(3) .token:not(.of)").all_inner_texts()


def notice(page):
    return page.locator("#prompt-notice")


# what these tests change: the header (the prompt's notice), the token table, the toy and the sampling widgets, and
# the block's description; the rest of the page's language is test_explorer_i18n.py's
OURS = ("header", "s00", "s01", "s03", "W-lookup", "W-stages", "W-residual", "W-block-steps", "W-reach", "W-attention",
        "W-attention-map", "W-split", "W-norm", "W-logits", "W-logit-lens", "W-temperature", "W-top-k", "W-top-p")


def foreign(page) -> list:
    return [x for x in foreign_text(page) if x[0].split(" @")[0] in OURS]


WIDTHS = pytest.mark.parametrize("width", [1280, 390])


@needs_chromium
@WIDTHS
def test_the_chinese_page_runs_on_a_model_that_reads_chinese_with_a_chinese_example(site, gemma, width):
    page = opened(site, width, "zh")
    try:
        assert page.locator("#model-select").input_value() == READER
        assert page.evaluate("new URL(location.href).searchParams.get('model')") == READER
        assert page.locator("#prompt").input_value() == ZH_PROMPT
        shown = pieces(page)  # whole characters and words, no byte among them
        assert "".join(p.strip('"') for p in shown[1:]) == ZH_PROMPT and not any("⟨" in p for p in shown)
        assert len(shown) == len(gemma.encode(ZH_PROMPT))
        assert not notice(page).is_visible()
        # the toy example in Chinese, scored by the Chinese page's model
        want = story.candidates(gemma, TOYS["zh"].sentence)
        logits = page.locator('[data-widget="W-logits"]')
        toy = logits.locator(".toy svg text").all_text_contents()
        assert all(w in toy for w in TOYS["zh"].words)
        five = " ".join(logits.locator(".five svg text").all_text_contents())
        assert "猫坐在" in five
        for w in want["words"]:
            assert f"{w['logit']:.2f} (第 {w['rank']:,} 名)" in five.replace("（", " (").replace("）", ")")
        assert "猫坐在___" in page.locator('[data-text="intro-s03"]').inner_text()  # the section's example
        temperature = page.locator('[data-widget="W-temperature"] .toy svg text').all_text_contents()
        assert all(w in temperature for w in TOYS["zh"].words)
        assert foreign(page) == [] and page.errors == []
    finally:
        page.context.close()


@needs_chromium
def test_the_language_toggle_brings_the_readers_model_and_example_and_takes_them_back(site):
    page = opened(site, 1280, "en")
    try:
        assert page.locator("#model-select").input_value() != READER
        page.locator('[data-lang="zh"]').click()
        page.wait_for_function(f"document.getElementById('model-select').value === '{READER}'", timeout=60_000)
        page.wait_for_function(f"document.getElementById('prompt').value === '{ZH_PROMPT}'")
        idle(page)
        assert not any("⟨" in p for p in pieces(page))
        page.locator('[data-lang="en"]').click()  # the page it was: its model and its English example
        page.wait_for_function(f"document.getElementById('model-select').value !== '{READER}'", timeout=60_000)
        page.wait_for_function("document.getElementById('prompt').value.startsWith('The cat sat')")
        idle(page)
        assert page.errors == []
    finally:
        page.context.close()


@needs_chromium
@pytest.mark.parametrize("width, lang", PAGES)  # each width and each language once
def test_a_chinese_prompt_on_a_byte_splitting_model_is_said_with_a_switch(site, stored, gemma, width, lang):
    page = opened(site, width, lang, model=stored.config.name)  # the reader chose SmolLM2
    try:
        assert page.locator("#model-select").input_value() == stored.config.name
        assert not notice(page).is_visible()  # an English prompt: nothing to say
        use_prompt(page, stored, "猫坐在垫子上")
        box = notice(page)
        box.wait_for(state="visible")
        text = box.inner_text()
        assert "⟨E7⟩" in text and "猫" in text and "SmolLM2" in text and "Gemma 3 270M" in text
        assert foreign(page) == []
        box.locator("button").click()
        page.wait_for_function(f"document.getElementById('model-select').value === '{READER}'", timeout=60_000)
        page.wait_for_function("n => document.querySelectorAll('#token-table tbody tr').length === n",
                               arg=len(gemma.encode("猫坐在垫子上")), timeout=60_000)
        idle(page)
        assert not any("⟨" in p for p in pieces(page)) and not box.is_visible()
        assert page.evaluate("new URL(location.href).searchParams.get('model')") == READER
        assert page.errors == []
    finally:
        page.context.close()


SHOWN = """() => {  // every visible text, option and text-bearing attribute, with its widget
  const where = (el) => el.closest('[data-widget]')?.dataset.widget || el.closest('section, header')?.id || '';
  const out = [];
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walk.nextNode()) out.push([where(walk.currentNode.parentElement), walk.currentNode.textContent]);
  for (const el of document.querySelectorAll('[aria-label], [title], option'))
    out.push([where(el), (el.getAttribute('aria-label') || '') + (el.getAttribute('title') || '') + el.textContent]);
  return out;
}"""

OVERLAPS = """() => {  // in each chart of token labels, a label's box that reaches into another text's or a bar's
  const hit = (a, b) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
  const out = [];
  for (const svg of document.querySelectorAll('[data-widget] svg')) {
    const texts = [...svg.querySelectorAll('text')], bars = [...svg.querySelectorAll('rect')].map((r) => r.getBBox());
    for (const t of texts.filter((x) => x.querySelector('tspan.token, tspan[data-token]') || /⟨/.test(x.textContent))) {
      const b = t.getBBox();
      const other = texts.find((u) => u !== t && u.textContent.trim() && hit(b, u.getBBox()));
      if (other || bars.some((r) => r.width > 1 && hit(b, r)))
        out.push([t.closest('[data-widget]').dataset.widget, t.textContent, other ? other.textContent : 'a bar']);
    }
  }
  return out;
}"""


@needs_chromium
@pytest.mark.parametrize("width, lang", PAGES)  # each width and each language once
def test_byte_tokens_are_written_one_way_and_explained_once(site, stored, width, lang):
    page = opened(site, width, lang, model=stored.config.name, prompt="猫坐在垫子上，然后猫睡着了。")
    try:
        run_all(page)
        shown = page.evaluate(SHOWN)
        assert [x for x in shown if "<0x" in x[1]] == []
        assert any("⟨E7⟩" in text for _, text in shown)
        # one explanation, at the first token table: ⟨E7⟩ a raw byte, ␣ a space, ↵ a line break
        explained = page.locator(".token-writing")
        assert explained.count() == 1
        said = explained.inner_text()
        assert all(mark in said for mark in ("⟨E7⟩", "␣", "↵"))
        assert explained.evaluate("el => el.closest('[data-widget]').dataset.widget") == "W-lookup"
        byte_word = "raw byte" if lang == "en" else "原始字节"
        assert [w for w, text in shown if byte_word in text and w != "W-lookup"] == []
        assert page.evaluate(OVERLAPS) == []
        assert foreign(page) == [] and page.errors == []
    finally:
        page.context.close()


@needs_chromium
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_each_family_is_described_by_its_own_configuration(site, stored, gemma, lang):
    for model, fp in ((READER, gemma), (stored.config.name, stored)):
        page = opened(site, 1280, lang, model=model, prompt="猫坐在垫子上")
        try:
            c = fp.config
            split = page.locator('[data-widget="W-split"] .told').inner_text()
            heads = readout(page, "W-attention-map")
            if c.ffn == "geglu":  # Gemma: GELU (tanh) gating, one KV head for its four query heads
                assert "GeGLU" in split and "SwiGLU" not in split and "GELU" in split and "tanh" in split
                if lang == "en":
                    assert "4 query heads share 1 KV head," in split and "sharing 1 KV head," in heads
                else:
                    assert "4 个查询头共用 1 个 KV 头" in split
            else:
                assert "SwiGLU" in split and "GeGLU" not in split
                if lang == "en":
                    assert "9 query heads share 3 KV heads" in split and "sharing 3 KV heads" in heads
            # the norm picture: the model's own blocks, each norm drawn, the sandwich norms after each branch too
            figure = page.locator('[data-widget="W-norm"] .placement')
            after = 1 if c.sandwich_norm else 0
            assert figure.locator("g.norm.branch").count() == 3 * 2 * (1 + after)
            assert figure.locator("g.norm.after").count() == 3 * 2 * after
            norm, n = page.locator('[data-widget="W-norm"] .told').inner_text(), 2 * (1 + after)
            assert (f"holds {n} norms" if lang == "en" else f"{n} 个归一化") in norm
            fork = page.locator('[data-widget="W-block-steps"] .fork')
            assert fork.locator("g.norm-box").count() == 2 * (1 + after)
            assert foreign(page) == [] and page.errors == []
        finally:
            page.context.close()
