"""What each widget shows, computed by the engine and cost.py (the page draws; it holds no formula)."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import torch

from ..article import cost
from ..article.bugs import NaiveRingCache, StuckPositionCache
from ..article.collapse import detect_loop
from ..config import preset
from ..errors import ContextLengthError, ForwardpassError
from ..loaded import LoadedModel
from ..loop import generate
from ..sampling import (
    SamplingParams,
    make_generator,
    min_p_mask,
    next_token,
    probabilities,
    scale,
    top_k_mask,
    top_p_mask,
    values,
)
from ..text.utf8 import characters
from .toy import TOYS
from .trace import trace

GPT2, GPT3 = preset("gpt2-small"), preset("gpt3-175b")
_LOCKS: dict[int, threading.Lock] = {}


def model_lock(fp: LoadedModel) -> threading.Lock:
    """One widget's computation at a time on a model, across every explorer serving it: some widgets flip the model's
    switches or hook its blocks."""
    return _LOCKS.setdefault(id(fp), threading.Lock())

STAGES = ["tokenize", "embedding + position", "N identical blocks", "final norm", "unembedding", "logits"]
LOOP = [  # the seed's §07 loop, each line with the widgets that put a number on it ("stop": §07's own paragraph)
    ("tokens = list(prompt_ids)", ["W-lookup"]),
    ("cache = None", ["W-cache-fill"]),
    ("while len(tokens) < max_len:", ["W-autoregress", "stop"]),
    ("    x = tokens[-1:] if cache else tokens", ["W-naive-vs-cached"]),
    ("    logits, cache = model(x, cache)", ["W-stages", "W-intensity"]),
    ("    probs = softmax(logits[-1] / temperature)", ["W-temperature"]),
    ("    next_id = sample(probs, top_k, top_p)", ["W-top-k", "W-top-p"]),
    ("    tokens.append(next_id)", ["W-autoregress"]),
    ("    if next_id == EOS_ID: break", ["stop"]),
]


def refuse(code: str, message: str, **params) -> ForwardpassError:
    """An input error the page says in its own language: `code` names its sentence, `params` fill it in (the English
    `message` is what every other client reads)."""
    e = ForwardpassError(message)
    e.code, e.params = code, params
    return e


def _range(what: str, lo: int, hi: int, message: str | None = None) -> ForwardpassError:
    return refuse("range", message or f"{what} must be between {lo} and {hi}", what=what, lo=lo, hi=hi)


def _ids(fp: LoadedModel, prompt: str) -> list[int]:
    try:
        ids = fp.encode(prompt)
    except ContextLengthError as e:
        raise refuse("context", str(e), context=fp.config.context_length) from None
    if not ids:
        raise refuse("empty_prompt", "type a prompt: it holds no tokens")
    return ids


def _top(fp: LoadedModel, logits: Any, probs: Any, k: int) -> list[dict]:
    """The k likeliest tokens (equal ones by lower id), from (vocab_size,) logits and probabilities: tensors or
    numpy arrays."""
    logits, probs = values(logits), values(probs)
    order = np.argsort(-probs, kind="stable")[:k].tolist()
    return [{"id": i, "piece": fp.tokenizer.piece(i), "logit": float(logits[i]), "probability": float(probs[i])}
            for i in order]


def model_info(fp: LoadedModel) -> dict:
    from .language import reads_chinese

    c = fp.config
    return {"name": c.name, "config": c.to_dict(), "stages": STAGES, "parameters": cost.parameters(c).to_dict(),
            "norms_on_residual_path": {"post": c.n_layers, "pre": 0}, "loop": [list(x) for x in LOOP],
            "reads_chinese": reads_chinese(fp)}


def lookup(fp: LoadedModel, prompt: str) -> dict:
    """W-lookup: each token is a row number of the embedding table; repeats share the row."""
    ids = _ids(fp, prompt)
    with torch.inference_mode():
        rows = fp.model.tok_embeddings(torch.tensor(ids, dtype=torch.long, device=fp.device)).float().cpu()
    first: dict[int, int] = {}
    tokens = []
    chars = _characters(fp, ids)
    for position, i in enumerate(ids):
        earlier = first.get(i)  # a repeat: its vector compared, all d_model numbers, with the first one's
        tokens.append({"position": position, "id": i, "piece": fp.tokenizer.piece(i), "same_as": earlier,
                       "same_vector": None if earlier is None else bool(torch.equal(rows[position], rows[earlier])),
                       "row": [round(float(v), 4) for v in rows[position, :8]], **chars.get(position, {})})
        first.setdefault(i, position)
    return {"tokens": tokens, "d_model": fp.config.d_model, "vocab_size": fp.config.vocab_size}


def _characters(fp: LoadedModel, ids: list[int]) -> dict[int, dict]:
    """For each token that holds only part of a UTF-8 character (a byte piece such as <0xE7>): the character(s) its
    bytes belong to ("char") and the positions of every token that holds a byte of them ("char_tokens"), so that
    猫 reads as the three tokens <0xE7> <0x8C> <0xAB>."""
    spans, at = [], 0  # each token's bytes in the prompt's bytes: [start, end)
    for i in ids:
        n = len(fp.tokenizer.token_bytes(i))
        spans.append((at, at + n))
        at += n
    raw = b"".join(fp.tokenizer.token_bytes(i) for i in ids)
    # each character of the decoded bytes: (text, start, end); a stray byte that starts none belongs to none
    letters = [(character, s, e) for s, e, character in characters(raw) if character is not None]
    out = {}
    for position, (s, e) in enumerate(spans):
        cut = [c for c in letters if c[1] < e and s < c[2] and not (s <= c[1] and c[2] <= e)]  # split by the token
        if cut:
            holders = [p for p, (a, b) in enumerate(spans) if any(a < c[2] and c[1] < b for c in cut)]
            out[position] = {"char": "".join(c[0] for c in cut), "char_tokens": holders}
    return out


def depth(n_layers: int) -> dict:
    """W-depth: GPT-2 small's width, N blocks: a straight line in N."""
    if not 1 <= n_layers <= 200:
        raise _range("N", 1, 200)
    p = cost.parameters(GPT2.with_(n_layers=n_layers))
    base = cost.parameters(GPT2)
    deep = cost.parameters(GPT2.with_(n_layers=48))  # the article's N = 48
    return {"n_layers": n_layers, "d_model": GPT2.d_model, "total": p.total, "per_block": p.per_block,
            "ratio_to_12": p.total / base.total, "outside_blocks": p.total - p.blocks,
            "block_parts": _block_parts(GPT2),
            "gpt2_small": {"n_layers": GPT2.n_layers, "total": base.total, "per_block": base.per_block},
            "n48": {"n_layers": 48, "total": deep.total, "ratio_to_12": deep.total / base.total},
            "series": [[n, cost.parameters(GPT2.with_(n_layers=n)).total] for n in range(1, 97)]}


