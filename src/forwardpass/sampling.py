"""What comes out (seed §03): logits → probabilities → the next token."""

from __future__ import annotations

import torch

from .errors import ForwardpassError


def probabilities(logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """softmax(logits / T) over the last axis in float32; T = 0 is the argmax limit (all mass on the top token)."""
    if temperature != temperature or temperature < 0:
        raise ForwardpassError(f"temperature must be a number ≥ 0, got {temperature}")
    logits = logits.float()
    if temperature == 0:
        return torch.nn.functional.one_hot(logits.argmax(-1), logits.shape[-1]).float()
    return torch.softmax(logits / temperature, dim=-1)
