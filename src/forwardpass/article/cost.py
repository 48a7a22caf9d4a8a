"""What it costs (seed §04 and §06): parameters, FLOPs, bytes, the KV cache, arithmetic intensity and
concurrency, for any ModelConfig. Pure arithmetic: every number the article states comes out of here."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ..config import ModelConfig
from ..errors import ForwardpassError

GiB = 2**30

# Bytes per weight for each storage type, scales included, as forwardpass stores them: 32 8-bit (int8) or
# 4-bit (q4) values per block, with an fp32 scale and minimum per block.
BYTES_PER_WEIGHT = {"fp32": 4.0, "fp16": 2.0, "bf16": 2.0, "int8": 40 / 32, "q4": 24 / 32}


def bytes_per_weight(dtype: str) -> float:
    if dtype not in BYTES_PER_WEIGHT:
        raise ForwardpassError(f"unknown storage type {dtype!r}; choose from {', '.join(BYTES_PER_WEIGHT)}")
    return BYTES_PER_WEIGHT[dtype]


@dataclass(frozen=True)
class Parameters:
    """Parameter counts by where they live (W-depth, W-split, W-param-split)."""

    embeddings: int  # the token table: V × d_model
    positions: int  # learned position table: context × d_model (0 with RoPE)
    attention: int  # all blocks: Q, K, V, O projections and their biases
    ffn: int  # all blocks: up/gate/down projections and their biases
    norms: int  # every norm's scale (and bias), the final norm included
    unembedding: int  # a separate lm_head (0 when tied to the embeddings)
    per_block: int
    n_layers: int

    @property
    def blocks(self) -> int:
        return self.per_block * self.n_layers

    @property
    def total(self) -> int:
        return self.embeddings + self.positions + self.attention + self.ffn + self.norms + self.unembedding

    @property
    def ffn_share_of_block(self) -> float:
        return self.ffn / self.n_layers / self.per_block

    @property
    def blocks_share(self) -> float:
        return self.blocks / self.total

    def to_dict(self) -> dict:
        return asdict(self) | {"blocks": self.blocks, "total": self.total,
                               "ffn_share_of_block": self.ffn_share_of_block, "blocks_share": self.blocks_share}


def attention_params(c: ModelConfig) -> int:
    """One block's Q, K, V, O: d × (n_heads + 2 n_kv_heads) × head_dim in, n_heads × head_dim × d out."""
    qkv_out = (c.n_heads + 2 * c.kv_heads) * c.head_dim
    o_in = c.n_heads * c.head_dim
    return c.d_model * qkv_out + o_in * c.d_model + attention_biases(c) + (2 * c.head_dim if c.qk_norm else 0)


def attention_biases(c: ModelConfig) -> int:
    """Q, K, V biases (all of GPT-2's, Qwen2's) and O's (GPT-2's)."""
    return ((c.n_heads + 2 * c.kv_heads) * c.head_dim if c.attention_bias else 0) + (c.d_model if c.bias else 0)


def ffn_params(c: ModelConfig) -> int:
    """One block's FFN: GELU has up and down (2 d h); SwiGLU adds the gate (3 d h)."""
    matrices = 2 if c.ffn == "gelu" else 3
    biases = ((matrices - 1) * c.hidden + c.d_model) if c.bias else 0
    return matrices * c.d_model * c.hidden + biases


def norm_params(c: ModelConfig) -> int:
    return 2 * c.d_model if c.norm == "layernorm" else c.d_model


def parameters(c: ModelConfig) -> Parameters:
    """GPT-2 small: V d + C d + N (12 d² + 13 d) + 2 d = 124,439,808."""
    norms_per_block = 4 if c.sandwich_norm else 2
    per_block = attention_params(c) + ffn_params(c) + norms_per_block * norm_params(c)
    return Parameters(
        embeddings=c.vocab_size * c.d_model,
        positions=c.context_length * c.d_model if c.positions == "learned" else 0,
        attention=attention_params(c) * c.n_layers,
        ffn=ffn_params(c) * c.n_layers,
        norms=norms_per_block * norm_params(c) * c.n_layers + (norm_params(c) if c.has_final_norm else 0),
        unembedding=0 if c.tied_embeddings else c.vocab_size * c.d_model,
        per_block=per_block, n_layers=c.n_layers,
    )


def block_matrix_split(d_model: int) -> tuple[int, int]:
    """W-split: a classic block's weight matrices: attention 4 d² (Q, K, V, O), FFN 8 d² (hidden 4 d, up and
    down). The FFN's share is 8/12 = 2/3 at every width."""
    return 4 * d_model**2, 8 * d_model**2


def matmul_params(c: ModelConfig) -> int:
    """Weights that take part in a matrix multiply for each token: every block's projections, and the
    unembedding (V × d, tied or not). The embedding and position tables are lookups, not matmuls."""
    qkv_out = (c.n_heads + 2 * c.kv_heads) * c.head_dim
    per_block = c.d_model * qkv_out + c.n_heads * c.head_dim * c.d_model + _ffn_matrices(c)  # biases and norms
    return per_block * c.n_layers + c.vocab_size * c.d_model  # are adds and scales, not multiply-adds


