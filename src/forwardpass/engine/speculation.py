"""Speculative decoding by prompt lookup: a request's next tokens guessed from its own text, checked in one step.

Drafting: the last n tokens (n = 3, then 2, then 1) looked up among the request's earlier tokens (its prompt and what it
has generated); where they occurred before, the k tokens that followed the occurrence preceded by most of the text's own
last tokens (the latest among equals) are the draft. No second model: answers that quote, edit or extract from their
input repeat it, and there the draft is often right.

Verification (steps.py): the last sampled token and its draft run as one chunk of the native step, every row's logits
those it would get stepped alone, bit for bit. Each position is then sampled in order exactly as without drafting (the
same sampler, penalties, grammar and random numbers) and kept while the sampled token equals the draft's; the first
difference is itself the next token. So the output is token for token the output without drafting, greedy or seeded,
and the step gives 1 to k + 1 tokens for one read of the weights.

A request may also give the output it expects (OpenAI's `prediction`, as token ids in SamplingParams.prediction): its
drafts then come from that text first, wherever the answer is in it (Predicted), and from its own text where the
answer has left it.

Where the engine keeps them (`speculative="suffix"`), drafts may also come from what recent requests continued with:
their prompts and outputs, in the request's own partition (suffix_drafts.py; never another API key's or model's). A
history draft that follows a match of TRUSTED tokens or more drafts before the request's own lookup; how often the
history's drafts were kept carries over from request to request, so a new request's drafts from it start as long as
the partition's last ones ended.

Each request drafts the k that promises the most tokens per unit of step time, from how often its drafted positions are
kept and what a draft row costs beside the step (StepCost, fitted to the steps seen); where no k pays, it drafts nothing
but a one-token probe now and then (rarer after each that fails), so free prose pays almost nothing. A draft that
follows a match of DEEP_MATCH tokens or more (a copy under way: the text's last tokens stand before the place it drafts
from too) is counted apart from the shallow ones, with odds of its own that start high, and may run to MOST_DEEP
tokens: a copy's drafts grow long from its first steps, while a shallow match's stay short until they are kept."""

from __future__ import annotations

from dataclasses import dataclass, field

from .odds import DECAY, DEEP_PRIOR, Odds
from .suffix_drafts import History, matched_depth

NGRAMS = (3, 2, 1)  # the suffix lengths looked up, longest first
MOST_K = 8  # the longest draft after a shallow match
MOST_DEEP = 16  # the longest after a deep one
DEEP_MATCH = 8  # a draft following a match of this many tokens or more is a deep one
PLACES = 8  # the latest occurrences of each n-gram a request's lookup keeps
PAUSE = 16  # tokens before the first probe where no draft pays; each failed probe doubles it
DRAFT_ROWS = 16  # rows a step may spend on drafts beyond its decode rows (a wide batch is arithmetic-bound: none)
PRIOR_SHARE = 0.5  # a draft row's share of a step's time until the steps seen tell it
MARGIN = 0.03  # a longer draft must promise this much more per unit of time
TRUSTED = 8  # a history draft that follows a match this long or longer drafts instead of the request's own lookup
SHALLOW = ("lookup", "history")  # the odds whose drafts stop at MOST_K


