"""Presets: shapes and exact parameter counts of real (or meta) tensors."""

from __future__ import annotations

import pytest
import torch

from forwardpass import PRESETS, ModelConfig, Transformer, preset
from forwardpass.errors import ForwardpassError


def count(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())  # tied tensors are counted once


def test_gpt2_small_has_124_439_808_parameters():
    model = Transformer(preset("gpt2-small"))  # real tensors
    assert count(model) == 124_439_808


@pytest.mark.parametrize("name,expected", [
    ("gpt2-medium", 354_823_168), ("gpt2-large", 774_030_080), ("gpt2-xl", 1_557_611_200),
])
def test_gpt2_family_counts(name, expected):
    """The published GPT-2 sizes (Hugging Face's parameter counts for the same checkpoints)."""
    with torch.device("meta"):
        assert count(Transformer(preset(name))) == expected


def test_gpt3_on_meta_device():
    with torch.device("meta"):
        n = count(Transformer(preset("gpt3-175b")))
    assert 174e9 < n < 176e9


def test_toy_and_smollm_presets():
    toy = preset("toy")
    assert (toy.n_layers, toy.d_model) == (4, 64)
    with torch.device("meta"):
        assert count(Transformer(preset("smollm2-135m"))) == 134_515_008


def test_every_preset_builds_on_meta():
    for name, config in PRESETS.items():
        with torch.device("meta"):
            model = Transformer(config)
        assert len(model.blocks) == config.n_layers, name


def test_unknown_preset_and_bad_shapes():
    with pytest.raises(ForwardpassError, match="unknown preset 'gpt5'"):
        preset("gpt5")
    with pytest.raises(ForwardpassError, match="not divisible by n_heads"):
        ModelConfig("bad", vocab_size=10, context_length=8, d_model=10, n_layers=1, n_heads=3)
    with pytest.raises(ForwardpassError, match="n_layers must be positive"):
        ModelConfig("bad", vocab_size=10, context_length=8, d_model=8, n_layers=0, n_heads=2)
