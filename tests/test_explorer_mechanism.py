"""W-mechanism: one token through one block, stage by stage. Its numbers against the model's own tensors, recorded by
hooks of this file on a separate forward pass (SmolLM2 and Gemma 3 270M, whose block has more stages: QK-norm and a
norm after each branch); RoPE's rotated q·k against the attention map's score; softmax, the mask and the residual
adds; and the widget on the page, stepped through in both languages at 1280 and 390 px."""

from __future__ import annotations

import json
import re

import pytest
import torch
from fastapi.testclient import TestClient
from test_explorer_fixtures import DEFAULT_PROMPT, foreign_text, idle, needs_chromium, readout, set_range

import forwardpass
from forwardpass.errors import ModelFileError
from forwardpass.explorer.app import build_explorer
from forwardpass.explorer.attention_map import attention_map
from forwardpass.explorer.compute import model_lock
from forwardpass.explorer.mechanism import mechanism
from forwardpass.explorer.strips import vector
from forwardpass.model import apply_rope


@pytest.fixture(scope="module")
def gemma():
    from forwardpass.packaged import gemma3_270m
    try:
        return forwardpass.load(gemma3_270m(), storage="fp32")
    except ModelFileError as e:
        pytest.skip(str(e))


def hooked(fp, ids: list[int], layer: int) -> dict[str, torch.Tensor]:
    """A whole forward pass of `ids`, with hooks on block `layer`'s modules: what each took in and gave out, (1, T, …)
    (q_norm's and k_norm's (1, heads, T, head_dim)); and the next block's input."""
    model = fp.model
    block = model.blocks[layer]
    seen = {}

    def out(name):
        return lambda m, i, o: seen.__setitem__(name, o.clone())

    def into(name):
        return lambda m, i: seen.__setitem__(name, i[0].clone())

    watched = {"h": block.attn_norm, "qkv": block.attn.qkv, "q_n": block.attn.q_norm, "k_n": block.attn.k_norm,
               "a": block.attn, "a_n": block.attn_post_norm, "u": block.ffn_norm, "gate_up": block.ffn.gate_up,
               "f": block.ffn.down, "f_n": block.ffn_post_norm, "x_out": block}
    hooks = [m.register_forward_hook(out(n)) for n, m in watched.items() if m is not None]
    hooks += [m.register_forward_pre_hook(into(n)) for n, m in {
        "x": block, "o": block.attn.out, "x_mid": block.ffn_norm, "prod": block.ffn.down}.items()]
    if layer + 1 < len(model.blocks):
        hooks.append(model.blocks[layer + 1].register_forward_pre_hook(into("next")))
    try:
        with torch.inference_mode():
            model(torch.tensor([ids]))
    finally:
        for h in hooks:
            h.remove()
    return seen


