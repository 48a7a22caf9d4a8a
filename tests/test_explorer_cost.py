"""§06 (what it costs), §07 (the runnable loop) and the recap in headless Chromium, at 1280 and 390 px, in English and
Chinese: the presets set the article's states; the prose's numbers are the widgets' own computation; "compute-bound"
and "memory-bound" follow this machine's measured ridge point; the many-users widget draws the engine's own run and its
counts are the engine's metrics; §07's links are numbered as the headings are; the recap says which numbers come from
the loaded model; nothing is left in the other language."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from test_explorer_fixtures import (
    ALL_PAGES,
    foreign_text,
    idle,
    needs_chromium,
    readout,
    run_many_users,
    set_range,
)

from forwardpass import cost
from forwardpass.explorer import compute
from forwardpass.explorer.machine_rates import bound, measure
from forwardpass.explorer.many_users import Settings, run

pytestmark = needs_chromium
MINE = ("W-intensity", "W-weights-vs-cache", "W-concurrency", "W-many-users", "W-param-split", "W-loop-walk",
        "W-loop-cost", "W-reopen", "s06", "s07", "s08")
BOUND = {"en": {"compute": "compute-bound", "memory": "memory-bound"},
         "zh": {"compute": "算力受限", "memory": "内存受限"}}
SMALL = {"requests": 4, "system_tokens": 32, "shared": True, "own_tokens": 8, "new_tokens": 6, "pool_blocks": 24,
         "arrival": "staggered"}
IDS = {"requests": "#mu-requests", "system_tokens": "#mu-system", "own_tokens": "#mu-own", "new_tokens": "#mu-new",
       "pool_blocks": "#mu-pool"}


def api(page, path: str) -> dict:
    return page.request.get(page.base + path.lstrip("/")).json()


def told(page, widget: str) -> str:
    return page.locator(f'[data-widget="{widget}"] .prose.told').inner_text()


def settled(page, widget: str) -> None:
    """The widget answered (no run in flight) and the page is idle."""
    page.wait_for_function("w => !document.querySelector(`[data-widget=\"${w}\"]`).hasAttribute('aria-busy')",
                           arg=widget, timeout=120_000)
    idle(page)


def press(page, widget: str, label: str) -> None:
    """The preset of `widget` that reads `label` (or ends with it: "36" is "36 sequences") pressed; its result in."""
    page.locator(f'[data-widget="{widget}"] button.preset',
                 has_text=re.compile(rf"^{re.escape(label)}$|^{re.escape(label)}\D")).click()
    page.wait_for_timeout(200)  # the debounced run starts
    settled(page, widget)


def one(x: float) -> str:
    return f"{x:.1f}"


def gib(x: float) -> str:
    return f"{x:.2f} GiB"


# ---- W-intensity: presets, and labels from this machine's measured ridge point -----------------------------------
def test_presets_set_the_articles_states(any_page):
    page, lang = any_page, any_page.lang
    press(page, "W-intensity", "P = 1")
    assert page.locator("#intensity-p").input_value() == "1" and "P = 1" in readout(page, "W-intensity")
    press(page, "W-intensity", "P = 16")
    text = readout(page, "W-intensity")
    assert page.locator("#intensity-p").input_value() == "16" and "P = 16" in text and "16.0" in text
    pressed = page.locator('[data-widget="W-intensity"] button.preset[aria-pressed=true]').all_inner_texts()
    assert pressed == ["P = 16"]
    press(page, "W-concurrency", "36")
    assert page.locator("#sequences").input_value() == "36"
    text = readout(page, "W-concurrency")
    assert ("36 sequences" in text and "weights still heavier" in text) if lang == "en" else \
        ("36 条序列" in text and "权重仍然更重" in text)
    press(page, "W-concurrency", "37")
    text = readout(page, "W-concurrency")
    assert ("37 sequences" in text and "caches outweigh the weights" in text) if lang == "en" else \
        ("37 条序列" in text and "缓存超过了权重" in text)


def prefill_label(text: str, lang: str) -> str:
    """The label the readout gives the prefill on this machine ("… the prefill is memory-bound, the decode …")."""
    return text.split("the prefill is")[1].split(",")[0] if lang == "en" else text.split("预填充")[-1].split("，")[0]


def test_intensity_labels_follow_the_measured_ridge(any_page):
    """'compute-bound' only where P's FLOPs per byte reach this machine's ridge point: P = 1 is never called
    compute-bound unless the ridge is at most 1 (the label was once fixed text)."""
    page, lang = any_page, any_page.lang
    for p, label in ((1, "P = 1"), (16, "P = 16")):
        press(page, "W-intensity", label)
        d = api(page, f"/api/intensity?prompt={p}")
        here = d["machines"][0]
        assert here["ridge"] == pytest.approx(here["flops"] / here["bandwidth"])
        want = "compute" if d["prefill"] >= here["ridge"] else "memory"
        assert here["prefill_bound"] == want
        text = readout(page, "W-intensity")
        shown = prefill_label(text, lang)
        assert BOUND[lang][want] in shown and one(here["ridge"]) in text
        if p == 1 and here["ridge"] > 1:
            assert BOUND[lang]["compute"] not in shown
        for gpu in d["machines"][1:]:  # a published GPU: its ridge is its datasheet's ratio
            assert gpu["ridge"] == pytest.approx(gpu["flops"] / gpu["bandwidth"])
            assert gpu["prefill_bound"] == ("compute" if d["prefill"] >= gpu["ridge"] else "memory")
    machine = page.locator('[data-widget="W-intensity"] .machine').inner_text()
    assert f"= {one(here['ridge'])}" in machine or f"每字节 {one(here['ridge'])}" in machine


def test_prose_numbers_are_the_widgets_computation(any_page):
    page, lang = any_page, any_page.lang
    p16, p1 = api(page, "/api/intensity?prompt=16"), api(page, "/api/intensity?prompt=1")
    text = told(page, "W-intensity")
    here = p16["machines"][0]
    assert one(p16["prefill"]) in text and one(p1["prefill"]) in text and one(p16["decode"]) in text
    assert one(here["ridge"]) in text and BOUND[lang][here["prefill_bound"]] in text
    for gpu in p16["machines"][1:]:
        assert one(gpu["ridge"]) in text and str(gpu["compute_bound_from"]) in text
    claim = {"en": ("true on a machine whose ridge is at most 16, as this server's is", "neither this server"),
             "zh": ("比如这台服务器", "这台服务器和这两款 GPU 都不是")}[lang]
    assert claim[0 if here["prefill_bound"] == "compute" else 1] in text  # where the article's claim holds, measured

    full = api(page, "/api/concurrency?sequences=1&context=2048")
    text = told(page, "W-weights-vs-cache")
    assert gib(full["one_cache_gib"]) in text and gib(full["weights_gib"]) in text and "2,048" in text
    assert f"{100 * full['one_cache_gib'] / full['weights_gib']:.1f}%" in text

    now = api(page, "/api/concurrency?sequences=37")
    below, above = api(page, "/api/concurrency?sequences=36"), now
    assert now["crossover"] == 37 and not below["caches_outweigh"] and above["caches_outweigh"]  # 36 vs 37
    text = told(page, "W-concurrency")
    assert one(now["weights_over_one_cache"]) in text and gib(below["caches_gib"]) in text
    assert gib(above["caches_gib"]) in text and gib(now["weights_gib"]) in text
    assert ("Past 36 sequences" in text) if lang == "en" else ("超过 36 条序列" in text)
    model = api(page, "/api/model-cache")
    assert f"{model['context']:,}" in text and model["kv_dtype"] in text
    assert model["crossover"] == model["weights"] // model["per_sequence"] + 1
    cells = page.locator('[data-widget="W-concurrency"] table.here tbody tr').last.locator("td").all_inner_texts()
    assert str(now["crossover"]) in cells[1] and str(model["crossover"]) in cells[2]
    whole = page.locator('[data-widget="W-concurrency"]').inner_text()  # the article's named idea, in its closing prose
    said = {"en": "is what production serving is built around", "zh": "塑造了生产级的推理服务"}[lang]
    assert said in whole

    split = api(page, "/api/param-split")
    text = told(page, "W-param-split")
    share = f"{100 * split['blocks_share']:.1f}%"
    assert share in text and share == "68.3%"
    shown = readout(page, "W-param-split")  # the counts in the readout, the shares in the prose
    assert f"{split['total']:,}" in shown and f"{split['blocks']:,}" in shown
    assert ("about two thirds" in text.lower()) if lang == "en" else ("大约三分之二" in text)


# ---- W-many-users: the engine's own run, drawn ----------------------------------------------------------------------
def set_many(page, settings: dict) -> None:
    for key, sel in IDS.items():
        set_range(page, sel, settings[key])
    page.locator("#mu-shared").set_checked(settings["shared"])
    page.locator("#mu-arrival").select_option(settings["arrival"])


def run_many(page) -> str:
    before = readout(page, "W-many-users")
    run_many_users(page)
    assert readout(page, "W-many-users") != "" and before is not None
    return readout(page, "W-many-users") + "\n" + told(page, "W-many-users")  # the readout, then the numbered prose


def show_step(page, k: int) -> None:
    set_range(page, "#mu-step", k)
    page.wait_for_function("k => document.querySelector('#mu-step').value == k", arg=k)


def grid(page) -> list[str]:
    return page.locator('[data-widget="W-many-users"] .pool g[data-block]').evaluate_all(
        "gs => gs.map(g => g.dataset.owner)")


@pytest.mark.parametrize("where", [(1280, "en"), (390, "zh")], ids=["1280px-en", "390px-zh"])
def test_many_users_draws_the_engines_run_and_its_metrics(pages, stored, where):
    page, lang = pages(*where), where[1]
    set_many(page, SMALL)
    text = run_many(page)
    want = run(stored, Settings(**SMALL))  # the same requests again: the scheduling is the same, step for step
    c, m = want["counted"], want["metrics"]
    assert want["agrees"] and c == m
    numbers = [int(n.replace(",", "")) for n in re.findall(r"\d[\d,]*", text)]
    for n in (SMALL["requests"], m["generation_tokens"], m["prompt_tokens"], m["ttft_count"], want["peak_used"],
              want["pool_blocks"]):
        assert n in numbers
    assert ("say the same" in text) if lang == "en" else ("给出同样的数字" in text)
    if lang == "zh":  # the pool's unit is a page (页): 块 is the transformer block on this page
        widget = page.locator('[data-widget="W-many-users"]').inner_text()
        assert "每页 16 个词元" in widget and "在用的页" in widget and not re.search(r"池[^。]*块|块数|每块 16", widget)
    steps = page.locator("#mu-step").get_attribute("max")
    assert int(steps) == len(want["steps"])
    busiest = max(range(len(want["steps"])), key=lambda k: want["steps"][k]["shared"])
    show_step(page, busiest + 1)
    owners = want["steps"][busiest]["owners"]
    expect = ["free" if o == -1 else "shared" if isinstance(o, list) else str(o) for o in owners]
    assert grid(page) == expect and expect.count("shared") == SMALL["system_tokens"] // 16  # the shared prefix
    counts = page.locator('[data-widget="W-many-users"] .mu-counts dd').all_inner_texts()
    assert counts[2].startswith(str(want["steps"][busiest]["used"]))
    assert counts[3] == str(want["steps"][busiest]["shared"])
    show_step(page, len(want["steps"]))
    counts = page.locator('[data-widget="W-many-users"] .mu-counts dd').all_inner_texts()
    assert counts[8].replace(",", "") == str(int(m["generation_tokens"])) and counts[7] == str(int(m["preemptions"]))
    assert set(grid(page)) == {"free"}  # every request done, every block back


def test_presets_show_sharing_and_preemption(pages):
    page = pages(1280, "en")
    with page.expect_response(lambda r: "/api/many-users" in r.url) as answer:
        press(page, "W-many-users", "a pool too small")
    d = answer.value.json()
    assert page.locator("#mu-pool").input_value() == "10"
    first, again = d["prefix_cache"]["first_hits"], d["prefix_cache"]["resumed_hits"]
    found = page.locator('[data-widget="W-many-users"] td[data-label="found in the prefix cache"]').all_text_contents()
    assert first == sum(int(x.replace(",", "")) for x in found) and again > 0  # preempted requests looked again
    said = told(page, "W-many-users")
    assert f"handed out {first} prompt tokens" in said and f"found {again} more" in said
    text = readout(page, "W-many-users")
    preempted = int(re.search(r"(\d+) preemptions?", text).group(1))
    assert preempted > 0 and "The pool ran out of blocks" in told(page, "W-many-users")
    assert page.locator('[data-widget="W-many-users"] button.preset[aria-pressed=true]').all_inner_texts() == \
        ["a pool too small"]
    press(page, "W-many-users", "nothing shared")
    settled(page, "W-many-users")
    assert "nothing could be shared" in told(page, "W-many-users")
    owners = page.evaluate("""() => { const input = document.querySelector('#mu-step'), seen = new Set();
      for (let k = +input.min; k <= +input.max; k++) { input.value = k; input.dispatchEvent(new Event('input'));
        document.querySelectorAll('[data-widget="W-many-users"] .pool g[data-block]')
          .forEach(g => seen.add(g.dataset.owner)); }
      return [...seen]; }""")
    assert "shared" not in owners and len(owners) > 1


def step_shown(page) -> tuple[int, str, str]:
    """the slider's value, the step the counts name ("9 of 23") and the blocks in use there"""
    return page.evaluate("""() => { const dd = [...document.querySelectorAll(
      '[data-widget="W-many-users"] .mu-counts dd')].map(d => d.textContent);
      return [+document.querySelector('#mu-step').value, dd[0], dd[2]]; }""")