@dataclass
class Lookup:
    """Where each n-gram of a request's tokens occurred: n-gram → the positions after its last PLACES occurrences,
    indexed as tokens come (only n-grams followed by a token, so the text's own last n-gram finds an earlier one)."""

    seen: dict[tuple[int, ...], list[int]] = field(default_factory=dict)
    indexed: int = 0  # tokens [0, indexed) have their n-grams that end before indexed - 1 in `seen`

    def propose(self, tokens: list[int], k: int) -> list[int]:
        """Up to k tokens that followed the earlier occurrence of the longest suffix of `tokens` found whose own
        preceding tokens match the text's furthest back (the latest of those: a pattern the answer repeats now beats
        the passage it came from)."""
        return self.match(tokens, k)[0]

    def match(self, tokens: list[int], k: int) -> tuple[list[int], int]:
        """`propose`'s draft, and how many of the last tokens (up to suffix_drafts.DEEP) precede the place it
        follows too."""
        for end in range(max(self.indexed, 1), len(tokens)):  # n-grams ending at end - 1, followed by tokens[end]
            for n in NGRAMS:
                if end >= n:
                    places = self.seen.setdefault(tuple(tokens[end - n:end]), [])
                    places.append(end)
                    del places[:-PLACES]
        self.indexed = len(tokens)
        if k < 1:
            return [], 0
        for n in NGRAMS:
            places = self.seen.get(tuple(tokens[-n:])) if len(tokens) > n else None
            if places:
                depth, at = max((matched_depth(tokens, tokens, p, 0, n), p) for p in places)  # ties: the latest
                return (looped(tokens, at, k) if depth >= DEEP_MATCH else tokens[at:at + k]), depth
        return [], 0


def looped(tokens: list[int], at: int, k: int) -> list[int]:
    """k tokens from position `at` on, copied on past the text's end from the draft itself: where a deep match's place
    lies so near the end that the text runs out, the text is going round a loop (a line, a list's separator, a phrase
    said again and again), and the loop's next turns are the draft."""
    out = tokens[at:at + k]
    period = len(tokens) - at
    while len(out) < k and period > 0:
        out.append(out[len(out) - period])
    return out


@dataclass
class StepCost:
    """A native step's seconds as a + b × rows, fitted to the steps seen, recent ones weighing most: what a draft row
    costs beside the step it rides on. `held`: a draft row's share of a step held at this, whatever the steps take
    (the drafts then hang on what is kept alone, the same on any machine)."""

    held: float | None = None
    sums: list[float] = field(default_factory=lambda: [0.0] * 5)  # decayed Σ1, Σrows, Σrows², Σs, Σrows × s

    def observe(self, rows: int, seconds: float) -> None:
        if self.held is not None:
            return
        self.sums = [DECAY * x + y for x, y in zip(self.sums, (1.0, rows, rows * rows, seconds, rows * seconds),
                                                    strict=True)]

    def row_share(self, rows: int) -> float:
        """One more row's time as a share of a step of `rows` rows (PRIOR_SHARE until steps of two sizes were seen)."""
        if self.held is not None:
            return self.held
        n, r, rr, t, rt = self.sums
        spread = n * rr - r * r
        if n < 2 or spread <= 1e-9 * n * n:
            return PRIOR_SHARE
        b = (n * rt - r * t) / spread
        a = (t - b * r) / n
        return min(max(b / (a + b * rows), 0.0), 1.0) if a + b * rows > 0 else PRIOR_SHARE


def best_k(p: float, share: float, longest: int = MOST_K, others: int = 0) -> int:
    """The draft length, at most `longest`, that gives the most tokens per unit of step time when each drafted position
    is kept with probability p (after the ones before it) and each costs `share` of the step, in a step that also
    gives `others` other rows their token: argmax (others + Σ_{i ≤ k} p^i) / (1 + k × share); 0 where no draft pays. A
    draft row slows the whole step, so in a wide batch only a draft nearly sure to be kept pays for it."""
    best, most, made = 0, 1.0 + others, 1.0 + others
    for k in range(1, longest + 1):
        made += p**k
        if made / (1 + k * share) > most * (1 + MARGIN):
            best, most = k, made / (1 + k * share)
    return best