def check_against_hooks(fp, prompt: str, layer: int, head: int, token: int) -> dict:
    """Every vector the widget draws is the strip of the tensor the model computed (equal, not close), and the
    stages between them agree with the model's own arithmetic. Returns the answer."""
    with model_lock(fp):
        d = mechanism(fp, prompt, layer, head, token)
    ids, c, t = fp.encode(prompt), fp.config, token
    seen = hooked(fp, ids, layer)
    attn = fp.model.blocks[layer].attn
    nh, nkv, hd = attn.n_heads, attn.n_kv_heads, attn.head_dim
    g = head // (nh // nkv)
    vec = d["vectors"]
    row = lambda name: seen[name][0, t]  # noqa: E731

    # the embedding: the table's row for this token's id (× √d_model where the family scales it)
    table = fp.model.tok_embeddings.weight
    assert d["id"] == ids[t] and vec["e"] == vector(table[ids[t]])
    if c.embed_scale:
        assert vec["e_scaled"] == vector(table[ids[t]] * c.d_model**0.5)
        assert d["stages"][0]["scale"] == pytest.approx(c.d_model**0.5)
    # every module's output, this token's row, as the hooks saw it
    q, k, v = seen["qkv"][0, t].split([nh * hd, nkv * hd, nkv * hd])
    expected = {"x": row("x"), "h": row("h"), "q": q.view(nh, hd)[head], "k": k.view(nkv, hd)[g],
                "v": v.view(nkv, hd)[g], "o": row("o"), "a": row("a"), "x_mid": row("x_mid"), "u": row("u"),
                "gate": row("gate_up").chunk(2)[0], "up": row("gate_up").chunk(2)[1], "prod": row("prod"),
                "f": row("f"), "x_out": row("x_out")}
    if c.qk_norm:
        expected |= {"q_n": seen["q_n"][0, head, t], "k_n": seen["k_n"][0, g, t]}
    if c.sandwich_norm:
        expected |= {"a_n": row("a_n"), "f_n": row("f_n")}
    for name, tensor in expected.items():
        assert vec[name] == vector(tensor), name
    # the two adds: the stream plus what each branch returned, and the result is the next block's input
    branch_a, branch_f = (row("a_n"), row("f_n")) if c.sandwich_norm else (row("a"), row("f"))
    assert torch.equal(row("x_mid"), row("x") + branch_a) and torch.equal(row("x_out"), row("x_mid") + branch_f)
    if "next" in seen:
        assert torch.equal(seen["next"][0, t], row("x_out"))
    # the norm: x over its RMS, times the gain
    norm = next(s for s in d["stages"] if s["name"] == "attn_norm")["parts"][0]
    rms = torch.sqrt(row("x").pow(2).mean() + c.norm_eps)
    assert norm["rms"] == pytest.approx(float(rms), rel=1e-5)
    assert torch.allclose(row("x") / rms * fp.model.blocks[layer].attn_norm.weight, row("h"), atol=1e-5, rtol=1e-5)
    # which query heads read this K/V head
    qkv = next(s for s in d["stages"] if s["name"] == "qkv")
    assert qkv["kv_head"] == g and head in qkv["sharing"] and len(qkv["sharing"]) == nh // nkv
    assert d["matrices"]["W_Q"]["shape"] == [hd, c.d_model] and d["matrices"]["W_O"]["shape"] == [c.d_model, nh * hd]
    return d


def check_attention(fp, d: dict, prompt: str) -> None:
    """RoPE's rotated q·k × the scale is the score the attention map's softmax is taken over; softmax rows sum to 1
    and the mask leaves the later tokens weight 0; the weighted sum of the values is this head's slice of the heads
    the model joined."""
    ids, t, layer, head = fp.encode(prompt), d["token"], d["layer"], d["head"]
    seen = hooked(fp, ids, layer)
    model = fp.model
    block = model.blocks[layer]
    attn = block.attn
    nh, nkv, hd, T = attn.n_heads, attn.n_kv_heads, attn.head_dim, len(ids)
    g = head // (nh // nkv)
    if fp.config.qk_norm:
        q, k = seen["q_n"][0, head], seen["k_n"][0, g]  # (T, head_dim)
    else:
        qs, ks, _ = seen["qkv"][0].split([nh * hd, nkv * hd, nkv * hd], dim=-1)
        q, k = qs.view(T, nh, hd)[:, head], ks.view(T, nkv, hd)[:, g]
    rotary = model.rope_local if block.sliding and model.rope_local is not None else model.rope
    cos, sin = rotary(torch.arange(T)[None], T)  # (1, 1, T, head_dim)
    q_rot, k_rot = apply_rope(q, cos[0, 0], sin[0, 0]), apply_rope(k, cos[0, 0], sin[0, 0])
    scores = (k_rot @ q_rot[t]) * attn.scale  # (T,)
    stage = {s["name"]: s for s in d["stages"]}
    assert stage["scores"]["scaled"] == pytest.approx(scores.tolist(), rel=1e-5, abs=1e-5)
    rope = stage["rope"]
    key = rope["score"]["key"]
    assert rope["score"]["after"] == pytest.approx(float(scores[key]), rel=1e-5, abs=1e-5)
    assert rope["score"]["before"] == pytest.approx(float(q[t] @ k[key] * attn.scale), rel=1e-5, abs=1e-5)
    assert rope["position"] == t and rope["angles"][0] == pytest.approx(t)  # pair 0 turns by t × 1 radian
    assert rope["angles"][1] == pytest.approx(t * rotary.table.inv_freq[1], abs=1e-4)
    with model_lock(fp):
        row = attention_map(fp, prompt, layer)["heads"][head][t]  # the map's row: keys 0 … t
    weights = stage["softmax"]["weights"]
    assert weights[: t + 1] == pytest.approx(row, abs=2e-5)
    assert weights[: t + 1] == pytest.approx(torch.softmax(scores[: t + 1], -1).tolist(), abs=1e-5)
    assert sum(weights) == pytest.approx(1.0, abs=1e-5) and stage["softmax"]["sum"] == pytest.approx(1.0, abs=1e-5)
    assert all(w == 0.0 for w in weights[t + 1:]) and stage["scores"]["allowed"] == [j <= t for j in range(T)]
    joined = seen["o"][0, t].view(nh, hd)[head]
    assert d["vectors"]["o_head"]["lead"] == pytest.approx(joined[:6].tolist(), rel=1e-4, abs=1e-5)
    assert d["vectors"]["o_head"]["norm"] == pytest.approx(float(joined.norm()), rel=1e-4)


