"""W-logit-lens: the next token read off the residual stream after every block. The stream after block i, at the
prompt's last position, goes through the model's own final norm and unembedding, as if the blocks after i were not
there. After the last block this is exactly what the model computes, so the last row is the model's own output, bit
for bit (`last_row_is_the_models`: the same logits, not merely close ones)."""

from __future__ import annotations

import torch

from ..loaded import LoadedModel
from .compute import _ids
from .trace import trace

TOP = 10  # tokens kept per block (the page shows as many of them as its slider says)


def _row(fp: LoadedModel, logits: torch.Tensor, answer: int) -> dict:
    probs = torch.softmax(logits, -1)
    top = torch.topk(probs, TOP).indices.tolist()
    return {"top": [{"id": i, "piece": fp.tokenizer.piece(i), "logit": float(logits[i]), "probability": float(probs[i])}
                    for i in top],
            "answer_rank": int((logits > logits[answer]).sum()) + 1, "answer_probability": float(probs[answer])}


def tail(fp: LoadedModel, ids: list[int], n: int = 8) -> str:
    """The prompt's last words, readably: its last n tokens decoded, the cut moved back (at most 3 tokens) to where a
    character starts, "…" where it is cut."""
    special = getattr(fp.tokenizer, "special_ids", set())
    ids = [i for i in ids if i not in special]  # a <bos> the tokenizer put first is not the reader's text
    start = max(0, len(ids) - n)
    while start > 0 and start > len(ids) - n - 3 and fp.tokenizer.decode(ids[start:]).startswith("\ufffd"):
        start -= 1
    text = fp.tokenizer.decode(ids[start:])
    return ("…" + text.lstrip().lstrip("\ufffd")) if start else text


def logit_lens(fp: LoadedModel, prompt: str) -> dict:
    """One row per block: the top next tokens its output stream would give, for the prompt's last position; and the
    model's own top tokens (its logits from a plain forward pass) to hold the last row against."""
    ids = _ids(fp, prompt)
    model, seen = fp.model, trace(fp, ids)  # the prompt's watched pass
    streams, own = seen.outputs, seen.logits  # every block's output at the last position; the model's logits
    answer = int(own.argmax())
    with torch.inference_mode():
        # the model's own last two stages: the earlier blocks' streams in one batch (one read of the unembedding),
        # the last block's alone on a (1, 1, d_model) stream, exactly as the forward pass runs it
        earlier = model.lm_head(model.norm_f(torch.stack(streams[:-1])[None]))[0].float()  # (n_layers - 1, vocab)
        last = model.lm_head(model.norm_f(streams[-1][None, None]))[0, 0].float()
    rows = [{"block": i + 1, **_row(fp, logits, answer)} for i, logits in enumerate([*earlier, last])]
    model_row = _row(fp, own, answer)
    return {"n_layers": fp.config.n_layers, "position": len(ids) - 1, "last_piece": fp.tokenizer.piece(ids[-1]),
            "tail": tail(fp, ids), "rows": rows, "model": model_row,
            "answer": {"id": answer, "piece": fp.tokenizer.piece(answer)},
            "last_row_is_the_models": bool(torch.equal(last, own)),
            "first_top": next((r["block"] for r in rows if r["answer_rank"] == 1), None),
            "settled": next((r["block"] for i, r in enumerate(rows) if all(x["answer_rank"] == 1 for x in rows[i:])),
                            None)}
