"""A long vector or a large matrix told in a few hundred bytes, as the page draws them: its shape, its leading
entries as numbers, and a heat strip (or grid) of the whole. Each cell of a strip stands for a run of consecutive
entries and holds the one of largest magnitude, sign kept (so a single large entry is never averaged away), as a level
-9 … 9 of the strip's scale: the 90th percentile of the cells' magnitudes, so one huge entry does not blank the rest
(cells beyond it are drawn at ±9). A matrix's cells, each the largest of a whole block, are scaled to the largest."""

from __future__ import annotations

import math

import torch

LEAD = 6  # leading entries sent as numbers
CELLS = 32  # a vector's strip: at most this many cells
GRID = (6, 16)  # a matrix's picture: at most rows × columns cells
LEVELS = 9


def number(x: float) -> float:
    """a float as the page reads it: six significant digits"""
    return float(f"{float(x):.6g}")


def numbers(x: torch.Tensor) -> list[float]:
    return [number(v) for v in x.flatten().tolist()]


def _pool(x: torch.Tensor, per: int) -> torch.Tensor:
    """(..., n) → (..., ceil(n / per)): each run of `per` entries as its entry of largest magnitude, sign kept"""
    pad = -x.shape[-1] % per
    runs = torch.nn.functional.pad(x, (0, pad)).unflatten(-1, (-1, per))  # (..., cells, per)
    return runs.gather(-1, runs.abs().argmax(-1, keepdim=True)).squeeze(-1)


def _levels(cells: torch.Tensor, quantile: float = 0.9) -> tuple[list[int], float]:
    """cells as levels -9 … 9 of their scale (that quantile of their magnitudes), and that scale"""
    scale = float(torch.quantile(cells.abs().flatten(), quantile)) or float(cells.abs().max()) or 1.0
    levels = (cells / scale * LEVELS).round().clamp(-LEVELS, LEVELS).to(torch.int64)
    return levels.flatten().tolist(), number(scale)


def vector(x: torch.Tensor, lead: int = LEAD, cells: int = CELLS) -> dict:
    """(n,) → {shape, lead: the first entries, norm: L2, strip: {cells, per: entries per cell, scale}}"""
    x = x.detach().float().cpu().flatten()
    per = math.ceil(x.numel() / cells)
    levels, scale = _levels(_pool(x, per))
    return {"shape": [x.numel()], "lead": numbers(x[:lead]), "norm": number(x.norm()),
            "strip": {"cells": levels, "per": per, "scale": scale}}


def matrix(w: torch.Tensor, grid: tuple[int, int] = GRID, lead: int = LEAD, quantile: float = 1.0) -> dict:
    """(rows, cols) → {shape, lead: the first row's first entries, grid: {rows, cols, cells (row by row), per: [rows,
    cols] of entries per cell, scale}}: pooled as strips are, in blocks, scaled to that quantile of them (a few rows
    drawn whole, each its own strip: 0.9, as a vector's)"""
    w = w.detach().float().cpu()
    rows, cols = w.shape
    per_r, per_c = math.ceil(rows / grid[0]), math.ceil(cols / grid[1])
    pooled = _pool(_pool(w, per_c).T, per_r).T  # (ceil(rows / per_r), ceil(cols / per_c))
    levels, scale = _levels(pooled, quantile)
    return {"shape": [rows, cols], "lead": numbers(w[0, :lead]),
            "grid": {"rows": pooled.shape[0], "cols": pooled.shape[1], "cells": levels, "per": [per_r, per_c],
                     "scale": scale}}
