"""Offline inference over a file of OpenAI-shaped requests (the Batch API's JSONL): each line one request, each
answered through the server's own routes in-process, the answers written in the input's order.

Input lines: {"custom_id": "...", "method": "POST", "url": "/v1/chat/completions", "body": {...}} (also
/v1/completions and /v1/messages). Output lines, as OpenAI's batch output: {"id", "custom_id", "response":
{"status_code", "body"}, "error"}; a request the API refuses is a response with its 4xx status and error body, a line
that is not a request is an `error`. The output is written as a prefix of the input, one flushed line at a time, so an
interrupted run leaves a file the next run resumes: lines whose custom_id is already there are skipped, a last line
cut mid-write is dropped and redone. Requests run `concurrency` at a time: the engine batches them as it batches a
server's clients."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .engine import Engine
from .errors import ForwardpassError

URLS = ("/v1/chat/completions", "/v1/completions", "/v1/messages")
FIELDS = {"custom_id", "method", "url", "body"}


@dataclass
class Line:
    """One input line: its request, or why it is not one."""
    number: int  # 1-based, in the input file
    custom_id: str | None
    url: str | None = None
    body: dict | None = None
    problem: str | None = None

    @property
    def id(self) -> str:
        """Its answer's id, which also names a line without a custom_id when a run resumes."""
        return f"batch_req_{self.number}"