@pytest.mark.parametrize("where", [(1280, "en"), (390, "zh")], ids=["1280px-en", "390px-zh"])
def test_the_step_slider_names_the_step_it_shows_and_a_run_rests_on_its_peak(pages, where):
    page = pages(*where)
    set_many(page, SMALL)
    with page.expect_response(lambda r: "/api/many-users" in r.url) as answer:
        run_many(page)
    d = answer.value.json()
    page.wait_for_function("document.querySelector('[data-widget=\"W-many-users\"] .play')"
                           ".getAttribute('aria-pressed') === 'false'", timeout=60_000)  # the run played, and stopped
    n, peak = len(d["steps"]), d["peak_used"]
    at, step, used = step_shown(page)
    of = "{} of {}" if where[1] == "en" else "{} / {}"
    assert step == of.format(at, n) and used == of.format(peak, d["pool_blocks"])  # the run's busiest step, not its end
    assert d["steps"][at - 1]["used"] == peak
    for k in (1, 9, n):
        show_step(page, k)
        assert step_shown(page)[1] == of.format(k, n)


# ---- §07: the loop walked, each link numbered as its heading is --------------------------------------------------
LINKS = """() => [...document.querySelectorAll('[data-widget="W-loop-walk"] .readout a')].map(a => {
  const target = document.querySelector(a.getAttribute('href'));
  const section = target && target.closest('main > section[id]');
  return { label: a.textContent, href: a.getAttribute('href'), section: section && section.id,
           heading: section && section.querySelector('h2').textContent };
})"""