def _block_parts(c) -> dict:
    """One GPT-2-style block of width c.d_model, part by part: the 12 d² weight matrices, their 9 d biases
    (Q, K, V, O: 4 d; up: 4 d, down: d) and the two LayerNorms' 4 d (a scale and a shift each): 12 d² + 13 d."""
    attention, ffn = cost.block_matrix_split(c.d_model)
    block = cost.parameters(c).per_block
    norms = 2 * cost.norm_params(c)
    return {"matrices": attention + ffn, "biases": block - attention - ffn - norms, "norms": norms, "block": block}


def split(d_model: int) -> dict:
    """W-split: 12 d² per block, the FFN's 8 d² is two thirds at any width."""
    if not 8 <= d_model <= 65536:
        raise _range("d_model", 8, 65536)
    attention, ffn = cost.block_matrix_split(d_model)
    # the same width as a whole GPT-2 block (heads do not change the count), and GPT-2 small's own width
    parts = _block_parts(GPT2.with_(d_model=d_model, n_heads=1))
    return {"d_model": d_model, "attention": attention, "ffn": ffn, "block": attention + ffn,
            "ffn_share": ffn / (attention + ffn), "block_parts": parts, "gpt2_small": _block_parts(GPT2)}


def _next(fp: LoadedModel, ids: list[int]) -> torch.Tensor:
    """The model's logits for the token after `ids`, run now (hooks and switches on the model see this run)."""
    with torch.inference_mode():
        return fp.model(torch.tensor([ids], device=fp.device), last_only=True)[0][0, 0].float()


