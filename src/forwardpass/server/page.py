"""The chat page at GET /: a conversation with the served models from the browser, over the API's own routes
(/v1/models, and /v1/chat/completions streamed). Its static files (page/) need no network, and the page itself
needs no key: its requests to the API carry the key the user gives it. The Content-Security-Policy lets the page
reach this server only."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse
from starlette.exceptions import HTTPException

PAGE = Path(__file__).parent / "page"
TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
         ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}
# everything from this server only; no inline scripts or styles, no plugins, no <base>, no form posts, no framing
POLICY = "default-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
HEADERS = {"Content-Security-Policy": POLICY, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
           "Cache-Control": "no-cache"}  # revalidated (ETag) each time: a newer server's page is never stale


def router() -> APIRouter:
    r = APIRouter()
    files = {p.name: p for p in PAGE.iterdir() if p.suffix in TYPES}  # served by name only: no path reaches past it

    def send(name: str) -> FileResponse:
        return FileResponse(files[name], media_type=TYPES[files[name].suffix], headers=HEADERS)

    @r.get("/", include_in_schema=False)
    async def index() -> FileResponse:
        return send("index.html")

    @r.get("/page/{name}", include_in_schema=False)
    async def static(name: str) -> FileResponse:
        if name not in files:
            raise HTTPException(404)  # answered as every unknown path is (app.py)
        return send(name)

    return r
