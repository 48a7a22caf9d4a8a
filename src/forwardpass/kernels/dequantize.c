// A quantized weight's tiles (gemv.h's layout) back to float32 rows, for prefill: a prompt's many tokens make the
// matrix product compute-bound, so PyTorch multiplies the float weight once per call. w = q × scale + minimum, the
// product rounded before the sum (ISO C: no contraction into a fused multiply-add), as the PyTorch path computes it.
#include <stddef.h>
#include <stdint.h>

#include "gemv.h"

// w (N, K) float32 from `bits` (8 or 4) tiles q (groups, K / 32, 512 or 256) and scale, minimum (groups, K / 32, 16)
void dequantize(int bits, int N, int K, const uint8_t *q, const float *scale, const float *minimum, float *w) {
    const int blocks = K / BLOCK, groups = (N + GROUP - 1) / GROUP, tile = bits == 8 ? 512 : 256;
    #pragma omp parallel for schedule(static)
    for (int g = 0; g < groups; g++)
        for (int b = 0; b < blocks; b++) {
            const size_t unit = (size_t)g * blocks + b;
            const uint8_t *t = q + unit * tile;
            const float *s = scale + unit * GROUP, *m = minimum + unit * GROUP;
            for (int r = 0; r < GROUP && g * GROUP + r < N; r++) {
                float *out = w + (size_t)(g * GROUP + r) * K + b * BLOCK;
                for (int i = 0; i < BLOCK; i++) {
                    // 8 bits: tile i / 4 holds input i; 4 bits: tile i / 8, low nibble for i % 8 < 4, else high
                    const uint8_t byte = bits == 8 ? t[(i / 4) * 64 + 4 * r + i % 4] : t[(i / 8) * 64 + 4 * r + i % 4];
                    const int v = bits == 8 ? byte : (i % 8 < 4 ? byte & 15 : byte >> 4);
                    const float scaled = (float)v * s[r];
                    out[i] = scaled + m[r];
                }
            }
        }
}
