"""Error bodies with the right status: OpenAI's {"error": {"message", "type", "param", "code"}}, or on the
Messages API Anthropic's {"type": "error", "error": {"type", "message"}}."""

from __future__ import annotations

import json

from fastapi.responses import JSONResponse

TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
         405: "invalid_request_error", 413: "invalid_request_error", 500: "server_error", 503: "server_error",
         504: "server_error"}


# Anthropic's error types by status
ANTHROPIC_TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
                   405: "invalid_request_error", 413: "request_too_large", 500: "api_error", 503: "overloaded_error",
                   504: "api_error"}
# where a status's type would mislead: a model that could not be loaded is no overload that passes
ANTHROPIC_CODE_TYPES = {"model_load_failed": "api_error"}


class APIError(Exception):
    def __init__(self, status: int, message: str, code: str | None = None, param: str | None = None,
                 headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.message, self.code, self.param = status, message, code, param
        self.headers = headers or {}

    def body(self, anthropic: bool = False) -> dict:
        if anthropic:
            kind = ANTHROPIC_CODE_TYPES.get(self.code) or ANTHROPIC_TYPES.get(self.status, "invalid_request_error")
            return {"type": "error", "error": {"type": kind, "message": self.message}}
        return {"error": {"message": self.message, "type": TYPES.get(self.status, "invalid_request_error"),
                          "param": self.param, "code": self.code}}

    def event(self, anthropic: bool = False) -> str:
        """The error as the server-sent event that ends a stream, as each API's own streams report one."""
        data = json.dumps(self.body(anthropic), ensure_ascii=False)
        return f"event: error\ndata: {data}\n\n" if anthropic else f"data: {data}\n\n"

    def response(self, anthropic: bool = False) -> JSONResponse:
        return JSONResponse(self.body(anthropic), status_code=self.status, headers=self.headers)
