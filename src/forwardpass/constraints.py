"""Structured output: a grammar that every generated token must keep satisfiable.

A request's constraint (a JSON Schema, any JSON object, a regular expression, a Lark grammar or a list of choices)
becomes an llguidance grammar; each sequence gets a `Matcher` that, before every token, says which of the
vocabulary's tokens keep the output a prefix of some string the grammar accepts, and then follows the token chosen.
The sampler sets the others to -inf after penalties and logit bias, before temperature and the filters (so every
sampling option still applies, within the grammar). An end-of-turn token is allowed only where the grammar is
complete, and generation ends by itself where the grammar allows nothing more: the text is always a whole match,
unless max_tokens or a stop string cuts it first.

The mask is computed on the engine's thread, just before the token is drawn: about 13 µs a token on the default
model's 49,152-token vocabulary (`bench/structured.py`), well under 1% of a decode step. A second thread would
take a core from the decode step's OpenMP team, which costs far more than it saves on a small machine."""

from __future__ import annotations

import json
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .errors import ConstraintError
from .tokenizer import Tokenizer

KINDS = ("json_schema", "json_object", "regex", "grammar", "choice")


@dataclass(frozen=True)
class Constraint:
    """What the output must be. kind: "json_schema" (spec: the schema, a dict), "json_object" (any JSON object),
    "regex" (spec: a pattern the whole output matches), "grammar" (spec: a Lark grammar, llguidance's dialect) or
    "choice" (spec: a list of strings, the output is one of them)."""

    kind: str
    spec: Any = None

    def grammar(self) -> str:
        """The llguidance grammar (a JSON string); a clear error if the constraint cannot be one."""
        import llguidance

        m = llguidance.LLMatcher
        if self.kind == "json_object":
            return m.grammar_from_json_schema({"type": "object"}, defaults=COMPACT)
        if self.kind == "json_schema":
            if not isinstance(self.spec, dict):
                raise ConstraintError("a JSON schema must be a JSON object")
            return m.grammar_from_json_schema(self.spec, defaults=COMPACT)
        if self.kind == "regex":
            _need_text(self.spec, "a regular expression")
            return m.grammar_from_regex(self.spec)
        if self.kind == "grammar":
            _need_text(self.spec, "a grammar")
            return m.grammar_from_lark(self.spec)
        if self.kind == "choice":
            if not isinstance(self.spec, list) or not self.spec or not all(isinstance(c, str) and c for c in self.spec):
                raise ConstraintError("choice must be a non-empty list of non-empty strings")
            return m.grammar_from_lark("start: " + " | ".join(json.dumps(c) for c in self.spec))
        raise ConstraintError(f"unknown constraint kind {self.kind!r}; choose from {', '.join(KINDS)}")


# JSON without optional whitespace: a small model given the freedom to add spaces and newlines may never stop
COMPACT = {"whitespace_flexible": False}


def _need_text(spec: Any, what: str) -> None:
    if not isinstance(spec, str) or not spec:
        raise ConstraintError(f"{what} must be a non-empty string")


_TOKENIZERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def guidance_tokenizer(tokenizer: Tokenizer, vocab_size: int):
    """llguidance's view of a vocabulary (built once per tokenizer: about 0.4 s for 49,152 tokens)."""
    import llguidance

    key = (vocab_size, tuple(tokenizer.eos_ids))
    cached = _TOKENIZERS.get(tokenizer)
    if cached is None or cached[0] != key:
        built = llguidance.LLTokenizer(tokenizer.backend.to_str(), n_vocab=vocab_size, eos_token=tokenizer.eos_ids)
        cached = (key, built)
        _TOKENIZERS[tokenizer] = cached
    return cached[1]


class Matcher:
    """One sequence's place in its grammar: which tokens may come next, and the token that came."""

    def __init__(self, constraint: Constraint, tokenizer: Tokenizer | None, vocab_size: int):
        import llguidance

        if tokenizer is None:
            raise ConstraintError("structured output needs the model's tokenizer, and this checkpoint has none")
        grammar = constraint.grammar()
        vocab = guidance_tokenizer(tokenizer, vocab_size)
        problem = llguidance.LLMatcher.validate_grammar(grammar, vocab)
        if problem and not problem.startswith("WARNING"):
            lines = [line.strip() for line in problem.splitlines() if line.strip()]
            detail = next((line for line in lines[1:] if line.startswith("error:")), "")  # the parser's reason
            what = constraint.kind.replace("_", " ")
            raise ConstraintError(f"invalid {what}: {lines[0]} {detail}".strip())
        self._m = llguidance.LLMatcher(vocab, grammar, log_level=0)
        self._check()
        self.vocab_size = vocab_size
        self.eos_ids = frozenset(tokenizer.eos_ids)  # allowed only where the grammar is complete
        self._bits = torch.zeros((vocab_size + 31) // 32, dtype=torch.int32)

    def _check(self) -> None:
        if self._m.is_error():
            raise ConstraintError(f"structured output failed: {self._m.get_error()}")

    def allowed(self) -> torch.Tensor:
        """(vocab_size,) bool: the tokens that keep the output inside the grammar."""
        self._m.unsafe_compute_mask_ptr(self._bits.data_ptr(), self._bits.numel() * 4)
        self._check()
        bits = np.unpackbits(self._bits.numpy().view(np.uint8), bitorder="little")[: self.vocab_size]
        if not bits.any():
            raise ConstraintError("structured output failed: the grammar allows no next token")
        return torch.from_numpy(bits.view(np.bool_))

    def advance(self, token_id: int) -> None:
        """Follow the chosen token (one `allowed` said may come)."""
        if not self._m.consume_token(token_id):
            self._check()
            raise ConstraintError(f"structured output failed: token {token_id} does not fit the grammar")

    @property
    def finished(self) -> bool:
        """The grammar allows nothing more: the output is complete."""
        return self._m.is_stopped()
