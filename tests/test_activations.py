"""`--activations q8` from load() to the engine, the commands and the server: the mode reaches every product (the
native step's and the PyTorch blocks'), changes the logits a little and never the engine's contract (a sequence's
tokens the same alone or in a batch, with drafts or without); refused by name where it would change nothing. The
kernels' own q8 arithmetic against a scalar reference: test_activations_q8.py."""

from __future__ import annotations

import httpx
import pytest
import torch
from cli_helpers import in_process
from server_helpers import running_server
from stepping import stepped
from test_speculation import grounded, same_with_and_without

import forwardpass
from forwardpass import kernels
from forwardpass.engine import Engine, EngineConfig
from forwardpass.errors import ForwardpassError
from forwardpass.sampling import SamplingParams
from forwardpass.weights.native_model import from_torch

pytestmark = pytest.mark.skipif(not kernels.available(), reason="8-bit activations are the native kernels'")

TEXT = "The quick brown fox jumps over the lazy dog, and then it runs back into the forest to sleep."


@pytest.fixture(scope="module")
def q8():
    return forwardpass.load(activations="q8", backend="native")


@pytest.fixture(scope="module")
def exact():
    return forwardpass.load(backend="native")


@pytest.mark.parametrize("options, message", [
    ({"activations": "int4"}, "unknown activations 'int4'; choose from exact, q8"),
    ({"activations": "q8", "storage": "fp32"}, "activations q8 quantizes the rows that multiply integer weights; "
                                               "storage fp32 has none"),
    ({"activations": "q8", "dtype": "bfloat16"}, "dtype bfloat16 has none"),
])
def test_a_mode_that_would_change_nothing_or_is_unknown_is_refused_by_name(options, message):
    with pytest.raises(ForwardpassError, match=message):
        forwardpass.load(**options)


def test_the_mode_reaches_the_native_model_and_the_pytorch_layers(q8, exact):
    assert q8.model.spec.activations == kernels.abi.ACT_Q8 and exact.model.spec.activations == kernels.abi.ACT_EXACT
    assert q8.metadata["activations"] == "q8" and exact.metadata["activations"] == "exact"
    torch_q8 = forwardpass.load(activations="q8")  # the PyTorch blocks over the same tiles
    from forwardpass.quant import QuantizedLinear
    layers = [m for m in torch_q8.model.modules() if isinstance(m, QuantizedLinear)]
    assert layers and {m.activations for m in layers} == {kernels.abi.ACT_Q8}
    assert from_torch(torch_q8.model).spec.activations == kernels.abi.ACT_Q8  # the step it describes for the engine


def test_q8_moves_the_logits_a_little_and_every_path_runs_it(q8, exact):
    """The native loader's step, the step described from the PyTorch model and the PyTorch blocks all run 8-bit rows.
    The blocks' attention and norms round in another order than the step's, and in q8 such a difference flips an
    8-bit rounding now and then, which later layers carry on: the blocks agree with the step on the top token, not to
    the last bit (in exact mode they agree to about 1e-2 of a logit)."""
    ids = exact.encode(TEXT)
    prompt, rest = ids[:4], ids[4:]
    a, b = stepped(exact.model, prompt, rest), stepped(q8.model, prompt, rest)
    assert not torch.equal(a, b)  # the mode is not ignored
    assert (a.argmax(-1) == b.argmax(-1)).float().mean() >= 0.9
    assert (a - b).abs().max() < 0.1 * a.abs().max()
    torch_q8, torch_exact = forwardpass.load(activations="q8"), forwardpass.load()
    assert torch.equal(stepped(torch_q8.model, prompt, rest), b)  # the same step, described from PyTorch's tensors
    blocks = stepped(torch_q8.model, prompt, rest, native=False)  # QuantizedLinear's products, PyTorch's attention
    assert (blocks.argmax(-1) == b.argmax(-1)).float().mean() >= 0.9
    assert not torch.allclose(blocks, stepped(torch_exact.model, prompt, rest, native=False), atol=1e-2, rtol=0)


def test_a_sequence_decodes_the_same_alone_and_in_a_batch(q8):
    prompts = [q8.encode(p) for p in ("Name three colors.", "What is two plus two?", "Write a short poem.")]
    params = SamplingParams(temperature=0, max_tokens=24, ignore_eos=True)

    def outputs(batch: list[list[int]]) -> list[list[int]]:
        engine = Engine(q8, EngineConfig(kv_cache_bytes=64 * 2**20, speculative="off"))
        got: dict[int, list[int]] = {}
        for i, p in enumerate(batch):
            engine.submit(p, params, lambda o, i=i: got.setdefault(i, []).append(o.token_id)
                          if o.token_id is not None else None)
        engine.run_until_done()
        return [got[i] for i in range(len(batch))]

    together = outputs(prompts)
    assert together == [outputs([p])[0] for p in prompts]


def test_drafting_changes_no_token_in_q8(q8):
    engine = same_with_and_without(q8, [grounded(q8, "Repeat this text word for word:")],
                                   [SamplingParams(temperature=0, max_tokens=40)])
    assert engine.metrics.accepted_tokens.value > 0
    params = [SamplingParams(temperature=0.8, top_p=0.95, seed=s, max_tokens=30, logprobs=2) for s in (1, 2)]
    same_with_and_without(q8, [grounded(q8, "Repeat this text:")] * 2, params)


def test_the_commands_take_the_option_and_refuse_it_where_it_changes_nothing():
    with in_process() as run:
        plain = run("generate", "hi", "--max-tokens", "6", "--json")
        fast = run("generate", "hi", "--max-tokens", "6", "--json", "--activations", "q8")
        assert plain.returncode == 0 and fast.returncode == 0, fast.stderr
        shown = run("inspect", "the cat sat on the", "--json", "--activations", "q8")
        assert shown.returncode == 0, shown.stderr
        refused = run("generate", "hi", "--activations", "q8", "--storage", "fp32")
        assert refused.returncode == 2
        assert "activations q8 quantizes the rows that multiply integer weights; storage fp32 has none" in \
            refused.stderr
        bad = run("generate", "hi", "--activations", "q4")
        assert bad.returncode == 2 and "invalid choice: 'q4'" in bad.stderr
        plan = run("cost", "--activations", "q8")
        assert plan.returncode == 2 and "--activations applies to --plan only" in plan.stderr


def test_the_server_answers_in_q8(q8):
    with running_server(q8, EngineConfig(kv_cache_bytes=64 * 2**20)) as (url, _):
        r = httpx.post(f"{url}/v1/completions", json={"model": "smollm", "prompt": "The capital of France is",
                                                      "max_tokens": 5, "temperature": 0}, timeout=60)
    assert r.status_code == 200 and r.json()["choices"][0]["text"]
