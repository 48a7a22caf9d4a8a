"""Structured output: a grammar that every generated token must keep satisfiable.

A request's constraint (a JSON Schema, any JSON object, a regular expression, a Lark grammar, a GBNF grammar or a list
of choices) becomes an llguidance grammar; each sequence gets a `Matcher` that, before every token, says which of the
vocabulary's tokens keep the output a prefix of some string the grammar accepts, and then follows the token chosen.
The sampler sets the others to -inf after penalties and logit bias, before temperature and the filters (so every
sampling option still applies, within the grammar). An end-of-turn token is allowed only where the grammar is
complete, and generation ends by itself where the grammar allows nothing more: the text is always a whole match,
unless max_tokens or a stop string cuts it first.

Compiling a constraint (`Grammars.compile`) can take seconds for a large schema, and some of the library's limits
(a grammar row of more than 2,000 items, a grammar that allows no text) only show once a mask is computed. So a
constraint is measured first and refused past what the library takes safely (structured/limits.py), compiled once,
on a thread of its own with a deep stack (compile_threads.py: the library recurses as deep as a grammar's chains of
rules), its first masks computed along a short probe walk, and the result kept in a cache bounded by count and size;
every sequence that uses it starts from a copy. The library releases Python's lock while it builds and masks, so
compiling beside the event loop leaves it free.

The mask is computed on the engine's thread, just before the token is drawn: about 13 µs a token on the default
model's 49,152-token vocabulary (`bench/structured.py`), well under 1% of a decode step. A second thread would
take a core from the decode step's OpenMP team, which costs far more than it saves on a small machine."""

from __future__ import annotations

import ctypes
import json
import re
import threading
import weakref
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ConstraintError
from . import compile_threads
from .limits import MAX_GRAMMAR_SIZE, check_gbnf, check_lark, check_schema

if TYPE_CHECKING:
    from ..text.tokenizer import Tokenizer

KINDS = ("json_schema", "json_object", "regex", "grammar", "gbnf", "choice")
PROBE_STEPS = 8  # masks computed, along the lowest allowed tokens, before a compiled constraint is accepted
MAX_GRAMMARS = 64  # compiled constraints kept for reuse
MAX_CACHED_BYTES = 256 << 20  # and at most this much memory among them (a larger one serves its own request only)
MAX_LEXER_STATES = 50_000  # the library's default, 250,000 at 1-2 kB each, lets one regular expression take 500 MB
SMALL_SPEC = 16 << 10  # characters of a constraint compiled in the small lane, never behind a large one


