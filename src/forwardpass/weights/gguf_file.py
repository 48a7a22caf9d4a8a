"""A GGUF file memory-mapped: its metadata as Python values and its tensors as views of the map, read in one
pass over the header. (`gguf.GGUFReader` builds a numpy view per metadata item: 5.5 s for the default model's
49,152-token vocabulary, where this takes about 0.1 s. `gguf` still supplies the format's constants and
dequantization.)

Layout (version 2 and 3, little-endian): magic, version u32, tensor count u64, metadata count u64; each
metadata item a key string, a value type u32 and the value; each tensor's name, dimension count u32, dimensions
u64 (innermost first), type u32 and offset u64 into the data, which starts at the next multiple of
`general.alignment` (default 32) after the header."""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .ggml import BLOCK_SIZES, GGMLType

# value type → struct format (8: string, 9: array are read apart)
SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
NUMPY = {0: np.uint8, 1: np.int8, 2: np.uint16, 3: np.int16, 4: np.uint32, 5: np.int32, 6: np.float32, 7: np.bool_,
         10: np.uint64, 11: np.int64, 12: np.float64}
STRING, ARRAY = 8, 9


class Truncated(ValueError):
    pass


class NotGGUF(ValueError):
    """The file does not start as a GGUF file does: `magic` holds its first bytes (up to 4)."""

    def __init__(self, magic: bytes):
        super().__init__(f"not a GGUF file (starts with {magic!r})")
        self.magic = magic


@dataclass
class Tensor:
    name: str
    kind: GGMLType
    shape: tuple[int, ...]  # outermost first, as torch and numpy order them
    data: np.ndarray  # a read-only view of the map: float arrays shaped `shape`, block formats (rows, row bytes)
    offset: int  # of its first byte in the file

    @property
    def n_elements(self) -> int:
        return int(np.prod(self.shape))


class GGUFFile:
    def __init__(self, path: Path):
        with open(path, "rb") as f:  # the magic is read before the map: an empty file cannot be mapped
            magic = f.read(4)
            if magic != b"GGUF":
                raise NotGGUF(magic)
            self.map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        self.at = 4
        version = self._scalar(4)
        if version not in (2, 3):
            raise ValueError(f"GGUF version {version} is not supported (2 and 3 are)")
        n_tensors, n_fields = self._scalar(10), self._scalar(10)
        self.fields, self.types = {}, {}  # key → value; key → (value type, array item type or None)
        for _ in range(n_fields):
            key, kind = self._string(), self._scalar(4)
            self._item = None
            self.fields[key] = self._value(kind)
            self.types[key] = (kind, self._item)
        infos = []
        for _ in range(n_tensors):
            name = self._string()
            dims = [self._scalar(10) for _ in range(self._scalar(4))]
            infos.append((name, self._scalar(4), dims, self._scalar(10)))
        align = int(self.fields.get("general.alignment", 32))
        start = (self.at + align - 1) // align * align
        self.tensors = [self._tensor(start, *info) for info in infos]

    def release(self, tensor: Tensor, begin: int = 0, end: int | None = None) -> None:
        """Let the kernel drop a tensor's pages (its bytes [begin, end)) from this process once they have been
        copied out: a load then holds at most one piece of the file at a time (the pages stay in the page cache for
        the next reader, and a page read again is read again from the file)."""
        end = tensor.data.nbytes if end is None else end
        start = (tensor.offset + begin) // mmap.PAGESIZE * mmap.PAGESIZE
        if hasattr(mmap, "MADV_DONTNEED") and end > begin:
            self.map.madvise(mmap.MADV_DONTNEED, start, tensor.offset + end - start)

    def _bytes(self, n: int) -> bytes:
        if self.at + n > len(self.map):
            raise Truncated(f"the file ends at byte {len(self.map)}, inside its header")
        b = self.map[self.at:self.at + n]
        self.at += n
        return b

    def _scalar(self, kind: int):
        fmt = SCALARS[kind]
        return struct.unpack(fmt, self._bytes(struct.calcsize(fmt)))[0]

    def _string(self) -> str:
        return self._bytes(self._scalar(10)).decode("utf-8", errors="replace")

    def _value(self, kind: int):
        if kind == STRING:
            return self._string()
        if kind == ARRAY:
            item, count = self._scalar(4), self._scalar(10)
            self._item = item
            if item == STRING:  # a vocabulary: a hundred thousand strings, read in one tight loop
                out, m, at, length = [], self.map, self.at, struct.Struct("<Q").unpack_from
                for _ in range(count):
                    if at + 8 > len(m):
                        raise Truncated(f"the file ends at byte {len(m)}, inside its header")
                    n = length(m, at)[0]
                    out.append(m[at + 8:at + 8 + n].decode("utf-8", errors="replace"))
                    at += 8 + n
                if at > len(m):
                    raise Truncated(f"the file ends at byte {len(m)}, inside its header")
                self.at = at
                return out
            if item not in NUMPY:
                raise ValueError(f"metadata array of value type {item} is not supported")
            size = np.dtype(NUMPY[item]).itemsize * count
            return np.frombuffer(self._bytes(size), dtype=NUMPY[item]).tolist()
        if kind not in SCALARS:
            raise ValueError(f"metadata value type {kind} is not supported")
        return self._scalar(kind)

    def _tensor(self, start: int, name: str, kind: int, dims: list[int], offset: int) -> Tensor:
        try:
            kind = GGMLType(kind)
        except ValueError:
            raise ValueError(f"tensor {name} has unknown type {kind}") from None
        shape = tuple(reversed(dims))
        block, size = BLOCK_SIZES[kind]
        if dims[0] % block:
            raise ValueError(f"tensor {name}: rows of {dims[0]} do not fill {kind.name} blocks of {block}")
        rows, row_bytes = int(np.prod(shape[:-1])), dims[0] // block * size
        if start + offset + rows * row_bytes > len(self.map):
            raise Truncated(f"tensor {name} runs past the end of the file")
        data = np.frombuffer(self.map, dtype=np.uint8, count=rows * row_bytes, offset=start + offset)
        if kind in (GGMLType.F32, GGMLType.F16):
            data = data.view(np.float32 if kind == GGMLType.F32 else np.float16).reshape(shape)
        else:
            data = data.reshape(*shape[:-1], row_bytes)
        return Tensor(name, kind, shape, data, start + offset)