def read_requests(path: Path) -> list[Line]:
    """Every non-blank line of the input. A custom_id used twice refuses the whole file (answers could not be told
    apart), before anything runs."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ForwardpassError(f"{path}: cannot read the requests ({e})") from None
    lines, seen = [], {}
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        line = parse_line(number, raw)
        if line.custom_id is not None:
            if line.custom_id in seen:
                raise ForwardpassError(f"{path}: custom_id {line.custom_id!r} is on lines {seen[line.custom_id]} and "
                                       f"{number}; each request needs its own")
            seen[line.custom_id] = number
        lines.append(line)
    return lines


def parse_line(number: int, raw: str) -> Line:
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as e:
        return Line(number, None, problem=f"line {number} is not JSON ({e.msg})")
    if not isinstance(data, dict):
        return Line(number, None, problem=f"line {number} is not a JSON object")
    custom_id = data.get("custom_id")
    if not isinstance(custom_id, str) or not custom_id:
        return Line(number, None, problem=f"line {number} has no custom_id (a non-empty string)")
    problem = None
    if set(data) - FIELDS:
        problem = f"unsupported field {sorted(set(data) - FIELDS)[0]!r} (a line has {', '.join(sorted(FIELDS))})"
    elif data.get("method", "POST") != "POST":
        problem = f"method {data['method']!r}: only POST"
    elif data.get("url") not in URLS:
        problem = f"url {data.get('url')!r} is not one of {', '.join(URLS)}"
    elif not isinstance(data.get("body"), dict):
        problem = "body must be a JSON object"
    elif data["body"].get("stream"):
        problem = "stream: a batch answers whole responses"
    if problem:
        return Line(number, custom_id, problem=problem)
    return Line(number, custom_id, data["url"], data["body"])


def answered(path: Path) -> set[str]:
    """The answers already in an output file from an earlier run: their custom_ids, and the ids of lines that had
    none. A last line cut mid-write is removed from the file; any other line that is not an answer refuses the file
    (it is not ours to overwrite)."""
    if not path.exists():
        return set()
    data = path.read_bytes()
    complete = data[: data.rfind(b"\n") + 1]  # everything up to the last full line
    done = set()
    for number, raw in enumerate(complete.decode("utf-8", errors="replace").splitlines(), 1):
        try:
            row = json.loads(raw)
            done.add(row["custom_id"] if row["custom_id"] is not None else row["id"])
        except (json.JSONDecodeError, KeyError, TypeError):
            raise ForwardpassError(f"{path}: line {number} is not a batch answer; give another output file") from None
    if len(complete) < len(data):
        with open(path, "r+b") as f:
            f.truncate(len(complete))
    return done


@dataclass
class Report:
    requests: int
    skipped: int = 0  # answered by an earlier run
    succeeded: int = 0
    failed: int = 0
    seconds: float = 0.0
    interrupted: bool = False
    output: str = ""
    failures: list[str] = field(default_factory=list)  # the first few, as "custom_id: reason"

    def ended(self, start: float, stop: threading.Event) -> Report:
        """The run that began at `start` (perf_counter) is over: its time, and whether `stop` cut it short."""
        self.seconds = time.perf_counter() - start
        self.interrupted = stop.is_set() and self.skipped + self.succeeded + self.failed < self.requests
        return self


def pending(requests: Path, output: Path) -> tuple[list[Line], Report]:
    """The lines of `requests` not yet answered in `output`, and a report counting those that are."""
    lines = read_requests(requests)
    done_before = answered(output)
    todo = [line for line in lines if (line.custom_id or line.id) not in done_before]
    return todo, Report(len(lines), skipped=len(lines) - len(todo), output=str(output))


def answer(line: Line, status: int | None, body: dict | None) -> dict:
    if line.problem is not None:
        return {"id": line.id, "custom_id": line.custom_id, "response": None,
                "error": {"code": "invalid_request", "message": line.problem, "line": line.number}}
    return {"id": line.id, "custom_id": line.custom_id,
            "response": {"status_code": status, "body": body}, "error": None}


def run_batch(engine: Engine, app, requests: Path, output: Path, concurrency: int = 64,
              progress: Callable[[int, int], None] | None = None, stop: threading.Event | None = None) -> Report:
    """Answer every request of `requests` not yet in `output` through `app` (the server's routes over `engine`),
    appending the answers in input order. The engine runs in the calling thread (where the model was loaded); the
    requests are sent from another. `stop` set: no new request starts, those running finish, and every answer
    before the first unfinished one is written. `progress(done, total)` after each answer written."""
    todo, report = pending(requests, output)
    stop = stop or threading.Event()
    start = time.perf_counter()
    finished = threading.Event()

    def client() -> None:
        try:
            asyncio.run(send_all(app, todo, output, concurrency, report, progress, stop))
        finally:
            finished.set()  # the engine's loop sees it within half a second

    sender = threading.Thread(target=client, name="forwardpass-batch", daemon=True)
    sender.start()
    engine.run(until=finished.is_set)
    sender.join()
    return report.ended(start, stop)


async def respond(client, line: Line) -> tuple[int, dict]:
    """A request line's (status, body) through the routes `client` reaches."""
    r = await client.post(line.url, json=line.body)
    try:
        return r.status_code, r.json()
    except json.JSONDecodeError:
        return r.status_code, {"error": {"message": r.text}}


def record(out, row: dict, report: Report) -> None:
    """Write one answer line (flushed: a run cut short leaves whole lines) and count it."""
    out.write(json.dumps(row, ensure_ascii=False) + "\n")
    out.flush()
    ok = row["error"] is None and row["response"]["status_code"] == 200
    report.succeeded += ok
    report.failed += not ok
    if not ok and len(report.failures) < 5:
        reason = row["error"]["message"] if row["error"] else str(row["response"]["body"])[:200]
        report.failures.append(f"{row['custom_id']}: {reason}")


async def send_all(app, todo: list[Line], output: Path, concurrency: int, report: Report,
                   progress: Callable[[int, int], None] | None, stop: threading.Event) -> None:
    import httpx

    gate = asyncio.Semaphore(concurrency)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://batch", timeout=None) as client:

        async def one(line: Line) -> dict | None:
            """The line's answer, or None if `stop` came before it started."""
            async with gate:
                if stop.is_set():
                    return None
                if line.problem is not None:
                    return answer(line, None, None)
                return answer(line, *await respond(client, line))

        with open(output, "a", encoding="utf-8") as out:
            tasks = [asyncio.create_task(one(line)) for line in todo]
            for written, task in enumerate(tasks, 1):  # in input order: each once every earlier one is written
                row = await task
                if row is None:
                    break  # stopped before this one ran: the rest wait for the next run
                record(out, row, report)
                if progress:
                    progress(report.skipped + written, report.requests)
            for task in tasks:
                task.cancel()
