"""The native kernels' layout of integer weights (kernels/gemv.h): rows in groups of 16, each group's blocks as
64-byte tiles of 16 rows × 4 inputs; a group's scales (and minimums) side by side, float16, float32, factored bytes
or float32 per 16 weights. Tiling and untiling them with PyTorch ops (packed.py joins a matrix's bands)."""

from __future__ import annotations

import torch

from ..kernels.abi import BLOCK, GROUP  # inputs per block, rows per tile (abi.h)
from .blocks import scaled


def tile(q: torch.Tensor, bits: int) -> torch.Tensor:
    """q (rows, blocks, 32) → (groups, blocks, tile bytes): per group and block, 64-byte tiles of 16 rows × 4
    inputs (byte 4 r + j). 8 bits: tile t holds inputs 4t + j. 4 bits: tile u holds inputs 8u + j in its low
    nibbles and 8u + 4 + j in its high ones."""
    rows, blocks, _ = q.shape
    if bits == 4:
        q = q.view(rows, blocks, 4, 2, 4)  # (row, block, u, nibble, j)
        q = q[..., 0, :] | (q[..., 1, :] << 4)  # (row, block, u, j)
    g = q.reshape(rows // GROUP, GROUP, blocks, -1, 4)  # (group, r, block, tile, j)
    return g.permute(0, 2, 3, 1, 4).reshape(rows // GROUP, blocks, -1).contiguous()


def untile(q: torch.Tensor, bits: int) -> torch.Tensor:
    """The inverse of `tile`: (rows, blocks, 32) values."""
    groups, blocks, _ = q.shape
    t = q.view(groups, blocks, -1, GROUP, 4).permute(0, 3, 1, 2, 4)  # (group, r, block, tile, j)
    if bits == 4:
        t = torch.stack([t & 15, t >> 4], dim=-2)  # (group, r, block, u, nibble, j)
    return t.reshape(groups * GROUP, blocks, BLOCK)


def untiled(q: torch.Tensor, scale: torch.Tensor, minimum: torch.Tensor | None, bits: int, rows: int,
            zero: int = 0) -> torch.Tensor:
    """Tiles back to the (rows, K) float32 weight with PyTorch ops (on any device): q × scale + minimum (None:
    -zero × scale)."""
    scale = untile_scales(scale)
    minimum = scale.float() * -zero if minimum is None else untile_scales(minimum)
    w = scaled(untile(q, bits).float(), scale, minimum)
    return w.view(w.shape[0], -1)[:rows]


def padded(t: torch.Tensor, rows: int) -> torch.Tensor:
    """t with `rows` zero rows after its own."""
    return torch.cat([t, t.new_zeros(rows, *t.shape[1:])]) if rows else t


def tile_factors(factor: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """Factored scales (rows, blocks) uint8 × (rows, blocks / 8) float16 → (groups, blocks / 8, 160) bytes: per
    group and 8 blocks, the (8 blocks, 16 rows) factors, then the 16 rows' float16 scales."""
    rows, blocks = factor.shape
    f = factor.view(rows // GROUP, GROUP, blocks // 8, 8).permute(0, 2, 3, 1).reshape(rows // GROUP, blocks // 8, -1)
    d = scale.view(rows // GROUP, GROUP, blocks // 8).transpose(1, 2).contiguous().view(torch.uint8)
    return torch.cat([f, d], dim=-1)


def factor_parts(s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Tiled factored scales → their factors (groups, blocks / 8, 8, 16) uint8 and scales (groups, blocks / 8, 16)
    float16."""
    groups, octets, _ = s.shape
    return s[..., :8 * GROUP].reshape(groups, octets, 8, GROUP), s[..., 8 * GROUP:].contiguous().view(torch.float16)


def scale_values(s: torch.Tensor) -> torch.Tensor:
    """Tiled scales as values, (groups, blocks, 16): factored ones multiplied out in float32 (exactly), float ones
    as they are."""
    if s.dtype != torch.uint8:
        return s
    factor, scale = factor_parts(s)
    return (factor.float() * scale.float()[:, :, None, :]).flatten(1, 2)


def scale_rows(s: torch.Tensor, group: torch.Tensor, row: torch.Tensor) -> torch.Tensor:
    """The scales of rows `row` of groups `group` (each (n,)), (n, blocks, 1) (per 16 weights: (n, blocks, 2)),
    without multiplying out the rest."""
    if s.dim() == 4:
        return s[group, :, :, row]
    if s.dtype != torch.uint8:
        return s[group, :, row][..., None]
    factor, scale = factor_parts(s)
    return (factor[group, :, :, row].float() * scale[group, :, row].float()[..., None]).view(len(group), -1, 1)


def tile_scales(s: torch.Tensor) -> torch.Tensor:
    """(rows, blocks, 1) → (groups, blocks, 16): a group's 16 rows side by side, as its tiles sum them; per 16
    weights, (rows, blocks, 2) → (groups, blocks, 2, 16)."""
    rows, blocks, per = s.shape
    t = s.view(rows // GROUP, GROUP, blocks, per).permute(0, 2, 3, 1)  # (group, block, half, row)
    return (t if per == 2 else t[:, :, 0]).contiguous()


def untile_scales(s: torch.Tensor) -> torch.Tensor:
    """The inverse of `tile_scales`: (rows, blocks, 1 or 2) (factored scales multiplied out)."""
    s = scale_values(s)
    groups, blocks = s.shape[:2]
    return s.movedim(-1, 1).reshape(groups * GROUP, blocks, -1)
