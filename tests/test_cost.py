"""The cost model (seed §04, §06): every number in the article, and the formulas held against measurement."""

from __future__ import annotations

from fractions import Fraction

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch.utils.flop_counter import FlopCounterMode

from forwardpass import PRESETS, ModelConfig, Transformer, cost, preset

GPT2, GPT3 = preset("gpt2-small"), preset("gpt3-175b")


def test_gpt2_small_124m():
    p = cost.parameters(GPT2)
    assert p.total == 124_439_808
    V, C, N, d = 50257, 1024, 12, 768
    assert p.total == V * d + C * d + N * (12 * d * d + 13 * d) + 2 * d


def test_each_block_about_7m():
    assert cost.parameters(GPT2).per_block == 7_087_872


def test_depth_48_is_three_times():
    deep = cost.parameters(GPT2.with_(n_layers=48)).total
    assert round(deep / 1e6, 1) == 379.6
    assert round(deep / cost.parameters(GPT2).total) == 3
    totals = [cost.parameters(GPT2.with_(n_layers=n)).total for n in range(1, 60)]
    steps = {b - a for a, b in zip(totals, totals[1:], strict=False)}
    assert steps == {7_087_872}  # a straight line in N


@given(st.integers(min_value=1, max_value=100_000))
def test_block_is_12_d_squared_with_ffn_two_thirds_at_any_width(d):
    attention, ffn = cost.block_matrix_split(d)
    assert attention + ffn == 12 * d * d
    assert Fraction(ffn, attention + ffn) == Fraction(2, 3)


@pytest.mark.parametrize("d", [64, 768, 12288])
def test_real_block_ffn_share_near_two_thirds(d):
    config = GPT2.with_(d_model=d, n_heads=1)
    assert abs(cost.parameters(config).ffn_share_of_block - 2 / 3) < 0.005


def test_gpt3_cache_9_gib_at_2048_and_a_quarter_at_512():
    assert cost.kv_bytes(GPT3, 2048, "fp16") == 9 * cost.GiB
    assert cost.kv_bytes(GPT3, 512, "fp16") * 4 == cost.kv_bytes(GPT3, 2048, "fp16")
    assert cost.kv_bytes(GPT3, 512, "fp16") / cost.GiB == 2.25


def test_gpt3_weights_325_gib():
    assert int(cost.weight_bytes(GPT3, "fp16") / cost.GiB) == 325
    assert round(175e9 * 2 / cost.GiB) == 326  # the article's nominal 175B gives 325.96


def test_caches_outweigh_weights_past_36_sequences():
    weights, one = cost.weight_bytes(GPT3, "fp16"), cost.kv_bytes(GPT3, 2048, "fp16")
    assert 36 * one < weights < 37 * one
    assert cost.crossover_sequences(GPT3, 2048, "fp16") == 37


def test_intensity_16_at_p16_and_1_for_decode():
    assert cost.intensity(GPT3, 16, "fp16") == 16.0
    assert cost.intensity(GPT3, 1, "fp16") == 1.0
    assert cost.intensity(preset("smollm2-135m"), 1, "fp16") == 1.0  # whatever the model size
    assert cost.intensity(GPT3, 16, "fp32") == 8.0


def test_two_thirds_of_gpt2_small_in_its_blocks():
    p = cost.parameters(GPT2)
    assert round(p.blocks_share * 100, 1) == 68.3
    rest = p.total - p.blocks  # the embedding and position tables, and the final norm
    assert rest == p.embeddings + p.positions + 2 * 768


def test_naive_over_cached_ratios():
    assert cost.naive_over_cached(5, 1) == 5.0
    assert cost.naive_over_cached(5, 12) == 10.5
    assert cost.naive_over_cached(20, 100) == 69.5
    assert cost.naive_over_cached(20, 100) == 20 + 99 / 2  # P + (n - 1) / 2


def test_weight_bytes_by_storage_type():
    n = cost.parameters(GPT2).total
    assert cost.weight_bytes(GPT2, "fp32") == 4 * n and cost.weight_bytes(GPT2, "bf16") == 2 * n
    assert cost.weight_bytes(GPT2, "int8") == n * 40 / 32 and cost.weight_bytes(GPT2, "q4") == n * 24 / 32


def test_gqa_shrinks_the_cache():
    smol = preset("smollm2-135m")
    assert cost.kv_bytes_per_token(smol, "fp16") == 2 * 30 * 3 * 64 * 2
    assert cost.kv_bytes_per_token(smol.with_(n_kv_heads=None), "fp16") == 3 * cost.kv_bytes_per_token(smol, "fp16")


