"""Start the replicas: join a Ray cluster (or start a local one that ends with the command), start Ray Serve's HTTP
proxy on the address asked for, and deploy the ingress in front of `replicas` engine replicas of `threads` CPU
threads each (the kernels' OpenMP team and PyTorch's both set to it, so replicas do not oversubscribe the cores)."""

from __future__ import annotations

import logging
import os
import signal
from dataclasses import dataclass, replace

import ray
from ray import serve

from ..errors import ForwardpassError
from .hosted import ReplicaSpec
from .replica import NAMESPACE, Board

APP = "forwardpass"


@dataclass
class Cluster:
    address: str  # the OpenAI base URL
    started_ray: bool  # a local cluster this command started (and stops)
    board: object  # the metrics board's handle, held for as long as the replicas post to it

    def stop(self) -> None:
        """Take the application down (each replica drains for its grace period), then the cluster if ours."""
        try:
            serve.delete(APP)
            if self.started_ray:
                serve.shutdown()
        finally:
            if self.started_ray:
                ray.shutdown()


def join(ray_address: str | None, replicas: int, threads: int) -> bool:
    """Connect to the cluster at `ray_address`, or start a local one (True: this command stops it), with CPUs for
    `replicas` × `threads`. A cluster `ray start` left running here is joined only when named (`auto`). The
    caller's signal handlers are kept (Ray would take SIGTERM)."""
    started = not ray.is_initialized() and ray_address is None
    need = replicas * threads
    if started and need > (os.cpu_count() or 1):
        raise ForwardpassError(f"{replicas} replicas × {threads} threads need {need} CPUs; this machine has "
                               f"{os.cpu_count()} (give fewer, or --ray-address to use a cluster)")
    if not ray.is_initialized():
        handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            ray.init(address=ray_address or "local", include_dashboard=False, log_to_driver=False,
                     logging_level=logging.WARNING, configure_logging=False,
                     **({} if ray_address else {"num_cpus": os.cpu_count()}))
        except (ConnectionError, RuntimeError, ValueError) as e:
            hint = ("; a cluster with token authentication (Ray's default) is joined at an address only with "
                    "RAY_AUTH_MODE=token" if ray_address not in (None, "auto") and "RAY_AUTH_MODE" not in os.environ
                    else "")
            raise ForwardpassError(f"cannot join the Ray cluster at {ray_address}: {e}{hint}") from None
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    have = ray.cluster_resources().get("CPU", 0)
    if need > have:
        if started:
            ray.shutdown()
        raise ForwardpassError(f"{replicas} replicas × {threads} threads need {need} CPUs; the cluster has {have:g}")
    return started


def refuse_a_taken_cluster(host: str, port: int) -> None:
    """A joined cluster's Serve keeps the address it first listened on and has one root route: another address,
    or a forwardpass application already there, is refused rather than silently ignored or replaced."""
    listening = serve.context._get_global_client().http_config
    if (listening.host, listening.port) != (host, port):
        raise ForwardpassError(f"Ray Serve on this cluster listens on {listening.host}:{listening.port}, not "
                               f"{host}:{port}: give --host {listening.host} --port {listening.port}")
    if APP in serve.status().applications:
        raise ForwardpassError(f"this Ray cluster already serves a {APP} application (another `forwardpass serve`): "
                               f"stop that one first (or clear the cluster's Serve with `serve shutdown`)")


def thread_env(threads: int) -> dict[str, str]:
    """A replica's environment: its thread counts, and the settings of ours it must share."""
    env = {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    for name in ("OMP_WAIT_POLICY", "FORWARDPASS_KERNELS", "XDG_CACHE_HOME"):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


def start(spec: ReplicaSpec, replicas: int, threads: int, host: str, port: int, routing: str = "prefix",
          ray_address: str | None = None, imbalance: int = 4) -> Cluster:
    started = join(ray_address, replicas, threads)
    from ray.serve.config import HTTPOptions, RequestRouterConfig

    from .ingress import Ingress
    from .replica import EngineReplica
    from .router import ROUTERS

    serve.start(http_options=HTTPOptions(host=host, port=port), logging_config={"log_level": "WARNING"})
    if not started:  # a cluster this command started is its own
        refuse_a_taken_cluster(host, port)
    board = Board.options(name=spec.board, namespace=NAMESPACE, get_if_exists=True).remote()
    router = {} if ROUTERS[routing] is None else {"request_router_config": RequestRouterConfig(
        request_router_class=ROUTERS[routing], request_router_kwargs={"imbalance": imbalance} if routing == "prefix"
        else {}, request_routing_stats_period_s=60)}
    actor = {"num_cpus": threads, "runtime_env": {"env_vars": thread_env(threads)}}
    if (spec.device or "cpu").startswith("cuda"):  # a GPU each: Ray makes it the replica's only visible one
        actor["num_gpus"] = 1
        spec = replace(spec, device="cuda")
    engines = serve.deployment(EngineReplica).options(
        num_replicas=replicas, max_ongoing_requests=max(8, spec.engine.get("max_num_seqs", 32) * 2),
        ray_actor_options=actor,
        graceful_shutdown_timeout_s=spec.grace + 2, health_check_period_s=2, health_check_timeout_s=30, **router)
    ingress = serve.deployment(Ingress).options(num_replicas=1, max_ongoing_requests=10_000,
                                                ray_actor_options={"num_cpus": 0})
    app = ingress.bind(engines.bind(spec), replicas, spec.api_key, spec.max_body_bytes, spec.board, APP,
                       spec.engine.get("request_timeout"))
    cluster = Cluster(f"http://{host}:{port}/v1", started, board)
    try:
        serve.run(app, name=APP, route_prefix="/")  # returns once every replica is ready; raises if one cannot start
    except (RuntimeError, ray.exceptions.RayError) as e:
        cluster.stop()
        raise ForwardpassError(f"the replicas did not start: {str(e).strip().splitlines()[-1]}") from None
    return cluster