@dataclass(frozen=True)
class Constraint:
    """What the output must be. kind: "json_schema" (spec: the schema, a dict), "json_object" (any JSON object),
    "regex" (spec: a pattern the whole output matches), "grammar" (spec: a Lark grammar, llguidance's dialect),
    "gbnf" (spec: a GBNF grammar, llama.cpp's format, its `root` rule the whole output) or "choice" (spec: a list of
    strings, the output is one of them)."""

    kind: str
    spec: Any = None

    @property
    def key(self) -> tuple[str, str]:
        """Equal for equal constraints, whatever the order of a schema's keys."""
        return self.kind, json.dumps(self.spec, sort_keys=True, ensure_ascii=False)

    def grammar(self) -> str:
        """The llguidance grammar (a JSON string); a clear error if the constraint cannot be one."""
        import llguidance

        m = llguidance.LLMatcher
        if self.kind == "json_object":
            return m.grammar_from_json_schema({"type": "object"}, defaults=COMPACT)
        if self.kind == "json_schema":
            if not isinstance(self.spec, dict):
                raise ConstraintError("a JSON schema must be a JSON object")
            check_schema(self.spec)
            return m.grammar_from_json_schema(self.spec, defaults=COMPACT)
        if self.kind == "regex":
            _need_text(self.spec, "a regular expression")
            return m.grammar_from_regex(self.spec)
        if self.kind == "grammar":
            _need_text(self.spec, "a grammar")
            check_lark(self.spec, self.what)
            return m.grammar_from_lark(self.spec)
        if self.kind == "gbnf":
            return m.grammar_from_lark(self.lark())
        if self.kind == "choice":
            if not isinstance(self.spec, list) or not self.spec or not all(isinstance(c, str) and c for c in self.spec):
                raise ConstraintError("choice must be a non-empty list of non-empty strings")
            # one regular expression, not a grammar rule of N alternatives: the lexer takes any number of them
            return m.grammar_from_regex("|".join(_literal(c) for c in self.spec))
        raise ConstraintError(f"unknown constraint kind {self.kind!r}; choose from {', '.join(KINDS)}")

    def lark(self) -> str:
        """A GBNF grammar as the library's Lark dialect, through the library's own converter (gbnf.py: `root` becomes
        `start`, rules whose alternatives are all terminals become upper-case lexer rules)."""
        from .gbnf import gbnf_to_lark

        _need_text(self.spec, "a GBNF grammar")
        check_gbnf(self.spec, self.what)
        try:
            return gbnf_to_lark(UNICODE_ESCAPE.sub(_unescaped, self.spec))
        except Exception as e:  # the converter raises bare Exceptions ("Rule 'x' not found") and GbnfToLarkError
            raise ConstraintError(f"invalid GBNF grammar: {e}") from None

    @property
    def what(self) -> str:
        """The constraint's kind in words, as its errors name it."""
        return "GBNF grammar" if self.kind == "gbnf" else self.kind.replace("_", " ")

    def check(self) -> None:
        """Refuse (ConstraintError) a constraint whose grammar does not compile, before any model is loaded: only
        what shows without the vocabulary (its syntax, unknown rules); `Grammar` checks the rest."""
        import llguidance

        text, limits = self.grammar(), _limits(verbose_errors=True)
        problem = compile_threads.call(lambda: llguidance.LLMatcher.validate_grammar(text, limits=limits))
        if problem and not problem.startswith("WARNING"):
            raise ConstraintError(self.invalid(problem))

    def invalid(self, problem: str) -> str:
        """The library's complaint that the grammar is not valid, as one line: its first line and the parser's reason
        (its `error:` line). For a GBNF grammar the place it names is in the converted text: that line is quoted
        instead of its number, which the client's grammar does not have."""
        if problem.startswith("panic"):
            return f"invalid {self.what}: {INTERNAL_LIMIT}"
        lines = [line.strip() for line in problem.splitlines() if line.strip()]
        detail = next((line for line in lines[1:] if line.startswith("error:")), "")  # the parser's reason
        first, place = lines[0], ""
        if self.kind == "gbnf" and (at := re.match(r"(?:at )?(\d+)\(\d+\):\s*", first)):
            converted, row = self.lark().splitlines(), int(at[1]) - 1
            first = first[at.end():]
            place = f" (in the rule converted to Lark as `{converted[row].strip()}`)" if row < len(converted) else ""
        return f"{f'invalid {self.what}: {first} {detail}'.strip()}{place}"


# JSON without optional whitespace: a small model given the freedom to add spaces and newlines may never stop
COMPACT = {"whitespace_flexible": False}


# The converter writes GBNF's \uXXXX as \u and the digits without their leading zeros ("\u00e9" → "\ue9"), which the
# library cannot read: such an escape goes in as its character (as \xHH below 0x80, where it may be syntax). An
# escaped backslash is matched first, so the "u0041" of "\\u0041" stays text.
UNICODE_ESCAPE = re.compile(r"\\(\\|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8})")


def _unescaped(m: re.Match) -> str:
    code = int(m[1][1:], 16) if m[1] != "\\" else None
    if code is None or 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:  # not a character: the converter's to refuse
        return m[0]
    return f"\\x{code:02x}" if code < 0x80 else chr(code)


def _need_text(spec: Any, what: str) -> None:
    if not isinstance(spec, str) or not spec:
        raise ConstraintError(f"{what} must be a non-empty string")


def _literal(text: str) -> str:
    """`text` as a regular expression matching exactly it: every ASCII character but letters and digits escaped."""
    return "".join(c if c.isalnum() or ord(c) > 127 else f"\\x{{{ord(c):02x}}}" for c in text)


def _limits(verbose_errors: bool = False):
    """The library's limits: its lexer's states and its grammar's symbols bounded. Without `verbose_errors` its errors
    never echo its internal state (the schema, the parser's rows); a validation's keep the place they name."""
    import llguidance

    return llguidance.LLParserLimits(verbose_errors=verbose_errors, max_lexer_states=MAX_LEXER_STATES,
                                     max_grammar_size=MAX_GRAMMAR_SIZE)


# a panic inside the library (an assertion) in words: its text says nothing to the client
INTERNAL_LIMIT = "it is past an internal limit of the constraint library"
# the library's one-word reasons for stopping, as a client would want to read them
REASONS = {"NoExtensionBias": "it allows no text at all (a $ref that only refers to itself?)",
           "NoExtension": "it allows no text at all",
           "ParserTooComplex": "it is too complex for the constraint library (a grammar row past its limit)",
           "LexerTooComplex": "its lexer is too complex for the constraint library"}


