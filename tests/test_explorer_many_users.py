"""W-many-users (§06): many requests through a real Engine over a small paged pool. Its timeline is the engine's own
bookkeeping, and its totals are what the engine's Prometheus metrics (the text /metrics serves) say for the same run:
prompt and generated tokens, preemptions, the time-to-first-token histogram, the pool's blocks in use."""

from __future__ import annotations

import threading

import pytest
from fastapi.testclient import TestClient

from forwardpass.engine.metrics import LATENCY_BUCKETS
from forwardpass.explorer import many_users
from forwardpass.explorer.app import build_explorer
from forwardpass.explorer.many_users import Settings, run

SMALL = {"requests": 5, "system_tokens": 32, "own_tokens": 8, "new_tokens": 6, "pool_blocks": 24}


@pytest.fixture(scope="module")
def shared(stored):
    return run(stored, Settings(**SMALL))


def owners_of(step) -> list[list[int]]:
    return [[] if o == -1 else o if isinstance(o, list) else [o] for o in step["owners"]]


def test_its_totals_are_the_engines_metrics(shared):
    d, s = shared, SMALL
    assert d["agrees"] and d["counted"] == d["metrics"]  # every total, exactly: the requests' own against /metrics
    m = d["metrics"]
    assert m["prompt_tokens"] == s["requests"] * (s["system_tokens"] + s["own_tokens"])
    assert m["generation_tokens"] == s["requests"] * s["new_tokens"] == d["steps"][-1]["generated"]
    assert m["ttft_count"] == s["requests"] and m["preemptions"] == 0
    ttfts = [r["ttft_s"] for r in d["requests"]]  # the histogram's buckets hold exactly the requests' own times
    assert m["ttft_buckets"] == [sum(t <= b for t in ttfts) for b in LATENCY_BUCKETS]
    assert m["blocks_used"] == 0 == d["steps"][-1]["used"]  # every request done: every block back in the pool


def test_every_step_is_the_pools_own_state(shared):
    for step in shared["steps"]:
        holders = owners_of(step)
        used = sum(1 for h in holders if h)
        assert used == step["used"] == step["metrics_blocks_used"]  # the gauge the engine set after that step
        assert used + step["free"] == shared["pool_blocks"]
        assert step["shared"] == sum(len(h) > 1 for h in holders)
        assert set(step["cached_free"]) <= {b for b, h in enumerate(holders) if not h}
        for i, r in enumerate(step["requests"]):  # a request's blocks are the ones the grid gives it
            assert r["blocks"] == sum(i in h for h in holders)
            assert r["shared"] == sum(i in h and len(h) > 1 for h in holders)
        assert step["running"] == sum(r["state"] == "running" for r in step["requests"])
    assert [st["generated"] for st in shared["steps"]] == sorted(st["generated"] for st in shared["steps"])


def test_a_shared_system_prompt_shares_its_full_blocks(shared, stored):
    full = SMALL["system_tokens"] // many_users.BLOCK_SIZE
    assert shared["peak_shared"] == full  # the system prompt's full blocks, held by several requests at once
    busiest = max(shared["steps"], key=lambda st: st["shared"])
    shared_blocks = [h for h in owners_of(busiest) if len(h) > 1]
    assert len(shared_blocks) == full and all(len(h) >= 2 for h in shared_blocks)
    # every request after the first found them in the prefix cache, and the engine counted those hits
    found = full * many_users.BLOCK_SIZE
    assert [r["cached_tokens"] for r in shared["requests"]] == [0] + [found] * (SMALL["requests"] - 1)
    assert shared["prefix_cache"]["hits"] == sum(r["cached_tokens"] for r in shared["requests"])
    alone = run(stored, Settings(**(SMALL | {"shared": False})))  # each its own system prompt: nothing to share
    assert alone["peak_shared"] == 0 and alone["prefix_cache"]["hits"] == 0 and alone["agrees"]
    assert alone["peak_used"] > shared["peak_used"]


def test_a_small_pool_preempts_and_every_request_still_finishes(stored):
    tight = SMALL | {"requests": 5, "pool_blocks": 7, "new_tokens": 12}
    d = run(stored, Settings(**tight))
    assert d["counted"]["preemptions"] > 0 and d["agrees"]  # counted from the requests, and the engine's counter
    assert any(r["state"] == "preempted" for st in d["steps"] for r in st["requests"])
    assert max(st["used"] for st in d["steps"]) == tight["pool_blocks"]  # preempted only when the pool was full
    assert [r["generated"] for r in d["requests"]] == [tight["new_tokens"]] * tight["requests"]


def test_the_prefix_caches_count_tells_first_lookups_from_resumed_ones(stored):
    """A preempted request looks its tokens up again when it resumes: the engine's hits count those too, the page's
    "handed out" counts each request's first lookup alone, and names the others apart."""
    d = run(stored, Settings(pool_blocks=10))  # the page's "a pool too small"
    c = d["prefix_cache"]
    assert d["counted"]["preemptions"] > 0
    assert c["first_hits"] == sum(r["cached_tokens"] for r in d["requests"])
    assert c["resumed_hits"] == c["hits"] - c["first_hits"] > 0


def test_together_requests_find_no_prefix_yet(stored):
    """Requests prefilled in the same step cannot share a prefix: its blocks are registered once they are computed."""
    d = run(stored, Settings(**(SMALL | {"requests": 3, "arrival": "together"})))
    assert d["prefix_cache"]["hits"] == 0 and d["peak_shared"] == 0 and d["agrees"]


def test_bad_settings_are_refused_in_the_pages_words(stored):
    client = TestClient(build_explorer(stored))
    r = client.post("/api/many-users", json={"requests": 0})
    assert r.status_code == 400 and r.json()["code"] == "range" and r.json()["params"]["what"] == "requests"
    r = client.post("/api/many-users", json={"pool_blocks": 4, "system_tokens": 64, "own_tokens": 48, "new_tokens": 24})
    assert r.status_code == 400 and r.json()["code"] == "pool_fit" and r.json()["params"]["blocks"] == 4


def test_one_run_at_a_time_per_explorer(stored, monkeypatch):
    """A second run waits for the one in progress, then runs; refused (clearly) only when the wait runs out."""
    started, release = threading.Event(), threading.Event()
    order: list[str] = []

    def slow(fp, settings):
        order.append("start")
        started.set()
        release.wait(10)
        order.append("end")
        return {"ok": True}

    monkeypatch.setattr(many_users, "run", slow)
    client = TestClient(build_explorer(stored))
    first: list = []
    second: list = []
    worker = threading.Thread(target=lambda: first.append(client.post("/api/many-users?fresh=1", json={})))
    waiting = threading.Thread(target=lambda: second.append(client.post("/api/many-users?fresh=1", json={})))
    worker.start()
    try:
        assert started.wait(10)
        monkeypatch.setattr(many_users, "WAIT_S", 0.2)
        refused = client.post("/api/many-users?fresh=1", json={})  # the first still runs: past the wait, refused
        assert refused.status_code == 400 and refused.json()["code"] == "busy"
        monkeypatch.setattr(many_users, "WAIT_S", 10.0)
        waiting.start()
        waiting.join(0.3)
        assert waiting.is_alive() and order == ["start"]  # it waits its turn
    finally:
        release.set()
        worker.join(10)
        if waiting.is_alive():
            waiting.join(10)
    assert first[0].status_code == 200 and first[0].json() == {"ok": True}
    assert second[0].status_code == 200 and order == ["start", "end", "start", "end"]  # one after the other
