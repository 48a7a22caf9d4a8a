"""A sequence stepped token by token over a pool of one, as the engine's runner steps it: the prompt prefilled, then
each token, all through the native step or all through the PyTorch blocks."""

from __future__ import annotations

import numpy as np
import torch

from forwardpass.engine import BlockPool
from forwardpass.engine.rows import NATIVE, Chunk, Rows, StepOutput
from forwardpass.engine.runner import Runner


def as_tensor(x) -> torch.Tensor:
    """A torch tensor of `x`'s own numbers, never sharing its memory: a numpy array (the native step's logits, valid
    only until its next call) copied, a tensor cloned."""
    return torch.from_numpy(np.array(x, copy=True)) if isinstance(x, np.ndarray) else x.clone()


def prefill(runner: Runner, chunks: list[tuple[list[int], list[int], int]]) -> np.ndarray:
    """Logits at each chunk's last token, chunk (ids, table, start) run through the runner's one verb."""
    return runner.step(Rows([Chunk(ids, table, start) for ids, table, start in chunks])).logits


def decode(runner: Runner, tokens: list[int], lengths: list[int], tables: list[list[int]], n: int = 1) -> StepOutput:
    """A decode row for each token (n > 1: a greedy burst), through the runner's one verb."""
    return runner.step(Rows([Chunk([t], table, at) for t, at, table in zip(tokens, lengths, tables, strict=True)], n))


def pool_of_one(model, tokens: int, kv: str | torch.dtype = "float32", block_size: int = 16):
    """A pool just large enough for one sequence of `tokens`, and that sequence's block table."""
    pool = BlockPool(model.config, -(-tokens // block_size), block_size, kv, model.device)
    return pool, [pool.allocate() for _ in range(pool.num_blocks)]


@torch.inference_mode()
def stepped(model, prompt: list[int], tokens: list[int], native: bool = True, kv: str | torch.dtype = "float32",
            block_size: int = 16) -> torch.Tensor:
    """Logits (len(tokens), vocab_size): each token's, stepped after the prompt and the tokens before it. `native`:
    through the native step (which must bind), else through the PyTorch blocks."""
    pool, table = pool_of_one(model, len(prompt) + len(tokens), kv, block_size)
    runner = Runner(model, pool, reference=not native)
    if native:
        assert runner.capabilities is NATIVE, "the native step does not bind this model and pool"
    prefill(runner, [(prompt, table, 0)])
    rows = [as_tensor(decode(runner, [token], [len(prompt) + i], [table]).logits[0]) for i, token in enumerate(tokens)]
    return torch.stack(rows)


def run(engine, prompts: list[list[int]], params: list) -> list[list]:
    """Each request's outputs, the requests submitted together and the engine stepped until all finish."""
    outs: dict[str, list] = {}
    ids = [engine.submit(p, q, lambda o: outs.setdefault(o.request_id, []).append(o))
           for p, q in zip(prompts, params, strict=True)]
    engine.run_until_done()
    return [outs[i] for i in ids]
