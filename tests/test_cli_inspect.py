"""`forwardpass inspect` on the real model, run as both entry points."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys

import pytest

from forwardpass.cli.inspect_cmd import inspect


def test_inspect_report(smollm):
    report = inspect(smollm, "the cat and the dog and the bird", top=5, temperature=1.0)
    pieces = [t["piece"] for t in report["tokens"]]
    assert pieces == ["the", " cat", " and", " the", " dog", " and", " the", " bird"]
    # repeated words share an id and therefore an embedding row
    assert report["tokens"][6]["same_as_position"] == 3 and report["tokens"][6]["id"] == report["tokens"][3]["id"]
    assert report["tokens"][6]["embedding_head"] == report["tokens"][3]["embedding_head"]
    ids = [t["id"] for t in report["tokens"]]
    logits = smollm.next_token_logits(ids)
    top = report["next"]
    assert [r["id"] for r in top] == logits.topk(5).indices.tolist()
    z = math.log(sum(math.exp(v) for v in logits.double().tolist()))
    for r in top:
        assert r["probability"] == pytest.approx(math.exp(r["logit"] - z), rel=1e-4)


def test_inspect_temperature_zero_is_argmax(smollm):
    report = inspect(smollm, "the cat sat on the", top=3, temperature=0)
    assert report["next"][0]["probability"] == 1.0 and report["next"][1]["probability"] == 0.0


@pytest.mark.parametrize("entry", [[sys.executable, "-m", "forwardpass"], ["forwardpass"]])
def test_inspect_json_both_entry_points(entry):
    if entry == ["forwardpass"]:
        exe = shutil.which("forwardpass") or str(__import__("pathlib").Path(sys.executable).with_name("forwardpass"))
        entry = [exe]
    r = subprocess.run([*entry, "inspect", "the cat sat on the", "--top", "3", "--json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert [t["id"] for t in report["tokens"]] == [1195, 2644, 2643, 335, 260]
    assert len(report["next"]) == 3 and report["next"][0]["piece"] == " golden"


def test_inspect_table_output():
    r = subprocess.run([sys.executable, "-m", "forwardpass", "inspect", "the cat and the dog", "--top", "2"],
                       capture_output=True, text=True, timeout=300, env={"COLUMNS": "120", "PATH": ""})
    assert r.returncode == 0, r.stderr
    assert "same id and row as position 0" not in r.stdout  # 'the' and ' the' are different tokens
    assert "' dog'" in r.stdout and "next token" in r.stdout
