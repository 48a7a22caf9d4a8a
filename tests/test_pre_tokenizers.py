"""Byte-level BPE pre-tokenizers read from a GGUF's `tokenizer.ggml.pre`, against Hugging Face's own tokenizer classes
on the same vocabulary and merges (the default model's)."""

from __future__ import annotations

import pytest
import transformers
from hypothesis import given, settings
from hypothesis import strategies as st

import forwardpass
from forwardpass.errors import TokenizerError
from forwardpass.text.tokenizer import Tokenizer
from forwardpass.weights.gguf_file import GGUFFile

TEXTS = ["12345 apples and 3.14159", "I'll say we've THEY'RE done", "e\u0301te\u0301 (decomposed) and été",
         "  spaces\n\n\nnewlines\t tabs", "日本語のテキスト 123", "emoji 🙂👍🏽 and symbols <>&%$#@!"]


@pytest.fixture(scope="module")
def fields():
    f = GGUFFile(forwardpass.default_model_path()).fields
    return {k: v for k, v in f.items() if k.startswith("tokenizer.")}


@pytest.fixture(scope="module")
def qwen2(fields):
    """Ours with the `qwen2` pre-tokenizer, and transformers' Qwen2 tokenizer, on one vocabulary."""
    ours = Tokenizer.from_gguf_fields(fields | {"tokenizer.ggml.pre": "qwen2"})
    vocab = {t: i for i, t in enumerate(fields["tokenizer.ggml.tokens"])}
    merges = [tuple(m.split(" ", 1)) for m in fields["tokenizer.ggml.merges"]]
    return ours, transformers.Qwen2Tokenizer(vocab=vocab, merges=merges)


def test_qwen2_splits_as_transformers_does(qwen2):
    ours, reference = qwen2
    for text in TEXTS:
        assert ours.encode(text) == reference.encode(text, add_special_tokens=False), text
    assert len(ours.encode("12345")) == 5  # every digit on its own (Llama 3 takes them three at a time)


@settings(max_examples=80, deadline=None)
@given(st.text(st.characters(blacklist_categories=["Cs"]), max_size=40))
def test_qwen2_on_any_text(qwen2, text):
    ours, reference = qwen2
    if "<|" in text:  # the vocabulary's special tokens are matched whole by both, but added differently
        return
    try:
        ids = ours.encode(text)
    except TokenizerError:  # a byte this vocabulary has no token for: refused here, dropped silently there
        return
    assert ids == reference.encode(text, add_special_tokens=False)


@pytest.fixture(scope="module")
def llama3(fields):
    """Ours with the `llama-bpe` pre-tokenizer (Llama 3's split), and transformers' own split for that name (its GGUF
    loader's) on a byte-level BPE of the same vocabulary and merges."""
    from transformers.integrations.gguf.gguf_tokenizer_mapping import set_split_regex

    ours = Tokenizer.from_gguf_fields(fields | {"tokenizer.ggml.pre": "llama-bpe"})
    vocab = {t: i for i, t in enumerate(fields["tokenizer.ggml.tokens"])}
    merges = [tuple(m.split(" ", 1)) for m in fields["tokenizer.ggml.merges"]]
    reference = transformers.GPT2TokenizerFast(vocab=vocab, merges=merges)
    reference.backend_tokenizer.model.ignore_merges = True  # as Llama 3's tokenizer.json (and llama.cpp) have it
    return ours, set_split_regex(reference, {"pre_tokenizer_type": "llama-bpe"})


def test_llama3_splits_as_transformers_does(llama3):
    ours, reference = llama3
    for text in TEXTS:
        assert ours.encode(text) == reference.encode(text, add_special_tokens=False), text


@settings(max_examples=80, deadline=None)
@given(st.text(st.characters(blacklist_categories=["Cs"]), max_size=40))
def test_llama3_on_any_text(llama3, text):
    ours, reference = llama3
    if "<|" in text:
        return
    try:
        ids = ours.encode(text)
    except TokenizerError:
        return
    assert ids == reference.encode(text, add_special_tokens=False)
