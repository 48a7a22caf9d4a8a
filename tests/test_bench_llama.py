"""bench/llama_c.py's choices, without llama.cpp: the faster flash-attention setting kept per point, and the extra
buffer types' probe read from children that exit, fail or die of a signal."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

# loaded from its file: bench/ on sys.path would shadow installed packages by its modules' names (bench/kernels.py)
_spec = importlib.util.spec_from_file_location("llama_c", Path(__file__).parent.parent / "bench" / "llama_c.py")
llama_c = importlib.util.module_from_spec(_spec)
sys.modules["llama_c"] = llama_c
_spec.loader.exec_module(llama_c)

OK = [sys.executable, "-c", "print('loaded')"]
SEGV_AT_LOAD = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"]
SEGV_IN_DECODE = [sys.executable, "-c", "import os, signal; print('loaded', flush=True); os.kill(os.getpid(), 11)"]
FAILS = [sys.executable, "-c", "import sys; print('loaded'); sys.exit('RuntimeError: llama_decode failed')"]
POINTS = {"decode_tps": (), "prefill_tps": ("ttft_s",), "batch16_tps": ()}


def test_faster_picks_the_higher_rate_or_the_lower_time():
    assert llama_c.faster({"on": 19.0, "off": 44.0}) == "off"
    assert llama_c.faster({"on": 1.2, "off": 0.9}, lower=True) == "off"
    assert llama_c.faster({"on": 5.0, "off": 5.0}) == "on"  # a tie: the first named
    assert llama_c.faster({"on": None, "off": float("nan")}) is None


def test_keep_faster_keeps_each_point_from_its_faster_run():
    on = {"engine": "llama.cpp", "flash_attn": "on", "decode_tps": 19.0, "prefill_tps": 300.0, "ttft_s": 0.4,
          "batch16_tps": 100.0, "peak_rss_mb": 200.0}
    off = {"engine": "llama.cpp", "flash_attn": "off", "decode_tps": 44.0, "prefill_tps": 250.0, "ttft_s": 0.5,
           "batch16_tps": 120.0, "peak_rss_mb": 260.0}
    row = llama_c.keep_faster({"on": on, "off": off}, POINTS)
    assert (row["decode_tps"], row["prefill_tps"], row["ttft_s"], row["batch16_tps"]) == (44.0, 300.0, 0.4, 120.0)
    assert row["peak_rss_mb"] == 260.0  # the other fields: the run kept for the first point (decode)
    assert row["flash_attn"] == {"decode_tps": "off", "prefill_tps": "on", "batch16_tps": "off"}
    assert row["flash_attn_runs"] == {"on": on, "off": off}
    note = llama_c.flash_attn_note(row["flash_attn"], row["flash_attn_tried"], {"decode_tps": "decode"})
    assert note == "llama.cpp: flash attention on (faster here) at prefill_tps; flash attention off (faster here) " \
                   "at decode, batch16_tps"


def test_keep_faster_passes_over_a_failed_setting_and_says_when_one_is_pinned():
    off = {"engine": "llama.cpp", "decode_tps": 44.0, "prefill_tps": 250.0, "ttft_s": 0.5, "batch16_tps": 120.0}
    row = llama_c.keep_faster({"on": {"engine": "llama.cpp", "skipped": "failed: x"}, "off": off}, POINTS)
    assert row["decode_tps"] == 44.0 and set(row["flash_attn"].values()) == {"off"}
    both_failed = llama_c.keep_faster({"on": {"engine": "e", "skipped": "a"}, "off": {"engine": "e", "skipped": "b"}},
                                      POINTS)
    assert both_failed["skipped"] == "flash attention on: a; flash attention off: b"
    same = {"engine": "llama.cpp", "skipped": "not installed"}
    assert llama_c.keep_faster({"on": same, "off": same}, POINTS) == same
    pinned = llama_c.keep_faster({"off": off}, POINTS)
    assert llama_c.flash_attn_note(pinned["flash_attn"], pinned["flash_attn_tried"]) == \
        "llama.cpp: flash attention off (--llama-flash-attn off)"


def test_the_probe_reads_a_childs_death():
    assert llama_c.run_probe(OK) is None
    assert llama_c.run_probe(SEGV_IN_DECODE) == "they crash llama_decode on this CPU (SIGSEGV)"
    assert llama_c.run_probe(SEGV_AT_LOAD) == "they crash llama.cpp's model load on this CPU (SIGSEGV)"
    assert llama_c.run_probe(FAILS) == "llama_decode fails with them on this CPU (RuntimeError: llama_decode failed)"
    hangs = [sys.executable, "-c", "import time; print('loaded', flush=True); time.sleep(30)"]
    assert llama_c.run_probe(hangs, timeout=2) == "llama_decode with them did not finish in 2 s"


def test_extra_buffer_types_go_off_only_where_they_alone_fail():
    assert llama_c.decide(lambda extra: OK) == (True, None, True)
    assert llama_c.decide(lambda extra: SEGV_IN_DECODE if extra else OK) == (
        False, "extra buffer types off: they crash llama_decode on this CPU (SIGSEGV)", True)
    assert llama_c.decide(lambda extra: SEGV_IN_DECODE) == (True, None, False)  # not theirs: nothing kept


def test_the_verdict_is_kept_per_cpu_version_and_file(tmp_path, monkeypatch):
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(llama_c, "_VERDICTS", {})
    monkeypatch.setattr(llama_c, "probe_command", lambda path, threads, gpu, extra: SEGV_IN_DECODE if extra else OK)
    on, note = llama_c.extra_bufts_work(model, 2)
    assert not on and "crash llama_decode" in note
    (kept,) = json.loads(llama_c.verdict_file().read_text()).values()
    assert kept["extra_bufts"] is False and kept["note"] == note
    monkeypatch.setattr(llama_c, "_VERDICTS", {})
    monkeypatch.setattr(llama_c, "probe_command", lambda *a: pytest.fail("asked again"))
    assert llama_c.extra_bufts_work(model, 2) == (False, note)  # read from the file
