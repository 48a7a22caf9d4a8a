"""A streamed reply from `forwardpass serve`'s Messages API, through the official anthropic client.

    .venv/bin/forwardpass serve                 # in another terminal
    .venv/bin/python examples/anthropic_messages.py "Name a fruit."

FORWARDPASS_URL (default http://127.0.0.1:8000/v1) says where the server is (the anthropic client adds /v1 itself),
FORWARDPASS_API_KEY the key it was started with (--api-key), FORWARDPASS_MODEL the model id (default: the first the
server lists). This client sends no temperature: the server's own applies (`serve --temperature 0`: greedy)."""

from __future__ import annotations

import os
import sys

import anthropic

URL = os.environ.get("FORWARDPASS_URL", "http://127.0.0.1:8000/v1")


def main() -> int:
    question = " ".join(sys.argv[1:]) or "Name a fruit."
    client = anthropic.Anthropic(base_url=URL.removesuffix("/").removesuffix("/v1"),
                                 api_key=os.environ.get("FORWARDPASS_API_KEY", "none"), max_retries=0)
    model = os.environ.get("FORWARDPASS_MODEL") or client.models.list().data[0].id
    with client.messages.stream(model=model, max_tokens=48, system="You answer in one short sentence.",
                                messages=[{"role": "user", "content": question}]) as stream:
        for text in stream.text_stream:
            print(text, end="", flush=True)
        reply = stream.get_final_message()
    print(f"\n[{model}, stop: {reply.stop_reason}, {reply.usage.input_tokens} tokens in, "
          f"{reply.usage.output_tokens} out]", file=sys.stderr)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except anthropic.APIConnectionError:
        sys.exit(f"anthropic_messages.py: no server at {URL} (start one: .venv/bin/forwardpass serve)")
    except anthropic.APIError as e:
        sys.exit(f"anthropic_messages.py: the server refused the request: {e.message}")
