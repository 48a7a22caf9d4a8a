"""`forwardpass` command line: one subcommand per job, each with --json for scripts."""

from __future__ import annotations

import argparse
import json
import os
import sys

from ..config import ACTIVATIONS, KV_CACHE_DTYPES, STORAGE_MODES
from ..errors import ForwardpassError
from . import batch_cmd, chat_cmd, cost_cmd, embed_cmd, explore_cmd, generate_cmd, inspect_cmd, serve_cmd
from .options import add_device_option, add_threads_option, apply_threads, checked
from .prompt_cache_options import add_prompt_cache_options, check_prompt_cache

# --ctx-size: 0 keeps the model's own context
context_size = checked(int, lambda v: v >= 0, "a number of tokens ≥ 0 (0: the model's own context)")


def add_model_options(p: argparse.ArgumentParser, many: bool = False) -> None:
    """Options of every command that runs the model (`many`: --model may be given again, for several)."""
    what = "a .gguf file, a safetensors checkpoint, or an installed name: smollm2-135m (the default) or gemma3-270m"
    if many:
        p.add_argument("--model", metavar="PATH", action="append",
                       help=what + "; again for several, each served under the name typed, or ALIAS=PATH under ALIAS")
    else:
        p.add_argument("--model", metavar="PATH", help=what)
    add_device_option(p)
    add_threads_option(p)
    p.add_argument("--json", action="store_true", help="print one JSON object instead of tables")


def add_storage_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--storage", default="stored", choices=STORAGE_MODES,
                   help="weights: stored (default: as the file stores them), fp32, bf16, fp16, int8 or q4 (8- or "
                        "4-bit blocks, native decode kernels)")
    p.add_argument("--kv-cache-dtype", default="auto", choices=KV_CACHE_DTYPES,
                   help="the engine's KV cache: auto (default: float16 where the weights are quantized blocks, else "
                        "the model's dtype: float32 for --storage fp32), float32, float16 (half the memory and the "
                        "bytes attention reads), or q8_0 (8-bit blocks of 32 with a float16 scale: 34 bytes per 32 "
                        "numbers, about 1.9 times float16's tokens in the same memory)")
    p.add_argument("--activations", default="exact", choices=ACTIVATIONS,
                   help="how products with integer weights quantize their inputs: exact (default: 15 bits, the "
                        "float32 reference's tokens) or q8 (8-bit blocks of 32 as llama.cpp does: one integer "
                        "product per weight byte, faster prefill and batches, logits within about 1%%)")
    p.add_argument("-c", "--ctx-size", type=context_size, default=0, metavar="N",
                   help="the most tokens a sequence holds, prompt and reply together: at most the model's trained "
                        "context (default 0: all of it)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="forwardpass", description="A transformer inference engine you can read.")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in (generate_cmd, chat_cmd, inspect_cmd, cost_cmd, serve_cmd, explore_cmd, batch_cmd):
        p = module.add_parser(sub)
        add_model_options(p, many=module in (serve_cmd, batch_cmd, explore_cmd))
        if module is not cost_cmd:
            add_storage_option(p)
        if module in (generate_cmd, chat_cmd, serve_cmd, batch_cmd):
            add_prompt_cache_options(p)
        p.set_defaults(run=module.run)
    p = embed_cmd.add_parser(sub)  # its own --model: an embedding model
    add_device_option(p)
    add_threads_option(p)
    p.set_defaults(run=embed_cmd.run)
    return parser


def check_ctx_size(args: argparse.Namespace) -> None:
    """A --ctx-size past the model's trained context is refused now, from the file's metadata, before PyTorch loads
    (load() refuses it too: this says so with the option's name, without the wait)."""
    if getattr(args, "ctx_size", 0):
        from ..catalog import specs
        from ..weights import read_config
        listed = specs(args.model if isinstance(args.model, list) else [args.model] if args.model else None)
        for spec in listed:
            trained = read_config(spec.path).context_length
            if args.ctx_size > trained:
                raise ForwardpassError(f"--ctx-size {args.ctx_size} exceeds the model's trained context length "
                                       f"{trained}" + (f" ({spec.id})" if len(listed) > 1 else ""))


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        apply_threads(args)
        check_ctx_size(args)
        check_prompt_cache(args)
        return args.run(args) or 0
    except BrokenPipeError:  # the reader went away (`| head`): nothing left to say, and no one to say it to
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's own flush at exit must not fail
        return 141  # as a shell reports a process ended by SIGPIPE
    except (ForwardpassError, OSError) as e:  # OSError: a file or socket the user named (its message names it)
        if getattr(args, "json", False):
            print(json.dumps({"error": str(e), "type": type(e).__name__}))
        print(f"forwardpass: error: {e}", file=sys.stderr)
        return 2
    except ImportError as e:
        if (e.name or "").partition(".")[0] != "torch":
            raise
        from ..devices import INSTALL_TORCH

        message = f"{args.command} with these options needs PyTorch, which cannot be imported ({e}): {INSTALL_TORCH}"
        if getattr(args, "json", False):
            print(json.dumps({"error": message, "type": "ImportError"}))
        print(f"forwardpass: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
