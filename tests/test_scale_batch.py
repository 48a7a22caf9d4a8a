"""`forwardpass batch --replicas 2` on a local Ray cluster the command starts and stops (1 thread per actor).
Skipped without the extra forwardpass[ray]."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("ray.data", reason="the extra forwardpass[ray] is not installed")


def test_batch_on_ray_data_resumes_stops_and_answers_as_the_local_engine(smollm, tmp_path):
    """`batch --replicas 2`: 32 requests (and a line that is not one) through Ray Data's engine actors. It resumes
    a file a local run left cut mid-line, SIGINT leaves an ordered prefix, a local run completes it, and every answer
    is the local engine's (200 requests through the local engine alone: test_batch.py)."""
    from test_batch import answers, batch, interrupted, rows, write_requests

    asked = [json.loads(line) for line in write_requests(tmp_path / "in.jsonl", 32, max_tokens=8)]
    for r in asked[-4:]:  # the last four answer at length: the run cannot end within seconds of its first answers
        r["body"] |= {"max_tokens": 96, "ignore_eos": True}
    (tmp_path / "in.jsonl").write_text("\n".join([json.dumps(r) for r in asked] + ["{not json"]) + "\n")
    batch(smollm, tmp_path / "in.jsonl", tmp_path / "local.jsonl")
    local = (tmp_path / "local.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "out.jsonl").write_text("".join(local[:12]) + local[12][:40])  # a run cut mid-write
    cmd = [sys.executable, "-m", "forwardpass", "batch", str(tmp_path / "in.jsonl"), str(tmp_path / "out.jsonl"),
           "--json", "--served-model-name", "m", "--replicas", "2", "--threads-per-replica", "1", "--storage", "fp32",
           "--kv-cache-gib", "0.125", "--concurrency", "4"]
    out, err = interrupted(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                            start_new_session=True), tmp_path / "out.jsonl", 16)
    first = json.loads(out)  # stdout is the report alone: Ray's own notices went to stderr
    done = rows(tmp_path / "out.jsonl")
    assert first["interrupted"] and first["skipped"] == 12 and 16 <= len(done) < 33
    assert [r["custom_id"] for r in done] == [f"r{i}" for i in range(len(done))]
    again = batch(smollm, tmp_path / "in.jsonl", tmp_path / "out.jsonl")
    assert again.skipped == len(done) and not again.interrupted
    assert answers(rows(tmp_path / "out.jsonl")) == answers(rows(tmp_path / "local.jsonl"))
    assert rows(tmp_path / "out.jsonl")[-1]["error"]["message"].startswith("line 33 is not JSON")
