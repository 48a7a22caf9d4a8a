"""--ctx-size / load(ctx_size=): the context a sequence may fill, at most the model's trained one. Everything that
reads config.context_length sees the shorter one: generation stops at it, admission refuses past it, the RoPE tables
and a learned position table are that long, `inspect` and the server's /v1/models report it."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest
import torch
from cli_helpers import in_process
from server_helpers import running_server

import forwardpass
from forwardpass.engine import Engine, EngineConfig
from forwardpass.errors import ContextLengthError, ForwardpassError
from forwardpass.sampling import SamplingParams

PROMPT = "The three primary colors are"  # 5 tokens
PROBE = """
import sys
from forwardpass.cli import main
code = main(sys.argv[1:])
print("torch" in sys.modules, code)
"""


@pytest.fixture(scope="module")
def short():
    return forwardpass.load(ctx_size=32)


@pytest.fixture(scope="module")
def cli():
    with in_process() as run:
        yield run


def test_load_keeps_the_shorter_context(short):
    assert short.config.context_length == 32 and short.trained_context_length == 8192
    assert short.model.rope.cos.shape == (32, short.config.head_dim // 2)  # the table is as long as the context
    assert forwardpass.load(ctx_size=0).config.context_length == 8192  # 0: the model's own


@pytest.mark.parametrize("ctx_size,message", [
    (8193, "ctx_size 8193 exceeds the model's trained context length 8192"),
    (-1, "ctx_size must be a number of tokens ≥ 0"),
    ("32", "ctx_size must be a number of tokens ≥ 0"),
])
def test_load_refuses_a_context_it_cannot_keep(ctx_size, message):
    with pytest.raises(ForwardpassError, match=message):
        forwardpass.load(ctx_size=ctx_size)


def test_the_engine_admits_within_the_context(short):
    engine = Engine(short, EngineConfig(kv_cache_bytes=64 * 2**20))
    ids = short.encode(PROMPT)
    assert len(ids) == 5 and engine.token_room(ids) == 27  # the pool holds far more: the context is the limit
    engine.check_request(ids, SamplingParams(max_tokens=27))
    with pytest.raises(ContextLengthError, match="max_tokens 28 does not fit: the prompt is 5 tokens and the context "
                                                 "length is 32"):
        engine.check_request(ids, SamplingParams(max_tokens=28))


def test_generate_stops_at_the_context_with_the_same_tokens(cli):
    """As at the model's own context: a reply that would run past it stops there, finish "length"; the tokens up to
    there are the ones the full context gives (positions compute as before)."""
    r = cli("generate", PROMPT, "--ctx-size", "12", "--max-tokens", "40", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    full = json.loads(cli("generate", PROMPT, "--max-tokens", "7", "--json").stdout)
    assert out["stop_reason"] == "length" and out["prompt_tokens"] == 5 and len(out["token_ids"]) == 7
    assert out["token_ids"] == full["token_ids"] == [260, 3003, 4683, 282, 260, 35526, 2380]


def test_a_prompt_that_fills_the_context_is_refused(cli):
    r = cli("generate", PROMPT, "-c", "5")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == ("forwardpass: error: the prompt is 5 tokens, leaving no room to generate: the context length "
                        "is 5\n")


def test_inspect_reports_the_context(cli):
    r = cli("inspect", PROMPT, "--top", "1", "-c", "64", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert (report["context_length"], report["trained_context_length"]) == (64, 8192)
    report = json.loads(cli("inspect", PROMPT, "--top", "1", "--json").stdout)
    assert (report["context_length"], report["trained_context_length"]) == (8192, 8192)


@pytest.mark.parametrize("args", [
    ["generate", "hi"], ["chat"], ["inspect", "hi"], ["serve"], ["explore"], ["batch", "in.jsonl", "out.jsonl"]])
def test_every_command_refuses_a_context_past_the_trained_one_without_torch(args, tmp_path):
    (tmp_path / "in.jsonl").write_text("{}\n")
    r = subprocess.run([sys.executable, "-c", PROBE, *args, "--ctx-size", "8193"], capture_output=True, text=True,
                       cwd=tmp_path, timeout=60)
    assert r.stdout.split()[-2:] == ["False", "2"], r.stdout + r.stderr
    assert r.stderr == "forwardpass: error: --ctx-size 8193 exceeds the model's trained context length 8192\n"


@pytest.mark.parametrize("value", ["-1", "1.5", "many"])
def test_a_context_that_is_not_a_count_is_refused_by_argparse(value, tmp_path):
    r = subprocess.run([sys.executable, "-c", PROBE, "generate", "hi", "-c", value], capture_output=True, text=True,
                       cwd=tmp_path, timeout=60)
    assert r.returncode == 2 and "torch" not in r.stdout  # argparse exits before the probe prints
    assert r.stderr.splitlines()[-1] == (f"forwardpass generate: error: argument -c/--ctx-size: must be a number of "
                                         f"tokens ≥ 0 (0: the model's own context), got {value}")


def test_the_server_reports_the_context(short):
    with running_server(short) as (url, _):
        models = httpx.get(url + "/v1/models").json()["data"]
        assert models[0]["max_model_len"] == 32
        assert httpx.post(url + "/tokenize", json={"prompt": PROMPT}).json()["max_model_len"] == 32
        refused = httpx.post(url + "/v1/completions", json={"prompt": PROMPT, "max_tokens": 28})
        assert refused.status_code == 400 and refused.json()["error"]["code"] == "context_length_exceeded"


def test_a_learned_position_table_keeps_its_first_rows(tmp_path):
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    hf = transformers.GPT2LMHeadModel(transformers.GPT2Config(vocab_size=101, n_positions=64, n_embd=48, n_layer=2,
                                                              n_head=4))
    hf.save_pretrained(tmp_path, safe_serialization=True)
    full, short = forwardpass.load(tmp_path).model, forwardpass.load(tmp_path, ctx_size=16).model
    assert short.pos_embeddings.weight.shape == (16, 48)
    assert torch.equal(short.pos_embeddings.weight, full.pos_embeddings.weight[:16])
    ids = torch.randint(0, 101, (1, 16))
    with torch.inference_mode():
        assert torch.equal(short(ids)[0], full(ids)[0])
        with pytest.raises(ContextLengthError, match="17 tokens exceed the model's context length 16"):
            short(torch.randint(0, 101, (1, 17)))
