"""The kernels' 8-bit activations (abi.h's ACT_Q8, llama.cpp's Q8_0 activations) against a scalar reference written
here: each activation row quantized per block of 32 to d = amax / 127 and x = round(value × (1 / d)), ties to even,
one integer product per weight byte, then each block's scale and minimum terms in float32 in the kernels' order
(fused multiply-adds emulated exactly), for 4- and 8-bit tiles under every form of scales the kernels read: float32,
float16, factored (K-quants), float32 per 16 weights (Q6_K), with minimums or a zero point. The default mode (15 bits)
against the same reference; the same bits for any thread count, for a row alone or in a batch, on every build; the
mode reaching the native step; an unknown mode refused."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from stepping import stepped
from test_native_step import assert_rows_as_alone, bound, tiny_llama

from forwardpass import kernels
from forwardpass.engine.runner import native_step
from forwardpass.errors import ForwardpassError, InvariantError
from forwardpass.kernels.abi import ACT_EXACT, ACT_Q8, BLOCK, GROUP
from forwardpass.kernels.team import TeamSize, set_threads
from forwardpass.quant.tiles import tile, tile_factors, untile, untile_scales

pytestmark = pytest.mark.skipif(not kernels.available(), reason="no native kernels here")

# each form of scales as (name, bits it stores): with minimums, or with a zero point (no minimums: Q4_0, Q8_0, Q6_K)
FORMS = [("f32", 4), ("f32", 8), ("f16", 4), ("f16", 8), ("f32-zero", 4), ("f16-zero", 8), ("factors", 4),
         ("factors", 8), ("factors-zero", 4), ("halves", 8), ("halves-zero", 8)]
ZERO = {4: 8, 8: 128}  # the zero points of Q4_0 and Q8_0; Q6_K's (per 16 weights) 32


def weights(form: str, bits: int, n: int, k: int, seed: int) -> tuple:
    """Random tiles of n rows × k inputs and their scales (and minimums) in `form`, as kernels.gemv takes them: q,
    scale, minimum (None for a zero point), zero."""
    g = torch.Generator().manual_seed(seed)
    groups, blocks = -(-n // GROUP), k // BLOCK
    rows = groups * GROUP
    q = tile(torch.randint(0, 2**bits, (rows, blocks, BLOCK), generator=g, dtype=torch.uint8), bits)
    signs = torch.where(torch.rand(groups, blocks, GROUP, generator=g) < 0.3, -1.0, 1.0)
    scale = (torch.rand(groups, blocks, GROUP, generator=g) * 0.02 + 1e-3) * signs
    minimum = -torch.rand(groups, blocks, GROUP, generator=g) * 0.2
    if form.startswith("f16"):
        scale, minimum = scale.half(), minimum.half()
    elif form.startswith("factors"):  # 6-bit factors of a float16 scale per row and 8 blocks (positive, negative)
        def factored(sign: float) -> torch.Tensor:
            factor = torch.randint(0, 64, (rows, blocks), generator=g, dtype=torch.uint8)
            return tile_factors(factor, (torch.rand(rows, blocks // 8, generator=g) * 1e-3 * sign + sign * 1e-4).half())
        scale, minimum = factored(1.0), factored(-1.0)
    elif form.startswith("halves"):
        scale = (torch.rand(groups, blocks, 2, GROUP, generator=g) - 0.5) * 0.04
        minimum = -torch.rand(groups, blocks, 2, GROUP, generator=g) * 0.2
    zero = 0
    if form.endswith("zero"):
        minimum, zero = None, 32 if form.startswith("halves") else ZERO[bits]
    return q, scale, minimum, zero


def fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """float32 a × b + c rounded once, as a fused multiply-add: the product is exact in float64, the sum's rounding
    error is found (TwoSum), and the float64 sum rounded to odd where it is inexact, which then rounds to float32 as
    the exact sum would (53 bits ≥ 24 + 2)."""
    a, b, c = (np.asarray(v, dtype=np.float32).astype(np.float64) for v in (a, b, c))
    p = a * b
    s = p + c
    back = s - p
    error = (p - (s - back)) + (c - back)
    even = (s.view(np.uint64) & 1) == 0
    s = np.where((error != 0) & even, np.nextafter(s, np.where(error > 0, np.inf, -np.inf)), s)
    return s.astype(np.float32)


def quantized_rows(x: np.ndarray, activations: int) -> tuple[np.ndarray, np.ndarray]:
    """x (M, K) float32 as the kernels quantize it: the integers X (M, blocks, 32) and each block's step (the value of
    one unit of X): ACT_Q8 X = x, step d = amax / 127; ACT_EXACT X = 128 hi + lo, step d / 128."""
    blocks = x.reshape(len(x), -1, BLOCK)
    d = np.abs(blocks).max(-1) / np.float32(127)
    inv = np.where(d > 0, np.float32(1) / np.where(d > 0, d, np.float32(1)), np.float32(0)).astype(np.float32)
    v = blocks * inv[..., None]
    hi = np.rint(v)  # nearest, ties to even
    if activations == ACT_Q8:
        return hi.astype(np.int64), d
    lo = np.rint((v - hi) * np.float32(128))
    return (128 * hi + lo).astype(np.int64), d / np.float32(128)


def reference(x: torch.Tensor, q: torch.Tensor, scale, minimum, zero: int, bits: int, n: int,
              activations: int) -> torch.Tensor:
    """x Wᵀ as the kernels compute it, in numpy: per block, acc = fma(Σ q X, scale × step, acc), then
    acc = fma(minimum, step × Σ X, acc); scales per 16 weights the same for each half of the block."""
    X, step = quantized_rows(x.numpy(), activations)
    W = untile(q, bits).numpy().astype(np.int64)  # (rows, blocks, 32)
    S = untile_scales(scale).float().numpy()  # (rows, blocks, 1 or 2)
    lows = S * np.float32(-zero) if minimum is None else untile_scales(minimum).float().numpy()
    per = S.shape[-1]
    dots = np.einsum("mbhk,rbhk->mrbh", X.reshape(*X.shape[:2], per, -1), W.reshape(*W.shape[:2], per, -1))
    sums = step[..., None] * X.reshape(*X.shape[:2], per, -1).sum(-1).astype(np.float32)  # (M, blocks, per)
    acc = np.zeros((len(X), len(W)), dtype=np.float32)
    for b in range(W.shape[1]):
        for h in range(per):
            acc = fma(dots[:, :, b, h].astype(np.float32), S[None, :, b, h] * step[:, b, None], acc)
            acc = fma(lows[None, :, b, h], sums[:, b, None, h], acc)
    return torch.from_numpy(acc[:, :n])


def product(x: torch.Tensor, form: str, bits: int, n: int, k: int, seed: int, activations: int,
            lib=None) -> torch.Tensor:
    q, scale, minimum, zero = weights(form, bits, n, k, seed)
    return kernels.gemv(x, bits, q, n, scale, minimum, zero, lib=lib, activations=activations)


def rows_of(m: int, k: int, seed: int) -> torch.Tensor:
    """m activation rows with blocks of every magnitude, a zero block and ties (exact halves of a step)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(m, k, generator=g) * torch.exp(torch.randn(m, k // BLOCK, 1, generator=g)).repeat_interleave(
        BLOCK, 1).view(m, k)
    x[0, :BLOCK] = 0.0
    x[-1, BLOCK:2 * BLOCK] = torch.arange(BLOCK) - 15.5  # with 127 its largest (d = 1), every other value a tie
    x[-1, BLOCK] = 127.0
    return x


def shape_of(form: str) -> tuple[int, int]:
    return (70, 512) if form.startswith("factors") else (70, 192)  # factored scales: K in blocks of 256


@pytest.mark.parametrize("activations", [ACT_Q8, ACT_EXACT], ids=["q8", "exact"])
@pytest.mark.parametrize("form,bits", FORMS, ids=[f"{f}-q{b}" for f, b in FORMS])
def test_products_are_the_reference_bit_for_bit(form, bits, activations):
    """Five rows (as a batch's product takes them: q8 four at a time and one alone, the default mode two pairs and one
    alone) of 70 outputs (a group padded), each equal to the scalar reference's bits: integer sums are exact, and every
    float32 step is the kernels' own."""
    n, k = shape_of(form)
    x = rows_of(5, k, seed=bits)
    q, scale, minimum, zero = weights(form, bits, n, k, seed=7)
    got = kernels.gemv(x, bits, q, n, scale, minimum, zero, activations=activations)
    want = reference(x, q, scale, minimum, zero, bits, n, activations)
    assert got.shape == want.shape == (5, n)
    assert torch.equal(got, want)


@pytest.mark.parametrize("form,bits", FORMS, ids=[f"{f}-q{b}" for f, b in FORMS])
def test_q8_is_its_own_mode_within_its_rounding(form, bits):
    """The mode is not ignored: q8 differs from exact, and each stays within its rounding of x Wᵀ (in float64): an
    input moves at most half a step (q8: d / 2, d = amax / 127 of its block; exact: d / 256), so an output at most
    Σ over blocks of that × Σ |w| of the block, beyond float32's own rounding (1e-5 of the largest output here)."""
    n, k = shape_of(form)
    x = rows_of(3, k, seed=1)
    q, scale, minimum, zero = weights(form, bits, n, k, 3)
    S = untile_scales(scale).double()
    lows = S * -zero if minimum is None else untile_scales(minimum).double()
    w = untile(q, bits).double().view(*S.shape[:2], S.shape[-1], -1) * S[..., None] + lows[..., None]
    w = w.reshape(len(w), -1)[:n]  # (n, k)
    want = x.double() @ w.T
    d = x.view(3, -1, BLOCK).abs().amax(-1).double() / 127  # (rows, blocks)
    magnitude = w.abs().view(n, -1, BLOCK).sum(-1)  # (n, blocks)
    slack = 1e-5 * want.abs().max().item()
    errors = {}
    for act, step in ((ACT_Q8, d), (ACT_EXACT, d / 128)):
        got = kernels.gemv(x, bits, q, n, scale, minimum, zero, activations=act)
        errors[act] = (got - want).abs()
        assert (errors[act] <= 0.5 * step @ magnitude.T + slack).all()
    assert errors[ACT_Q8].max() > 10 * errors[ACT_EXACT].max()


@pytest.mark.parametrize("bits", [4, 8])
def test_a_row_gets_the_same_bits_alone_or_in_a_batch(bits):
    """Rows four at a time (one tile load for the four), two at a time or alone: each row's q8 product is the same
    bits."""
    x = rows_of(16, 576, seed=5)
    together = product(x, "f16", bits, 1536, 576, 2, ACT_Q8)
    for r in (0, 7, 14, 15):
        assert torch.equal(product(x[r:r + 1], "f16", bits, 1536, 576, 2, ACT_Q8)[0], together[r])
    assert torch.equal(product(x[3:6], "f16", bits, 1536, 576, 2, ACT_Q8), together[3:6])


@pytest.mark.parametrize("form,bits", FORMS, ids=[f"{f}-q{b}" for f, b in FORMS])
def test_rows_four_at_a_time_get_their_bits_alone(form, bits):
    """4, 5, 6, 7 and 9 rows: four at a time (one tile load for the four), then a pair, then one alone, each row the
    bits it gets alone, which are the scalar reference's."""
    n, k = shape_of(form)
    x = rows_of(9, k, seed=11)
    q, scale, minimum, zero = weights(form, bits, n, k, seed=12)
    alone = torch.cat([kernels.gemv(x[r:r + 1], bits, q, n, scale, minimum, zero, activations=ACT_Q8)
                       for r in range(len(x))])
    assert torch.equal(alone, reference(x, q, scale, minimum, zero, bits, n, ACT_Q8))
    for m in (4, 5, 6, 7, 9):
        assert torch.equal(kernels.gemv(x[:m], bits, q, n, scale, minimum, zero, activations=ACT_Q8), alone[:m]), m


THREADS_SCRIPT = """
import sys
import numpy as np
sys.path.insert(0, {tests!r})
from stepping import stepped
from test_activations_q8 import FORMS, product, rows_of, shape_of
from test_native_step import bound, tiny_llama
from forwardpass.engine.runner import native_step
from forwardpass.kernels.abi import ACT_EXACT, ACT_Q8
out = []
for form, bits in FORMS:
    n, k = shape_of(form)
    out.append(product(rows_of(5, k, 4), form, bits, n, k, 6, ACT_Q8).numpy().ravel())
for act in (ACT_Q8, ACT_EXACT):  # whole steps: attention's parts, whatever the threads
    model = bound(tiny_llama(False), 4)
    native_step(model).spec.activations = act
    out.append(stepped(model, list(range(7, 27)), [3, 5, 9]).numpy().ravel())
np.save({path!r}, np.concatenate(out))
"""


def test_any_thread_count_gives_the_same_bits(tmp_path):
    """One, two or three threads, each its share of every matrix's groups: every form's q8 product the same bits; and a
    native step's logits in both modes (a prompt chunk, then decode rows), attention's parts the same on each."""
    results = []
    for threads in (1, 2, 3):
        path = tmp_path / f"threads-{threads}.npy"
        script = THREADS_SCRIPT.format(tests=str(Path(__file__).parent), path=str(path))
        env = os.environ | {"OMP_NUM_THREADS": str(threads)}
        subprocess.run([sys.executable, "-c", script], check=True, env=env, timeout=300)
        results.append(np.load(path))
    assert all(np.array_equal(r.view(np.uint32), results[0].view(np.uint32)) for r in results[1:])


RUNNABLE = [b for b in kernels.BUILDS if not kernels.missing(b)]


@pytest.mark.skipif(not kernels.available(), reason="no C compiler here")  # not the generic build at import: the
@pytest.mark.parametrize("build", [b for b in RUNNABLE if b != "generic"])  # thread test's children import this module
def test_every_build_gives_the_generic_builds_bits(build):
    """Each build this CPU runs against the generic C one (tests/native/builds_check.c does the same, ARM64 too)."""
    if kernels.load("generic") is None:
        pytest.skip("the generic build did not compile here")
    for form, bits in FORMS:
        n, k = shape_of(form)
        x = rows_of(5, k, seed=8)
        reference_bits = product(x, form, bits, n, k, 9, ACT_Q8, lib=kernels.load("generic"))
        assert torch.equal(product(x, form, bits, n, k, 9, ACT_Q8, lib=kernels.load(build)), reference_bits), form


@pytest.mark.parametrize("kind", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_float_weights_ignore_the_mode(kind):
    torch.manual_seed(2)
    w = torch.randn(40, 200).to(kind).contiguous()
    x = torch.randn(3, 200)
    exact, q8 = (kernels.gemv(x, kind, w, 40, activations=act) for act in (ACT_EXACT, ACT_Q8))
    assert torch.equal(exact, q8)


@pytest.mark.parametrize("mode", [2, -1, 7])
def test_an_unknown_mode_is_refused(mode):
    q, scale, minimum, zero = weights("f32", 4, 16, 64, 0)
    with pytest.raises(ForwardpassError, match=f"activations {mode}: choose abi.ACT_EXACT"):
        kernels.gemv(torch.randn(1, 64), 4, q, 16, scale, minimum, zero, activations=mode)


def q8_step(storage) -> torch.nn.Module:
    """tiny_llama's weights stored as `storage`, its native step's products on q8 activations."""
    model = bound(tiny_llama(False), storage)
    native_step(model).spec.activations = ACT_Q8  # before its first step: each thread's workspace copies the spec
    return model


@pytest.mark.parametrize("storage", [8, 4])
def test_the_native_step_takes_the_mode(storage):
    """Model.activations reaches every product of the step: its logits differ from the default mode's, and stay near
    them (8-bit activations through two layers of large random weights: within 5% of the largest logit)."""
    decode = list(range(3, 12))
    q8 = stepped(q8_step(storage), [1, 2], decode)
    exact = stepped(bound(tiny_llama(False), storage), [1, 2], decode)
    assert not torch.equal(q8, exact)
    assert (q8 - exact).abs().max().item() < 0.05 * exact.abs().max().item()


@pytest.mark.parametrize("storage", [8, 4])
def test_the_native_step_gives_each_row_its_bits_alone(storage):
    """In q8 too, one step over three sequences gives each row the logits it gets alone, bit for bit."""
    assert_rows_as_alone(q8_step(storage), [299, 0, 17])


def test_the_native_step_gives_the_same_bits_on_any_team(monkeypatch):
    model = q8_step(4)
    work = native_step(model)._work
    monkeypatch.setattr(TeamSize, "observe", lambda self, cpu, offered: None)  # the team stays as set
    try:
        set_threads(3)
        results = []
        for team in (3, 1, 2):
            stepped(model, [1], [2])  # makes this thread's workspace and team
            work.team.threads = team
            results.append(stepped(model, [1, 2], list(range(3, 20))))
            assert work.spec.team == team and work.spec.activations == ACT_Q8
        assert all(torch.equal(r, results[0]) for r in results[1:])
    finally:
        set_threads(None)


def test_the_native_step_refuses_an_unknown_mode():
    model = bound(tiny_llama(False), 4)
    native_step(model).spec.activations = 2
    with pytest.raises(InvariantError, match="native step refused"):
        stepped(model, [1], [2])
