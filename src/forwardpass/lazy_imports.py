"""A package's names whose modules are imported on first use (PEP 562): what needs PyTorch loads only when asked."""

from __future__ import annotations

import importlib
from collections.abc import Callable


def lazy_names(package: str, names: dict[str, str], namespace: dict) -> Callable[[str], object]:
    """The package's module `__getattr__`: `names` maps each name to the submodule that defines it; once imported,
    the name is kept in `namespace` (the package's globals), so the next lookup is a plain one."""
    def __getattr__(name: str):
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{names[name]}", package), name)
        namespace[name] = value
        return value
    return __getattr__