def test_loop_walk_links_are_numbered_as_the_headings(any_page):
    page = any_page
    walk = page.locator('[data-widget="W-loop-walk"]')
    for _ in range(10):
        walk.locator(".prev").click()
    seen = []
    for line in range(9):
        links = page.evaluate(LINKS)
        assert links, f"line {line + 1} links nowhere"
        for link in links:
            number = re.match(r"§(\d+) · ", link["label"])
            assert number and link["heading"].startswith(f"{number.group(1)}."), link  # "§6 · …" → "6. What it costs"
            assert not link["label"].startswith("§0")
        seen.append(links)
        walk.locator(".next").click()
    stop = seen[-1]
    assert [x["href"] for x in stop] == ["#stop-conditions"] and stop[0]["section"] == "s07"
    model = api(page, "/api/model-cache")
    stop_text = page.locator('[data-widget="W-loop-walk"] .prose.told').inner_text()
    assert all(piece in stop_text for piece in model["end_tokens"]) and "max_tokens" in stop_text
    assert "#stop-conditions" in [x["href"] for x in seen[2]]  # max_len: the loop's other exit


def test_loop_cost_floors_are_this_machines(pages):
    page = pages(1280, "en")
    set_range(page, "#lc-new", 12)
    settled(page, "W-loop-cost")
    cells = page.locator('[data-widget="W-loop-cost"] td[data-label="least time here"]').all_inner_texts()
    assert cells[0].startswith("≥") and ("compute-bound" in cells[0] or "memory-bound" in cells[0])
    text = told(page, "W-loop-cost")
    here = api(page, "/api/intensity?prompt=1")["machines"][0]
    assert f"{here['bandwidth'] / 1e9:.1f} GB/s" in text or f"{here['bandwidth'] / 1e9:.2f} GB/s" in text
    # in Chinese: the growing cache is why the FLOPs grow (not why one token is sent), and no gap before the format
    page = pages(1280, "zh")
    set_range(page, "#lc-new", 12)
    settled(page, "W-loop-cost")
    text = told(page, "W-loop-cost")
    assert "所以运算量到最后一次涨到" in text and "因为注意力" not in text and "加载后的权重：" in text


