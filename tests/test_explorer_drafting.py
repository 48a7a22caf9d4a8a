"""W-drafting (§07): the engine's speculative decoding on the reader's text. Its tokens are a plain greedy run's, token
for token; every pass it records adds its kept draft and one token of the model's own; every draft is copied from the
text before it; on a text that repeats itself it takes fewer passes than tokens; and the page shows it, with its
numbers, in both languages at both widths."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from test_explorer_fixtures import DEFAULT_PROMPT, foreign_text, idle, needs_chromium, readout

from forwardpass.explorer.app import build_explorer
from forwardpass.loop import generate
from forwardpass.sampling import SamplingParams

# the widget's "a list to copy", as sections/drafting.strings.js gives it in each language
LIST = {"en": "Copy the list exactly.\nList: apples, pears, plums, cherries, grapes, lemons, limes, figs.\n"
              "Copy: apples, pears,",
        "zh": "把下面的清单原样抄一遍。\n清单：苹果、梨、李子、樱桃、葡萄、柠檬、青柠、无花果。\n抄写：苹果、梨、"}
NEW = 48


@pytest.fixture(scope="module")
def client(stored):
    return TestClient(build_explorer(stored))


@pytest.fixture(scope="module", params=["list", "default"])
def run(request, client):
    prompt = LIST["en"] if request.param == "list" else DEFAULT_PROMPT
    reply = client.post("/api/drafting", json={"prompt": prompt, "steps": NEW})
    assert reply.status_code == 200, reply.text
    return prompt, reply.json()


def test_its_tokens_are_a_plain_greedy_runs(run, stored):
    prompt, d = run
    plain = generate(stored, prompt, SamplingParams(temperature=0.0, max_tokens=NEW), speculative="off")
    assert d["token_ids"] == plain.token_ids == d["plain"]["token_ids"]  # exactly, and the page's check says so
    assert d["same"] and d["first_difference"] is None
    assert d["prompt_ids"] == stored.encode(prompt)
    assert d["tokens"] == [stored.tokenizer.piece(t) for t in d["token_ids"]]


def test_each_pass_adds_its_kept_draft_then_one_token_of_its_own(run):
    _, d = run
    steps, tokens = d["steps"], d["token_ids"]
    assert steps[0]["rows"] == len(d["prompt_ids"]) and steps[0]["draft_ids"] == []  # the prompt: one pass
    at = len(d["prompt_ids"])
    for s in steps:
        assert s["start"] == at and 0 <= s["kept"] <= len(s["draft_ids"])
        assert s["token_ids"][:s["kept"]] == s["draft_ids"][:s["kept"]]  # the kept draft, as drafted
        assert len(s["token_ids"]) + s["ended"] == s["kept"] + 1  # then the model's own token (or its end)
        if s["kept"] < len(s["draft_ids"]) and not s["ended"]:  # the first refused: the model chose another
            assert s["token_ids"][s["kept"]] != s["draft_ids"][s["kept"]]
        if s is not steps[0]:
            assert s["rows"] == 1 + len(s["draft_ids"])  # the last token and its draft: one pass's rows
        at += len(s["token_ids"])
    assert sum(s["kept"] + 1 for s in steps) == len(tokens) + d["ended"]
    assert d["passes"] == len(steps) and d["rows"] == sum(s["rows"] for s in steps)
    assert d["plain"]["passes"] == len(tokens) + d["plain"]["ended"]  # without drafting: a pass per token
    drafted, kept = d["drafts"]["drafted"], d["drafts"]["kept"]
    assert d["rows"] - d["plain"]["rows"] == drafted - kept  # the refused drafts' rows are the extra arithmetic
    assert d["agrees"] and d["drafts"] == d["metrics"]  # the engine's /metrics counted the same drafts


def test_every_draft_is_copied_from_the_text_before_it(run):
    _, d = run
    text = d["prompt_ids"] + d["token_ids"]
    drafts = [s for s in d["steps"] if s["draft_ids"]]
    assert drafts
    for s in drafts:
        before, draft, n, at = text[:s["start"]], s["draft_ids"], s["from"]["n"], s["from"]["at"]
        stood = before[at:at + len(draft)]
        assert draft[:len(stood)] == stood  # it stood there before, up to the text's end
        assert s["from"]["loop"] == (len(stood) < len(draft))  # past it, a loop's next turns
        assert all(draft[i] == draft[i - (len(before) - at)] for i in range(len(stood), len(draft)))
        assert before[at - n:at] == before[-n:] and 1 <= n <= 3  # after the same last n tokens as now


def test_a_text_that_repeats_itself_takes_fewer_passes_than_tokens(run):
    _, d = run
    assert d["drafting"] and d["passes"] < len(d["token_ids"]) <= d["plain"]["passes"]


def test_bad_requests_are_said_in_the_pages_words(client):
    for body, code in [({"prompt": "Hi", "steps": 200}, "range"), ({"prompt": "", "steps": 16}, "empty_prompt")]:
        reply = client.post("/api/drafting", json=body)
        assert reply.status_code == 400 and reply.json()["code"] == code


# ---- the page ------------------------------------------------------------------------------------------------------
WIDGET = '[data-widget="W-drafting"]'
NUMBERS = {"en": re.compile(r"(\d+) new tokens in (\d+) passes with drafting, (\d+) without"),
           "zh": re.compile(r"(\d+) 个新词元，带草稿用了 (\d+) 遍，不带草稿用了 (\d+) 遍")}


ASK = """(body) => fetch("/api/drafting", {method: "POST", headers: {"content-type": "application/json"},
  body: JSON.stringify(body)}).then((r) => r.json())"""


@needs_chromium
def test_the_page_shows_the_run_with_its_numbers(any_page):
    page, lang = any_page, any_page.lang
    idle(page)
    w = page.locator(WIDGET)
    w.scroll_into_view_if_needed()
    d = page.evaluate(ASK, {"prompt": DEFAULT_PROMPT, "steps": NEW, "model": None})  # the answer it drew, remembered
    tokens, passes, plain = map(int, NUMBERS[lang].search(readout(page, "W-drafting")).groups())
    assert (tokens, passes, plain) == (len(d["token_ids"]), d["passes"], d["plain"]["passes"])
    assert w.locator(".dr-pass").count() == d["passes"]  # a box per pass, a chip per token
    assert w.locator(".dr-pass .token").count() == len(d["token_ids"])
    assert w.locator(".dr-stream .token.prompt").count() == len(d["prompt_ids"])
    told = w.locator(".prose.told").inner_text()
    same = {"en": f"chose the same {tokens} tokens", "zh": f"选出了同样的 {tokens} 个词元"}[lang]
    assert same in told and "/metrics" in told
    assert str(passes) in w.locator(".chart").get_attribute("aria-label")
    assert [x for x in foreign_text(page) if x[0] == "W-drafting"] == []
    box = w.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= page.width  # nothing sideways, at 390 px too


@needs_chromium
def test_a_pass_opens_its_draft_where_it_was_copied_from(pages):
    page = pages(1280, "en")
    idle(page)
    w = page.locator(WIDGET)
    chosen = int(page.locator("#dr-step").input_value()) - 1
    assert w.locator(".dr-pass").nth(chosen).get_attribute("aria-pressed") == "true"
    assert w.locator(".dr-detail .dr-draft .token").count() > 1  # it opens on the longest draft kept
    assert w.locator(".dr-stream .token.copied").count() >= 1 and w.locator(".dr-stream .token.matched").count() >= 1
    w.locator(".dr-pass").first.click()  # the prompt's pass: no draft
    assert page.locator("#dr-step").input_value() == "1"
    assert "Pass 1 of" in w.locator(".dr-detail").inner_text() and w.locator(".dr-stream .token.copied").count() == 0


@needs_chromium
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_list_to_copy_is_in_the_pages_language_and_saves_reads(pages, lang):
    page = pages(1280, lang)
    idle(page)
    with page.expect_response(lambda r: r.url.endswith("/api/drafting")) as answer:
        page.locator(f'{WIDGET} input[name="dr-source"][value="list"]').check()
    assert answer.value.request.post_data_json["prompt"] == LIST[lang]
    d = answer.value.json()
    idle(page)
    try:
        tokens, passes, plain = map(int, NUMBERS[lang].search(readout(page, "W-drafting")).groups())
        assert passes == d["passes"] < tokens == len(d["token_ids"]) and d["same"]
        # with the list showing, nothing on the section asks the reader to go and try it
        section = page.locator(WIDGET).evaluate("w => w.closest('section').innerText")
        assert "try the list" not in section and "试试那份" not in section
    finally:
        page.locator(f'{WIDGET} input[name="dr-source"][value="prompt"]').check()
        idle(page)
