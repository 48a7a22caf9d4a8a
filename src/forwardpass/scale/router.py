"""Which replica takes a request. A replica keeps the prompt blocks it has computed (its prefix cache), so a request
that begins as an earlier one did (the same system prompt, the next turn of a chat) is cheapest where that one went.

prompt_keys.py reads a request's prompt as text in order and hashes each prefix of it, like a block table's chained
block hashes. `PrefixRouter` remembers which prefixes it sent where and sends a request
to the replica holding its longest prefix, unless that replica has `imbalance` more requests queued than the least
loaded; a prompt no replica has seen goes to the least loaded, ties to the one holding the fewest prefixes (so new
conversations spread their caches evenly even when queues are empty), then the less loaded of two at random (Ray
Serve's default, power of two choices). `RoundRobinRouter` is the baseline it is measured against."""

from __future__ import annotations

import random
from collections import OrderedDict

from ray.serve.request_router import FIFOMixin, PendingRequest, ReplicaID, RequestRouter, RunningReplica

REMEMBERED = 8192  # prefix hashes kept per replica, least recently used forgotten first


class PrefixRouter(FIFOMixin, RequestRouter):
    """Longest cached prefix first, within `imbalance` queued requests of the least loaded replica."""

    def initialize_state(self, imbalance: int = 4, **kwargs) -> None:
        self.imbalance = imbalance
        self.seen: dict[ReplicaID, OrderedDict[str, None]] = {}

    def matched(self, replica: RunningReplica, hashes: list[str]) -> int:
        seen = self.seen.get(replica.replica_id)
        n = 0
        while seen is not None and n < len(hashes) and hashes[n] in seen:
            n += 1
        return n

    def load(self, replica: RunningReplica) -> int:
        return self.replica_queue_len_cache.get(replica.replica_id) or 0

    async def choose_replicas(self, candidate_replicas: list[RunningReplica],
                              pending_request: PendingRequest | None = None) -> list[list[RunningReplica]]:
        if not candidate_replicas:
            return []
        two = random.sample(candidate_replicas, min(2, len(candidate_replicas)))
        hashes = pending_request.kwargs.get("prefix", []) if pending_request is not None else []
        if not hashes:
            return [two]
        best = max(candidate_replicas, key=lambda r: (self.matched(r, hashes), -self.load(r)))
        least = min(self.load(r) for r in candidate_replicas)
        if self.matched(best, hashes) and self.load(best) <= least + self.imbalance:
            return [[best], two]
        emptiest = min(candidate_replicas, key=lambda r: (self.load(r), len(self.seen.get(r.replica_id, ())),
                                                          random.random()))
        return [[emptiest], two]

    def on_request_routed(self, pending_request: PendingRequest, replica_id: ReplicaID, result) -> None:
        seen = self.seen.setdefault(replica_id, OrderedDict())
        for h in pending_request.kwargs.get("prefix", []):
            seen[h] = None
            seen.move_to_end(h)
        while len(seen) > REMEMBERED:
            seen.popitem(last=False)

    def on_replica_actor_died(self, replica_id: ReplicaID) -> None:
        super().on_replica_actor_died(replica_id)
        self.seen.pop(replica_id, None)  # its replacement starts with an empty cache


class RoundRobinRouter(FIFOMixin, RequestRouter):
    """Each replica in turn, whatever the request: the baseline for prefix routing."""

    def initialize_state(self, **kwargs) -> None:
        self.turn = 0

    async def choose_replicas(self, candidate_replicas: list[RunningReplica],
                              pending_request: PendingRequest | None = None) -> list[list[RunningReplica]]:
        if not candidate_replicas:
            return []
        ordered = sorted(candidate_replicas, key=lambda r: r.replica_id.unique_id)
        chosen = ordered[self.turn % len(ordered)]
        self.turn += 1
        return [[chosen]]


ROUTERS = {"prefix": f"{__name__}:PrefixRouter", "round-robin": f"{__name__}:RoundRobinRouter",
           "pow2": None}  # Ray Serve's own default