def test_the_loop_cost_counts_only_the_calls_that_happen(stored):
    """With t tokens generated the model is called t times (the prefill chooses the first token), and the cache at the
    loop's end holds P + t − 1 pairs: the last token chosen is never fed back (§5's invariant)."""
    c, p = stored.config, 12
    for new in (1, 2, 12):
        d = compute.loop_cost(stored, p, new)
        rows = {r["key"]: r for r in d["rows"]}
        decode = rows["all_decode"]["calls"] if "all_decode" in rows else int("first_decode" in rows)
        assert rows["prefill"]["calls"] + decode == new and ("first_decode" in rows) == (new > 1)
        assert ("last_decode" in rows) == (new > 2)  # the second call is the last one at two tokens: named once
        held = rows["cache"]
        assert held["pairs"] == p + new - 1 and held["bytes"] == cost.kv_bytes(c, p + new - 1, held["dtype"])


def test_the_loop_costs_verdicts_name_their_assumptions(smollm):
    """A call's bound is its FLOPs per byte of the weights as loaded against this machine's ridge; the same call with
    fp16 weights (the format §6 counts) is given beside it."""
    d, here = compute.loop_cost(smollm, 12, 12), measure()
    w = d["weights"]
    assert w["per_weight"] == pytest.approx(w["bytes"] / cost.parameters(smollm.config).total)
    assert w["storage"] == "fp32" and w["per_weight"] == pytest.approx(4, rel=0.01)
    for r in d["rows"]:
        if "floor_s" in r:
            assert r["intensity"] == pytest.approx(r["flops"] / (r["calls"] * w["bytes"]))
            assert r["bound"] == bound(r["intensity"], here["ridge"])
    one_call = next(r for r in d["rows"] if r["key"] == "first_decode")
    fp16 = d["fp16"]
    assert fp16["intensity"] == pytest.approx(one_call["flops"] / cost.weight_bytes(smollm.config, "fp16"))
    assert fp16["bound"] == bound(fp16["intensity"], here["ridge"])


