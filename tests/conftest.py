"""Shared fixtures: the real default model and transformers' reference, each loaded once per session; one explorer
on it per session, its pages in Chromium once per module."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest
import torch
from test_explorer_fixtures import PAGES, explorer, page_set

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
torch.manual_seed(0)

# the longest files, longest first (each worker takes a whole file at a time): started before the short ones, so that
# the two workers finish together rather than one waiting on the other's last long file
FIRST = ("test_scale.py", "test_explorer_sampling.py", "test_explorer_language.py", "test_constraint_limits.py",
         "test_explorer.py", "test_explorer_cost.py", "test_explorer_states.py", "test_explorer_cache.py",
         "test_explorer_block.py", "test_explorer_loop.py", "test_batch.py", "test_explorer_i18n.py",
         "test_server_faults.py", "test_explorer_answers.py", "test_explorer_pipeline.py", "test_speculation.py",
         "test_gemma.py", "test_kv_q8.py", "test_server.py", "test_smollm.py", "test_explorer_mechanism.py")


# the native tests again under every other kernel build this CPU runs (the suite itself uses the best one), on their
# synthetic models: a test on a real model's weights (REAL_MODEL) runs under the best build only, where its engine-level
# proof is the same and the kernels' own paths are the synthetic tests'; `make test` asks for them
# (FORWARDPASS_OTHER_BUILDS=1)
REAL_MODEL = {"smollm", "hf_smollm", "stored"}  # the fixtures that load a real model's weights
NATIVE_TESTS = ("tests/test_kernels.py", "tests/test_native_step.py", "tests/test_kv_q8.py",
                "tests/test_activations_q8.py")
RERUNS: list[tuple[str, int, str]] = []  # (build, exit status, pytest's output)
WARMING: list[threading.Thread] = []


def pytest_sessionstart(session) -> None:
    """In the process that runs the workers: the kernel build they use compiled while they start; then, where `make
    test` asks, the native tests under the other kernel builds, one build after another in a child pytest at the
    lowest priority (a child takes its thread's), so that they use what the suite leaves idle rather than time of
    their own after it; their results are reported at the end."""
    if hasattr(session.config, "workerinput") or not session.config.getoption("numprocesses", None):
        return

    def run_others() -> None:
        from forwardpass import kernels
        from forwardpass.errors import ForwardpassError
        try:
            builds = kernels.choice()
        except ForwardpassError:  # a FORWARDPASS_KERNELS this CPU cannot run: the tests that use kernels say so
            return
        if builds:  # the build the workers use, compiled while they start (they wait for its file)
            kernels.load(builds[0])
        if not os.environ.get("FORWARDPASS_OTHER_BUILDS"):
            return
        for build in builds[1:]:  # the others at the suite's priority too: some tests compare builds, and waited for a
            kernels.load(build)   # compile at the lowest one (a minute or more on a fresh clone)
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        for build in builds[1:]:
            env = {**os.environ, "FORWARDPASS_KERNELS": build, "FORWARDPASS_OTHER_BUILDS": ""}
            r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *NATIVE_TESTS,
                                "-m", "not real_model"], env=env, capture_output=True, text=True,
                               cwd=session.config.rootpath)
            RERUNS.append((build, r.returncode, r.stdout + r.stderr))

    WARMING.append(threading.Thread(target=run_others, name="other-builds", daemon=True))
    WARMING[0].start()


def pytest_sessionfinish(session) -> None:
    """The other builds' runs waited for; any that failed fails the session."""
    for thread in WARMING:
        thread.join()
    if any(code != 0 for _, code, _ in RERUNS):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter) -> None:
    for build, code, out in RERUNS:
        lines = out.strip().splitlines() or ["no output"]
        terminalreporter.write_line(f"native tests, {build} kernels: {lines[-1].strip('= ')}")
        if code != 0:
            terminalreporter.write_line("\n".join(lines[-60:]))


def pytest_collection_modifyitems(items: list) -> None:
    for item in items:
        if REAL_MODEL & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.real_model)
    order = {name: i for i, name in enumerate(FIRST)}
    items.sort(key=lambda item: order.get(item.path.name, len(FIRST)))  # stable: the rest keep their order


@pytest.fixture(scope="session", autouse=True)
def compiles_at_the_tests_priority():
    """A grammar's compile threads lower their priority so that a server's decoding goes first; here the other
    worker's tests are not this process's decoding, and would starve them (a test waiting on a compile then takes ten
    times as long): in this process they keep the tests' priority."""
    from forwardpass.structured import compile_threads
    lowered, compile_threads._yield_the_core = compile_threads._yield_the_core, lambda: None
    yield
    compile_threads._yield_the_core = lowered


@pytest.fixture(scope="session")
def smollm():
    """forwardpass on the embedded SmolLM2-135M-Instruct GGUF, in float32 (the reference mode)."""
    import forwardpass
    return forwardpass.load(storage="fp32")


@pytest.fixture(scope="session")
def stored():
    """The default model as every command loads it by default: the file's own quantized blocks, on the native kernels
    (the explorer's tests run on it, the page a reader opens)."""
    import forwardpass
    return forwardpass.load()


@pytest.fixture(scope="session")
def hf_smollm():
    """(tokenizer, model) from transformers loading the same GGUF: the independent reference."""
    import forwardpass
    transformers = pytest.importorskip("transformers")
    path = forwardpass.default_model_path()
    kwargs = {"gguf_file": path.name}
    tok = transformers.AutoTokenizer.from_pretrained(path.parent, **kwargs)
    model = transformers.AutoModelForCausalLM.from_pretrained(path.parent, dtype=torch.float32, **kwargs)
    return tok, model.eval()


# ---- the explorer's pages (tests/test_explorer_fixtures.py) -------------------------------------------------------
@pytest.fixture(scope="session")
def explorer_url(stored):
    """One explorer on SmolLM2 (and "smollm-again", a second id for the same model to switch to) for every module:
    its opening answers are computed once, as a reader's second page finds them. A module that needs an explorer of
    its own state starts one."""
    with explorer(stored, {"smollm-again": lambda: stored}) as url:
        yield url


@pytest.fixture(scope="module")
def pages(explorer_url):
    """pages(width=1280, lang="en"): a ready page of the shared explorer in one Chromium, for the whole module"""
    with page_set(explorer_url) as at:
        yield at


@pytest.fixture(params=PAGES, ids=lambda p: f"{p[0]}px-{p[1]}")
def any_page(request, pages):
    """the page at 1280 px in English and at 390 px in Chinese: each width and each language once"""
    return pages(*request.param)
