"""An agent's loop for bench/speculative.py: eight turns on one file, each asking for an edit of the previous turn's
answer (given whole in the prompt), one request after another through one engine, so that a turn may draft from the
turns before it as well as from its own prompt."""

from __future__ import annotations

import time

EDITS = ["Rename `total` to `running_sum`.", "Add a docstring to the function.", "Rename `count` to `n_values`.",
         "Add a comment above the loop saying what it does.", "Round the average to two decimals.",
         "Rename `records` to `rows`.", "Skip records whose value is negative.", "Add type hints to the function."]


def prompt(tok, document: str, edit: str) -> list[int]:
    return tok.encode(tok.apply_chat_template([{"role": "user", "content": f"Here is a Python file:\n\n{document}\n\n"
                                                                          f"{edit} Give the whole file back."}]))


def run_loop(fp, engine, first: str, max_tokens: int) -> tuple[list[tuple[list[int], list[int]]], float, dict]:
    """The eight turns through one engine, each turn's prompt holding the previous answer (the first: `first`): every
    turn's prompt and answer tokens, the decode rate over all turns (tokens after each turn's first over the time from
    its first token to its last, summed), and the engine's drafted and accepted counts."""
    from forwardpass.sampling import SamplingParams

    tok = fp.tokenizer
    document, turns, tokens, seconds = first, [], 0, 0.0
    for edit in EDITS:
        ids, times = [], []

        def take(out, ids=ids, times=times):
            if out.token_id is not None:
                ids.append(out.token_id)
                times.append(time.perf_counter())
        asked = prompt(tok, document, edit)
        engine.submit(asked, SamplingParams(temperature=0, max_tokens=max_tokens), take)
        engine.run_until_done()
        turns.append((asked, ids))
        tokens, seconds = tokens + len(ids) - 1, seconds + (times[-1] - times[0] if times else 0.0)
        document = tok.decode(ids)
    m = engine.metrics
    return turns, tokens / seconds if seconds else float("nan"), {"drafted": m.draft_tokens.value,
                                                                   "accepted": m.accepted_tokens.value}
