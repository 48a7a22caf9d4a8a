"""`forwardpass generate` and `forwardpass chat` as a user runs them: the entry point in a process of its own, and
the option variations through the same `main` in this process (tests/cli_helpers.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from cli_helpers import in_process


def entry(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    """The installed entry point, in a process of its own."""
    return subprocess.run([sys.executable, "-m", "forwardpass", *args], capture_output=True, text=True,
                          input=stdin, timeout=300)


@pytest.fixture(scope="module")
def cli():
    with in_process() as run:
        yield run


def test_generate_json_matches_the_library(smollm, cli):
    from forwardpass.loop import generate
    from forwardpass.sampling import SamplingParams

    r = cli("generate", "The three primary colors are", "--max-tokens", "12", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    want = generate(smollm, "The three primary colors are", SamplingParams(temperature=0, max_tokens=12))
    assert out["token_ids"] == want.token_ids and out["text"] == want.text and out["stop_reason"] == "length"
    assert out["prefill_tokens_per_s"] > 0 and out["decode_tokens_per_s"] > 0


def test_generate_with_and_without_drafting_agrees(cli):
    """A prompt that asks to repeat itself: drafts are made and kept, and the tokens are those without them."""
    prompt = "Repeat after me: the quick brown fox jumps over the lazy dog, the quick brown fox jumps over the lazy dog"
    runs = [cli("generate", prompt, "--chat", "--max-tokens", "40", "--speculative", mode, "--json")
            for mode in ("off", "ngram")]
    assert all(r.returncode == 0 for r in runs), runs[0].stderr + runs[1].stderr
    off, ngram = (json.loads(r.stdout) for r in runs)
    assert off["token_ids"] == ngram["token_ids"] and len(off["token_ids"]) > 10


def test_generate_streams_text_and_naive_agrees(cli):
    cached = entry("generate", "The three primary colors are", "--max-tokens", "8")
    naive = cli("generate", "The three primary colors are", "--max-tokens", "8", "--naive")
    assert cached.returncode == naive.returncode == 0
    assert cached.stdout == naive.stdout and cached.stdout.startswith(" the primary colors")
    assert "stop: length" in cached.stderr and "naive" in naive.stderr


def test_generate_options_reach_the_sampler(cli):
    args = ["generate", "Tell me a story", "--max-tokens", "10", "--temperature", "0.9", "--top-k", "40",
            "--top-p", "0.9", "--min-p", "0.01", "--seed", "5", "--repetition-penalty", "1.1",
            "--presence-penalty", "0.2", "--frequency-penalty", "0.2", "--logprobs", "1", "--json"]
    a, b = cli(*args), cli(*args)
    assert a.returncode == 0, a.stderr
    assert json.loads(a.stdout)["token_ids"] == json.loads(b.stdout)["token_ids"]
    out = json.loads(a.stdout)
    assert len(out["logprobs"]) == len(out["token_ids"]) + (out["stop_reason"] == "eos")  # EOS's own logprob too


def test_generate_stop_and_chat_template(cli):
    r = cli("generate", "Name a fruit.", "--chat", "--max-tokens", "40", "--json")
    out = json.loads(r.stdout)
    assert out["stop_reason"] == "eos" and out["text"]
    r = cli("generate", "The three primary colors are", "--stop", "RGB", "--json")
    out = json.loads(r.stdout)
    assert out["stop_reason"] == "stop" and "RGB" not in out["text"]


@pytest.mark.parametrize("args,message", [
    (["generate", "hi", "--temperature", "-1"], "temperature must be ≥ 0.0"),
    (["generate", "hi", "--top-p", "0"], "top_p must be > 0.0"),
    (["generate", "hi", "--top-k", "-3"], "top_k must be ≥ 0"),
    (["generate", "hi", "--temperature", "nan"], "temperature must be a finite number"),
    (["generate", "hi", "--max-tokens", "0"], "max_tokens must be ≥ 1"),
    (["generate", ""], "the prompt is empty"),
    (["generate", "hi", "--speculative", "eagle"], "invalid choice: 'eagle'"),
])
def test_generate_errors(args, message, cli):
    r = cli(*args)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr


def test_generate_with_values_float32_cannot_hold(cli):
    """Valid settings that round to 0 in float32 sample (the T → 0 limit); they once ended in a traceback."""
    r = cli("generate", "The three primary colors are", "--max-tokens", "3", "--temperature", "1e-50", "--top-p",
            "1e-300", "--repetition-penalty", "1e-300", "--seed", "1", "--json")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert len(json.loads(r.stdout)["token_ids"]) == 3


def test_chat_is_multi_turn(smollm):
    from forwardpass.loop import generate
    from forwardpass.sampling import SamplingParams

    r = entry("chat", "--max-tokens", "24", "--json", stdin="Remember the number 7.\n/reset\nHi\nWhich number?\n")
    assert r.returncode == 0, r.stderr
    turns = [json.loads(line) for line in r.stdout.splitlines()]
    assert [t["turn"] for t in turns] == [1, 1, 2]  # /reset started a new conversation
    # the second turn was generated from the whole conversation so far, through the chat template
    history = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": turns[1]["assistant"]},
               {"role": "user", "content": "Which number?"}]
    want = generate(smollm, smollm.tokenizer.apply_chat_template(history), SamplingParams(temperature=0, max_tokens=24))
    assert turns[2]["assistant"] == want.text


def test_chat_goes_on_after_a_line_too_long_for_the_context(smollm, cli):
    """A line whose prompt exceeds the context is one error line, left out of the conversation; the next line is
    answered as the conversation's first turn."""
    from forwardpass.loop import generate
    from forwardpass.sampling import SamplingParams

    long = "word " * 9000
    r = cli("chat", "--max-tokens", "4", "--json", stdin=f"{long}\nHi\n")
    assert r.returncode == 0, r.stderr
    said = re.fullmatch(r"forwardpass: error: (the prompt is (\d+) tokens\S* [^\n]*context length is 8192); "
                        r"the line is left out of the conversation \(/reset starts a new one\)\n", r.stderr)
    assert said and int(said[2]) > 9000, r.stderr  # one line, whichever way the count is worded
    error = said[1]
    refused, turn = [json.loads(line) for line in r.stdout.splitlines()]
    assert refused == {"user": long, "error": error, "type": "ContextLengthError"}
    hi = smollm.tokenizer.apply_chat_template([{"role": "user", "content": "Hi"}])
    want = generate(smollm, hi, SamplingParams(temperature=0, max_tokens=4))
    assert turn == {"user": "Hi", "assistant": want.text, "stop_reason": want.stop_reason, "turn": 1}


