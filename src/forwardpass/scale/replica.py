"""One engine replica: the single server (its engine and every route) inside a Ray Serve replica. The ingress
forwards each HTTP request to `forward`, which runs it through the server's own app and streams the response back;
the replica posts its Prometheus text to the board every `REPORT_EVERY` seconds, and fails Serve's health check
once its engine loop has failed, so Ray replaces it."""

from __future__ import annotations

import os
import threading
import time

import ray
from ray import serve

from . import asgi
from .hosted import HostedEngine, ReplicaSpec

REPORT_EVERY = 0.5  # seconds between metric reports to the board
NAMESPACE = "forwardpass"  # the board's: each command that joins a cluster runs in a namespace of its own, and the
# replicas in that of the command that started Serve


@ray.remote(num_cpus=0)
class Board:
    """The replicas' latest metrics: replica id → (pid, monotonic time posted, Prometheus text)."""

    def __init__(self):
        self.posts: dict[str, tuple[int, float, str]] = {}

    def post(self, replica: str, pid: int, text: str) -> None:
        self.posts[replica] = (pid, time.monotonic(), text)

    def read(self, within: float) -> dict[str, tuple[int, str]]:
        """Posts younger than `within` seconds (an older one's replica is gone)."""
        now = time.monotonic()
        return {r: (pid, text) for r, (pid, t, text) in self.posts.items() if now - t <= within}


class EngineReplica:
    def __init__(self, spec: ReplicaSpec):
        self.id = serve.get_replica_context().replica_id.unique_id
        self.hosted = HostedEngine(spec)
        self.engine, self.app = self.hosted.engine, self.hosted.app
        self.board = ray.get_actor(spec.board, namespace=NAMESPACE)
        threading.Thread(target=self._report, name="forwardpass-report", daemon=True).start()

    def _report(self) -> None:
        while not self.hosted.closing.is_set():
            try:
                self.board.post.remote(self.id, os.getpid(), self.engine.metrics.render().decode())
            except Exception:  # noqa: BLE001 — the board is gone with the cluster; nothing left to tell
                return
            self.hosted.closing.wait(REPORT_EVERY)

    async def forward(self, request: asgi.Forwarded, prefix: list[str] | None = None):
        """The response to `request`: (status, headers, first piece), then the further pieces. `prefix` (the prompt's
        prefix hashes) is for the router."""
        async for piece in asgi.call(self.app, request):
            yield piece

    def check_health(self) -> None:
        if self.engine.failure is not None:
            raise RuntimeError(f"the engine stopped after an internal error: {self.engine.failure}")

    def __del__(self) -> None:
        """Serve is stopping this replica: requests in flight get the grace period, then the loop ends."""
        if getattr(self, "hosted", None) is not None:
            self.hosted.close()
