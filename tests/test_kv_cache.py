"""The KV cache (seed §05): exact bytes, append-only, positions, guarded capacity, and the two silent bugs."""

from __future__ import annotations

import pytest
import torch

from forwardpass import KVCache, Transformer, preset
from forwardpass.article.bugs import NaiveRingCache, StuckPositionCache
from forwardpass.errors import ContextLengthError, InvariantError


def test_bytes_equal_the_formula_and_the_allocation(smollm):
    c = smollm.config
    cache = smollm.model.new_cache(batch=2, capacity=100)
    allocated = cache.k.numel() * cache.k.element_size() + cache.v.numel() * cache.v.element_size()
    formula = 2 * c.n_layers * c.kv_heads * c.head_dim * 100 * 4 * 2  # K and V, fp32, two rows
    assert cache.nbytes() == allocated == formula == 2 * 30 * 3 * 64 * 100 * 4 * 2
    assert cache.nbytes(tokens=1) // 2 == 46_080  # one token of one sequence


def test_t_pairs_after_t_tokens_and_append_only(smollm):
    model = smollm.model
    model.checked = True
    try:
        cache = model.new_cache(1, 32)
        ids = smollm.encode("The quick brown fox jumps over the lazy dog")
        with torch.inference_mode():
            model(torch.tensor([ids[:5]]), cache)
            assert cache.lengths == [5]
            first = cache.k[:, 0, :, :5].clone()
            for t, tok in enumerate(ids[5:], start=6):
                model(torch.tensor([[tok]]), cache)
                assert cache.lengths == [t] and cache.next_position() == t
            assert torch.equal(cache.k[:, 0, :, :5], first)  # existing pairs never recomputed or rewritten
    finally:
        model.checked = False


def test_guard_refuses_to_wrap(smollm):
    model = smollm.model
    cache = model.new_cache(1, 8)
    with torch.inference_mode():
        model(torch.tensor([list(range(100, 108))]), cache)
        with pytest.raises(ContextLengthError, match="room for 8"):
            model(torch.tensor([[5]]), cache)
    assert cache.lengths == [8]


def test_naive_ring_buffer_fails_silently_and_the_checks_catch_it(smollm):
    """W-ring-overflow: past slot 7 a ring overwrites slot 0, which attention still needs."""
    model, ids = smollm.model, smollm.encode("One two three four five six seven eight nine ten")
    assert len(ids) == 10
    with torch.inference_mode():
        right, _ = model(torch.tensor([ids]))
        ring = NaiveRingCache(model.config, 1, 8)
        model(torch.tensor([ids[:8]]), ring)
        wrong = [model(torch.tensor([[t]]), ring)[0][0, -1] for t in ids[8:]]  # no error, no crash
        assert ring.overwritten() == [0, 1]
        assert (wrong[-1] - right[0, -1]).abs().max() > 1.0  # silently wrong scores
        ring = NaiveRingCache(model.config, 1, 8, checked=True)
        model(torch.tensor([ids[:8]]), ring)
        with pytest.raises(InvariantError, match="rewrote a \\(K, V\\) pair"):
            model(torch.tensor([[ids[8]]]), ring)
        with pytest.raises(ContextLengthError, match="never overwritten silently"):  # the real cache's guard
            guarded = model.new_cache(1, 8)
            model(torch.tensor([ids[:8]]), guarded)
            model(torch.tensor([[ids[8]]]), guarded)


def test_position_zero_bug_diverges_and_checked_mode_catches_it(smollm):
    """W-position-bug: writing position 0 for every new token instead of the cache's length."""
    model, ids = smollm.model, smollm.encode("The capital of France is Paris, and the capital of Italy is")
    with torch.inference_mode():
        right, _ = model(torch.tensor([ids]))
        stuck = StuckPositionCache(model.config, 1, 64)
        model(torch.tensor([ids[:4]]), stuck)
        wrong = torch.stack([model(torch.tensor([[t]]), stuck)[0][0, -1] for t in ids[4:]])
        diff = (wrong - right[0, 4:]).abs().amax(dim=-1)
        assert (diff > 1.0).all()  # every later token scored as if it were the first: no exception
        assert (wrong.argmax(-1) != right[0, 4:].argmax(-1)).any()
        model.checked = True
        try:
            stuck = StuckPositionCache(model.config, 1, 64)
            model(torch.tensor([ids[:4]]), stuck)
            with pytest.raises(InvariantError, match="new token at position 0, but the cache holds 4 tokens"):
                model(torch.tensor([[ids[4]]]), stuck)
        finally:
            model.checked = False


def test_sliding_policy_keeps_positions_right():
    torch.manual_seed(3)
    config = preset("toy").with_(vocab_size=60, context_length=64, positions="rope", norm="rmsnorm",
                                 ffn="swiglu", bias=False)
    model = Transformer(config).eval()
    ids = torch.randint(0, 60, (1, 20))
    with torch.inference_mode():
        cache = model.new_cache(1, 8, policy="sliding")
        steps = [model(ids[:, :6], cache)[0]] + [model(ids[:, t:t + 1], cache)[0] for t in range(6, 20)]
        assert cache.lengths == [8] and cache.start == [12] and cache.next_position() == 20
        windowed = Transformer(config.with_(sliding_window=8)).eval()  # the same weights, attending 8 back
        windowed.load_state_dict(model.state_dict())
        reference, _ = windowed(ids)
    assert (torch.cat(steps, 1) - reference).abs().max().item() <= 1e-4


def test_sliding_needs_rope_and_policy_is_named():
    with pytest.raises(ContextLengthError, match="sliding cache needs RoPE"):
        KVCache(preset("toy"), 1, 8, policy="sliding")
    with pytest.raises(ContextLengthError, match="unknown cache policy 'wrap'"):
        KVCache(preset("toy"), 1, 8, policy="wrap")


@pytest.mark.parametrize("positions", ["rope", "learned"])
def test_ragged_rows_never_read_what_memory_held(positions):
    """Rows of different lengths: a shorter row's attention spans, masked out, slots it never wrote. Whatever the
    memory held there (NaN here) changes nothing: the same logits as a cache of zeros, and as each row alone."""
    torch.manual_seed(3)
    config = preset("toy").with_(vocab_size=60, context_length=64, positions=positions)
    model = Transformer(config).eval()

    def run(fill: float, rows: list[int]) -> list[torch.Tensor]:
        prompts, steps = [[1, 2, 3, 4, 5], [6, 7]], [[9, 10], [11, 12]]
        cache = KVCache(config, len(rows), 32)
        cache.k.fill_(fill)
        cache.v.fill_(fill)
        padded = torch.tensor([prompts[r] + [0] * (5 - len(prompts[r])) for r in rows])
        with torch.inference_mode():
            first, _ = model(padded, cache, n_tokens=[len(prompts[r]) for r in rows], last_only=True)
            return [first] + [model(torch.tensor([[steps[r][i]] for r in rows]), cache)[0] for i in range(2)]

    garbage, zeros = run(float("nan"), [0, 1]), run(0.0, [0, 1])
    assert all(torch.equal(g, z) and bool(g.isfinite().all()) for g, z in zip(garbage, zeros, strict=True))
    for r in (0, 1):
        alone = run(float("nan"), [r])
        assert all(torch.allclose(g[r], a[0], atol=1e-5) for g, a in zip(garbage, alone, strict=True))
