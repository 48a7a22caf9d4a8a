"""A request's body, read no further than a limit (a declared or actual size over it is a 413), and its validation
errors as the 400 that names the field at fault."""

from __future__ import annotations

from pydantic import ValidationError
from starlette.requests import Request

from .errors import APIError
from .quoting import cut, quoted, shown

BOUNDS = {"greater_than": ("gt", ">"), "greater_than_equal": ("ge", "≥"), "less_than": ("lt", "<"),
          "less_than_equal": ("le", "≤")}


async def read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise APIError(413, f"request body of {declared} bytes exceeds the limit of {limit}")
    raw = b""
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > limit:
            raise APIError(413, f"request body exceeds the limit of {limit} bytes")
    return raw


def location(error: dict, data) -> list[str | int]:
    """Where in the body `error` is, as the keys and indices that reach it. pydantic's own location also names
    each union member it tried ("str", "list[int]", "TextBlock", …): those address nothing in the body and are
    left out. A field the body lacks is the last part of a "missing" error. A validator that checks several
    fields together names the one at fault in its error's context as "field" (dotted, from where it ran)."""
    path, here, loc = [], data, error["loc"]
    for k, part in enumerate(loc):
        if isinstance(here, dict) and part in here:
            here = here[part]
        elif isinstance(here, list) and isinstance(part, int) and 0 <= part < len(here):
            here = here[part]
        elif not (k == len(loc) - 1 and error["type"] == "missing"):
            continue
        path.append(part)
    field = (error.get("ctx") or {}).get("field")
    return path + field.split(".") if field else path


def refusal(e: ValidationError, data, unsupported: dict[str, str]) -> APIError:
    """The 400 for a body that does not validate, naming the field (`param`) of the error that reaches deepest
    into the body (inside a union, the member the value was meant for); an unknown field first. The field's name
    may be a key the client made up, of any length: it is cut, and escaped where the message names it."""
    found = [(location(error, data), error) for error in e.errors()]
    path, error = min(found, key=lambda f: (f[1]["type"] != "extra_forbidden", -len(f[0])))
    where = ".".join(str(p) for p in path)
    kind, ctx, field = error["type"], error.get("ctx") or {}, cut(where)
    if kind == "extra_forbidden":
        why = unsupported.get(where, "not a field of this API")
        return APIError(400, f"unsupported field {quoted(where)}: {why}", "unsupported_field", field)
    if kind in BOUNDS:
        key, sign = BOUNDS[kind]
        message = f"{shown(where)} must be {sign} {ctx[key]}, got {cut(str(error['input']))}"
    elif kind == "model_type":
        message = f"{shown(where) or 'the request body'} must be a JSON object"
    else:  # a validator's ValueError is its own words, without pydantic's "Value error, " before them
        message = f"{shown(where) or 'the request body'}: {ctx['error'] if kind == 'value_error' else error['msg']}"
    return APIError(400, message, "unsupported_value" if kind == "unsupported_value" else None, field or None)
