"""A streamed chat reply from `forwardpass serve`, through the official openai client.

    .venv/bin/forwardpass serve                 # in another terminal
    .venv/bin/python examples/openai_chat.py "Name a fruit."

FORWARDPASS_URL (default http://127.0.0.1:8000/v1) says where the server is, FORWARDPASS_API_KEY the key it was
started with (--api-key), FORWARDPASS_MODEL the model id (default: the first the server lists)."""

from __future__ import annotations

import os
import sys

import openai

URL = os.environ.get("FORWARDPASS_URL", "http://127.0.0.1:8000/v1")


def main() -> int:
    question = " ".join(sys.argv[1:]) or "Name a fruit."
    client = openai.OpenAI(base_url=URL, api_key=os.environ.get("FORWARDPASS_API_KEY", "none"), max_retries=0)
    model = os.environ.get("FORWARDPASS_MODEL") or client.models.list().data[0].id
    stream = client.chat.completions.create(model=model, messages=[{"role": "user", "content": question}],
                                            max_tokens=48, temperature=0, stream=True)
    finish = None
    for chunk in stream:
        for choice in chunk.choices:
            print(choice.delta.content or "", end="", flush=True)
            finish = choice.finish_reason or finish
    print(f"\n[{model}, finish: {finish}]", file=sys.stderr)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except openai.APIConnectionError:
        sys.exit(f"openai_chat.py: no server at {URL} (start one: .venv/bin/forwardpass serve)")
    except openai.APIError as e:
        sys.exit(f"openai_chat.py: the server refused the request: {e.message}")
