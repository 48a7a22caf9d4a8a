"""`--prompt-cache DIR` and `--prompt-cache-size SIZE` (generate, chat, serve, batch): the folder that keeps full KV
blocks across restarts (engine/prompt_cache/), checked before a model loads, and what each command hands its engine."""

from __future__ import annotations

import argparse
import os
import re
import tempfile
from pathlib import Path

from ..errors import ForwardpassError
from .options import checked

UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
DEFAULT_SIZE = "4G"


def parse_size(text: str) -> int | None:
    """Bytes from `500M`, `2G`, `1.5GiB`, `4096` (K, M, G, T: powers of 1024); None if it does not read so."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", text, re.IGNORECASE)
    return None if m is None else int(float(m[1]) * UNITS[m[2].upper()])


byte_size = checked(parse_size, lambda v: v > 0, "a size in bytes > 0 such as 500M, 2G or 4096")


def add_prompt_cache_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--prompt-cache", metavar="DIR", default=None,
                   help="keep full KV blocks in this folder (made if missing) and read them back instead of "
                        "computing a prompt's start again, across restarts; processes may share it")
    p.add_argument("--prompt-cache-size", metavar="SIZE", type=byte_size, default=byte_size(DEFAULT_SIZE),
                   help=f"the most the --prompt-cache folder holds, least recently used out first (default "
                        f"{DEFAULT_SIZE}; K, M, G, T: powers of 1024)")


def check_prompt_cache(args: argparse.Namespace) -> None:
    """--prompt-cache's folder made if missing, and refused now, by name, if it is not a folder this process can write
    in."""
    folder = getattr(args, "prompt_cache", None)
    if folder is None:
        return
    path = Path(folder).expanduser()
    if path.exists() and not path.is_dir():
        raise ForwardpassError(f"--prompt-cache {folder}: not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
        if not os.access(path, os.W_OK | os.X_OK):
            raise PermissionError(13, "Permission denied")
        with tempfile.NamedTemporaryFile(dir=path, prefix=".probe-", suffix=".tmp"):
            pass
    except OSError as e:
        raise ForwardpassError(f"--prompt-cache {folder}: cannot write there ({e.strerror or e})") from None
    args.prompt_cache = str(path)


def prompt_cache_config(args: argparse.Namespace) -> dict:
    """EngineConfig's fields for the prompt cache, as the options give them."""
    return {"prompt_cache": args.prompt_cache, "prompt_cache_bytes": args.prompt_cache_size}
