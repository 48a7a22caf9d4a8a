"""Structured output never stalls the server and never answers a 500: a constraint compiles off the event loop,
once per request, and every limit of the grammar library, met while compiling, probing or generating, is a 400
`invalid_constraint` naming the field that carried it."""

from __future__ import annotations

import concurrent.futures
import gc
import json
import subprocess
import sys
import threading
import time

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from server_helpers import free_port, running_server

from forwardpass.engine import EngineConfig
from forwardpass.errors import ConstraintError
from forwardpass.structured import constraints
from forwardpass.structured.constraints import Constraint, Grammars


@pytest.fixture(scope="module")
def server(stored):
    # a compile limit well past the slowest refusal here (a regex of a million repeats takes seconds to refuse), so
    # the library's own message is what a busy machine sees too; the limit itself is tested on servers of its own
    with running_server(stored, EngineConfig(kv_cache_bytes=64 * 2**20), constraint_timeout=60.0) as s:
        yield s


def optional_integers(n: int) -> dict:
    return {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(n)}}


def schema_format(schema: dict) -> dict:
    return {"response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}}}


class Health:
    """Polls /health from a thread while a block runs; `slowest` is the longest answer."""

    def __init__(self, url: str):
        self.url, self.times, self._stop = url, [], threading.Event()

    def __enter__(self) -> Health:
        def poll():
            while not self._stop.is_set():
                start = time.perf_counter()
                assert httpx.get(self.url + "/health", timeout=30).status_code == 200
                self.times.append(time.perf_counter() - start)
                self._stop.wait(0.05)
        self._thread = threading.Thread(target=poll, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=60)

    @property
    def slowest(self) -> float:
        return max(self.times)


def refused(r: httpx.Response, field: str) -> str:
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["code"] == "invalid_constraint" and error["param"] == field, error
    assert "<state>" not in error["message"] and "<grammar>" not in error["message"], error  # no internal state
    return error["message"]


@pytest.mark.parametrize("extra,field,message", [
    (schema_format(optional_integers(2000)), "response_format", "max is 2000"),
    (schema_format({"$ref": "#"}), "response_format", "allows no text"),
    (schema_format({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}),
     "response_format", "allows no text"),
    ({"structured_outputs": {"regex": "(x{1000}){1000}"}}, "structured_outputs", "too many expressions"),
    ({"structured_outputs": {"grammar": "start: " + " | ".join(f'"a{i}"' for i in range(5000))}},
     "structured_outputs", "max is 2000"),
])
def test_each_limit_of_the_constraint_library_is_a_400_naming_the_field(server, extra, field, message):
    url, engine = server
    r = httpx.post(url + "/v1/completions", json={"prompt": "Answer:", "max_tokens": 8} | extra, timeout=60)
    assert message in refused(r, field)
    assert engine.healthy


def test_a_choice_among_thousands_of_strings_is_served(server):
    """A choice list is one regular expression, not a grammar rule of one alternative per string (a rule past 2,000
    alternatives is past the library's limit)."""
    url, _ = server
    choices = [f"option {i}" for i in range(5000)]
    r = httpx.post(url + "/v1/completions", json={"prompt": "Pick one:", "max_tokens": 8, "temperature": 0,
                                                  "structured_outputs": {"choice": choices}}, timeout=60)
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["text"] in choices
    odd = ["a.b", "(x)", "1+1", "tab\there", "naïve", "[*]"]  # regular-expression characters are literal
    r = httpx.post(url + "/v1/completions", json={"prompt": "Pick one:", "max_tokens": 8, "n": 4, "seed": 1,
                                                  "structured_outputs": {"choice": odd}}, timeout=60)
    assert all(c["text"] in odd for c in r.json()["choices"]), r.text


def test_a_constraint_compiles_once_per_request_for_every_prompt_and_choice(server, monkeypatch):
    url, engine = server
    built = []
    init = constraints.Grammar.__init__
    monkeypatch.setattr(constraints.Grammar, "__init__", lambda self, *a: (built.append(a[0]), init(self, *a))[1])
    enum = {"enum": [f"value {i}" for i in range(10000)]}
    body = {"prompt": ["a", "b", "c", "d", "e", "f", "g", "h"], "n": 4, "max_tokens": 8, "seed": 3,
            "structured_outputs": {"json": enum}}
    r = httpx.post(url + "/v1/completions", json=body, timeout=120)
    assert r.status_code == 200, r.text
    assert len(r.json()["choices"]) == 32 and all(json.loads(c["text"]) in enum["enum"] for c in r.json()["choices"])
    assert len(built) == 1
    again = httpx.post(url + "/v1/completions", json=body | {"prompt": "i", "n": 2}, timeout=120)
    assert again.status_code == 200 and len(built) == 1  # the same schema, from the cache


def test_health_and_other_requests_go_on_while_a_large_schema_compiles(server):
    """A schema of 5,000 optional properties takes seconds to compile (then fails the library's row limit): /health
    answers and a plain request runs to its end meanwhile."""
    url, _ = server
    with Health(url) as health, concurrent.futures.ThreadPoolExecutor(2) as pool:
        start = time.perf_counter()
        big = pool.submit(httpx.post, url + "/v1/completions", timeout=120,
                          json={"prompt": "Answer:", "max_tokens": 8} | schema_format(optional_integers(5000)))
        time.sleep(0.3)
        plain = httpx.post(url + "/v1/completions", json={"prompt": "The sky is", "max_tokens": 8}, timeout=60)
        plain_done = time.perf_counter() - start
        r = big.result()
        big_done = time.perf_counter() - start
    assert plain.status_code == 200 and plain.json()["usage"]["completion_tokens"] == 8
    why = refused(r, "response_format")  # the row limit, or the time limit on a machine busy with other work
    assert "max is 2000" in why or "did not compile within" in why, why
    assert plain_done < big_done  # the plain request did not wait for the compile
    assert health.slowest < 1.0, health.times


def test_a_compile_past_the_servers_limit_is_a_400(stored):
    with running_server(stored, EngineConfig(kv_cache_bytes=16 * 2**20), constraint_timeout=0.2) as (url, _):
        r = httpx.post(url + "/v1/completions", timeout=60,
                       json={"prompt": "Answer:", "max_tokens": 8} | schema_format(optional_integers(3000)))
        assert "did not compile within 0.2 s" in refused(r, "response_format")


def test_a_limit_met_while_generating_is_a_400_or_an_error_event(server, monkeypatch):
    """With no probe, the row limit trips on the engine's thread at the second token: the request ends as the
    constraint's fault, never a 500."""
    url, engine = server
    monkeypatch.setattr(constraints, "PROBE_STEPS", 0)
    engine.grammars = Grammars(engine.loaded.tokenizer, engine.loaded.config.vocab_size)  # nothing cached
    body = {"messages": [{"role": "user", "content": "Some JSON please."}], "max_tokens": 8, "temperature": 0}
    body |= schema_format(optional_integers(1000))
    r = httpx.post(url + "/v1/chat/completions", json=body, timeout=60)
    assert "max is 2000" in refused(r, "response_format")
    with httpx.stream("POST", url + "/v1/chat/completions", json=body | {"stream": True}, timeout=60) as s:
        events = [json.loads(line[6:]) for line in s.iter_lines() if line.startswith("data: {")]
    assert events[-1]["error"]["code"] == "invalid_constraint" and "max is 2000" in events[-1]["error"]["message"]
    assert engine.healthy


def test_failed_compiles_keep_no_memory_and_the_cache_has_a_bound(stored, monkeypatch):
    """Each compile's memory is measured, and the kept ones stay within MAX_CACHED_BYTES: compiled one after another,
    large regular expressions (about 40 MB of lexer each) leave the heap no larger than the bound."""
    monkeypatch.setattr(constraints, "MAX_CACHED_BYTES", 16 << 20)
    grammars = Grammars(stored.tokenizer, stored.config.vocab_size)
    grammars.compile(Constraint("json_object"))
    base = constraints._heap_bytes()
    for i in range(3):  # each regular expression's lexer alone is past the bound
        with pytest.raises(ConstraintError):
            grammars.compile(Constraint("json_schema", optional_integers(1500 + i)))
        try:
            grammars.compile(Constraint("regex", f"(x{{1000}}){{{100 + i}}}"))
        except ConstraintError:
            pass
    kept = sum(g.size for g in grammars._done.values() if isinstance(g, constraints.Grammar))
    assert kept <= 16 << 20
    gc.collect()  # what only the cycle collector frees is not held
    assert constraints._heap_bytes() - base < (16 << 20) + (16 << 20)  # the bound, and what the workers may hold


# generated constraints of every size: each is served or refused with a 400, never a 500, /health always answering
PIECES = st.sampled_from(["a", "[0-9]", "x{%d}", "(ab|cd)", "[a-z]{1,%d}", "(x{%d}){%d}"])
regexes = st.lists(st.tuples(PIECES, st.integers(1, 300), st.integers(1, 300)), min_size=1, max_size=6).map(
    lambda parts: "".join(p % (a, b)[: p.count("%d")] for p, a, b in parts))
types = st.sampled_from([{"type": "integer"}, {"type": "string"}, {"type": "boolean"}, {"type": "number"},
                         {"type": "array", "items": {"type": "integer"}}])
schemas = st.one_of(
    st.builds(lambda n, t, required: {"type": "object", "properties": {f"k{i}": t for i in range(n)},
                                      "required": [f"k{i}" for i in range(n)][:required]},
              st.integers(0, 3000), types, st.integers(0, 50)),
    st.builds(lambda n: {"enum": [f"v{i}" for i in range(n)]}, st.integers(1, 20000)),
    st.recursive(types, lambda inner: st.builds(lambda t: {"type": "object", "properties": {"x": t},
                                                             "required": ["x"]}, inner), max_leaves=40),
    st.just({"$ref": "#"}))
bodies = st.one_of(
    schemas.map(schema_format),
    regexes.map(lambda r: {"structured_outputs": {"regex": r}}),
    st.integers(1, 6000).map(lambda n: {"structured_outputs": {"choice": [f"c{i}" for i in range(n)]}}),
    st.integers(1, 6000).map(lambda n: {"structured_outputs": {
        "grammar": "start: " + " | ".join(f'"g{i}"' for i in range(n))}}))


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(extra=bodies)
def test_generated_constraints_are_served_or_refused_never_a_500(server, extra):
    url, engine = server
    with Health(url) as health:
        r = httpx.post(url + "/v1/completions", json={"prompt": "Answer:", "max_tokens": 4} | extra, timeout=120)
    assert r.status_code in (200, 400), r.text
    if r.status_code == 400:
        assert r.json()["error"]["code"] == "invalid_constraint", r.text
    assert health.slowest < 1.0, health.times
    assert engine.healthy


# ---- what the grammar library cannot take safely -----------------------------------------------------------------
def gbnf_chain(n: int) -> str:
    """llama.cpp's grammar of n rules, each referring to the next: `a` n times."""
    return "root ::= r0\n" + "".join(f'r{i} ::= "a" r{i + 1}\n' for i in range(n - 1)) + f'r{n - 1} ::= "a"\n'


def lark_chain(n: int) -> str:
    return "start: r0\n" + "".join(f'r{i}: "a" r{i + 1}\n' for i in range(n - 1)) + f'r{n - 1}: "a"\n'


def ref_chain(n: int) -> dict:
    """A schema of n definitions, each an array of one or more of the next."""
    defs = {f"d{i}": {"type": "array", "items": {"$ref": f"#/$defs/d{i + 1}"}, "minItems": 1} for i in range(n)}
    return {"$defs": defs | {f"d{n}": {"type": "integer"}}, "$ref": "#/$defs/d0"}


@pytest.fixture(scope="module")
def serve_process():
    """`forwardpass serve` in its own process: a grammar that crashed the library would end it, not the tests."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "forwardpass", "serve", "--port", str(port), "--kv-cache-gib",
                             "0.25", "--threads", "1", "--constraint-timeout", "120"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url, deadline = f"http://127.0.0.1:{port}", time.time() + 120
    while True:
        try:
            if httpx.get(url + "/health", timeout=5).status_code == 200:
                break
        except httpx.TransportError:
            pass
        assert proc.poll() is None and time.time() < deadline, proc.stderr.read() if proc.poll() is not None else ""
        time.sleep(0.3)
    yield url, proc
    proc.terminate()
    proc.wait(timeout=30)


@pytest.mark.parametrize("path,extra", [
    ("/v1/chat/completions", {"grammar": gbnf_chain(6000)}),
    ("/v1/completions", {"structured_outputs": {"grammar": lark_chain(6000)}}),
    ("/v1/completions", schema_format(ref_chain(2500))),
], ids=["gbnf", "lark", "json_schema"])
def test_a_deep_chain_of_rules_is_served_and_the_server_lives(serve_process, path, extra):
    """Thousands of rules each referring to the next: the library builds them recursively, which on a thread's usual
    stack ends the process; compiled on a stack sized for what the limits admit, they are served."""
    url, proc = serve_process
    body = ({"messages": [{"role": "user", "content": "Go."}]} if "chat" in path else {"prompt": "Go:"})
    r = httpx.post(url + path, json=body | {"max_tokens": 6, "temperature": 0} | extra, timeout=120)
    assert r.status_code == 200, r.text
    choice = r.json()["choices"][0]
    text = choice["message"]["content"] if "chat" in path else choice["text"]
    assert text in ("a" * len(text), "[" * len(text)) and choice["finish_reason"] == "length", choice
    assert proc.poll() is None and httpx.get(url + "/health", timeout=10).status_code == 200


@pytest.mark.parametrize("extra,field,message", [
    ({"grammar": gbnf_chain(30000)}, "grammar", "past the limit of 20,000 symbols"),
    ({"structured_outputs": {"grammar": lark_chain(30000)}}, "structured_outputs", "past the limit of 20,000 symbols"),
    (schema_format(ref_chain(12000)), "response_format", "past the limit of 10,000 objects and arrays"),
], ids=["gbnf", "lark", "json_schema"])
def test_a_chain_past_the_limits_is_a_fast_400_and_the_server_lives(serve_process, extra, field, message):
    url, proc = serve_process
    start = time.perf_counter()
    r = httpx.post(url + "/v1/completions", json={"prompt": "Go:", "max_tokens": 4} | extra, timeout=120)
    assert message in refused(r, field) and time.perf_counter() - start < 5
    assert proc.poll() is None and httpx.get(url + "/health", timeout=10).status_code == 200


def test_a_small_constraint_does_not_wait_for_large_ones_nor_abandoned_compiles_run(stored, monkeypatch):
    """Four large schemas at once take the large constraints' workers past the time limit; a yes-or-no grammar sent
    meanwhile compiles beside them. The two that waited for a worker never start once their requests are refused."""
    built = []
    init = constraints.Grammar.__init__
    monkeypatch.setattr(constraints.Grammar, "__init__", lambda self, *a: (built.append(a[0]), init(self, *a))[1])
    with running_server(stored, EngineConfig(kv_cache_bytes=16 * 2**20), constraint_timeout=2.0) as (url, engine), \
            concurrent.futures.ThreadPoolExecutor(4) as pool:
        engine.grammars.compile(Constraint("regex", "a"))  # the vocabulary's view, built once, before the clock runs
        large = [pool.submit(httpx.post, url + "/v1/completions", timeout=60,
                             json={"prompt": "Answer:", "max_tokens": 4} | schema_format(optional_integers(5000 + i)))
                 for i in range(4)]
        time.sleep(0.5)
        small = httpx.post(url + "/v1/completions", timeout=60, json={"prompt": "Yes or no?", "max_tokens": 4,
                                                                       "grammar": 'root ::= "yes" | "no"'})
        assert small.status_code == 200 and small.json()["choices"][0]["text"] in ("yes", "no"), small.text
        for f in large:
            assert "did not compile within 2 s" in refused(f.result(), "response_format")
        deadline = time.time() + 60
        while engine.grammars._running and time.time() < deadline:  # the two begun run to their end
            time.sleep(0.2)
    assert len([c for c in built if c.kind == "json_schema"]) == 2
    assert len(built) == 4  # and the two small ones
