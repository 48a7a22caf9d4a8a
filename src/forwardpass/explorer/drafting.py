"""W-drafting: speculative decoding (engine/speculation.py) on the reader's text. One greedy request runs through a
real Engine twice, with n-gram drafting and without it, and every pass of the model that gave it tokens is recorded
(engine/steps.py: Steps.observer): the draft the pass checked and where in the text it was copied from, how many of
its tokens the model kept, the token the model chose itself (at the first draft token it refused, or after a draft it
kept whole), and the pass's rows. A pass reads every weight once, however many rows it holds, so the passes count the
reads of the weights. The two runs' tokens are compared one by one, and the drafts' counts checked against the
engine's own metrics (what /metrics serves)."""

from __future__ import annotations

from dataclasses import dataclass

from ..engine import BlockPool, Engine, EngineConfig
from ..engine.sequence import RequestOutput, Sequence
from ..engine.speculation import MOST_DEEP, NGRAMS, StepCost, looped
from ..loaded import LoadedModel
from ..sampling import SamplingParams
from .compute import _first_difference, _ids, _range, refuse
from .many_users import metrics_of

BLOCK_SIZE = 16  # tokens per block: the engine's default
NEW_TOKENS = (8, 96)  # a run stays well under a second on the default model
# a draft row's cost, as a share of a pass, that the page's engine drafts by: held, so that a text gives the same passes
# on every machine (the engine fits it to its own steps: on a CPU that reads the weights from memory, about this)
ROW_SHARE = 0.25


@dataclass
class Pass:
    """One pass of the model over a request's rows (one read of the weights), and what it added to the text."""

    rows: int  # the prompt's tokens, or the last token and the draft after it
    draft: list[int]  # the draft it checked ([]: none)
    kept: int  # how many of the draft's first tokens the model chose too
    start: int  # where its tokens begin in the text (prompt and output)
    tokens: list[int]  # the tokens it added: the kept draft, then the model's own (none past the end of the text)
    ended: bool  # the model chose to end its text here


def generate(fp: LoadedModel, ids: list[int], new_tokens: int, speculative: str) -> tuple[list[Pass], Engine]:
    """`ids` continued greedily for up to `new_tokens` tokens by an Engine of its own (speculative: "ngram" or "off"),
    every pass that gave the request tokens recorded in order; the prompt is one pass (its tokens fit one step)."""
    blocks = -(-(len(ids) + new_tokens + MOST_DEEP) // BLOCK_SIZE) + 1  # the request and its longest draft
    engine = Engine(fp, EngineConfig(
        kv_cache_bytes=blocks * BlockPool.block_bytes(fp.config, BLOCK_SIZE, fp.kv_format()), block_size=BLOCK_SIZE,
        max_num_seqs=1, max_num_batched_tokens=max(512, len(ids)), speculative=speculative))
    engine.scheduler.planner.cost = StepCost(held=ROW_SHARE)
    passes: list[Pass] = []

    def observe(seq: Sequence, draft: list[int], kept: int, rows: int) -> None:
        start = passes[-1].start + len(passes[-1].tokens) if passes else len(ids)
        passes.append(Pass(rows, list(draft), kept, start, seq.token_ids[start:], seq.finish_reason == "stop"))

    engine.steps.observer = observe
    ends: list[RequestOutput] = []
    engine.submit(ids, SamplingParams(temperature=0.0, max_tokens=new_tokens),
                  lambda out: ends.append(out) if out.finish_reason is not None else None)
    engine.run_until_done()
    if ends[0].finish_reason not in ("stop", "length"):
        raise RuntimeError(f"the engine ended the request: {ends[0].error.message if ends[0].error else 'aborted'}")
    return passes, engine


def source(text: list[int], draft: list[int]) -> dict | None:
    """Where prompt lookup (speculation.Lookup) copied `draft` from in `text`: the latest earlier place where the
    text's last n tokens stood (n = 3, 2, 1, longest first) and what followed them there is the draft; `loop` where that
    runs past the text's end (speculation.looped: the text going round a loop, the draft its next turns too)."""
    for n in NGRAMS:
        tail = text[-n:]
        for at in range(len(text) - 1, n - 1, -1):
            if text[at - n:at] == tail and looped(text, at, len(draft)) == draft:
                return {"at": at, "n": n, "loop": at + len(draft) > len(text)}
    return None


def run(fp: LoadedModel, prompt: str, new_tokens: int) -> dict:
    """The prompt continued with drafting and without: each drafting pass, the totals of both runs, and whether their
    tokens are the same."""
    if not NEW_TOKENS[0] <= new_tokens <= NEW_TOKENS[1]:
        raise _range("new_tokens", *NEW_TOKENS)
    ids = _ids(fp, prompt)
    if len(ids) + new_tokens > fp.config.context_length:
        raise refuse("context_fit", "the prompt and the new tokens must fit the model's context",
                     context=fp.config.context_length)
    passes, engine = generate(fp, ids, new_tokens, "ngram")
    plain, _ = generate(fp, ids, new_tokens, "off")
    piece = fp.tokenizer.piece
    text = ids + [t for p in passes for t in p.tokens]
    plain_tokens = [t for p in plain for t in p.tokens]
    tokens = text[len(ids):]
    steps = [{"rows": p.rows, "start": p.start, "kept": p.kept, "ended": p.ended,
              "draft": [piece(t) for t in p.draft], "draft_ids": p.draft,
              "tokens": [piece(t) for t in p.tokens], "token_ids": p.tokens,
              "from": source(text[:p.start], p.draft) if p.draft else None} for p in passes]
    m = metrics_of(engine)
    drafts = [p for p in passes if p.draft]
    counted = {"drafts": len(drafts), "drafted": sum(len(p.draft) for p in drafts),
               "kept": sum(p.kept for p in drafts)}
    reported = {"drafts": int(m["vllm:spec_decode_num_drafts_total"]),
                "drafted": int(m["vllm:spec_decode_num_draft_tokens_total"]),
                "kept": int(m["vllm:spec_decode_num_accepted_tokens_total"])}
    differ = _first_difference(tokens, plain_tokens)
    return {"new_tokens": new_tokens, "prompt": [piece(t) for t in ids], "prompt_ids": ids,
            "tokens": [piece(t) for t in tokens], "token_ids": tokens, "ended": passes[-1].ended,
            "steps": steps, "passes": len(passes), "rows": sum(p.rows for p in passes),
            "plain": {"passes": len(plain), "rows": sum(p.rows for p in plain), "token_ids": plain_tokens,
                      "ended": plain[-1].ended},
            "same": differ is None, "first_difference": differ, "drafts": counted, "metrics": reported,
            "agrees": counted == reported, "drafting": engine.runner.capabilities.drafts}
