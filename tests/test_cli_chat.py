"""`forwardpass chat` at a terminal (a pseudo-terminal): the banner, /help, /reset saying so, a command the model never
sees, Ctrl-C stopping a reply while the session goes on (a second one at once answered at the prompt), Ctrl-C at the
prompt, a line that is not UTF-8, /bye and Ctrl-D ending it."""

from __future__ import annotations

import contextlib
import os
import pty
import re
import select
import sys
import time
from collections.abc import Iterator


def read_until(fd: int, pattern: str, timeout: float = 120) -> str:
    """What the terminal shows until `pattern` (a regex) appears in it."""
    seen, deadline = "", time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(fd, 4096).decode(errors="replace")
            except OSError:
                break
            seen += chunk
            if re.search(pattern, seen):
                return seen
    raise AssertionError(f"never saw {pattern!r}; the terminal showed {seen[-800:]!r}")


@contextlib.contextmanager
def chat_at_a_terminal(*options: str) -> Iterator[tuple[int, int]]:
    """(pid, terminal fd) of `forwardpass chat` on a pseudo-terminal of its own, under a strict UTF-8 locale (a byte
    that is not UTF-8 is an error to decode, as in en_US.UTF-8); killed, if still running, and the terminal closed
    after."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: chat with the pseudo-terminal as its own
        os.execve(sys.executable, [sys.executable, "-m", "forwardpass", "chat", *options],
                  {**os.environ, "PYTHONIOENCODING": "utf-8:strict"})
    try:
        yield pid, fd
    finally:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
        os.close(fd)


def ended(pid: int, fd: int, timeout: float = 60) -> int:
    """The exit status of the chat on `fd`, once it ends (read on, so its last words do not block it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        try:
            os.read(fd, 4096)
        except OSError:
            pass
        time.sleep(0.1)
    raise AssertionError("chat did not end")


def test_chat_at_a_terminal_survives_ctrl_c_mid_reply():
    with chat_at_a_terminal("--max-tokens", "2000", "--logit-bias", "0=-100",
                            "--logit-bias", "2=-100") as (pid, fd):  # a reply that never ends
        shown = read_until(fd, r"you> ")
        assert "/help lists the commands" in shown
        os.write(fd, b"/help\n")
        assert "/reset" in read_until(fd, r"/bye.*\n(.|\n)*you> ")
        os.write(fd, b"/nonsense\n")
        assert "unknown command /nonsense" in read_until(fd, r"nothing was sent to the model(.|\n)*you> ")
        os.write(fd, b"Tell me a very long story about the sea.\n")
        read_until(fd, r"model> \S+ \S+ \S+")  # a few words of the reply
        os.write(fd, b"\x03")  # Ctrl-C: the terminal sends SIGINT
        read_until(fd, r"\[stopped\](.|\n)*you> ")
        os.write(fd, b"/reset\n")
        read_until(fd, r"a new conversation(.|\n)*you> ")
        os.write(fd, b"/bye\n")
        assert ended(pid, fd) == 0


def test_ctrl_c_right_after_a_stopped_reply_is_answered_at_the_prompt_and_nothing_typed_is_lost():
    """A second Ctrl-C that lands as the first one's reply stops (before the prompt reads again) is answered as a
    Ctrl-C at the prompt: said once, a fresh prompt, the session going on, the next line typed read. Ctrl-C at the
    prompt drops the line being typed; Ctrl-D at an empty prompt ends the session."""
    with chat_at_a_terminal("--max-tokens", "2000", "--logit-bias", "0=-100", "--logit-bias", "2=-100") as (pid, fd):
        read_until(fd, r"you> ")
        for _ in range(4):  # where the second Ctrl-C lands varies by a few microseconds: several tries
            os.write(fd, b"Tell me a very long story about the sea.\n")
            read_until(fd, r"model> \S+ \S+ \S+")
            os.write(fd, b"\x03")
            read_until(fd, r"\[stopped\]")
            os.write(fd, b"\x03")  # at once: the prompt is not reading yet
            shown = read_until(fd, r"ends the session\)\r?\n(.|\n)*you> ", timeout=20)
            assert shown.count("ends the session") == 1 and "Traceback" not in shown
            os.write(fd, b"/help\n")  # the next line typed is read, not dropped
            read_until(fd, r"/reset +start a new conversation(.|\n)*you> ", timeout=20)
        os.write(fd, b"a line half typed")
        time.sleep(0.3)
        os.write(fd, b"\x03")
        read_until(fd, r"ends the session\)\r?\n(.|\n)*you> ", timeout=20)
        os.write(fd, b"/nonsense\n")  # the half-typed line was dropped: this one is read alone
        read_until(fd, r"unknown command /nonsense;(.|\n)*you> ", timeout=20)
        os.write(fd, b"\x04")  # Ctrl-D at an empty prompt
        assert ended(pid, fd) == 0


def test_a_line_typed_that_is_not_utf8_is_said_and_left_out():
    with chat_at_a_terminal("--max-tokens", "8") as (pid, fd):
        read_until(fd, r"you> ")
        os.write(fd, b"caf\xff au lait\n")
        shown = read_until(fd, r"not valid UTF-8 \(byte 0xFF\); the line is left out(.|\n)*you> ", timeout=20)
        assert "Traceback" not in shown and "model>" not in shown
        os.write(fd, b"/bye\n")
        assert ended(pid, fd) == 0
