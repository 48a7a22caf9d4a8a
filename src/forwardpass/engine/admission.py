"""What a request must be to enter the engine, checked before anything is queued, and the Sequence it becomes."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import ContextLengthError, ForwardpassError
from ..sampling import SamplingParams, make_generator
from ..structured.constraints import Grammar
from ..text.detokenize import TextStream
from .sequence import RequestOutput, Sequence
from .speculation import Drafter, Predicted

if TYPE_CHECKING:  # named in annotations only: admission itself needs no PyTorch
    from ..loaded import LoadedModel
    from .paged import BlockPool


def check_request(loaded: LoadedModel, pool: BlockPool, prompt_ids: list[int], params: SamplingParams) -> None:
    """Raise a clear error for a request that can never be served."""
    context = loaded.config.context_length
    loaded.check_prompt(prompt_ids)
    if len(prompt_ids) + params.max_tokens > context:
        raise ContextLengthError(f"max_tokens {params.max_tokens} does not fit: the prompt is {len(prompt_ids)} "
                                 f"tokens and the context length is {context}", "max_tokens")
    vocab = loaded.config.vocab_size
    for what, ids in (("logit_bias", params.logit_bias), ("stop_token_ids", params.stop_token_ids),
                      ("prediction", params.prediction)):
        if any(token_id >= vocab for token_id in ids):
            raise ForwardpassError(f"{what} names token {max(ids)}: the vocabulary has {vocab}", what)
    blocks = -(-(len(prompt_ids) + params.max_tokens) // pool.block_size)
    if blocks > pool.num_blocks:
        raise ContextLengthError(f"the request needs {blocks} KV blocks but the pool holds {pool.num_blocks}")


def token_room(loaded: LoadedModel, pool: BlockPool, prompt_ids: list[int]) -> int:
    """The most tokens a request with this prompt may ask for: what the context and the pool leave."""
    return min(loaded.config.context_length, pool.num_blocks * pool.block_size) - len(prompt_ids)


def new_sequence(loaded: LoadedModel, request_id: str, prompt_ids: list[int], params: SamplingParams,
                 on_output: Callable[[RequestOutput], None], grammar: Grammar | None, arrival: float | None,
                 timeout: float | None, partition: str = "") -> Sequence:
    """The request as the engine keeps it: its sampler, its text stream, its end-of-turn ids, its grammar's matcher
    (`grammar`: params.constraint compiled), when it arrived and when its time runs out."""
    tok = loaded.tokenizer
    eos = params.end_ids(tok.eos_ids if tok is not None else [])
    arrival = arrival if arrival is not None else time.perf_counter()
    predicted = Predicted(params.prediction, len(prompt_ids)) if params.prediction else None
    return Sequence(request_id, list(prompt_ids), params, make_generator(params),
                    TextStream(tok, params.stop) if tok is not None else None, on_output, eos, arrival,
                    arrival + timeout if timeout is not None else None,
                    grammar.matcher() if grammar is not None else None, partition, Drafter(predicted=predicted))
