"""The Responses API's stream: server-sent events named by their type, each with its sequence_number, in OpenAI's
order — response.created and response.in_progress; per output item its output_item.added, its content (a message's
content_part.added, output_text.delta…, output_text.done, content_part.done; a function call's
function_call_arguments.delta and .done) and its output_item.done; then response.completed, response.incomplete
(with the reason) or response.failed (with the error). A reply without tools streams its text as it comes; one that
may call functions is held until it ends, then sent as the items it reads as."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .responses import Job


class Sequenced:
    """Events numbered in the order they are sent."""

    def __init__(self):
        self.number = 0

    def __call__(self, kind: str, **data) -> str:
        body = {"type": kind, "sequence_number": self.number} | data
        self.number += 1
        return f"event: {kind}\ndata: {json.dumps(body, ensure_ascii=False)}\n\n"


def opened(event: Sequenced, item: dict, index: int) -> Iterator[str]:
    """An output item added, empty (a message's text part begun)."""
    if item["type"] == "message":
        yield event("response.output_item.added", output_index=index, item=item | {"status": "in_progress",
                                                                                   "content": []})
        yield event("response.content_part.added", item_id=item["id"], output_index=index, content_index=0,
                    part={"type": "output_text", "text": "", "annotations": [], "logprobs": []})
    else:
        yield event("response.output_item.added", output_index=index, item=item | {"status": "in_progress",
                                                                                   "arguments": ""})


def delta(event: Sequenced, item: dict, index: int, text: str) -> str:
    if item["type"] == "message":
        return event("response.output_text.delta", item_id=item["id"], output_index=index, content_index=0,
                     delta=text, logprobs=[])
    return event("response.function_call_arguments.delta", item_id=item["id"], output_index=index, delta=text)


def closed(event: Sequenced, item: dict, index: int) -> Iterator[str]:
    """An output item's content done, then the item itself, whole."""
    if item["type"] == "message":
        part = item["content"][0]
        yield event("response.output_text.done", item_id=item["id"], output_index=index, content_index=0,
                    text=part["text"], logprobs=[])
        yield event("response.content_part.done", item_id=item["id"], output_index=index, content_index=0, part=part)
    else:
        yield event("response.function_call_arguments.done", item_id=item["id"], output_index=index,
                    name=item["name"], arguments=item["arguments"])
    yield event("response.output_item.done", output_index=index, item=item)


def whole(event: Sequenced, item: dict, index: int) -> Iterator[str]:
    """A held item, sent at once: added, its content in one delta, done."""
    yield from opened(event, item, index)
    content = item["content"][0]["text"] if item["type"] == "message" else item["arguments"]
    if content:
        yield delta(event, item, index, content)
    yield from closed(event, item, index)


async def response_events(job: Job, submission, keep: Callable[[dict], None]) -> AsyncIterator[str]:
    """The stream of one response; `keep` stores the final Response object (a failed one is not kept)."""
    event = Sequenced()
    yield event("response.created", response=job.response("in_progress"))
    yield event("response.in_progress", response=job.response("in_progress"))
    live = job.calls is None
    message = {"type": "message", "id": job.message_id, "role": "assistant"}
    if live:
        for e in opened(event, message, 0):
            yield e
    text, last = "", None
    async for ready in submission:
        for _, out in ready:
            text, last = text + out.text, out
            if live and out.text:
                yield delta(event, message, 0, out.text)
    if last is None or last.finish_reason not in ("stop", "length"):
        why = last.error.message if last is not None and last.error is not None else "the response ended early"
        yield event("response.failed", response=job.failed(why))
        return
    final = job.finished(text, last)
    for index, item in enumerate(final["output"]):
        for e in closed(event, item, index) if live else whole(event, item, index):
            yield e
    keep(final)
    kind = "response.completed" if final["status"] == "completed" else "response.incomplete"
    yield event(kind, response=final)
