"""ModelConfig: one dataclass for every family, and the presets the seed talks about."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Literal

from .errors import ForwardpassError

# how a model's weights are held: as the file stores them, a float dtype, or re-quantized into 8- or 4-bit blocks
STORAGE_MODES = ("stored", "fp32", "bf16", "fp16", "int8", "q4")
# the engine's KV pool: auto (float16 for quantized weights, else the model's dtype), or one of these; q8_0: blocks of
# 32 int8 values with a float16 scale each (kv_q8_0.py)
KV_CACHE_DTYPES = ("auto", "float32", "float16", "q8_0")
# how each product's activation rows are quantized against integer weights (kernels/gemv.h): exact (15 bits, two
# integer products per weight byte: the float32 reference's tokens), or q8 (8-bit blocks of 32, as llama.cpp's Q8_0
# activations: one product per weight byte)
ACTIVATIONS = ("exact", "q8")
# the engine's drafting (engine/speculation.py): by prompt lookup and from recent requests of the same API key
# (engine/suffix_drafts.py), by prompt lookup alone, or none
SPECULATIVE_MODES = ("suffix", "ngram", "off")


@dataclass(frozen=True)
class RopeScaling:
    """Stretching RoPE past the context a model was trained on. "linear": every frequency ÷ factor (positions
    interpolated). "llama3": low frequencies (wavelengths past original_context / low_freq_factor) ÷ factor, high
    ones (shorter than original_context / high_freq_factor) kept, the band between blended. "yarn": the same idea
    with the band set by how many turns each frequency makes over original_context (beta_fast to beta_slow), and
    cos and sin × attention_factor."""

    kind: Literal["linear", "llama3", "yarn"]
    factor: float
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0
    original_context: int = 8192
    beta_fast: float = 32.0
    beta_slow: float = 1.0
    attention_factor: float = 1.0
    truncate: bool = True  # yarn: the band's ends rounded outwards to whole dimensions


@dataclass(frozen=True)
class ModelConfig:
    """The shape of a decoder-only transformer and the options that distinguish its family."""

    name: str
    vocab_size: int
    context_length: int
    d_model: int
    n_layers: int
    n_heads: int
    n_kv_heads: int | None = None  # None: multi-head attention (n_kv_heads = n_heads)
    ffn_hidden: int | None = None  # None: 4 * d_model
    norm: Literal["layernorm", "rmsnorm"] = "layernorm"
    norm_position: Literal["pre", "post"] = "pre"
    norm_eps: float = 1e-5
    positions: Literal["learned", "rope"] = "learned"
    rope_theta: float = 10000.0
    ffn: Literal["gelu", "swiglu", "geglu"] = "gelu"  # geglu: gated like swiglu, with tanh GELU (Gemma)
    gelu_approximate: Literal["none", "tanh"] = "tanh"
    bias: bool = True  # biases on the attention and FFN projections
    tied_embeddings: bool = True
    head_size: int | None = None  # None: d_model / n_heads (Qwen3 and Gemma choose their own)
    qkv_bias: bool | None = None  # biases on Q, K and V only (Qwen2); None: as `bias`
    qk_norm: bool = False  # RMSNorm over each head of q and k before RoPE (Qwen3, Gemma 3)
    sliding_window: int | None = None  # each token attends to itself and the window - 1 before it (Mistral)
    rope_scaling: RopeScaling | None = None  # on the full-attention layers
    embed_scale: bool = False  # embeddings × √d_model (Gemma)
    sandwich_norm: bool = False  # each sublayer's output normalized again before the add (Gemma 2, 3)
    query_scale: float | None = None  # scores × this; None: head_dim ** -0.5 (Gemma: query_pre_attn_scalar ** -0.5)
    layer_types: tuple[str, ...] | None = None  # "sliding" or "full" per layer (Gemma 3); None: all as sliding_window
    local_rope_theta: float | None = None  # the sliding layers' own RoPE base (Gemma 3)

    def __post_init__(self) -> None:
        for field in ("vocab_size", "context_length", "d_model", "n_layers", "n_heads"):
            if getattr(self, field) <= 0:
                raise ForwardpassError(f"config {self.name}: {field} must be positive")
        if self.head_size is None and self.d_model % self.n_heads:
            raise ForwardpassError(f"config {self.name}: d_model {self.d_model} not divisible by n_heads")
        if self.sliding_window is not None and self.sliding_window <= 0:
            raise ForwardpassError(f"config {self.name}: sliding_window must be positive")
        if self.layer_types is not None and (len(self.layer_types) != self.n_layers or self.sliding_window is None
                                             or set(self.layer_types) - {"sliding", "full"}):
            raise ForwardpassError(f"config {self.name}: layer_types must name 'sliding' or 'full' for each of the "
                                   f"{self.n_layers} layers, with a sliding_window")
        if self.n_heads % self.kv_heads:
            raise ForwardpassError(f"config {self.name}: n_heads {self.n_heads} not divisible by n_kv_heads")
        if self.positions == "rope" and self.head_dim % 2:
            raise ForwardpassError(f"config {self.name}: RoPE needs an even head_dim")

    @property
    def kv_heads(self) -> int:
        return self.n_kv_heads or self.n_heads

    @property
    def head_dim(self) -> int:
        return self.head_size or self.d_model // self.n_heads

    def window(self, layer: int) -> int | None:
        """The sliding window of layer `layer` (None: it attends to every earlier token)."""
        if self.layer_types is not None and self.layer_types[layer] == "full":
            return None
        return self.sliding_window

    @property
    def attention_bias(self) -> bool:
        """Biases on Q, K and V."""
        return self.bias if self.qkv_bias is None else self.qkv_bias

    @property
    def hidden(self) -> int:
        return self.ffn_hidden or 4 * self.d_model

    @property
    def has_final_norm(self) -> bool:
        """Post-norm models already end every block on a norm; pre-norm ones need one before unembedding."""
        return self.norm_position == "pre"

    def with_(self, **changes) -> ModelConfig:
        return replace(self, **changes)

    def to_dict(self) -> dict:
        return asdict(self)


def _gpt2(name: str, d_model: int, n_layers: int, n_heads: int) -> ModelConfig:
    return ModelConfig(name, vocab_size=50257, context_length=1024, d_model=d_model, n_layers=n_layers,
                       n_heads=n_heads)


PRESETS: dict[str, ModelConfig] = {
    "gpt2-small": _gpt2("gpt2-small", 768, 12, 12),
    "gpt2-medium": _gpt2("gpt2-medium", 1024, 24, 16),
    "gpt2-large": _gpt2("gpt2-large", 1280, 36, 20),
    "gpt2-xl": _gpt2("gpt2-xl", 1600, 48, 25),
    # GPT-3 175B (Brown et al. 2020, table 2.1): GPT-2's architecture at scale. Config only: no weights exist here.
    "gpt3-175b": ModelConfig("gpt3-175b", vocab_size=50257, context_length=2048, d_model=12288, n_layers=96,
                             n_heads=96),
    "smollm2-135m": ModelConfig(
        "smollm2-135m", vocab_size=49152, context_length=8192, d_model=576, n_layers=30, n_heads=9,
        n_kv_heads=3, ffn_hidden=1536, norm="rmsnorm", positions="rope", rope_theta=100000.0, ffn="swiglu",
        bias=False, tied_embeddings=True,
    ),
    # the seed's toy model (§04): 4 layers, d_model 64, GPT-2's vocabulary
    "toy": ModelConfig("toy", vocab_size=50257, context_length=1024, d_model=64, n_layers=4, n_heads=4),
}


def preset(name: str) -> ModelConfig:
    """The preset called `name`, or a clear error listing the known ones."""
    if name not in PRESETS:
        raise ForwardpassError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}")
    return PRESETS[name]
