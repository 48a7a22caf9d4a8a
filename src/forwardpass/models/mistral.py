"""Mistral: Llama with a sliding window (each token reads itself and the `sliding_window - 1` before it) and a
head_dim of its own. llama.cpp's converter writes its GGUF files as architecture "llama": they are read as Llama's."""

from __future__ import annotations

from functools import partial

from . import llama
from .family import Family

MISTRAL = Family("Mistral", model_type="mistral",
                 hf_config=partial(llama.hf_config, kind="mistral", window=True, own_head_dim=True),
                 hf_tensors=llama.hf_tensors)
