"""Tool calling: the request's tools described to the model, its calls constrained or read back out.

The model writes each call as `<tool_call>\\n{"name": …, "arguments": {…}}\\n</tool_call>` (the Hermes / Qwen2.5
convention, which instruction-tuned models of many families were trained on). A chat template that takes `tools`
renders them itself; for one that does not (the default model's), the tools are described in the system message,
in that convention. With `tool_choice` "required" or a named function the output is constrained to one such call
whose arguments validate against the function's parameters (constraints.py); with "auto" the model writes freely
and a reply made of well-formed calls to known functions is read back as calls; with "none" the tools are
described but nothing is parsed. A forced call cut short (max_tokens, a stop string) is still a call, as OpenAI
returns one: its arguments are the JSON text written so far (`read_calls`)."""

from __future__ import annotations

import json
import re
import uuid

from pydantic_core import from_json

from ..errors import ConstraintError
from ..structured.constraints import COMPACT, Constraint
from .quoting import quoted

OPEN, CLOSE = "<tool_call>\n", "\n</tool_call>"
CALLS = re.compile(r"\s*<tool_call>\s*(.*?)\s*</tool_call>\s*", re.S)

SYSTEM = """You can call functions. The functions, as JSON schemas:
<tools>
{tools}
</tools>
To call one, reply with its name and arguments as JSON inside tags, and nothing else:
<tool_call>
{{"name": <function name>, "arguments": <arguments object>}}
</tool_call>"""


def functions(tools: list) -> dict[str, dict]:
    """name → function declaration ({"name", "description", "parameters"}); a name given twice is an error."""
    named: dict[str, dict] = {}
    for tool in tools:
        f = tool.function.model_dump(exclude_none=True)
        if f["name"] in named:
            raise ConstraintError(f"two tools are named {f['name']!r}")
        named[f["name"]] = f
    return named


def render(messages: list[dict], tools: dict[str, dict], template_takes_tools: bool) -> list[dict]:
    """Messages as the chat template reads them: assistant calls and tool results written in the model's
    convention; the tools described in the system message where the template does not take them itself."""
    out = []
    for m in messages:
        m = dict(m)
        if m.get("tool_calls") and not template_takes_tools:
            calls = "".join(f"{OPEN}{json.dumps(call_body(c), ensure_ascii=False)}{CLOSE}" for c in m["tool_calls"])
            m["content"] = (m.get("content") or "") + calls
            del m["tool_calls"]
        if m["role"] == "tool" and not template_takes_tools:
            m["content"] = f"<tool_response>\n{m['content']}\n</tool_response>"
        m.setdefault("content", "")
        if m["content"] is None:
            m["content"] = ""
        out.append(m)
    if tools and not template_takes_tools:
        described = SYSTEM.format(tools="\n".join(json.dumps({"type": "function", "function": f}, ensure_ascii=False)
                                                  for f in tools.values()))
        if out and out[0]["role"] in ("system", "developer"):
            out[0] = out[0] | {"role": "system", "content": out[0]["content"] + "\n\n" + described}
        else:
            out.insert(0, {"role": "system", "content": described})
    return out


def call_body(call: dict) -> dict:
    """An assistant message's tool call ({"function": {"name", "arguments": JSON text}}) as the model writes it."""
    f = call["function"]
    try:
        arguments = json.loads(f["arguments"])
    except json.JSONDecodeError:
        raise ConstraintError(f"the arguments of a tool call to {quoted(f['name'])} are not JSON") from None
    return {"name": f["name"], "arguments": arguments}


SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions")  # name → a schema
SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")  # lists of schemas
SCHEMA_ONES = ("items", "additionalProperties", "not", "contains", "if", "then", "else")  # one schema


