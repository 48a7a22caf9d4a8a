"""One line per request, once its response has ended: method and path, the model, tokens in and out, time to first
token, total time and status, as text or as a JSON object (`serve --log-format`). Streams are logged when they end,
with the tokens they carried; /health and /metrics, which supervisors poll, are not. What the client sent (the path,
the model it named) is cut, and in the text line escaped (quoting.py): a request is one line, whatever it holds."""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field

from .quoting import cut, shown

log = logging.getLogger("forwardpass.server.access")
QUIET = ("/health", "/metrics")


@dataclass
class Tally:
    """What a request's engine work came to (submission.py keeps it on request.state.tally)."""

    arrival: float
    prompt: dict[int, int] = field(default_factory=dict)  # prompt (its first choice) → its tokens
    completion: dict[int, int] = field(default_factory=dict)  # choice → tokens generated so far
    first_token_at: float | None = None

    def add(self, choice: int, prompt: int, prompt_tokens: int, completion_tokens: int, token: bool) -> None:
        self.prompt[prompt] = prompt_tokens
        self.completion[choice] = max(completion_tokens, self.completion.get(choice, 0))
        if token and self.first_token_at is None:
            self.first_token_at = time.perf_counter()


class AccessLog:
    """ASGI middleware around the API: logs each request as its response ends."""

    def __init__(self, app, as_json: bool = False):
        self.app, self.as_json = app, as_json

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] in QUIET:
            return await self.app(scope, receive, send)
        start, state, status = time.perf_counter(), scope.setdefault("state", {}), [500]

        async def sending(message):
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                self.record(scope, state, status[0], start)

        await self.app(scope, receive, sending)

    def record(self, scope, state: dict, status: int, start: float) -> None:
        tally: Tally | None = state.get("tally")
        model = state.get("model")
        entry = {"method": cut(scope["method"]), "path": cut(scope["path"]), "model": model and cut(model),
                 "status": status, "prompt_tokens": sum(tally.prompt.values()) if tally else None,
                 "completion_tokens": sum(tally.completion.values()) if tally else None,
                 "ttft_s": round(tally.first_token_at - start, 4) if tally and tally.first_token_at else None,
                 "total_s": round(time.perf_counter() - start, 4)}
        if self.as_json:  # ASCII: every control character and separator (U+2028 too) an escape
            log.info(json.dumps(entry, ensure_ascii=True))
            return
        said = [f"{shown(scope['method'])} {shown(scope['path'])}", str(status)]
        if model:
            said.append(shown(model))
        if tally:
            said.append(f"tokens {entry['prompt_tokens']} in, {entry['completion_tokens']} out")
        if entry["ttft_s"] is not None:
            said.append(f"first token {entry['ttft_s']:.3f} s")
        said.append(f"total {entry['total_s']:.3f} s")
        log.info(" · ".join(said))
