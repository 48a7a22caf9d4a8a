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
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from ..loaded import LoadedModel
from ..model import SwiGLU, apply_rope, attention_mask
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


@dataclass
class Opened:
    """One token's pass through one block as the page is told it: the stages in order (each naming the vectors and
    matrices it draws), and those vectors and matrices (strips.py)."""

    t: int  # the token's position
    seen: dict[str, torch.Tensor]  # what the block's modules took in and gave out (_watch)
    stages: list[dict] = field(default_factory=list)
    vectors: dict[str, dict] = field(default_factory=dict)
    matrices: dict[str, dict] = field(default_factory=dict)
    weights: dict[int, torch.Tensor] = field(default_factory=dict)  # id(linear) → its weight, read once

    def row(self, name: str) -> torch.Tensor:
        """this token's row of a (1, T, …) tensor the block computed"""
        return self.seen[name][0, self.t].float()

    def norm_part(self, module: nn.Module, x: torch.Tensor, out: torch.Tensor, keys: tuple) -> dict:
        """One norm opened: x (n,) → x̂ (x over its RMS, or centred over its deviation) → × the learned gain (+ bias)
        = out. `keys`: the names of its input, x̂, gain and output among the vectors (the input is there already)."""
        x, out = x.float(), out.float()
        into, hat, gain, given = keys
        eps = module.eps if module.eps is not None else torch.finfo(x.dtype).eps
        part = {"input": into, "hat": hat, "gain": gain, "output": given, "eps": number(eps), "size": x.numel()}
        if isinstance(module, nn.RMSNorm):
            rms = torch.sqrt(x.pow(2).mean() + eps)
            part |= {"kind": "rmsnorm", "rms": number(rms)}
            self.vectors[hat] = vector(x / rms)
        else:
            mean, std = x.mean(), torch.sqrt(x.var(unbiased=False) + eps)
            part |= {"kind": "layernorm", "mean": number(mean), "std": number(std)}
            self.vectors[hat] = vector((x - mean) / std)
            if module.bias is not None:
                part["bias"] = f"{gain}.bias"
                self.vectors[part["bias"]] = vector(module.bias)
        self.vectors[gain] = vector(module.weight)
        self.vectors[given] = vector(out)
        return part

    def norm(self, name: str, module: nn.Module, into: str, out: str, keys: tuple) -> None:
        """a block norm's stage: the norm of row `into` giving row `out`"""
        part = self.norm_part(module, self.row(into), self.row(out), keys)
        self.stages.append({"name": name, "kind": "norms", "parts": [part]})

    def product(self, name: str, linear: nn.Module, rows: slice | None = None) -> None:
        """the matrix `name`: `linear`'s weight (those rows of it), and its first row's bias where it has biases"""
        if id(linear) not in self.weights:
            self.weights[id(linear)] = _weight(linear)
        w = self.weights[id(linear)]
        rows = rows or slice(0, w.shape[0])
        bias = getattr(linear, "bias", None)
        self.matrices[name] = matrix(w[rows]) | {"bias0": None if bias is None else number(bias[rows][0])}


def mechanism(fp: LoadedModel, prompt: str, layer: int, head: int, token: int) -> dict:
    """The token at position `token` through block `layer`, head `head` of its attention: the stages in order, the
    vectors and matrices they draw, and the few numbers between (Opened)."""
    ids = _ids(fp, prompt)
    _check_choice(fp, ids, layer, head, token)
    c, block = fp.config, fp.model.blocks[layer]
    attn = block.attn
    with torch.inference_mode():
        x = trace(fp, ids).inputs[layer]  # (1, T, d_model): the stream block `layer` read
        seen, rope = _watch(fp, layer, x)
        told = Opened(token, seen | {"x": x})
        _embedding(fp, ids, told)
        told.vectors["x"] = vector(told.row("x"))
        told.stages.append({"name": "stream", "kind": "stream", "output": "x", "shape": list(x.shape),
                            "same_as_embedding": layer == 0})
        _attention(fp, layer, head, rope, told)
        _ffn(fp, block, told)
        told.stages[-1]["last"] = layer == c.n_layers - 1
    return {"layer": layer, "head": head, "token": token, "n_layers": c.n_layers, "id": ids[token],
            "pieces": [fp.tokenizer.piece(j) for j in ids],
            "shape": {"d_model": c.d_model, "n_heads": attn.n_heads, "n_kv_heads": attn.n_kv_heads,
                      "head_dim": attn.head_dim, "hidden": c.hidden, "vocab_size": c.vocab_size, "tokens": len(ids)},
            "stages": told.stages, "vectors": told.vectors, "matrices": told.matrices}


