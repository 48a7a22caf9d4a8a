"""Offline inference over a file of OpenAI-shaped requests (the Batch API's JSONL): each line one request, each
answered through the server's own routes in-process, the answers written in the input's order.

Input lines: {"custom_id": "...", "method": "POST", "url": "/v1/chat/completions", "body": {...}} (also /v1/completions,
/v1/messages and /v1/responses). Output lines, as OpenAI's batch output: {"id", "custom_id", "response": {"status_code",
"body"}, "error"}; a request the API refuses is a response with its 4xx status and error body, a line that is not a
request is an `error`. The output is written as a prefix of the input, one flushed line at a time, so an interrupted run
leaves a file the next run resumes: lines whose custom_id is already there are skipped, a last line cut mid-write is
dropped and redone. An existing output is written to only if it is provably an earlier run's (`resumable`), and by one
run at a time (`writing`); any other is refused before any work, left as it is. Requests run
`concurrency` at a time: the engine batches them as it batches a server's clients."""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

from .errors import ForwardpassError

if TYPE_CHECKING:  # checking the files (the command does, before the model loads) needs no PyTorch
    from .engine import Engine
    from .server.registry import Registry

URLS = ("/v1/chat/completions", "/v1/completions", "/v1/messages", "/v1/responses")
FIELDS = {"custom_id", "method", "url", "body"}
ANSWER = {"id", "custom_id", "response", "error"}  # an output line's keys
CUT = b'{"id": "batch_req_'  # how every answer line starts: a last line cut mid-write starts so (or is part of it)


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
        text = path.read_text(encoding="utf-8-sig")  # less a byte-order mark, as Windows editors save UTF-8
    except (OSError, UnicodeDecodeError) as e:
        raise ForwardpassError(f"{path}: cannot read the requests ({e})") from None
    lines, seen = [], {}
    for number, raw in enumerate(text.split("\n"), 1):  # JSON Lines: only \n ends a line (not U+2028, \x85, …)
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


def output_bytes(requests: Path, output: Path) -> bytes | None:
    """What `output` holds now (None: it is to be created), once it is known to be a file this command can read and
    append to, in a directory that exists, and not the input."""
    if output.is_dir():
        raise ForwardpassError(f"{output} is a directory; give the output file's path")
    if not output.exists():
        folder = output.parent
        if not folder.is_dir():
            raise ForwardpassError(f"{output}: {folder} is not a directory" if folder.exists()
                                   else f"{output}: no such directory {folder}")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise ForwardpassError(f"{output}: cannot create a file in {folder} (permission denied)")
        return None
    if not output.is_file():
        raise ForwardpassError(f"{output} is not a regular file; give a file's path")
    if requests.exists() and output.samefile(requests):
        raise ForwardpassError("the output file must not be the input file")
    try:
        with open(output, "r+b") as f:  # opened for writing too: a file we could not append to is refused now
            return f.read()
    except OSError as e:
        raise ForwardpassError(f"{output}: cannot read and append to it ({e.strerror or e})") from None


def is_answer(raw: bytes) -> dict | None:
    """One complete output line as `answer` wrote it, or None."""
    try:
        row = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not (isinstance(row, dict) and set(row) == ANSWER and isinstance(row["id"], str)
            and row["id"].startswith("batch_req_") and (row["custom_id"] is None or isinstance(row["custom_id"], str))):
        return None
    response, error = row["response"], row["error"]
    if error is None and isinstance(response, dict) and set(response) == {"status_code", "body"}:
        return row
    if response is None and isinstance(error, dict):
        return row
    return None


def is_cut(tail: bytes) -> bool:
    """Whether a last line without its newline is the start of an answer, cut mid-write (maybe mid-character)."""
    if not (tail.startswith(CUT) or CUT.startswith(tail)):
        return False
    try:
        codecs.getincrementaldecoder("utf-8")().decode(tail, final=False)
    except UnicodeDecodeError:
        return False
    return True


def resumable(requests: Path, output: Path) -> tuple[list[Line], set[str], int]:
    """The lines of `requests`, the answers `output` already holds from an earlier run (their custom_ids, and the ids
    of lines that had none), and the length of its whole answer lines. `output` is resumed only if it is provably
    such a run's: every complete line an answer to a request of `requests`, and a last line without its newline only
    if it is an answer cut mid-write (dropped, then redone). Anything else refuses it: it is not this command's to
    overwrite. Nothing is written."""
    lines = read_requests(requests)
    data = output_bytes(requests, output)
    if not data:
        return lines, set(), 0
    names = {line.custom_id or line.id for line in lines}
    whole = data.rfind(b"\n") + 1  # everything up to the last full line
    complete = data[:whole].split(b"\n")[:-1]
    done = set()
    refuse = f"give another output file ({output} is left as it is)"
    for number, raw in enumerate(complete, 1):
        row = is_answer(raw)
        if row is None:
            raise ForwardpassError(f"{output}: line {number} is not a batch answer; {refuse}")
        name = row["custom_id"] if row["custom_id"] is not None else row["id"]
        if name not in names:
            raise ForwardpassError(f"{output}: line {number} answers {name!r}, which {requests} does not ask; {refuse}")
        done.add(name)
    if whole < len(data) and not is_cut(data[whole:]):
        raise ForwardpassError(f"{output}: line {len(complete) + 1} is not a batch answer; {refuse}")
    return lines, done, whole


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


