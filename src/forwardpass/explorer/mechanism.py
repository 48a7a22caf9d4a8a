"""W-mechanism: one token's pass through one block, opened stage by stage on the loaded model. Block `layer` runs again
on the stream it read in the prompt's watched pass (trace.py), as the model's forward runs it (the layer's RoPE table,
its mask, a fresh cache), and hooks on its own modules record what each computed: the norms, Q, K and V, the heads
joined, the output projection, the FFN's products, what each branch added. What no module returns (q and k rotated,
the scores, the mask, softmax, one head's weighted sum) is computed here from those tensors with the model's own
functions, as attention_map.py does.

The stages are the family's own, read from its config: QK-norm where it has one, RoPE where it rotates, the norms
after each branch where it has them (Gemma 3), a gated FFN with its own activation or a plain one. Vectors and
matrices go out as strips.py tells them: a few leading numbers, the shape, a heat strip of the whole."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from ..model import SwiGLU, apply_rope, attention_mask
from ..pipeline import LoadedModel
from .compute import _check_choice, _ids
from .strips import matrix, number, numbers, vector
from .trace import trace

TABLE_ROWS = 7  # rows of the embedding table drawn around the token's own
CURVE = [x / 2 for x in range(-10, 11)]  # where the activation's curve is sampled
VALUES = 8  # values of the weighted sum drawn, the most weighted


def _weight(linear: nn.Module) -> torch.Tensor:
    """a linear layer's weight (out_features, in_features) in float32, however it is stored"""
    if hasattr(linear, "dequantize"):  # integer tiles (quant/layers.py)
        return linear.dequantize()
    return linear.weight.detach().float()


def _bias(linear: nn.Module, rows: slice) -> float | None:
    """the first of `rows`' biases, where the layer has biases"""
    return None if getattr(linear, "bias", None) is None else number(linear.bias[rows][0])


def activation(ffn: nn.Module) -> tuple[str, Callable[[torch.Tensor], torch.Tensor]]:
    """the FFN's own nonlinearity: its name as the config sets it, and the function its forward applies"""
    if isinstance(ffn, SwiGLU):
        return ("silu" if ffn.act is F.silu else "gelu_tanh"), ffn.act
    return ("gelu_tanh" if ffn.approximate == "tanh" else "gelu"), lambda x: F.gelu(x, approximate=ffn.approximate)


def _watch(fp: LoadedModel, layer: int, x: torch.Tensor) -> tuple[dict[str, torch.Tensor], tuple | None]:
    """Block `layer` run on x (1, T, d_model) as Transformer.forward runs it on a fresh prompt; returns what its
    modules took in and gave out (each (1, T, …), q_norm's and k_norm's (1, heads, T, head_dim)) and the RoPE cos, sin
    it was given."""
    model, T = fp.model, x.shape[1]
    block = model.blocks[layer]
    cache = model.new_cache(1, T)
    positions = cache.begin([T], T)  # (1, T): 0 … T-1
    rotary = model.rope_local if block.sliding and model.rope_local is not None else model.rope
    rope = rotary(positions, T) if rotary is not None else None
    mask = attention_mask(cache.lengths, T, x.device, fp.config.window(layer))
    seen: dict[str, torch.Tensor] = {}

    def output(name: str):
        return lambda module, inputs, out: seen.__setitem__(name, out.clone())

    def given(name: str):
        return lambda module, inputs: seen.__setitem__(name, inputs[0].clone())

    outputs = {"h": block.attn_norm, "qkv": block.attn.qkv, "q_n": block.attn.q_norm, "k_n": block.attn.k_norm,
               "a": block.attn.out, "a_n": block.attn_post_norm, "u": block.ffn_norm, "f": block.ffn.down,
               "f_n": block.ffn_post_norm, "gate_up": getattr(block.ffn, "gate_up", None),
               "up": getattr(block.ffn, "up", None)}
    inputs = {"o": block.attn.out, "x_mid": block.ffn_norm, "prod": block.ffn.down}
    hooks = [m.register_forward_hook(output(n)) for n, m in outputs.items() if m is not None]
    hooks += [m.register_forward_pre_hook(given(n)) for n, m in inputs.items()]
    try:
        with torch.inference_mode():
            seen["x_out"] = block(x, cache, rope, mask)
    finally:
        for h in hooks:
            h.remove()
    return seen, rope


