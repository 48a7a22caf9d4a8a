"""What a request that leaves out a sampling field gets: the server's flag (`serve --temperature …`), else the model
file's recommended value (a GGUF's general.sampling.*, in its metadata's "sampling": weights/gguf.py), else
llama-server's default. A field the request sets is its own. Each name here is the request field's."""

from __future__ import annotations

# llama-server's defaults: a small model sampled at temperature 1 over its whole vocabulary wanders off
FALLBACK = {"temperature": 0.8, "top_k": 40, "top_p": 0.95, "min_p": 0.05, "repetition_penalty": 1.0}
FLAGS = {"temperature": "--temperature", "top_k": "--top-k", "top_p": "--top-p", "min_p": "--min-p",
         "repetition_penalty": "--repeat-penalty"}


def server_sampling(flags: dict, file: dict) -> dict:
    """Each field's default for requests that omit it: the flag given (not None), else the file's, else FALLBACK."""
    return {f: flags[f] if flags.get(f) is not None else file.get(f, FALLBACK[f]) for f in FALLBACK}


def applied(req, defaults: dict) -> dict:
    """The sampling fields, each `req`'s own (a request body) where it set it, else `defaults`', else the body's own
    default (a field its API lacks, as Messages' min_p, takes `defaults`' too)."""
    out = {f: defaults[f] for f in FALLBACK if f in defaults}
    return out | {f: getattr(req, f) for f in FALLBACK
                  if f in type(req).model_fields and (f in req.model_fields_set or f not in defaults)}
