// A quantized weight's tiles (gemv.h's layout) back to float32 rows, for prefill: a prompt's many tokens make the
// matrix product compute-bound, so PyTorch multiplies the float weight once per call. w = q × scale + minimum, the
// product rounded before the sum (ISO C: no contraction into a fused multiply-add), as the PyTorch path computes it.
#include <stddef.h>
#include <stdint.h>

#include "gemv.h"

// group g's block b (of nb): 16 rows × 32 inputs of tiles t (8 bits: tile i / 4 holds input i; 4 bits: tile i / 8,
// the low nibble for i % 8 < 4, else the high one), rows [0, n) written at w + r × K
static void block_out(int bits, const uint8_t *t, const void *s, const void *m, size_t g, int nb, int b, int scales,
                      int zero, int n, int K, float *w) {
    for (int r = 0; r < n; r++) {
        float *out = w + (size_t)r * K;
        float scale[2], minimum[2];  // inputs 0-15 and 16-31: the same but for HALVES
        for (int h = 0; h < 2; h++) {
            const size_t at = scale_index(g, nb, b, h, r, scales);
            scale[h] = scale_at(s, at, scales), minimum[h] = minimum_at(m, at, scales, zero, scale[h]);
        }
        if (bits == 8)
            for (int tile = 0; tile < 8; tile++)
                for (int j = 0; j < 4; j++) {
                    const float scaled = (float)t[tile * 64 + 4 * r + j] * scale[tile / 4];
                    out[4 * tile + j] = scaled + minimum[tile / 4];
                }
        else
            for (int tile = 0; tile < 4; tile++)
                for (int j = 0; j < 4; j++) {
                    const uint8_t byte = t[tile * 64 + 4 * r + j];
                    const float lo = (float)(byte & 15) * scale[0], hi = (float)(byte >> 4) * scale[0];
                    out[8 * tile + j] = lo + minimum[0];
                    out[8 * tile + 4 + j] = hi + minimum[0];
                }
    }
}

// w (N, K) float32 from `bits` (8 or 4) tiles q (groups, K / 32, 512 or 256) and scale, minimum (groups, K / 32, 16),
// stored as `scales` (F32, F16, FACTORS or HALVES: gemv.h); minimum NULL: -zero × scale
void dequantize(int bits, int N, int K, const uint8_t *q, const void *scale, const void *minimum, int scales, int zero,
                float *w) {
    const int blocks = K / BLOCK, groups = (N + GROUP - 1) / GROUP, tile = bits == 8 ? 512 : 256;
    #pragma omp parallel for schedule(static)
    for (int g = 0; g < groups; g++) {
        const int n = N - g * GROUP < GROUP ? N - g * GROUP : GROUP;
        for (int b = 0; b < blocks; b++) {
            const size_t unit = (size_t)g * blocks + b;
            block_out(bits, q + unit * tile, scale, minimum, g, blocks, b, scales, zero, n, K,
                      w + (size_t)g * GROUP * K + b * BLOCK);
        }
    }
}
