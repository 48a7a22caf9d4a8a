"""A model's chat template rendered (Jinja, sandboxed, with Hugging Face's conventions: `messages`, `tools`,
`add_generation_prompt`, `bos_token`, `eos_token`, `raise_exception`), and the marks that stand in for special tokens
written in a chat's strings while it renders (Tokenizer.encode_chat)."""

from __future__ import annotations

import re
from collections.abc import Callable

from ..errors import UnsupportedModelError


def render_chat(template: str, messages: list[dict], add_generation_prompt: bool, tools: list[dict] | None,
                bos_token: str, eos_token: str) -> str:
    """`template` rendered over `messages` ({'role', 'content'} dicts), and `tools` (OpenAI tool declarations)
    where given."""
    import jinja2.sandbox  # here: a command that renders no chat never loads Jinja

    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                                        extensions=["jinja2.ext.loopcontrols"])
    env.globals["raise_exception"] = _raise_template_error
    try:
        compiled = env.from_string(template)
        return compiled.render(messages=messages, add_generation_prompt=add_generation_prompt,
                               bos_token=bos_token, eos_token=eos_token, **({"tools": tools} if tools else {}))
    except jinja2.TemplateError as e:
        raise UnsupportedModelError(f"the model's chat template failed: {e}") from None


def marked(value, special: re.Pattern, mark: Callable[[re.Match], str]):
    """`value` (a string, or dicts and lists holding them, as a chat's messages and tools are; anything else as it
    is) with each match of `special` in its strings replaced by mark(match)."""
    if isinstance(value, str):
        return special.sub(mark, value)
    if isinstance(value, dict):
        return {k: marked(v, special, mark) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [marked(v, special, mark) for v in value]
    return value


def _raise_template_error(message: str):
    import jinja2

    raise jinja2.TemplateError(message)
