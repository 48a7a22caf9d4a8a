"""BERT, the encoder behind the sentence-embedding model (embeddings.py): learned absolute positions, post-norm
LayerNorm, exact GELU, biases everywhere. Not a decoder: `forwardpass.load` does not read it, and the registry does
not list it."""

from __future__ import annotations

from ..config import ModelConfig
from ..errors import UnsupportedModelError
from .family import Family, TensorMap, stored, under_prefix


def hf_config(c: dict, name: str, where: str) -> ModelConfig:
    if c.get("model_type") != "bert" or c.get("position_embedding_type", "absolute") != "absolute":
        raise UnsupportedModelError(f"{where}: an embedding model must be BERT with absolute positions "
                                    f"(got {c.get('model_type')!r})")
    if c.get("hidden_act", "gelu") != "gelu":
        raise UnsupportedModelError(f"{where}: activation {c['hidden_act']!r} is not supported (gelu is)")
    return ModelConfig(
        name=name, vocab_size=c["vocab_size"], context_length=c["max_position_embeddings"], d_model=c["hidden_size"],
        n_layers=c["num_hidden_layers"], n_heads=c["num_attention_heads"], ffn_hidden=c["intermediate_size"],
        norm="layernorm", norm_position="post", norm_eps=c["layer_norm_eps"], positions="learned", ffn="gelu",
        gelu_approximate="none", bias=True, tied_embeddings=False)


def hf_tensors(config: ModelConfig, names: set[str]) -> TensorMap:
    """BERT's tensor names (some files under "bert.") → the encoder's (Q, K and V joined into one projection, as the
    decoder keeps them)."""
    name = under_prefix(names, "bert.")
    e = "embeddings."
    out = {"tok_embeddings.weight": stored(name(e + "word_embeddings.weight")),
           "pos_embeddings.weight": stored(name(e + "position_embeddings.weight")),
           "type_embeddings.weight": stored(name(e + "token_type_embeddings.weight")),
           "embed_norm.weight": stored(name(e + "LayerNorm.weight")),
           "embed_norm.bias": stored(name(e + "LayerNorm.bias"))}
    for i in range(config.n_layers):
        p, b = f"encoder.layer.{i}.", f"blocks.{i}."
        for kind in ("weight", "bias"):
            out[b + f"attn.qkv.{kind}"] = stored(*(name(p + f"attention.self.{x}.{kind}")
                                                   for x in ("query", "key", "value")))
            out[b + f"attn.out.{kind}"] = stored(name(p + f"attention.output.dense.{kind}"))
            out[b + f"attn_norm.{kind}"] = stored(name(p + f"attention.output.LayerNorm.{kind}"))
            out[b + f"ffn.up.{kind}"] = stored(name(p + f"intermediate.dense.{kind}"))
            out[b + f"ffn.down.{kind}"] = stored(name(p + f"output.dense.{kind}"))
            out[b + f"ffn_norm.{kind}"] = stored(name(p + f"output.LayerNorm.{kind}"))
    return out


BERT = Family("BERT", model_type="bert", hf_config=hf_config, hf_tensors=hf_tensors)
