"""SentencePiece BPE written as Hugging Face `tokenizers` BPE: a file's pieces, scores and types become a vocabulary,
merges ranked by the score of the piece each makes (kept in the cache), byte fallback, and the "▁" that stands for a
space."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
from tokenizers import AddedToken, decoders, models, normalizers
from tokenizers import Tokenizer as Backend


def sentencepiece_backend(tokens: list[str], scores: list[float], types: list[int], unk: int | None,
                          prefix: bool) -> Backend:
    """The backend: the pieces as its vocabulary, their ranked merges, byte tokens (<0x41>) for what no piece covers,
    spaces as "▁" (one put before the text where `prefix`), control pieces special, user-defined ones whole."""
    vocab = {t: i for i, t in enumerate(tokens)}
    backend = Backend(models.BPE(vocab, _ranked_merges(tokens, scores, types, vocab),
                                 unk_token=tokens[unk] if unk is not None else None, fuse_unk=True,
                                 byte_fallback=True))
    backend.normalizer = normalizers.Sequence(([normalizers.Prepend("▁")] if prefix else [])
                                              + [normalizers.Replace(" ", "▁")])
    backend.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()]
                                        + ([decoders.Strip(" ", 1, 0)] if prefix else []))
    # control tokens (3) are special; user-defined ones (4: newline runs, tags) are matched whole, as text
    backend.add_special_tokens([AddedToken(tokens[i], special=True, normalized=False)
                                for i, t in enumerate(types) if t == 3])
    backend.add_tokens([AddedToken(tokens[i], special=False, normalized=False)
                        for i, t in enumerate(types) if t == 4])
    return backend


def _ranked_merges(tokens: list[str], scores: list[float], types: list[int],
                   vocab: dict[str, int]) -> list[tuple[str, str]]:
    """_sentencepiece_merges, kept in the cache as id pairs under a digest of the pieces, their scores and types
    and this module's source, and read from there after: ranking a 262,144-piece vocabulary's merges takes ~2 s,
    reading them back milliseconds. A cache that cannot be read is ranked again; one that cannot be written is
    skipped."""
    from .packaged import cache_dir

    digest = hashlib.sha256(Path(__file__).read_bytes())
    digest.update("\0".join(tokens).encode("utf-8", "surrogatepass"))
    digest.update(np.asarray(scores, np.float32).tobytes() + np.asarray(types, np.int64).tobytes())
    path = cache_dir() / "tokenizers" / f"merges-{digest.hexdigest()[:24]}.npy"
    pairs = None
    try:
        pairs = np.load(path, allow_pickle=False)
        if pairs.ndim != 2 or pairs.shape[1] != 2 or pairs.dtype != np.int32 or (
                len(pairs) and not 0 <= int(pairs.min()) <= int(pairs.max()) < len(tokens)):
            pairs = None
    except (OSError, ValueError):
        pass
    if pairs is None:
        pairs = np.asarray(_sentencepiece_merges(tokens, scores, types, vocab), np.int32).reshape(-1, 2)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npy")
            np.save(tmp, pairs)
            tmp.replace(path)
        except OSError:
            pass
    pieces = np.array(tokens, dtype=object)
    return list(zip(pieces[pairs[:, 0]].tolist(), pieces[pairs[:, 1]].tolist(), strict=True))


def _sentencepiece_merges(tokens: list[str], scores: list[float], types: list[int],
                          vocab: dict[str, int]) -> list[tuple[int, int]]:
    """Every (left, right) split of a normal piece into two pieces, as ids, ranked by the joined piece's score
    (highest first), then by the halves' ids: BPE applying them in that order makes SentencePiece's choices."""
    found = []
    get = vocab.get
    for i, piece in enumerate(tokens):
        if types[i] != 1 or len(piece) < 2:
            continue
        rank = -scores[i]
        for cut in range(1, len(piece)):
            left = get(piece[:cut])
            if left is not None:
                right = get(piece[cut:])
                if right is not None:
                    found.append((rank, left, right))
    found.sort()
    return [(left, right) for _, left, right in found]
