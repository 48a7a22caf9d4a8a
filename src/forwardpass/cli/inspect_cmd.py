"""`forwardpass inspect PROMPT`: the tokens (position, id, piece, embedding row) and the top-K next tokens."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from ..sampling_params import check_temperature
from .options import check_model, positive_int

if TYPE_CHECKING:
    from ..loaded import LoadedModel


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("inspect", help="tokens of a prompt and the model's top next tokens")
    p.add_argument("prompt")
    p.add_argument("--top", type=positive_int, default=10, metavar="K", help="next tokens to show (default 10)")
    p.add_argument("--temperature", type=float, default=1.0, metavar="T", help="softmax temperature (0 = argmax)")
    return p


def inspect(fp: LoadedModel, prompt: str, top: int, temperature: float, typed: str | None = None) -> dict:
    """The whole report as one dict (what --json prints); `typed`: the --model given (the id it is reported under)."""
    import numpy as np
    import torch

    from ..packaged import model_id
    from ..sampling import probabilities, values

    ids = fp.encode(prompt)
    with torch.inference_mode():
        rows = fp.model.tok_embeddings(torch.tensor(ids, dtype=torch.long, device=fp.device)).float().cpu()
    first_seen: dict[int, int] = {}
    tokens = []
    for position, token_id in enumerate(ids):
        tokens.append({"position": position, "id": token_id, "piece": fp.tokenizer.piece(token_id),
                       "embedding_row": token_id, "same_as_position": first_seen.get(token_id),
                       "embedding_head": [round(v, 4) for v in rows[position, :4].tolist()]})
        first_seen.setdefault(token_id, position)
    report = {"model": model_id(typed, fp.source), "name": fp.config.name,
              "context_length": fp.config.context_length, "trained_context_length": fp.trained_context_length,
              "prompt": prompt, "tokens": tokens, "temperature": temperature, "next": []}
    if ids:
        logits = values(fp.next_token_logits(ids))  # (vocab_size,) float32
        probs = probabilities(logits, temperature)
        ranked = np.argsort(-logits, kind="stable")[:top]  # by logit, equal ones by lower id: the argmax first
        for rank, i in enumerate(ranked.tolist()):
            report["next"].append({"rank": rank + 1, "id": i, "piece": fp.tokenizer.piece(i),
                                   "logit": float(logits[i]), "probability": float(probs[i])})
    return report


def run(args) -> int:
    check_temperature(args.temperature)  # before PyTorch and the model load
    check_model(args)
    from ..loader import load
    fp = load(args.model, device=args.device, progress=not args.json, storage=args.storage,
              kv_cache_dtype=args.kv_cache_dtype, activations=args.activations, ctx_size=args.ctx_size)
    report = inspect(fp, args.prompt, args.top, args.temperature, args.model)
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
        return 0
    show(report)
    return 0


def show(report: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    context, trained = report["context_length"], report["trained_context_length"]
    of = f" of {trained}" if context != trained else ""  # --ctx-size kept less than the trained context
    t = Table(title=f"{len(report['tokens'])} tokens · {report['model']} · context {context}{of}")
    for col in ("pos", "id", "piece", "embedding row (first 4 of d_model)"):
        t.add_column(col, justify="right" if col in ("pos", "id") else "left")
    for tok in report["tokens"]:
        same = tok["same_as_position"]
        note = f"  ← same id and row as position {same}" if same is not None else ""
        t.add_row(str(tok["position"]), str(tok["id"]), repr(tok["piece"]), f"{tok['embedding_head']}{note}")
    console.print(t)
    if not report["next"]:
        console.print("(empty prompt: no next-token distribution)")
        return
    n = Table(title=f"next token · T = {report['temperature']}")
    for col in ("rank", "id", "piece", "logit", "probability"):
        n.add_column(col, justify="left" if col == "piece" else "right")
    for r in report["next"]:
        n.add_row(str(r["rank"]), str(r["id"]), repr(r["piece"]), f"{r['logit']:.4f}", f"{r['probability']:.2%}")
    console.print(n)
