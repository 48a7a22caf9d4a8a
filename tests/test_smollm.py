"""The embedded SmolLM2-135M-Instruct GGUF against transformers loading the same file."""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forwardpass.errors import TokenizerError

PROMPTS = [
    "the cat sat on the",
    "The capital of France is",
    "<|im_start|>user\nWrite a haiku about the sea.<|im_end|>\n<|im_start|>assistant\n",
    "def fibonacci(n):\n    if n < 2:\n        return n\n",
]

TOKENIZER_STRINGS = ["", " leading spaces", "   three spaces", "\ttabs\tand\nnewlines\n\n", "emoji 😀🎉 done",
                     "CJK 中文字 日本語 한국어", "mixed\r\nline endings", "<|im_start|>user\nhi<|im_end|>",
                     "ünïcödé façade — “quotes”", "a" * 300]


@pytest.mark.parametrize("prompt", PROMPTS)
def test_last_position_logits_match_transformers(smollm, hf_smollm, prompt):
    tok, hf = hf_smollm
    ids = tok(prompt)["input_ids"]
    assert smollm.encode(prompt) == ids
    with torch.no_grad():
        want = hf(torch.tensor([ids])).logits[0, -1]
    got = smollm.next_token_logits(ids)
    assert (got - want).abs().max().item() <= 1e-3
    assert torch.equal(got.topk(20).indices, want.topk(20).indices)


@pytest.mark.parametrize("text", TOKENIZER_STRINGS)
def test_token_ids_match_transformers(smollm, hf_smollm, text):
    tok, _ = hf_smollm
    ids = smollm.tokenizer.encode(text)
    assert ids == tok(text)["input_ids"]
    assert smollm.tokenizer.decode(ids) == text


def test_digits_split_one_by_one(smollm, hf_smollm):
    """The file's pre-tokenizer is 'smollm': every digit is its own piece (llama.cpp's rule for it)."""
    tok, _ = hf_smollm
    ids = smollm.tokenizer.encode("in 2024, 1,000,000")
    assert [smollm.tokenizer.piece(i) for i in ids][:6] == ["in", " ", "2", "0", "2", "4"]
    assert ids == tok("in 2024, 1,000,000")["input_ids"]


def test_chat_template_matches_transformers(smollm, hf_smollm):
    tok, _ = hf_smollm
    messages = [{"role": "user", "content": "Hi!"}, {"role": "assistant", "content": "Hello."},
                {"role": "user", "content": "What is 2+2?"}]
    ours = smollm.tokenizer.apply_chat_template(messages)
    assert ours == tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert ours.endswith("<|im_start|>assistant\n")
    assert smollm.tokenizer.encode("<|im_end|>") == [2]


def test_end_of_turn_token(smollm):
    assert 2 in smollm.tokenizer.eos_ids  # <|im_end|>
    assert smollm.config.n_layers == 30 and smollm.config.kv_heads == 3 and smollm.config.tied_embeddings


def test_cached_steps_equal_full_forward_on_real_model(smollm):
    ids = torch.tensor([smollm.encode("One, two, three, four, five, six")])
    model = smollm.model
    with torch.inference_mode():
        full, _ = model(ids)
        cache = model.new_cache(1, ids.shape[1])
        steps = [model(ids[:, :4], cache)[0]] + [model(ids[:, t:t + 1], cache)[0] for t in range(4, ids.shape[1])]
    assert (torch.cat(steps, 1) - full).abs().max().item() <= 1e-4


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text())
def test_any_text_round_trips(smollm, text):
    """Any UTF-8 text round-trips, or is refused by name: SmolLM2's vocabulary lacks 21 of the 256 byte
    tokens (0x04, 0xf1, …), and silently dropping those bytes would change the text."""
    tok = smollm.tokenizer
    if tok.missing_bytes.isdisjoint(text.encode()):
        assert tok.decode(tok.encode(text)) == text
    else:
        with pytest.raises(TokenizerError, match="cannot represent"):
            tok.encode(text)


def test_unrepresentable_text_is_refused(smollm, hf_smollm):
    tok, _ = hf_smollm
    assert len(smollm.tokenizer.missing_bytes) == 21
    assert tok.decode(tok("a\U00040000b")["input_ids"]) != "a\U00040000b"  # the reference drops bytes silently
    with pytest.raises(TokenizerError, match=r"'\\U00040000' \(U\+40000\)"):
        smollm.encode("a\U00040000b")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["system", "user", "assistant", "tool"]),
                          st.lists(st.sampled_from([*" \n\t\r.,'!?<>|_-abcXYZ09éß日🙂", "im", "start", "end", "<|im",
                                                    "|>", "  \n\n"]), max_size=20).map("".join)),
                min_size=1, max_size=4), st.booleans())
def test_a_chat_without_special_tokens_in_its_text_gets_its_renderings_ids(smollm, turns, generation_prompt):
    """encode_chat tokenizes message text apart from the template's control tokens: where the text holds no special
    token the ids are those of the whole rendering, since the backend splits at special tokens first anyway."""
    tok = smollm.tokenizer
    messages = [{"role": role, "content": content} for role, content in turns]
    rendered = tok.apply_chat_template(messages, generation_prompt)
    if not tok.missing_bytes.isdisjoint(rendered.encode()):
        return
    assert tok.encode_chat(messages, generation_prompt) == tok.encode(rendered)
