"""The kernels' interface as Python builds it: abi.h's structs (ctypes, fields by name), shared constants and exported
functions' signatures, and the check, when the library loads, that the library laid out every field, defined every
constant and declared every export as this file does (`check`: the library's own reports, abi.c's kernel_abi and
kernel_exports); `bind` then gives ctypes each export's signature from EXPORTS."""

from __future__ import annotations

import ctypes

from ..errors import ForwardpassError

_p, _i, _f = ctypes.c_void_p, ctypes.c_int, ctypes.c_float

BLOCK = 32  # inputs per quantization block
GROUP = 16  # rows of a quantized tile
OCTET = 160  # FACTORS: bytes per group and 8 blocks (128 factors, 16 fp16)
F32, F16, BF16, Q4, Q8 = 0, 1, 2, 4, 8  # how a weight matrix is stored (Linear.kind)
FACTORS, HALVES = 3, 5  # how block scales are stored, beside F32 and F16 (Linear.scales)
KV_F32, KV_F16, KV_Q8_0 = 0, 1, 2  # how a KV pool stores its pairs (Batch.kv)
KV_BLOCK_BYTES = 34  # KV_Q8_0: a block of BLOCK numbers, its binary16 scale then BLOCK int8 values (kv_q8_0.py)
ACT_EXACT, ACT_Q8 = 0, 1  # how a product's activation rows are quantized per block of 32: 15 bits, or int8 (Q8_0's)
MOST_ARGS = 12  # arguments an export may take (AbiExport.args)
CONSTANTS = {"BLOCK": BLOCK, "GROUP": GROUP, "OCTET": OCTET, "F32": F32, "F16": F16, "BF16": BF16, "Q4": Q4,
             "Q8": Q8, "FACTORS": FACTORS, "HALVES": HALVES, "KV_F32": KV_F32, "KV_F16": KV_F16, "KV_Q8_0": KV_Q8_0,
             "KV_BLOCK_BYTES": KV_BLOCK_BYTES, "ACT_EXACT": ACT_EXACT, "ACT_Q8": ACT_Q8, "MOST_ARGS": MOST_ARGS}


class _Struct(ctypes.Structure):
    """Built by field name only (a field not in abi.h is an error, not a new attribute); the rest start at zero."""

    def __init__(self, **fields):
        unknown = set(fields) - {name for name, _ in self._fields_}
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {', '.join(sorted(unknown))} (kernels/abi.h)")
        super().__init__(**fields)


class Linear(_Struct):
    _fields_ = [("kind", _i), ("N", _i), ("K", _i), ("w", _p), ("scale", _p), ("minimum", _p), ("bias", _p),
                ("scales", _i), ("zero", _i)]


class Layer(_Struct):
    _fields_ = [("attn_norm", _p), ("ffn_norm", _p), ("qkv", Linear), ("out", Linear), ("gate_up", Linear),
                ("down", Linear), ("q_norm", _p), ("k_norm", _p), ("attn_post_norm", _p), ("ffn_post_norm", _p),
                ("window", _i), ("local_rope", _i)]


class Model(_Struct):
    _fields_ = [("n_layers", _i), ("d_model", _i), ("n_heads", _i), ("n_kv_heads", _i), ("head_dim", _i),
                ("hidden", _i), ("vocab_size", _i), ("context_length", _i), ("capacity", _i), ("norm_eps", _f),
                ("embeddings", Linear), ("layers", ctypes.POINTER(Layer)), ("norm_f", _p), ("lm_head", Linear),
                ("cos", _p), ("sin", _p), ("work", _p), ("threads", _i),
                ("rows", _i), ("attn_scale", _f), ("embed_scale", _f), ("gelu", _i), ("cos_local", _p),
                ("sin_local", _p), ("team", _i), ("activations", _i)]


class Batch(_Struct):
    _fields_ = [("rows", _i), ("tokens", _p), ("positions", _p), ("lengths", _p), ("k", _p), ("v", _p),
                ("slots", _i), ("block_size", _i), ("max_blocks", _i), ("tables", _p), ("kv", _i),
                ("chunk", _p), ("emit", _p)]


class RepackFormat(_Struct):
    _fields_ = [("kind", _i), ("block_bytes", _i), ("tile", _i), ("scales", _i), ("zero", _i)]


class AbiExport(_Struct):
    _fields_ = [("name", ctypes.c_char_p), ("result", ctypes.c_char), ("args", ctypes.c_char * (MOST_ARGS + 1))]


STRUCTS = (Linear, Layer, Model, Batch, RepackFormat, AbiExport)


class _Entry(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_longlong)]


_n = ctypes.POINTER(_i)  # int *n: where a table's length goes
# Every function the library exports (abi.h's EXPORTS): name → (result, argument types) as ctypes passes them, None for
# void; a buffer, a struct (ctypes.byref) or an array as c_void_p, a table read back as a pointer to its rows
EXPORTS = {
    "kernel_abi": (ctypes.POINTER(_Entry), [_n]),
    "kernel_exports": (ctypes.POINTER(AbiExport), [_n]),
    "kernel_isa": (ctypes.c_char_p, []),
    "gemv": (None, [_p, _i, _i, _i, _p, _p, _p, _i, _i, _i, _p, _i]),
    "kernel_tiles": (_i, [_i]),
    "decode_workspace": (ctypes.c_size_t, [_p]),
    "decode_usage": (None, [_p]),
    "decode_batch": (_i, [_p, _p, _i, _p, _i, _p, _p]),
    "dequantize": (None, [_i, _i, _i, _p, _p, _p, _i, _i, _p]),
    "repack": (_i, [_i, _i, _i, _p, _p, _p, _p]),
    "repack_formats": (ctypes.POINTER(RepackFormat), [_n]),
    "stream_read": (_f, [_p, ctypes.c_size_t]),
}
# a ctypes type → the code kernel_exports gives its C type (abi.h's AbiExport); any pointer type is "p"
_CODES = {None: "v", _i: "i", ctypes.c_size_t: "z", _f: "f", ctypes.c_double: "d", ctypes.c_char_p: "s", _p: "p"}
_C_NAMES = {"v": "void", "i": "int", "z": "size_t", "f": "float", "d": "double", "s": "const char *", "p": "pointer"}


