"""`forwardpass cost`: tables, --json, --plot, --measure and its errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from forwardpass import cost, default_model_path, preset


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "forwardpass", "cost", *args], capture_output=True, text=True,
                          timeout=300)


def test_gpt3_json():
    r = cli("gpt3-175b", "--context", "2048", "--concurrency", "37", "--prompt", "16", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["memory"]["kv_bytes_per_sequence"] == 9 * cost.GiB
    assert d["memory"]["crossover_sequences"] == 37
    assert d["memory"]["kv_bytes_all_sequences"] > d["memory"]["weights_bytes"]
    assert d["intensity"] == {"prefill": 16.0, "decode": 1.0}


def test_table_and_plot(tmp_path):
    png = tmp_path / "curves.png"
    r = cli("gpt2-small", "--plot", str(png), "--dtype", "fp32")
    assert r.returncode == 0, r.stderr
    assert "124,439,808" in r.stdout and "7,087,872" in r.stdout and "68.3%" in r.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000


def test_model_file_reads_metadata_only():
    r = cli(str(default_model_path()), "--context", "1000", "--dtype", "q4", "--json")
    d = json.loads(r.stdout)
    assert d["parameters"]["total"] == 134_515_008 and d["config"]["n_kv_heads"] == 3
    assert d["memory"]["kv_bytes_per_sequence"] == 1000 * cost.kv_bytes_per_token(preset("smollm2-135m"), "fp16")


def test_measure_prints_prediction_beside_measurement():
    r = cli("toy", "--measure", "--prompt", "32", "--new", "16", "--json")
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)["measured"]
    c = preset("toy")
    assert m["predicted_decode_tokens_per_s"] == pytest.approx(
        cost.roofline_decode_tokens_per_s(c, m["bandwidth_bytes_per_s"], 40, "fp32", "fp32"))
    assert m["predicted_prefill_tokens_per_s"] == pytest.approx(
        cost.compute_bound_prefill_tokens_per_s(c, m["matmul_flops_per_s"], 32))
    assert m["measured_decode_tokens_per_s"] > 0 and m["measured_prefill_tokens_per_s"] > 0


@pytest.mark.parametrize("args,message", [
    (["gpt2-small", "--context", "0"], "--context must be a positive integer, got 0"),
    (["gpt2-small", "--prompt", "-4"], "--prompt must be a positive integer, got -4"),
    (["gpt2-small", "--concurrency", "0"], "--concurrency must be a positive integer"),
    (["gpt2-small", "--context", "5000"], "exceeds the model's context length 1024"),
    (["gpt9"], "unknown model 'gpt9'"),
    (["gpt3-175b", "--measure"], "too large to instantiate here"),
    (["gpt2-small", "--dtype", "fp8"], "invalid choice: 'fp8'"),
    (["gpt2-small", "--plot", "/nonexistent/dir/cost.png"], "the directory /nonexistent/dir does not exist"),
])
def test_bad_options(args, message):
    r = cli(*args)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr


def test_the_model_option_is_the_model_costed():
    """`--model` names the model as the positional MODEL does (it was once ignored, costing the default model)."""
    r = cli("--model", "gpt2-small", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["parameters"]["total"] == cost.parameters(preset("gpt2-small")).total
    both = cli("gpt2-small", "--model", "gpt2-xl")
    assert both.returncode == 2 and "name the model once" in both.stderr


def test_plan_sizes_replicas_from_a_measured_replica():
    """`--plan`: one replica measured at 1 and 2 requests at once; the replicas, CPUs and memory follow from it."""
    r = cli("--plan", "--rate", "5", "--prompt", "8", "--new", "4", "--max-batch", "2", "--threads-per-replica", "1",
            "--json")
    assert r.returncode == 0, r.stderr
    p = json.loads(r.stdout)["plan"]
    m = p["measured"]
    assert [x["batch"] for x in m["rounds"]] == [1, 2] and m["threads"] == 1 and m["storage"] == "stored"
    best = max(x["requests_per_s"] for x in m["rounds"])
    chosen = next(x for x in m["rounds"] if x["requests_per_s"] >= 0.9 * best)
    assert p["batch_per_replica"] == chosen["batch"] and p["replicas"] == -(-5 // chosen["requests_per_s"])
    assert p["cpus"] == p["replicas"]
    kv = chosen["batch"] * 12 * m["kv_bytes_per_token"]
    assert m["kv_bytes_per_token"] == 2 * 30 * 3 * 64 * 2  # K and V, 30 layers, 3 KV heads of 64, float16
    assert p["memory_bytes"] == p["replicas"] * (m["loaded_rss_bytes"] + kv)


def test_plan_arithmetic_on_given_rounds():
    from forwardpass.plan import plan
    rounds = [{"batch": 1, "seconds": 1.0, "requests_per_s": 1.0, "tokens_per_s": 10.0},
              {"batch": 2, "seconds": 1.1, "requests_per_s": 1.8, "tokens_per_s": 18.0},
              {"batch": 4, "seconds": 2.1, "requests_per_s": 1.9, "tokens_per_s": 19.0}]
    measured = {"rounds": rounds, "prompt": 6, "new": 10, "loaded_rss_bytes": 1000, "kv_bytes_per_token": 10}
    p = plan(measured, rate=5.0, threads=2)
    assert (p["batch_per_replica"], p["replicas"], p["cpus"]) == (2, 3, 6)  # 1.8 ≥ 0.9 × 1.9; ⌈5 / 1.8⌉ = 3
    assert p["memory_per_replica_bytes"] == 1000 + 2 * 16 * 10 and p["memory_bytes"] == 3 * 1320


@pytest.mark.parametrize("args,message", [
    (["--rate", "2"], "--rate applies to --plan only"),
    (["--threads-per-replica", "2"], "--threads-per-replica applies to --plan only"),
    (["--max-batch", "4"], "--max-batch applies to --plan only"),
    (["--plan"], "--plan needs --rate, a positive number of requests per second (got None)"),
    (["--plan", "--rate", "nan"], "--plan needs --rate, a positive number of requests per second (got nan)"),
    (["--plan", "--rate", "1", "--max-batch", "0"], "--threads-per-replica and --max-batch must be positive integers"),
    (["gpt2-small", "--plan", "--rate", "1"], "--plan measures a replica: give a model file, not a preset"),
])
def test_plan_refusals(args, message):
    r = cli(*args)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, r.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent's memory leaks into ru_maxrss on Linux")
def test_a_process_peak_memory_is_its_own_not_its_parents():
    """The plan sizes replicas by a replica's measured peak: a process forked from one holding 512 MB reports its own
    (ru_maxrss would report the parent's 512 MB too)."""
    held = bytearray(512 * 2**20)
    held[::4096] = b"\1" * len(held[::4096])  # every page written: resident
    read = "from forwardpass.article.machine import peak_resident_bytes as p; print(p())"
    out = subprocess.run([sys.executable, "-c", read],
                         capture_output=True, text=True, check=True)
    assert 0 < int(out.stdout) < 256 * 2**20
    del held


def test_a_model_is_reported_under_the_id_a_server_serves_it_as():
    """The id typed is the id reported (an installed name, a preset, else the file's name): the one `serve` answers
    to; the file's own display name beside it."""
    from forwardpass.packaged import model_id

    for typed, want in (("gemma3-270m", "gemma3-270m"), (None, default_model_path().name.removesuffix(".gguf")),
                        ("gpt3-175b", "gpt3-175b")):
        r = cli(*([typed] if typed else []), "--json")
        assert r.returncode == 0, r.stderr
        d = json.loads(r.stdout)
        assert d["model"] == want and d["name"]
    assert model_id("gemma3-270m", "/cache/gemma-3-270m-q4_k_m.gguf") == "gemma3-270m"
    assert model_id("/models/my.gguf", "/models/my.gguf") == "my" and model_id(None, "/x/ckpt") == "ckpt"
