"""A reply that is JSON valid against examples/person.schema.json (the server enforces the schema while it decodes),
through the official openai client's response_format.

    .venv/bin/forwardpass serve                 # in another terminal
    .venv/bin/python examples/openai_structured.py

FORWARDPASS_URL (default http://127.0.0.1:8000/v1), FORWARDPASS_API_KEY and FORWARDPASS_MODEL as in openai_chat.py."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import openai

URL = os.environ.get("FORWARDPASS_URL", "http://127.0.0.1:8000/v1")
SCHEMA = json.loads((Path(__file__).parent / "person.schema.json").read_text())


def main() -> int:
    client = openai.OpenAI(base_url=URL, api_key=os.environ.get("FORWARDPASS_API_KEY", "none"), max_retries=0)
    model = os.environ.get("FORWARDPASS_MODEL") or client.models.list().data[0].id
    reply = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "A person, as JSON."}], max_tokens=48, temperature=0,
        response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": SCHEMA}})
    choice = reply.choices[0]
    if choice.finish_reason != "stop":  # cut short by max_tokens: the JSON is unfinished
        sys.exit(f"openai_structured.py: the reply stopped at {choice.finish_reason!r}: {choice.message.content!r}")
    person = json.loads(choice.message.content)
    print(json.dumps(person))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except openai.APIConnectionError:
        sys.exit(f"openai_structured.py: no server at {URL} (start one: .venv/bin/forwardpass serve)")
    except openai.APIError as e:
        sys.exit(f"openai_structured.py: the server refused the request: {e.message}")
