"""A reply streamed through OpenAI's Responses API from `forwardpass serve`, with the official openai client, then a
second turn that continues it by previous_response_id.

    .venv/bin/forwardpass serve                 # in another terminal
    .venv/bin/python examples/openai_responses.py "Name a fruit."

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
    with client.responses.stream(model=model, input=question, max_output_tokens=48, temperature=0) as stream:
        for event in stream:
            if event.type == "response.output_text.delta":
                print(event.delta, end="", flush=True)
        first = stream.get_final_response()
    print()
    print(f"[{model}, {first.status}, {first.usage.input_tokens} tokens in, {first.usage.output_tokens} out]",
          file=sys.stderr)
    then = client.responses.create(model=model, input="Say it again, shorter.", previous_response_id=first.id,
                                   max_output_tokens=48, temperature=0)
    print(then.output_text)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except openai.APIConnectionError:
        sys.exit(f"openai_responses.py: no server at {URL} (start one: .venv/bin/forwardpass serve)")
    except openai.APIError as e:
        sys.exit(f"openai_responses.py: the server refused the request: {e.message}")
