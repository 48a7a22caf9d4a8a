"""`forwardpass chat`: a multi-turn conversation through the model's chat template, one line per turn. A line that
cannot be a turn (the conversation with it does not fit the context) is answered with an error and left out."""

from __future__ import annotations

import json
import sys

from ..errors import ForwardpassError
from .options import check_model
from .sampling_options import add_sampling_options, sampling_params


def add_parser(sub):
    p = sub.add_parser("chat", help="multi-turn chat on stdin (/reset clears, /quit or EOF ends)")
    p.add_argument("--system", default=None, help="a system message for the conversation")
    add_sampling_options(p, max_tokens=256)
    return p


def run(args) -> int:
    params = sampling_params(args)
    check_model(args)
    from ..loop import Generation  # PyTorch: imported once the options are known to be good
    from ..pipeline import load
    fp = load(args.model, device=args.device, progress=not args.json, storage=args.storage,
              kv_cache_dtype=args.kv_cache_dtype)
    if fp.tokenizer is None or not fp.tokenizer.chat_template:
        raise ForwardpassError("this model has no chat template; use `forwardpass generate`")
    start = [{"role": "system", "content": args.system}] if args.system else []
    messages = list(start)
    interactive = sys.stdin.isatty() and not args.json
    while True:
        if interactive:
            print("you> ", end="", flush=True)
        line = sys.stdin.readline()
        if not line or line.strip() == "/quit":
            return 0
        line = line.rstrip("\n")
        if line.strip() == "/reset":
            messages = list(start)
            continue
        if not line.strip():
            continue
        try:
            g = Generation(fp, fp.tokenizer.encode_chat([*messages, {"role": "user", "content": line}]), params)
        except ForwardpassError as e:  # this line cannot be a turn (too long for the context): the session goes on
            if args.json:
                print(json.dumps({"user": line, "error": str(e), "type": type(e).__name__}, ensure_ascii=False),
                      flush=True)
            print(f"forwardpass: error: {e}; the line is left out of the conversation (/reset starts a new one)",
                  file=sys.stderr, flush=True)
            continue
        messages.append({"role": "user", "content": line})
        if interactive:
            print("model> ", end="", flush=True)
        for delta in g:
            if not args.json:
                print(delta, end="", flush=True)
        reply = g.result.text
        messages.append({"role": "assistant", "content": reply})
        if args.json:
            print(json.dumps({"user": line, "assistant": reply, "stop_reason": g.result.stop_reason,
                              "turn": len(messages) // 2}, ensure_ascii=False), flush=True)
        else:
            print(flush=True)
