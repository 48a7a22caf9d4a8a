"""The explorer's answers, each computed once: the same question (endpoint, model, body) asked again, by a second
page, a second widget or while the first is still computing, gets the first answer. A timed answer (one that measures
this machine) is remembered too, with the time it was measured; the page's Run button asks with `fresh` for a new
measurement, which then replaces it. A failure is not remembered.

The opening page's slow answers (the article's five words, both loops timed, the ring, many users) are prepared when
the explorer starts (`prepare`), so a page opened after that shows every widget at once; opened sooner, its requests
join the computations under way instead of starting them again."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future

KEPT = 256  # answers remembered, the least recently asked dropped first


class Answers:
    def __init__(self, kept: int = KEPT):
        self.kept = kept
        self.futures: OrderedDict[str, Future] = OrderedDict()
        self.lock = threading.Lock()

    @staticmethod
    def key(path: str, body: dict) -> str:
        return f"{path} {json.dumps(body, sort_keys=True)}"

    def get(self, path: str, body: dict, compute: Callable[[], dict], fresh: bool = False) -> dict:
        """compute()'s answer for (path, body): remembered, or computed now (once, however many ask at the same
        time); `fresh` computes it again and remembers the new one."""
        key = self.key(path, body)
        with self.lock:
            future = None if fresh else self.futures.get(key)
            mine = future is None
            if mine:
                future = self.futures[key] = Future()
            self.futures.move_to_end(key)
            while len(self.futures) > self.kept:
                self.futures.popitem(last=False)
        if not mine:
            return future.result()
        try:
            answer = compute()
        except BaseException as e:
            with self.lock:
                if self.futures.get(key) is future:
                    del self.futures[key]
            future.set_exception(e)
            raise
        future.set_result(answer)
        return answer

    def known(self, path: str, body: dict) -> bool:
        """an answer for (path, body) is remembered (computed or under way)"""
        with self.lock:
            return self.key(path, body) in self.futures


def prepare(asks: list[Callable[[], object]], stop: threading.Event) -> threading.Thread:
    """Run `asks` one after another on a background thread (each goes through the answers like a page's request),
    none after `stop` is set: the thread, so a caller may wait for it."""
    def run():
        for ask in asks:
            if stop.is_set():
                return
            try:
                ask()
            except Exception:  # noqa: BLE001 - a page asking the same question gets the error then, in its widget
                pass
    thread = threading.Thread(target=run, name="explorer-prepare", daemon=True)
    thread.start()
    return thread
