"""Display names for the model menu: family, size and quantization read off the model file's name
("SmolLM2-135M-Instruct.Q4_1.gguf" → "SmolLM2 135M Instruct · Q4_1"). The id a request names stays the id."""

from __future__ import annotations

import re
from pathlib import Path

from ..loaded import LoadedModel
from ..packaged import DEFAULT_FILE, GEMMA3_FILE

# the file each name `forwardpass explore` offers stands for, known before it is loaded
FILES = {"smollm2-135m": Path(DEFAULT_FILE).name, "gemma3-270m": GEMMA3_FILE}
QUANT = re.compile(r"[.\-_]((?:I?Q\d+(?:_[A-Z0-9]+)*)|BF16|F16|F32)$", re.IGNORECASE)
SIZE = re.compile(r"^\d+(\.\d+)?[KMBT]$", re.IGNORECASE)


def from_file(name: str) -> str:
    """A model file's (or folder's) name → "Family Size Variant · QUANT"."""
    stem = re.sub(r"\.(gguf|safetensors)$", "", name, flags=re.IGNORECASE)
    quant = QUANT.search(stem)
    if quant:
        stem = stem[:quant.start()]
    words = [w.upper() if SIZE.match(w) else w.capitalize() if w.islower() else w
             for w in re.split(r"[-_ ]+", stem) if w]
    return " ".join(words) + (f" · {quant.group(1).upper()}" if quant else "")


def display_name(model_id: str, fp: LoadedModel | None) -> str:
    """The menu's name for `model_id`: from its file once loaded, from the file it stands for before; else the id."""
    if fp is not None and fp.source:
        path = Path(fp.source)
        return from_file(path.parent.name if path.suffix == ".safetensors" else path.name)  # a folder's shards
    return from_file(FILES[model_id]) if model_id in FILES else model_id


def unique(names: dict[str, str]) -> dict[str, str]:
    """Two ids with one display name (one file under two ids) keep apart: the later ones say their id."""
    seen: set[str] = set()
    out = {}
    for model_id, name in names.items():
        out[model_id] = name if name not in seen else f"{name} ({model_id})"
        seen.add(name)
    return out