def _norm_part(module: nn.Module, x: torch.Tensor, out: torch.Tensor, vectors: dict, keys: tuple) -> dict:
    """One norm opened: x (n,) → x̂ (x over its RMS, or centred over its deviation) → × the learned gain (+ bias) =
    out. `keys`: the names of its input, x̂, gain and output among `vectors` (the input is there already)."""
    x, out = x.float(), out.float()
    into, hat, gain, given = keys
    eps = module.eps if module.eps is not None else torch.finfo(x.dtype).eps
    part = {"input": into, "hat": hat, "gain": gain, "output": given, "eps": number(eps), "size": x.numel()}
    if isinstance(module, nn.RMSNorm):
        rms = torch.sqrt(x.pow(2).mean() + eps)
        part |= {"kind": "rmsnorm", "rms": number(rms)}
        vectors[hat] = vector(x / rms)
    else:
        mean, std = x.mean(), torch.sqrt(x.var(unbiased=False) + eps)
        part |= {"kind": "layernorm", "mean": number(mean), "std": number(std)}
        vectors[hat] = vector((x - mean) / std)
        if module.bias is not None:
            part["bias"] = f"{gain}.bias"
            vectors[part["bias"]] = vector(module.bias)
    vectors[gain] = vector(module.weight)
    vectors[given] = vector(out)
    return part


def _norm(name: str, module: nn.Module, x: torch.Tensor, out: torch.Tensor, vectors: dict, keys: tuple) -> dict:
    return {"name": name, "kind": "norms", "parts": [_norm_part(module, x, out, vectors, keys)]}


