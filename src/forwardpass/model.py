"""The Transformer forward pass (seed §00–§02), plain PyTorch.

The six stages: tokenize (the caller's tokenizer) → embedding + position → N identical blocks →
final norm → unembedding → logits. One call serves prefill, decode and batches of sequences at their
own positions: `logits, cache = model(x, cache)`.
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from .config import ModelConfig
from .errors import ContextLengthError, InvariantError, TokenIdError
from .kv_cache import Cache, KVCache, Policy
from .rope import RopeTable


def make_norm(config: ModelConfig) -> nn.Module:
    if config.norm == "rmsnorm":
        return nn.RMSNorm(config.d_model, eps=config.norm_eps)
    return nn.LayerNorm(config.d_model, eps=config.norm_eps)


class RotaryEmbedding(nn.Module):
    """RoPE: rotate each (i, i + head_dim/2) pair of q and k by position × frequency_i, from the numpy tables the
    native step reads too (rope.RopeTable: float32, tabulated on first use, untouched room taking no memory). On the
    CPU the buffers are those tables themselves; moved to a device they are copies, each newly tabulated chunk copied
    over as it is filled."""

    def __init__(self, config: ModelConfig, freq_factors: torch.Tensor | None = None, local: bool = False):
        super().__init__()
        factors = None if freq_factors is None else freq_factors.detach().float().cpu().numpy()
        self.table = RopeTable(config, factors, local)
        self.register_buffer("inv_freq", torch.from_numpy(self.table.inv_freq), persistent=False)
        self.register_buffer("cos", torch.from_numpy(self.table.cos), persistent=False)  # rows [0, filled) hold
        self.register_buffer("sin", torch.from_numpy(self.table.sin), persistent=False)  # their positions' values

    @property
    def filled(self) -> int:
        return self.table.filled

    def angles(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """cos, sin of the positions' angles: (..., head_dim/2)."""
        cos, sin = self.table.angles(positions.cpu().numpy())
        return torch.from_numpy(cos).to(positions.device), torch.from_numpy(sin).to(positions.device)

    def cover(self, n: int) -> None:
        """Tabulate every position below n (at most the table's length); threads may read rows already filled."""
        before = self.table.cover(n)
        if self.cos.data_ptr() != self.table.cos.ctypes.data and before < self.table.filled:  # a copy elsewhere
            rows = slice(before, self.table.filled)
            self.cos[rows] = torch.from_numpy(self.table.cos[rows]).to(self.cos.device)
            self.sin[rows] = torch.from_numpy(self.table.sin[rows]).to(self.sin.device)

    def forward(self, positions: torch.Tensor, longest: int) -> tuple[torch.Tensor, torch.Tensor]:
        """cos, sin for (batch, T) positions, none of them ≥ longest: (batch, 1, T, head_dim)."""
        if longest > self.cos.shape[0]:  # past the table (a sliding cache)
            cos, sin = self.angles(positions)
        else:
            self.cover(longest)
            cos, sin = self.cos[positions], self.sin[positions]
        return torch.cat((cos, cos), dim=-1)[:, None], torch.cat((sin, sin), dim=-1)[:, None]


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    if x.dtype == torch.float32:
        return x * cos + rotated * sin
    return (x.float() * cos + rotated.float() * sin).to(x.dtype)