def test_chat_goes_on_after_a_line_that_is_not_utf8(smollm):
    """Bytes that are not UTF-8 (under a strict UTF-8 locale, where decoding them is an error): that line is one
    error, left out of the conversation; the next line is answered as its first turn."""
    from forwardpass.loop import generate
    from forwardpass.sampling import SamplingParams

    r = subprocess.run([sys.executable, "-m", "forwardpass", "chat", "--max-tokens", "4", "--json"],
                       input=b"caf\xff au lait\nHi\n", capture_output=True, timeout=300,
                       env={**os.environ, "PYTHONIOENCODING": "utf-8:strict"})
    assert r.returncode == 0, r.stderr.decode()
    assert r.stderr.decode() == ("forwardpass: error: not valid UTF-8 (byte 0xFF); the line is left out of the "
                                 "conversation (/reset starts a new one)\n")
    refused, turn = [json.loads(line) for line in r.stdout.decode().splitlines()]
    assert refused == {"user": "caf\ufffd au lait", "error": "not valid UTF-8 (byte 0xFF)", "type": "ForwardpassError"}
    hi = smollm.tokenizer.apply_chat_template([{"role": "user", "content": "Hi"}])
    assert turn["turn"] == 1 and turn["assistant"] == generate(smollm, hi, SamplingParams(temperature=0,
                                                                                           max_tokens=4)).text


@pytest.mark.parametrize("option", [("--storage", "bf16"), ("--storage", "int8"), ("--storage", "q4"),
                                    ("--kv-cache-dtype", "float16")])
