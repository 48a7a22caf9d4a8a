"""Hugging Face checkpoints: config.json + safetensors shards, for GPT-2, GPT-1 and Llama naming (Llama, Mistral,
Qwen2, Qwen3)."""

from __future__ import annotations

import re
from pathlib import Path

import torch
from safetensors import safe_open

from ..config import ModelConfig
from ..errors import ModelFileError
from ..tokenizer import Tokenizer
from . import Checkpoint
from .hf_config import safetensors_config
from .progress import track


def _gpt_names(n_layers: int) -> dict:
    """GPT-1/GPT-2 block tensor names → ours. Their Conv1D weights are stored (in, out): transposed on the way in."""
    names = {}
    for i in range(n_layers):
        h, b = f"h.{i}.", f"blocks.{i}."
        names.update({
            h + "ln_1.weight": b + "attn_norm.weight", h + "ln_1.bias": b + "attn_norm.bias",
            h + "attn.c_attn.weight": b + "attn.qkv.weight", h + "attn.c_attn.bias": b + "attn.qkv.bias",
            h + "attn.c_proj.weight": b + "attn.out.weight", h + "attn.c_proj.bias": b + "attn.out.bias",
            h + "ln_2.weight": b + "ffn_norm.weight", h + "ln_2.bias": b + "ffn_norm.bias",
            h + "mlp.c_fc.weight": b + "ffn.up.weight", h + "mlp.c_fc.bias": b + "ffn.up.bias",
            h + "mlp.c_proj.weight": b + "ffn.down.weight", h + "mlp.c_proj.bias": b + "ffn.down.bias",
        })
    return names


def read_safetensors(path: Path, progress: bool = False) -> Checkpoint:
    config, kind = safetensors_config(path)
    directory = path if path.is_dir() else path.parent

    files = [path] if path.is_file() else sorted(directory.glob("*.safetensors"))
    if not files:
        raise ModelFileError(f"{directory}: no .safetensors files")
    raw: dict[str, torch.Tensor] = {}
    for f in track(files, "reading", progress):
        try:
            with safe_open(f, framework="pt") as st:
                for key in st.keys():
                    raw[key] = st.get_tensor(key)
        except Exception as e:
            raise ModelFileError(f"{f}: not a readable safetensors file ({e})") from None

    try:
        tensors = _gpt_tensors(raw, config, kind) if config.ffn == "gelu" else _llama_tensors(raw, config)
    except RuntimeError as e:  # projections whose shapes cannot be joined
        raise ModelFileError(f"{path}: tensors of mismatched shapes ({e})") from None
    return Checkpoint(config, tensors, Tokenizer.from_directory(directory), str(path),
                      {"format": "safetensors", "model_type": kind})


def _take(raw: dict, key: str) -> torch.Tensor:
    if key not in raw:
        raise ModelFileError(f"checkpoint is missing tensor {key}")
    return raw[key]


def _gpt_tensors(raw: dict, config: ModelConfig, kind: str) -> dict:
    raw = {re.sub(r"^transformer\.", "", k): v for k, v in raw.items()}
    emb, pos, final = ("wte", "wpe", "ln_f") if kind == "gpt2" else ("tokens_embed", "positions_embed", None)
    out = {"tok_embeddings.weight": _take(raw, f"{emb}.weight"), "pos_embeddings.weight": _take(raw, f"{pos}.weight")}
    if final:
        out["norm_f.weight"], out["norm_f.bias"] = _take(raw, f"{final}.weight"), _take(raw, f"{final}.bias")
    if not config.tied_embeddings:
        out["lm_head.weight"] = _take(raw, "lm_head.weight")
    for theirs, ours in _gpt_names(config.n_layers).items():
        t = _take(raw, theirs)
        out[ours] = t.t() if theirs.endswith(".weight") and t.dim() == 2 else t
    return out


def _llama_tensors(raw: dict, config: ModelConfig) -> dict:
    gemma = config.sandwich_norm  # Gemma's RMSNorm scales by 1 + weight: stored here as the factor itself
    norm = (lambda key: _take(raw, key) + 1) if gemma else (lambda key: _take(raw, key))
    out = {"tok_embeddings.weight": _take(raw, "model.embed_tokens.weight"), "norm_f.weight": norm("model.norm.weight")}
    if not config.tied_embeddings:
        out["lm_head.weight"] = _take(raw, "lm_head.weight")
    for i in range(config.n_layers):
        p, b = f"model.layers.{i}.", f"blocks.{i}."
        fused = p + "self_attn.qkv_proj.weight"  # Phi-3 stores Q, K, V as one matrix, as forwardpass does
        out[b + "attn.qkv.weight"] = raw[fused] if fused in raw else torch.cat(
            [_take(raw, p + f"self_attn.{x}_proj.weight") for x in "qkv"])
        if config.attention_bias:
            out[b + "attn.qkv.bias"] = torch.cat([_take(raw, p + f"self_attn.{x}_proj.bias") for x in "qkv"])
        if config.qk_norm:
            out[b + "attn.q_norm.weight"] = norm(p + "self_attn.q_norm.weight")
            out[b + "attn.k_norm.weight"] = norm(p + "self_attn.k_norm.weight")
        out[b + "attn.out.weight"] = _take(raw, p + "self_attn.o_proj.weight")
        out[b + "attn_norm.weight"] = norm(p + "input_layernorm.weight")
        if gemma:  # pre- and post-norm around each sublayer
            out[b + "attn_post_norm.weight"] = norm(p + "post_attention_layernorm.weight")
            out[b + "ffn_norm.weight"] = norm(p + "pre_feedforward_layernorm.weight")
            out[b + "ffn_post_norm.weight"] = norm(p + "post_feedforward_layernorm.weight")
        else:  # Llama's "post-attention" norm is the FFN's pre-norm
            out[b + "ffn_norm.weight"] = _take(raw, p + "post_attention_layernorm.weight")
        if p + "mlp.gate_up_proj.weight" in raw:  # Phi-3: gate and up fused, gate first
            out[b + "ffn.gate_up.weight"] = raw[p + "mlp.gate_up_proj.weight"]
        else:
            gate, up = _take(raw, p + "mlp.gate_proj.weight"), _take(raw, p + "mlp.up_proj.weight")
            out[b + "ffn.gate_up.weight"] = torch.cat([gate, up])
        out[b + "ffn.down.weight"] = _take(raw, p + "mlp.down_proj.weight")
    return out
