"""`forwardpass embed TEXT...`: sentence embeddings (unit vectors) and, for two or more texts, their cosine
similarities."""

from __future__ import annotations

import json


def add_parser(sub):
    p = sub.add_parser("embed", help="embed texts as unit vectors (all-MiniLM-L6-v2 by default)")
    p.add_argument("texts", nargs="+", metavar="TEXT")
    p.add_argument("--model", metavar="PATH", help="a BERT sentence-embedding model: a directory or a zip of one "
                                                    "(default: the embedded all-MiniLM-L6-v2)")
    p.add_argument("--json", action="store_true", help="print one JSON object: the vectors and their similarities")
    return p


def run(args) -> int:
    from rich.console import Console
    from rich.table import Table

    from ..embeddings import load_embedder

    embedder = load_embedder(args.model, device=args.device)
    ids = [embedder.encode(t) for t in args.texts]
    vectors = embedder.embed(ids)
    similarity = (vectors @ vectors.T).tolist()
    if args.json:
        print(json.dumps({"model": embedder.name, "dimensions": embedder.dimensions,
                          "data": [{"index": i, "text": t, "tokens": len(x), "embedding": v}
                                   for i, (t, x, v) in enumerate(zip(args.texts, ids, vectors.tolist(), strict=True))],
                          "similarity": similarity}, ensure_ascii=False))
        return 0
    console = Console()
    console.print(f"{embedder.name}: {embedder.dimensions} dimensions, unit length")
    table = Table("#", "text", "tokens", "first values")
    for i, (t, x, v) in enumerate(zip(args.texts, ids, vectors.tolist(), strict=True)):
        table.add_row(str(i), t if len(t) <= 48 else t[:47] + "…", str(len(x)), " ".join(f"{a:+.3f}" for a in v[:4]))
    console.print(table)
    if len(args.texts) > 1:
        sims = Table("cosine", *(str(i) for i in range(len(args.texts))), title="similarity")
        for i, row in enumerate(similarity):
            sims.add_row(str(i), *(f"{s:.3f}" for s in row))
        console.print(sims)
    return 0