def residual(fp: LoadedModel, prompt: str, mode: str) -> dict:
    """W-residual: every block adds into the stream (the model as it is: its watched pass), or (the counterfactual)
    replaces it."""
    if mode not in ("add", "replace"):
        raise refuse("mode", "mode must be 'add' or 'replace'")
    ids = _ids(fp, prompt)
    if mode == "add":
        seen = trace(fp, ids)
        shapes, logits = seen.output_shapes, seen.logits
    else:
        shapes = []
        hooks = [b.register_forward_hook(lambda m, i, o: shapes.append(list(o.shape))) for b in fp.model.blocks]
        for block in fp.model.blocks:
            block.residual = mode
        try:
            logits = _next(fp, ids)
        finally:
            for block in fp.model.blocks:
                block.residual = "add"
            for h in hooks:
                h.remove()
    return {"mode": mode, "stream_shapes": shapes, "next": _top(fp, logits, torch.softmax(logits, -1), 5)}


def block_steps(fp: LoadedModel, prompt: str) -> dict:
    """W-block-steps: the stream's size at every layer boundary and what each branch adds (last token), read off the
    prompt's watched pass."""
    seen = trace(fp, _ids(fp, prompt))
    rows = [{"block": i, "stream_in": float(seen.inputs[i][0, -1].norm()), "stream_out": float(seen.outputs[i].norm()),
             "attention_added": seen.attention_added[i], "ffn_added": seen.ffn_added[i]}
            for i in range(fp.config.n_layers)]
    after = fp.config.sandwich_norm  # Gemma: each branch's output normalized again before the add
    return {"steps": ["read the stream", "normalize a copy", "attention on the copy", "add it back",
                      "normalize a copy", "FFN on the copy", "add it back"], "blocks": rows, "norm_after": after}


def _attention_inputs(fp: LoadedModel, ids: list[int], layer: int) -> tuple:
    """What layer `layer`'s attention reads for a fresh prompt: its block, the normalized stream (1, T, d_model), the
    RoPE angles of its positions (the layer's own table) and its sliding window."""
    c = fp.config
    block = fp.model.blocks[layer]
    with torch.inference_mode():
        x = trace(fp, ids).inputs[layer]  # (1, T, d_model): the stream the block read
        normed = block.attn_norm(x) if c.norm_position == "pre" else x
        positions = torch.arange(len(ids), device=fp.device)[None]
        rotary = fp.model.rope_local if block.sliding and fp.model.rope_local is not None else fp.model.rope
        rope = rotary(positions, len(ids)) if rotary is not None else None
    return block, normed, rope, c.window(layer)


def _check_choice(fp: LoadedModel, ids: list[int], layer: int, head: int, token: int) -> None:
    c = fp.config
    if not (0 <= layer < c.n_layers and 0 <= head < c.n_heads and 0 <= token < len(ids)):
        raise refuse("choice", f"layer < {c.n_layers}, head < {c.n_heads} and token < {len(ids)} are required",
                     layers=c.n_layers, heads=c.n_heads, tokens=len(ids))


