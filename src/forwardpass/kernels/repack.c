// A band of a GGUF tensor's blocks straight into gemv.h's tiles, for the formats whose blocks already are a grid of
// 32 with fp16 scales: Q4_0, Q4_1 and Q8_0. The numbers weights/formats.py's unpacking and quant.tile give, bit for
// bit (tests/test_formats.py), without the byte per weight in between: loading a file is a pass over its bytes.
#include <stddef.h>
#include <stdint.h>

#include "gemv.h"

enum { GGML_Q4_0 = 2, GGML_Q4_1 = 3, GGML_Q8_0 = 8 };  // ggml's type ids

static uint16_t half_at(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }  // little-endian

// rows × K weights of `kind` at src (each row K / 32 blocks) → q (groups, K / 32, 256 or 512) tile bytes, scale and
// minimum (groups, K / 32, 16) float32, groups = rows / 16 rounded up, the last group's missing rows zero. Q4_0 and
// Q8_0 keep weights as unsigned integers with minimum -8 × scale and -128 × scale. Returns 0, or -1 for a kind it
// does not repack.
int repack(int kind, int rows, int K, const uint8_t *src, uint8_t *q, float *scale, float *minimum) {
    const int nb = K / BLOCK, groups = (rows + GROUP - 1) / GROUP;
    const int block_bytes = kind == GGML_Q4_0 ? 18 : kind == GGML_Q4_1 ? 20 : kind == GGML_Q8_0 ? 34 : 0;
    const int tile = kind == GGML_Q8_0 ? 512 : 256;
    if (!block_bytes) return -1;
    #pragma omp parallel for schedule(static)
    for (int g = 0; g < groups; g++)
        for (int b = 0; b < nb; b++) {
            const size_t unit = (size_t)g * nb + b;
            uint8_t *t = q + unit * tile;
            for (int r = 0; r < GROUP; r++) {
                const int row = g * GROUP + r;
                float *s = scale + unit * GROUP + r, *m = minimum + unit * GROUP + r;
                if (row >= rows) {  // padding: a zero row
                    *s = *m = 0.f;
                    for (int i = 0; i < tile / 16; i++) t[i / 4 * 64 + 4 * r + i % 4] = 0;
                    continue;
                }
                const uint8_t *block = src + ((size_t)row * nb + b) * block_bytes;
                const float d = half_float(half_at(block));
                if (kind == GGML_Q8_0) {  // tile k holds inputs 4k + j: int8 + 128 as unsigned
                    *s = d, *m = -128.f * d;
                    for (int i = 0; i < 32; i++) t[i / 4 * 64 + 4 * r + i % 4] = block[2 + i] ^ 0x80;
                    continue;
                }
                const uint8_t *qs = block + (kind == GGML_Q4_1 ? 4 : 2);  // byte i: weight i low, weight i + 16 high
                *s = d, *m = kind == GGML_Q4_1 ? half_float(half_at(block + 2)) : -8.f * d;
                for (int u = 0; u < 4; u++)  // tile u: inputs 8u + j low, 8u + 4 + j high
                    for (int j = 0; j < 4; j++) {
                        const int lo = 8 * u + j, hi = lo + 4;
                        const int a = lo < 16 ? qs[lo] & 15 : qs[lo - 16] >> 4;
                        const int c = hi < 16 ? qs[hi] & 15 : qs[hi - 16] >> 4;
                        t[u * 64 + 4 * r + j] = (uint8_t)(a | c << 4);
                    }
            }
        }
    return 0;
}