def check_block(fp, layer: int, head: int, token: int) -> None:
    """The default prompt's block `layer`, `head` and `token` as the widget is told it, against the model's own."""
    d = check_against_hooks(fp, DEFAULT_PROMPT, layer, head, token)
    check_attention(fp, d, DEFAULT_PROMPT)


def told_block(fp, layer: int, head: int, token: int) -> dict:
    """mechanism()'s answer for the default prompt, taken under the model's lock as the endpoint takes it"""
    with model_lock(fp):
        return mechanism(fp, DEFAULT_PROMPT, layer, head, token)


# ---- SmolLM2 ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("layer, head, token", [(0, 0, 0), (3, 4, 7), (29, 8, 11)])
def test_smollm_block_is_the_models_own(smollm, layer, head, token):
    check_block(smollm, layer, head, token)


def test_smollm_stages_are_its_familys(stored):
    d = told_block(stored, 2, 1, 5)
    assert [s["name"] for s in d["stages"]] == [
        "embedding", "stream", "attn_norm", "qkv", "rope", "scores", "softmax", "weighted_sum", "heads",
        "residual_attn", "ffn_norm", "gate_up", "activation", "down", "residual_ffn"]
    act = next(s for s in d["stages"] if s["name"] == "activation")
    xs = torch.tensor([x for x, _ in act["curve"]])
    assert act["function"] == "silu" and act["gated"]  # SwiGLU: read off the model's config
    assert [y for _, y in act["curve"]] == pytest.approx(torch.nn.functional.silu(xs).tolist(), rel=1e-5, abs=1e-6)
    qkv = d["stages"][3]
    assert qkv["sharing"] == [0, 1, 2] and qkv["kv_head"] == 0  # 9 query heads, 3 K/V heads
    assert len(json.dumps(d)) < 20_000  # a few leading numbers and strips, no whole matrix


def test_a_choice_outside_the_model_is_refused(stored):
    from forwardpass.errors import ForwardpassError
    with model_lock(stored), pytest.raises(ForwardpassError) as e:
        mechanism(stored, DEFAULT_PROMPT, 30, 0, 0)
    assert e.value.code == "choice"


# ---- Gemma 3 270M: QK-norm, sandwich norms, scaled embeddings, GELU-tanh, sliding and full layers -------------------
@pytest.mark.parametrize("layer, head, token", [(0, 2, 5), (5, 1, 9)])  # block 6 attends to everything
def test_gemma_block_is_the_models_own(gemma, layer, head, token):
    check_block(gemma, layer, head, token)


def test_gemma_stages_are_its_familys(gemma):
    d = told_block(gemma, 5, 3, 4)
    assert [s["name"] for s in d["stages"]] == [
        "embedding", "stream", "attn_norm", "qkv", "qk_norm", "rope", "scores", "softmax", "weighted_sum", "heads",
        "attn_post_norm", "residual_attn", "ffn_norm", "gate_up", "activation", "down", "ffn_post_norm",
        "residual_ffn"]
    stage = {s["name"]: s for s in d["stages"]}
    act = stage["activation"]
    xs = torch.tensor([x for x, _ in act["curve"]])
    assert act["function"] == "gelu_tanh" and act["gated"]
    assert [y for _, y in act["curve"]] == pytest.approx(
        torch.nn.functional.gelu(xs, approximate="tanh").tolist(), rel=1e-5, abs=1e-6)
    assert stage["qkv"]["sharing"] == [0, 1, 2, 3]  # one K/V head for all four
    assert stage["rope"]["theta"] == gemma.config.rope_theta  # a full layer's base; the sliding ones' is their own
    sliding = told_block(gemma, 0, 0, 4)
    assert next(s for s in sliding["stages"] if s["name"] == "rope")["theta"] == gemma.config.local_rope_theta
    assert next(s for s in sliding["stages"] if s["name"] == "scores")["window"] == gemma.config.sliding_window


