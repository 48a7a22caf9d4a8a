"""The Makefile's set-up, read as text: on a fresh machine `make demo` and `make test` print nothing alarming that is
not an error."""

from __future__ import annotations

from pathlib import Path

MAKEFILE = Path(__file__).resolve().parent.parent / "Makefile"


def recipe(target: str) -> list[str]:
    """The commands of `target`'s rule, a line continued with a backslash as one."""
    lines = MAKEFILE.read_text().replace("\\\n", " ").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{target}:"))
    commands = []
    for line in lines[start + 1:]:
        if not line.startswith("\t"):
            break
        commands.append(line.strip())
    return commands


def test_the_packages_installed_without_their_dependencies_come_after_every_resolver_run():
    """The models' packages are installed --no-deps (only their files are read): a resolver run after them reports
    the programs they declare as missing (pip's "ERROR: … dependency resolver …"). The set-up installs them last, and
    `make ray`'s resolver run is told not to report them."""
    installs = [line for line in recipe("$(VENV)/.installed") if "pip install" in line]
    bare = [i for i, line in enumerate(installs) if "--no-deps" in line]
    resolved = [i for i, line in enumerate(installs) if "--no-deps" not in line]
    assert bare and resolved and max(resolved) < min(bare), installs
    assert [line for line in recipe("ray") if "pip install" in line and "--no-warn-conflicts" not in line] == []
