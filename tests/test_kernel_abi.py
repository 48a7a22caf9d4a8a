"""The kernels' interface is declared once (kernels/abi.h) and checked from Python when the library loads: every
struct's size, every field's offset, every shared constant and every export's signature, as the library reports them
(abi.c), against kernels/abi.py. A field moved on either side, a constant changed or a signature that differs refuses
the library by name."""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import pytest

from forwardpass import kernels
from forwardpass.errors import ForwardpassError
from forwardpass.kernels import abi

needs_kernels = pytest.mark.skipif(not kernels.available(), reason="no native kernels on this machine")


@needs_kernels
@pytest.mark.parametrize("build", list(kernels.BUILDS))
def test_every_build_reports_the_layout_python_builds(build):
    if kernels.missing(build):
        pytest.skip(f"this CPU cannot run the {build} build")
    lib = kernels.load(build)  # loading checks it: a mismatch would raise here
    assert lib is not None
    got = abi.reported(lib)
    assert abi.mismatches(abi.layout(), got) == []
    assert {name for name in got if "." not in name} >= {"Linear", "Layer", "Model", "Batch", *abi.CONSTANTS}


EXPORTED = {"kernel_abi", "kernel_exports", "kernel_isa", "gemv", "kernel_tiles", "decode_workspace", "decode_usage",
            "decode_batch", "dequantize", "repack", "repack_formats", "stream_read"}


@needs_kernels
@pytest.mark.parametrize("build", list(kernels.BUILDS))
def test_every_build_reports_the_signatures_python_declares(build):
    """Each export's result and argument types, as abi.h's EXPORTS declares them, are abi.py's, and ctypes calls it
    with abi.py's declaration."""
    if kernels.missing(build):
        pytest.skip(f"this CPU cannot run the {build} build")
    lib = kernels.load(build)
    got = abi.reported_signatures(lib)
    assert set(got) == EXPORTED
    assert got == abi.signatures()
    assert got["gemv"] == "vpiiipppiiipi" and got["stream_read"] == "fpz" and got["kernel_isa"] == "s"
    for name, (result, args) in abi.EXPORTS.items():
        assert getattr(lib, name).restype is result and getattr(lib, name).argtypes == args


@needs_kernels
def test_a_signature_declared_otherwise_in_python_is_refused_by_name(monkeypatch):
    c_int, p = ctypes.c_int, ctypes.c_void_p
    monkeypatch.setitem(abi.EXPORTS, "repack", (c_int, [c_int, c_int, p, p, p, p, p]))  # K a pointer
    monkeypatch.setitem(abi.EXPORTS, "stream_read", (ctypes.c_double, [p, ctypes.c_size_t]))
    monkeypatch.delitem(abi.EXPORTS, "decode_usage")
    monkeypatch.setitem(abi.EXPORTS, "decode_steps", (c_int, [p]))
    with pytest.raises(ForwardpassError) as e:
        abi.check(kernels.library())
    said = str(e.value)
    assert ("function repack: int repack(int, int, int, pointer, pointer, pointer, pointer) in the library, "
            "int repack(int, int, pointer, pointer, pointer, pointer, pointer) in kernels/abi.py") in said
    assert "function stream_read: float stream_read(pointer, size_t) in the library, double stream_read" in said
    assert "function decode_usage is not in kernels/abi.py" in said
    assert "function decode_steps is not in the library" in said
    assert "gemv" not in said and "decode_batch" not in said  # only what differs is named


