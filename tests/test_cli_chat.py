"""`forwardpass chat` at a terminal (a pseudo-terminal): the banner, /help, /reset saying so, a command the model never
sees, Ctrl-C stopping a reply while the session goes on, /bye ending it."""

from __future__ import annotations

import os
import pty
import re
import select
import sys
import time


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


def test_chat_at_a_terminal_survives_ctrl_c_mid_reply():
    pid, fd = pty.fork()
    if pid == 0:  # the child: chat with the pseudo-terminal as its own
        os.execv(sys.executable, [sys.executable, "-m", "forwardpass", "chat", "--max-tokens", "2000",
                                  "--logit-bias", "0=-100", "--logit-bias", "2=-100"])  # a reply that never ends
    try:
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
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                assert os.waitstatus_to_exitcode(status) == 0
                return
            try:
                os.read(fd, 4096)
            except OSError:
                pass
            time.sleep(0.1)
        raise AssertionError("chat did not end on /bye")
    finally:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
        os.close(fd)
