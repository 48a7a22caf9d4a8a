"""`forwardpass generate PROMPT`: stream a continuation (or, with --chat, an assistant reply)."""

from __future__ import annotations

import json
import sys

from ..errors import ForwardpassError
from .options import add_speculative_option, check_model
from .sampling_options import add_sampling_options, sampling_params


def add_parser(sub):
    p = sub.add_parser("generate", help="generate text from a prompt, streamed")
    p.add_argument("prompt")
    p.add_argument("--chat", action="store_true", help="wrap the prompt as a user message in the chat template")
    p.add_argument("--naive", action="store_true", help="no KV cache: re-run the whole prefix every step")
    add_speculative_option(p)
    add_sampling_options(p)
    return p


def with_pieces(report: dict, tokenizer) -> dict:
    """--json's log-probabilities with each token's text beside its id (`token`, and `top_tokens` in `top`'s order)."""
    for entry in report.get("logprobs") or []:
        entry["token"] = tokenizer.piece(entry["token_id"])
        entry["top_tokens"] = [tokenizer.piece(i) for i, _ in entry["top"]]
    return report


def print_logprobs(logprobs: list, tokenizer) -> None:
    """--logprobs N as a table: each chosen token's text and log-probability, and its N likeliest alternatives."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    t = Table(title="log-probabilities")
    for column in ("#", "token", "logprob", "alternatives"):
        t.add_column(column, justify="right" if column in ("#", "logprob") else "left")
    for i, lp in enumerate(logprobs):
        others = ", ".join(f"{tokenizer.piece(j)!r} {v:.2f}" for j, v in lp.top)
        cells = (str(i + 1), repr(tokenizer.piece(lp.token_id)), f"{lp.logprob:.3f}", others)
        t.add_row(*(Text(c) for c in cells))  # token text as it is, never read as markup
    Console().print(t)


def run(args) -> int:
    params = sampling_params(args)
    if args.naive and args.prompt_cache is not None:
        raise ForwardpassError("--prompt-cache applies to the cached loop, not --naive")
    check_model(args)
    from ..loader import load
    from ..loop import Generation
    fp = load(args.model, device=args.device, progress=not args.json, storage=args.storage,
              kv_cache_dtype=args.kv_cache_dtype, activations=args.activations, ctx_size=args.ctx_size,
              backend="torch" if args.naive else "auto")  # the naive loop calls the PyTorch model
    prompt = args.prompt
    if args.chat:
        prompt = fp.tokenizer.encode_chat([{"role": "user", "content": prompt}])  # the text is text, never a turn
    g = Generation(fp, prompt, params, naive=args.naive, speculative=args.speculative, prompt_cache=args.prompt_cache,
                   prompt_cache_bytes=args.prompt_cache_size)
    for delta in g:
        if not args.json:
            sys.stdout.write(delta)
            sys.stdout.flush()
    r = g.result
    if args.json:
        print(json.dumps(with_pieces(r.to_dict(), fp.tokenizer), ensure_ascii=False))
    else:
        print()
        if r.logprobs:
            print_logprobs(r.logprobs, fp.tokenizer)
        loop = f", loops with period {r.loop.period} from token {r.loop.start}" if r.loop else ""
        print(f"[{len(r.token_ids)} tokens, stop: {r.stop_reason}{loop}; prefill {r.prefill_tokens_per_s:.1f} tok/s, "
              f"decode {r.decode_tokens_per_s:.1f} tok/s, {r.mode}]", file=sys.stderr)
    return 0
