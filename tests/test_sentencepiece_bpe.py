"""Our SentencePiece BPE encoder against Google's `sentencepiece` on small vocabularies built to reach its corners:
equal scores (the leftmost pair first), a piece two splits make, an unused piece joined and split back, byte fallback,
an unknown piece where there are no byte pieces, the dummy prefix, user-defined pieces; and what a token's bytes are."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forwardpass.errors import TokenizerError
from forwardpass.text.tokenizer import Tokenizer

spm = pytest.importorskip("sentencepiece")
from sentencepiece import sentencepiece_model_pb2 as pb  # noqa: E402

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
# (piece, score, type): "ab" and "bc" score alike (the leftmost pair joins first); "abc" is made by a+bc and
# ab+c; "ca" is unused (joined, then split back, yet it keeps "cab" from forming as b+c first); "xy" is
# user-defined, and so is a run of two spaces (the dummy prefix's "▁" may begin it)
PIECES = [("<unk>", 0.0, UNKNOWN), ("<s>", 0.0, CONTROL), ("</s>", 0.0, CONTROL), ("▁", -1.0, NORMAL),
          ("a", -2.0, NORMAL), ("b", -2.0, NORMAL), ("c", -2.0, NORMAL), ("ab", -3.0, NORMAL), ("bc", -3.0, NORMAL),
          ("abc", -4.0, NORMAL), ("ca", -2.5, UNUSED), ("cab", -5.0, NORMAL), ("▁a", -3.5, NORMAL),
          ("▁ab", -6.0, NORMAL), ("é", -2.0, NORMAL), ("xy", 0.0, USER_DEFINED), ("x", -2.0, NORMAL),
          ("y", -2.0, NORMAL), ("▁▁", 0.0, USER_DEFINED)]
BYTES = [(f"<0x{b:02X}>", 0.0, BYTE) for b in range(256)]
ALPHABET = "abc é xyz日\n"


def reference(pieces, prefix: bool, byte_fallback: bool):
    m = pb.ModelProto()
    m.trainer_spec.model_type = pb.TrainerSpec.BPE
    m.trainer_spec.byte_fallback = byte_fallback
    m.trainer_spec.vocab_size = len(pieces)
    m.trainer_spec.unk_id, m.trainer_spec.bos_id, m.trainer_spec.eos_id, m.trainer_spec.pad_id = 0, 1, 2, -1
    m.normalizer_spec.name = "identity"
    m.normalizer_spec.add_dummy_prefix = prefix
    m.normalizer_spec.remove_extra_whitespaces = False
    m.normalizer_spec.escape_whitespaces = True
    for piece, score, kind in pieces:
        p = m.pieces.add()
        p.piece, p.score, p.type = piece, score, kind
    return spm.SentencePieceProcessor(model_proto=m.SerializeToString())


def ours(pieces, prefix: bool) -> Tokenizer:
    return Tokenizer.from_gguf_fields({
        "tokenizer.ggml.model": "llama", "tokenizer.ggml.tokens": [p for p, _, _ in pieces],
        "tokenizer.ggml.scores": [s for _, s, _ in pieces], "tokenizer.ggml.token_type": [k for _, _, k in pieces],
        "tokenizer.ggml.unknown_token_id": 0, "tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.eos_token_id": 2,
        "tokenizer.ggml.add_space_prefix": prefix})


CASES = [(prefix, byte_fallback) for prefix in (False, True) for byte_fallback in (True, False)]
BUILT = {case: (ours(PIECES + BYTES * case[1], case[0]), reference(PIECES + BYTES * case[1], *case)) for case in CASES}


@pytest.mark.parametrize("text", ["abc", "abcab", "cab", "bcab", "ab ab", " a", "abcabc abc", "xyxxyy", "é日é",
                                  "a\nb", "zzz", "日日 z", " ", "  a", "a   b"])
@pytest.mark.parametrize("case", CASES)
def test_the_corners_as_sentencepiece(case, text):
    tokenizer, sentencepiece = BUILT[case]
    assert tokenizer.encode_text(text) == sentencepiece.encode(text)


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from(ALPHABET), max_size=24), st.sampled_from(CASES))
def test_any_text_as_sentencepiece_and_back(text, case):
    tokenizer, sentencepiece = BUILT[case]
    ids = tokenizer.encode_text(text)
    assert ids == sentencepiece.encode(text)
    if case[1]:  # with byte pieces every text comes back
        assert tokenizer.decode(ids) == sentencepiece.decode(ids) == text


def test_control_pieces_are_matched_where_asked_and_bytes_are_bytes():
    tokenizer = BUILT[(False, True)][0]
    assert tokenizer.encode("<s>ab</s>") == [1, 7, 2] and tokenizer.encode_text("<s>") == tokenizer.encode_text("<") + \
        tokenizer.encode_text("s>")
    assert tokenizer.token_bytes(tokenizer.backend.token_to_id("<0xE6>")) == b"\xe6"
    assert tokenizer.token_bytes(12) == b" a" and tokenizer.piece(12) == " a"
    assert tokenizer.decode(tokenizer.encode_text("日")[:2]) == "\ufffd\ufffd"  # two of 日's three bytes: one each


def test_a_character_no_piece_covers_without_bytes_or_unknown_piece_is_refused():
    pieces = [(p, s, NORMAL if k == UNKNOWN else k) for p, s, k in PIECES]
    tokenizer = Tokenizer.from_gguf_fields({
        "tokenizer.ggml.model": "llama", "tokenizer.ggml.tokens": [p for p, _, _ in pieces],
        "tokenizer.ggml.scores": [s for _, s, _ in pieces], "tokenizer.ggml.token_type": [k for _, _, k in pieces],
        "tokenizer.ggml.add_space_prefix": False})
    assert tokenizer.encode_text("abc") == [9]
    with pytest.raises(TokenizerError, match="'z', which this model's vocabulary cannot represent"):
        tokenizer.encode_text("abz")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([3, 4, 7, 12, 14, *range(len(PIECES), len(PIECES) + 256)]), min_size=1, max_size=8))
def test_any_ids_read_as_sentencepiece_reads_them(ids):
    """Byte pieces that make no whole character (a stray <0xE7>, half of 日) read as sentencepiece reads them."""
    tokenizer, sentencepiece = BUILT[(False, True)]
    assert tokenizer.decode(ids) == sentencepiece.decode(ids)
