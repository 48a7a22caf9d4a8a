"""OpenAI-style error bodies: {"error": {"message", "type", "param", "code"}} with the right status."""

from __future__ import annotations

from fastapi.responses import JSONResponse

TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
         413: "invalid_request_error", 422: "invalid_request_error", 500: "server_error", 503: "server_error",
         504: "server_error"}


class APIError(Exception):
    def __init__(self, status: int, message: str, code: str | None = None, param: str | None = None):
        super().__init__(message)
        self.status, self.message, self.code, self.param = status, message, code, param

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": TYPES.get(self.status, "invalid_request_error"),
                          "param": self.param, "code": self.code}}

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status)
