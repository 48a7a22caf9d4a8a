"""W-greedy-loop, honestly: greedy decoding over a stated window, and one sampled token tried at every step of the
window's first half, each followed by greedy decoding to the window's end, through the engine as one batch.

The verdict for the step the reader picks is that step's row of the search, so the page never says more than the
run showed: whether the draw was greedy's own token, whether the text changed, and whether a loop is still there at
the window's end (collapse.detect_loop, the engine's own test: the last tokens repeat a block at least 3 times). The
sample goes only in the first half, so at least half the window follows it: room for a loop to come back and be
seen; a sample near the end would "break" a loop only because too few tokens were left to repeat."""

from __future__ import annotations

import numpy as np
import torch

from ..article.collapse import Loop, detect_loop
from ..engine import BlockPool, Engine, EngineConfig
from ..engine.rows import Chunk, Rows
from ..engine.runner import Runner
from ..loaded import LoadedModel
from ..loop import generate
from ..sampling import SamplingParams, make_generator, next_token

WINDOW = 64  # generated tokens the verdict is measured over (the page's window)
TEMPERATURE = 1.0  # the one sample is drawn from the model's own distribution


def searched(steps: int) -> int:
    """How many steps a sample may go at: the window's first half (at least half of it follows the sample)."""
    return max(1, steps // 2)


def same_loop(a: list[int], la: Loop, b: list[int], lb: Loop) -> bool:
    """Whether two loops repeat the same block of tokens (one a rotation of the other)."""
    if la.period != lb.period:
        return False
    block_a, block_b = a[-la.period:], b[-lb.period:]
    return any(block_a[i:] + block_a[:i] == block_b for i in range(la.period))


def outcome(row: dict, greedy_looped: bool) -> str:
    """What one sample at a step did, said against greedy decoding: "same" (greedy's own token, or its text), and
    where greedy looped "broke" (no loop left) or "again" (a loop at the end); where it did not, "appeared" (a loop
    came) or "changed" (another text, still no loop). A loop is broken only where greedy had one."""
    if row["same_token"] or row["same_text"]:
        return "same"
    if greedy_looped:
        return "broke" if row["loop"] is None else "again"
    return "changed" if row["loop"] is None else "appeared"


def step_logits(fp: LoadedModel, tokens: list[int]) -> torch.Tensor:
    """Every position's next-token scores (len(tokens), vocab_size) in one pass, as the engine computes them: on the
    native step one chunk giving logits at each position, the bits each position gets stepped on its own (so a draw
    from a row is the draw a generation from that point makes); where the PyTorch blocks run, their forward."""
    with torch.inference_mode():
        pool = BlockPool(fp.config, -(-len(tokens) // 16), 16, fp.kv_format(), fp.device)
        runner = Runner(fp.model, pool, checked=fp.model.checked)
        if runner.capabilities.drafts:
            table = [pool.allocate() for _ in range(pool.num_blocks)]
            out = runner.step(Rows([Chunk(tokens, table, 0, every=True)]))
            return torch.from_numpy(np.array(out.logits, copy=True))
        logits, _ = fp.model(torch.tensor([tokens], device=fp.device))
        return logits[0].float()


def draws(fp: LoadedModel, ids: list[int], greedy: list[int], steps: int, seed: int) -> list[dict]:
    """The token one sample at T = 1 with `seed` draws at each of the first `steps` steps of the greedy path: every
    step's distribution comes out of one pass over the prompt and the greedy tokens (step_logits: position p's scores
    are the next token's after the first p + 1 tokens)."""
    logits = step_logits(fp, ids + greedy[:steps])
    params = SamplingParams(temperature=TEMPERATURE, seed=seed)
    out = []
    for s in range(steps):
        row = logits[len(ids) + s - 1]
        token, _ = next_token(row, params, make_generator(params), ids + greedy[:s], [])
        p = torch.softmax(row / TEMPERATURE, -1)
        out.append({"id": token, "probability": float(p[token]), "greedy_probability": float(p[greedy[s]])})
    return out


def continue_greedily(fp: LoadedModel, shared: list[int], prompts: list[list[int]],
                      lengths: list[int]) -> list[list[int]]:
    """Greedy decoding after each prompt for its length, all in one engine, as the server would run them at once.
    Every prompt starts with a prefix of `shared`: it is prefilled first, so each prompt finds its full blocks in the
    engine's prefix cache and computes only its own tail."""
    todo = [i for i, n in enumerate(lengths) if n > 0]
    out: list[list[int]] = [[] for _ in prompts]
    if not todo:
        return out
    config = EngineConfig(max_num_seqs=len(todo), prefix_caching=True, checked=fp.model.checked)
    blocks = sum(-(-(len(prompts[i]) + lengths[i]) // config.block_size) for i in todo)
    blocks += -(-(len(shared) + 1) // config.block_size)
    config.kv_cache_bytes = blocks * BlockPool.block_bytes(fp.config, config.block_size, fp.kv_format())
    engine = Engine(fp, config)
    engine.submit(shared, SamplingParams(temperature=0, max_tokens=1, ignore_eos=True), lambda o: None)
    engine.run_until_done()  # the shared prefix's full blocks, registered in the prefix cache
    for i in todo:
        params = SamplingParams(temperature=0, max_tokens=lengths[i], ignore_eos=True)
        engine.submit(prompts[i], params, lambda o, i=i: out[i].append(o.token_id) if o.token_id is not None else None)
    engine.run_until_done()
    return out


def greedy_loop(fp: LoadedModel, ids: list[int], steps: int, sample_at: int | None, seed: int) -> dict:
    """Greedy decoding for `steps` tokens, and the search: at each step of the first half, one token drawn at T = 1
    with `seed`, then greedy decoding to the window's end; for each, whether a loop is there at the end. `forced` is
    the row of the step `sample_at` (the widget's verdict)."""
    tok = fp.tokenizer
    result = generate(fp, ids, SamplingParams(temperature=0, max_tokens=steps, ignore_eos=True))
    greedy, loop = result.token_ids, result.loop
    n = min(searched(steps), len(greedy))
    drawn = draws(fp, ids, greedy, n, seed)
    differ = [s for s in range(n) if drawn[s]["id"] != greedy[s]]
    rest = continue_greedily(fp, ids + greedy[:n], [ids + greedy[:s] + [drawn[s]["id"]] for s in differ],
                             [len(greedy) - s - 1 for s in differ])
    tails = dict(zip(differ, rest, strict=True))
    rows = []
    for s in range(n):
        tokens = greedy if s not in tails else greedy[:s] + [drawn[s]["id"]] + tails[s]
        after = detect_loop(tokens)
        rows.append({
            "step": s, "greedy_id": greedy[s], "greedy_piece": tok.piece(greedy[s]),
            "sampled_id": drawn[s]["id"], "sampled_piece": tok.piece(drawn[s]["id"]),
            "probability": drawn[s]["probability"], "greedy_probability": drawn[s]["greedy_probability"],
            "same_token": s not in tails, "same_text": tokens == greedy or tok.decode(tokens) == result.text,
            "text": tok.decode(tokens), "head": tok.decode(greedy[:s]), "loop": after.to_dict() if after else None,
            "same_loop": bool(loop and after and same_loop(greedy, loop, tokens, after)),
            "broke": bool(loop and not after),
        })
        rows[-1]["outcome"] = outcome(rows[-1], loop is not None)
    out = {
        "steps": steps, "generated": len(greedy), "seed": seed, "searched": n, "temperature": TEMPERATURE,
        "greedy": {"text": result.text, "loop": loop.to_dict() if loop else None},
        "rows": rows, "differ": len(differ), "broke": [r["step"] for r in rows if r["broke"]],
    }
    if sample_at is not None:
        r = rows[sample_at]
        out["forced"] = {"sample_at": sample_at, "sampled": r["sampled_piece"], "text": r["text"], "loop": r["loop"]}
    return out
