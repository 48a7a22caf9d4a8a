"""The responses a server keeps for retrieve, input_items.list and previous_response_id: at most `capacity`, the
least recently used forgotten first. It lives in the server's memory (each replica its own) and is read and written
on the event loop only."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from .errors import APIError
from .quoting import quoted

STORED_RESPONSES = 512  # responses kept (each holds its conversation's text, up to the body limit)


@dataclass
class Stored:
    response: dict  # the Response object as it was returned
    input_items: list[dict]  # its input items, with their ids (input_items.list)
    conversation: list[dict]  # chat messages through its output (without its instructions): what a next turn follows


class ResponseStore:
    def __init__(self, capacity: int = STORED_RESPONSES):
        self.capacity = capacity
        self.kept: OrderedDict[str, Stored] = OrderedDict()

    def put(self, stored: Stored) -> None:
        rid = stored.response["id"]
        self.kept[rid] = stored
        self.kept.move_to_end(rid)
        while len(self.kept) > self.capacity:
            self.kept.popitem(last=False)

    def get(self, rid: str, param: str | None = None) -> Stored:
        """The stored response `rid`; a 404 naming it where none is kept (never stored, deleted or forgotten)."""
        stored = self.kept.get(rid)
        if stored is None:
            raise APIError(404, f"no response with id {quoted(rid)} is stored here (it was stored with store: false, "
                                f"deleted, or forgotten: the server keeps its last {self.capacity})",
                           "response_not_found", param)
        self.kept.move_to_end(rid)
        return stored

    def delete(self, rid: str) -> None:
        self.get(rid)
        del self.kept[rid]
