"""W-attention-map: every head's T × T attention weights in one layer, on the loaded model and the page's prompt."""

from __future__ import annotations

import torch

from ..loaded import LoadedModel
from .compute import _attention_inputs, _ids, _range


def attention_map(fp: LoadedModel, prompt: str, layer: int) -> dict:
    """Each head's weights of layer `layer`: row i (the query at position i) over keys 0 … i, the causal half
    only (the rest is 0). The same arithmetic as W-attention's table (compute.attention_steps): q·k in float32,
    × the scale, the causal mask and sliding window, softmax per row. Rows sum to 1."""
    ids = _ids(fp, prompt)
    c = fp.config
    if not 0 <= layer < c.n_layers:
        raise _range("layer", 0, c.n_layers - 1)
    block, normed, rope, window = _attention_inputs(fp, ids, layer)
    attn = block.attn
    T = len(ids)
    with torch.inference_mode():
        q, k, _ = attn.project(normed, rope)  # (1, heads, T, head_dim), (1, kv heads, T, head_dim)
        group = attn.n_heads // attn.n_kv_heads
        keys = k[0].float().repeat_interleave(group, dim=0)  # (heads, T, head_dim): each query head's K/V head
        scores = (q[0].float() @ keys.transpose(-1, -2)) * attn.scale  # (heads, T, T)
        i = torch.arange(T, device=scores.device)
        allowed = i[None, :] <= i[:, None]
        if window is not None:
            allowed &= i[None, :] > i[:, None] - window
        weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1).cpu()
    return {"layer": layer, "n_layers": c.n_layers, "n_heads": attn.n_heads, "n_kv_heads": attn.n_kv_heads,
            "window": window, "pieces": [fp.tokenizer.piece(t) for t in ids],
            "heads": [[[round(float(w), 5) for w in weights[h, row, : row + 1]] for row in range(T)]
                      for h in range(attn.n_heads)]}