@pytest.mark.parametrize("where", [(1280, "en"), (1280, "zh")], ids=["en", "zh"])
def test_one_generated_token_is_one_call_and_the_cache_holds_what_was_read(pages, stored, where):
    page, lang = pages(*where), where[1]
    p = len(stored.encode(page.locator("#prompt").input_value()))
    set_range(page, "#lc-new", 1)
    page.wait_for_timeout(300)
    settled(page, "W-loop-cost")
    widget = page.locator('[data-widget="W-loop-cost"]').inner_text()
    assert ("second call" not in widget and "after it" not in readout(page, "W-loop-cost")) if lang == "en" else (
        "第二次调用" not in widget and "之后第一个词元" not in readout(page, "W-loop-cost"))
    assert (f"{p} pairs per block" in widget) if lang == "en" else (f"每块 {p} 对" in widget)
    set_range(page, "#lc-new", 12)
    page.wait_for_timeout(300)
    settled(page, "W-loop-cost")
    widget = page.locator('[data-widget="W-loop-cost"]').inner_text()
    assert (f"{p + 11} pairs per block" in widget) if lang == "en" else (f"每块 {p + 11} 对" in widget)


def test_every_bound_on_the_page_names_the_weights_and_rates_it_rests_on(any_page):
    """§7 calls a one-token call of the model as loaded compute- or memory-bound on this server, §6 and the recap call
    decode memory-bound: each says the weights' format and the machine it means, and the two agree on fp16."""
    page, lang = any_page, any_page.lang
    set_range(page, "#lc-new", 12)
    page.wait_for_timeout(300)
    settled(page, "W-loop-cost")
    prompt = len(page.request.post(page.base + "api/lookup", data={"prompt": page.locator("#prompt").input_value()})
                 .json()["tokens"])
    d = api(page, f"/api/loop-cost?prompt={prompt}&new=12")
    here = d["machine"]
    text = told(page, "W-loop-cost")
    w = d["weights"]  # a file's own blocks are named by their types (Q4_1, …), a storage mode by its name
    assert all(name in text for name in (w["types"] if w["storage"] == "stored" else [w["storage"]]))
    assert f"{w['per_weight']:.2f}" in text
    assert one(here["ridge"]) in text and re.search(rf"{here['bandwidth'] / 1e9:.1f}\d? GB/s", text)
    one_call = next(r for r in d["rows"] if r["key"] == "first_decode")
    assert one(one_call["intensity"]) in text and one(d["fp16"]["intensity"]) in text
    assert BOUND[lang][d["fp16"]["bound"]] in text.split("fp16")[-1]
    decode = told(page, "W-intensity").split("\n")[-1]  # §6's decode paragraph: fp16, the machines it is about
    recap = page.locator('[data-widget="W-reopen"] .recap li:has(a[href="#s06"])').inner_text()
    for said in (decode, recap):
        assert "fp16" in said
        assert not re.search(r"on every machine|everywhere|在哪台机器上都|在哪里都", said)


