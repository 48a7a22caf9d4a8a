"""`forwardpass` command line: one subcommand per job, each with --json for scripts."""

from __future__ import annotations

import argparse
import json
import os
import sys

from ..config import KV_CACHE_DTYPES, STORAGE_MODES
from ..errors import ForwardpassError
from . import batch_cmd, chat_cmd, cost_cmd, embed_cmd, explore_cmd, generate_cmd, inspect_cmd, serve_cmd
from .options import add_device_option, add_threads_option, apply_threads


def add_model_options(p: argparse.ArgumentParser) -> None:
    """Options of every command that runs the model."""
    p.add_argument("--model", metavar="PATH",
                   help="a .gguf file or safetensors checkpoint, or gemma3-270m (default: the embedded "
                        "SmolLM2-135M-Instruct)")
    add_device_option(p)
    add_threads_option(p)
    p.add_argument("--json", action="store_true", help="print one JSON object instead of tables")


def add_storage_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--storage", default="stored", choices=STORAGE_MODES,
                   help="weights: stored (default: as the file stores them), fp32, bf16, fp16, int8 or q4 (8- or "
                        "4-bit blocks, native decode kernels)")
    p.add_argument("--kv-cache-dtype", default="auto", choices=KV_CACHE_DTYPES,
                   help="the engine's KV cache: auto (default: the model's dtype), float32, or float16 (half the "
                        "memory and the bytes attention reads)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="forwardpass", description="A transformer inference engine you can read.")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in (generate_cmd, chat_cmd, inspect_cmd, cost_cmd, serve_cmd, explore_cmd, batch_cmd):
        p = module.add_parser(sub)
        add_model_options(p)
        if module is not cost_cmd:
            add_storage_option(p)
        p.set_defaults(run=module.run)
    p = embed_cmd.add_parser(sub)  # its own --model: an embedding model
    add_device_option(p)
    add_threads_option(p)
    p.set_defaults(run=embed_cmd.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        apply_threads(args)
        return args.run(args) or 0
    except BrokenPipeError:  # the reader went away (`| head`): nothing left to say, and no one to say it to
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's own flush at exit must not fail
        return 141  # as a shell reports a process ended by SIGPIPE
    except (ForwardpassError, OSError) as e:  # OSError: a file or socket the user named (its message names it)
        if getattr(args, "json", False):
            print(json.dumps({"error": str(e), "type": type(e).__name__}))
        print(f"forwardpass: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
