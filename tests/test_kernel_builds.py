"""The kernels' builds (kernels/simd.h): each one this CPU runs gives the generic C build's numbers (the integer
kernels bit for bit), and a build that cannot run here is refused by name, before anything runs."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

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
        args = (kind, layer.q, 70, layer.scale, layer.minimum, layer.zero)
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
    with pytest.raises(ForwardpassError, match="choose from avx512, avx2, neon, generic or off"):
        kernels.choice()
    monkeypatch.setenv("FORWARDPASS_KERNELS", "off")
    assert kernels.choice() == []
    monkeypatch.delenv("FORWARDPASS_KERNELS")
    assert kernels.choice() == ["generic"]


def test_the_cli_names_what_the_cpu_lacks():
    """A forced build the CPU cannot run (the other architecture's, which no CPU here runs): one line naming what is
    missing, exit 2, never SIGILL."""
    foreign = "neon" if kernels.missing("neon") else "avx2"
    env = os.environ | {"FORWARDPASS_KERNELS": foreign}
    r = subprocess.run([sys.executable, "-m", "forwardpass", "generate", "hi", "--max-tokens", "1"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2
    lacking = kernels.missing(foreign)
    assert lacking and "instruction set (this is " in lacking[0]
    assert r.stderr.strip().splitlines() == [
        f"forwardpass: error: FORWARDPASS_KERNELS={foreign}: this CPU lacks {', '.join(lacking)}"]


CHECK = Path(__file__).parent / "native" / "builds_check.c"
ARM = shutil.which("aarch64-linux-gnu-gcc") and shutil.which("qemu-aarch64")


_CHECKED: dict[tuple[str, bool], list] = {}  # each build's results, compiled and run once per session


def check_output(build: str, tmp_path: Path, arm: bool = False) -> list[tuple[str, str, float]]:
    """builds_check.c's results for one build: (exact or close, tag, value). The first call compiles every build this
    CPU runs, side by side."""
    if not arm and (build, arm) not in _CHECKED:
        compiling = {b: compile_check(b, tmp_path, False) for b in {build, *RUNNABLE}}
        for b, (exe, p) in compiling.items():
            _, err = p.communicate()
            assert p.returncode == 0, err
            _CHECKED[b, False] = run_check(b, [str(exe)])
    if (build, arm) not in _CHECKED:
        exe, p = compile_check(build, tmp_path, arm)
        _, err = p.communicate()
        assert p.returncode == 0, err
        _CHECKED[build, arm] = run_check(build, ["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", str(exe)])
    return _CHECKED[build, arm]


def compile_check(build: str, tmp_path: Path, arm: bool) -> tuple[Path, subprocess.Popen]:
    """builds_check.c compiling for `build` (arm: cross-compiled, run under user-mode emulation): (the program, its
    compiler's process)."""
    exe = tmp_path / f"check-{build}{'-arm' if arm else ''}"
    if arm:
        flags, cmd = ["-march=armv8-a", *(["-DFP_NEON"] if build == "neon" else [])], ["aarch64-linux-gnu-gcc"]
    else:
        flags, cmd = kernels.BUILDS[build][1], ["cc"]
    # -O0: under -std=c11 (no contraction into fused multiply-adds, no fast-math) every optimization level computes the
    # same bits (the kernels' always_inline helpers are inlined at every level), and -O0 compiles in a fraction of the
    # others' time; the libraries themselves, at -O3, are checked by the native tests run under each build (`make test`)
    return exe, subprocess.Popen([*cmd, "-O0", "-fopenmp", "-std=c11", *flags, f"-I{kernels.HERE}", str(CHECK), "-o",
                                  str(exe), "-lm"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run_check(build: str, run: list[str]) -> list[tuple[str, str, float]]:
    lines = subprocess.run(run, check=True, capture_output=True, text=True, timeout=300).stdout.splitlines()
    assert lines[-1] == f"isa {build}"
    return [(how, tag, struct.unpack("<f", bytes.fromhex(bits)[::-1])[0])
            for how, tag, bits in (line.split() for line in lines[:-1])]


def assert_same(got: list, reference: list) -> None:
    assert [(how, tag) for how, tag, _ in got] == [(how, tag) for how, tag, _ in reference]
    for (how, tag, a), (_, _, b) in zip(got, reference, strict=True):
        if how == "exact":
            assert struct.pack("<f", a) == struct.pack("<f", b), (tag, a, b)  # the same bits
        else:
            assert abs(a - b) <= 1e-5 * max(1.0, abs(b)), (tag, a, b)


@pytest.mark.skipif(not shutil.which("cc"), reason="no C compiler here")
def test_every_build_here_gives_the_reference_numbers(tmp_path):
    """The integer kernels, SwiGLU and argmax bit for bit; float products and attention within a sum's rounding."""
    reference = check_output("generic", tmp_path)
    for build in RUNNABLE:
        if build != "generic":
            assert_same(check_output(build, tmp_path), reference)


@pytest.mark.skipif(not shutil.which("cc"), reason="no C compiler here")
def test_the_reference_reads_every_float16_as_pytorch_does(tmp_path):
    """All 65,536 binary16 values (subnormals, infinities, NaNs) widened by the generic build's lane-wise conversion."""
    got = [value for how, tag, value in check_output("generic", tmp_path) if tag == "half"]
    expected = torch.arange(65536, dtype=torch.int32).to(torch.int16).view(torch.float16).float().tolist()
    assert [struct.pack("<f", v) for v in got] == [struct.pack("<f", v) for v in expected]


@pytest.mark.skipif(not shutil.which("cc"), reason="no C compiler here")
def test_keys_and_values_round_to_float16_as_pytorch_rounds_them(tmp_path):
    """float_half (a binary16 KV pool's stores) against PyTorch's .half(): edge cases (65504, the overflow threshold,
    ties at 1 + 2^-11, the subnormal boundary, infinities, NaNs), random bit patterns, values around the range."""
    out = check_output("generic", tmp_path)
    wide = torch.tensor([v for _, tag, v in out if tag == "to-half-in"], dtype=torch.float32)
    got = torch.tensor([v for _, tag, v in out if tag == "to-half"], dtype=torch.float32)
    expected = wide.half().float()
    nan = expected.isnan()
    assert torch.equal(got.isnan(), nan) and len(wide) == 4096
    assert torch.equal(got[~nan].view(torch.int32), expected[~nan].view(torch.int32))  # the same bits, signed zeros too


@pytest.mark.skipif(not (ARM and shutil.which("cc")), reason="no aarch64-linux-gnu-gcc and qemu-aarch64 here")
def test_the_neon_build_gives_the_reference_numbers(tmp_path):
    """ARM64, emulated: the neon build compiled for ARM against this machine's generic build."""
    assert_same(check_output("neon", tmp_path, arm=True), check_output("generic", tmp_path))


@needs_compiler
@pytest.mark.skipif("avx2" not in RUNNABLE, reason="this CPU does not run the avx2 build")
def test_a_build_that_fails_to_compile_is_said_once_and_the_next_one_runs(monkeypatch, capsys):
    monkeypatch.setenv("FORWARDPASS_KERNELS", "")  # (a failed compile leaves nothing in the cache)
    monkeypatch.setitem(kernels.BUILDS, "avx2", (kernels.BUILDS["avx2"][0], ["-DFP_AVX2", "-mno-such-option"]))
    monkeypatch.setattr(kernels, "_SAID", set())
    monkeypatch.setattr(kernels, "choice", lambda: ["avx2", "generic"])
    for _ in range(2):
        assert kernels._build().kernel_isa() == b"generic"
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1 and said[0].startswith("forwardpass: the avx2 kernels did not compile (")
    assert "-mno-such-option" in said[0] and said[0].endswith("; trying the next build")


def test_an_x86_build_compiles_the_same_code_on_every_cpu():
    """An x86 build's code, so its bits, may not follow the host: under -mtune=native the vector width the compiler
    sums floats at (norms, softmax), and so their order, would be the host's (512 bits on AMD, 256 on Intel)."""
    for build in kernels.X86_ONLY:
        flags = kernels.BUILDS[build][1]
        assert not [f for f in flags if "native" in f], build
        assert "-mtune=generic" in flags, build
    assert "-mprefer-vector-width=256" in kernels.BUILDS["avx512"][1]