@dataclass
class Predicted:
    """A predicted output (OpenAI's `prediction`): where the answer stands in it. While the answer follows it, the
    draft is what comes next in it; where the answer leaves it, the last 3, 2 or 1 tokens are looked up in it, the
    first occurrence past the last place the answer followed it (else the first) taken up again."""

    tokens: list[int]
    start: int  # where the answer begins in the request's tokens (the prompt's length)
    at: int | None = 0  # the prediction's next token while the answer follows it; None where it left it
    read: int = 0  # answer tokens already followed
    last: int = 0  # the last place the answer followed it
    places: dict[tuple[int, ...], list[int]] = field(default_factory=dict)  # n-gram → the positions after it

    def __post_init__(self) -> None:
        for end in range(1, len(self.tokens) + 1):
            for n in NGRAMS:
                if end >= n:
                    self.places.setdefault(tuple(self.tokens[end - n:end]), []).append(end)

    def propose(self, tokens: list[int], k: int) -> list[int]:
        for t in tokens[self.start + self.read:]:  # follow the answer's new tokens
            follows = self.at is not None and self.at < len(self.tokens) and self.tokens[self.at] == t
            self.at = self.at + 1 if follows else None
            self.last = self.at if follows else self.last
            self.read += 1
        if self.at is None:
            for n in NGRAMS:
                after = self.places.get(tuple(tokens[-n:])) if len(tokens) - self.start >= n else None
                if after:
                    self.at = next((p for p in after if p > self.last), after[0])
                    break
        return self.tokens[self.at:self.at + k] if self.at is not None and k > 0 else []


@dataclass
class Drafter:
    """One request's drafting: its lookup, its predicted output (if it gave one) and its partition's history of recent
    requests (suffix_drafts.py; where the engine keeps one), how often each one's drafted positions are kept (a deep
    match's apart: "lookup deep", "history deep"), and when it next probes after its drafts stopped paying. Where
    several offer a draft, the one kept most often drafts."""

    lookup: Lookup = field(default_factory=Lookup)
    predicted: Predicted | None = None
    history: History | None = None  # set as the engine admits the request (`attach`)
    odds: dict[str, Odds] = field(default_factory=lambda: {
        "lookup": Odds(), "predicted": Odds(2.0, 1.0), "history": Odds(), "lookup deep": Odds(*DEEP_PRIOR),
        "history deep": Odds(*DEEP_PRIOR)})
    source: str = "lookup"  # the odds the last draft was counted in
    pause: int = PAUSE
    probe_at: int = 0  # where no draft pays, a one-token draft is tried once the request holds this many tokens

    def propose(self, tokens: list[int], room: int, share: float, others: int = 0) -> list[int]:
        """A draft of at most min(best_k, room) tokens from the likelier source, in a step beside `others` other rows;
        where no length pays, a probe of one token now and then."""
        draft, depth = self.lookup.match(tokens, MOST_DEEP)  # indexes the new tokens even when none is drafted
        offers = {"lookup deep" if depth >= DEEP_MATCH else "lookup": draft}
        if self.predicted is not None:
            offers["predicted"] = self.predicted.propose(tokens, MOST_DEEP)
        if self.history is not None and room > 0:  # looked up only where a draft may run
            draft, depth = self.history.match(tokens, MOST_DEEP)
            offers["history deep" if depth >= DEEP_MATCH else "history"] = draft
            if draft and depth >= TRUSTED:  # a long match in the history beats the last n-gram's
                offers = {name: offer for name, offer in offers.items() if not name.startswith("lookup")}
        self.source = max((name for name in offers if offers[name]), key=lambda name: self.odds[name].p,
                          default="lookup")
        k = best_k(self.odds[self.source].p, share, MOST_K if self.source in SHALLOW else MOST_DEEP, others)
        offer = offers.get(self.source, [])
        if k == 0 and len(tokens) >= self.probe_at and offer:
            k, self.probe_at = 1, len(tokens) + self.pause
            self.pause *= 2
        return offer[:max(0, min(k, room))]

    def attach(self, history: History) -> None:
        """Draft from a partition's history too, starting from how often its drafts were kept in earlier requests."""
        self.history = history
        self.odds["history"] = Odds(history.odds.kept, history.odds.refused)
        self.odds["history deep"] = Odds(history.deep.kept, history.deep.refused)

    def update(self, drafted: int, accepted: int) -> None:
        """The last draft, of `drafted` tokens, had its first `accepted` kept."""
        self.odds[self.source].update(drafted, accepted)
        if self.source.startswith("history"):  # for the partition's next requests too
            (self.history.odds if self.source == "history" else self.history.deep).update(drafted, accepted)
        if accepted == drafted:
            self.pause = PAUSE