def reach(fp: LoadedModel, prompt: str, layer: int, head: int, token: int) -> dict:
    """W-reach with real weights: what the picked token's query attends to, in one layer and head."""
    ids = _ids(fp, prompt)
    _check_choice(fp, ids, layer, head, token)
    block, normed, rope, window = _attention_inputs(fp, ids, layer)
    with torch.inference_mode():
        weights = block.attn.weights(normed, rope, window)[0, head]  # (T, T)
    return {"layer": layer, "head": head, "token": token, "pieces": [fp.tokenizer.piece(i) for i in ids],
            "attention": [round(float(w), 5) for w in weights[token, : token + 1]], "ffn_reads": [token]}


def attention_steps(fp: LoadedModel, prompt: str, layer: int, head: int, token: int) -> dict:
    """Attention opened up for one query (layer, head, token) over the whole prompt: q·k for every key, × the scale,
    the causal mask (and sliding window), softmax, and the weighted sum of the values (its first 8 numbers)."""
    ids = _ids(fp, prompt)
    _check_choice(fp, ids, layer, head, token)
    block, normed, rope, window = _attention_inputs(fp, ids, layer)
    attn = block.attn
    with torch.inference_mode():
        q, k, v = attn.project(normed, rope)  # (1, heads | kv heads, T, head_dim)
        g = head // (attn.n_heads // attn.n_kv_heads)
        query, keys, values = q[0, head, token].float(), k[0, g].float(), v[0, g].float()
        dots = keys @ query  # (T,)
        scaled = dots * attn.scale
        j = torch.arange(len(ids), device=dots.device)
        allowed = (j <= token) & ((j > token - window) if window is not None else True)
        weights = torch.softmax(scaled.masked_fill(~allowed, float("-inf")), dim=-1)
        out = weights @ values
    return {"layer": layer, "head": head, "kv_head": g, "token": token, "head_dim": attn.head_dim,
            "scale": attn.scale, "window": window, "pieces": [fp.tokenizer.piece(i) for i in ids],
            "dots": [round(float(x), 4) for x in dots], "scaled": [round(float(x), 4) for x in scaled],
            "allowed": [bool(a) for a in allowed], "weights": [round(float(w), 5) for w in weights],
            "output_head": [round(float(x), 4) for x in out[:8]], "output_norm": round(float(out.norm()), 4)}


