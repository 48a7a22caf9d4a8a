"""Bad input: a clear one-line error naming the problem, never a traceback or a hang."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import transformers
from bits import same_bits

import forwardpass
from forwardpass.errors import ContextLengthError, ModelFileError, TokenIdError, UnsupportedModelError


@pytest.fixture
def gpt2_dir(tmp_path):
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(vocab_size=64, n_positions=16, n_embd=32, n_layer=2, n_head=2)
    transformers.GPT2LMHeadModel(cfg).save_pretrained(tmp_path, safe_serialization=True)
    return tmp_path


def rewrite(directory, change):
    from safetensors.torch import load_file, save_file
    path = directory / "model.safetensors"
    tensors = load_file(path)
    change(tensors)
    save_file(tensors, path)


def test_checkpoint_missing_a_tensor(gpt2_dir):
    rewrite(gpt2_dir, lambda t: t.pop("transformer.h.1.mlp.c_fc.weight"))
    with pytest.raises(ModelFileError, match="missing tensor h.1.mlp.c_fc.weight"):
        forwardpass.load(gpt2_dir)


def test_checkpoint_with_a_wrong_shape(gpt2_dir):
    def shrink(t):
        t["transformer.h.0.mlp.c_proj.bias"] = torch.zeros(31)
    rewrite(gpt2_dir, shrink)
    with pytest.raises(ModelFileError, match=r"blocks.0.ffn.down.bias has shape \(31,\), expected \(32,\)"):
        forwardpass.load(gpt2_dir)


def test_checkpoint_of_unsupported_type(gpt2_dir):
    config = json.loads((gpt2_dir / "config.json").read_text())
    config["model_type"] = "bert"
    (gpt2_dir / "config.json").write_text(json.dumps(config))
    with pytest.raises(UnsupportedModelError, match="model_type 'bert' is not supported"):
        forwardpass.load(gpt2_dir)


def test_checkpoint_without_config(gpt2_dir):
    (gpt2_dir / "config.json").unlink()
    with pytest.raises(ModelFileError, match="no config.json"):
        forwardpass.load(gpt2_dir)


def test_corrupt_safetensors(gpt2_dir):
    (gpt2_dir / "model.safetensors").write_bytes(b"\x00" * 100)
    with pytest.raises(ModelFileError, match="not a readable safetensors file"):
        forwardpass.load(gpt2_dir)


def test_too_long_for_the_context(gpt2_dir):
    model = forwardpass.load(gpt2_dir).model
    with torch.inference_mode():
        with pytest.raises(ContextLengthError, match="17 tokens exceed the model's context length 16"):
            model(torch.zeros(1, 17, dtype=torch.long))
        cache = model.new_cache(1)
        model(torch.zeros(1, 10, dtype=torch.long), cache)
        with pytest.raises(ContextLengthError, match="17 tokens exceed"):
            model(torch.zeros(1, 7, dtype=torch.long), cache)
        assert cache.lengths == [10]  # the refused call wrote nothing


def test_cache_capacity_is_guarded(gpt2_dir):
    model = forwardpass.load(gpt2_dir).model
    cache = model.new_cache(1, capacity=4)
    with torch.inference_mode():
        model(torch.zeros(1, 4, dtype=torch.long), cache)
        before = cache.k.clone()
        with pytest.raises(ContextLengthError, match="room for 4 .* never overwritten silently"):
            model(torch.zeros(1, 1, dtype=torch.long), cache)
    assert same_bits(cache.k, before) and cache.lengths == [4]
    with pytest.raises(ContextLengthError, match="exceeds the model's context length 16"):
        model.new_cache(1, capacity=17)


@pytest.mark.parametrize("bad", [64, -1, 10**6])
def test_token_ids_out_of_range(gpt2_dir, bad):
    model = forwardpass.load(gpt2_dir).model
    with pytest.raises(TokenIdError, match=f"token id {bad} is outside the vocabulary"):
        model(torch.tensor([[1, bad, 2]]))


def test_prompt_longer_than_context(smollm):
    with pytest.raises(ContextLengthError, match="the prompt is 8193 tokens; the model's context length is 8192"):
        smollm.encode(" a" * 8193)


def test_decode_rejects_unknown_ids(smollm):
    with pytest.raises(TokenIdError, match="token id 49152 is outside"):
        smollm.tokenizer.decode([1, 49152])


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "forwardpass", *args], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("args,message", [
    (["inspect", "hi", "--model", "/no/such/model.gguf"], "model file not found: /no/such/model.gguf"),
    (["inspect", "hi", "--temperature", "-1"], "temperature must be a number ≥ 0"),
    (["inspect", "hi", "--device", "cuda:7"], "CUDA is not available"),
])
def test_cli_errors_are_one_line(args, message):
    r = run_cli(*args)
    assert r.returncode == 2
    assert r.stderr.strip() == f"forwardpass: error: {message}" or message in r.stderr.strip()
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_cli_not_a_model_file(tmp_path):
    path = tmp_path / "x.gguf"
    path.write_text("not a model")
    r = run_cli("inspect", "hi", "--model", str(path))
    assert r.returncode == 2 and "not a GGUF file" in r.stderr and "Traceback" not in r.stderr


DEVICES = ["gpu0"] + ([] if torch.cuda.is_available() else ["cuda"])
COUNTS = [("speed", "--runs", "0"), ("compile", "--rounds", "-1"), ("serving", "--clients", "0"),
          ("serving", "--max-tokens", "x")]


@pytest.fixture(scope="module")
def bench_runs() -> dict[tuple[str, ...], subprocess.CompletedProcess]:
    """Every refusal below, each benchmark started at once (each mostly imports PyTorch)."""
    bench = Path(__file__).parents[1] / "bench"
    runs = [(script, "--device", device) for script in ("speed", "compile", "serving") for device in DEVICES] + COUNTS
    procs = {args: subprocess.Popen([sys.executable, str(bench / f"{args[0]}.py"), *args[1:]], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True) for args in runs}
    done = {}
    for args, proc in procs.items():
        out, err = proc.communicate(timeout=120)
        done[args] = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    return done


@pytest.mark.parametrize("script", ["speed", "compile", "serving"])
def test_benchmarks_refuse_a_device_before_loading_anything(script, bench_runs):
    for device in DEVICES:
        r = bench_runs[(script, "--device", device)]
        want = "unknown device 'gpu0'" if device == "gpu0" else "device 'cuda' requested but CUDA is not available"
        assert r.returncode == 1 and want in r.stderr and not r.stdout
        assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("script,option,value", COUNTS)
def test_benchmarks_refuse_counts_below_one(script, option, value, bench_runs):
    r = bench_runs[(script, option, value)]
    assert r.returncode == 2 and not r.stdout and "Traceback" not in r.stderr
    want = f"{script}.py: error: argument {option}: must be a positive integer, got {value}"
    assert r.stderr.strip().splitlines()[-1] == want
