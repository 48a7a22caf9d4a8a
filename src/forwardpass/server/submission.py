"""One API request's engine requests: submitted, read as they arrive on the event loop, and ended with the client,
the request or a shutdown's grace period."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from fastapi import Request

from ..engine import Engine, RequestOutput
from ..engine.sequence import Error
from ..errors import ForwardpassError
from ..sampling import SamplingParams
from .access_log import Tally

if TYPE_CHECKING:
    from ..structured.constraints import Grammar


async def client_gone(request: Request) -> None:
    """Returns once the client has disconnected (the request's body already read)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


class GraceOver:
    """Set, on the event loop, when a shutdown's grace period is over: every response still open then ends with its
    final event, whether or not the engine's thread has ended its requests yet (under load one step can outlast the
    HTTP server's own wait, which would cut the responses off)."""

    def __init__(self):
        self.loop: asyncio.AbstractEventLoop | None = None
        self.event: asyncio.Event | None = None

    def wait(self) -> asyncio.Future:
        """On the event loop: a future done once the grace period is over."""
        if self.event is None:
            self.loop, self.event = asyncio.get_running_loop(), asyncio.Event()
        return asyncio.ensure_future(self.event.wait())

    def begin(self, grace: float) -> None:
        """From any thread: the grace period starts now."""
        if self.loop is not None:  # else no response was ever opened: none is left to end
            self.loop.call_soon_threadsafe(lambda: self.loop.call_later(grace, self.event.set))


class Submission:
    """One API request's engine requests, one per choice; iterate for (choice index, output) until all finish.
    `groups`: each prompt with its choices' parameters (choice indices run through them in order). The first choice
    of each prompt is submitted at once (so a refusal is an HTTP error before any response starts); the others when
    its first output arrives, its prompt then being in the cache: they share the prompt's full blocks through the
    prefix cache instead of each computing and holding its own. If the client disconnects, or the iteration stops
    early, every unfinished one is aborted; once a shutdown's grace period is over (GraceOver), each unfinished
    choice ends there and then with finish reason "abort" and the shutdown's error."""

    def __init__(self, engine: Engine, request: Request, groups: list[tuple[list[int], list[SamplingParams]]],
                 grammar: Grammar | None = None, arrival: float | None = None, partition: str = ""):
        self.engine, self.request = engine, request
        self.tally = request.state.tally = Tally(arrival or time.perf_counter())  # what the access log says
        # every choice shares the request's compiled constraint and its drafting partition (auth.partition)
        self.extra = {"grammar": grammar, "arrival": arrival, "partition": partition}
        self.loop = asyncio.get_running_loop()
        self.queue: asyncio.Queue = asyncio.Queue()
        self.prompt_of: dict[int, int] = {}  # choice index → its prompt's first choice (a prompt is counted once)
        leaders, self.pending, index = [], {}, 0  # pending: a prompt's first choice → the choices that follow it
        for prompt_ids, params in groups:
            for p in params[1:]:  # the first is checked as it is submitted
                engine.check_request(prompt_ids, p)
            leaders.append((index, prompt_ids, params[0]))
            self.prompt_of.update({index + j: index for j in range(len(params))})
            self.pending[index] = [(index + j, prompt_ids, p) for j, p in enumerate(params[1:], 1)]
            index += len(params)
        self.running: dict[str, int] = {}  # engine request id → choice index
        try:
            for i, prompt_ids, p in leaders:
                self.running[engine.submit(prompt_ids, p, lambda o, i=i: self._deliver(i, o), **self.extra)] = i
        except BaseException:
            self.abort()  # nothing of a refused request keeps running
            raise

    def _deliver(self, i: int, out: RequestOutput) -> None:
        """From the engine's thread: hand the output to the event loop."""
        try:
            self.loop.call_soon_threadsafe(self._arrived, i, out)
        except RuntimeError:  # the event loop is closed: nobody is left to read it
            pass

    def _arrived(self, i: int, out: RequestOutput) -> None:
        for j, prompt_ids, p in self.pending.pop(i, []):  # a prompt's first choice is computed: the others join it
            try:
                self.running[self.engine.submit(prompt_ids, p, lambda o, j=j: self._deliver(j, o), **self.extra)] = j
            except ForwardpassError as e:  # the engine stopped taking requests meanwhile
                self.queue.put_nowait((j, RequestOutput(f"choice-{j}", None, "", finish_reason="error",
                                                        error=Error(str(e), "failed"))))
        self.tally.add(i, self.prompt_of.get(i, i), out.prompt_tokens, out.completion_tokens, out.token_id is not None)
        self.queue.put_nowait((i, out))

    def abort(self) -> None:
        for request_id in self.running:
            self.engine.abort(request_id)
        self.running, self.pending = {}, {}

    def _cut_by_shutdown(self) -> list[tuple[int, RequestOutput]]:
        """The final output of every unfinished choice, the grace period being over; their engine requests aborted."""
        error = Error("the server is shutting down", "shutdown")
        unfinished = [(rid, i) for rid, i in self.running.items()] + [
            (f"choice-{j}", j) for followers in self.pending.values() for j, _, _ in followers]
        ends = [(i, RequestOutput(rid, None, "", finish_reason="abort", error=error)) for rid, i in unfinished]
        self.abort()
        return sorted(ends, key=lambda end: end[0])

    async def __aiter__(self) -> AsyncIterator[list[tuple[int, RequestOutput]]]:
        """Everything delivered since the last iteration, in order, as (choice index, output) pairs: a burst of
        tokens made in one step goes out as one piece, not one per token."""
        gone = asyncio.ensure_future(client_gone(self.request))
        over = self.request.app.state.grace_over.wait()
        try:
            while self.running:
                get = asyncio.ensure_future(self.queue.get())
                await asyncio.wait({get, gone, over}, return_when=asyncio.FIRST_COMPLETED)
                if not get.done():
                    get.cancel()
                    if not gone.done():
                        yield self._cut_by_shutdown()
                    return
                ready = [get.result()]
                while not self.queue.empty():
                    ready.append(self.queue.get_nowait())
                for _, out in ready:
                    if out.finish_reason is not None:
                        self.running.pop(out.request_id, None)
                yield ready
        finally:
            gone.cancel()
            over.cancel()
            self.abort()