def built_with(tmp_path, was: str, now: str) -> ctypes.CDLL:
    """abi.c built (alone, into tmp_path) against an abi.h with `was` replaced by `now`, and loaded."""
    header = (kernels.HERE / "abi.h").read_text()
    assert was in header
    (tmp_path / "abi.h").write_text(header.replace(was, now))
    shutil.copy(kernels.HERE / "simd.h", tmp_path / "simd.h")
    shutil.copy(kernels.HERE / "abi.c", tmp_path / "abi.c")
    target = tmp_path / "abi.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-std=c11", str(tmp_path / "abi.c"), "-o", str(target)], check=True)
    return ctypes.CDLL(str(target))


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_a_signature_changed_on_the_c_side_is_refused_by_name(tmp_path):
    """abi.h with gemv's M a size_t: the library built from it reports, and is refused for, the declaration it was
    compiled with."""
    library = built_with(tmp_path, "X(gemv, void, (const float *, x), (int, M),",
                         "X(gemv, void, (const float *, x), (size_t, M),")
    with pytest.raises(ForwardpassError, match=r"function gemv: void gemv\(pointer, size_t, int, int, pointer, "
                                               r"pointer, pointer, int, int, int, pointer, int\) in the library, void "
                                               r"gemv\(pointer, int, int,"):
        abi.check(library)


def test_the_tiles_take_their_sizes_from_the_abi():
    """The modules that lay out tiles and their scales read abi.py's BLOCK, GROUP and OCTET, not their values written
    again."""
    from forwardpass.quant import layers, packed, tiles
    from forwardpass.weights import native_read

    uses = {kernels: ("BLOCK", "GROUP", "OCTET"), packed: ("BLOCK", "GROUP", "OCTET"), tiles: ("BLOCK", "GROUP"),
            layers: ("BLOCK", "GROUP"), native_read: ("BLOCK", "GROUP")}
    for module, names in uses.items():
        for name in names:
            assert vars(module).get(name) == getattr(abi, name), f"{module.__name__} does not import abi.{name}"


def reordered(struct: type, a: str, b: str) -> type:
    """`struct` with fields a and b swapped, under the same name"""
    fields = list(struct._fields_)
    i, j = (next(k for k, (n, _) in enumerate(fields) if n == name) for name in (a, b))
    fields[i], fields[j] = fields[j], fields[i]
    return type(struct.__name__, (ctypes.Structure,), {"_fields_": fields})


@needs_kernels
def test_a_field_moved_on_the_python_side_is_refused_by_name():
    swapped = reordered(abi.Linear, "scale", "minimum")
    expected = abi.layout(structs=(swapped, abi.Layer, abi.Model, abi.Batch))
    with pytest.raises(ForwardpassError) as e:
        abi.check(kernels.library(), expected)
    said = str(e.value)
    assert "field Linear.scale: offset 24 bytes in the library, 32 bytes in kernels/abi.py" in said
    assert "Linear.minimum" in said and "Model" not in said  # only what differs is named


@needs_kernels
def test_a_changed_constant_is_refused_by_name():
    with pytest.raises(ForwardpassError, match="constant GROUP: value 16 in the library, 32 in kernels/abi.py"):
        abi.check(kernels.library(), abi.layout(constants=abi.CONSTANTS | {"GROUP": 32}))


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_a_field_moved_on_the_c_side_is_refused_by_name(tmp_path):
    """abi.h with Batch's k and v swapped: the library built from it is refused, naming both fields."""
    library = built_with(tmp_path, "    void *k, *v;\n", "    void *v, *k;\n")
    with pytest.raises(ForwardpassError) as e:
        abi.check(library)
    assert "field Batch.k: offset 40 bytes in the library, 32 bytes in kernels/abi.py" in str(e.value)
    assert "field Batch.v: offset 32 bytes in the library, 40 bytes in kernels/abi.py" in str(e.value)


def test_python_builds_the_structs_by_field_name():
    """A field given by name lands where the library reads it, whatever its position; one not in abi.h is refused."""
    m = abi.Model(vocab_size=49152, team=2, rows=3)
    raw = bytes(m)
    at = lambda name: getattr(abi.Model, name).offset  # noqa: E731
    assert int.from_bytes(raw[at("vocab_size"):at("vocab_size") + 4], "little") == 49152
    assert int.from_bytes(raw[at("team"):at("team") + 4], "little") == 2
    with pytest.raises(TypeError, match="Model has no field vocab"):
        abi.Model(vocab=1)
    with pytest.raises(TypeError):
        abi.Linear(4, 16, 32)  # by name only