def sampling_view(fp: LoadedModel, prompt: str, temperature: float, top_k: int, top_p: float, min_p: float,
                  toy_lang: str = "en") -> dict:
    """W-logits … W-top-p: the toy's five candidates (in the page's example language: explorer/toy.py) and the real
    model's full vocabulary, same functions."""
    SamplingParams(temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p)  # validates
    words = TOYS[toy_lang].words
    toy = np.array(list(words.values()), dtype=np.float32)
    names = list(words)

    def view(logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(vocab,) probabilities and (vocab,) bool, whether the filters keep each token."""
        probs = probabilities(logits, temperature)
        scaled = logits if temperature == 0 else scale(logits, temperature)
        kept = np.isfinite(min_p_mask(top_p_mask(top_k_mask(scaled, top_k), top_p), min_p))
        return probs, kept

    toy_probs, toy_kept = view(toy)
    real_logits = values(trace(fp, _ids(fp, prompt)).logits)  # the prompt's watched pass, (vocab_size,)
    real_probs, real_kept = view(real_logits)
    return {
        "temperature": temperature, "top_k": top_k, "top_p": top_p, "min_p": min_p,
        "toy": [{"piece": n, "logit": float(toy[i]), "probability": float(toy_probs[i]), "kept": bool(toy_kept[i])}
                for i, n in enumerate(names)],
        "real": [t | {"kept": bool(real_kept[t["id"]])} for t in _top(fp, real_logits, real_probs, 10)],
        "real_kept_count": int(real_kept.sum()), "real_kept_mass": float(real_probs[real_kept].sum()),
        "vocab_size": real_logits.size,
    }


def sample(fp: LoadedModel, prompt: str, temperature: float, top_k: int, top_p: float, seed: int) -> dict:
    """One draw from the full vocabulary with these settings."""
    params = SamplingParams(temperature=temperature, top_k=top_k, top_p=top_p, seed=seed)
    token, _ = next_token(trace(fp, _ids(fp, prompt)).logits, params, make_generator(params), [], [])
    return {"id": token, "piece": fp.tokenizer.piece(token)}


def greedy_loop(fp: LoadedModel, prompt: str, steps: int, sample_at: int | None, seed: int) -> dict:
    """W-greedy-loop: greedy decoding that loops, and one sample tried at every step of the window's first half
    (explorer/greedy.py); `forced` is the row of the step `sample_at`."""
    from .greedy import greedy_loop as search
    from .greedy import searched

    if not 2 <= steps <= 96:
        raise _range("steps", 2, 96)
    if sample_at is not None and not 0 <= sample_at < searched(steps):
        raise refuse("sample_window", f"sample_at must be one of the first {searched(steps)} steps (the first half "
                     "of the window)", n=searched(steps))
    return search(fp, _ids(fp, prompt), steps, sample_at, seed)


KV_NAMES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "q8_0": "q8_0"}


def kv_name(fp: LoadedModel) -> str:
    """The engine's KV dtype as the page names it: every count of the cache's bytes on the page is in it."""
    return KV_NAMES[fp.kv_format()]


def autoregress(fp: LoadedModel, prompt: str, steps: int) -> dict:
    """W-autoregress, W-cache-fill, W-naive-vs-cached: each step's token, position, cache and work. The pairs are
    counted in the reference blocks' cache (the seed's loop), their bytes in the engine's KV dtype, as every other
    count of the cache's bytes on the page; `reference_kv_dtype` is the dtype the reference cache keeps them in."""
    if not 1 <= steps <= 64:
        raise _range("steps", 1, 64)
    ids = _ids(fp, prompt)
    model = fp.model
    cache = model.new_cache(1, len(ids) + steps)
    rows, x, read = [], ids, 0
    with torch.inference_mode():
        for step in range(steps):
            position = cache.next_position()
            logits, cache = model(torch.tensor([x], device=fp.device), cache, last_only=True)
            token = int(logits[0, 0].argmax())
            read += len(x)  # tokens the model has read so far: the cache must hold exactly that many pairs
            rows.append({"step": step, "input_tokens": len(x), "position": position + len(x) - 1, "id": token,
                         "piece": fp.tokenizer.piece(token), "cache_pairs_per_layer": cache.lengths[0],
                         "tokens_read": read, "chosen_position": cache.next_position(),
                         "naive_work": len(ids) + step, "cached_work": len(x)})
            x = [token]
    # greedy text that already repeats itself (a block of tokens twice or more, over 6 tokens at least): §03's
    # greedy loop, live on the page's prompt
    loop = detect_loop([r["id"] for r in rows], min_repeats=2)
    repeat = ({"period": loop.period, "start": loop.start, "repeats": loop.repeats}
              if loop and loop.period * loop.repeats >= 6 else None)
    return {"prompt": [{"id": i, "piece": fp.tokenizer.piece(i)} for i in ids], "steps": rows,
            "n_layers": fp.config.n_layers, "kv_dtype": kv_name(fp),
            "kv_bytes_per_token": cost.kv_bytes_per_token(fp.config, kv_name(fp)),
            "reference_kv_dtype": KV_NAMES[str(cache.k.dtype).removeprefix("torch.")], "repeat": repeat}


def work(prompt_tokens: int, new: int) -> dict:
    """W-cost-toy / W-cost-gpt2: naive vs cached token-work, cumulative. Each row of `series`: n, the naive total,
    the cached total with its prefill of the prompt counted (P + n - 1), and the cached total after the prompt alone
    (1 a step: the count `ratio` uses, 5× / 10.5× / 69.5×)."""
    if not (1 <= prompt_tokens <= 4096 and 1 <= new <= 4096):
        raise _range("tokens", 1, 4096, "prompt and new tokens must be between 1 and 4096")
    return {"prompt": prompt_tokens, "new": new, "ratio": cost.naive_over_cached(prompt_tokens, new),
            "ratio_with_prefill": cost.naive_over_cached(prompt_tokens, new, count_prefill=True),
            "series": [[n, cost.naive_work(prompt_tokens, n), cost.cached_work(prompt_tokens, n, count_prefill=True),
                        cost.cached_work(prompt_tokens, n)] for n in range(1, new + 1)]}