@contextlib.contextmanager
def writing(output: Path) -> Iterator[None]:
    """`output` held for one run (created if new): a lock on the file (flock, released however the run ends), so a
    second run given the same output is refused in one line, the file left as it is, rather than both appending
    every answer."""
    import fcntl

    with open(output, "ab") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = lock_holder(output)
            raise ForwardpassError(f"another batch is writing {output}" + (f" (pid {holder})" if holder else "")
                                   + "; run this one again once it ends, or give another output file") from None
        yield


def lock_holder(path: Path) -> int | None:
    """The process holding a flock on `path`, from Linux's /proc/locks (None where it cannot be told)."""
    st = path.stat()
    file = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"  # as /proc/locks names it
    try:
        locks = Path("/proc/locks").read_text()
    except OSError:
        return None
    for line in locks.splitlines():  # "1: FLOCK  ADVISORY  WRITE 1234 fe:00:5308722 0 EOF"
        fields = line.split()
        if "FLOCK" in fields and file in fields and fields[fields.index(file) - 1].isdigit():
            return int(fields[fields.index(file) - 1])
    return None


def pending(requests: Path, output: Path) -> tuple[list[Line], Report]:
    """The lines of `requests` not yet answered in `output`, and a report counting those that are. A last answer cut
    mid-write is removed from the file."""
    lines, done_before, whole = resumable(requests, output)
    try:
        if output.exists() and output.stat().st_size > whole:
            os.truncate(output, whole)
    except OSError as e:
        raise unwritable(output, e) from None
    todo = [line for line in lines if (line.custom_id or line.id) not in done_before]
    return todo, Report(len(lines), skipped=len(lines) - len(todo), output=str(output))


def unwritable(output: Path, e: OSError) -> ForwardpassError:
    return ForwardpassError(f"{output}: cannot write the answers ({e.strerror or e}); those written whole are kept: "
                            "run the same command again to resume")


@contextlib.contextmanager
def appending(output: Path) -> Iterator[IO[str]]:
    """`output` opened to append answers to. Failing to write one (a full disk) ends the run with one line for the user;
    the answers before it stay (a last one cut mid-write is redone by the next run)."""
    try:
        with open(output, "a", encoding="utf-8") as out:
            yield out
    except OSError as e:  # from a write, or from closing (flushing what a failed write left)
        raise unwritable(output, e) from None


def answer(line: Line, status: int | None, body: dict | None) -> dict:
    if line.problem is not None:
        return {"id": line.id, "custom_id": line.custom_id, "response": None,
                "error": {"code": "invalid_request", "message": line.problem, "line": line.number}}
    return {"id": line.id, "custom_id": line.custom_id,
            "response": {"status_code": status, "body": body}, "error": None}


def run_batch(engines: Engine | Registry, app, requests: Path, output: Path, concurrency: int = 64,
              progress: Callable[[int, int], None] | None = None, stop: threading.Event | None = None) -> Report:
    """Answer every request of `requests` not yet in `output` through `app` (the server's routes over `engines`: one
    engine, or a registry of the models the requests name), appending the answers in input order. The engines run in
    the calling thread (where the first model was loaded); the
    requests are sent from another. `stop` set: no new request starts, those running finish, and every answer
    before the first unfinished one is written. `progress(done, total)` after each answer written."""
    todo, report = pending(requests, output)
    stop = stop or threading.Event()
    start = time.perf_counter()
    finished = threading.Event()
    failed: list[Exception] = []  # what ended the sender early (the output could not be written), raised here

    def client() -> None:
        try:
            asyncio.run(send_all(app, todo, output, concurrency, report, progress, stop))
        except Exception as e:
            failed.append(e)
        finally:
            finished.set()  # the engine's loop sees it within half a second

    sender = threading.Thread(target=client, name="forwardpass-batch", daemon=True)
    sender.start()
    engines.run(until=finished.is_set)
    sender.join()
    if failed:
        raise failed[0]
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

        with appending(output) as out:
            tasks = [asyncio.create_task(one(line)) for line in todo]
            try:
                for written, task in enumerate(tasks, 1):  # in input order: each once every earlier one is written
                    row = await task
                    if row is None:
                        break  # stopped before this one ran: the rest wait for the next run
                    record(out, row, report)
                    if progress:
                        progress(report.skipped + written, report.requests)
            finally:
                for task in tasks:
                    task.cancel()
