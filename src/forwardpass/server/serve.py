"""The API under uvicorn, shut down gently: on SIGTERM (or Ctrl-C) the engine admits nothing more, requests in
flight get `grace` seconds to finish, the rest end with a final event that says why, and the process exits. The
grace is kept on the event loop itself (GraceOver): each open response ends when it is over, a few seconds before
uvicorn would cancel what is still open, however long the engine's current step takes."""

from __future__ import annotations

import uvicorn
from fastapi import FastAPI

from ..engine import Engine


class Server(uvicorn.Server):
    """uvicorn's server, with the engine told to drain when the process is asked to stop."""

    def __init__(self, config: uvicorn.Config, app: FastAPI, engine: Engine, grace: float):
        super().__init__(config)
        self.app, self.engine, self.grace = app, engine, grace

    def handle_exit(self, sig, frame) -> None:
        self.engine.drain(self.grace)
        self.app.state.grace_over.begin(self.grace)
        super().handle_exit(sig, frame)


def make_server(app: FastAPI, engine: Engine, host: str, port: int, grace: float = 5.0) -> Server:
    """A server for `app` over `engine`; uvicorn itself gives up waiting on connections a little after `grace`."""
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=int(grace) + 3)
    return Server(config, app, engine, grace)
