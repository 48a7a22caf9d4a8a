"""A 1.1 B Llama-shaped GGUF (random weights, written once per session) loads in its own block formats and
generates: the native step's logits track the PyTorch blocks' on the same model, and memory stays near the file."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import torch
from gguf import GGMLQuantizationType

import forwardpass
from forwardpass import kernels
from forwardpass.weights.synthetic import SHAPE_1B, write_synthetic_gguf

pytestmark = pytest.mark.skipif(not kernels.available(), reason="no native kernels here")

CHECK = """
import json, resource, sys, time, torch
import forwardpass
from forwardpass.engine import BlockPool
from forwardpass.engine.rows import Chunk, Rows
from forwardpass.engine.runner import Runner
from forwardpass.loop import generate
from forwardpass.quant import QuantizedLinear
from forwardpass.sampling import SamplingParams
start = time.perf_counter()
fp = forwardpass.load(sys.argv[1])
loaded = time.perf_counter() - start
m = fp.model
bits = sorted({l.bits for b in m.blocks for l in (b.attn.qkv, b.attn.out, b.ffn.gate_up, b.ffn.down)
               if isinstance(l, QuantizedLinear)})
ids = fp.encode("Once upon a time")
out = generate(fp, ids, SamplingParams(temperature=0, max_tokens=4))
steps, token, at = [], out.token_ids[0], len(ids)
with torch.inference_mode():
    for native in (True, False):  # the native step, then the PyTorch blocks, after the same prefill over a pool of one
        pool = BlockPool(m.config, 1, 64, fp.kv_dtype())  # the pairs as generate() keeps them
        table, runner = [pool.allocate()], Runner(m, pool)
        logits = torch.from_numpy(runner.step(Rows([Chunk(ids, table, 0)])).logits.copy())  # the native step's
        step = runner if native else Runner(m, pool, reference=True)
        steps.append(torch.from_numpy(step.step(Rows([Chunk([token], table, at)])).logits[0].copy()))
held = sum(t.numel() * t.element_size() for t in (*m.parameters(), *m.buffers()))
print(json.dumps({"loaded_s": loaded, "bits": bits, "head_bits": m.lm_head.bits, "tokens": out.token_ids, "held": held,
                  "first": int(logits[0].argmax()), "step_diff": float((steps[0] - steps[1]).abs().max()),
                  "step_scale": float(steps[1].abs().max()), "same_top": bool(steps[0].argmax() == steps[1].argmax()),
                  "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""


@pytest.fixture(scope="session", params=[GGMLQuantizationType.Q4_0, GGMLQuantizationType.Q4_K], ids=lambda k: k.name)
def synthetic_1b(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("synthetic") / f"llama-1b-{request.param.name}.gguf"
    return write_synthetic_gguf(path, forwardpass.default_model_path(), request.param, **SHAPE_1B)


def test_a_1b_file_loads_in_its_own_formats_and_generates(synthetic_1b):
    r = subprocess.run([sys.executable, "-c", CHECK, str(synthetic_1b)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["bits"] == [4] and got["head_bits"] == 4  # the file's 4-bit blocks kept, its output table's too
    assert 1 <= len(got["tokens"]) <= 4 and got["tokens"][0] == got["first"]
    assert got["step_diff"] <= 1e-3 * got["step_scale"]  # the native step against the PyTorch blocks
    size = synthetic_1b.stat().st_size
    print(f"{synthetic_1b.name}: {size / 1e9:.2f} GB file, model {got['held'] / 1e9:.2f} GB, loaded in "
          f"{got['loaded_s']:.1f} s, peak RSS {got['rss'] / 1e9:.2f} GB")
    # the file's own scales kept: Q4_0's fp16 ones as they are, the model the file's size; Q4_K's factored ones
    # tiled with their 16 rows' fp16 scales beside them (18.5 bytes per 32 weights, against the file's 18)
    assert got["held"] <= (1.02 if synthetic_1b.name.endswith("Q4_0.gguf") else 1.04) * size


def test_a_gguf_files_rope_freqs_divide_the_frequencies(tmp_path):
    """A Llama 3 GGUF carries its RoPE scaling as `rope_freqs.weight`: each frequency's divisor. Loaded, the
    model's frequencies are the base ones divided by it, and its logits differ from the same file without it."""
    shape = {"d_model": 128, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2, "ffn_hidden": 256, "context": 256}
    factors = np.linspace(1.0, 8.0, 16).astype(np.float32)  # head_dim 32: 16 frequencies
    source = forwardpass.default_model_path()
    scaled = forwardpass.load(write_synthetic_gguf(tmp_path / "a.gguf", source, rope_freqs=factors, **shape),
                              storage="fp32")
    plain = forwardpass.load(write_synthetic_gguf(tmp_path / "b.gguf", source, **shape), storage="fp32")
    assert torch.equal(scaled.model.rope.inv_freq, plain.model.rope.inv_freq / torch.from_numpy(factors))
    ids = list(range(100, 140))
    assert not torch.allclose(scaled.next_token_logits(ids), plain.next_token_logits(ids))