def test_the_endpoint_answers_the_same_and_says_a_bad_choice_in_the_pages_words(stored):
    client = TestClient(build_explorer(stored))
    body = {"prompt": DEFAULT_PROMPT, "layer": 2, "head": 1, "token": 5}
    with model_lock(stored):
        direct = mechanism(stored, DEFAULT_PROMPT, 2, 1, 5)
    assert client.post("/api/mechanism", json=body).json() == json.loads(json.dumps(direct))
    bad = client.post("/api/mechanism", json=body | {"head": 9})
    assert bad.status_code == 400 and bad.json()["code"] == "choice"


# ---- the page: opened with numbers, stepped through, in both languages at 1280 and 390 px ---------------------------
WIDGET = '[data-widget="W-mechanism"]'
NUMBER = re.compile(r"[−-]?\d+(?:[.,]\d+)*(?:e[−-]?\d+)?")


def opened(page):
    """the widget, any fold around it opened, on its first stage"""
    w = page.locator(WIDGET)
    w.evaluate("e => { for (let d = e.closest('details'); d; d = d.parentElement.closest('details')) d.open = true; }")
    w.locator("button.stage").first.click()
    return w


def figure_text(w) -> str:
    return w.locator(".mech-figure svg").evaluate("s => [...s.querySelectorAll('text')].map((e) => e.textContent)"
                                                   ".join('  ')")


def numbers_in(text: str) -> list[float]:
    return [float(x.replace("−", "-").replace(",", "")) for x in NUMBER.findall(text)]


@needs_chromium
def test_the_widget_opens_on_the_models_numbers_and_steps_through_every_stage(any_page, stored):
    page = any_page
    w = opened(page)
    ids = stored.encode(DEFAULT_PROMPT)
    token = len(ids) - 1  # the prompt's last token, as W-block-steps and W-reach
    said = readout(page, "W-mechanism")
    assert f"{token}" in said and ("1" in said) and (page.lang == "en" or re.search(r"[\u4e00-\u9fff]", said))
    # the embedding stage: the token's id, and its row's first numbers, the model's own
    told = w.locator(".told").inner_text()
    with torch.inference_mode():  # the token's row as the model reads it (a quantized table's, dequantized)
        row = stored.model.tok_embeddings(torch.tensor([ids[token]]))[0]
    assert f"{ids[token]:,}" in told
    shown = numbers_in(told.split(":", 1)[1] if page.lang == "en" else told.split("：", 1)[1])
    firsts = [x for x in shown if any(abs(x - float(v)) <= 5e-4 * max(1, abs(float(v))) for v in row[:3])]
    assert len(firsts) >= 3, (told, row[:3].tolist())
    lead = [float(x.replace("−", "-")) for x in w.locator(".mech-figure svg text").evaluate_all(
        "els => els.map((e) => e.textContent)") if re.fullmatch(r"[−-]?\d+\.\d+(?:e[−-]?\d+)?", x)]
    assert any(abs(x - float(row[0])) <= 5e-4 * max(1, abs(float(row[0]))) for x in lead)  # the first box
    # every stage, forward with ▶, each with its picture, its numbers and its prose; then back with ◀
    stages = w.locator("button.stage").count()
    assert stages == 15  # SmolLM2: no QK-norm, no norms after the branches
    seen = set()
    for i in range(stages):
        said = readout(page, "W-mechanism")
        assert re.search(rf"\b{i + 1}\b", said) and str(stages) in said
        assert w.locator("button.stage[aria-pressed=true]").inner_text().startswith(f"{i + 1} ")
        text = figure_text(w)
        assert numbers_in(text) and w.locator(".told").inner_text().strip()
        assert re.search(r"\(\d", text) or "×" in text or "q·k" in text  # its shapes (or the scores' columns)
        seen.add(text)
        assert [f for f in foreign_text(page) if f[0].split(" @")[0] == "W-mechanism"] == [], said
        w.locator("button.next").click()
    assert len(seen) == stages
    w.locator("button.prev").click()
    assert f"{stages - 1}" in readout(page, "W-mechanism")
    # readable: nothing in the other language (checked at each stage above), no text under 11 px, no sideways scroll
    sizes = w.evaluate("""e => [...e.querySelectorAll('svg text, .readout, .told, button, label')].map((n) => {
        const svg = n.closest('svg'), scale = svg ? svg.getBoundingClientRect().width / svg.viewBox.baseVal.width : 1;
        return parseFloat(getComputedStyle(n).fontSize) * scale; })""")
    assert min(sizes) >= 11.5
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 1
    w.locator("button.stage").first.click()


