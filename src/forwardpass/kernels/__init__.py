"""Native kernels, compiled on first use with the machine's C compiler and loaded with ctypes.

Matrix-vector products over weights as they are stored — fp32, fp16, bf16, 8- and 4-bit blocks (`gemv.h`;
`gemv.c` runs a decode step's few rows at a time), a whole decode step in one call (`decode_step.c`, driven by
`forwardpass.engine.native_step`), quantized tiles back to float32 for prefill (`dequantize.c`), and a read of memory in
concurrent streams (`stream_read.c`, the bandwidth roof of `forwardpass.article.machine`), and a file's blocks in the
formats it names (repack_formats) straight into the tiles the products read (`repack.c`, for loading).

One source, four builds of its vector operations (`simd.h`): avx512 (F, BW, VL and VNNI), avx2 (with FMA and
F16C), neon (ARM64) and generic (portable C, the reference). The best build this CPU runs is chosen at run time;
FORWARDPASS_KERNELS=avx512|avx2|neon|generic|off forces one (a build this CPU cannot run is refused with what it lacks).
Where the CPU has a tile unit (Intel AMX), the avx512 build multiplies a step's several rows on it (`tiles.h`), with
the same bits; FORWARDPASS_TILES=off keeps them on the vector unit. Each build is cached under its source, compiler,
flags and CPU. Where no compiler is found, or a build fails (said once, with the compiler's first error), the next
build down is tried; with none, `available()` is False and callers use the PyTorch path."""

from __future__ import annotations

import ctypes
import fcntl
import functools
import hashlib
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ForwardpassError
from . import abi
from .abi import BLOCK, GROUP, OCTET  # inputs per block, rows per tile, bytes of 8 blocks' factored scales

if TYPE_CHECKING:  # the products over PyTorch tensors (the reference layers, tests) import it when called
    import torch

HERE = Path(__file__).parent
SOURCES = [HERE / n for n in ("abi.c", "gemv.c", "decode_step.c", "stream_read.c", "dequantize.c", "repack.c")]
HEADERS = [HERE / n for n in ("abi.h", "gemv.h", "simd.h", "team.h", "tiles.h")]
COMMON_FLAGS = ["-O3", "-fopenmp", "-shared", "-fPIC", "-std=c11"]
# build → (the CPU flags it needs, as /proc/cpuinfo names them; its compiler flags). The x86 builds name their tuning
# and vector width rather than the host's (-mtune=native): the compiler's vectorized float sums (norms, softmax) add in
# an order that follows the vector width the tuning prefers (512 bits for AMD's, 256 for Intel's), so one build gives
# the same bits on every CPU that runs it.
BUILDS = {
    "avx512": (("avx512f", "avx512bw", "avx512vl", "avx512_vnni", "fma", "f16c"),
               ["-DFP_AVX512", "-march=x86-64-v4", "-mavx512vnni", "-mtune=generic", "-mprefer-vector-width=256"]),
    "avx2": (("avx2", "fma", "f16c"), ["-DFP_AVX2", "-march=x86-64-v3", "-mtune=generic"]),
    "neon": ((), ["-DFP_NEON"]),  # every ARM64 CPU has Advanced SIMD
    "generic": ((), ["-march=native"]),  # portable source, this machine's code generation (FMA for fmaf, …)
}
X86_ONLY = ("avx512", "avx2")