def strict(schema):
    """`schema` (a copy) with every object that does not say otherwise closed to the keys it names, as OpenAI's strict
    mode reads a tool's parameters: a forced call's arguments cannot grow keys the tool does not have."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    for key in SCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            out[key] = {name: strict(s) for name, s in out[key].items()}
    for key in SCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [strict(s) for s in out[key]]
    for key in SCHEMA_ONES:
        if isinstance(out.get(key), dict):
            out[key] = strict(out[key])
    is_object = out.get("type") == "object" or "properties" in out
    if is_object and "additionalProperties" not in out and "patternProperties" not in out:
        out["additionalProperties"] = False
    return out


def callable_names(tools: dict[str, dict], choice: str) -> list[str]:
    """The functions a forced call (`choice`: a function's name, or "required") may call."""
    return [choice] if choice != "required" else list(tools)


def head(name: str) -> str:
    """A forced call's text up to its arguments, as its grammar has the model write it (compact, the name first)."""
    return f'{OPEN}{{"name":{json.dumps(name)},"arguments":'


def constraint(tools: dict[str, dict], choice: str | None) -> Constraint | None:
    """The grammar of one call to `choice` (a function's name) or, for "required", to any of the tools, its arguments
    as the tool's parameters allow in strict mode (`strict`)."""
    if choice is None:
        return None
    names = callable_names(tools, choice)
    if not names:
        raise ConstraintError("tool_choice is 'required' but the request has no tools")
    for name in names:
        if name not in tools:
            raise ConstraintError(f"tool_choice names {quoted(name)}, which is not among the tools")
    one_of = [{"type": "object", "properties": {"name": {"const": name},
                                               "arguments": strict(tools[name].get("parameters", {"type": "object"}))},
               "required": ["name", "arguments"], "additionalProperties": False} for name in names]
    schema = (one_of[0] if len(one_of) == 1 else {"anyOf": one_of}) | {"x-guidance": COMPACT}
    return Constraint("grammar", f"start: {json.dumps(OPEN)} call {json.dumps(CLOSE)}\n"
                                 f"call: %json {json.dumps(schema)}")


def parse(text: str, tools: dict[str, dict], parallel: bool = True) -> list[dict] | None:
    """The OpenAI tool_calls a reply makes (without `parallel`, its first only), or None when it is not made of
    well-formed calls to known tools."""
    pos, calls = 0, []
    for m in CALLS.finditer(text):
        if m.start() != pos:
            return None
        pos = m.end()
        try:
            body = json.loads(m.group(1))
        except json.JSONDecodeError:
            return None
        if not isinstance(body, dict) or body.get("name") not in tools or not isinstance(body.get("arguments"), dict):
            return None
        calls.append({"id": call_id(), "type": "function",
                      "function": {"name": body["name"], "arguments": raw_arguments(m.group(1), body["arguments"])}})
    if not calls or pos != len(text):
        return None
    return calls if parallel else calls[:1]


def read_calls(text: str, tools: dict[str, dict], parallel: bool = True,
               forced: str | None = None) -> tuple[list[dict] | None, bool]:
    """The calls a reply makes (`parse`), and whether they are whole. A forced call (`forced`: a function's name or
    "required") that does not parse was cut short: it comes back as the call so far, never as text holding the
    `<tool_call>` wrapper; or as no call ([]) where the text does not yet tell which of the tools it calls."""
    made = parse(text, tools, parallel)
    if made is not None or forced is None:
        return made, made is not None
    cut = cut_call(text, callable_names(tools, forced))
    return ([] if cut is None else [{"id": call_id(), "type": "function",
                                     "function": {"name": cut[0], "arguments": cut[1]}}]), False


def cut_call(text: str, names: list[str]) -> tuple[str, str] | None:
    """A forced call's text cut short: (the function it calls, the arguments text written so far, a prefix of JSON),
    or None while the text may still call more than one of `names` (a name half written)."""
    fits = [n for n in names if head(n).startswith(text) or text.startswith(head(n))]
    if len(fits) != 1:
        return None
    return fits[0], cut_arguments(text[len(head(fits[0])):])


def cut_arguments(text: str) -> str:
    """The arguments in a cut call's text after its head: all of it, or the arguments alone where they are whole and
    only the closing `}` and tag were cut."""
    try:
        _, end = json.JSONDecoder().raw_decode(text)
    except json.JSONDecodeError:
        return text
    return text[:end]


def arguments_value(arguments: str):
    """A call's arguments text as JSON: for a call cut short (a prefix of JSON), as much as it holds, its unfinished
    last value left out (`{"city":"Par` is `{}`)."""
    try:
        return json.loads(arguments)
    except json.JSONDecodeError:
        return from_json(arguments or "{}", allow_partial=True)


def call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


ARGUMENTS = re.compile(r'"arguments"\s*:\s*')


def raw_arguments(body: str, arguments: dict) -> str:
    """The arguments object as the model wrote it: its own JSON text, as a stream sends it piece by piece."""
    for m in ARGUMENTS.finditer(body):
        try:
            value, end = json.JSONDecoder().raw_decode(body, m.end())
        except json.JSONDecodeError:
            continue
        if value == arguments:
            return body[m.end():end]
    return json.dumps(arguments, ensure_ascii=False)


class ForcedCallStream:
    """A forced call streamed as OpenAI streams calls: a first delta with the call's id and name once the name is
    written, then the arguments text as it comes, holding back only what may be the closing `}` and tag. `names`:
    the functions it may call (`callable_names`)."""

    HEAD = re.compile(r'<tool_call>\n\{"name":("(?:[^"\\]|\\.)*"),"arguments":')
    TAIL = len("}" + CLOSE)

    def __init__(self, names: list[str]):
        self.text, self.id, self.start, self.sent, self.names = "", call_id(), None, 0, names

    def feed(self, text: str) -> list[dict]:
        """The tool_calls deltas this much more text allows."""
        self.text += text
        out = []
        if self.start is None:
            m = self.HEAD.match(self.text)
            if m is None:
                return out
            self.start = m.end()
            out.append({"index": 0, "id": self.id, "type": "function",
                        "function": {"name": json.loads(m.group(1)), "arguments": ""}})
        ready = len(self.text) - self.TAIL
        if ready > self.start + self.sent:
            out.append({"index": 0, "function": {"arguments": self.text[self.start + self.sent:ready]}})
            self.sent = ready - self.start
        return out

    def finish(self, complete: bool) -> list[dict]:
        """The last deltas: the rest of the arguments, without the closing tail when the call is complete. A call cut
        short sends its arguments as far as they were written (`cut_call`), after its id and name where they were
        not sent yet; none where the text does not tell which function it calls."""
        out, end = [], len(self.text) - self.TAIL
        if not complete:
            cut = cut_call(self.text, self.names)
            if cut is None:
                return out
            name, arguments = cut
            if self.start is None:
                out.append({"index": 0, "id": self.id, "type": "function", "function": {"name": name, "arguments": ""}})
                self.start = len(head(name))
            end = self.start + len(arguments)  # never before what was sent: held back is more than the cut tail
        rest = self.text[self.start + self.sent:end]
        self.sent += len(rest)
        return out + ([{"index": 0, "function": {"arguments": rest}}] if rest else [])
