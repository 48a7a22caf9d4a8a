"""The prompt cache on disk (`--prompt-cache DIR`): blocks written by one engine are read back by a restarted one,
giving the cold run's tokens and log-probabilities in every storage mode and KV format; a damaged, truncated or
foreign file, a full disk and two writers each cost a miss (and a log line), never a wrong token; the folder stays
within its size, least recently used out first; bad options are refused by name."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from stepping import run

import forwardpass
from forwardpass.cli import main
from forwardpass.cli.prompt_cache_options import parse_size
from forwardpass.engine import Engine, EngineConfig
from forwardpass.engine.prompt_cache import store as store_module
from forwardpass.sampling import SamplingParams

TEXT = ("A lighthouse keeper wrote down the weather every morning: the wind, the clouds, the height of the waves and "
        "the ships that passed before noon. ")
GREEDY = SamplingParams(temperature=0, max_tokens=6, logprobs=3)
# (storage, KV format): every storage mode at its own KV format, and the stored weights at every other one
MODES = [("stored", "auto"), ("stored", "float32"), ("stored", "q8_0"), ("fp32", "auto"), ("fp32", "float16"),
         ("bf16", "auto"), ("fp16", "auto"), ("int8", "auto"), ("int8", "q8_0"), ("q4", "auto")]
_models: dict[tuple[str, str], forwardpass.LLM] = {}


def model(storage: str = "stored", kv: str = "auto", fresh: bool = False):
    """The default model in a storage mode and KV format, loaded once per module (`fresh`: loaded anew)."""
    if fresh or (storage, kv) not in _models:
        loaded = forwardpass.load(storage=storage, kv_cache_dtype=kv, backend="auto")
        if fresh:
            return loaded
        _models[storage, kv] = loaded
    return _models[storage, kv]


@pytest.fixture(scope="module")
def prompt() -> list[int]:
    return model().encode(TEXT * 2)  # several full blocks and a partial one


def engine(fp, folder: Path | None = None, **config) -> Engine:
    return Engine(fp, EngineConfig(kv_cache_bytes=32 * 2**20, prompt_cache=None if folder is None else str(folder),
                                   **config))


def answer(e: Engine, prompt: list[int]) -> list[tuple]:
    """Each output's token, its log-probability and its alternatives', after the engine's queued writes are done."""
    out = run(e, [prompt], [GREEDY])[0]
    if e.prompt_cache is not None:
        assert e.prompt_cache.store.flush(30)
    return [(o.token_id, o.logprob.logprob, o.logprob.top) for o in out if o.logprob is not None]


def stats(e: Engine):
    return e.prompt_cache.store.stats


def files(folder: Path) -> list[Path]:
    """The cache's files: in its namespaces' folders (named by 32 hex digits)."""
    return sorted(p for p in folder.glob("*/*.kv") if len(p.parent.name) == 32)


def full_blocks(prompt: list[int], e: Engine) -> int:
    return (len(prompt) - 1) // e.pool.block_size


@pytest.mark.parametrize(("storage", "kv"), MODES)
def test_a_restarted_engine_reads_the_blocks_back_with_the_cold_output(tmp_path, prompt, storage, kv):
    fp = model(storage, kv)
    cold = answer(engine(fp), prompt)
    first = engine(fp, tmp_path)
    assert answer(first, prompt) == cold
    blocks = full_blocks(prompt, first)
    assert stats(first).written_blocks >= blocks and stats(first).hit_blocks == 0
    again = model(storage, kv, fresh=True) if storage == "stored" else fp  # a fresh load where loading is quick
    second = engine(again, tmp_path)
    out = run(second, [prompt], [GREEDY])[0]
    assert [(o.token_id, o.logprob.logprob, o.logprob.top) for o in out] == cold  # the same tokens and log-probs
    assert out[-1].cached_tokens == blocks * second.pool.block_size
    assert stats(second).hit_blocks == blocks and stats(second).rejected == 0