def test_generate_with_a_storage_mode(option, cli):
    r = cli("generate", "The capital of France is", "--max-tokens", "4", *option, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["text"].startswith(" Paris")


def test_unknown_storage_is_refused(cli):
    r = cli("generate", "hi", "--storage", "int3")
    assert r.returncode == 2 and "invalid choice: 'int3'" in r.stderr


def test_generate_structured_output_options(tmp_path, cli):
    """--json-schema (text or file), --regex and --logit-bias reach the engine; a bad pattern is one line, exit 2."""
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}},
              "required": ["name"], "additionalProperties": False}
    (tmp_path / "schema.json").write_text(json.dumps(schema))
    r = cli("generate", "--chat", "Name a person, as JSON.", "--json-schema", str(tmp_path / "schema.json"), "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert set(json.loads(out["text"])) == {"name"} and out["stop_reason"] == "stop"
    r = cli("generate", "Call me at", "--regex", " [0-9]{3}-[0-9]{4}", "--logit-bias", "35=5", "--max-tokens", "20")
    assert r.returncode == 0 and re.fullmatch(r" [0-9]{3}-[0-9]{4}\n", r.stdout), r.stdout
    bad = cli("generate", "hi", "--regex", "[0-9")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "unclosed character class" in bad.stderr


def test_a_reader_that_stops_early_ends_the_command_quietly():
    """`forwardpass embed … --json | head -c 100`: the reader closes the pipe mid-output; the command ends with
    SIGPIPE's status and no traceback (it printed two, trying to report the closed pipe on the closed pipe)."""
    texts = [f"sentence number {i}" for i in range(40)]  # ~300 kB of JSON, far past a pipe's buffer
    proc = subprocess.Popen([sys.executable, "-m", "forwardpass", "embed", *texts, "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.read(100).startswith(b'{"model"')
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and "Traceback" not in err, err


def test_threads_sets_the_most_a_step_runs(cli):
    """--threads on a command that runs the model: the same greedy tokens with one thread, two, or the default."""
    from forwardpass.kernels.team import set_threads

    def run(*threads: str) -> list[int]:
        return json.loads(cli("generate", "The three primary colors are", "--max-tokens", "12", *threads,
                              "--json").stdout)["token_ids"]
    try:
        assert run("--threads", "1") == run("--threads", "2") == run()
    finally:
        set_threads(None)  # the command set it for this whole (test) process


def test_threads_past_the_cores_are_capped_with_one_warning(cli):
    """--threads beyond the cores this process may use runs as many threads as it has cores, and says so on one line
    (each thread without a core would hold the others up at every barrier); 0 is refused."""
    from forwardpass.kernels.team import most_threads, set_threads

    cores = len(os.sched_getaffinity(0))
    try:
        r = cli("generate", "Hi", "--max-tokens", "1", "--threads", "999", "--json")
        assert r.returncode == 0 and most_threads() == cores, r.stderr
        assert [line for line in r.stderr.splitlines() if "threads" in line] == [
            f"forwardpass: warning: --threads 999 is more than the {cores} cores this process may use; running {cores}"]
    finally:
        set_threads(None)
    r = cli("generate", "Hi", "--threads", "0")
    assert r.returncode == 2 and "--threads: must be a positive integer, got 0" in r.stderr


def test_logprobs_come_as_token_text(smollm, cli):
    """--logprobs N: a table of each chosen token's text, its log-probability and its N alternatives (text, not ids), in
    generate and in chat; --json gives each id's text beside it."""
    from forwardpass.loop import generate
    from forwardpass.sampling import SamplingParams

    want = generate(smollm, "The three primary colors are", SamplingParams(temperature=0, max_tokens=4, logprobs=2))
    r = cli("generate", "The three primary colors are", "--max-tokens", "4", "--logprobs", "2", "--storage", "fp32")
    assert r.returncode == 0, r.stderr  # (the fixture's storage: the same numbers)
    for i, lp in enumerate(want.logprobs):
        row = next(line for line in r.stdout.splitlines() if line.startswith(f"│ {i + 1} "))
        assert repr(smollm.tokenizer.piece(lp.token_id)) in row and f"{lp.logprob:.3f}" in row
        assert all(f"{smollm.tokenizer.piece(j)!r} {v:.2f}" in row for j, v in lp.top)
    out = json.loads(cli("generate", "The three primary colors are", "--max-tokens", "4", "--logprobs", "2",
                         "--storage", "fp32", "--json").stdout)
    assert [e["token"] for e in out["logprobs"]] == [smollm.tokenizer.piece(i) for i in want.token_ids]
    assert out["logprobs"][0]["top_tokens"] == [smollm.tokenizer.piece(i) for i, _ in want.logprobs[0].top]
    chat = cli("chat", "--max-tokens", "3", "--logprobs", "1", stdin="Hi\n")
    assert chat.returncode == 0 and "log-probabilities" in chat.stdout and "alternatives" in chat.stdout