def _reason(error: str) -> str:
    """The library's error without the parser state it appends: its first line, in words where it is a code."""
    first = error.strip().splitlines()[0] if error.strip() else "unknown error"
    first = first.removeprefix("Parser Error: ")
    return INTERNAL_LIMIT if first.startswith("panic") else REASONS.get(first, first)


_TOKENIZERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def guidance_tokenizer(tokenizer: Tokenizer, vocab_size: int):
    """llguidance's view of a vocabulary (built once per tokenizer: about 0.16 s for 49,152 tokens)."""
    import llguidance

    key = (vocab_size, tuple(tokenizer.eos_ids))
    cached = _TOKENIZERS.get(tokenizer)
    if cached is None or cached[0] != key:
        built = llguidance.LLTokenizer(tokenizer.backend.guidance(tokenizer.eos_ids), n_vocab=vocab_size,
                                       eos_token=tokenizer.eos_ids)
        cached = (key, built)
        _TOKENIZERS[tokenizer] = cached
    return cached[1]


class Matcher:
    """One sequence's place in its grammar: which tokens may come next, and the token that came."""

    def __init__(self, matcher, vocab_size: int, eos_ids: frozenset[int]):
        self._m = matcher  # llguidance.LLMatcher, this sequence's own
        self.vocab_size = vocab_size
        self.eos_ids = eos_ids  # allowed only where the grammar is complete
        from llguidance.numpy import allocate_token_bitmask

        self._bits = allocate_token_bitmask(1, vocab_size)  # (1, ⌈vocab_size / 32⌉) int32: bit i of word w, token 32w+i

    def _check(self) -> None:
        if self._m.is_error():
            raise ConstraintError(f"structured output failed: {_reason(self._m.get_error())}")

    def allowed(self) -> np.ndarray:
        """(vocab_size,) bool, a new array: the tokens that keep the output inside the grammar."""
        from llguidance.numpy import fill_next_token_bitmask

        fill_next_token_bitmask(self._m, self._bits)
        self._check()
        bits = np.unpackbits(self._bits.view(np.uint8), bitorder="little")[: self.vocab_size]  # little-endian words
        if not bits.any():
            raise ConstraintError("structured output failed: the grammar allows no next token")
        return bits.view(np.bool_)

    def advance(self, token_id: int) -> None:
        """Follow the chosen token (one `allowed` said may come)."""
        if not self._m.consume_token(token_id):
            self._check()
            raise ConstraintError(f"structured output failed: token {token_id} does not fit the grammar")

    def rollback(self) -> None:
        """Take back the last token followed."""
        self._m.rollback(1)

    @property
    def finished(self) -> bool:
        """The grammar allows nothing more: the output is complete."""
        return self._m.is_stopped()


class Grammar:
    """A constraint compiled for one vocabulary and checked: the grammar is valid, and its first masks, along a
    walk of PROBE_STEPS lowest allowed tokens, come out without hitting one of the library's limits (most of which
    trip within the first few tokens). `matcher()` gives each sequence its own copy of the start state."""

    def __init__(self, constraint: Constraint, vocab, vocab_size: int, eos_ids: frozenset[int]):
        import llguidance

        what = constraint.what
        text = constraint.grammar()
        problem = llguidance.LLMatcher.validate_grammar(text, vocab, limits=_limits(verbose_errors=True))
        if problem and not problem.startswith("WARNING"):
            raise ConstraintError(constraint.invalid(problem))
        before = _heap_bytes()
        self._start = llguidance.LLMatcher(vocab, text, log_level=0, limits=_limits())
        if self._start.is_error():
            raise ConstraintError(f"invalid {what}: {_reason(self._start.get_error())}")
        self.vocab_size, self.eos_ids = vocab_size, eos_ids
        self._probe(what)
        self.size = max(_heap_bytes() - before, len(text))  # bytes it holds (others' allocations meanwhile too)

    def _probe(self, what: str) -> None:
        """Walk PROBE_STEPS tokens deep, each the lowest allowed one that does not end the text (where another is
        allowed), computing every mask on the way."""
        walk = self.matcher()
        try:
            for _ in range(PROBE_STEPS):
                ids = [i for i in np.flatnonzero(walk.allowed()).tolist() if i not in self.eos_ids]
                for tried, token in enumerate(ids[:4]):
                    walk.advance(token)
                    if not walk.finished or tried == min(len(ids), 4) - 1:
                        break
                    walk.rollback()
                if not ids or walk.finished:
                    return
        except ConstraintError as e:
            raise ConstraintError(f"{what} cannot be enforced: {str(e).removeprefix('structured output failed: ')}"
                                  ) from None

    def matcher(self) -> Matcher:
        return Matcher(self._start.deep_copy(), self.vocab_size, self.eos_ids)


