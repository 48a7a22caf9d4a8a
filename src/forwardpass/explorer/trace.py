"""One forward pass of a prompt, watched, and remembered: what every block read, what it handed on and what each of
its two branches added, and the model's logits for the next token. The widgets that look inside the model on the
page's prompt (the stream block by block, attention in any layer, the logit lens, the sampling widgets, the article's
five words) all read the same pass instead of running the model again each."""

from __future__ import annotations

import weakref
from collections import OrderedDict
from dataclasses import dataclass

import torch

from ..loaded import LoadedModel


@dataclass
class Trace:
    inputs: list[torch.Tensor]  # per block: the stream it read, (1, T, d_model)
    outputs: list[torch.Tensor]  # per block: the stream it handed on at the last position, (d_model,)
    output_shapes: list[list[int]]  # per block: [1, T, d_model]
    attention_added: list[float]  # per block: the size (L2 norm) of what attention added, last position
    ffn_added: list[float]  # the same for the FFN (a block that normalizes a branch's output before the add, as
    # Gemma's do, adds that norm's output)
    logits: torch.Tensor  # (vocab_size,): the model's logits for the token after the prompt, float32


KEPT = 8  # traces remembered per model, at most
KEPT_BYTES = 256 * 2**20  # and at most this much of them (a long prompt's is large: every block's input stream)
_TRACES: dict[int, OrderedDict[tuple, Trace]] = {}  # id(model) → its passes, dropped with the model


def trace(fp: LoadedModel, ids: list[int]) -> Trace:
    """The watched pass over `ids` (remembered per model and ids). Callers hold model_lock(fp), the model as loaded:
    its blocks adding into the stream, no other hooks."""
    if id(fp) not in _TRACES:
        _TRACES[id(fp)] = OrderedDict()
        weakref.finalize(fp, _TRACES.pop, id(fp), None)  # a later model at the same address starts with none
    kept, key = _TRACES[id(fp)], tuple(ids)
    if key not in kept:
        kept[key] = _run(fp, ids)
        while len(kept) > 1 and (len(kept) > KEPT or sum(map(_bytes, kept.values())) > KEPT_BYTES):
            kept.popitem(last=False)  # the newest is kept whatever its size: its request is reading it
    kept.move_to_end(key)
    return kept[key]


def _bytes(t: Trace) -> int:
    return sum(x.numel() * x.element_size() for x in [*t.inputs, *t.outputs, t.logits])


def forget() -> None:
    """drop every remembered pass (a benchmark's new explorer starts with none)"""
    _TRACES.clear()


def _run(fp: LoadedModel, ids: list[int]) -> Trace:
    model, n = fp.model, fp.config.n_layers
    t = Trace([None] * n, [None] * n, [None] * n, [0.0] * n, [0.0] * n, None)

    def block_hook(block, inputs, output):
        t.inputs[block.index] = inputs[0].clone()
        t.outputs[block.index] = output[0, -1].clone()
        t.output_shapes[block.index] = list(output.shape)

    def branch_hook(into: list[float], index: int):
        def hook(module, inputs, output):
            into[index] = float(output[0, -1].norm())
        return hook

    hooks = [b.register_forward_hook(block_hook) for b in model.blocks]
    added = [(b.attn_post_norm or b.attn, b.ffn_post_norm or b.ffn, b.index) for b in model.blocks]  # what each adds
    hooks += [h for attn, ffn, i in added for h in (attn.register_forward_hook(branch_hook(t.attention_added, i)),
                                                    ffn.register_forward_hook(branch_hook(t.ffn_added, i)))]
    try:
        with torch.inference_mode():
            logits, _ = model(torch.tensor([ids], device=fp.device), last_only=True)  # (1, 1, vocab_size)
    finally:
        for h in hooks:
            h.remove()
    t.logits = logits[0, 0].float()
    return t