class Attention(nn.Module):
    """Moves information between tokens: each query scores every earlier key.

    Grouped-query attention when n_kv_heads < n_heads: each K/V head serves n_heads / n_kv_heads query heads."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = config.n_heads, config.kv_heads, config.head_dim
        self.scale = config.query_scale or config.head_dim**-0.5
        qkv_out = (config.n_heads + 2 * config.kv_heads) * config.head_dim
        self.qkv = nn.Linear(config.d_model, qkv_out, bias=config.attention_bias)  # Q, K, V in one matmul
        self.out = nn.Linear(config.n_heads * config.head_dim, config.d_model, bias=config.bias)
        # QK-norm: each head of q and k RMS-normalized (its own learned scale) before RoPE
        self.q_norm = nn.RMSNorm(config.head_dim, eps=config.norm_eps) if config.qk_norm else None
        self.k_norm = nn.RMSNorm(config.head_dim, eps=config.norm_eps) if config.qk_norm else None

    def project(self, x: torch.Tensor, rope: tuple | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """q (batch, n_heads, T, head_dim), k and v (batch, n_kv_heads, T, head_dim), rotated when RoPE."""
        batch, T, _ = x.shape
        q, k, v = self.qkv(x).split(
            [self.n_heads * self.head_dim, self.n_kv_heads * self.head_dim, self.n_kv_heads * self.head_dim], dim=-1)
        q = q.view(batch, T, self.n_heads, self.head_dim).transpose(1, 2)
        k = k.view(batch, T, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = v.view(batch, T, self.n_kv_heads, self.head_dim).transpose(1, 2)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        if rope is not None:
            q, k = apply_rope(q, *rope), apply_rope(k, *rope)
        return q, k, v

    def weights(self, x: torch.Tensor, rope: tuple | None, window: int | None = None) -> torch.Tensor:
        """The causal attention weights of a fresh sequence: (batch, n_heads, T, T), rows sum to 1."""
        q, k, _ = self.project(x, rope)
        k = k.repeat_interleave(self.n_heads // self.n_kv_heads, dim=1)
        scores = (q @ k.transpose(-1, -2)).float() * self.scale
        T = x.shape[1]
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        if window is not None:
            causal = causal.triu(1 - window)  # and no further back than the window
        return torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)

    def forward(self, x: torch.Tensor, layer: int, cache: Cache, rope: tuple | None,
                mask: torch.Tensor | None) -> torch.Tensor:
        batch, T, _ = x.shape
        q, k, v = self.project(x, rope)  # (batch, n_heads | n_kv_heads, T, head_dim)
        k, v = cache.write(layer, k, v)  # (batch, n_kv_heads, L, head_dim): every pair so far
        if T == 1 and mask is None:
            y = decode_attention(q, k, v, self.scale)
        else:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=mask is None and T > 1,
                                               enable_gqa=self.n_kv_heads != self.n_heads, scale=self.scale)
        return self.out(y.transpose(1, 2).reshape(batch, T, -1))  # (batch, T, d_model)


def decode_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float | None = None) -> torch.Tensor:
    """One new query per sequence against every cached key: softmax(q kᵀ × scale) v (scale: 1/√head_dim unless
    the family says otherwise) as two small matmuls, each K/V head serving its group of query heads. (SDPA's
    set-up costs more than the work here.)"""
    batch, n_heads, _, head_dim = q.shape
    n_kv_heads = k.shape[1]
    q = q.view(batch, n_kv_heads, n_heads // n_kv_heads, head_dim)  # (batch, n_kv_heads, group, head_dim)
    scores = (q @ k.transpose(-1, -2)) * (scale or head_dim**-0.5)  # (batch, n_kv_heads, group, L)
    weights = torch.softmax(scores.float(), dim=-1).to(v.dtype)
    return (weights @ v).view(batch, n_heads, 1, head_dim)


class MLP(nn.Module):
    """GELU feed-forward: up to ffn_hidden, GELU, down. Works within a token."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.up = nn.Linear(config.d_model, config.hidden, bias=config.bias)
        self.down = nn.Linear(config.hidden, config.d_model, bias=config.bias)
        self.approximate = config.gelu_approximate

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.gelu(self.up(x), approximate=self.approximate))


