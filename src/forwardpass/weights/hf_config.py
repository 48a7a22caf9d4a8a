"""A Hugging Face checkpoint's config.json → ModelConfig, through the family its model_type names (no tensor is read,
and nothing here needs PyTorch)."""

from __future__ import annotations

import json
from pathlib import Path

from ..config import ModelConfig
from ..errors import ModelFileError
from ..models import Family, by_model_type


def safetensors_config(path: Path) -> tuple[ModelConfig, Family]:
    """The checkpoint's ModelConfig and family, from its config.json alone."""
    directory = path if path.is_dir() else path.parent
    config_path = directory / "config.json"
    if not config_path.exists():
        raise ModelFileError(f"{directory}: no config.json beside the safetensors weights")
    try:
        c = json.loads(config_path.read_text())
        family = by_model_type(c.get("model_type"), str(config_path))
        config = family.hf_config(c, c.get("_name_or_path") or directory.name, str(config_path))
    except KeyError as e:
        raise ModelFileError(f"{config_path}: lacks {e.args[0]}") from None
    except (json.JSONDecodeError, TypeError) as e:
        raise ModelFileError(f"{config_path}: not a valid config ({e})") from None
    return config, family
