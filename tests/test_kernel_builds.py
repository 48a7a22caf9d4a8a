"""The kernels' builds (kernels/simd.h): each one this CPU runs gives the generic C build's numbers (the integer
kernels bit for bit), and a build that cannot run here is refused by name, before anything runs."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
from torch import nn

from forwardpass import kernels
from forwardpass.errors import ForwardpassError
from forwardpass.quant import HalfLinear, QuantizedLinear

RUNNABLE = [b for b in kernels.BUILDS if not kernels.missing(b)]
needs_compiler = pytest.mark.skipif(kernels.load("generic") is None, reason="no C compiler here")


@needs_compiler
@pytest.mark.parametrize("build", [b for b in RUNNABLE if b != "generic"])
@pytest.mark.parametrize("kind", [8, 4, torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_each_build_matches_the_generic_one(build, kind):
    torch.manual_seed(3)
    linear = nn.Linear(200 if isinstance(kind, torch.dtype) else 192, 70, bias=False)  # float K: a ragged tail
    x = torch.randn(5, linear.in_features) * 3
    if isinstance(kind, int):
        layer = QuantizedLinear.quantize(linear.weight, kind)
        args = (kind, layer.q, 70, layer.scale, layer.minimum)
    else:
        layer = HalfLinear(linear.weight.to(kind)) if kind != torch.float32 else linear
        args = (kind, layer.weight.detach().contiguous(), 70)
    reference = kernels.gemv(x, *args, lib=kernels.load("generic"))
    got = kernels.gemv(x, *args, lib=kernels.load(build))
    if isinstance(kind, int):
        assert torch.equal(got, reference)  # the same integer sums and the same float steps per row
    else:
        assert torch.allclose(got, reference, rtol=1e-5, atol=1e-5)  # a horizontal sum in another order


def test_a_build_this_cpu_lacks_is_refused(monkeypatch):
    monkeypatch.setattr(kernels, "cpu_flags", lambda: {"sse2"})
    monkeypatch.setenv("FORWARDPASS_KERNELS", "avx2")
    with pytest.raises(ForwardpassError, match="FORWARDPASS_KERNELS=avx2: this CPU lacks avx2, fma, f16c"):
        kernels.choice()
    monkeypatch.setenv("FORWARDPASS_KERNELS", "sse9")
    with pytest.raises(ForwardpassError, match="choose from avx512, avx2, generic or off"):
        kernels.choice()
    monkeypatch.setenv("FORWARDPASS_KERNELS", "off")
    assert kernels.choice() == []
    monkeypatch.delenv("FORWARDPASS_KERNELS")
    assert kernels.choice() == ["generic"]


@pytest.mark.skipif(not kernels.missing("avx512"), reason="this CPU runs every build")
def test_the_cli_names_what_the_cpu_lacks():
    """A forced build the CPU cannot run: one line naming the missing features, exit 2, never SIGILL."""
    env = os.environ | {"FORWARDPASS_KERNELS": "avx512"}
    r = subprocess.run([sys.executable, "-m", "forwardpass", "generate", "hi", "--max-tokens", "1"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"forwardpass: error: FORWARDPASS_KERNELS=avx512: this CPU lacks {', '.join(kernels.missing('avx512'))}"]
