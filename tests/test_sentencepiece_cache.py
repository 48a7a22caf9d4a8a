"""A SentencePiece vocabulary's merges are ranked once and kept in the cache: the next build reads them back, gives
the same ids, and a damaged or unwritable cache costs only the ranking again."""

from __future__ import annotations

import pytest

from forwardpass import sentencepiece_bpe as tokenizer_module
from forwardpass.tokenizer import Tokenizer

PIECES = ["<unk>", "<s>", "</s>", "▁", "a", "b", "c", "ab", "bc", "abc", "▁a", "▁ab", "▁abc", "ca", "▁c"]
TEXTS = ["abc", "a b c", "cab abc  bca", "ccc"]


def fields(scores: list[float] | None = None) -> dict:
    return {"tokenizer.ggml.model": "llama", "tokenizer.ggml.tokens": PIECES,
            "tokenizer.ggml.scores": scores or [0.0, 0.0, 0.0] + [-float(i) for i in range(len(PIECES) - 3)],
            "tokenizer.ggml.token_type": [2, 3, 3] + [1] * (len(PIECES) - 3), "tokenizer.ggml.unknown_token_id": 0,
            "tokenizer.ggml.eos_token_id": 2, "tokenizer.ggml.add_space_prefix": False}


def ids(scores: list[float] | None = None) -> list[list[int]]:
    """Every text's ids, from one tokenizer built from the fields."""
    built = Tokenizer.from_gguf_fields(fields(scores))
    return [built.encode(t) for t in TEXTS]


@pytest.fixture
def counted(monkeypatch, tmp_path):
    """The cache in a fresh directory, and how many times the merges are ranked."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    calls = []
    rank = tokenizer_module._sentencepiece_merges
    monkeypatch.setattr(tokenizer_module, "_sentencepiece_merges", lambda *a: calls.append(1) or rank(*a))
    return calls


def test_the_merges_are_ranked_once_and_read_back(counted, tmp_path):
    first = ids()
    assert ids() == first and len(counted) == 1
    assert len(list((tmp_path / "forwardpass" / "tokenizers").glob("merges-*.npy"))) == 1
    other = [0.0, 0.0, 0.0] + [float(i) for i in range(len(PIECES) - 3)]  # other scores: another ranking
    assert ids(other) != first and len(counted) == 2


def test_a_damaged_cache_entry_is_ranked_again(counted, tmp_path):
    want = ids()
    (entry,) = (tmp_path / "forwardpass" / "tokenizers").glob("merges-*.npy")
    entry.write_bytes(b"not an array")
    assert ids() == want and len(counted) == 2
    assert ids() == want and len(counted) == 2  # rewritten


def test_an_unwritable_cache_is_skipped(counted, tmp_path):
    (tmp_path / "forwardpass").mkdir()
    (tmp_path / "forwardpass" / "tokenizers").write_text("a file where the directory would be")
    want = ids()
    assert ids() == want and len(counted) == 2
