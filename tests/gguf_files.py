"""Writes small GGUF files from a transformers Llama model, laid out as llama.cpp's converter lays them out."""

from __future__ import annotations

import numpy as np
import torch
from gguf import GGUFWriter


def permute_rotary(w: torch.Tensor, n_heads: int) -> torch.Tensor:
    """Hugging Face's rotary halves → llama.cpp's interleaved pairs (what its converter does)."""
    rows, cols = w.shape
    return w.reshape(n_heads, 2, rows // n_heads // 2, cols).swapaxes(1, 2).reshape(rows, cols)


def add_shape(w: GGUFWriter, c) -> None:
    """A Llama-like transformers config's shape, as llama.cpp's converter writes it under the file's architecture."""
    w.add_context_length(c.max_position_embeddings)
    w.add_embedding_length(c.hidden_size)
    w.add_block_count(c.num_hidden_layers)
    w.add_feed_forward_length(c.intermediate_size)
    w.add_head_count(c.num_attention_heads)
    w.add_head_count_kv(c.num_key_value_heads)
    w.add_layer_norm_rms_eps(c.rms_norm_eps)


def write_llama_gguf(hf, path, arch: str = "llama", dtype=np.float32, drop: str | None = None) -> None:
    c = hf.config
    w = GGUFWriter(str(path), arch)
    w.add_name("tiny-test-llama")
    add_shape(w, c)
    w.add_rope_freq_base(c.rope_parameters["rope_theta"])
    w.add_vocab_size(c.vocab_size)
    sd = {k: v.detach() for k, v in hf.state_dict().items()}
    names = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}
    for i in range(c.num_hidden_layers):
        for theirs, ours in [("self_attn.q_proj", "attn_q"), ("self_attn.k_proj", "attn_k"),
                             ("self_attn.v_proj", "attn_v"), ("self_attn.o_proj", "attn_output"),
                             ("mlp.gate_proj", "ffn_gate"), ("mlp.up_proj", "ffn_up"), ("mlp.down_proj", "ffn_down"),
                             ("input_layernorm", "attn_norm"), ("post_attention_layernorm", "ffn_norm")]:
            names[f"model.layers.{i}.{theirs}.weight"] = f"blk.{i}.{ours}.weight"
    for theirs, ours in names.items():
        if theirs not in sd or ours == drop:
            continue
        t = sd[theirs]
        if ours.endswith("attn_q.weight"):
            t = permute_rotary(t, c.num_attention_heads)
        elif ours.endswith("attn_k.weight"):
            t = permute_rotary(t, c.num_key_value_heads)
        w.add_tensor(ours, t.numpy().astype(np.float32 if t.dim() == 1 else dtype))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
