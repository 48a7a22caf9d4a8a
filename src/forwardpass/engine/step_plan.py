"""A step's plan: which rows each runner call of the step runs. The scheduler (scheduler.py) chooses who runs and how
many tokens; the planner here shapes them into calls within what the runner's back end runs (rows.py: Capabilities):
the decode rows as one call (with drafts to verify where a request's lookup finds some, else a greedy burst of several
tokens where the back end runs bursts), then the prompt chunks in padded groups. Drafts and bursts take their blocks
here, through the block tables, before the step runs."""

from __future__ import annotations

from dataclasses import dataclass, field

from .rows import Capabilities, Chunk, Rows
from .sequence import Sequence
from .speculation import DRAFT_ROWS, StepCost
from .tables import BlockTables

BURST = 8  # greedy steps one native call runs before Python takes the tokens (text streams in bursts this long)


@dataclass
class Row:
    """One sequence's positions in a call: `n` of them from its first uncomputed one (a prompt chunk, or a decode row's
    token and its `draft`)."""

    seq: Sequence
    n: int
    draft: list[int] = field(default_factory=list)


@dataclass
class Pass:
    """One runner call of a step. kind: "decode" (a token each, `steps` greedy steps of them: a burst, stopping at
    `stop`), "verify" (each row's token and its draft, logits at every position) or "prefill" (prompt chunks)."""

    kind: str
    rows: list[Row]
    steps: int = 1
    stop: tuple[int, ...] = ()
    what: str = "the forward pass"  # what a failure of the call is called in its requests' errors
    timed: bool = False  # its time is fitted for drafting's choices (StepCost)

    def runner_rows(self) -> Rows:
        """The call's rows as the runner takes them, read from each sequence now."""
        chunks = []
        for r in self.rows:
            s, at = r.seq, r.seq.num_computed
            ids = s.token_ids[at:at + r.n] if self.kind == "prefill" else [s.token_ids[at], *r.draft]
            chunks.append(Chunk(ids, s.blocks, at, every=self.kind == "verify"))
        return Rows(chunks, self.steps, self.stop)


@dataclass
class StepPlan:
    passes: list[Pass]
    rejected: list[Sequence]  # can never fit the pool: the engine ends them


def prefill_groups(prefill: list[tuple[Sequence, int]]) -> list[list[tuple[Sequence, int]]]:
    """Prefill chunks in batches the PyTorch blocks run padded to their longest row: longest first, a row joins a
    batch while the padded tokens stay within twice the real ones (a 512-token prompt beside 15 short ones would
    otherwise run 16 × 512 positions)."""
    groups: list[list[tuple[Sequence, int]]] = []
    for row in sorted(prefill, key=lambda r: -r[1]):
        group = groups[-1] if groups else None
        if group is not None and (len(group) + 1) * group[0][1] <= 2 * (sum(n for _, n in group) + row[1]):
            group.append(row)
        else:
            groups.append([row])
    return groups


class StepPlanner:
    def __init__(self, tables: BlockTables, context_length: int, speculative: bool):
        self.tables, self.context_length, self.speculative = tables, context_length, speculative
        self.cost = StepCost()  # the native step's time by its rows, for drafting's choices

    def plan(self, decode: list[Sequence], prefill: list[tuple[Sequence, int]], can: Capabilities,
             newcomers: bool) -> list[Pass]:
        """The step's calls. `newcomers`: requests wait to join (a greedy burst would delay them)."""
        passes = [self._decode(decode, can, newcomers)] if decode else []
        return passes + [Pass("prefill", [Row(s, n) for s, n in group]) for group in prefill_groups(prefill)]

    def _decode(self, batch: list[Sequence], can: Capabilities, newcomers: bool) -> Pass:
        """One new token for each row, or a greedy burst of several (`_burst`) where the back end runs them; where some
        rows have drafts, one call verifies them."""
        drafts = self._drafts(batch) if can.drafts and self.speculative else None
        if drafts is not None and any(drafts):
            rows = [Row(s, 1 + len(d), d) for s, d in zip(batch, drafts, strict=True)]
            return Pass("verify", rows, what="the decode step", timed=True)
        n = self._burst(batch, newcomers) if can.bursts else 1
        stops = tuple(set().union(*(s.eos_ids for s in batch))) if n > 1 else ()
        return Pass("decode", [Row(s, 1) for s in batch], n, stops, can.decode_step, timed=can.drafts)

    def _drafts(self, batch: list[Sequence]) -> list[list[int]]:
        """Each row's draft (speculation.py), within DRAFT_ROWS rows beyond the batch's own, the row's max_tokens and
        the context, and the free blocks (a row whose draft does not fit drafts nothing)."""
        spare, drafts, share = DRAFT_ROWS - len(batch), [], self.cost.row_share(len(batch))
        for seq in batch:
            room = min(spare, seq.params.max_tokens - len(seq.output_ids) - 1, self.context_length - seq.num_tokens)
            draft = seq.drafter.propose(seq.token_ids, room, share, len(batch) - 1)
            if draft and not self.tables.grow(seq, seq.num_computed + 1 + len(draft)):
                self.tables.trim(seq)
                self.tables.grow(seq, seq.num_computed + 1)
                draft = []
            spare -= len(draft)
            drafts.append(draft)
        return drafts

    def _burst(self, batch: list[Sequence], newcomers: bool) -> int:
        """Steps one call may run for these decode rows: up to BURST when every row is plain greedy (its token the raw
        argmax, no log-probabilities) and nothing waits to join (a burst delays a newcomer by its steps), never past a
        row's max_tokens or the context, and only as far as free blocks allow; else 1."""
        if newcomers or any(not s.params.argmax_only or s.params.logprobs is not None for s in batch):
            return 1
        n = min([BURST] + [min(s.params.max_tokens - len(s.output_ids), self.context_length - s.num_tokens)
                           for s in batch])
        if n > 1 and not all(self.tables.grow(s, s.num_computed + n) for s in batch):
            for s in batch:
                self.tables.trim(s)  # what the rows that fitted took back; this step runs one token
                self.tables.grow(s, s.num_computed + 1)
            return 1
        return max(n, 1)
