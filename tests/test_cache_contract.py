"""One cache contract (kv_cache.Cache), two caches: the contiguous KVCache and the engine's paged view (its pool of
float32 pairs, or of q8_0 blocks) hold the seed's invariants the same way — t pairs after t tokens, positions =
lengths, and in checked mode no write that rewrites a pair a row held goes unnoticed."""

from __future__ import annotations

import pytest
import torch

from forwardpass import Transformer, preset
from forwardpass.engine import BlockPool
from forwardpass.engine.paged import PagedBatch
from forwardpass.errors import InvariantError
from forwardpass.kv_cache import Cache, KVCache
from forwardpass.kv_q8_0 import Q8_0

CONFIG = preset("toy").with_(vocab_size=60, context_length=32, positions="rope", norm="rmsnorm", ffn="swiglu",
                             bias=False, n_kv_heads=2)
KINDS = ["contiguous", "paged", "paged q8_0"]
CONFIGS = {kind: CONFIG for kind in KINDS} | {"paged q8_0": CONFIG.with_(n_heads=2, n_kv_heads=1)}  # head_dim 32


class Overwriting(KVCache):
    def _store(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> None:
        self.k[layer, :, :, :k.shape[2]], self.v[layer, :, :, :k.shape[2]] = k, v


class Paged:
    """A pool and the two rows' block tables; `view()` is the engine's per-step cache over them."""

    def __init__(self, tables: list[list[int]] | None = None, kind: str = "paged"):
        kv = Q8_0 if kind == "paged q8_0" else torch.float32
        self.pool = BlockPool(CONFIGS[kind], num_blocks=10, block_size=4, dtype=kv)
        self.tables = tables or [[self.pool.allocate() for _ in range(4)] for _ in range(2)]
        self.lengths = [0, 0]

    def view(self) -> Cache:
        return PagedBatch(self.pool, self.tables, self.lengths, checked=True)


@pytest.fixture(scope="module")
def models():
    """The model of each kind's config, in checked mode."""
    out = {}
    for kind, config in CONFIGS.items():
        torch.manual_seed(0)
        out[kind] = Transformer(config).eval()
        out[kind].checked = True
    return out


def alone(model, ids: torch.Tensor, kind: str) -> torch.Tensor:
    """Logits (T, vocab_size) of one sequence in one pass over a fresh cache of the kind (q8_0 pairs read as stored)."""
    if kind != "paged q8_0":
        return model(ids[None])[0][0]
    paged = Paged([[0, 1, 2]], kind)
    paged.lengths = [0]
    return model(ids[None], paged.view())[0][0]


@pytest.mark.parametrize("kind", KINDS)
def test_t_pairs_after_t_tokens_positions_equal_lengths(models, kind):
    model = models[kind]
    ids = torch.randint(0, 60, (2, 9))
    paged = Paged(kind=kind)
    cache = KVCache(CONFIG, 2, 32, checked=True) if kind == "contiguous" else None
    steps = [(0, 5, [5, 3]), (5, 6, [1, 1]), (6, 7, [1, 1])]  # row 1 takes 3 of its first 5 (right padding)
    logits = []
    with torch.inference_mode():
        for lo, hi, n in steps:
            view = cache if cache is not None else paged.view()
            before = [view.next_position(b) for b in range(2)]
            x = ids[:, lo:hi] if lo else ids[:, :5]
            if lo:  # the next token of each row sits right after its own length
                x = torch.stack([ids[b, before[b]:before[b] + 1] for b in range(2)])
            out, view = model(x, view, n_tokens=n)
            assert isinstance(view, Cache)
            assert view.lengths == [before[b] + n[b] for b in range(2)]  # t pairs after t tokens
            if cache is None:
                paged.lengths = view.lengths
            logits.append(out)
        each = [alone(model, ids[b, :view.lengths[b]], kind) for b in range(2)]
    assert (logits[-1][0, -1] - each[0][-1]).abs().max() < 1e-4  # positions = lengths: each row as alone
    assert (logits[-1][1, -1] - each[1][-1]).abs().max() < 1e-4


@pytest.mark.parametrize("kind", KINDS)
def test_a_write_onto_a_held_pair_is_caught_in_checked_mode(models, kind):
    model = models[kind]
    ids = torch.randint(0, 60, (1, 6))
    with torch.inference_mode():
        if kind == "contiguous":  # a cache whose writes land at slot 0, over the first pair
            view = Overwriting(CONFIG, 1, 32, checked=True)
            model(ids[:, :5], view)
        else:  # a table whose second block is its first: position 4 lands on position 0's slot
            paged = Paged(kind=kind)
            block = paged.tables[0][0]
            paged.tables, paged.lengths = [[block, block]], [0]
            model(ids[:, :4], paged.view())
            paged.lengths = [4]
            view = paged.view()
        with pytest.raises(InvariantError, match="rewrote a \\(K, V\\) pair it already held"):
            model(ids[:, 5:6], view)