# ---- the recap: which numbers come from the model ------------------------------------------------------------------
def test_recap_says_which_numbers_come_from_the_model(any_page):
    page = any_page
    text = told(page, "W-reopen") + readout(page, "W-reopen")
    assert not re.search(r"every (number|widget)", text, re.IGNORECASE)
    paragraphs = page.locator('[data-widget="W-reopen"] .prose.told p')
    model_links = paragraphs.nth(0).locator("a").evaluate_all("as => as.map(a => a.getAttribute('href'))")
    formula_links = paragraphs.nth(1).locator("a").evaluate_all("as => as.map(a => a.getAttribute('href'))")
    assert "#h-W-many-users" in model_links and "#h-W-loop-cost" in model_links
    assert {"#h-W-intensity", "#h-W-concurrency", "#h-W-param-split"} <= set(formula_links)
    for widget in ("W-depth", "W-cache-memory"):  # formulas on GPT-2's and GPT-3's fixed shapes
        if page.locator(f'[data-widget="{widget}"]').count():
            assert f"#h-{widget}" in formula_links
    name = page.locator("#model-name").inner_text()
    assert name in paragraphs.nth(0).inner_text()
    assert str(len(model_links)) in readout(page, "W-reopen") and str(len(formula_links)) in readout(page, "W-reopen")