def cache_memory(context: int) -> dict:
    """W-cache-memory: GPT-3's cache for one sequence, fp16: linear in context."""
    if not 1 <= context <= GPT3.context_length:
        raise _range("context", 1, GPT3.context_length)
    b = cost.kv_bytes(GPT3, context, "fp16")
    return {"context": context, "bytes": b, "gib": b / cost.GiB, "per_token": cost.kv_bytes_per_token(GPT3, "fp16"),
            "n_layers": GPT3.n_layers, "d_model": GPT3.d_model, "element_bytes": 2,
            "series": [[n, cost.kv_bytes(GPT3, n, "fp16") / cost.GiB] for n in range(0, GPT3.context_length + 1, 64)]}


def concurrency(sequences: int, context: int = 2048) -> dict:
    """W-weights-vs-cache, W-concurrency: weights paid once, one cache per sequence."""
    if not 1 <= sequences <= 1000:
        raise _range("sequences", 1, 1000)
    if not 1 <= context <= GPT3.context_length:
        raise _range("context", 1, GPT3.context_length)
    weights = cost.weight_bytes(GPT3, "fp16")
    caches = cost.kv_bytes(GPT3, context, "fp16", sequences)
    one = cost.kv_bytes(GPT3, context, "fp16")
    # the configuration counts 174.6 B parameters (325.23 GiB in fp16); the 175 B GPT-3 is known by would be 325.96 GiB
    return {"sequences": sequences, "context": context, "weights_gib": weights / cost.GiB,
            "parameters": cost.parameters(GPT3).total, "named_parameters": 175e9,
            "named_weights_gib": 175e9 * cost.bytes_per_weight("fp16") / cost.GiB,
            "caches_gib": caches / cost.GiB, "one_cache_gib": one / cost.GiB, "caches_outweigh": caches > weights,
            "per_token": cost.kv_bytes_per_token(GPT3, "fp16"), "weights_over_one_cache": weights / one,
            "crossover": cost.crossover_sequences(GPT3, context, "fp16")}


def intensity(prompt_tokens: int) -> dict:
    """W-intensity: FLOPs per byte of fp16 weights, prefill of P tokens vs decode; and where each stands on this
    machine (its measured ridge point) and on published GPUs: compute-bound at or above the ridge, else memory-bound."""
    from .machine_rates import intensity_here

    if not 1 <= prompt_tokens <= 4096:
        raise _range("P", 1, 4096)
    prefill, decode = cost.intensity(GPT3, prompt_tokens, "fp16"), cost.intensity(GPT3, 1, "fp16")
    return {"prompt": prompt_tokens, "prefill": prefill, "decode": decode} | intensity_here(prefill, decode)


def param_split() -> dict:
    """W-param-split: where GPT-2 small's 124M parameters live."""
    p = cost.parameters(GPT2)
    block_norms = p.per_block * p.n_layers - p.attention - p.ffn  # each block's two norms
    return p.to_dict() | {"block_norms": block_norms, "outside": p.total - p.blocks}  # outside: tables + final norm


