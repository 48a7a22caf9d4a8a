"""`forwardpass chat`: a multi-turn conversation through the model's chat template, one line per turn. A line that
cannot be a turn (the conversation with it does not fit the context) is answered with an error and left out.

At a terminal it behaves as the chat tools people know: a banner with the commands, line editing and history
(readline), Ctrl-C stops a reply and keeps the session (the reply so far stays in the conversation), Ctrl-D or /bye
ends it. Piped, it reads one turn per line."""

from __future__ import annotations

import json
import sys

from ..errors import ForwardpassError
from .options import add_speculative_option, check_model
from .sampling_options import add_sampling_options, sampling_params

COMMANDS = {"/help": "these commands", "/reset": "start a new conversation (the system message kept)",
            "/bye": "end the session (also /quit, /exit, Ctrl-D)"}
ENDS = {"/bye", "/quit", "/exit"}


def add_parser(sub):
    p = sub.add_parser("chat", help="multi-turn chat on stdin (/help lists the commands, /bye or EOF ends)")
    p.add_argument("--system", default=None, help="a system message for the conversation")
    add_speculative_option(p)
    add_sampling_options(p, max_tokens=256)
    return p


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def read_line(interactive: bool) -> str | None:
    """The next line (None at the end). At a terminal Ctrl-C on the prompt says how to leave and asks again."""
    if not interactive:
        line = sys.stdin.readline()
        return line.rstrip("\n") if line else None
    while True:
        try:
            return input("you> ")
        except EOFError:
            print(flush=True)
            return None
        except KeyboardInterrupt:
            print(flush=True)
            say("(Ctrl-D or /bye ends the session)")


def command(line: str) -> str | None:
    """What a /command line asks for ("help", "reset", "end", or "unknown"); None for a turn."""
    word = line.strip()
    if not word.startswith("/") or " " in word:
        return None
    return "end" if word in ENDS else word[1:] if word in COMMANDS else "unknown"


def reply(g, json_out: bool) -> tuple[str, str]:
    """Run generation `g`, printing its text as it comes: (its text, its stop reason), or what came before Ctrl-C
    and "interrupted"."""
    shown = []
    try:
        for delta in g:
            shown.append(delta)
            if not json_out:
                print(delta, end="", flush=True)
    except KeyboardInterrupt:
        if not json_out:
            print(flush=True)
        say("[stopped]")
        return "".join(shown), "interrupted"
    return g.result.text, g.result.stop_reason


def run(args) -> int:
    params = sampling_params(args)
    check_model(args)
    from ..loop import Generation
    from ..packaged import model_id
    from ..pipeline import load
    from .generate_cmd import print_logprobs
    fp = load(args.model, device=args.device, progress=not args.json, storage=args.storage,
              kv_cache_dtype=args.kv_cache_dtype, ctx_size=args.ctx_size, backend="auto")
    if fp.tokenizer is None or not fp.tokenizer.chat_template:
        raise ForwardpassError("this model has no chat template; use `forwardpass generate`")
    start = [{"role": "system", "content": args.system}] if args.system else []
    messages = list(start)
    interactive = sys.stdin.isatty() and not args.json
    if interactive:
        import readline  # noqa: F401 - line editing and history for input()
        say(f"forwardpass chat · {model_id(args.model, fp.source)} · /help lists the commands, /bye ends")
    while True:
        line = read_line(interactive)
        if line is None:
            return 0
        what = command(line)
        if what == "end":
            return 0
        if what == "help":
            say("\n".join(f"  {name:<7} {does}" for name, does in COMMANDS.items()))
            continue
        if what == "reset":
            messages = list(start)
            say("(a new conversation)")
            continue
        if what == "unknown":
            say(f"unknown command {line.strip()}; /help lists them (nothing was sent to the model)")
            continue
        if not line.strip():
            continue
        try:
            g = Generation(fp, fp.tokenizer.encode_chat([*messages, {"role": "user", "content": line}]), params,
                           speculative=args.speculative)
        except ForwardpassError as e:  # this line cannot be a turn (too long for the context): the session goes on
            if args.json:
                print(json.dumps({"user": line, "error": str(e), "type": type(e).__name__}, ensure_ascii=False),
                      flush=True)
            say(f"forwardpass: error: {e}; the line is left out of the conversation (/reset starts a new one)")
            continue
        messages.append({"role": "user", "content": line})
        if interactive:
            print("model> ", end="", flush=True)
        text, stop_reason = reply(g, args.json)
        messages.append({"role": "assistant", "content": text})
        if args.json:
            print(json.dumps({"user": line, "assistant": text, "stop_reason": stop_reason,
                              "turn": len(messages) // 2}, ensure_ascii=False), flush=True)
        elif stop_reason != "interrupted":
            print(flush=True)
            if g.result.logprobs:
                print_logprobs(g.result.logprobs, fp.tokenizer)
