"""`forwardpass chat`: a multi-turn conversation through the model's chat template, one line per turn. A line that
cannot be a turn (the conversation with it does not fit the context, or it holds bytes that are not text in the
input's encoding) is answered with an error and left out.

At a terminal it behaves as the chat tools people know: a banner with the commands, line editing and history
(readline), Ctrl-C stops a reply and keeps the session (the reply so far stays in the conversation), Ctrl-C at the
prompt drops the line being typed, Ctrl-D or /bye ends it. Piped, it reads one turn per line."""

from __future__ import annotations

import codecs
import contextlib
import json
import signal
import sys

from ..errors import ForwardpassError
from .options import add_speculative_option, check_model
from .sampling_options import add_sampling_options, sampling_params

COMMANDS = {"/help": "these commands", "/reset": "start a new conversation (the system message kept)",
            "/bye": "end the session (also /quit, /exit, Ctrl-D)"}
ENDS = {"/bye", "/quit", "/exit"}
PROMPT = "you> "
HOW_TO_END = "(Ctrl-D or /bye ends the session)"


def add_parser(sub):
    p = sub.add_parser("chat", help="multi-turn chat on stdin (/help lists the commands, /bye or EOF ends)")
    p.add_argument("--system", default=None, help="a system message for the conversation")
    add_speculative_option(p)
    add_sampling_options(p, max_tokens=256)
    return p


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class CtrlC:
    """Ctrl-C at a terminal (the SIGINT handler while a session runs), answered by what the session is doing: it stops
    a reply, or drops the line being typed at the prompt; it never ends the session. Python's own handler raises
    KeyboardInterrupt wherever the signal lands: one pressed as a reply stops, before the prompt reads again, would
    end the session. Here one that comes while neither a reply nor the prompt runs is held, and answered by the next
    of them."""

    def __init__(self):
        self.live = False  # a reply streams, or readline waits for keys: Ctrl-C interrupts it now
        self.held = False  # one came while neither did
        self.hooked = False  # readline calls `reading` (a build without the hook: the prompt is live throughout)

    def __call__(self, signum, frame) -> None:
        if self.live:
            raise KeyboardInterrupt
        self.held = True

    @contextlib.contextmanager
    def installed(self, readline):
        """This handler, and readline's hook before it reads keys, for the session."""
        previous = signal.signal(signal.SIGINT, self)
        self.hooked = hasattr(readline, "set_pre_input_hook")
        if self.hooked:
            readline.set_pre_input_hook(self.reading)
        try:
            yield self
        finally:
            if self.hooked:
                readline.set_pre_input_hook(None)
            signal.signal(signal.SIGINT, previous)

    def answer_held(self) -> None:
        if self.held:
            self.held = False
            raise KeyboardInterrupt

    @contextlib.contextmanager
    def interrupting(self):
        """Ctrl-C raises KeyboardInterrupt in this block (one held from before it, at once)."""
        self.live = True
        try:
            self.answer_held()
            yield
        finally:
            self.live = False

    def read(self) -> str:
        """input() at the prompt; KeyboardInterrupt: Ctrl-C, the line typed so far dropped. Readline waits for keys
        (where a signal interrupts the wait) only once the prompt is shown: a Ctrl-C before then would be raised only
        after a whole line is read, dropping it, so it is held until `reading`."""
        self.answer_held()
        try:
            self.live = not self.hooked
            return input(PROMPT)
        finally:
            self.live = False

    def reading(self) -> None:
        """Readline's pre-input hook: the prompt is shown, keys are read next. A Ctrl-C held from while it was being
        shown is answered as one at the prompt, and the prompt shown again on a line of its own (readline's cursor
        stays just after it)."""
        if self.held:
            self.held = False
            print(flush=True)
            say(HOW_TO_END)
            print(PROMPT, end="", flush=True)
        self.live = True


def read_line(ctrl_c: CtrlC | None) -> str | None:
    """The next line (None at the end); `ctrl_c` at a terminal, where Ctrl-C on the prompt says how to leave and asks
    again."""
    if ctrl_c is None:
        line = sys.stdin.readline()
        return line.rstrip("\n") if line else None
    while True:
        try:
            return ctrl_c.read()
        except EOFError:
            print(flush=True)
            return None
        except KeyboardInterrupt:
            print(flush=True)
            say(HOW_TO_END)