def loop_cost(fp: LoadedModel, prompt_tokens: int, new: int) -> dict:
    """W-loop-cost: what each line of the loop costs, for the loaded model: FLOPs and bytes from cost.py, and for each
    call of the model the least time this machine can take for it (its FLOPs at the measured matmul rate, or its
    weights read once at the measured bandwidth, whichever is longer: that one is what bounds it).

    `new` tokens take `new` calls: the prefill chooses the first, each later call one more. A call's bound rests on
    two assumptions the page names: the weights as loaded here (`weights`: their storage and bytes per weight) and
    this machine's measured rates (`machine`); `fp16`: a one-token call with 2-byte weights, as W-intensity counts."""
    from .machine_rates import bound, measure, weight_bytes

    c = fp.config
    if not (1 <= prompt_tokens and 1 <= new and prompt_tokens + new <= c.context_length):
        raise refuse("context_fit", "prompt + new tokens must fit the context", context=c.context_length)
    held = prompt_tokens + new - 1  # the cache at the loop's end: the last token chosen is never fed back
    kv = kv_name(fp)
    here, weights, params = measure(), weight_bytes(fp), cost.parameters(c).total
    line = {name: LOOP[i][0].strip() for i, name in enumerate(["tokens", "cache", "while", "x", "model", "softmax"])}
    model_line, calls = line["model"], new - 1  # the prefill chooses the first token, one call each after it

    def timed(flops: int, reads: int = 1) -> dict:
        floor = max(flops / here["flops"], reads * weights / here["bandwidth"])
        per_byte = flops / (reads * weights)
        return {"flops": flops, "floor_s": floor, "intensity": per_byte, "bound": bound(per_byte, here["ridge"])}

    decode = [cost.forward_flops(c, 1, prompt_tokens + i) for i in range(calls)]
    rows = [{"key": "prefill", "line": model_line, "calls": 1} | timed(cost.forward_flops(c, prompt_tokens))]
    if calls:
        rows += [{"key": "first_decode", "line": model_line, "calls": 1} | timed(decode[0])]
    if calls > 1:
        rows += [{"key": "last_decode", "line": model_line, "calls": 1} | timed(decode[-1]),
                 {"key": "all_decode", "line": model_line, "calls": calls} | timed(sum(decode), calls)]
    # the cache the model line grows, one pair per token per block; the work the x line saves, counted both ways
    # (the prompt's prefill in both loops, and the steps after the prompt alone: the cached loop at 1 a step)
    rows += [{"key": "cache", "line": model_line, "pairs": held, "bytes": cost.kv_bytes(c, held, kv), "dtype": kv},
             {"key": "softmax", "line": line["softmax"], "flops": 3 * c.vocab_size, "calls": new},
             {"key": "ratio", "line": line["x"], "ratio_after_prompt": cost.naive_over_cached(prompt_tokens, new),
              "ratio": cost.naive_over_cached(prompt_tokens, new, count_prefill=True)}]
    storage = fp.metadata.get("storage", "stored")
    loaded = {"bytes": weights, "parameters": params, "per_weight": weights / params, "storage": storage,
              "types": fp.metadata.get("tensor_types", []) if storage == "stored" else []}
    fp16 = None
    if calls:
        per_byte = decode[0] / cost.weight_bytes(c, "fp16")
        fp16 = {"intensity": per_byte, "bound": bound(per_byte, here["ridge"])}
    return {"prompt": prompt_tokens, "new": new, "weights_bytes": weights, "weights": loaded, "fp16": fp16,
            "machine": here, "rows": rows}


def _greedy_through(fp: LoadedModel, cache, ids: list[int], steps: int) -> list[int]:
    """Greedy decoding through a given (deliberately broken) cache: the tokens it produces."""
    out, x = [], ids
    with torch.inference_mode():
        for _ in range(steps):
            logits, _ = fp.model(torch.tensor([x], device=fp.device), cache, last_only=True)
            x = [int(logits[0, 0].argmax())]
            out.append(x[0])
    return out


