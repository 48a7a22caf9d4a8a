"""One step's work around the runner: the scheduled decode rows (with drafts to verify where a request's lookup finds
some, else a greedy burst of several tokens where the native step runs them), then the prefill chunks in padded groups;
each row's logits handed to the outputs, a failed batch ending its own rows only."""

from __future__ import annotations

import time
from collections.abc import Callable

from .outputs import Outputs
from .paged import BlockPool
from .runner import Runner
from .scheduler import Scheduled, Scheduler
from .sequence import Sequence
from .speculation import DRAFT_ROWS, Drafter, Predicted, StepCost

BURST = 8  # greedy steps one native call runs before Python takes the tokens (text streams in bursts this long)


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


class Steps:
    def __init__(self, runner: Runner, scheduler: Scheduler, pool: BlockPool, outputs: Outputs, context_length: int,
                 speculative: bool = True):
        self.runner, self.scheduler, self.pool, self.outputs = runner, scheduler, pool, outputs
        self.context_length, self.speculative = context_length, speculative
        self.cost = StepCost()  # the native step's time by its rows, for drafting's choices
        # told of each pass of the model that gave a sequence its next tokens (one read of the weights): the sequence,
        # the draft that pass verified ([] if none), how many of the draft it kept, and the pass's rows; None: nobody
        self.observer: Callable[[Sequence, list[int], int, int], None] | None = None

    def run(self, work: Scheduled, newcomers: bool) -> None:
        """Run one scheduled step. `newcomers`: requests wait to join (a greedy burst would delay them)."""
        if work.decode:
            self._decode(work.decode, newcomers)
        for group in prefill_groups(work.prefill):
            self._prefill(group)

    def _prefill(self, batch: list[tuple[Sequence, int]]) -> None:
        try:
            logits = self.runner.prefill([(s.token_ids[s.num_computed:s.num_computed + n], s.blocks, s.num_computed)
                                          for s, n in batch])
        except Exception as e:
            self.outputs.fail_batch([s for s, _ in batch], "the forward pass", e)
            return
        for (seq, n), row_logits in zip(batch, logits, strict=True):
            seq.num_computed += n
            self._register_full_blocks(seq)
            if seq.to_compute == 0:
                self.outputs.sample(seq, row_logits)
                if self.observer is not None:
                    self.observer(seq, [], 0, sum(n for _, n in batch))

    def _decode(self, batch: list[Sequence], newcomers: bool) -> None:
        """One new token for each row, or a greedy burst of several (`_burst`) where the runner runs them; where some
        rows have drafts, one step verifies them (`_verify`)."""
        native = self.runner.native is not None
        drafts = self._drafts(batch) if native and self.speculative else None
        if drafts is not None and any(drafts):
            self._verify(batch, drafts)
            return
        n = self._burst(batch, newcomers) if native else 1
        stops = tuple(set().union(*(s.eos_ids for s in batch))) if n > 1 else ()
        try:
            start = time.perf_counter()
            logits, chosen = self.runner.decode([s.token_ids[s.num_computed] for s in batch],
                                                [s.num_computed for s in batch], [s.blocks for s in batch], n, stops)
            if native:  # a burst's steps each cost one step of its rows
                self.cost.observe(len(batch), (time.perf_counter() - start) / len(chosen[0]))
        except Exception as e:
            self.outputs.fail_batch(batch, "the decode step" if native else "the forward pass", e)
            return
        for r, (seq, row_logits) in enumerate(zip(batch, logits, strict=True)):
            for token in chosen[r] if chosen is not None else [None]:  # a burst's tokens share the last step's logits:
                if seq.finish_reason is not None:  # plain greedy reads none of them
                    break  # an end-of-turn token, a stop string or the length ended it mid-burst
                seq.num_computed += 1
                self._register_full_blocks(seq)
                self.outputs.sample(seq, row_logits, token)
                if self.observer is not None:  # a burst's tokens are a pass each
                    self.observer(seq, [], 0, len(batch))
            if n > 1 and seq.finish_reason is None:
                self.scheduler.trim(seq)

    def _drafts(self, batch: list[Sequence]) -> list[list[int]]:
        """Each row's draft (speculation.py), within DRAFT_ROWS rows beyond the batch's own, the row's max_tokens and
        the context, and the free blocks (a row whose draft does not fit drafts nothing)."""
        spare, drafts, share = DRAFT_ROWS - len(batch), [], self.cost.row_share(len(batch))
        for seq in batch:
            if seq.drafter is None:
                predicted = seq.params.prediction
                seq.drafter = Drafter(predicted=Predicted(predicted, len(seq.prompt_ids)) if predicted else None)
            room = min(spare, seq.params.max_tokens - len(seq.output_ids) - 1, self.context_length - seq.num_tokens)
            draft = seq.drafter.propose(seq.token_ids, room, share)
            if draft and not self.scheduler.reserve(seq, seq.num_computed + 1 + len(draft)):
                self.scheduler.trim(seq)
                self.scheduler.reserve(seq, seq.num_computed + 1)
                draft = []
            spare -= len(draft)
            drafts.append(draft)
        return drafts

    def _verify(self, batch: list[Sequence], drafts: list[list[int]]) -> None:
        """One native step over each row's token and its draft, a chunk each: each position sampled in order as
        without drafting, kept while it equals the draft (speculation.py)."""
        tokens, lengths, tables, chunk = [], [], [], []
        for seq, draft in zip(batch, drafts, strict=True):
            for i, token in enumerate([seq.token_ids[seq.num_computed], *draft]):
                tokens.append(token)
                lengths.append(seq.num_computed + i)
                tables.append(seq.blocks)
                chunk.append(i)
        try:
            start = time.perf_counter()
            logits, chosen = self.runner.native.step(self.pool, tokens, lengths, tables, chunk=chunk)
            self.cost.observe(len(tokens), time.perf_counter() - start)
        except Exception as e:
            self.outputs.fail_batch(batch, "the decode step", e)
            return
        row = 0
        for seq, draft in zip(batch, drafts, strict=True):
            kept = 0
            for i in range(len(draft) + 1):
                seq.num_computed += 1
                self._register_full_blocks(seq)
                self.outputs.sample(seq, logits[row + i], chosen[row + i][0])
                if seq.finish_reason is not None or i == len(draft) or seq.output_ids[-1] != draft[i]:
                    break
                kept += 1
            row += len(draft) + 1
            if self.observer is not None:
                self.observer(seq, draft, kept, len(tokens))
            if draft:
                seq.drafter.update(len(draft), kept)
                self.outputs.metrics.drafted(len(draft), kept)
            if seq.finish_reason is None:
                self.scheduler.trim(seq)

    def _burst(self, batch: list[Sequence], newcomers: bool) -> int:
        """Steps one native call may run for these decode rows: up to BURST when every row is plain greedy (its token
        the raw argmax, no log-probabilities) and nothing waits to join (a burst delays a newcomer by its steps),
        never past a row's max_tokens or the context, and only as far as free blocks allow; else 1."""
        if newcomers or any(not s.params.argmax_only or s.params.logprobs is not None for s in batch):
            return 1
        n = min([BURST] + [min(s.params.max_tokens - len(s.output_ids), self.context_length - s.num_tokens)
                           for s in batch])
        if n > 1 and not all(self.scheduler.reserve(s, s.num_computed + n) for s in batch):
            for s in batch:
                self.scheduler.trim(s)  # what the rows that fitted took back; this step runs one token
                self.scheduler.reserve(s, s.num_computed + 1)
            return 1
        return max(n, 1)

    def _register_full_blocks(self, seq: Sequence) -> None:
        bs = self.pool.block_size
        while len(seq.hashes) < seq.num_computed // bs:
            i = len(seq.hashes)
            prefix = seq.hashes[-1] if seq.hashes else 0
            seq.hashes.append(self.pool.register(seq.blocks[i], prefix, seq.token_ids[i * bs:(i + 1) * bs],
                                                 seq.blocks[i - 1] if i else None))