def undecodable(line: str) -> str | None:
    """Why `line` is not text: a byte stdin's encoding could not decode (read as U+DC80–U+DCFF, surrogateescape)."""
    for c in line:
        if "\udc80" <= c <= "\udcff":
            encoding = codecs.lookup(sys.stdin.encoding or "utf-8").name.upper()
            return f"not valid {encoding} (byte 0x{ord(c) - 0xDC00:02X})"
    return None


def left_out(line: str, error: ForwardpassError, json_out: bool) -> None:
    """Say that `line` cannot be a turn, and why; the session goes on without it."""
    if json_out:
        shown = "".join("\ufffd" if "\udc80" <= c <= "\udcff" else c for c in line)
        print(json.dumps({"user": shown, "error": str(error), "type": type(error).__name__}, ensure_ascii=False),
              flush=True)
    say(f"forwardpass: error: {error}; the line is left out of the conversation (/reset starts a new one)")


def command(line: str) -> str | None:
    """What a /command line asks for ("help", "reset", "end", or "unknown"); None for a turn."""
    word = line.strip()
    if not word.startswith("/") or " " in word:
        return None
    return "end" if word in ENDS else word[1:] if word in COMMANDS else "unknown"


def reply(g, json_out: bool, ctrl_c: CtrlC | None) -> tuple[str, str]:
    """Run generation `g`, printing its text as it comes: (its text, its stop reason), or what came before Ctrl-C
    and "interrupted"."""
    shown = []
    try:
        with ctrl_c.interrupting() if ctrl_c else contextlib.nullcontext():
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
    from ..loader import load
    from ..packaged import model_id
    fp = load(args.model, device=args.device, progress=not args.json, storage=args.storage,
              kv_cache_dtype=args.kv_cache_dtype, activations=args.activations, ctx_size=args.ctx_size, backend="auto")
    if fp.tokenizer is None or not fp.tokenizer.chat_template:
        raise ForwardpassError("this model has no chat template; use `forwardpass generate`")
    if hasattr(sys.stdin, "reconfigure"):  # bytes that are not text: read, then refused with a word (`undecodable`)
        sys.stdin.reconfigure(errors="surrogateescape")
    if not sys.stdin.isatty() or args.json:
        return converse(args, fp, params, None)
    import readline  # line editing and history for input()
    say(f"forwardpass chat · {model_id(args.model, fp.source)} · /help lists the commands, /bye ends")
    with CtrlC().installed(readline) as ctrl_c:
        return converse(args, fp, params, ctrl_c)


def converse(args, fp, params, ctrl_c: CtrlC | None) -> int:
    """The session: a turn per line read until the end of the input or /bye; `ctrl_c` at a terminal."""
    from ..loop import Generation
    from .generate_cmd import print_logprobs

    start = [{"role": "system", "content": args.system}] if args.system else []
    messages = list(start)
    while True:
        line = read_line(ctrl_c)
        if line is None:
            return 0
        problem = undecodable(line)
        if problem:
            left_out(line, ForwardpassError(problem), args.json)
            continue
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
                           speculative=args.speculative, prompt_cache=args.prompt_cache,
                           prompt_cache_bytes=args.prompt_cache_size)
        except ForwardpassError as e:  # this line cannot be a turn (too long for the context): the session goes on
            left_out(line, e, args.json)
            continue
        messages.append({"role": "user", "content": line})
        if ctrl_c:
            print("model> ", end="", flush=True)
        text, stop_reason = reply(g, args.json, ctrl_c)
        messages.append({"role": "assistant", "content": text})
        if args.json:
            print(json.dumps({"user": line, "assistant": text, "stop_reason": stop_reason,
                              "turn": len(messages) // 2}, ensure_ascii=False), flush=True)
        elif stop_reason != "interrupted":
            print(flush=True)
            if g.result.logprobs:
                print_logprobs(g.result.logprobs, fp.tokenizer)
