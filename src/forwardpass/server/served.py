"""What every route shares: the server's settings, and the one path from an HTTP request to the engine — the body
read and checked, the sampling parameters with the room left for new tokens, the constraint compiled, the engine's
requests submitted — with each failure in the API's own terms."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from dataclasses import dataclass, field

from fastapi import Request
from pydantic import BaseModel, ValidationError

from ..constraints import Constraint, Grammar
from ..embeddings import Embedder
from ..engine import Engine, RequestOutput
from ..engine.sequence import Error
from ..errors import ConstraintError
from ..sampling import SamplingParams
from . import tools
from .auth import authorize as check_key
from .body import read_body, refusal
from .errors import APIError
from .protocol import UNSUPPORTED
from .submission import Submission

DEFAULT_MAX_TOKENS = 1024  # a chat request that names no limit gets this many (or what the context and pool leave)
COMPLETION_MAX_TOKENS = 16  # OpenAI's default for /v1/completions


@dataclass
class ServerConfig:
    model_name: str
    api_key: str | None = None
    max_body_bytes: int = 1 << 20
    default_max_tokens: int = DEFAULT_MAX_TOKENS
    constraint_timeout: float = 10.0  # seconds a request's constraint may take to compile (and its time limit's rest)
    sampling: dict = field(default_factory=dict)  # defaults for the sampling fields a request leaves out (defaults.py)
    access_log: str | None = None  # one line per request: "text" or "json" (access_log.py); None: none
    cors_origins: tuple[str, ...] = ()  # origins whose browser pages may call the API ("*": any); none: same origin


def engine_error(error: Error, req) -> APIError:
    """The HTTP answer to a request the engine ended early (`req`: its body, whose constraint a refusal names)."""
    status, code = {"shutdown": (503, "server_shutdown"), "timeout": (504, "timeout"),
                    "constraint": (400, "invalid_constraint")}.get(error.kind, (500, None))
    return APIError(status, error.message, code, req.constraint_field if error.kind == "constraint" else None)


@contextlib.contextmanager
def constraint_errors(req, field: str | None = None):
    """A constraint that cannot be enforced is a 400 naming the field that carried it."""
    try:
        yield
    except ConstraintError as e:
        raise APIError(400, str(e), "invalid_constraint", field or req.constraint_field) from None


class Served:
    """The engine (and the embedding model, where the server has one) as the routes reach it."""

    def __init__(self, engine: Engine, config: ServerConfig, embedder: Embedder | None = None):
        self.engine, self.config, self.embedder = engine, config, embedder
        self.tokenizer, self.context = engine.pipeline.tokenizer, engine.pipeline.config.context_length
        self.created = int(time.time())
        self.embedding_lock = threading.Lock()  # one embedding batch at a time: each already uses every core

    def authorize(self, request: Request) -> None:
        check_key(request, self.config.api_key)

    async def body(self, request: Request, schema: type[BaseModel], unsupported: dict = UNSUPPORTED,
                   served: str | None = None) -> BaseModel:
        """The request's JSON body as `schema`, after its key: a 400 for what is not JSON or not the schema (a field
        it does not take named, `unsupported`'s with their reason), a 404 for another model than `served`."""
        self.authorize(request)
        raw = await read_body(request, self.config.max_body_bytes)
        try:
            data = json.loads(raw)
            json.dumps(data, ensure_ascii=False).encode()  # a lone surrogate escape ("\udfff") is no text
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise APIError(400, f"request body is not valid JSON: {e}") from None
        except UnicodeEncodeError:
            raise APIError(400, "request body holds an unpaired UTF-16 surrogate escape: not valid Unicode") from None
        except RecursionError:
            raise APIError(400, "request body is nested too deeply") from None
        try:
            parsed = schema.model_validate(data)
        except ValidationError as e:
            raise refusal(e, data, unsupported) from None
        served = served or self.config.model_name
        request.state.model = parsed.model or served  # for the access log
        if parsed.model is not None and parsed.model != served:
            raise APIError(404, f"model {parsed.model!r} does not exist; this server serves {served!r} here",
                           "model_not_found", "model")
        return parsed

    def params_for(self, req, prompt_ids: list[int], max_tokens: int | None,
                   logprobs: int | None) -> list[SamplingParams]:
        """One SamplingParams per choice. With no max_tokens: the server's default, or less where the context or
        the pool leaves less room (a prompt that leaves none is refused)."""
        budget = max_tokens
        if budget is None:
            budget = min(self.config.default_max_tokens, self.engine.token_room(prompt_ids))
            budget = max(budget, 1)  # a prompt that leaves no room: check_request names why
        with constraint_errors(req):
            params = [req.sampling(budget, logprobs, i, self.config.sampling) for i in range(req.n)]
        self.engine.check_request(prompt_ids, params[0])
        return params

    async def compiled(self, req, constraint: Constraint | None, arrival: float) -> Grammar | None:
        """The request's constraint compiled on a worker thread while the event loop goes on serving (once for all
        its choices and prompts); a 400 naming the field if it cannot be enforced or takes longer to compile than
        the server's limit, or than what is left of the request's time limit."""
        if constraint is None:
            return None
        limit = self.config.constraint_timeout
        if self.engine.config.request_timeout is not None:
            limit = min(limit, self.engine.config.request_timeout - (time.perf_counter() - arrival))
        compiling = asyncio.wrap_future(self.engine.grammars.submit(constraint))
        with constraint_errors(req):
            try:  # shielded: the compile goes on for the others waiting on it, and is kept for the next request
                return await asyncio.wait_for(asyncio.shield(compiling), max(limit, 0.0))
            except asyncio.TimeoutError:
                compiling.add_done_callback(lambda f: f.cancelled() or f.exception())  # its outcome is not ours now
                raise ConstraintError(f"the constraint did not compile within {limit:.3g} s, the server's limit: make "
                                      f"it smaller or simpler") from None

    def piece(self, token_id: int) -> str:
        return self.tokenizer.piece(token_id) if self.tokenizer is not None else str(token_id)

    def chat_logprob(self, out: RequestOutput) -> dict:
        lp = out.logprob
        token_bytes = self.tokenizer.token_bytes
        return {"token": self.piece(lp.token_id), "logprob": lp.logprob, "bytes": list(token_bytes(lp.token_id)),
                "top_logprobs": [{"token": self.piece(i), "logprob": v, "bytes": list(token_bytes(i))}
                                 for i, v in lp.top]}

    def chat_ids(self, messages: list, add_generation_prompt: bool = True, functions: dict | None = None) -> list[int]:
        """The ids of messages (and the tools they may call) rendered through the model's chat template, as the
        chat route runs them."""
        if self.tokenizer is None or not self.tokenizer.chat_template:
            raise APIError(400, "this model has no chat template: send a prompt (to /v1/completions), not messages",
                           param="messages")
        takes = self.tokenizer.template_takes_tools
        with constraint_errors(None, "messages"):
            rendered = tools.render([m.model_dump(exclude_none=True) for m in messages], functions or {}, takes)
        declared = [{"type": "function", "function": f} for f in (functions or {}).values()] if takes else None
        return self.tokenizer.encode_chat(rendered, add_generation_prompt, declared)

    def need_tokenizer(self) -> None:
        if self.tokenizer is None:
            raise APIError(400, "this model has no tokenizer")

    async def submit(self, request: Request, req, groups: list[tuple[list[int], list[SamplingParams]]],
                     constraint: Constraint | None) -> Submission:
        """The request's choices submitted to the engine, once its constraint is compiled (Submission)."""
        arrival = time.perf_counter()
        grammar = await self.compiled(req, constraint, arrival)
        with constraint_errors(req):
            return Submission(self.engine, request, groups, grammar, arrival)