def test_generate_twice_through_the_command_line(tmp_path):
    """Two processes: the second reads what the first wrote, and prints the same tokens and log-probabilities."""
    command = [sys.executable, "-m", "forwardpass", "generate", TEXT * 3, "--temperature", "0", "--max-tokens", "5",
               "--logprobs", "2", "--json", "--prompt-cache", str(tmp_path / "cache"), "--prompt-cache-size", "1G"]
    runs = [subprocess.run(command, capture_output=True, text=True, timeout=300) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    first, second = (json.loads(r.stdout) for r in runs)
    assert first["token_ids"] == second["token_ids"] and first["logprobs"] == second["logprobs"]
    assert len(files(tmp_path / "cache")) >= first["prompt_tokens"] // 16


def damaged(tmp_path, prompt, caplog, spoil) -> tuple[Engine, list]:
    """Blocks written, the second block's file spoiled by `spoil(path)`, then a restarted engine's answer."""
    fp = model()
    cold = answer(engine(fp), prompt)
    first = engine(fp, tmp_path)
    answer(first, prompt)
    keys = first.prompt_cache.keys(_sequence(prompt), 2)
    path = first.prompt_cache.store.dir / f"{keys[1].hex()}.kv"
    spoil(path)
    second = engine(fp, tmp_path)
    with caplog.at_level("WARNING", logger="forwardpass.prompt_cache"):
        assert answer(second, prompt) == cold
    return second, [r for r in caplog.records if r.name == "forwardpass.prompt_cache"]


def _sequence(prompt: list[int]):
    from types import SimpleNamespace
    return SimpleNamespace(token_ids=prompt, disk_keys=[])


def flipped(at: int):
    """Spoil a file by flipping one bit of its byte `at` (negative: from the end)."""
    def spoil(path: Path) -> None:
        data = bytearray(path.read_bytes())
        data[at] ^= 0x10
        path.write_bytes(bytes(data))
    return spoil


def truncate(path: Path) -> None:
    os.truncate(path, path.stat().st_size // 2)


@pytest.mark.parametrize("spoil", [flipped(-100), flipped(70), truncate, lambda p: p.write_bytes(b"not ours" * 99)],
                         ids=["payload", "header", "truncated", "foreign"])
def test_a_damaged_file_costs_a_miss_and_a_log_line(tmp_path, prompt, caplog, spoil):
    second, logged = damaged(tmp_path, prompt, caplog, spoil)
    s = stats(second)
    assert s.hit_blocks == 1 and s.rejected == 1 and s.misses == 1  # the first block read, the second refused
    assert len(logged) == 1 and "computing the block instead" in logged[0].getMessage()
    assert not logged[0].exc_info
    third = engine(model(), tmp_path)  # the refused file was removed, and the second engine wrote the block again
    answer(third, prompt)
    assert stats(third).hit_blocks == full_blocks(prompt, third) and stats(third).rejected == 0


def test_the_prompt_s_last_token_is_always_computed(tmp_path, prompt):
    """A prompt of whole blocks: its last block is computed, not read, so that there are logits to sample from."""
    fp, whole = model(), prompt[:32]
    cold = answer(engine(fp), whole)
    answer(engine(fp, tmp_path), whole)
    again = engine(fp, tmp_path)
    assert answer(again, whole) == cold and stats(again).hit_blocks == 1 and stats(again).misses == 0


def test_another_kv_format_s_files_are_never_read(tmp_path, prompt, caplog):
    """A file written for one KV format, put where another format's engine looks: refused by its header."""
    ours = engine(model("stored", "auto"), tmp_path)
    answer(ours, prompt)
    other = engine(model("stored", "q8_0"), tmp_path)
    assert other.prompt_cache.store.dir != ours.prompt_cache.store.dir  # each namespace its own folder
    for path in files(tmp_path):
        target = other.prompt_cache.store.dir / path.name
        target.write_bytes(path.read_bytes())
    cold = answer(engine(model("stored", "q8_0")), prompt)
    other = engine(model("stored", "q8_0"), tmp_path)
    with caplog.at_level("WARNING", logger="forwardpass.prompt_cache"):
        assert answer(other, prompt) == cold
    assert stats(other).hit_blocks == 0 and stats(other).rejected == 1 and stats(other).misses == 1
    assert "another model, storage, KV format" in caplog.text


def test_a_full_disk_stops_writing_and_costs_only_misses(tmp_path, prompt, caplog, monkeypatch):
    def no_space(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    fp = model()
    cold = answer(engine(fp), prompt)
    full = engine(fp, tmp_path)
    monkeypatch.setattr(store_module, "header", no_space)
    with caplog.at_level("WARNING", logger="forwardpass.prompt_cache"):
        assert answer(full, prompt) == cold
    s = stats(full)
    assert s.write_errors == 1 and s.dropped >= 1 and s.written_blocks == 0  # paused after the first failure
    assert caplog.text.count("the disk is full") == 1
    assert not list(tmp_path.rglob("*.tmp")) and not files(tmp_path)
    monkeypatch.undo()
    after = engine(fp, tmp_path)
    assert answer(after, prompt) == cold and stats(after).misses == 1 and stats(after).hit_blocks == 0


def test_two_writers_of_the_same_blocks_leave_whole_files(tmp_path, prompt, monkeypatch):
    """Two engines compute the same prompt before either has written it; then their writers race for the same files."""
    fp = model()
    cold = answer(engine(fp), prompt)
    go, header = threading.Event(), store_module.header
    monkeypatch.setattr(store_module, "header", lambda *args: (go.wait(30), header(*args))[1])
    a, b = engine(fp, tmp_path), engine(fp, tmp_path)
    assert run(a, [prompt], [GREEDY]) and run(b, [prompt], [GREEDY])
    assert stats(a).hit_blocks == stats(b).hit_blocks == 0  # neither found the other's blocks: nothing written yet
    go.set()
    assert a.prompt_cache.store.flush(30) and b.prompt_cache.store.flush(30)
    assert stats(a).written_blocks >= full_blocks(prompt, a) and stats(b).written_blocks >= full_blocks(prompt, b)
    assert not list(tmp_path.rglob("*.tmp"))
    third = engine(fp, tmp_path)
    assert answer(third, prompt) == cold and stats(third).hit_blocks == full_blocks(prompt, third)


def test_a_full_queue_drops_blocks_without_waiting(tmp_path, prompt, monkeypatch):
    """The writer stuck: the engine goes on, and what its bounded queue cannot take is dropped and counted."""
    fp = model()
    cold = answer(engine(fp), prompt)
    go, header = threading.Event(), store_module.header
    monkeypatch.setattr(store_module, "header", lambda *args: (go.wait(30), header(*args))[1])
    e = engine(fp, tmp_path)
    e.prompt_cache.store.writer.limit = e.prompt_cache.store.payload_bytes  # room for one block
    out = run(e, [prompt], [GREEDY])[0]
    assert [(o.token_id, o.logprob.logprob, o.logprob.top) for o in out] == cold
    assert stats(e).dropped >= full_blocks(prompt, e) - 1 and stats(e).written_blocks == 0
    go.set()
    assert e.prompt_cache.store.flush(30) and stats(e).written_blocks == 1


def test_the_folder_keeps_to_its_size_least_recently_used_out_first(tmp_path):
    fp = model()
    two_blocks = model().encode(TEXT)[:33]  # two full blocks and a token
    probe = engine(fp, tmp_path)
    answer(probe, two_blocks)
    size = files(tmp_path)[0].stat().st_size
    for path in files(tmp_path):
        path.unlink()
    limit = int(size * 4.5)  # four files fit; a fifth brings the folder down to 0.9 of the limit
    theirs = [tmp_path / "notes" / "keep.kv", tmp_path / "keep.txt"]  # not the cache's: never counted nor removed
    for path in theirs:
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"x" * size)
    stale = probe.prompt_cache.store.dir / f".{'0' * 32}.kv.1.2.tmp"  # a crashed writer's
    stale.write_bytes(b"x")
    os.utime(stale, (1, 1))
    e = engine(fp, tmp_path, prompt_cache_bytes=limit)
    assert not stale.exists()
    old, new = fp.encode("Old news: " + TEXT)[:33], fp.encode("New news: " + TEXT * 2)[:49]
    run(e, [old], [SamplingParams(temperature=0, max_tokens=1)])
    assert e.prompt_cache.store.flush(30)
    first = files(tmp_path)
    for path in first:
        os.utime(path, (1, 1))  # long ago
    run(e, [new], [SamplingParams(temperature=0, max_tokens=1)])
    assert e.prompt_cache.store.flush(30)
    left = files(tmp_path)
    assert stats(e).evictions >= 1 and sum(p.stat().st_size for p in left) <= limit
    assert not set(left) & set(first[:stats(e).evictions]) and len(left) == 5 - stats(e).evictions
    assert all(path.exists() for path in theirs)


def test_metrics_count_the_disk(tmp_path, prompt):
    fp = model()
    answer(engine(fp, tmp_path), prompt)
    e = engine(fp, tmp_path)
    answer(e, prompt)
    e.metrics.observe_pool(e)
    text = e.metrics.render().decode()
    assert f"forwardpass:prompt_cache_hit_blocks_total {float(full_blocks(prompt, e))}" in text
    assert "forwardpass:prompt_cache_read_bytes_total" in text and "forwardpass:prompt_cache_evictions_total" in text
    assert "prompt_cache" not in engine(fp).metrics.render().decode()  # an engine without one shows none


def test_a_restarted_server_answers_from_the_disk_and_counts_it_on_metrics(tmp_path):
    import httpx
    from server_helpers import running_server

    body = {"model": "smollm", "prompt": TEXT * 3, "max_tokens": 4, "temperature": 0, "logprobs": 2}
    answers, texts = [], []
    for _ in range(2):  # the second server is a restart: a new engine, the same folder
        with running_server(model(), EngineConfig(kv_cache_bytes=32 * 2**20, prompt_cache=str(tmp_path))) as (url, e):
            answers.append(httpx.post(url + "/v1/completions", json=body, timeout=120).json())
            texts.append(httpx.get(url + "/metrics", timeout=30).text)
            assert e.prompt_cache.store.flush(30)
    first, second = answers
    assert first["choices"][0]["text"] == second["choices"][0]["text"]
    assert first["choices"][0]["logprobs"] == second["choices"][0]["logprobs"]
    blocks = (first["usage"]["prompt_tokens"] - 1) // 16
    assert second["usage"]["prompt_tokens_details"]["cached_tokens"] == blocks * 16
    assert f'forwardpass:prompt_cache_hit_blocks_total{{model_name="smollm"}} {float(blocks)}' in texts[1]
    assert 'forwardpass:prompt_cache_hit_blocks_total{model_name="smollm"} 0.0' in texts[0]


@pytest.mark.parametrize(("text", "size"), [("4096", 4096), ("500M", 500 * 2**20), ("2G", 2 * 2**30),
                                             ("1.5GiB", 3 * 2**29), ("64kb", 64 * 2**10), ("2X", None), ("", None)])
def test_sizes(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize(("options", "says"), [
    (["--prompt-cache", "{file}"], "--prompt-cache {file}: not a folder"),
    (["--prompt-cache", "{file}/sub"], "--prompt-cache {file}/sub: cannot write there"),
    (["--prompt-cache-size", "0"], "argument --prompt-cache-size: must be a size in bytes > 0"),
    (["--prompt-cache-size", "lots"], "argument --prompt-cache-size: must be a size in bytes > 0"),
])
@pytest.mark.parametrize("command", ["generate", "chat", "serve", "batch"])
def test_bad_options_are_refused_by_name(tmp_path, capsys, command, options, says):
    file = tmp_path / "a-file"
    file.write_text("")
    positional = {"generate": ["hello"], "batch": [str(file), str(tmp_path / "out.jsonl")]}.get(command, [])
    argv = [command, *positional, *(o.format(file=file) for o in options)]
    try:
        code = main(argv)
    except SystemExit as e:  # argparse's own refusal
        code = e.code
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert says.format(file=file) in err[-1] and "Traceback" not in "\n".join(err)


def test_an_unwritable_folder_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(os, "access", lambda *args: False)
    assert main(["generate", "hello", "--prompt-cache", str(tmp_path)]) == 2
    assert f"--prompt-cache {tmp_path}: cannot write there (Permission denied)" in capsys.readouterr().err