def test_recap_has_one_idea_per_section_with_drafting_s_passes_and_no_unplaced_widget(any_page):
    """Every section before the recap has its idea (§7's: W-drafting's reads of the weights with drafting and
    without, on the page's prompt), the title counts them, and every source link carries its section's number."""
    page = any_page
    w = page.locator('[data-widget="W-reopen"]')
    sections = page.evaluate("[...document.querySelectorAll('main > section[id]')].map((s) => '#' + s.id)")
    ideas = w.locator(".recap li")
    assert ideas.locator("a").evaluate_all("as => as.map((a) => a.hash)") == sections[:-1]
    count = {"en": "eight", "zh": "八"}[page.lang]
    assert len(sections) - 1 == 8 and count in w.locator("h3").inner_text().lower()
    assert count in w.locator('[data-text="before-W-reopen"]').inner_text().lower()
    model = page.evaluate("async () => (await import('/static/lib/state.js')).state.model")  # the page's own module
    body = {"prompt": page.locator("#prompt").input_value(), "steps": 48, "model": model}
    d = page.request.post(page.base + "api/drafting", data=body).json()
    said = ideas.nth(sections.index("#drafting")).inner_text()
    assert re.search(rf"\b{d['passes']}\b", said) and re.search(rf"\b{d['plain']['passes']}\b", said)
    assert "§?" not in w.inner_text() and w.locator('.prose.told a[data-section=""]').count() == 0


# ---- both languages -------------------------------------------------------------------------------------------------
def test_nothing_here_is_left_in_the_other_language(any_page):
    page = any_page
    if page.locator('[data-widget="W-many-users"]').get_attribute("data-state") != "current":
        set_many(page, SMALL)
        run_many(page)
    page.locator('[data-widget="W-many-users"] details').evaluate("d => d.open = true")
    try:
        assert [f for f in foreign_text(page) if f[0].split(" ")[0] in MINE] == []
        assert page.errors == []
    finally:
        page.locator('[data-widget="W-many-users"] details').evaluate("d => d.open = false")


def test_the_sections_can_be_pictured(pages):
    """Screenshots of §06, §07 and the recap, both widths, both languages (artifacts/, or $FORWARDPASS_ARTIFACTS)."""
    out = Path(os.environ.get("FORWARDPASS_ARTIFACTS", Path(__file__).parent.parent / "artifacts"))
    out.mkdir(parents=True, exist_ok=True)
    for width, lang in ALL_PAGES:
        page = pages(width, lang)
        for sid in ("s06", "s07", "s08"):
            path = out / f"explorer-{sid}-{lang}-{width}.png"
            page.locator(f"#{sid}").screenshot(path=str(path))
            assert path.stat().st_size > 10_000


@needs_chromium
def test_the_roofline_is_log_log(any_page):
    """Share against intensity on log scales of both: the share's ticks are decades (and their halves) a constant
    distance apart, so the memory-bound slope is a straight line."""
    ticks = any_page.evaluate("""() => [...document.querySelectorAll('[data-widget="W-intensity"] .roof svg text')]
      .filter(e => /^[0-9.]+%$/.test(e.textContent)).map(e => [e.textContent, +e.getAttribute('y')])""")
    at = dict(ticks)
    assert {"1%", "10%", "100%"} <= set(at)
    assert at["1%"] - at["10%"] == pytest.approx(at["10%"] - at["100%"], abs=1)
