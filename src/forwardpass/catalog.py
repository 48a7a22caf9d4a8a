"""The models a command may name with --model: an installed name (`gemma3-270m`), a path, or `ALIAS=PATH`; each one's
id (the name typed, or the alias: the id it is served and reported under) and what its file says about it before it
is loaded (family, quantization, context length). `serve`, `batch` and `explore` read their models through here;
nothing here needs PyTorch."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from .errors import ForwardpassError
from .packaged import default_model_path, model_id, resolve_model

# llama.cpp's `general.file_type` (llama_ftype): the quantization a whole file is named by
FILE_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K", 11: "Q3_K_S",
              12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K",
              25: "IQ4_NL", 32: "BF16"}


@dataclass(frozen=True)
class ModelSpec:
    id: str  # what requests name it by
    typed: str | None  # the installed name or path as given; None: the embedded default

    @property
    def path(self) -> Path:
        """Its file (an installed name's, joined from its packages on first use)."""
        return default_model_path() if self.typed is None else resolve_model(self.typed)


def spec(text: str | None) -> ModelSpec:
    """One --model value → its spec. `ALIAS=PATH` names it ALIAS when the text before the first '=' is a plain name
    (no '/') and the whole text is not itself an existing path."""
    if text is None:
        return ModelSpec(model_id(None, default_model_path()), None)
    alias, eq, rest = text.partition("=")
    if eq and "/" not in alias and not Path(text).exists():
        if not alias.strip() or alias != alias.strip() or not rest:
            raise ForwardpassError(f"--model {text!r}: an alias is ALIAS=PATH, with a name before '=' and a model "
                                   f"after it")
        return ModelSpec(alias, rest)
    return ModelSpec(model_id(text, resolve_model(text)), text)


def specs(values: list[str] | None, served_name: str | None = None) -> list[ModelSpec]:
    """Every --model given (none: the embedded default), each with an id no other has; `served_name`
    (--served-model-name) renames the one model it may name."""
    listed = [spec(v) for v in values] if values else [spec(None)]
    seen: dict[str, ModelSpec] = {}
    for s in listed:
        if s.id in seen:
            raise ForwardpassError(f"two --model values are served as {s.id!r} ({seen[s.id].typed or 'the default'} "
                                   f"and {s.typed or 'the default'}): give one an alias, ALIAS=PATH")
        seen[s.id] = s
    if served_name is not None:
        if len(listed) > 1:
            raise ForwardpassError("--served-model-name names one model; with several --model, name each ALIAS=PATH")
        listed = [ModelSpec(served_name, listed[0].typed)]
    return listed


def describe(path: Path) -> dict:
    """What a model file says of itself without loading: family, quantization and trained context length."""
    from .weights import model_file, read_config
    path = model_file(path)
    context = read_config(path).context_length
    if path.is_file() and path.suffix != ".safetensors":
        from .weights.gguf_config import open_gguf
        reader = open_gguf(path)
        family = str(reader.fields.get("general.architecture", "unknown"))
        quant = FILE_TYPES.get(reader.fields.get("general.file_type"))
        if quant is None:  # the kind most of the matrices' weights are stored as
            kinds: Counter[str] = Counter()
            for t in reader.tensors:
                if len(t.shape) == 2:
                    kinds[t.kind.name] += t.n_elements
            quant = kinds.most_common(1)[0][0] if kinds else "unknown"
        return {"family": family, "quantization": quant, "context_length": context}
    directory = path if path.is_dir() else path.parent
    config = json.loads((directory / "config.json").read_text())
    return {"family": config.get("model_type", "unknown"),
            "quantization": str(config.get("torch_dtype", "unknown")).upper().replace("BFLOAT16", "BF16")
            .replace("FLOAT16", "F16").replace("FLOAT32", "F32"), "context_length": context}
