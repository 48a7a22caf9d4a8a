"""W-stages and W-norm: the shape a prompt takes at each of the six stages, read off a real forward pass of the
loaded model, and the norms a gradient crosses on the residual path back to the embedding (pre- vs post-norm)."""

from __future__ import annotations

import torch
from torch import nn

from ..loaded import LoadedModel
from .compute import _ids


def stages(fp: LoadedModel, prompt: str) -> dict:
    """The six stages for this prompt: each one's input and output shape as the model's own modules saw them (hooks
    on the embedding table, the first and last block, the final norm and the unembedding), the number of blocks
    that ran, and the next token the last row of logits scores highest."""
    ids = _ids(fp, prompt)
    model = fp.model
    seen: dict[str, list] = {}
    blocks_run = []

    def keep(name: str):
        def hook(module, inputs, output):
            seen.setdefault(name, [list(inputs[0].shape), list(output.shape)])
        return hook

    hooks = [model.tok_embeddings.register_forward_hook(keep("embedding")),
             model.blocks[0].register_forward_hook(keep("first_block")),
             model.blocks[-1].register_forward_hook(keep("last_block")),
             model.lm_head.register_forward_hook(keep("unembedding"))]
    hooks += [b.register_forward_hook(lambda m, i, o: blocks_run.append(m.index)) for b in model.blocks]
    if not isinstance(model.norm_f, nn.Identity):
        hooks.append(model.norm_f.register_forward_hook(keep("final_norm")))
    x = torch.tensor([ids], device=fp.device)  # (1, T): the ids, a batch of one
    try:
        with torch.inference_mode():
            logits, _ = model(x)  # (1, T, vocab_size): every position's row, as the stage diagram shows them
    finally:
        for h in hooks:
            h.remove()
    last = logits[0, -1].float()
    top = int(last.argmax())
    c = fp.config
    return {
        "tokens": len(ids), "ids_shape": list(x.shape), "d_model": c.d_model, "vocab_size": c.vocab_size,
        "n_layers": c.n_layers, "blocks_run": len(blocks_run), "positions": c.positions,
        "final_norm": "final_norm" in seen, "embedding": seen["embedding"][1],
        "blocks": [seen["first_block"][0], seen["last_block"][1]],
        "final_norm_shape": seen["final_norm"][1] if "final_norm" in seen else seen["last_block"][1],
        "logits": list(logits.shape), "next": {"id": top, "piece": fp.tokenizer.piece(top),
                                                "logit": round(float(last[top]), 4)},
    }


def norm_path(fp: LoadedModel) -> dict:
    """W-norm: how many norms sit on the residual path itself, the path a gradient takes from the top of the stack
    back to the embedding. Every block wraps each of its sublayers in a norm; pre-norm applies it to the branch's
    copy (the stream never passes through it), post-norm (the 2017 design) to the stream after each add. The count
    is that of the loaded model's own blocks. A block that also normalizes each branch's output before the add
    (Gemma's sandwich norms) holds four: those stay on the branch whichever the placement, off the residual path."""
    c = fp.config
    norm = (nn.LayerNorm, nn.RMSNorm)
    per_block = [sum(isinstance(m, norm) for m in (b.attn_norm, b.ffn_norm)) for b in fp.model.blocks]
    after = [sum(isinstance(m, norm) for m in (b.attn_post_norm, b.ffn_post_norm)) for b in fp.model.blocks]
    return {"n_layers": len(per_block), "norm": c.norm, "model_norm_position": c.norm_position,
            "per_block": {"pre": 0, "post": per_block[0]},
            "crossed": {"pre": 0, "post": sum(per_block)},  # on the residual path, from the last block to the embedding
            "after_branch": after[0] // 2,  # each branch's output normalized before the add (1) or not (0)
            "norms_per_block": per_block[0] + after[0], "qk_norm": c.qk_norm, "final_norm": c.has_final_norm}
