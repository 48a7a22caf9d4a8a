"""A chat model as every route reaches it: the server's settings, and the one path from a checked request to its
engine — the sampling parameters with the room left for new tokens, the constraint compiled, the engine's requests
submitted — with each failure in the API's own terms."""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field, replace

from fastapi import Request

from ..engine import Engine, RequestOutput
from ..engine.sequence import Error
from ..errors import ConstraintError, ForwardpassError
from ..sampling import SamplingParams
from ..structured.constraints import Constraint, Grammar
from . import tools
from .auth import partition
from .errors import APIError
from .submission import Submission

DEFAULT_MAX_TOKENS = 1024  # a chat request that names no limit gets this many (or what the context and pool leave)
COMPLETION_MAX_TOKENS = 16  # OpenAI's default for /v1/completions


@dataclass
class ServerConfig:
    model_name: str
    api_key: str | tuple[str, ...] | None = None  # requests must carry one of these (auth.py); each its own partition
    max_body_bytes: int = 1 << 20
    default_max_tokens: int = DEFAULT_MAX_TOKENS
    constraint_timeout: float = 10.0  # seconds a request's constraint may take to compile (and its time limit's rest)
    sampling: dict = field(default_factory=dict)  # defaults for the sampling fields a request leaves out (defaults.py)
    access_log: str | None = None  # one line per request: "text" or "json" (access_log.py); None: none
    cors_origins: tuple[str, ...] = ()  # origins whose browser pages may call the API ("*": any); none: same origin
    stored_responses: int = 512  # Responses API: responses kept for retrieve and previous_response_id


async def off_loop(fn, /, *args, **kwargs):
    """fn(*args, **kwargs) on a worker thread, awaited: tokenizing a text as long as the body limit allows takes a
    second or more in Python, and on the event loop it would hold every other request (and every stream) still as
    long."""
    return await asyncio.to_thread(fn, *args, **kwargs)


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
    """One chat model as the routes reach it: its engine, tokenizer and context, and the sampling its requests get for
    the fields they leave out (the server's flags over the file's own recommendation)."""

    def __init__(self, engine: Engine, config: ServerConfig, name: str | None = None, sampling: dict | None = None):
        self.engine, self.config = engine, config
        self.name = name or config.model_name
        self.sampling = config.sampling if sampling is None else sampling
        self.tokenizer, self.context = engine.loaded.tokenizer, engine.loaded.config.context_length
        self.leases = 0  # requests holding it (registry.py): it is not unloaded while any does
        self.weight_bytes = self.kv_bytes = 0  # what it holds in memory (counted against the registry's budget)

    @property
    def nbytes(self) -> int:
        return self.weight_bytes + self.kv_bytes

    def params_for(self, req, prompt_ids: list[int], max_tokens: int | None,
                   logprobs: int | None) -> list[SamplingParams]:
        """One SamplingParams per choice. With no max_tokens: the server's default, or less where the context or
        the pool leaves less room (a prompt that leaves none is refused)."""
        budget = max_tokens
        if budget is None:
            budget = min(self.config.default_max_tokens, self.engine.token_room(prompt_ids))
            budget = max(budget, 1)  # a prompt that leaves no room: check_request names why
        with constraint_errors(req):
            params = [req.sampling(budget, logprobs, i, self.sampling) for i in range(req.n)]
        predicted = getattr(req, "prediction", None)
        if predicted is not None:
            if self.engine.config.speculative == "off":
                raise ForwardpassError("prediction is served by drafting from it, which this server runs without "
                                       "(--speculative off)", "prediction")
            ids = self.tokenizer.encode_text(predicted.content)
            params = [replace(p, prediction=ids) for p in params]
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
            try:  # this request's own future: past the limit (or gone) it is cancelled, and a compile no request
                # waits for any more is not begun (one begun goes on, and is kept for the next request)
                return await asyncio.wait_for(compiling, max(limit, 0.0))
            except asyncio.TimeoutError:
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
        """The request's choices submitted to the engine, once its constraint is compiled (Submission), in the
        partition of its key and end user (auth.partition)."""
        arrival = time.perf_counter()
        grammar = await self.compiled(req, constraint, arrival)
        metadata = getattr(req, "metadata", None)
        user = getattr(req, "user", None) or getattr(metadata, "user_id", None)
        with constraint_errors(req):
            return Submission(self.engine, request, groups, grammar, arrival,
                              partition(request, self.config.api_key, user))


def tensor_bytes(model) -> int:
    """The bytes a PyTorch model's tensors hold, each storage once (a tied table, a view, counted once)."""
    from ..quant.layers import QuantizedLinear
    tensors = [*model.parameters(), *model.buffers()]
    for m in model.modules():
        if isinstance(m, QuantizedLinear):
            tensors += [t for t in (m.q, m.scale, m.minimum) if t is not None]
    storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in tensors}
    return sum(storages.values())


def opener(config: ServerConfig, load_options: dict, engine_config, flags: dict):
    """How the registry opens a model (in its engine thread): loaded with `load_options`, its engine made and woken by
    the registry's event, the sampling its requests get (`flags` over the file's recommendation), its bytes counted."""
    def open_model(spec, wake, progress: bool = False) -> Served:
        from ..loader import load
        from ..server_defaults import server_sampling
        fp = load(spec.typed, **load_options, progress=progress)
        engine = Engine(fp, engine_config, wake)
        served = Served(engine, config, spec.id, server_sampling(flags, fp.metadata.get("sampling", {})))
        served.weight_bytes = fp.model.nbytes() if fp.native else tensor_bytes(fp.model)
        served.kv_bytes = engine_config.kv_cache_bytes
        return served
    return open_model


def estimate(spec, storage: str, kv_bytes: int) -> int:
    """The bytes a model will hold once loaded, before it is: its file's size where it keeps the file's storage (or
    its parameters at the storage's bytes per weight), and its KV pool."""
    from ..article.cost import BYTES_PER_WEIGHT, parameters
    from ..weights import read_config
    path = spec.path
    if storage in BYTES_PER_WEIGHT:
        return int(parameters(read_config(path)).total * BYTES_PER_WEIGHT[storage]) + kv_bytes
    files = [path] if path.is_file() else list(path.glob("*.safetensors"))
    return sum(f.stat().st_size for f in files) + kv_bytes
