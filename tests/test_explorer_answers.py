"""The explorer answers each question once (explorer/answers.py), prepares the opening page's slow answers when it
starts, and reads the widgets that look inside the model off one watched pass per prompt (explorer/trace.py)."""

from __future__ import annotations

import threading

import pytest
import torch
from fastapi.testclient import TestClient
from test_explorer_fixtures import DEFAULT_PROMPT, Answer, asked_on_opening, chromium, explorer, needs_chromium

from forwardpass.explorer import compute, lens
from forwardpass.explorer.answers import Answers
from forwardpass.explorer.app import Prompt, Steps, Story, build_explorer, opening
from forwardpass.explorer.many_users import Body as Crowd
from forwardpass.explorer.trace import trace


# ---- Answers ------------------------------------------------------------------------------------------------------
def test_the_same_question_is_computed_once_and_fresh_computes_it_again():
    answers, calls = Answers(), []

    def compute_():
        calls.append(1)
        return {"n": len(calls)}

    assert answers.get("/a", {"x": 1}, compute_) == {"n": 1}
    assert answers.get("/a", {"x": 1}, compute_) == {"n": 1} and len(calls) == 1
    assert answers.get("/a", {"x": 2}, compute_) == {"n": 2}  # another body, another question
    assert answers.get("/b", {"x": 1}, compute_) == {"n": 3}  # another endpoint too
    assert answers.get("/a", {"x": 1}, compute_, fresh=True) == {"n": 4}  # a new measurement …
    assert answers.get("/a", {"x": 1}, compute_) == {"n": 4}  # … which replaces the one remembered


def test_questions_asked_while_the_first_computes_wait_for_its_answer():
    answers, calls, started, release = Answers(), [], threading.Event(), threading.Event()

    def slow():
        calls.append(1)
        started.set()
        release.wait(10)
        return {"done": True}

    got: list = []
    first = threading.Thread(target=lambda: got.append(answers.get("/slow", {}, slow)))
    first.start()
    assert started.wait(10)
    others = [threading.Thread(target=lambda: got.append(answers.get("/slow", {}, slow))) for _ in range(3)]
    for t in others:
        t.start()
    release.set()
    for t in [first, *others]:
        t.join(10)
    assert got == [{"done": True}] * 4 and len(calls) == 1


def test_a_failure_is_not_remembered_and_the_kept_answers_are_bounded():
    answers, calls = Answers(kept=3), []

    def fails():
        calls.append(1)
        raise ValueError("bad")

    for _ in range(2):
        with pytest.raises(ValueError):
            answers.get("/f", {}, fails)
    assert len(calls) == 2  # asked again, computed again
    for i in range(5):
        answers.get("/n", {"i": i}, lambda i=i: {"i": i})
    assert [answers.known("/n", {"i": i}) for i in range(5)] == [False, False, True, True, True]


# ---- the explorer's routes go through them --------------------------------------------------------------------------
def test_a_second_page_asking_the_same_gets_the_first_answer(stored, monkeypatch):
    runs: list[str] = []
    lookup = compute.lookup
    monkeypatch.setattr(compute, "lookup", lambda fp, prompt: runs.append(prompt) or lookup(fp, prompt))
    client = TestClient(build_explorer(stored))
    a = client.post("/api/lookup", json={"prompt": "one two"}).json()
    b = client.post("/api/lookup", json={"prompt": "one two", "model": stored.config.name}).json()  # the same model
    assert a == b and runs == ["one two"]
    client.post("/api/lookup", json={"prompt": "one three"})
    assert runs == ["one two", "one three"]
    bad = client.post("/api/lookup", json={"prompt": ""})  # refused, and refused again: never remembered
    assert bad.status_code == 400 and client.post("/api/lookup", json={"prompt": ""}).status_code == 400
    assert runs == ["one two", "one three", "", ""]


def test_a_timed_answer_is_remembered_until_the_page_asks_for_a_new_one(stored):
    client = TestClient(build_explorer(stored))
    body = {"prompt": "one two three", "steps": 2}
    first = client.post("/api/loop-timing", json=body).json()
    assert client.post("/api/loop-timing", json=body).json() == first
    again = client.post("/api/loop-timing?fresh=1", json=body).json()
    assert again["measured_at"] > first["measured_at"] and again["steps"] != first["steps"]  # timed anew
    assert client.post("/api/loop-timing", json=body).json() == again


def test_the_explorer_prepares_the_opening_pages_slow_answers(stored):
    app = build_explorer(stored, prepare=True)
    app.state.prepared.join(120)
    assert not app.state.prepared.is_alive()
    for path, body in opening():
        assert app.state.answers.known(path, body.model_dump() | {"model": stored.config.name}), path


@needs_chromium
def test_the_page_opens_on_exactly_the_prepared_answers(stored):
    """What the page asks of the slow endpoints when it opens is what the explorer prepared: nothing of theirs is
    computed while it opens (a drift between the page's controls and opening() fails here)."""
    shapes = {"/api/candidates": Story, "/api/ring-overflow": Steps, "/api/loop-timing": Steps,
              "/api/greedy-loop": Steps, "/api/position-bug": Steps, "/api/many-users": Crowd,
              "/api/drafting": Steps}
    prepared = {(path, Answer(body.model_dump() | {"model": stored.config.name})) for path, body in opening()}
    with chromium() as browser, explorer(stored) as url:
        asked = {(path, Answer(body.model_dump() | {"model": body.model or stored.config.name}))
                 for path, body in asked_on_opening(browser, url, shapes)}
    assert asked == prepared


