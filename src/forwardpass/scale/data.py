"""`forwardpass batch --replicas N`: the requests answered by N engine actors through Ray Data's `map_batches`, in
the input's order (Ray Data keeps it: `preserve_order`), written one flushed line at a time as they come back, so an
interrupted run resumes as the local one does (batch.py: what is skipped, what is redone)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import ray

from ..batch import Line, Report, answer, appending, pending, record, respond
from ..errors import ForwardpassError
from .cluster import join, thread_env
from .hosted import HostedEngine, ReplicaSpec


class Answerer:
    """A Ray Data actor: one engine, answering each batch of rows through the server's routes."""

    def __init__(self, spec: ReplicaSpec):
        self.hosted = HostedEngine(spec)

    def __call__(self, batch: dict) -> dict:
        columns = zip(batch["number"], batch["url"], batch["body"], strict=True)
        lines = [Line(int(n), None, u, json.loads(b)) for n, u, b in columns]
        rows = asyncio.run(self.answer(lines))
        return {"number": [line.number for line in lines], "status": [s for s, _ in rows],
                "body": [json.dumps(b, ensure_ascii=False) for _, b in rows]}

    async def answer(self, lines: list[Line]) -> list[tuple[int, dict]]:
        import httpx

        transport = httpx.ASGITransport(app=self.hosted.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://batch", timeout=None) as client:
            return await asyncio.gather(*(respond(client, line) for line in lines))


def run_on_ray(spec: ReplicaSpec, requests: Path, output: Path, replicas: int, threads: int,
               ray_address: str | None = None, progress: Callable[[int, int], None] | None = None,
               stop: threading.Event | None = None, rows_per_batch: int = 16) -> Report:
    """Answer every request of `requests` not yet in `output` on `replicas` engine actors of `threads` threads, each
    given `rows_per_batch` requests at a time (answered at once: the engine batches them). What Ray prints goes to
    stderr: stdout is the command's own."""
    with contextlib.redirect_stdout(sys.stderr):
        return _run_on_ray(spec, requests, output, replicas, threads, ray_address, progress, stop, rows_per_batch)


def _run_on_ray(spec, requests, output, replicas, threads, ray_address, progress, stop, rows_per_batch) -> Report:
    from ray.data import DataContext

    todo, report = pending(requests, output)
    stop = stop or threading.Event()
    start = time.perf_counter()
    started = join(ray_address, replicas, threads)
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    results = iter(())
    try:
        context = DataContext.get_current()
        context.execution_options.preserve_order = True
        context.enable_progress_bars = False
        asked = [{"number": line.number, "url": line.url, "body": json.dumps(line.body)}
                 for line in todo if line.problem is None]
        if asked:
            data = ray.data.from_items(asked, override_num_blocks=max(1, -(-len(asked) // rows_per_batch)))
            answers = data.map_batches(Answerer, fn_constructor_args=(spec,), batch_size=rows_per_batch,
                                       batch_format="numpy", compute=ray.data.ActorPoolStrategy(size=replicas),
                                       num_cpus=threads, runtime_env={"env_vars": thread_env(threads)})
            results = iter(answers.iter_rows())
        with appending(output) as out:
            for written, line in enumerate(todo, 1):
                if stop.is_set():
                    break
                if line.problem is not None:
                    row = answer(line, None, None)
                else:
                    got = next(results)
                    if int(got["number"]) != line.number:  # Ray Data keeps the order; nothing else is written
                        raise ForwardpassError(f"answers came back out of order (line {got['number']} for "
                                               f"{line.number})")
                    row = answer(line, int(got["status"]), json.loads(got["body"]))
                record(out, row, report)
                if progress:
                    progress(report.skipped + written, report.requests)
    finally:
        getattr(results, "close", lambda: None)()  # Ray Data's iterator ends before the cluster does
        if started:
            ray.shutdown()
    return report.ended(start, stop)
