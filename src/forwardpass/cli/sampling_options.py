"""Sampling options shared by `generate` and `chat`, named as the OpenAI API names them."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConstraintError, ForwardpassError

if TYPE_CHECKING:
    from ..sampling_params import SamplingParams
    from ..structured.constraints import Constraint


def add_sampling_options(p: argparse.ArgumentParser, max_tokens: int = 128) -> None:
    p.add_argument("--max-tokens", type=int, default=max_tokens, help=f"token budget (default {max_tokens})")
    p.add_argument("--temperature", type=float, default=0.0, help="0 = greedy argmax (default 0)")
    p.add_argument("--top-k", type=int, default=0, help="keep the k most likely tokens (0 = off)")
    p.add_argument("--top-p", type=float, default=1.0, help="keep the smallest set reaching mass p (1 = off)")
    p.add_argument("--min-p", type=float, default=0.0, help="keep tokens with p ≥ min_p × the top p (0 = off)")
    p.add_argument("--seed", type=int, default=None, help="make sampling reproducible")
    p.add_argument("--stop", action="append", default=[], metavar="TEXT", help="stop string (repeatable)")
    p.add_argument("--repetition-penalty", type=float, default=1.0)
    p.add_argument("--presence-penalty", type=float, default=0.0)
    p.add_argument("--frequency-penalty", type=float, default=0.0)
    p.add_argument("--logprobs", type=int, default=None, metavar="N",
                   help="report each token's log-probability and N alternatives")
    p.add_argument("--logit-bias", action="append", default=[], metavar="ID=BIAS",
                   help="add BIAS (-100 to 100) to token ID's logit (repeatable)")
    shape = p.add_mutually_exclusive_group()
    shape.add_argument("--json-schema", metavar="SCHEMA", help="output JSON valid against this schema (JSON text, or "
                       "a file holding it)")
    shape.add_argument("--json-object", action="store_true", help="output one JSON object")
    shape.add_argument("--regex", metavar="PATTERN", help="output a whole match of this regular expression")
    shape.add_argument("--grammar", metavar="FILE", help="output a string of this Lark grammar (llguidance's dialect)")
    shape.add_argument("--grammar-file", metavar="PATH", help="output a string of this GBNF grammar (llama.cpp's "
                       "format: its root rule is the whole output)")


def sampling_params(args) -> SamplingParams:
    """Validated parameters (a clear error before the model loads)."""
    from ..sampling_params import SamplingParams

    return SamplingParams(
        temperature=args.temperature, top_k=args.top_k, top_p=args.top_p, min_p=args.min_p, seed=args.seed,
        stop=args.stop, repetition_penalty=args.repetition_penalty, presence_penalty=args.presence_penalty,
        frequency_penalty=args.frequency_penalty, max_tokens=args.max_tokens, logprobs=args.logprobs,
        logit_bias=dict(bias(b) for b in args.logit_bias), constraint=constraint(args))


def bias(text: str) -> tuple[int, float]:
    token_id, _, value = text.partition("=")
    try:
        return int(token_id), float(value)
    except ValueError:
        raise ForwardpassError(f"--logit-bias takes ID=BIAS (e.g. 7042=-100), got {text!r}") from None


def constraint(args) -> Constraint | None:
    """The output's constraint, checked as far as it can be without the model, before PyTorch is imported: a file
    that cannot be read or a grammar that does not compile is one line naming the option (and the file)."""
    if args.json_object:
        kind, spec, option = "json_object", None, "--json-object"
    elif args.regex is not None:
        kind, spec, option = "regex", args.regex, "--regex"
    elif args.grammar is not None:
        kind, spec, option = "grammar", read_text(args.grammar, "--grammar"), f"--grammar {args.grammar}"
    elif args.grammar_file is not None:
        kind, spec = "gbnf", read_text(args.grammar_file, "--grammar-file")
        option = f"--grammar-file {args.grammar_file}"
    elif args.json_schema is not None:
        text = args.json_schema if args.json_schema.lstrip().startswith("{") else read_text(args.json_schema,
                                                                                            "--json-schema")
        try:
            kind, spec, option = "json_schema", json.loads(text), "--json-schema"
        except json.JSONDecodeError as e:
            raise ConstraintError(f"--json-schema is not JSON: {e}") from None
    else:
        return None
    from ..structured.constraints import Constraint  # the grammar library (PyTorch waits for the first mask)

    c = Constraint(kind, spec)
    try:
        c.check()
    except ConstraintError as e:
        raise ConstraintError(f"{option}: {e}") from None
    return c


def read_text(path: str, option: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise ForwardpassError(f"{option}: cannot read {path}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise ForwardpassError(f"{option}: {path} is not UTF-8 text") from None