@functools.cache
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags (Linux's /proc/cpuinfo; elsewhere none, so only the generic build is chosen)."""
    info = Path("/proc/cpuinfo")
    if not info.exists():
        return frozenset()
    for line in info.read_text().splitlines():
        if line.startswith(("flags", "Features")):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def missing(build: str) -> list[str]:
    """What this CPU lacks for `build` (empty: it runs it)."""
    flags, (needs, _) = cpu_flags(), BUILDS[build]
    machine = platform.machine().lower()
    if build in X86_ONLY and machine not in ("x86_64", "amd64"):
        return [f"the x86-64 instruction set (this is {machine})"]
    if build == "neon" and machine not in ("arm64", "aarch64"):
        return [f"the ARM64 instruction set (this is {machine})"]
    return [f for f in needs if f not in flags]


def choice() -> list[str]:
    """The builds to try, best first: FORWARDPASS_KERNELS's one, or every one this CPU runs."""
    forced = os.environ.get("FORWARDPASS_KERNELS", "").strip().lower()
    if forced in ("off", "none", "0"):
        return []
    if forced:
        if forced not in BUILDS:
            raise ForwardpassError(f"FORWARDPASS_KERNELS={forced}: choose from {', '.join(BUILDS)} or off")
        lacking = missing(forced)
        if lacking:
            raise ForwardpassError(f"FORWARDPASS_KERNELS={forced}: this CPU lacks {', '.join(lacking)}")
        return [forced]
    return [b for b in BUILDS if not missing(b)]


def _cache_dir() -> Path:
    root = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return root / "forwardpass" / "kernels"


@functools.cache
def _compiler() -> str:
    r = subprocess.run(["cc", "--version"], capture_output=True, text=True)
    return r.stdout.splitlines()[0] if r.stdout else "cc"


_SAID: set[str] = set()


def _compile_and_link(flags: list[str], out: Path) -> subprocess.CompletedProcess:
    """The sources compiled with `flags`, each its own object and all at once (two of them take nearly all the time,
    so a machine of several cores compiles them side by side), then linked into `out`; the first failing step's
    result, else the link's."""
    import tempfile

    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        objects = [Path(tmp) / f"{src.stem}.o" for src in SOURCES]
        running = [subprocess.Popen(["cc", *flags, "-c", str(src), "-o", str(obj)], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
                   for src, obj in zip(SOURCES, objects, strict=True)]
        done = [_finished(p) for p in running]
        failed = next((r for r in done if r.returncode), None)
        if failed is not None:
            return failed
        return subprocess.run(["cc", *flags, *map(str, objects), "-o", str(out)], capture_output=True, text=True)


def _finished(p: subprocess.Popen) -> subprocess.CompletedProcess:
    out, err = p.communicate()
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def _compile(build: str) -> Path | None:
    """The shared library of `build`, compiled if its cache entry is missing; None (said once) if it fails."""
    flags = [*COMMON_FLAGS, *BUILDS[build][1]]
    cpu = platform.machine() + " " + " ".join(sorted(cpu_flags()))
    key = b"".join(p.read_bytes() for p in SOURCES + HEADERS) + "\0".join([_compiler(), *flags, cpu]).encode()
    target = _cache_dir() / f"kernels-{build}-{hashlib.sha256(key).hexdigest()[:16]}.so"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one process compiles a build; others starting meanwhile wait and use it
        if target.exists():
            return target
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        if sys.stderr.isatty():  # a person waiting at a terminal is told why the first run takes a while
            print(f"forwardpass: compiling the {build} kernels for this CPU (once: kept in {target.parent})…",
                  file=sys.stderr, flush=True)
        r = _compile_and_link(flags, tmp)
        if r.returncode:
            if build not in _SAID:
                _SAID.add(build)
                lines = r.stderr.splitlines()
                first = next((line for line in lines if "error" in line.lower()), r.stderr.strip()[:200])
                print(f"forwardpass: the {build} kernels did not compile ({first}); trying the next build",
                      file=sys.stderr)
            tmp.unlink(missing_ok=True)
            return None
        tmp.replace(target)
        return target


def load(build: str) -> ctypes.CDLL | None:
    """One build's library (for comparing builds; `library()` is the one in use), or None if it fails to compile."""
    if not shutil.which("cc"):
        return None
    path = _compile(build)
    return None if path is None else abi.bind(ctypes.CDLL(str(path)))  # refused unless it matches abi.py


def _build() -> ctypes.CDLL | None:
    tiles = os.environ.get("FORWARDPASS_TILES", "on").strip().lower()
    if tiles not in ("on", "off"):
        raise ForwardpassError(f"FORWARDPASS_TILES={tiles}: choose on or off")
    for build in choice():
        lib = load(build)
        if lib is not None:
            lib.kernel_tiles(int(tiles == "on"))
            return lib
    return None


def tiles() -> bool:
    """Whether the kernels in use multiply a step's several rows on the CPU's tile unit (AMX)."""
    return available() and bool(_LIB.kernel_tiles(-1))


_LIB: ctypes.CDLL | None | bool = False  # False: not built yet


def available() -> bool:
    global _LIB
    if _LIB is False:
        _LIB = _build()
    return _LIB is not None


def isa() -> str | None:
    """The build in use ("avx512", "avx2", "generic"), or None without kernels."""
    return available() and _LIB.kernel_isa().decode() or None


def library() -> ctypes.CDLL:
    """The loaded kernels; call only where available()."""
    return _LIB


# a weight matrix's storage (a float dtype by name, or 4 or 8 bits) → abi.h's Linear.kind
WEIGHT_KINDS = {"float32": abi.F32, "float16": abi.F16, "bfloat16": abi.BF16, 4: abi.Q4, 8: abi.Q8}
FACTORS, HALVES = abi.FACTORS, abi.HALVES  # block scales as K-quants keep them (uint8; quant.Factored), float32 per 16


def dtype_name(dtype) -> str:
    """A numpy or PyTorch dtype's name: float32, float16, bfloat16, uint8, …"""
    return str(dtype).removeprefix("torch.")


def weight_kind(storage) -> int | None:
    """abi.h's Linear.kind for weights stored as `storage` (a numpy or PyTorch float dtype, or 4 or 8 bits), or None
    for a storage the kernels do not read."""
    return WEIGHT_KINDS.get(storage if isinstance(storage, int) else dtype_name(storage))


def gemv(x: torch.Tensor, kind: torch.dtype | int, w: torch.Tensor, n: int, scale: torch.Tensor | None = None,
         minimum: torch.Tensor | None = None, zero: int = 0, lib: ctypes.CDLL | None = None,
         activations: int = abi.ACT_EXACT) -> torch.Tensor:
    """x (M, K) float32 @ Wᵀ → (M, n) float32, W stored as `kind`: a float dtype (w (n, K)), or 8 or 4 bits
    tiled as quant.QuantizedLinear stores them (w (groups, K/32, 512 or 256) bytes, scale and minimum
    (groups, K/32, 16) float32 or float16, (groups, K/256, 160) uint8 factors, or (groups, K/32, 2, 16) float32 per 16
    weights (8 bits); groups = n/16 rounded up; minimum
    None: -zero × scale). Call only where available() (or with `lib`, one build's library); quantized K a multiple
    of 32. Every tensor contiguous and on the CPU. `activations`: how integer weights' products quantize x's rows per
    block of 32, abi.ACT_EXACT (15 bits) or abi.ACT_Q8 (int8, llama.cpp's Q8_0); float weights read x as it is."""
    import torch

    if activations not in (abi.ACT_EXACT, abi.ACT_Q8):
        raise ForwardpassError(f"activations {activations!r}: choose abi.ACT_EXACT ({abi.ACT_EXACT}) or abi.ACT_Q8 "
                               f"({abi.ACT_Q8})")
    M, K = x.shape
    x = x.contiguous()
    y = torch.empty(M, n, dtype=torch.float32)
    scales = [None if t is None else t.data_ptr() for t in (scale, minimum)]
    (lib or _LIB).gemv(x.data_ptr(), M, weight_kind(kind), K, w.data_ptr(), *scales, scales_kind(scale), zero, n,
                       y.data_ptr(), activations)
    return y


def dequantize(bits: int, q: torch.Tensor, scale: torch.Tensor, minimum: torch.Tensor | None, n: int, k: int,
               zero: int = 0, lib: ctypes.CDLL | None = None) -> torch.Tensor:
    """(n, k) float32 from 8- or 4-bit tiles as quant.QuantizedLinear stores them (its `dequantize`, bit for bit;
    minimum None: -zero × scale). Call only where available() (or with `lib`); every tensor contiguous, on the CPU."""
    import torch

    w = torch.empty(n, k, dtype=torch.float32)
    mins = None if minimum is None else minimum.data_ptr()
    (lib or _LIB).dequantize(bits, n, k, q.data_ptr(), scale.data_ptr(), mins, scales_kind(scale), zero, w.data_ptr())
    return w


def repack_formats(lib: ctypes.CDLL | None = None) -> list[dict]:
    """The block formats repack.c reads, one row each as it states them (abi.h's RepackFormat; zero -1: the format
    keeps minimums of its own). weights/formats.py holds its own rows against these."""
    n = ctypes.c_int()
    rows = (lib or _LIB).repack_formats(ctypes.byref(n))
    return [{name: getattr(rows[i], name) for name, _ in abi.RepackFormat._fields_} for i in range(n.value)]


def repack(kind: int, tile: int, scales: int, zero: int | None, data: np.ndarray, rows: int, cols: int,
           q: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, int | None]:
    """A band of a GGUF tensor of ggml type `kind` (data: a C-contiguous numpy array of its (rows, row bytes)), in the
    kernels' layout (quant/packed.py's Tiles): q (groups, cols/32, tile) bytes; scale and minimum as `scales` says: F16
    (groups, cols/32, 16), the file's own (float32 where one is infinite or NaN), FACTORS (groups, cols/256, 160)
    bytes, HALVES (groups, cols/32, 2, 16) float32; and the zero of a symmetric grid, whose minimum is then None.
    The format's facts (tile, scales, zero) are its row in weights/formats.py, which checks them against
    repack_formats(). `q`, where given, is where the tiles go (a slice of the matrix's own: no copy after). Call only
    where available()."""
    groups, blocks = -(-rows // GROUP), cols // BLOCK
    if q is None:
        q = np.empty((groups, blocks, tile), dtype=np.uint8)
    elif q.shape != (groups, blocks, tile) or q.dtype != np.uint8 or not q.flags.c_contiguous:
        raise ForwardpassError(f"tiles for {rows} × {cols} go into ({groups}, {blocks}, {tile}) contiguous bytes, not "
                               f"{tuple(q.shape)} {q.dtype}")
    shapes = {FACTORS: (groups, blocks // 8, OCTET), HALVES: (groups, blocks, 2, GROUP)}
    shape = shapes.get(scales, (groups, blocks, GROUP))
    dtype = {FACTORS: np.uint8, HALVES: np.float32}.get(scales, np.float16)
    scale = np.empty(shape, dtype=dtype)
    minimum = None if zero is not None else np.empty(shape, dtype=dtype)
    bad = _LIB.repack(kind, rows, cols, data.ctypes.data, q.ctypes.data, scale.ctypes.data,
                      None if minimum is None else minimum.ctypes.data)
    if bad < 0:
        raise ForwardpassError(f"the native repacking does not read ggml type {kind}")
    if bad:  # kept as float32, so that packing widens the matrix's scales rather than take them as fp16
        scale, minimum = scale.astype(np.float32), None if minimum is None else minimum.astype(np.float32)
    return q, scale, minimum, zero


def scales_kind(scale) -> int:
    """abi.h's Linear.scales for quantized weights' scales and minimums (numpy or PyTorch): F32, F16, FACTORS for
    uint8 buffers, HALVES for float32 ones per 16 weights (4-D) (None: float weights, F32)."""
    if scale is None:
        return abi.F32
    name = dtype_name(scale.dtype)
    if name == "uint8":
        return FACTORS
    if scale.ndim == 4:
        if name != "float32":
            raise ForwardpassError(f"scales per 16 weights must be float32, not {name}")
        return HALVES
    if name not in ("float32", "float16"):
        raise ForwardpassError(f"block scales must be float32, float16 or uint8 factors, not {name}")
    return WEIGHT_KINDS[name]


def stream_read(x) -> float:
    """Sum of a float32 CPU tensor, read in 4 concurrent streams per thread (machine.memory_bandwidth)."""
    x = x.contiguous().view(-1)
    usable = x.numel() - x.numel() % (64 * 64)  # whole 16-float vectors for every stream of every thread
    return _LIB.stream_read(x.data_ptr(), usable)
