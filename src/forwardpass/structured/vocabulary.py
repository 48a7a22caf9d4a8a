"""llguidance's view of a vocabulary our own encoders read (byte_level_bpe.py, sentencepiece_bpe.py): each token's
bytes, control tokens (and user-defined ones written as tags, <think>) marked special by a leading 0xFF as llguidance
reads llama.cpp's, the end token, and the encoder for text."""

from __future__ import annotations

from ..errors import ConstraintError


class _View:
    """The attributes and call llguidance's TokenizerWrapper reads (without an end token it adds one of its own)."""

    def __init__(self, backend, eos_id: int):
        self.backend = backend
        self.eos_token_id, self.bos_token_id = eos_id, None
        self.special_token_ids = sorted(backend.special_ids)
        tags = {i for i in backend.user_ids if backend.tokens[i].startswith("<") and backend.tokens[i].endswith(">")}
        marked = backend.special_ids | tags
        self.tokens = [b"\xff" + t.encode() if i in marked else backend.token_bytes(i)
                       for i, t in enumerate(backend.tokens)]

    def __call__(self, text: bytes | str) -> list[int]:
        if isinstance(text, bytes):
            text = text.decode("utf-8", errors="replace")
        return self.backend.encode(text, False)


def guidance_view(backend, eos_ids: list[int]):
    """llguidance's TokenizerWrapper over `backend`; a model naming no end token cannot end a constrained reply."""
    import llguidance

    if not eos_ids:
        raise ConstraintError("structured output needs the model's end token, and this model names none")
    return llguidance.TokenizerWrapper(_View(backend, eos_ids[0]))