def layout(structs=STRUCTS, constants=None) -> dict[str, int]:
    """What Python expects the library to report: "Linear" → its size, "Linear.kind" → a field's offset, "BLOCK" → a
    constant's value."""
    out: dict[str, int] = {}
    for s in structs:
        out[s.__name__] = ctypes.sizeof(s)
        out |= {f"{s.__name__}.{name}": getattr(s, name).offset for name, _ in s._fields_}
    return out | (CONSTANTS if constants is None else constants)


def reported(lib: ctypes.CDLL) -> dict[str, int]:
    """The library's own report of abi.h (kernel_abi)."""
    n = ctypes.c_int()
    entries = lib.kernel_abi(ctypes.byref(n))
    return {entries[i].name.decode(): entries[i].value for i in range(n.value)}


def mismatches(expected: dict[str, int], got: dict[str, int]) -> list[str]:
    """Every name whose size, offset or value differs between the two sides, or that one side lacks, in words."""
    what = lambda name: ("constant" if name in CONSTANTS else "field" if "." in name else "struct")  # noqa: E731
    unit = lambda name: "" if name in CONSTANTS else " bytes"  # noqa: E731
    said = []
    for name in [*expected, *(k for k in got if k not in expected)]:
        if name not in got:
            said.append(f"{what(name)} {name} is not in the library")
        elif name not in expected:
            said.append(f"{what(name)} {name} is not in kernels/abi.py")
        elif got[name] != expected[name]:
            place = "size" if what(name) == "struct" else "offset" if what(name) == "field" else "value"
            said.append(f"{what(name)} {name}: {place} {got[name]}{unit(name)} in the library, {expected[name]}"
                        f"{unit(name)} in kernels/abi.py")
    return said


def code(ctype) -> str:
    """The code kernel_exports gives the C type that `ctype` passes (None: void)."""
    if ctype in _CODES:
        return _CODES[ctype]
    if isinstance(ctype, type) and issubclass(ctype, ctypes._Pointer):
        return "p"
    raise TypeError(f"kernels/abi.py declares a {ctype.__name__}, which has no code (abi.c's TYPE_CODE, _CODES here)")


def signatures() -> dict[str, str]:
    """What Python expects kernel_exports to report: each export's name → its result's code, then its arguments'
    ("ipi": int f(pointer, int))."""
    return {name: code(result) + "".join(map(code, args)) for name, (result, args) in EXPORTS.items()}


def reported_signatures(lib: ctypes.CDLL) -> dict[str, str]:
    """The library's own report of its exports (kernel_exports), as `signatures` writes them."""
    n = ctypes.c_int()
    rows = lib.kernel_exports(ctypes.byref(n))
    return {rows[i].name.decode(): (rows[i].result + rows[i].args).decode() for i in range(n.value)}


def _c(name: str, signature: str) -> str:
    """A signature as C, every pointer one word: "int repack(int, pointer)"."""
    return f"{_C_NAMES[signature[0]]} {name}({', '.join(_C_NAMES[c] for c in signature[1:]) or 'void'})"


def signature_mismatches(expected: dict[str, str], got: dict[str, str]) -> list[str]:
    """Every export whose signature differs between the two sides, or that one side lacks, in words."""
    said = []
    for name in [*expected, *(k for k in got if k not in expected)]:
        if name not in got:
            said.append(f"function {name} is not in the library")
        elif name not in expected:
            said.append(f"function {name} is not in kernels/abi.py")
        elif got[name] != expected[name]:
            said.append(f"function {name}: {_c(name, got[name])} in the library, {_c(name, expected[name])} in "
                        f"kernels/abi.py")
    return said


def _sign(lib: ctypes.CDLL, name: str) -> None:
    function = getattr(lib, name)
    function.restype, function.argtypes = EXPORTS[name]


def check(lib: ctypes.CDLL, expected: dict[str, int] | None = None) -> None:
    """Refuse a library whose structs, constants (or `expected`'s) or exports' signatures differ from this file's,
    naming each difference. The reports are read through EXPORTS' own declarations of kernel_abi and kernel_exports,
    which the second report checks too."""
    _sign(lib, "kernel_abi")
    bad = mismatches(layout() if expected is None else expected, reported(lib))
    if bad:
        raise ForwardpassError("the native kernels and kernels/abi.py disagree on abi.h: " + "; ".join(bad))
    _sign(lib, "kernel_exports")
    bad = signature_mismatches(signatures(), reported_signatures(lib))
    if bad:
        raise ForwardpassError("the native kernels and kernels/abi.py disagree on abi.h's exports: " + "; ".join(bad))


def bind(lib: ctypes.CDLL) -> ctypes.CDLL:
    """`lib`, once `check`ed, with every export's argtypes and restype set from EXPORTS."""
    check(lib)
    for name in EXPORTS:
        _sign(lib, name)
    return lib