@needs_chromium
def test_the_stages_follow_the_block_head_and_token_chosen(pages, stored):
    page = pages(1280, "en")
    w = opened(page)
    last = stored.config.n_layers
    w.locator("button.stage").last.click()
    set_range(page, "#mech-layer", last)
    page.wait_for_function("n => document.querySelector('[data-widget=\"W-mechanism\"] .readout').innerText"
                           ".includes(`block ${n},`)", arg=last)
    idle(page)
    assert "final norm" in w.locator(".told").inner_text()  # the last block hands the stream to the final norm
    set_range(page, "#mech-layer", 1)
    set_range(page, "#mech-head", 5)
    w.locator("#mech-token").select_option("3")
    page.wait_for_function("() => /block 1, token 3 /.test(document.querySelector('[data-widget=\"W-mechanism\"]"
                           " .readout').innerText)")
    idle(page)
    assert "head" not in readout(page, "W-mechanism")  # the FFN's add: the same for every head
    w.locator("button.stage").nth(3).click()  # Q, K and V: head 5 reads K/V head 2, with heads 4 and 6
    assert "head 5, token 3 " in readout(page, "W-mechanism")
    assert "K/V head 2, shared by query heads 4, 5 and 6" in w.locator(".told").inner_text()
    # the worked dot products: "a × b", a negative factor in brackets, a negative term's sign as the operator
    sums = [x for x in figure_text(w).split("  ") if "₀ =" in x]
    assert len(sums) == 3 and all(" × " in x and "·" not in x for x in sums), sums
    assert not any(re.search(r"× [−-]|[+−] [−-]", x) for x in sums), sums
    w.locator("button.stage").nth(4).click()  # RoPE at position 3: every label of the angle plot inside the picture
    overflow = w.locator(".mech-figure svg").evaluate("""s => [...s.querySelectorAll('text')].filter((e) => {
        const b = e.getBBox(); return b.x < -1 || b.x + b.width > s.viewBox.baseVal.width + 1; }).length""")
    assert overflow == 0
    assert "what the turn does to a score depends only on how far apart" in w.locator(".told").inner_text()
    assert w.locator("button.stage", has_text="softmax").inner_text() == "7 softmax: scores to weights"
    set_range(page, "#mech-head", 1)
    w.locator("#mech-token").select_option(str(len(stored.encode(DEFAULT_PROMPT)) - 2))
    idle(page)


@needs_chromium
def test_the_widget_sits_in_section_2_before_its_closing_prose_and_is_cited_as_2(any_page):
    page = any_page
    w = page.locator(WIDGET)
    assert w.evaluate("e => e.closest('main > section').id") == "s01"
    assert w.evaluate("""e => !!(e.compareDocumentPosition(document.querySelector('#s01 > .bridge'))
        & Node.DOCUMENT_POSITION_FOLLOWING)""")  # §2's closing transition comes after it
    assert w.evaluate("""e => !!(e.compareDocumentPosition(document.querySelector('[data-widget="W-block-steps"]'))
        & Node.DOCUMENT_POSITION_PRECEDING)""")
    cited = page.locator('[data-widget="W-reopen"] a[href="#h-W-mechanism"]')
    assert cited.get_attribute("data-section") == "2" and cited.inner_text().startswith("§2 ")
