"""RoPE's frequencies and its cos/sin tables, in numpy: the one computation both the PyTorch blocks
(model.RotaryEmbedding) and the native step read.

Each (i, i + head_dim/2) pair of q and k turns by position × frequency_i. The angle is the float32 product of the two
(as the reference implementations form it); its cos and sin are computed in float64 and rounded once to float32, so a
table is the same bits on every machine."""

from __future__ import annotations

import math
import threading

import numpy as np

from .config import ModelConfig, RopeScaling


def frequencies(config: ModelConfig, freq_factors: np.ndarray | None = None, local: bool = False) -> np.ndarray:
    """(head_dim/2,) float32 frequencies: the sliding layers' own unscaled base (`local`, Gemma 3), or the model's
    under its scaling rule, divided by a file's own factors (GGUF rope_freqs: llama3 scaling, precomputed)."""
    exponents = (np.arange(0, config.head_dim, 2, dtype=np.float32) / np.float32(config.head_dim)).astype(np.float64)

    def inverse(theta: float) -> np.ndarray:  # 1 / theta^exponent, the power in float64 rounded once
        return np.float32(1.0) / np.power(np.float64(theta), exponents).astype(np.float32)
    if local:
        inv_freq = inverse(config.local_rope_theta)
    else:
        inv_freq = scaled(inverse(config.rope_theta), config.rope_scaling, config.rope_theta)
    if freq_factors is not None:
        inv_freq = inv_freq / np.asarray(freq_factors, dtype=np.float32)
    return inv_freq.astype(np.float32)


def scaled(inv_freq: np.ndarray, scaling: RopeScaling | None, theta: float) -> np.ndarray:
    """RoPE frequencies (head_dim/2,) of base `theta` under a scaling rule (config.RopeScaling)."""
    if scaling is None:
        return inv_freq
    f32 = np.float32
    if scaling.kind == "linear":
        return inv_freq / f32(scaling.factor)
    if scaling.kind == "yarn":
        return yarn(inv_freq, scaling, theta)
    low_wavelength = scaling.original_context / scaling.high_freq_factor  # shorter: kept
    high_wavelength = scaling.original_context / scaling.low_freq_factor  # longer: divided by factor
    wavelength = f32(2 * math.pi) / inv_freq
    blend = (f32(scaling.original_context) / wavelength - f32(scaling.low_freq_factor)) / f32(
        scaling.high_freq_factor - scaling.low_freq_factor)
    between = (f32(1) - blend) * inv_freq / f32(scaling.factor) + blend * inv_freq
    out = np.where(wavelength > f32(high_wavelength), inv_freq / f32(scaling.factor), inv_freq)
    inside = (wavelength >= f32(low_wavelength)) & (wavelength <= f32(high_wavelength))
    return np.where(inside, between, out).astype(np.float32)


def yarn(inv_freq: np.ndarray, s: RopeScaling, base: float) -> np.ndarray:
    """YaRN: frequencies that turn more than beta_fast times over the original context are kept, those turning
    fewer than beta_slow times are ÷ factor, and a linear ramp over the dimensions between blends the two."""
    half = inv_freq.shape[0]
    dim = 2 * half

    def dimension(turns: float) -> float:  # the dimension whose frequency turns this often over the context
        return dim * math.log(s.original_context / (turns * 2 * math.pi)) / (2 * math.log(base))

    low, high = dimension(s.beta_fast), dimension(s.beta_slow)
    if s.truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    f32 = np.float32
    ramp = np.clip((np.arange(half, dtype=f32) - f32(low)) / f32(high - low if high != low else 0.001), 0, 1)
    return (inv_freq / f32(s.factor) * ramp + inv_freq * (f32(1) - ramp)).astype(f32)


class RopeTable:
    """cos and sin of every position's head_dim/2 angles, (context_length, head_dim/2) float32, tabulated on first
    use CHUNK positions at a time into tables with room for the whole context: untouched, that room takes no memory (a
    32,768-position Gemma 3 context would hold 134 MB of tables it rarely reads). Each chunk is computed whole, so a
    position's values never depend on when it was first asked for; threads may read rows already filled."""

    CHUNK = 256

    def __init__(self, config: ModelConfig, freq_factors: np.ndarray | None = None, local: bool = False):
        self.inv_freq = frequencies(config, freq_factors, local)
        scaling = None if local else config.rope_scaling
        self.attention_factor = scaling.attention_factor if scaling is not None else 1.0  # YaRN's × on cos, sin
        rows = (config.context_length, config.head_dim // 2)
        self.cos, self.sin = np.empty(rows, dtype=np.float32), np.empty(rows, dtype=np.float32)  # rows [0, filled)
        self.filled = 0
        self._lock = threading.Lock()

    def angles(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """cos, sin of the positions' angles: (..., head_dim/2) float32."""
        angles = np.asarray(positions, dtype=np.float32)[..., None] * self.inv_freq  # float32 products
        cos, sin = np.cos(angles, dtype=np.float64), np.sin(angles, dtype=np.float64)
        cos, sin = cos.astype(np.float32), sin.astype(np.float32)
        if self.attention_factor != 1.0:
            factor = np.float32(self.attention_factor)
            return cos * factor, sin * factor
        return cos, sin

    def cover(self, n: int) -> int:
        """Tabulate every position below n (at most the table's length). Returns the rows filled before."""
        before = self.filled
        if n <= before:
            return before
        with self._lock:
            before = self.filled
            end = min(self.cos.shape[0], -(-n // self.CHUNK) * self.CHUNK)
            for start in range(self.filled, end, self.CHUNK):
                stop = min(start + self.CHUNK, end)
                self.cos[start:stop], self.sin[start:stop] = self.angles(np.arange(start, stop))
            self.filled = max(self.filled, end)
        return before