class SwiGLU(nn.Module):
    """Gated feed-forward: down(act(gate(x)) * up(x)), gate and up in one matmul; act is SiLU (SwiGLU, Llama) or
    tanh GELU (GeGLU, Gemma)."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.gate_up = nn.Linear(config.d_model, 2 * config.hidden, bias=config.bias)
        self.down = nn.Linear(config.hidden, config.d_model, bias=config.bias)
        self.act = F.silu if config.ffn == "swiglu" else lambda g: F.gelu(g, approximate="tanh")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.gate_up(x).chunk(2, dim=-1)  # (batch, T, ffn_hidden) each
        return self.down(self.act(gate) * up)


class Block(nn.Module):
    """One of the N identical blocks: attention, then the FFN, each added into the residual stream.

    `residual` is how a sublayer's output enters the stream: "add" (every real model) or "replace"
    (the seed's W-residual counterfactual, which erases what earlier blocks wrote).
    """

    def __init__(self, config: ModelConfig, index: int):
        super().__init__()
        self.index, self.norm_position = index, config.norm_position
        self.attn_norm, self.attn = make_norm(config), Attention(config)
        self.ffn_norm = make_norm(config)
        self.ffn = MLP(config) if config.ffn == "gelu" else SwiGLU(config)
        # sandwich norms (Gemma): each branch's output normalized before it is added
        self.attn_post_norm = make_norm(config) if config.sandwich_norm else None
        self.ffn_post_norm = make_norm(config) if config.sandwich_norm else None
        self.sliding = config.window(index) is not None  # attends through the sliding window (its own RoPE)
        self.residual: Literal["add", "replace"] = "add"
        self.checked = False

    def forward(self, x: torch.Tensor, cache: Cache, rope: tuple | None, mask: torch.Tensor | None) -> torch.Tensor:
        x = self.sublayer(x, self.attn_norm, lambda h: self.attn(h, self.index, cache, rope, mask), "attention",
                          self.attn_post_norm)
        return self.sublayer(x, self.ffn_norm, self.ffn, "ffn", self.ffn_post_norm)

    def sublayer(self, stream: torch.Tensor, norm: nn.Module, branch_fn, name: str,
                 post_norm: nn.Module | None = None) -> torch.Tensor:
        """Read the stream, run one branch, write its output back. Pre-norm normalizes only the branch's
        copy; post-norm (the 2017 design) normalizes the stream itself after the add; a sandwich norm normalizes
        the branch's output before the add."""
        before = stream.clone() if self.checked else None
        branch = branch_fn(norm(stream) if self.norm_position == "pre" else stream)
        if post_norm is not None:
            branch = post_norm(branch)
        after = stream + branch if self.residual == "add" else branch
        if self.checked:
            check_residual_write(before, stream, branch, after, f"block {self.index} {name}")
        return after if self.norm_position == "pre" else norm(after)


def check_residual_write(before: torch.Tensor, stream: torch.Tensor, branch: torch.Tensor, after: torch.Tensor,
                         where: str) -> None:
    """Invariant 1: the stream keeps its shape, and the sublayer only added into it."""
    if branch.shape != before.shape or after.shape != before.shape:
        raise InvariantError(f"{where}: residual stream {tuple(before.shape)} met a sublayer output "
                             f"{tuple(branch.shape)}; the stream must keep its shape")
    if not torch.equal(stream, before) or not torch.equal(after, before + branch):
        raise InvariantError(f"{where}: the sublayer replaced the residual stream instead of adding to it")


def embedding(n: int, d_model: int) -> nn.Embedding:
    """An n × d_model lookup table, N(0, 1) as torch initializes one; on the meta device (shapes only: loading
    builds the model there) left uninitialized, as the meta version of the initializer costs a second's import."""
    table = torch.empty(n, d_model)
    return nn.Embedding(n, d_model, _weight=table if table.is_meta else table.normal_())


class Transformer(nn.Module):
    """A decoder-only transformer of any family `ModelConfig` describes."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        self.tok_embeddings = embedding(config.vocab_size, config.d_model)
        learned = config.positions == "learned"
        self.pos_embeddings = embedding(config.context_length, config.d_model) if learned else None
        self.rope = RotaryEmbedding(config) if config.positions == "rope" else None
        local = config.positions == "rope" and config.local_rope_theta is not None
        self.rope_local = RotaryEmbedding(config, local=True) if local else None  # the sliding layers' (Gemma 3)
        self.blocks = nn.ModuleList(Block(config, i) for i in range(config.n_layers))
        self.norm_f = make_norm(config) if config.has_final_norm else nn.Identity()
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        if config.tied_embeddings:
            self.lm_head.weight = self.tok_embeddings.weight

    @property
    def checked(self) -> bool:
        return self.blocks[0].checked

    @checked.setter
    def checked(self, on: bool) -> None:
        for block in self.blocks:
            block.checked = on

    @property
    def device(self) -> torch.device:
        table = self.tok_embeddings
        return table.weight.device if isinstance(table, nn.Embedding) else table.device

    @property
    def dtype(self) -> torch.dtype:
        table = self.tok_embeddings
        return table.weight.dtype if isinstance(table, nn.Embedding) else table.dtype

    def new_cache(self, batch: int = 1, capacity: int | None = None, policy: Policy = "error") -> KVCache:
        """An empty cache for `batch` sequences of up to `capacity` tokens (default: the context length)."""
        capacity = self.config.context_length if capacity is None else capacity
        if capacity > self.config.context_length:
            raise ContextLengthError(f"cache capacity {capacity} exceeds the model's context length "
                                     f"{self.config.context_length}")
        return KVCache(self.config, batch, capacity, self.dtype, self.device, checked=self.checked, policy=policy)

    def embed(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Embedding + position: row x[b, t] of the table, plus the learned row for its position."""
        h = self.tok_embeddings(x)  # (batch, T, d_model)
        if self.config.embed_scale:
            h = h * self.config.d_model**0.5
        if self.pos_embeddings is not None:
            h = h + self.pos_embeddings(positions)
        return h

    def forward(self, x: torch.Tensor, cache: Cache | None = None, n_tokens: list[int] | None = None,
                last_only: bool = False) -> tuple[torch.Tensor, Cache]:
        """x: (batch, T) token ids, appended after what `cache` holds; row b keeps n_tokens[b] of them
        (the rest is right padding). Returns logits (batch, T, vocab_size) — or (batch, 1, vocab_size) for
        each row's last kept token when `last_only` — and the cache."""
        if x.dim() != 2:
            raise TokenIdError(f"x must be (batch, tokens) token ids, got shape {tuple(x.shape)}")
        batch, T = x.shape
        if T == 0:
            raise TokenIdError("x holds no tokens: a forward pass needs at least one")
        if int(x.min()) < 0 or int(x.max()) >= self.config.vocab_size:
            bad = x[(x < 0) | (x >= self.config.vocab_size)][0].item()
            raise TokenIdError(f"token id {bad} is outside the vocabulary [0, {self.config.vocab_size})")
        cache = self.new_cache(batch) if cache is None else cache
        longest = max(cache.next_position(b) for b in range(cache.batch)) + T
        if longest > self.config.context_length and cache.policy == "error":
            raise ContextLengthError(f"{longest} tokens exceed the model's context length {self.config.context_length}")
        expected = [cache.next_position(b) for b in range(cache.batch)]
        n_tokens = n_tokens or [T] * batch
        positions = cache.begin(n_tokens, T)  # (batch, T): each row from its own length
        if self.checked:
            check_positions(positions, expected, cache)
        h = self.embed(x, positions)  # (batch, T, d_model)
        rope = self.rope(positions, longest) if self.rope is not None else None
        windows = {self.config.window(i) for i in range(self.config.n_layers)}
        masks = {w: attention_mask(cache.lengths, T, x.device, w) for w in windows}
        local = self.rope_local(positions, longest) if self.rope_local is not None else rope
        for block in self.blocks:  # N identical blocks; the stream keeps its shape throughout
            h = block(h, cache, local if block.sliding else rope, masks[self.config.window(block.index)])
        cache.commit()
        if last_only:
            rows = torch.arange(batch, device=h.device)
            h = h[rows, torch.tensor(n_tokens, device=h.device) - 1][:, None]  # (batch, 1, d_model)
        h = self.norm_f(h)  # final norm
        return self.lm_head(h), cache  # unembedding → logits (batch, T, vocab_size)


def attention_mask(lengths: list[int], T: int, device: torch.device,
                   window: int | None = None) -> torch.Tensor | None:
    """Which cache slots each new query may read: slot j ≤ the query's own slot q (and, with a sliding window,
    j > q - window). None when SDPA's own causal rule (fresh aligned rows) or no rule at all (one new token per
    aligned row) is exact."""
    windowed = window is not None and max(lengths) + T > window
    if len(set(lengths)) == 1 and (lengths[0] == 0 or T == 1) and not windowed:
        return None
    query_slots = torch.tensor(lengths, device=device)[:, None] + torch.arange(T, device=device)  # (batch, T)
    slots = torch.arange(max(lengths) + T, device=device)[None, None, :]
    allowed = slots <= query_slots[:, :, None]
    if windowed:
        allowed &= slots > query_slots[:, :, None] - window
    return allowed[:, None]  # (batch, 1, T, L)


def check_positions(positions: torch.Tensor, expected: list[int], cache: Cache) -> None:
    """Invariant 3: a new token's position is the cache's current length (its absolute count), never 0."""
    first = positions[:, 0].tolist()
    for b, (got, want) in enumerate(zip(first, expected, strict=True)):
        if got != want:
            raise InvariantError(f"sequence {b}: new token at position {got}, but the cache holds {want} tokens "
                                 f"before it; its position must be {want}")