@pytest.mark.parametrize("name", list(PRESETS))
def test_instantiated_presets_match_the_formula(name):
    with torch.device("meta"):
        model = Transformer(PRESETS[name])
    assert sum(p.numel() for p in model.parameters()) == cost.parameters(PRESETS[name]).total


@pytest.mark.parametrize("name", ["toy", "gpt2-small"])
def test_real_tensors_match_the_formula(name):
    assert sum(p.numel() for p in Transformer(PRESETS[name]).parameters()) == cost.parameters(PRESETS[name]).total


@pytest.mark.parametrize("dtype,name", [(torch.float32, "fp32"), (torch.bfloat16, "bf16")])
def test_allocated_cache_bytes_match_the_formula(dtype, name):
    config = preset("smollm2-135m")
    with torch.device("meta"):
        model = Transformer(config).to(dtype)
    cache = model.new_cache(batch=3, capacity=700)
    allocated = sum(t.numel() * t.element_size() for t in (cache.k, cache.v))
    assert allocated == cost.kv_bytes(config, 700, name, sequences=3) == cache.nbytes()


CONFIGS = {
    "gpt2-like": preset("toy").with_(vocab_size=300, context_length=64),
    "post-norm": preset("toy").with_(vocab_size=300, context_length=64, norm_position="post"),
    "llama-gqa": ModelConfig("llama", vocab_size=300, context_length=64, d_model=96, n_layers=3, n_heads=6,
                             n_kv_heads=2, ffn_hidden=160, norm="rmsnorm", positions="rope", ffn="swiglu",
                             bias=False, tied_embeddings=False),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_flop_counter_equals_matmul_formula(name):
    c = CONFIGS[name]
    model = Transformer(c).eval()
    ids = torch.randint(0, c.vocab_size, (1, 12))

    def counted(x, cache=None):
        with torch.inference_mode(), FlopCounterMode(display=False) as counter:
            model(x, cache)
        counts = counter.get_flop_counts()["Global"]
        return sum(v for op, v in counts.items() if str(op) in ("aten.mm", "aten.addmm"))

    assert counted(ids) == cost.matmul_flops(c, 12)
    cache = model.new_cache(1, 16)
    with torch.inference_mode():
        model(ids, cache)
    assert counted(ids[:, :1], cache) == cost.matmul_flops(c, 1)  # a decode step: one token's matmuls


def test_attention_flops_grow_with_context():
    c = preset("smollm2-135m")
    assert cost.attention_flops(c, 1, 99) == 4 * 9 * 64 * 100 * 30
    assert cost.attention_flops(c, 3) == 4 * 9 * 64 * (1 + 2 + 3) * 30
    assert cost.forward_flops(c, 1, 999) > cost.forward_flops(c, 1, 99)


def test_roofline_arithmetic():
    c = preset("smollm2-135m")
    per_token = cost.bytes_read_per_decode_token(c, 100, "fp32", "fp32")
    assert per_token == cost.parameters(c).total * 4 + 100 * 46_080
    assert cost.roofline_decode_tokens_per_s(c, 1e10, 100, "fp32", "fp32") == 1e10 / per_token
    assert cost.compute_bound_prefill_tokens_per_s(c, 1e11, 64) == 1e11 * 64 / cost.forward_flops(c, 64)


def test_parameters_and_attention_work_of_the_new_architecture_options():
    """Qwen2's Q/K/V biases, Qwen3's QK-norm and own head_dim: the count is the module's own; a sliding window
    caps the keys each query reads."""
    base = ModelConfig("x", vocab_size=101, context_length=64, d_model=64, n_layers=2, n_heads=4, n_kv_heads=2,
                       ffn_hidden=96, norm="rmsnorm", positions="rope", ffn="swiglu", bias=False)
    gemma = base.with_(ffn="geglu", sandwich_norm=True, embed_scale=True, qk_norm=True, head_size=24, sliding_window=6,
                       layer_types=("sliding", "full"), local_rope_theta=1e4, query_scale=0.2)
    for c in (base.with_(qkv_bias=True), base.with_(qk_norm=True, head_size=24), base.with_(tied_embeddings=False),
              gemma):
        assert sum(p.numel() for p in Transformer(c).parameters()) == cost.parameters(c).total
    window = base.with_(sliding_window=6)
    brute = sum(min(10 + i + 1, 6) for i in range(20))
    assert cost.attention_flops(window, 20, past=10) == 4 * 4 * 16 * brute * 2
    assert cost.attention_flops(window, 3, past=0) == cost.attention_flops(base, 3, past=0)
