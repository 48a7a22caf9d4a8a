"""The tile unit (Intel AMX, kernels/tiles.h): where the CPU has one, a product of several rows runs there (ACT_Q8 from
12 rows, ACT_EXACT from 6) and gives the vector unit's bits, which are the scalar reference's, in both activation
modes, for every weight form and any row count; the native step's logits are the same bits with it on or off; and
FORWARDPASS_TILES turns it off, or is refused by name."""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import contextmanager

import pytest
import torch
from stepping import stepped
from test_activations_q8 import FORMS, reference, rows_of, shape_of, weights
from test_native_step import bound, tiny_llama

from forwardpass import kernels
from forwardpass.engine.runner import native_step
from forwardpass.kernels.abi import ACT_EXACT, ACT_Q8

needs_tiles = pytest.mark.skipif(not kernels.tiles(), reason="no tile unit (AMX) here, or Linux did not grant it")


@contextmanager
def tiles(on: bool):
    lib = kernels.library()
    lib.kernel_tiles(int(on))
    try:
        yield
    finally:
        lib.kernel_tiles(1)


@needs_tiles
@pytest.mark.parametrize("activations", [ACT_Q8, ACT_EXACT], ids=["q8", "exact"])
@pytest.mark.parametrize("form,bits", FORMS, ids=[f"{f}-q{b}" for f, b in FORMS])
def test_rows_on_the_tiles_are_the_reference_bits(form, bits, activations):
    """6 to 33 rows (each mode's fewest on the tiles, a tile's rows: exact 8, q8 16, and past them into a chunk padded
    with zero rows) of 70 outputs (a group padded): every row the scalar reference's bits, and the vector unit's;
    HALVES (16-input scales) in half-depth tiles."""
    n, k = shape_of(form)
    x = rows_of(33, k, seed=21)
    q, scale, minimum, zero = weights(form, bits, n, k, seed=22)
    want = reference(x, q, scale, minimum, zero, bits, n, activations)
    for m in (6, 8, 9, 12, 16, 17, 33):
        with tiles(True):
            got = kernels.gemv(x[:m], bits, q, n, scale, minimum, zero, activations=activations)
        with tiles(False):
            vector = kernels.gemv(x[:m], bits, q, n, scale, minimum, zero, activations=activations)
        assert torch.equal(got, want[:m]) and torch.equal(vector, got), m


@needs_tiles
@pytest.mark.parametrize("activations", [ACT_Q8, ACT_EXACT], ids=["q8", "exact"])
@pytest.mark.parametrize("storage", [8, 4])
def test_the_native_step_gives_the_same_bits_on_the_tiles(storage, activations):
    """A 40-token prompt (its chunk's every product on the tiles) and decode rows after it: the same logits, bit for
    bit, with the tile unit on or off."""
    model = bound(tiny_llama(False), storage)
    native_step(model).spec.activations = activations  # before its first step: each thread's workspace copies the spec
    prompt, decode = list(range(7, 47)), [3, 5]
    with tiles(False):
        vector = stepped(model, prompt, decode)
    with tiles(True):
        assert torch.equal(stepped(model, prompt, decode), vector)


def tiles_in_child(value: str) -> subprocess.CompletedProcess:
    script = "from forwardpass import kernels; print(kernels.available() and kernels.tiles())"
    env = os.environ | {"FORWARDPASS_TILES": value}
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)


@needs_tiles
def test_forwardpass_tiles_off_keeps_the_vector_unit():
    assert tiles_in_child("off").stdout.split() == ["False"]
    assert tiles_in_child("on").stdout.split() == ["True"]


@pytest.mark.skipif(not kernels.available(), reason="no C compiler here")
def test_an_unknown_forwardpass_tiles_is_refused_by_name():
    r = tiles_in_child("fast")
    assert r.returncode != 0 and "FORWARDPASS_TILES=fast: choose on or off" in r.stderr
