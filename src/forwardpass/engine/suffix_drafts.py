"""Drafts that learn across requests: what recent requests' prompts and outputs continued with, offered as drafts to the
next ones (SuffixDecoding's idea, over an index of recent text rather than a suffix tree).

Each partition (one model's requests under one API key or end user: never shared between them) keeps the token streams
of its last finished requests — prompt then output, each stream closed by a separator no match crosses — bounded in
tokens (the oldest streams dropped first), and where each KEY-gram of them occurred. A draft for a request's text: the
recent occurrences of its last KEY tokens, each extended backwards to how long a suffix of the text it matches (up to
DEEP tokens, all matches that long counting alike); those matching the longest suffix are the candidates, and the draft
follows, token by token, the continuation most of them share, those that differ dropping out, while the share of the
first candidates still agreeing stays at least MIN_SHARE. That is the walk down a suffix tree's most frequent children
from the node of the longest matching suffix, each step's frequency shortening the draft, without keeping the tree.

A draft only changes how many tokens a step tries (verification, steps.py, keeps exactly the tokens the request would
have produced), so what one partition's history drafts never changes another's output; partitions are kept apart all the
same, so that no request's text is ever proposed, even as a draft, to another key's requests."""

from __future__ import annotations

from collections import Counter, OrderedDict, deque
from dataclasses import dataclass, field

from .odds import DEEP_PRIOR, Odds

KEY = 3  # the n-gram the index is keyed by: a shorter suffix is too common across requests to predict anything
DEEP = 16  # suffix matches this long or longer count alike (the candidates' depth in the tree)
CANDIDATES = 32  # the most recent occurrences of a KEY-gram looked at
MIN_SHARE = 0.4  # a draft goes on while at least this share of its candidates agree on every token so far
STREAM_TOKENS = 4096  # a longer stream (prompt and output) keeps its last this many tokens
PARTITION_TOKENS = 32768  # the tokens one partition keeps
PARTITIONS = 16  # partitions kept: the one used least recently is dropped whole
END = -1  # closes each stream: no token equals it, so no match or draft crosses from one stream into the next


def matched_depth(text: list[int], stream: list[int], after: int, lowest: int, known: int) -> int:
    """How many of text's last tokens (its last `known` already matched; up to DEEP) stand before index `after` of
    `stream` too, looking no further back than index `lowest`: a suffix match's depth (the request's own lookup, with
    stream = text, and a partition's history)."""
    depth = known
    most = min(DEEP, len(text))
    while depth < most and after - depth - 1 >= lowest and stream[after - depth - 1] == text[-depth - 1]:
        depth += 1
    return depth


@dataclass
class History:
    """One partition's recent streams: their tokens end to end (absolute positions from `base`), each stream's length,
    each KEY-gram → the absolute positions after its occurrences, oldest first, and how often its drafts were kept (a
    new request's drafts from it start from that)."""

    limit: int = PARTITION_TOKENS
    tokens: list[int] = field(default_factory=list)
    base: int = 0  # the absolute position of tokens[0]
    start: int = 0  # the absolute position of the first token kept (earlier ones are dropped, not yet cut off)
    lengths: deque[int] = field(default_factory=deque)  # each stream's length with its END, oldest first
    places: dict[tuple[int, ...], list[int]] = field(default_factory=dict)
    odds: Odds = field(default_factory=Odds)  # how often its drafts were kept, over the partition's requests
    deep: Odds = field(default_factory=lambda: Odds(*DEEP_PRIOR))  # the same after a deep match (DEEP_MATCH)

    @property
    def size(self) -> int:
        return self.base + len(self.tokens) - self.start

    def add(self, stream: list[int]) -> None:
        """A finished request's tokens (prompt and output); the oldest streams go while the partition holds too many."""
        stream = [*stream[-STREAM_TOKENS:], END]
        at = self.base + len(self.tokens)
        self.tokens += stream
        self.lengths.append(len(stream))
        for i in range(KEY, len(stream)):  # the KEY-gram ending before position i, followed by stream[i]
            self.places.setdefault(tuple(stream[i - KEY:i]), []).append(at + i)
        while self.size > self.limit and len(self.lengths) > 1:
            self._drop_oldest()

    def _drop_oldest(self) -> None:
        n = self.lengths.popleft()
        first = self.start - self.base
        stream = self.tokens[first:first + n]
        for i in range(KEY, n):  # its positions are the oldest of each list, so they lead it
            key = tuple(stream[i - KEY:i])
            positions = self.places[key]
            positions.pop(0)
            if not positions:
                del self.places[key]
        self.start += n
        if self.start - self.base > len(self.tokens) // 2:  # cut off what was dropped once it is half of the list
            del self.tokens[:self.start - self.base]
            self.base = self.start

    def _at(self, position: int) -> int:
        return self.tokens[position - self.base]

    def _depth(self, text: list[int], after: int) -> int:
        """How many of text's last tokens (up to DEEP) precede absolute position `after` too."""
        return matched_depth(text, self.tokens, after - self.base, self.start - self.base, KEY)

    def propose(self, text: list[int], k: int) -> list[int]:
        """Up to k tokens that most often followed the longest suffix of `text` this partition has seen (see the
        module's comment); [] where its last KEY tokens never occurred."""
        return self.match(text, k)[0]

    def match(self, text: list[int], k: int) -> tuple[list[int], int]:
        """`propose`'s draft, and how many of text's last tokens the occurrences it follows match (up to DEEP)."""
        positions = self.places.get(tuple(text[-KEY:])) if len(text) >= KEY and k > 0 else None
        if not positions:
            return [], 0
        recent = positions[-CANDIDATES:]
        depths = [self._depth(text, p) for p in recent]
        deepest = max(depths)
        alive = [p for p, d in zip(recent, depths, strict=True) if d == deepest]
        first, draft = len(alive), []
        end = self.base + len(self.tokens)
        for step in range(k):
            counts = Counter(self._at(p + step) for p in reversed(alive) if p + step < end)
            counts.pop(END, None)
            if not counts:
                break
            token, n = max(counts.items(), key=lambda item: item[1])  # ties: the first counted, the most recent
            if n < MIN_SHARE * first:
                break
            draft.append(token)
            alive = [p for p in alive if p + step < end and self._at(p + step) == token]
        return draft, deepest


class SuffixDrafts:
    """One engine's histories by partition: a model and a tenant (an API key's hash, an end user). The engine runs one
    model, so `model` is the same for all of them; it is part of the key so that no history could ever be read for
    another model's requests."""

    def __init__(self, model: str, partitions: int = PARTITIONS, tokens: int = PARTITION_TOKENS):
        self.model, self.most, self.tokens = model, partitions, tokens
        self.histories: OrderedDict[tuple[str, str], History] = OrderedDict()  # least recently used first

    def partition(self, tenant: str) -> History:
        """The tenant's history (made empty if it has none), now the most recently used; the least recently used one
        goes while there are too many."""
        key = (self.model, tenant)
        history = self.histories.pop(key, None) or History(self.tokens)
        self.histories[key] = history
        while len(self.histories) > self.most:
            self.histories.popitem(last=False)
        return history

    def add(self, tenant: str, stream: list[int]) -> None:
        """A finished request's tokens into its tenant's history."""
        self.partition(tenant).add(stream)
