"""One prompt-cache file: a full KV block as written to disk, with everything a reader needs to prove it is the block it
wants. A header (magic, format version, the namespace, the block's chain key and the previous block's, the block's
tokens, the payload's length and checksum, the header's own checksum) and the payload (K then V of the block, every
layer, as the pool holds them). A file that fails any check is no hit: `parse` raises BadFile saying why."""

from __future__ import annotations

import hashlib
import struct
import zlib
from collections.abc import Sequence

import numpy as np

MAGIC = b"FPKVBLK\0"
VERSION = 1  # raised whenever the layout of the header or the payload changes
KEY_BYTES = 16  # blake2b digests: the chain key and the namespace
SUFFIX = ".kv"
# magic, version, namespace, key, previous key, tokens in the block, payload bytes, payload crc32
FIXED = struct.Struct(f"<8sH{KEY_BYTES}s{KEY_BYTES}s{KEY_BYTES}sIQI")
NO_PREVIOUS = bytes(KEY_BYTES)  # the previous key of a sequence's first block


class BadFile(Exception):
    """A file that is not the block asked for (short, foreign, corrupt or of another version): why, in a few words."""


def chain_key(previous: bytes, tokens: Sequence[int]) -> bytes:
    """The key of a block holding `tokens` after the block keyed `previous` (NO_PREVIOUS: the first): stable across
    processes and machines, so a restarted server finds what an earlier one wrote."""
    h = hashlib.blake2b(previous, digest_size=KEY_BYTES)
    h.update(np.asarray(tokens, dtype="<i4").tobytes())
    return h.digest()


def file_name(key: bytes) -> str:
    return key.hex() + SUFFIX


def header(namespace: bytes, key: bytes, previous: bytes, tokens: Sequence[int], payload: memoryview) -> bytes:
    """The header written before `payload`, its own crc32 last."""
    head = FIXED.pack(MAGIC, VERSION, namespace, key, previous, len(tokens), payload.nbytes,
                      zlib.crc32(payload)) + np.asarray(tokens, dtype="<i4").tobytes()
    return head + struct.pack("<I", zlib.crc32(head))


def header_bytes(tokens: int) -> int:
    return FIXED.size + 4 * tokens + 4


def parse(data: bytes, namespace: bytes, key: bytes, previous: bytes, tokens: Sequence[int],
          payload_bytes: int) -> memoryview:
    """The payload of `data`, a whole file, if it is the block keyed `key` after `previous` holding `tokens` in this
    `namespace`, of `payload_bytes` bytes, its checksums right; else BadFile."""
    size = header_bytes(len(tokens))
    if len(data) < FIXED.size:
        raise BadFile(f"{len(data)} bytes, shorter than a header")
    magic, version, space, own_key, own_previous, n, length, crc = FIXED.unpack_from(data)
    if magic != MAGIC:
        raise BadFile("not a prompt-cache file")
    if version != VERSION:
        raise BadFile(f"format version {version}, not {VERSION}")
    if space != namespace:
        raise BadFile("written for another model, storage, KV format or block size")
    if own_key != key or own_previous != previous or n != len(tokens):
        raise BadFile("a different block's file")
    if len(data) < size or zlib.crc32(data[:size - 4]) != struct.unpack_from("<I", data, size - 4)[0]:
        raise BadFile("its header is short or damaged")
    if data[FIXED.size:size - 4] != np.asarray(tokens, dtype="<i4").tobytes():
        raise BadFile("its tokens differ")
    if length != payload_bytes:
        raise BadFile(f"a payload of {length} bytes, not {payload_bytes}")
    payload = memoryview(data)[size:]
    if payload.nbytes != length:
        raise BadFile(f"{payload.nbytes} payload bytes where its header says {length} (truncated or overlong)")
    if zlib.crc32(payload) != crc:
        raise BadFile("its payload fails the checksum")
    return payload
