"""`forwardpass ARGS` run in the test's own process: the CLI's `main` with its streams captured, each model loaded
once. For the many option variations; the tests that start the real entry point keep a few subprocess runs."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from collections.abc import Callable, Iterator

Run = Callable[..., subprocess.CompletedProcess]


@contextlib.contextmanager
def in_process() -> Iterator[Run]:
    """A `run(*args, stdin=None)` that returns what `subprocess.run` would: exit status, stdout and stderr."""
    from forwardpass import loader
    from forwardpass.cli import main

    real, loaded = loader.load, {}

    def load(*args, progress: bool = True, **kwargs):  # the same model for the same arguments, without reloading
        key = repr((args, sorted(kwargs.items())))
        if key not in loaded:
            loaded[key] = real(*args, progress=False, **kwargs)
        return loaded[key]

    def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            saved, sys.stdin = sys.stdin, io.StringIO(stdin or "")
            try:
                code = main(list(args))
            except SystemExit as e:  # argparse's refusals
                code = e.code if isinstance(e.code, int) else 1
            finally:
                sys.stdin = saved
        return subprocess.CompletedProcess(["forwardpass", *args], code, out.getvalue(), err.getvalue())

    loader.load = load
    try:
        yield run
    finally:
        loader.load = real