def _embedding(fp: LoadedModel, ids: list[int], told: Opened) -> None:
    """The token's row of the table (vocab_size × d_model) among its neighbours, × √d_model where the family scales
    it (Gemma), + its position's row where positions are learned."""
    c, model, t = fp.config, fp.model, told.t
    i = ids[t]
    lo = max(0, min(i - TABLE_ROWS // 2, c.vocab_size - TABLE_ROWS))
    window = list(range(lo, min(lo + TABLE_ROWS, c.vocab_size)))
    table = model.tok_embeddings(torch.tensor(window, device=fp.device)).float()  # (rows, d_model)
    told.matrices["table"] = matrix(table, grid=(len(window), 32), quantile=0.9) | {"shape": [c.vocab_size,
                                                                                              c.d_model]}
    told.vectors["e"] = vector(table[i - lo])
    stage = {"name": "embedding", "kind": "embedding", "id": i, "rows": window,
             "pieces": [fp.tokenizer.piece(j) for j in window], "output": "e"}
    if c.embed_scale:
        told.vectors["e_scaled"] = vector(table[i - lo] * c.d_model**0.5)
        stage |= {"scale": number(c.d_model**0.5), "output": "e_scaled"}
    if model.pos_embeddings is not None:  # else the stream starts as the (scaled) row itself
        embedded = model.embed(torch.tensor([[i]], device=fp.device), torch.tensor([[t]], device=fp.device))[0, 0]
        told.vectors |= {"p": vector(model.pos_embeddings.weight[t]), "x0": vector(embedded)}
        stage |= {"position_row": "p", "output": "x0"}
    told.stages.append(stage)


def _attention(fp: LoadedModel, layer: int, head: int, rope: tuple | None, told: Opened) -> None:
    """Attention's branch for one head: a normalized copy of the stream, Q, K and V, QK-norm, RoPE, the scores and
    their mask, softmax, the weighted values; then every head joined, W_O, (its norm) and the add."""
    c, block, t, vectors = fp.config, fp.model.blocks[layer], told.t, told.vectors
    attn = block.attn
    nh, nkv, hd = attn.n_heads, attn.n_kv_heads, attn.head_dim
    group = nh // nkv
    g = head // group  # the K/V head this query head reads
    told.norm("attn_norm", block.attn_norm, "x", "h", ("x", "x_hat", "g_attn", "h"))
    T = told.seen["qkv"].shape[1]
    q, k, v = told.seen["qkv"].float().split([nh * hd, nkv * hd, nkv * hd], dim=-1)
    q = q.view(1, T, nh, hd).transpose(1, 2)  # (1, heads, T, head_dim), as Attention.project shapes them
    k = k.view(1, T, nkv, hd).transpose(1, 2)  # (1, kv heads, T, head_dim)
    v = v.view(1, T, nkv, hd).transpose(1, 2)
    # the fused weight's rows, (heads + 2 kv heads) × head_dim: Q's, then K's, then V's
    told.product("W_Q", attn.qkv, slice(head * hd, (head + 1) * hd))
    told.product("W_K", attn.qkv, slice((nh + g) * hd, (nh + g + 1) * hd))
    told.product("W_V", attn.qkv, slice((nh + nkv + g) * hd, (nh + nkv + g + 1) * hd))
    vectors |= {"q": vector(q[0, head, t]), "k": vector(k[0, g, t]), "v": vector(v[0, g, t])}
    told.stages.append({"name": "qkv", "kind": "matvec", "input": "h", "products": [
        {"matrix": m, "output": o} for m, o in (("W_Q", "q"), ("W_K", "k"), ("W_V", "v"))],
        "kv_head": g, "sharing": list(range(g * group, (g + 1) * group))})
    if attn.q_norm is not None:
        q_n, k_n = told.seen["q_n"].float(), told.seen["k_n"].float()
        told.stages.append({"name": "qk_norm", "kind": "norms", "parts": [
            told.norm_part(attn.q_norm, q[0, head, t], q_n[0, head, t], ("q", "q_hat", "g_q", "q_n")),
            told.norm_part(attn.k_norm, k[0, g, t], k_n[0, g, t], ("k", "k_hat", "g_k", "k_n"))]})
        q, k = q_n, k_n
    before_q, before_k = q, k
    if rope is not None:
        q, k = apply_rope(q, *rope), apply_rope(k, *rope)
    query, keys, values = q[0, head, t], k[0, g], v[0, g]  # (head_dim,), (T, head_dim), (T, head_dim)
    scaled = (keys @ query) * attn.scale  # (T,): q·k × the scale for every key, the later ones too
    j = torch.arange(T, device=scaled.device)
    span = c.window(layer)
    allowed = (j <= t) & ((j > t - span) if span is not None else True)
    weights = torch.softmax(scaled.masked_fill(~allowed, float("-inf")), dim=-1)
    if rope is not None:
        told.stages.append(_rope(fp, block, t, weights, before_q[0, head, t], before_k[0, g], query, keys, attn.scale,
                                 vectors, "q_n" if attn.q_norm is not None else "q"))
    scale_of = "head_dim" if math.isclose(attn.scale, hd**-0.5, rel_tol=1e-6) else "query_scale"
    told.stages.append({"name": "scores", "kind": "scores", "scaled": numbers(scaled),
                        "allowed": [bool(a) for a in allowed], "scale": number(attn.scale), "scale_of": scale_of,
                        "query_scalar": number(attn.scale**-2), "window": span})
    told.stages.append({"name": "softmax", "kind": "softmax", "weights": numbers(weights),
                        "sum": number(weights.sum()), "max": number(scaled[allowed].max())})
    shown = sorted(torch.topk(weights, min(VALUES, t + 1)).indices.tolist())
    vectors["o_head"] = vector(weights @ values)  # (head_dim,): the weighted sum of the values
    told.stages.append({"name": "weighted_sum", "kind": "weighted_sum", "output": "o_head", "of": t + 1, "values": [
        {"key": key, "weight": number(weights[key]), "v": vector(values[key], lead=2, cells=16)} for key in shown]})
    # every head joined, the output projection, (its norm), and the add into the stream
    told.product("W_O", attn.out)
    vectors |= {"o": vector(told.row("o")), "a": vector(told.row("a"))}
    told.stages.append({"name": "heads", "kind": "matvec", "input": "o", "span": [head * hd, (head + 1) * hd],
                        "products": [{"matrix": "W_O", "output": "a"}]})
    _residual(told, "attn", block.attn_post_norm, "a", "x", "x_mid")


def _ffn(fp: LoadedModel, block: nn.Module, told: Opened) -> None:
    """The FFN's branch: a normalized copy, gate and up (or up alone), the family's activation, down, (its norm), and
    the add."""
    ffn, hidden, vectors = block.ffn, fp.config.hidden, told.vectors
    told.norm("ffn_norm", block.ffn_norm, "x_mid", "u", ("x_mid", "u_hat", "g_ffn", "u"))
    name, act = activation(ffn)
    gated = "gate_up" in told.seen
    if gated:
        gate, up = told.row("gate_up").chunk(2)  # (ffn_hidden,) each
        told.product("W_gate", ffn.gate_up, slice(0, hidden))
        told.product("W_up", ffn.gate_up, slice(hidden, 2 * hidden))
        vectors |= {"gate": vector(gate), "up": vector(up), "act": vector(act(gate))}
        told.stages.append({"name": "gate_up", "kind": "matvec", "input": "u", "products": [
            {"matrix": "W_gate", "output": "gate"}, {"matrix": "W_up", "output": "up"}]})
        into = gate
    else:
        into = told.row("up")
        told.product("W_up", ffn.up)
        vectors["up"] = vector(into)
        told.stages.append({"name": "up", "kind": "matvec", "input": "u",
                            "products": [{"matrix": "W_up", "output": "up"}]})
    curve = act(torch.tensor(CURVE))
    vectors["prod"] = vector(told.row("prod"))
    told.stages.append({"name": "activation", "kind": "activation", "function": name, "gated": gated,
                        "input": "gate" if gated else "up", "output": "prod",
                        "curve": [[x, number(y)] for x, y in zip(CURVE, curve.tolist(), strict=True)],
                        "points": [[number(a), number(b)] for a, b in zip(into[:6], act(into[:6]), strict=True)],
                        "share_positive": number((into > 0).float().mean())})
    told.product("W_down", ffn.down)
    vectors["f"] = vector(told.row("f"))
    told.stages.append({"name": "down", "kind": "matvec", "input": "prod",
                        "products": [{"matrix": "W_down", "output": "f"}]})
    _residual(told, "ffn", block.ffn_post_norm, "f", "x_mid", "x_out")


def _residual(told: Opened, part: str, post_norm: nn.Module | None, branch: str, stream: str, output: str) -> None:
    """The add of `part`'s branch (row `branch`) into row `stream`, giving row `output`: the branch normalized first
    where the family has a norm after it (attn_post_norm, ffn_post_norm)."""
    if post_norm is not None:
        normed = f"{branch}_n"
        told.norm(f"{part}_post_norm", post_norm, branch, normed, (branch, f"{branch}_hat", f"g_{branch}", normed))
        branch = normed
    told.vectors[output] = vector(told.row(output))
    told.stages.append({"name": f"residual_{part}", "kind": "residual", "stream": stream, "branch": branch,
                        "output": output})


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
