"""The PyTorch blocks (model.py) as the runner's back end: the reference path, checked mode, CUDA, and the families the
native step does not run. One call runs its chunks as one batch padded to the longest, over the pool's block tables
(PagedBatch), logits at each chunk's last position; no bursts, no drafts (BLOCKS)."""

from __future__ import annotations

from ..sampling import values
from .paged import BlockPool, PagedBatch
from .rows import BLOCKS, Rows, StepOutput


class BlocksStep:
    capabilities = BLOCKS

    def __init__(self, model, checked: bool = False):
        self.model, self.checked = model, checked  # checked: PagedBatch verifies every write

    def run(self, pool: BlockPool, rows: Rows) -> StepOutput:
        """Logits (chunks, vocab_size) at each chunk's last position as float32 numpy (the tensor's own memory on the
        CPU, a copy from another device); no chosen ids."""
        if rows.steps != 1:
            raise ValueError("greedy bursts run on the native step only")
        if any(c.every and len(c.ids) > 1 for c in rows.chunks):
            raise ValueError("drafts are verified on the native step only")
        import torch

        chunks = rows.chunks
        width = max(len(c.ids) for c in chunks)
        ids = [c.ids + [0] * (width - len(c.ids)) for c in chunks]  # (chunks, width), padded
        view = PagedBatch(pool, [c.table for c in chunks], [c.start for c in chunks], checked=self.checked)
        with torch.inference_mode():
            logits, _ = self.model(torch.tensor(ids, device=pool.k.device), view, n_tokens=[len(c.ids) for c in chunks],
                                   last_only=True)
        return StepOutput(values(logits[:, 0]), [[] for _ in chunks])
