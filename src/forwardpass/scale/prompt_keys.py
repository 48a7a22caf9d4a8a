"""A request's prompt as the router reads it: one text in order, cut into chunks whose prefixes are hashed, as a block
table chains its blocks' hashes (equal hashes: equal prefixes). No Ray here: the ingress makes the keys, the router
(router.py) compares them."""

from __future__ import annotations

import hashlib
import json

CHUNK = 64  # characters of prompt text per hashed chunk (roughly a 16-token block)


def route_key(path: str, body: bytes) -> str:
    """The request's prompt as one text in order (system or instructions, then each message's or input item's role
    and content), or "" when the request has none (or is not JSON: the replica answers that)."""
    try:
        data = json.loads(body) if body else None
    except (json.JSONDecodeError, UnicodeDecodeError):
        return ""
    if not isinstance(data, dict):
        return ""
    if path.endswith("/completions") and not path.endswith("/chat/completions"):
        prompt = data.get("prompt", "")
        return prompt if isinstance(prompt, str) else json.dumps(prompt)
    parts = []
    for first in ("system", "instructions"):  # the Messages API's system prompt, the Responses API's instructions
        if first in data:
            parts.append(f"{first}\x1f" + json.dumps(data[first], ensure_ascii=False))
    turns = data.get("messages") or []
    if path.endswith("/responses"):
        given = data.get("input")
        turns = [{"role": "user", "content": given}] if isinstance(given, str) else given or []
    for turn in turns if isinstance(turns, list) else []:
        if isinstance(turn, dict):
            content = turn.get("content")
            text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
            parts.append(f"{turn.get('role')}\x1f{text}")
    return "\x1e".join(parts)


def prefix_hashes(key: str, chunk: int = CHUNK) -> list[str]:
    """One hash per whole chunk of `key`, each covering everything before it too (equal hashes: equal prefixes)."""
    hashes, h = [], b""
    for start in range(0, len(key) - chunk + 1, chunk):
        h = hashlib.blake2b(h + key[start:start + chunk].encode("utf-8", "surrogatepass"), digest_size=12).digest()
        hashes.append(h.hex())
    return hashes