class Grammars:
    """The compiled constraints of one model's vocabulary: each compiled once however many requests, choices and
    prompts use it (a second request for one being compiled waits for that compile), and the latest kept for reuse
    within MAX_GRAMMARS and MAX_CACHED_BYTES. Compiles run on compile_threads' lanes: constraints of up to SMALL_SPEC
    characters in one, larger ones in the other, so that large ones can only keep each other waiting."""

    def __init__(self, tokenizer: Tokenizer | None, vocab_size: int):
        self.tokenizer, self.vocab_size = tokenizer, vocab_size
        self._lock = threading.Lock()
        self._done: OrderedDict[tuple, Grammar | str] = OrderedDict()  # a compiled constraint, or why it cannot be
        self._running: dict[tuple, list[Future]] = {}  # each compile not yet done: the futures waiting for it
        self._small = compile_threads.Lane("forwardpass-grammar")
        self._large = compile_threads.Lane("forwardpass-grammar-large")

    def compile(self, constraint: Constraint) -> Grammar:
        return self.submit(constraint).result()

    def submit(self, constraint: Constraint) -> Future:
        """A future of the compiled constraint (its exception: a ConstraintError), the caller's own: a compile whose
        every caller cancelled theirs before it began (a request past its time limit) is never begun."""
        key, future = constraint.key, Future()
        with self._lock:
            if key in self._done:
                self._done.move_to_end(key)
                _settle(future, self._done[key])
                return future
            waiting = self._running.setdefault(key, [])
            waiting.append(future)
            if len(waiting) > 1:
                return future
        lane = self._small if len(key[1]) <= SMALL_SPEC else self._large
        try:
            lane.submit(lambda: self._build(constraint))
        except BaseException as e:  # no thread to compile on
            self._deliver(key, e)
        return future

    def _build(self, constraint: Constraint) -> None:
        key = constraint.key
        with self._lock:
            if all(f.cancelled() for f in self._running[key]):
                del self._running[key]
                return
        try:
            if self.tokenizer is None:
                raise ConstraintError("structured output needs the model's tokenizer, and this checkpoint has none")
            vocab = guidance_tokenizer(self.tokenizer, self.vocab_size)
            done: Grammar | str = Grammar(constraint, vocab, self.vocab_size, frozenset(self.tokenizer.eos_ids))
        except ConstraintError as e:
            done = str(e)  # the message alone: the exception's frames would keep the failed matcher's memory
        except BaseException as e:  # not the client's: not kept, the next request tries again
            self._deliver(key, e)
            return
        self._deliver(key, done, keep=True)
        _return_memory()

    def _deliver(self, key: tuple, outcome: Grammar | str | BaseException, keep: bool = False) -> None:
        """The compile's outcome to every caller still waiting for it, and to the cache where `keep`."""
        with self._lock:
            waiting = self._running.pop(key, [])
            if keep:
                self._done[key] = outcome
                self._evict()
        for future in waiting:
            if future.set_running_or_notify_cancel():  # from here on it cannot be cancelled under us
                _settle(future, outcome)

    def _evict(self) -> None:
        size = lambda g: g.size if isinstance(g, Grammar) else len(g)  # noqa: E731
        while len(self._done) > MAX_GRAMMARS or sum(map(size, self._done.values())) > MAX_CACHED_BYTES:
            self._done.popitem(last=False)


def _settle(future: Future, done: Grammar | str | BaseException) -> None:
    if isinstance(done, Grammar):
        future.set_result(done)
    else:
        future.set_exception(done if isinstance(done, BaseException) else ConstraintError(done))


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def _heap_bytes() -> int:
    """Bytes the C heap has handed out, in every thread's arena (glibc's mallinfo2; 0 elsewhere)."""
    try:
        info = ctypes.CDLL(None).mallinfo2
    except (OSError, AttributeError):
        return 0
    info.restype = _MallInfo2
    m = info()
    return m.uordblks + m.hblkhd


def _return_memory() -> None:
    """Give the C heap's free pages back to the system: a large grammar's build leaves hundreds of megabytes free
    but held in its thread's arena."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass
