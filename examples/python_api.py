"""forwardpass from Python, no server: load the default model, stream a chat reply, then complete a prompt.

    .venv/bin/python examples/python_api.py "Name a fruit."

FORWARDPASS_MODEL: another model (a .gguf file, a safetensors checkpoint, or gemma3-270m; a base model without a chat
template only completes)."""

from __future__ import annotations

import os
import sys

import forwardpass


def main() -> int:
    question = " ".join(sys.argv[1:]) or "Name a fruit."
    fp = forwardpass.load(os.environ.get("FORWARDPASS_MODEL"))
    if fp.tokenizer is not None and fp.tokenizer.chat_template:
        reply = fp.chat([{"role": "user", "content": question}], stream=True, temperature=0, max_tokens=48)
        for piece in reply:  # text as it is produced
            print(piece, end="", flush=True)
        print()
        print(f"[chat: {len(reply.result.token_ids)} tokens, stop: {reply.result.stop_reason}]", file=sys.stderr)
    done = fp.complete("The three primary colors are", temperature=0, max_tokens=16)
    print("The three primary colors are" + done.text)
    print(f"[complete: {done.decode_tokens_per_s:.0f} tokens/s, stop: {done.stop_reason}]", file=sys.stderr)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except forwardpass.ForwardpassError as e:
        sys.exit(f"python_api.py: {e}")
