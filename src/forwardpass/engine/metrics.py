"""Prometheus metrics, named as vLLM names them so existing dashboards read them. The engine counts in plain
numbers; `prometheus_client` is imported only to write them out (/metrics): a command serving none never loads it."""

from __future__ import annotations

import bisect
import threading

# the prompt cache on disk (prompt_cache/stats.py): each field of its counts, as a counter's name and help
PROMPT_CACHE = {
    "hit_blocks": "KV blocks read back from the prompt cache on disk instead of computed.",
    "hit_tokens": "Prompt tokens whose KV pairs were read back from the prompt cache on disk.",
    "misses": "Prompt-cache lookups on disk that stopped at a block it does not hold (or could not use).",
    "rejected": "Prompt-cache files refused on reading: damaged, truncated, foreign or of another version.",
    "read_bytes": "Bytes read from the prompt cache on disk.",
    "written_blocks": "KV blocks written to the prompt cache on disk.",
    "written_bytes": "Bytes written to the prompt cache on disk.",
    "evictions": "Prompt-cache files removed to keep its folder within its size, least recently used first.",
    "write_errors": "Prompt-cache writes that failed (a full disk among them).",
    "dropped": "KV blocks not written to the prompt cache: its queue was full, or writing paused after a full disk.",
}
LATENCY_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
                   20.0, 40.0, 80.0)


class _Value:
    """One number, with its name and help text."""

    def __init__(self, name: str, documentation: str):
        self.name, self.documentation, self.value = name, documentation, 0.0


class Gauge(_Value):
    """Goes up and down: set to what it is now."""

    def set(self, value: float) -> None:
        self.value = float(value)

    def family(self):
        from prometheus_client.core import GaugeMetricFamily
        return GaugeMetricFamily(self.name, self.documentation, value=self.value)


class Counter(_Value):
    """Only goes up; written as `name_total`."""

    def __init__(self, name: str, documentation: str):
        super().__init__(name, documentation)
        self._lock = threading.Lock()

    def inc(self, amount: float = 1.0) -> None:
        if amount < 0:
            raise ValueError(f"{self.name} only goes up (asked to add {amount})")
        with self._lock:
            self.value += amount

    def family(self):
        from prometheus_client.core import CounterMetricFamily
        return CounterMetricFamily(self.name, self.documentation, value=self.value)


class Histogram:
    """Observations counted into buckets (each bucket: those ≤ its bound) with their sum."""

    def __init__(self, name: str, documentation: str, buckets: tuple[float, ...]):
        self.name, self.documentation, self.bounds = name, documentation, buckets
        self.counts = [0] * (len(buckets) + 1)  # the last: above every bound
        self.sum = 0.0
        self._lock = threading.Lock()

    def observe(self, value: float) -> None:
        with self._lock:
            self.counts[bisect.bisect_left(self.bounds, value)] += 1
            self.sum += value

    def family(self):
        from prometheus_client.core import HistogramMetricFamily
        from prometheus_client.utils import floatToGoString

        with self._lock:
            counts, total = list(self.counts), self.sum
        cumulative, buckets = 0, []
        for bound, n in zip((*self.bounds, float("inf")), counts, strict=True):
            cumulative += n
            buckets.append((floatToGoString(bound), cumulative))
        return HistogramMetricFamily(self.name, self.documentation, buckets=buckets, sum_value=total)


class EngineMetrics:
    def __init__(self):
        self.running = Gauge("vllm:num_requests_running", "Requests in the running batch.")
        self.waiting = Gauge("vllm:num_requests_waiting", "Requests waiting to be scheduled.")
        self.kv_usage = Gauge("vllm:kv_cache_usage_perc", "Fraction of KV-cache blocks in use (0 to 1).")
        self.blocks_used = Gauge("forwardpass:kv_cache_blocks_used", "KV-cache blocks in use.")
        self.prefix_queries = Counter("vllm:prefix_cache_queries", "Prompt tokens looked up in the prefix cache.")
        self.prefix_hits = Counter("vllm:prefix_cache_hits", "Prompt tokens found in the prefix cache.")
        self.preemptions = Counter("vllm:num_preemptions", "Requests preempted for lack of KV blocks.")
        self.prompt_tokens = Counter("vllm:prompt_tokens", "Prompt tokens received.")
        self.generation_tokens = Counter("vllm:generation_tokens", "Tokens generated.")
        self.time_to_first_token = Histogram("vllm:time_to_first_token_seconds", "Time to first token.",
                                             buckets=LATENCY_BUCKETS)
        self.inter_token_latency = Histogram("vllm:inter_token_latency_seconds", "Time between output tokens.",
                                             buckets=LATENCY_BUCKETS)
        self.e2e_latency = Histogram("vllm:e2e_request_latency_seconds", "Arrival to finish.",
                                     buckets=LATENCY_BUCKETS)
        self.request_failures = Counter("forwardpass:request_failures", "Requests ended by an error in the engine.")
        self.healthy = Gauge("forwardpass:engine_healthy", "1 while the engine loop runs, 0 once it has failed.")
        self.drafts = Counter("vllm:spec_decode_num_drafts", "Drafts verified (speculative decoding).")
        self.draft_tokens = Counter("vllm:spec_decode_num_draft_tokens", "Draft tokens verified.")
        self.accepted_tokens = Counter("vllm:spec_decode_num_accepted_tokens", "Draft tokens accepted.")
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
        if getattr(engine, "prompt_cache", None) is not None:
            self.observe_prompt_cache(engine.prompt_cache.store.stats)

    def observe_prompt_cache(self, stats) -> None:
        """The prompt cache's counts (prompt_cache/stats.py) into counters, made on first sight: a server without a
        prompt cache shows none."""
        for field, help_text in PROMPT_CACHE.items():
            counter = getattr(self, f"prompt_cache_{field}", None)
            if counter is None:
                counter = Counter(f"forwardpass:prompt_cache_{field}", help_text)
                setattr(self, f"prompt_cache_{field}", counter)
            now = getattr(stats, field)
            counter.inc(now - self._seen.get(field, 0))
            self._seen[field] = now

    def collect(self):
        """Every metric as a Prometheus family, in the order they were declared (prometheus_client's collector
        protocol)."""
        return [m.family() for m in vars(self).values() if isinstance(m, _Value | Histogram)]

    def render(self) -> bytes:
        """The Prometheus text format of every metric."""
        from prometheus_client import generate_latest

        return generate_latest(self)
