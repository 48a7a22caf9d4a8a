"""What starts without PyTorch (about 3 s of import here): `import forwardpass`, `--help`, `cost` on a file's
metadata, and every command's refusal of its options; and the package's names stay what they were."""

from __future__ import annotations

import subprocess
import sys

import pytest

PROBE = """
import sys
from forwardpass.cli import main
code = main(sys.argv[1:])
print("torch" in sys.modules, code)
"""


@pytest.mark.parametrize("args,code", [
    (["cost", "--json"], 0),
    (["cost", "--context", "0"], 2),
    (["serve", "--kv-cache-gib", "nan"], 2),
    (["serve", "--routing", "prefix"], 2),
    (["batch", "missing.jsonl", "out.jsonl"], 2),
    (["explore", "--port", "1", "--host", "256.0.0.1"], 2),
    (["generate", "hi", "--top-p", "0"], 2),
    (["chat", "--temperature", "nan"], 2),
    (["inspect", "hi", "--temperature", "-1"], 2),
    (["inspect", "hi", "--model", "missing.gguf"], 2),
    (["generate", "hi", "--model", "pyproject.toml"], 2),  # not a model file
    (["batch", "in.jsonl", "out.jsonl", "--model", "missing.gguf"], 2),
])
def test_commands_that_need_no_model_do_not_import_torch(args, code, tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\n")
    (tmp_path / "in.jsonl").write_text("{}\n")
    r = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert r.stdout.split()[-2:] == ["False", str(code)], r.stdout + r.stderr


def test_the_package_names_load_on_first_use():
    code = ("import sys, forwardpass; assert 'torch' not in sys.modules; import forwardpass.loop as loop; "
            "from forwardpass.loop import Generation; "
            "assert forwardpass.generate is loop.generate and forwardpass.generate.__name__ == 'generate'; "
            "assert forwardpass.Generation is Generation and forwardpass.load.__module__ == 'forwardpass.loader'; "
            "print([n for n in forwardpass.__all__ if n not in dir(forwardpass) or getattr(forwardpass, n) is None])")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "[]", r.stderr
