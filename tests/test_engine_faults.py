"""No request can stop the engine: a failure in one request ends that request with an error and the rest go on;
a failure of the loop itself ends every request in flight, says why, and refuses new ones; time limits and
shutdowns end requests with a reason. A small random model without a tokenizer keeps these fast."""

from __future__ import annotations

import threading
import time

import pytest
import torch

import forwardpass.engine.outputs as engine_module
from forwardpass import Transformer, preset
from forwardpass.engine import Engine, EngineConfig
from forwardpass.engine.rows import BLOCKS
from forwardpass.errors import EngineUnavailableError
from forwardpass.loaded import LoadedModel
from forwardpass.loop import generate
from forwardpass.sampling import SamplingParams

GREEDY = SamplingParams(temperature=0, max_tokens=6)
LONG = SamplingParams(temperature=0, max_tokens=900)


@pytest.fixture(scope="module")
def toy():
    torch.manual_seed(0)
    return LoadedModel(Transformer(preset("toy")).eval(), None, "toy", {})


def collect(engine: Engine, prompt: list[int], params: SamplingParams, outs: dict) -> str:
    return engine.submit(prompt, params, lambda o: outs.setdefault(o.request_id, []).append(o))


def wait_for(condition, seconds: float = 20.0) -> None:
    deadline = time.time() + seconds
    while not condition():
        assert time.time() < deadline, "timed out"
        time.sleep(0.01)


def test_a_request_whose_sampling_fails_ends_alone(toy, monkeypatch):
    real = engine_module.next_token

    def failing(logits, params, *args, **kwargs):
        if params.seed == 666:
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        return real(logits, params, *args, **kwargs)

    monkeypatch.setattr(engine_module, "next_token", failing)
    engine = Engine(toy, EngineConfig(kv_cache_bytes=8 * 2**20, checked=True))
    outs: dict = {}
    good = [collect(engine, [1, 2, 3], GREEDY, outs), collect(engine, [4, 5], GREEDY, outs)]
    bad = collect(engine, [1, 2, 3], SamplingParams(seed=666, max_tokens=6), outs)
    engine.run_until_done()
    assert outs[bad][-1].finish_reason == "error" and "sampling failed: RuntimeError" in outs[bad][-1].error.message
    for rid, prompt in zip(good, ([1, 2, 3], [4, 5]), strict=True):
        assert [o.token_id for o in outs[rid]] == generate(toy, prompt, GREEDY).token_ids
    assert engine.pool.used == 0 and engine.metrics.request_failures.value == 1


def test_a_callback_that_raises_ends_its_own_request(toy):
    engine = Engine(toy, EngineConfig(kv_cache_bytes=8 * 2**20, checked=True))
    outs: dict = {}
    seen = []

    def broken(out):
        seen.append(out)
        raise ConnectionError("the client's queue is gone")

    engine.submit([1, 2, 3], LONG, broken)
    ok = collect(engine, [7, 8], GREEDY, outs)
    engine.run_until_done()
    assert seen[-1].finish_reason == "error" and "could not be delivered" in seen[-1].error.message
    assert len(seen) == 2  # its first token, then the error: nothing runs for it after
    assert [o.token_id for o in outs[ok]] == generate(toy, [7, 8], GREEDY).token_ids and engine.pool.used == 0


class FlakyModel(torch.nn.Module):
    """The toy model, whose forward pass fails while `broken` is set."""

    def __init__(self, model):
        super().__init__()
        self.inner, self.broken = model, False
        self.config = model.config

    @property
    def device(self):
        return self.inner.device

    @property
    def dtype(self):
        return self.inner.dtype

    def forward(self, *args, **kwargs):
        if self.broken:
            raise RuntimeError("out of memory")
        return self.inner(*args, **kwargs)


def test_a_failed_forward_pass_ends_its_batch_and_the_engine_goes_on(toy):
    flaky = FlakyModel(toy.model)
    engine = Engine(LoadedModel(flaky, None, "toy", {}), EngineConfig(kv_cache_bytes=8 * 2**20, checked=True))
    assert engine.runner.capabilities is BLOCKS  # decode steps run its forward pass too (the toy is GPT-2-shaped)
    outs: dict = {}
    first = [collect(engine, p, LONG, outs) for p in ([1, 2, 3], [4, 5, 6, 7])]
    engine.step()
    flaky.broken = True
    engine.step()
    flaky.broken = False
    assert all(outs[r][-1].finish_reason == "error" and "forward pass failed: RuntimeError: out of memory"
               in outs[r][-1].error.message for r in first)
    assert engine.pool.used == 0
    after = collect(engine, [9, 9, 9], GREEDY, outs)
    engine.run_until_done()
    assert [o.token_id for o in outs[after]] == generate(toy, [9, 9, 9], GREEDY).token_ids


def test_a_failed_loop_ends_every_request_and_refuses_new_ones(toy, monkeypatch):
    engine = Engine(toy, EngineConfig(kv_cache_bytes=8 * 2**20))
    outs: dict = {}
    done = threading.Event()
    rid = engine.submit([1, 2, 3], LONG, lambda o: (outs.setdefault(o.request_id, []).append(o),
                                                     o.finish_reason and done.set()))
    engine.step()

    def broken(*_):
        raise KeyError("a block table went missing")

    monkeypatch.setattr(engine.scheduler, "schedule", broken)
    engine.start()
    try:
        assert done.wait(20)
        assert outs[rid][-1].finish_reason == "error" and "KeyError" in outs[rid][-1].error.message
        wait_for(lambda: not engine.healthy)
        assert "KeyError" in engine.failure and engine.metrics.healthy.value == 0
        with pytest.raises(EngineUnavailableError, match="stopped after an internal error"):
            engine.submit([1], GREEDY, print)
    finally:
        engine.stop()


def test_time_limit_ends_a_request_with_the_reason(toy):
    engine = Engine(toy, EngineConfig(kv_cache_bytes=8 * 2**20, request_timeout=0.05))
    outs: dict = {}
    rid = collect(engine, [1, 2, 3], LONG, outs)
    engine.run_until_done()
    last = outs[rid][-1]
    assert last.finish_reason == "abort" and last.error.kind == "timeout"
    assert "time limit of 0.05 s" in last.error.message
    assert len(outs[rid]) < LONG.max_tokens and engine.pool.used == 0


def test_drain_refuses_new_requests_then_ends_the_rest(toy):
    engine = Engine(toy, EngineConfig(kv_cache_bytes=8 * 2**20))
    outs: dict = {}
    rid = collect(engine, [1, 2, 3], LONG, outs)
    engine.step()
    engine.drain(0.0)
    with pytest.raises(EngineUnavailableError, match="shutting down"):
        engine.submit([1], GREEDY, print)
    engine.run_until_done()
    last = outs[rid][-1]
    assert last.finish_reason == "abort" and last.error.kind == "shutdown" and engine.pool.used == 0
