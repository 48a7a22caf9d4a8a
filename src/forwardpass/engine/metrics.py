"""Prometheus metrics, named as vLLM names them so existing dashboards read them."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics, generate_latest

disable_created_metrics()  # no *_created series: dashboards do not read them

LATENCY_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
                   20.0, 40.0, 80.0)


class EngineMetrics:
    def __init__(self):
        r = self.registry = CollectorRegistry()
        self.running = Gauge("vllm:num_requests_running", "Requests in the running batch.", registry=r)
        self.waiting = Gauge("vllm:num_requests_waiting", "Requests waiting to be scheduled.", registry=r)
        self.kv_usage = Gauge("vllm:kv_cache_usage_perc", "Fraction of KV-cache blocks in use (0 to 1).", registry=r)
        self.blocks_used = Gauge("forwardpass:kv_cache_blocks_used", "KV-cache blocks in use.", registry=r)
        self.prefix_queries = Counter("vllm:prefix_cache_queries", "Prompt tokens looked up in the prefix cache.",
                                      registry=r)
        self.prefix_hits = Counter("vllm:prefix_cache_hits", "Prompt tokens found in the prefix cache.", registry=r)
        self.preemptions = Counter("vllm:num_preemptions", "Requests preempted for lack of KV blocks.", registry=r)
        self.prompt_tokens = Counter("vllm:prompt_tokens", "Prompt tokens received.", registry=r)
        self.generation_tokens = Counter("vllm:generation_tokens", "Tokens generated.", registry=r)
        self.time_to_first_token = Histogram("vllm:time_to_first_token_seconds", "Time to first token.",
                                             buckets=LATENCY_BUCKETS, registry=r)
        self.inter_token_latency = Histogram("vllm:inter_token_latency_seconds", "Time between output tokens.",
                                             buckets=LATENCY_BUCKETS, registry=r)
        self.e2e_latency = Histogram("vllm:e2e_request_latency_seconds", "Arrival to finish.",
                                     buckets=LATENCY_BUCKETS, registry=r)
        self.request_failures = Counter("forwardpass:request_failures", "Requests ended by an error in the engine.",
                                        registry=r)
        self.healthy = Gauge("forwardpass:engine_healthy", "1 while the engine loop runs, 0 once it has failed.",
                             registry=r)
        self.drafts = Counter("vllm:spec_decode_num_drafts", "Drafts verified (speculative decoding).", registry=r)
        self.draft_tokens = Counter("vllm:spec_decode_num_draft_tokens", "Draft tokens verified.", registry=r)
        self.accepted_tokens = Counter("vllm:spec_decode_num_accepted_tokens", "Draft tokens accepted.", registry=r)
        self.healthy.set(1)
        self._seen = {"queries": 0, "hits": 0, "preemptions": 0}

    def drafted(self, tokens: int, accepted: int) -> None:
        """A draft of `tokens` tokens was verified, `accepted` of them kept."""
        self.drafts.inc()
        self.draft_tokens.inc(tokens)
        self.accepted_tokens.inc(accepted)

    def observe_pool(self, engine) -> None:
        pool, scheduler = engine.pool, engine.scheduler
        self.running.set(len(scheduler.running))
        self.waiting.set(len(scheduler.waiting))
        self.kv_usage.set(pool.usage())
        self.blocks_used.set(pool.used)
        totals = (("queries", self.prefix_queries, pool.queries), ("hits", self.prefix_hits, pool.hits),
                  ("preemptions", self.preemptions, scheduler.preemptions))
        for name, counter, now in totals:
            counter.inc(now - self._seen[name])
            self._seen[name] = now

    def render(self) -> bytes:
        return generate_latest(self.registry)
