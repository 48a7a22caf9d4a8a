"""Sampling options shared by `generate` and `chat`, named as the OpenAI API names them."""

from __future__ import annotations

import argparse

from ..sampling import SamplingParams


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


def sampling_params(args) -> SamplingParams:
    """Validated parameters (a clear error before the model loads)."""
    return SamplingParams(
        temperature=args.temperature, top_k=args.top_k, top_p=args.top_p, min_p=args.min_p, seed=args.seed,
        stop=args.stop, repetition_penalty=args.repetition_penalty, presence_penalty=args.presence_penalty,
        frequency_penalty=args.frequency_penalty, max_tokens=args.max_tokens, logprobs=args.logprobs)
