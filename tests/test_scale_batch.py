"""`forwardpass batch --replicas 2` on a local Ray cluster the command starts and stops (1 thread per actor).
Skipped without the extra forwardpass[ray]."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("ray.data", reason="the extra forwardpass[ray] is not installed")


def test_batch_on_ray_data_answers_200_in_order_resumes_and_stops(smollm, tmp_path):
    """`batch --replicas 2`: 200 requests (and a line that is not one) through Ray Data's engine actors. The run
    resumes a file a local run left cut mid-line and is stopped by SIGINT, leaving an ordered prefix; a local run
    completes it: 200 answers in order, each the local engine's (200 on the local engine alone, every answer
    compared: test_batch.py)."""
    from test_batch import answers, assert_answered_as_alone, batch, interrupted, rows, write_requests

    lines = write_requests(tmp_path / "in.jsonl", 200, extra=["{not json"])
    (tmp_path / "first.jsonl").write_text("\n".join(lines[:13]) + "\n")
    batch(smollm, tmp_path / "first.jsonl", tmp_path / "local.jsonl")  # the local engine's first 13 answers
    local = (tmp_path / "local.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "out.jsonl").write_text("".join(local[:12]) + local[12][:40])  # a run cut mid-write
    cmd = [sys.executable, "-m", "forwardpass", "batch", str(tmp_path / "in.jsonl"), str(tmp_path / "out.jsonl"),
           "--json", "--served-model-name", "m", "--replicas", "2", "--threads-per-replica", "1", "--storage", "fp32",
           "--kv-cache-gib", "0.125", "--concurrency", "4"]
    out, err = interrupted(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                            start_new_session=True), tmp_path / "out.jsonl", 40)
    first = json.loads(out)  # stdout is the report alone: Ray's own notices went to stderr
    done = rows(tmp_path / "out.jsonl")
    assert first["interrupted"] and first["skipped"] == 12 and 40 <= len(done) < 201
    assert [r["custom_id"] for r in done] == [f"r{i}" for i in range(len(done))]
    assert answers(done[:13]) == answers(rows(tmp_path / "local.jsonl"))  # the cut answer, answered again on Ray
    again = batch(smollm, tmp_path / "in.jsonl", tmp_path / "out.jsonl")  # Ray's file, completed locally
    assert again.skipped == len(done) and again.succeeded + again.failed == 201 - len(done) and not again.interrupted
    final = rows(tmp_path / "out.jsonl")
    assert [r["custom_id"] for r in final[:200]] == [f"r{i}" for i in range(200)]
    assert final[200]["error"]["message"].startswith("line 201 is not JSON") and len(final) == 201
    assert_answered_as_alone(smollm, final, (0, 13, 57, 120, 199))  # chats and completions, from both runs