# ---- one watched pass per prompt ------------------------------------------------------------------------------------
def test_the_watched_pass_is_what_hooks_on_a_separate_run_see(stored):
    """Each block's input, its output and what its two branches added, as a run of the model with hooks of its own
    records them, and the logits of a plain forward pass: bit for bit."""
    ids = stored.encode(DEFAULT_PROMPT)
    seen = trace(stored, ids)
    inputs, outputs, added = [], [], []
    model = stored.model
    def block(module, i, o):  # a hook returning nothing: the output stays as it is
        inputs.append(i[0].clone())
        outputs.append(o[0, -1].clone())

    hooks = [b.register_forward_hook(block) for b in model.blocks]
    hooks += [b.attn.register_forward_hook(lambda m, i, o: added.append(("attention", float(o[0, -1].norm()))))
              for b in model.blocks]
    hooks += [b.ffn.register_forward_hook(lambda m, i, o: added.append(("ffn", float(o[0, -1].norm()))))
              for b in model.blocks]
    try:
        with torch.inference_mode():
            plain = model(torch.tensor([ids]), last_only=True)[0][0, 0].float()
    finally:
        for h in hooks:
            h.remove()
    assert all(torch.equal(a, b) for a, b in zip(seen.inputs, inputs, strict=True))
    assert all(torch.equal(a, b) for a, b in zip(seen.outputs, outputs, strict=True))
    assert seen.attention_added == [v for k, v in added if k == "attention"]
    assert seen.ffn_added == [v for k, v in added if k == "ffn"]
    assert torch.equal(seen.logits, plain)
    assert trace(stored, ids) is seen  # remembered


def test_the_widgets_read_the_same_pass(stored):
    """block steps, the logit lens, the sampling view and attention all agree with the watched pass."""
    ids = stored.encode(DEFAULT_PROMPT)
    seen = trace(stored, ids)
    with compute.model_lock(stored):
        steps = compute.block_steps(stored, DEFAULT_PROMPT)["blocks"]
        view = lens.logit_lens(stored, DEFAULT_PROMPT)
        real = compute.sampling_view(stored, DEFAULT_PROMPT, 1.0, 0, 1.0, 0.0)["real"]
    assert [s["stream_out"] for s in steps] == [float(o.norm()) for o in seen.outputs]
    assert view["last_row_is_the_models"] and view["model"]["top"][0]["id"] == int(seen.logits.argmax())
    assert real[0]["id"] == int(seen.logits.argmax()) and real[0]["logit"] == float(seen.logits.max())


def test_a_long_prompts_passes_are_not_all_kept(stored, monkeypatch):
    """The remembered passes stay under their byte budget (each holds every block's input stream); the newest is
    kept whatever its size."""
    from forwardpass.explorer import trace as traces
    first = trace(stored, stored.encode("one two three"))
    monkeypatch.setattr(traces, "KEPT_BYTES", traces._bytes(first) + 1)
    trace(stored, stored.encode("four five six seven"))
    kept = traces._TRACES[id(stored)]
    assert len(kept) == 1 and tuple(stored.encode("four five six seven")) in kept


def test_the_opening_answers_wait_for_the_machines_rates(stored, monkeypatch):
    """The explorer times nothing while it measures this machine's bandwidth and matrix rate."""
    from forwardpass.explorer import app as explorer_app
    from forwardpass.explorer import machine_rates
    order, measured = [], threading.Event()

    def measure(*_):
        measured.wait(10)
        order.append(("measured", threading.current_thread().name))
        return {}
    monkeypatch.setattr(machine_rates, "measure", measure)
    monkeypatch.setattr(explorer_app, "opening", lambda: [("/api/lookup", Prompt(prompt="one two"))])
    lookup = compute.lookup
    monkeypatch.setattr(compute, "lookup", lambda fp, prompt: order.append(("asked", threading.current_thread().name))
                        or lookup(fp, prompt))
    app = build_explorer(stored, prepare=True)
    app.state.prepared.join(0.3)
    assert order == []  # still waiting for the rates
    measured.set()
    app.state.prepared.join(30)
    assert [what for what, thread in order if thread == "explorer-prepare"] == ["measured", "asked"]


def test_explore_stopped_while_it_prepares_exits_cleanly():
    """Ctrl-C while the opening answers are still being prepared: the server stops the preparing (and the rates'
    measuring) before it exits, status 0. A thread left inside PyTorch at exit aborted the process (C++'s
    "terminate called without an active exception", status 134)."""
    import signal
    import subprocess
    import sys
    import time

    import httpx
    from server_helpers import free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "forwardpass", "explore", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        proc.send_signal(signal.SIGINT)  # at once: the opening answers take seconds more
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 0 and "terminate called" not in err, err[-500:]