def _ffn_matrices(c: ModelConfig) -> int:
    return (2 if c.ffn == "gelu" else 3) * c.d_model * c.hidden


def matmul_flops(c: ModelConfig, tokens: int) -> int:
    """2 FLOPs (multiply + add) per matmul weight per token."""
    return 2 * matmul_params(c) * tokens


def attention_flops(c: ModelConfig, new_tokens: int, past: int = 0) -> int:
    """Scores q·k and the weighted sum of v: 4 × n_heads × head_dim FLOPs per (query, key) pair per layer,
    with causal attention (new token i reads past + i + 1 keys, or the sliding window's last ones). Grows with
    context, up to the window."""
    pairs = new_tokens * past + new_tokens * (new_tokens + 1) // 2
    if c.sliding_window is not None:
        under = min(max(c.sliding_window - past, 0), new_tokens)  # new tokens that still see every key
        pairs = under * past + under * (under + 1) // 2 + (new_tokens - under) * c.sliding_window
    return 4 * c.n_heads * c.head_dim * pairs * c.n_layers


def forward_flops(c: ModelConfig, new_tokens: int, past: int = 0) -> int:
    """One forward pass over `new_tokens` after `past` cached ones: matmuls plus attention."""
    return matmul_flops(c, new_tokens) + attention_flops(c, new_tokens, past)


def weight_bytes(c: ModelConfig, dtype: str = "fp16") -> float:
    """Every parameter stored once at `dtype` (tied tables counted once)."""
    return parameters(c).total * bytes_per_weight(dtype)


def kv_bytes_per_token(c: ModelConfig, dtype: str = "fp16") -> int:
    """2 (K and V) × n_layers × n_kv_heads × head_dim × bytes per element (grouped-query attention
    stores n_kv_heads, not n_heads; q8_0: 34 bytes per block of 32 numbers)."""
    element = {"fp32": 4, "fp16": 2, "bf16": 2, "int8": 1, "q8_0": 34 / 32}.get(dtype)
    if element is None:
        raise ForwardpassError(f"KV cache storage must be fp32, fp16, bf16, int8 or q8_0, not {dtype!r}")
    return int(2 * c.n_layers * c.kv_heads * c.head_dim * element)


def kv_bytes(c: ModelConfig, tokens: int, dtype: str = "fp16", sequences: int = 1) -> int:
    """W-cache-memory: linear in tokens and in concurrent sequences."""
    return kv_bytes_per_token(c, dtype) * tokens * sequences


def intensity(c: ModelConfig, tokens: int, dtype: str = "fp16") -> float:
    """W-intensity: FLOPs per byte of weights read, when one weight read serves `tokens` tokens
    (2 FLOPs per parameter per token). fp16 prefill of P tokens: ≈ P; decode: ≈ 1."""
    return 2 * parameters(c).total * tokens / weight_bytes(c, dtype)


def crossover_sequences(c: ModelConfig, context: int, dtype: str = "fp16") -> int:
    """W-concurrency: the fewest concurrent full-context sequences whose caches outweigh the weights."""
    return int(weight_bytes(c, dtype) // kv_bytes(c, context, dtype)) + 1


def naive_work(prompt: int, new: int) -> int:
    """Tokens run through the stack to generate `new` tokens without a cache: Σ (P + i), i < new."""
    return prompt * new + new * (new - 1) // 2


def cached_work(prompt: int, new: int, count_prefill: bool = False) -> int:
    """With a cache each step runs only the newest token. The article counts 1 per generated token (the
    prompt already cached); count_prefill adds the prompt's own pass: P + new - 1."""
    return prompt + new - 1 if count_prefill else new


def naive_over_cached(prompt: int, new: int, count_prefill: bool = False) -> float:
    """W-cost-toy / W-cost-gpt2: 5× at the first token (P = 5), 10.5× by the 12th, 69.5× at 100 (P = 20)."""
    return naive_work(prompt, new) / cached_work(prompt, new, count_prefill)


def bytes_read_per_decode_token(c: ModelConfig, context: int, dtype: str = "fp16", kv_dtype: str = "fp16") -> float:
    """What one decode step must stream from memory: every weight once (the embedding row aside, the
    tied table is read whole by the unembedding) plus the whole KV cache so far."""
    return weight_bytes(c, dtype) - parameters(c).positions * bytes_per_weight(dtype) + kv_bytes(c, context, kv_dtype)


def roofline_decode_tokens_per_s(c: ModelConfig, bandwidth: float, context: int, dtype: str = "fp16",
                                 kv_dtype: str = "fp16") -> float:
    """The memory-bandwidth-bound decode rate: bandwidth (bytes/s) / bytes read per token."""
    return bandwidth / bytes_read_per_decode_token(c, context, dtype, kv_dtype)


def compute_bound_prefill_tokens_per_s(c: ModelConfig, flops_per_s: float, prompt: int) -> float:
    """The compute-bound prefill rate: matmul rate / FLOPs per prompt token (attention included)."""
    return flops_per_s * prompt / forward_flops(c, prompt)