def ring_overflow(fp: LoadedModel, prompt: str, capacity: int, steps: int) -> dict:
    """W-ring-overflow, run for real: a naive ring buffer wraps and overwrites; the guarded cache refuses. What
    happened is reported as it happened: every write that landed on a slot still holding an earlier position's pair
    (`overwrites`), and whether and where the guarded cache of the same capacity refused (`guard`, None: it had
    room)."""
    ids = _ids(fp, prompt)
    if not (1 <= len(ids) <= capacity <= 64 and 1 <= steps <= 32):
        raise refuse("ring_fit", "the prompt must fit the capacity (at most 64); steps at most 32", tokens=len(ids),
                      capacity=capacity)
    model = fp.model
    right = generate(fp, ids, SamplingParams(temperature=0, max_tokens=steps, ignore_eos=True))
    ring = NaiveRingCache(fp.config, 1, capacity, model.dtype, model.device)
    wrong = _greedy_through(fp, ring, ids, steps)
    written = ids + wrong[:-1]  # the ring's positions, in order (its last token is chosen, never written)
    assert len(written) == ring.lengths[0]
    guard, refused, cache, x = None, None, model.new_cache(1, capacity), ids
    with torch.inference_mode():
        for token in right.token_ids:  # the guarded cache, token by token, until it refuses
            try:
                model(torch.tensor([x], device=fp.device), cache)
            except ContextLengthError as e:
                guard, refused = str(e), {"position": cache.next_position(), "piece": fp.tokenizer.piece(x[0])}
                break
            x = [token]
    piece = fp.tokenizer.piece
    return {"capacity": capacity, "prompt_tokens": len(ids), "steps": steps, "written": ring.lengths[0],
            "overwritten_positions": ring.overwritten(), "slots": ring.slots(),
            "pieces": [piece(i) for i in written],  # the piece whose pair each position holds
            "overwrites": [{"slot": p % capacity, "position": p, "piece": piece(written[p]), "lost": p - capacity,
                            "lost_piece": piece(written[p - capacity])} for p in range(capacity, len(written))],
            "correct": right.text, "ring": fp.tokenizer.decode(wrong),
            "correct_pieces": [piece(i) for i in right.token_ids], "ring_pieces": [piece(i) for i in wrong],
            "first_difference": _first_difference(right.token_ids, wrong), "guard": guard, "refused": refused}


def _first_difference(a: list[int], b: list[int]) -> int | None:
    """The first index where two generations differ (None: the same tokens)."""
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), None if len(a) == len(b) else n)


def _perplexity(fp: LoadedModel, ids: list[int], tokens: list[int]) -> float:
    """How surprised the correct model is by `tokens` after `ids`: exp of their mean negative log-probability."""
    with torch.inference_mode():
        logits, _ = fp.model(torch.tensor([ids + tokens], device=fp.device), fp.model.new_cache(1, len(ids + tokens)))
        logp = torch.log_softmax(logits[0, len(ids) - 1:-1].float(), -1)
        chosen = logp[torch.arange(len(tokens)), torch.tensor(tokens, device=logp.device)]
    return float(torch.exp(-chosen.mean()))


def position_bug(fp: LoadedModel, prompt: str, steps: int) -> dict:
    """W-position-bug, run for real: every new token written at position 0, beside the correct engine. Both
    continuations token by token, where they first differ, and how likely the correct model finds each (perplexity:
    1 is certain; the larger, the more surprising)."""
    ids = _ids(fp, prompt)
    if not 1 <= steps <= 32:
        raise _range("steps", 1, 32)
    right = generate(fp, ids, SamplingParams(temperature=0, max_tokens=steps, ignore_eos=True))
    stuck = StuckPositionCache(fp.config, 1, len(ids) + steps, fp.model.dtype, fp.device)
    wrong = _greedy_through(fp, stuck, ids, steps)
    piece = fp.tokenizer.piece
    return {"correct": right.text, "buggy": fp.tokenizer.decode(wrong), "prompt_tokens": len(ids),
            "correct_pieces": [piece(i) for i in right.token_ids], "buggy_pieces": [piece(i) for i in wrong],
            "first_difference": _first_difference(right.token_ids, wrong),
            "correct_perplexity": _perplexity(fp, ids, right.token_ids),
            "buggy_perplexity": _perplexity(fp, ids, wrong),
            "correct_positions": list(range(len(ids), len(ids) + steps)), "buggy_positions": [0] * steps}
