"""GPT-2 and GPT-1: learned positions, LayerNorm, GELU, biases everywhere; GPT-1 normalizes after each sublayer
(post-norm) and has no final norm. Their checkpoints store each projection (in, out) (a Conv1D), some under
"transformer.", and Q, K and V as one matrix."""

from __future__ import annotations

from functools import partial

from ..config import ModelConfig
from ..errors import UnsupportedModelError
from .family import Family, TensorMap, stored, under_prefix

# a block's tensors: theirs (under h.N.) → ours (under blocks.N.), each with a weight and a bias
BLOCK = {"ln_1": "attn_norm", "attn.c_attn": "attn.qkv", "attn.c_proj": "attn.out", "ln_2": "ffn_norm",
         "mlp.c_fc": "ffn.up", "mlp.c_proj": "ffn.down"}


def hf_config(c: dict, name: str, where: str, post_norm: bool = False) -> ModelConfig:
    act = c.get("activation_function", c.get("afn", "gelu_new"))
    if act not in ("gelu", "gelu_new", "gelu_pytorch_tanh"):
        raise UnsupportedModelError(f"activation {act!r} is not supported")
    # GPT-1's "gelu" is the tanh approximation in its reference code; GPT-2 says "gelu_new" for it
    exact = act == "gelu" and not post_norm
    return ModelConfig(
        name=name, vocab_size=c["vocab_size"], context_length=c["n_positions"], d_model=c["n_embd"],
        n_layers=c["n_layer"], n_heads=c["n_head"], ffn_hidden=c.get("n_inner"), norm="layernorm",
        norm_position="post" if post_norm else "pre", norm_eps=c.get("layer_norm_epsilon", 1e-5),
        positions="learned", ffn="gelu", gelu_approximate="none" if exact else "tanh", bias=True,
        tied_embeddings=c.get("tie_word_embeddings", True),
    )


def hf_tensors(config: ModelConfig, names: set[str], gpt1: bool = False) -> TensorMap:
    name = under_prefix(names, "transformer.")
    emb, pos, final = ("tokens_embed", "positions_embed", None) if gpt1 else ("wte", "wpe", "ln_f")
    out = {"tok_embeddings.weight": stored(name(f"{emb}.weight")),
           "pos_embeddings.weight": stored(name(f"{pos}.weight"))}
    if final:
        out["norm_f.weight"], out["norm_f.bias"] = stored(name(f"{final}.weight")), stored(name(f"{final}.bias"))
    if not config.tied_embeddings:
        out["lm_head.weight"] = stored(name("lm_head.weight"))
    for i in range(config.n_layers):
        for theirs, ours in BLOCK.items():
            h, b = f"h.{i}.{theirs}.", f"blocks.{i}.{ours}."
            out[b + "weight"] = stored(name(h + "weight"), transposed=not theirs.startswith("ln_"))
            out[b + "bias"] = stored(name(h + "bias"))
    return out


GPT2 = Family("GPT-2", model_type="gpt2", hf_config=hf_config, hf_tensors=hf_tensors)
GPT1 = Family("GPT-1", model_type="openai-gpt", hf_config=partial(hf_config, post_norm=True),
              hf_tensors=partial(hf_tensors, gpt1=True))
