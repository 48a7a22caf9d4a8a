"""Our byte-level BPE against Hugging Face `tokenizers` built from the same GGUF vocabulary and merges, with each
pre-tokenizer the file may name: the same ids for any text (control tokens matched whole or written as text), the same
text for any ids (bytes that are not UTF-8 included); and a GGUF file's tokenizer is built without importing
`tokenizers`."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import AddedToken, Regex, decoders, models, normalizers, pre_tokenizers
from tokenizers import Tokenizer as Backend

import forwardpass
from forwardpass.text.byte_level_bpe import LLAMA3_SPLIT, QWEN2_SPLIT
from forwardpass.text.hf_tokenizer import HFBackend
from forwardpass.text.tokenizer import Tokenizer
from forwardpass.weights.gguf_file import GGUFFile

# the reference's pre-tokenizers: extra splits, then its byte-level step (True: with GPT-2's own split)
REFERENCE = {"smollm": ([r"\p{N}"], True), "gpt2": ([], True), "llama3": ([LLAMA3_SPLIT], False),
             "qwen2": ([QWEN2_SPLIT], False)}
USER_DEFINED = ["Ġthe", "<think>"]  # made user-defined here (GGUF type 4), as Qwen3's <think> is: always whole
PIECES = [*"abcXYZ 019\n\t\r'.,!?<>|_-éß日本🙂\u0301\u00a0\u3000\x1c\x85", "<|im_start|>", "<|im_end|>", "'s", "'LL",
          "<|endoftext|>", "  ", "\n\n", "é", "ﬁ", " the", "<think>", " Việt", " unbelievable"]


@pytest.fixture(scope="module")
def fields():
    """The default model's tokenizer, with a tag <think> added and two tokens made user-defined."""
    f = GGUFFile(forwardpass.default_model_path()).fields
    f = {k: v for k, v in f.items() if k.startswith("tokenizer.")}
    tokens, types = [*f["tokenizer.ggml.tokens"], "<think>"], [*f["tokenizer.ggml.token_type"], 1]
    for word in USER_DEFINED:
        types[tokens.index(word)] = 4
    return f | {"tokenizer.ggml.tokens": tokens, "tokenizer.ggml.token_type": types}


def reference(fields: dict, pre: str) -> HFBackend:
    """`tokenizers` as Hugging Face reads such a file: control tokens special, user-defined ones added whole."""
    tokens, types = fields["tokenizer.ggml.tokens"], fields["tokenizer.ggml.token_type"]
    merges = [tuple(m.split(" ", 1)) for m in fields["tokenizer.ggml.merges"]]
    hf = Backend(models.BPE({t: i for i, t in enumerate(tokens)}, merges, fuse_unk=False,
                            ignore_merges=pre == "llama3"))
    splits, gpt2 = REFERENCE[pre]
    hf.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(s), behavior="isolated") for s in splits]
                                               + [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=gpt2)])
    if pre == "qwen2":
        hf.normalizer = normalizers.NFC()
    hf.decoder = decoders.ByteLevel()
    hf.add_special_tokens([AddedToken(tokens[i], special=True, normalized=False)
                           for i, t in enumerate(types) if t == 3])
    hf.add_tokens([AddedToken(tokens[i], special=False, normalized=False) for i, t in enumerate(types) if t == 4])
    return HFBackend(hf)


@pytest.fixture(scope="module")
def pairs(fields):
    """Per pre-tokenizer: ours and the reference, on the default model's vocabulary."""
    return {pre: (Tokenizer.from_gguf_fields(fields | {"tokenizer.ggml.pre": pre}).backend, reference(fields, pre))
            for pre in REFERENCE}


def test_user_defined_tokens_are_whole_and_llama_3_keeps_a_token_whole(pairs):
    ours, ref = pairs["llama3"]
    for specials in (True, False):
        ids = ours.encode("<think> the unbelievable", specials)
        assert ids[:2] == [ours.token_to_id("<think>"), ours.token_to_id("Ġthe")] and ids == ref.encode(
            "<think> the unbelievable", specials)
    word = next(t for t in ours.tokens[1000:] if len(t) > 6 and ours._merged(t) != [ours.token_to_id(t)])
    text = ours.decode([ours.token_to_id(word)])  # a token that merging its characters would split
    assert ours.encode(text, False) == ref.encode(text, False) == [ours.token_to_id(word)]


def test_a_character_with_no_token_is_left_out_before_merging():
    """Where a vocabulary is not byte-level (no refusal), a character it lacks is dropped and its neighbours merge."""
    tokens, merges = ["a", "b", "ab"], ["a b"]
    ours = Tokenizer.from_gguf_fields({"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.tokens": tokens,
                                       "tokenizer.ggml.merges": merges, "tokenizer.ggml.token_type": [1, 1, 1],
                                       "tokenizer.ggml.pre": "gpt2"})
    hf = Backend(models.BPE({t: i for i, t in enumerate(tokens)}, [("a", "b")], fuse_unk=False))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    assert ours.encode("aXb") == hf.encode("aXb").ids == [2]


def test_structured_output_needs_an_end_token(fields):
    from forwardpass.errors import ConstraintError
    from forwardpass.structured.constraints import Constraint, Grammars

    bare = Tokenizer.from_gguf_fields({k: v for k, v in fields.items() if k != "tokenizer.ggml.eos_token_id"}
                                      | {"tokenizer.ggml.token_type": [1] * len(fields["tokenizer.ggml.tokens"])})
    with pytest.raises(ConstraintError, match="needs the model's end token, and this model names none"):
        Grammars(bare, bare.vocab_size).compile(Constraint("regex", "[0-9]+"))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(PIECES), st.characters(blacklist_categories=["Cs"])), max_size=30),
       st.sampled_from(list(REFERENCE)), st.booleans())
def test_any_text_gets_the_references_ids(pairs, pieces, pre, specials):
    ours, ref = pairs[pre]
    text = "".join(pieces)
    if not ours.missing_bytes.isdisjoint(text.encode()):  # refused by Tokenizer before it gets here
        return
    ids = ours.encode(text, specials)
    assert ids == ref.encode(text, specials)
    assert ours.decode(ids) == ref.decode(ids)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 49151), min_size=1, max_size=8))
def test_any_ids_get_the_references_text(pairs, ids):
    ours, ref = pairs["smollm"]
    assert ours.decode(ids) == ref.decode(ids)  # a lone byte of a UTF-8 character reads as U+FFFD in both


def test_a_gguf_tokenizer_is_built_without_tokenizers(pairs):
    """In a fresh process: the file's tokenizer encodes (the reference's ids) and `tokenizers` is never imported."""
    text = "hi <|im_start|>user\n12 apples"
    code = ("import sys, forwardpass\nfrom forwardpass.weights.gguf_file import GGUFFile\n"
            "from forwardpass.text.tokenizer import Tokenizer\n"
            "f = GGUFFile(forwardpass.default_model_path()).fields\n"
            f"print(Tokenizer.from_gguf_fields(f).encode({text!r}), 'tokenizers' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"{pairs['smollm'][1].encode(text, True)} False"
