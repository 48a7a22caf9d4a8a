"""Several Prometheus texts as one exposition: each family's HELP and TYPE once, then every source's samples of it
with a label naming the source (`model_name` for a server's models, `replica` for Ray's replicas)."""

from __future__ import annotations

import re

SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (.*)$")


def labelled(texts: dict[str, str], label: str, extra: list[str] = ()) -> str:
    """`texts`: source → its Prometheus text; `extra`: lines put first as they are."""
    families: dict[str, list[str]] = {}
    for source, text in sorted(texts.items()):
        family = None
        for line in text.splitlines():
            if line.startswith("# "):
                family = line.split()[2]
                head = families.setdefault(family, [])
                if line not in head:
                    head.append(line)
                continue
            m = SAMPLE.match(line)
            if m and family is not None:
                labels = f'{label}="{source}"' + (f",{m[2]}" if m[2] else "")
                families[family].append(f"{m[1]}{{{labels}}} {m[3]}")
    return "\n".join([*extra, *(line for lines in families.values() for line in lines)]) + "\n"
