"""Checked mode: the residual stream keeps its shape and sublayers only add (seed §00 W-residual)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from forwardpass import InvariantError, Transformer, preset


@pytest.fixture
def toy():
    torch.manual_seed(0)
    return Transformer(preset("toy").with_(vocab_size=50, context_length=32)).eval()


def test_checked_mode_passes_and_changes_nothing(toy):
    ids = torch.randint(0, 50, (2, 9))
    with torch.inference_mode():
        plain, _ = toy(ids)
        toy.checked = True
        checked, _ = toy(ids)
    assert torch.equal(plain, checked)


def test_replacing_sublayer_is_caught(toy):
    """W-residual's 'replace': the stream keeps its width but loses what earlier blocks wrote."""
    ids = torch.randint(0, 50, (1, 5))
    with torch.inference_mode():
        good, _ = toy(ids)
        toy.blocks[2].residual = "replace"
        silent, _ = toy(ids)  # unchecked: no error, just different numbers
        assert not torch.allclose(good, silent)
        toy.checked = True
        with pytest.raises(InvariantError, match="block 2 attention: the sublayer replaced the residual stream"):
            toy(ids)


class InPlaceFFN(nn.Module):
    """A post-norm sublayer that overwrites its input, the stream itself, and returns nothing new."""

    def forward(self, x):
        x.mul_(0.5)
        return torch.zeros_like(x)


def test_sublayer_writing_into_the_stream_is_caught():
    torch.manual_seed(0)
    model = Transformer(preset("toy").with_(vocab_size=50, context_length=32, norm_position="post")).eval()
    model.blocks[1].ffn = InPlaceFFN()
    model.checked = True
    with torch.inference_mode(), pytest.raises(InvariantError, match="block 1 ffn: the sublayer replaced"):
        model(torch.randint(0, 50, (1, 4)))


class NarrowFFN(nn.Module):
    """Returns one row per sequence instead of one per token: broadcasting would hide it."""

    def forward(self, x):
        return x.mean(dim=1, keepdim=True)


def test_shape_changing_sublayer_is_caught(toy):
    toy.blocks[0].ffn = NarrowFFN()
    toy.checked = True
    with torch.inference_mode(), pytest.raises(InvariantError, match=r"block 0 ffn: residual stream \(1, 6, 64\)"):
        toy(torch.randint(0, 50, (1, 6)))