def mechanism(fp: LoadedModel, prompt: str, layer: int, head: int, token: int) -> dict:
    """The token at position `token` through block `layer`, head `head` of its attention: the stages in order (each
    naming the vectors and matrices it draws), the vectors and matrices (strips.py), and the few numbers between."""
    ids = _ids(fp, prompt)
    _check_choice(fp, ids, layer, head, token)
    c, model, t, T = fp.config, fp.model, token, len(ids)
    block = model.blocks[layer]
    attn, ffn = block.attn, block.ffn
    nh, nkv, hd = attn.n_heads, attn.n_kv_heads, attn.head_dim
    group = nh // nkv
    g = head // group  # the K/V head this query head reads
    vectors: dict[str, dict] = {}
    matrices: dict[str, dict] = {}
    stages: list[dict] = []
    with torch.inference_mode():
        x = trace(fp, ids).inputs[layer]  # (1, T, d_model): the stream block `layer` read
        seen, rope = _watch(fp, layer, x)
        row = lambda name: seen[name][0, t].float()  # noqa: E731 — this token's row of a (1, T, …) tensor

        # the embedding: the token's row of the table (vocab_size × d_model), × √d_model (Gemma), + its position's row
        i = ids[t]
        lo = max(0, min(i - TABLE_ROWS // 2, c.vocab_size - TABLE_ROWS))
        window = list(range(lo, min(lo + TABLE_ROWS, c.vocab_size)))
        table = model.tok_embeddings(torch.tensor(window, device=fp.device)).float()  # (rows, d_model)
        matrices["table"] = matrix(table, grid=(len(window), 32), quantile=0.9) | {"shape": [c.vocab_size, c.d_model]}
        vectors["e"] = vector(table[i - lo])
        embedded = model.embed(torch.tensor([[i]], device=fp.device), torch.tensor([[t]], device=fp.device))[0, 0]
        stage = {"name": "embedding", "kind": "embedding", "id": i, "rows": window,
                 "pieces": [fp.tokenizer.piece(j) for j in window], "output": "e"}
        if c.embed_scale:
            vectors["e_scaled"] = vector(table[i - lo] * c.d_model**0.5)
            stage |= {"scale": number(c.d_model**0.5), "output": "e_scaled"}
        if model.pos_embeddings is not None:
            vectors["p"] = vector(model.pos_embeddings.weight[t])
            stage |= {"position_row": "p", "output": "x0"}
        if model.pos_embeddings is not None:  # else the stream starts as the (scaled) row itself
            vectors["x0"] = vector(embedded)
        stages.append(stage)
        vectors["x"] = vector(x[0, t])
        stages.append({"name": "stream", "kind": "stream", "output": "x", "shape": list(x.shape),
                       "same_as_embedding": layer == 0})

        # attention's branch: a normalized copy of the stream, Q, K and V, QK-norm, RoPE, scores, softmax, Σ weights V
        stages.append(_norm("attn_norm", block.attn_norm, x[0, t], row("h"), vectors, ("x", "x_hat", "g_attn", "h")))
        qkv = seen["qkv"].float()
        q, k, v = qkv.split([nh * hd, nkv * hd, nkv * hd], dim=-1)
        q = q.view(1, T, nh, hd).transpose(1, 2)  # (1, heads, T, head_dim), as Attention.project shapes them
        k = k.view(1, T, nkv, hd).transpose(1, 2)  # (1, kv heads, T, head_dim)
        v = v.view(1, T, nkv, hd).transpose(1, 2)
        w = _weight(attn.qkv)  # (heads + 2 kv heads) × head_dim rows: Q's, then K's, then V's
        rows = {"W_Q": slice(head * hd, (head + 1) * hd), "W_K": slice((nh + g) * hd, (nh + g + 1) * hd),
                "W_V": slice((nh + nkv + g) * hd, (nh + nkv + g + 1) * hd)}
        for name, r in rows.items():
            matrices[name] = matrix(w[r]) | {"bias0": _bias(attn.qkv, r)}
        vectors |= {"q": vector(q[0, head, t]), "k": vector(k[0, g, t]), "v": vector(v[0, g, t])}
        stages.append({"name": "qkv", "kind": "matvec", "input": "h", "products": [
            {"matrix": m, "output": o} for m, o in (("W_Q", "q"), ("W_K", "k"), ("W_V", "v"))],
            "kv_head": g, "sharing": list(range(g * group, (g + 1) * group))})
        if attn.q_norm is not None:
            q_n, k_n = seen["q_n"].float(), seen["k_n"].float()
            stages.append({"name": "qk_norm", "kind": "norms", "parts": [
                _norm_part(attn.q_norm, q[0, head, t], q_n[0, head, t], vectors, ("q", "q_hat", "g_q", "q_n")),
                _norm_part(attn.k_norm, k[0, g, t], k_n[0, g, t], vectors, ("k", "k_hat", "g_k", "k_n"))]})
            q, k = q_n, k_n
        before_q, before_k = q, k
        if rope is not None:
            q, k = apply_rope(q, *rope), apply_rope(k, *rope)
        query, keys, values = q[0, head, t], k[0, g], v[0, g]  # (head_dim,), (T, head_dim), (T, head_dim)
        dots = keys @ query  # (T,): q·k for every key, the later ones too
        scaled = dots * attn.scale
        j = torch.arange(T, device=dots.device)
        span = c.window(layer)
        allowed = (j <= t) & ((j > t - span) if span is not None else True)
        weights = torch.softmax(scaled.masked_fill(~allowed, float("-inf")), dim=-1)
        if rope is not None:
            stages.append(_rope(fp, block, t, weights, before_q[0, head, t], before_k[0, g], query, keys, attn.scale,
                                vectors, "q_n" if attn.q_norm is not None else "q"))
        scale_of = "head_dim" if math.isclose(attn.scale, hd**-0.5, rel_tol=1e-6) else "query_scale"
        stages.append({"name": "scores", "kind": "scores", "dots": numbers(dots), "scaled": numbers(scaled),
                       "allowed": [bool(a) for a in allowed], "scale": number(attn.scale), "scale_of": scale_of,
                       "query_scalar": number(attn.scale**-2), "window": span})
        stages.append({"name": "softmax", "kind": "softmax", "weights": numbers(weights),
                       "sum": number(weights.sum()), "max": number(scaled[allowed].max())})
        o_head = weights @ values  # (head_dim,): the weighted sum of the values
        shown = sorted(torch.topk(weights, min(VALUES, t + 1)).indices.tolist())
        vectors["o_head"] = vector(o_head)
        stages.append({"name": "weighted_sum", "kind": "weighted_sum", "output": "o_head", "values": [
            {"key": k_, "weight": number(weights[k_]), "v": vector(values[k_], lead=2, cells=16)} for k_ in shown],
            "of": t + 1})

        # the heads joined, the output projection, (its norm), and the add into the stream
        vectors["o"] = vector(row("o"))
        matrices["W_O"] = matrix(_weight(attn.out)) | {"bias0": _bias(attn.out, slice(0, 1))}
        vectors["a"] = vector(row("a"))
        stages.append({"name": "heads", "kind": "matvec", "input": "o", "products": [{"matrix": "W_O", "output": "a"}],
                       "span": [head * hd, (head + 1) * hd]})
        branch = "a"
        if block.attn_post_norm is not None:
            stages.append(_norm("attn_post_norm", block.attn_post_norm, row("a"), row("a_n"), vectors,
                                ("a", "a_hat", "g_a", "a_n")))
            branch = "a_n"
        vectors["x_mid"] = vector(row("x_mid"))
        stages.append({"name": "residual_attn", "kind": "residual", "stream": "x", "branch": branch, "output": "x_mid"})

        # the FFN's branch: a normalized copy, gate and up (or up alone), the activation, down, (its norm), the add
        stages.append(_norm("ffn_norm", block.ffn_norm, row("x_mid"), row("u"), vectors, ("x_mid", "u_hat", "g_ffn",
                                                                                         "u")))
        name, act = activation(ffn)
        hidden = c.hidden
        if "gate_up" in seen:
            gate, up = row("gate_up").chunk(2)  # (ffn_hidden,) each
            w = _weight(ffn.gate_up)
            matrices["W_gate"] = matrix(w[:hidden]) | {"bias0": _bias(ffn.gate_up, slice(0, hidden))}
            matrices["W_up"] = matrix(w[hidden:]) | {"bias0": _bias(ffn.gate_up, slice(hidden, 2 * hidden))}
            vectors |= {"gate": vector(gate), "up": vector(up), "act": vector(act(gate))}
            stages.append({"name": "gate_up", "kind": "matvec", "input": "u", "products": [
                {"matrix": "W_gate", "output": "gate"}, {"matrix": "W_up", "output": "up"}]})
            into = gate
        else:
            into = row("up")
            matrices["W_up"] = matrix(_weight(ffn.up)) | {"bias0": _bias(ffn.up, slice(0, 1))}
            vectors["up"] = vector(into)
            stages.append({"name": "up", "kind": "matvec", "input": "u",
                           "products": [{"matrix": "W_up", "output": "up"}]})
        curve = act(torch.tensor(CURVE))
        vectors["prod"] = vector(row("prod"))
        stages.append({"name": "activation", "kind": "activation", "function": name, "gated": "gate_up" in seen,
                       "input": "gate" if "gate_up" in seen else "up", "output": "prod",
                       "curve": [[x_, number(y)] for x_, y in zip(CURVE, curve.tolist(), strict=True)],
                       "points": [[number(a), number(b)] for a, b in zip(into[:6], act(into[:6]), strict=True)],
                       "share_positive": number((into > 0).float().mean())})
        matrices["W_down"] = matrix(_weight(ffn.down)) | {"bias0": _bias(ffn.down, slice(0, 1))}
        vectors["f"] = vector(row("f"))
        stages.append({"name": "down", "kind": "matvec", "input": "prod", "products": [{"matrix": "W_down",
                                                                                        "output": "f"}]})
        branch = "f"
        if block.ffn_post_norm is not None:
            stages.append(_norm("ffn_post_norm", block.ffn_post_norm, row("f"), row("f_n"), vectors,
                                ("f", "f_hat", "g_f", "f_n")))
            branch = "f_n"
        vectors["x_out"] = vector(row("x_out"))
        stages.append({"name": "residual_ffn", "kind": "residual", "stream": "x_mid", "branch": branch,
                       "output": "x_out", "last": layer == c.n_layers - 1})
    return {"layer": layer, "head": head, "token": t, "n_layers": c.n_layers, "id": i,
            "pieces": [fp.tokenizer.piece(j) for j in ids],
            "shape": {"d_model": c.d_model, "n_heads": nh, "n_kv_heads": nkv, "head_dim": hd, "hidden": hidden,
                      "vocab_size": c.vocab_size, "tokens": T},
            "stages": stages, "vectors": vectors, "matrices": matrices}


def _rope(fp: LoadedModel, block: nn.Module, t: int, weights: torch.Tensor, q: torch.Tensor, keys: torch.Tensor,
          q_rot: torch.Tensor, keys_rot: torch.Tensor, scale: float, vectors: dict, given: str) -> dict:
    """RoPE at position t: pair i of q — (q[i], q[i + head_dim/2]) — turned by t × frequency_i, the angle of every
    pair, a few pairs before and after, and one score before and after (the key this query weighs most among the
    earlier ones: rotation changes a score only through the distance between the two positions)."""
    model, hd = fp.model, q.shape[-1]
    rotary = model.rope_local if block.sliding and model.rope_local is not None else model.rope
    inv_freq = torch.from_numpy(rotary.table.inv_freq)  # (head_dim/2,)
    angles = torch.tensor(float(t), dtype=torch.float32) * inv_freq  # the float32 products the table holds
    half = hd // 2
    chosen = sorted({0, 1, half // 4, half // 2, half - 1})
    key = int(weights[:t].argmax()) if t > 0 else t
    vectors["q_rot"] = vector(q_rot)
    vectors["k_rot"] = vector(keys_rot[t])
    c = fp.config
    local = block.sliding and model.rope_local is not None
    return {"name": "rope", "kind": "rope", "input": given, "output": "q_rot", "key_output": "k_rot",
            "position": t, "theta": number(c.local_rope_theta if local else c.rope_theta),
            "scaling": None if local or c.rope_scaling is None else c.rope_scaling.kind,
            "angles": [round(float(a), 4) for a in angles],
            "pairs": [{"i": p, "freq": number(inv_freq[p]), "angle": number(angles[p]),
                       "q": numbers(q[[p, p + half]]), "q_rot": numbers(q_rot[[p, p + half]])} for p in chosen],
            "score": {"key": key, "distance": t - key, "before": number((q @ keys[key]) * scale),
                      "after": number((q_rot @ keys_rot[key]) * scale)}}
