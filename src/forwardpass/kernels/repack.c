// A band of a GGUF tensor's blocks straight into gemv.h's tiles, for the formats whose blocks already are a grid the
// kernels read: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and IQ4_NL (the file's own fp16 scales, abi.h's F16), Q4_K and Q5_K
// (scales factored as FACTORS), Q6_K (float32 scales per 16 weights, HALVES). A symmetric format (every minimum -zero ×
// its scale: Q4_0, Q5_0, Q8_0, IQ4_NL, and Q6_K where asked) writes no minimums. The numbers
// weights/formats.py's unpacking and quant.tile give, bit for bit (tests/test_formats.py), without the byte per
// weight in between: loading a file is a pass over its bytes, on the calling thread (a band is a fraction of a
// millisecond of memory traffic: a team of threads would wait on each other longer, and far longer beside a busy
// process).
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gemv.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the repacking reads and writes little-endian words"
#endif

enum { GGML_Q4_0 = 2, GGML_Q4_1 = 3, GGML_Q5_0 = 6, GGML_Q5_1 = 7, GGML_Q8_0 = 8, GGML_Q4_K = 12, GGML_Q5_K = 13,
       GGML_Q6_K = 14, GGML_IQ4_NL = 20 };  // ggml's type ids

// IQ4_NL: the value each nibble names (ggml's table; weights/formats.py's IQ4_NL_VALUES)
static const int8_t IQ4_NL_VALUES[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// Every format read here, one row each (abi.h: RepackFormat); weights/formats.py checks its own rows against these.
static const RepackFormat FORMATS[] = {
    {GGML_Q4_0, 18, 256, F16, 8},        {GGML_Q4_1, 20, 256, F16, -1},      {GGML_Q5_0, 22, 512, F16, 16},
    {GGML_Q5_1, 24, 512, F16, -1},       {GGML_Q8_0, 34, 512, F16, 128},     {GGML_Q4_K, 144, 256, FACTORS, -1},
    {GGML_Q5_K, 176, 512, FACTORS, -1},  {GGML_Q6_K, 210, 512, HALVES, 32},   {GGML_IQ4_NL, 18, 512, F16, 128},
};
#define N_FORMATS (int)(sizeof FORMATS / sizeof FORMATS[0])

const RepackFormat *repack_formats(int *n) {
    *n = N_FORMATS;
    return FORMATS;
}

static const RepackFormat *format_of(int kind) {
    for (int i = 0; i < N_FORMATS; i++)
        if (FORMATS[i].kind == kind) return &FORMATS[i];
    return NULL;
}

static uint16_t half_at(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }  // little-endian

// Row r's bytes of `tiles` 4-bit tiles at t (tile u: inputs 8u + j in low nibbles, 8u + 4 + j in high ones) from
// nibbles at s: input i is bits shift … shift + 3 of byte s[i]. Four bytes at a time (little-endian words; masking
// keeps each nibble in its byte).
static void put_nibbles(const uint8_t *s, int shift, int r, uint8_t *t, int tiles) {
    for (int u = 0; u < tiles; u++) {
        uint32_t low, high;
        memcpy(&low, s + 8 * u, 4), memcpy(&high, s + 8 * u + 4, 4);
        const uint32_t word = (low >> shift & 0x0F0F0F0Fu) | (high >> shift & 0x0F0F0F0Fu) << 4;
        memcpy(t + u * 64 + 4 * r, &word, 4);
    }
}

// 32 weights' 8-bit q (q[i]: weight i) into tile bytes t for row r: tile u holds inputs 4u + j
static void put_bytes(const uint8_t *q, int r, uint8_t *t) {
    for (int u = 0; u < 8; u++) memcpy(t + u * 64 + 4 * r, q + 4 * u, 4);
}

// Q4_K or Q5_K: a row's 256-block (fp16 d and dmin, 12 bytes of 6-bit scales and minimums; Q5_K: 32 bytes of fifth
// bits; 128 bytes of nibbles) into a group's 8 blocks of tiles (t: the first; 4-bit for Q4_K, 8-bit for Q5_K) and row
// r of its FACTORS octet of scales and of minimums
static void k_block(int kind, const uint8_t *block, int r, uint8_t *t, uint8_t *scale, uint8_t *minimum) {
    const uint8_t *s = block + 4, *qh = block + 16, *qs = block + (kind == GGML_Q5_K ? 48 : 16);
    for (int j = 0; j < 8; j++) {  // sub-block j: its 6-bit scale and minimum, then its weights
        scale[j * GROUP + r] = j < 4 ? s[j] & 63 : (uint8_t)((s[j + 4] & 15) | (s[j - 4] >> 6) << 4);
        minimum[j * GROUP + r] = j < 4 ? s[j + 4] & 63 : (uint8_t)((s[j + 4] >> 4) | (s[j] >> 6) << 4);
        if (kind == GGML_Q4_K) {  // sub-block j: byte i of its 32, low nibbles for even j, high for odd
            put_nibbles(qs + 32 * (j / 2), 4 * (j % 2), r, t + (size_t)j * 256, 4);
            continue;
        }
        uint8_t q[32];
        for (int i = 0; i < 32; i++) q[i] = (uint8_t)(qs[32 * (j / 2) + i] >> (4 * (j % 2)) & 15);
        for (int i = 0; i < 32; i++) q[i] |= (uint8_t)((qh[i] >> j & 1) << 4);  // Q5_K: bit j of byte i: weight i's 5th
        put_bytes(q, r, t + (size_t)j * 512);
    }
    const uint16_t d = half_at(block), dmin = half_at(block + 2) ^ 0x8000;  // minimum = m × -dmin
    memcpy(scale + 8 * GROUP + 2 * r, &d, 2), memcpy(minimum + 8 * GROUP + 2 * r, &dmin, 2);
}

// Q4_K or Q5_K rows × K → q (groups, K / 32, 256 or 512) tiles and scale, minimum (groups, K / 256, 160) bytes as
// gemv.h's FACTORS
static void repack_k(int kind, int rows, int K, const uint8_t *src, uint8_t *q, uint8_t *scale, uint8_t *minimum) {
    const RepackFormat *f = format_of(kind);
    const int nb = K / BLOCK, groups = (rows + GROUP - 1) / GROUP, tile = f->tile, block_bytes = f->block_bytes;
    for (int g = 0; g < groups; g++)
        for (int o = 0; o < nb / 8; o++) {
            const size_t octet = (size_t)g * (nb / 8) + o;
            uint8_t *t = q + ((size_t)g * nb + 8 * o) * tile;
            for (int r = 0; r < GROUP; r++) {
                const int row = g * GROUP + r;
                if (row < rows) {
                    k_block(kind, src + ((size_t)row * (nb / 8) + o) * block_bytes, r, t, scale + octet * OCTET,
                            minimum + octet * OCTET);
                    continue;
                }
                for (int j = 0; j < 8; j++) {  // padding: a zero row
                    scale[octet * OCTET + j * GROUP + r] = minimum[octet * OCTET + j * GROUP + r] = 0;
                    for (int u = 0; u < tile / 64; u++) memset(t + j * tile + u * 64 + 4 * r, 0, 4);
                }
                memset(scale + octet * OCTET + 8 * GROUP + 2 * r, 0, 2);
                memset(minimum + octet * OCTET + 8 * GROUP + 2 * r, 0, 2);
            }
        }
}

// Q6_K: a row's 256-block (128 bytes of low nibbles, 64 of high bit pairs, 16 int8 scales, fp16 d) into a group's 8
// blocks of 8-bit tiles (t: the first) and row r of its HALVES scales and minimums (s, m: the first block's). Weight
// 128 n + 32 k + l: nibble k / 2 of byte 64 n + 32 (k % 2) + l, bit pair k of byte 32 n + l; w = d sc (q - 32),
// minimum -32 d sc (d × sc is exact in float32).
static void q6_block(const uint8_t *block, int r, uint8_t *t, float *s, float *m) {
    const uint8_t *ql = block, *qh = block + 128;
    const int8_t *sc = (const int8_t *)(block + 192);
    const float d = half_float(half_at(block + 208));
    for (int n = 0; n < 2; n++)
        for (int k = 0; k < 4; k++) {  // block 4 n + k of 32
            uint8_t q[32];
            for (int l = 0; l < 32; l++)
                q[l] = (uint8_t)((ql[64 * n + 32 * (k % 2) + l] >> (4 * (k / 2)) & 15) |
                                 (qh[32 * n + l] >> (2 * k) & 3) << 4);
            put_bytes(q, r, t + (size_t)(4 * n + k) * 512);
        }
    for (int j = 0; j < 16; j++) {  // scale j: weights 16 j … 16 j + 15, block j / 2's half j % 2
        s[j * GROUP + r] = d * (float)sc[j];
        if (m) m[j * GROUP + r] = -32.f * s[j * GROUP + r];
    }
}

// Q6_K rows × K → q (groups, K / 32, 512) tiles and scale, minimum (groups, K / 32, 2, 16) float32 as gemv.h's HALVES
// (minimum NULL: none written)
static void repack_q6(int rows, int K, const uint8_t *src, uint8_t *q, float *scale, float *minimum) {
    const RepackFormat *f = format_of(GGML_Q6_K);
    const int nb = K / BLOCK, groups = (rows + GROUP - 1) / GROUP, tile = f->tile, block_bytes = f->block_bytes;
    for (int g = 0; g < groups; g++)
        for (int o = 0; o < nb / 8; o++) {
            const size_t first = (size_t)g * nb + 8 * o;  // the 256-block's first block of 32
            uint8_t *t = q + first * tile;
            float *s = scale + first * 2 * GROUP, *m = minimum ? minimum + first * 2 * GROUP : NULL;
            for (int r = 0; r < GROUP; r++) {
                const int row = g * GROUP + r;
                if (row < rows) {
                    q6_block(src + ((size_t)row * (nb / 8) + o) * block_bytes, r, t, s, m);
                    continue;
                }
                for (int j = 0; j < 16; j++) s[j * GROUP + r] = 0.f;  // padding: a zero row
                for (int j = 0; m && j < 16; j++) m[j * GROUP + r] = 0.f;
                for (int i = 0; i < 256; i++) t[(size_t)(i / 32) * 512 + i % 32 / 4 * 64 + 4 * r + i % 4] = 0;
            }
        }
}

static int finite_half(uint16_t h) { return (h & 0x7C00) != 0x7C00; }

// rows × K weights of `kind` at src (each row K / 32 blocks) → q (groups, K / 32, 256 or 512) tile bytes, groups = rows
// / 16 rounded up, the last group's missing rows zero, and its scales: Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 scale and
// minimum (groups, K / 32, 16) fp16 bits, the file's own; Q4_K and Q5_K FACTORS bytes (groups, K / 256, 160); Q6_K
// HALVES, (groups, K / 32, 2, 16) float32. Q4_0, Q5_0 and Q8_0 keep weights as unsigned integers whose minimum is -8,
// -16 and -128 × scale, and write no minimums; Q6_K's are -32 × scale, written unless minimum is NULL. Returns how many
// of the fp16 scales and minimums are infinite or NaN (0 for the other forms), or -1 for a kind it does not repack.
int repack(int kind, int rows, int K, const uint8_t *src, uint8_t *q, void *scale, void *minimum) {
    const RepackFormat *f = format_of(kind);
    if (!f) return -1;
    if (kind == GGML_Q4_K || kind == GGML_Q5_K) {
        repack_k(kind, rows, K, src, q, scale, minimum);
        return 0;
    }
    if (kind == GGML_Q6_K) {
        repack_q6(rows, K, src, q, scale, minimum);
        return 0;
    }
    const int nb = K / BLOCK, groups = (rows + GROUP - 1) / GROUP;
    const int block_bytes = f->block_bytes, tile = f->tile;
    const int explicit = f->zero < 0;  // a minimum of its own after d (fp16)
    int bad = 0;
    for (int g = 0; g < groups; g++)
        for (int b = 0; b < nb; b++) {
            const size_t unit = (size_t)g * nb + b;
            uint8_t *t = q + unit * tile;
            for (int r = 0; r < GROUP; r++) {
                const int row = g * GROUP + r;
                uint16_t *s = (uint16_t *)scale + unit * GROUP + r;
                uint16_t *m = explicit ? (uint16_t *)minimum + unit * GROUP + r : NULL;
                if (row >= rows) {  // padding: a zero row
                    *s = 0;
                    if (m) *m = 0;
                    for (int i = 0; i < tile / 16; i++) t[i / 4 * 64 + 4 * r + i % 4] = 0;
                    continue;
                }
                const uint8_t *block = src + ((size_t)row * nb + b) * block_bytes;
                *s = half_at(block);
                bad += !finite_half(*s);
                if (m) {
                    *m = half_at(block + 2);
                    bad += !finite_half(*m);
                }
                uint8_t w[32];
                if (kind == GGML_Q8_0) {  // int8 + 128 as unsigned
                    for (int i = 0; i < 32; i++) w[i] = block[2 + i] ^ 0x80;
                    put_bytes(w, r, t);
                    continue;
                }
                if (kind == GGML_IQ4_NL) {  // 8-bit tiles: the value each nibble names, + 128 as unsigned
                    const uint8_t *qs = block + 2;  // byte i: weight i low, weight i + 16 high
                    for (int i = 0; i < 32; i++)
                        w[i] = (uint8_t)(IQ4_NL_VALUES[i < 16 ? qs[i] & 15 : qs[i - 16] >> 4] + 128);
                    put_bytes(w, r, t);
                    continue;
                }
                if (kind == GGML_Q5_0 || kind == GGML_Q5_1) {  // 8-bit tiles; bit i of the 32-bit qh: weight i's fifth
                    const uint8_t *qh = block + 2 + 2 * explicit, *qs = qh + 4;
                    for (int i = 0; i < 32; i++)
                        w[i] = (uint8_t)((i < 16 ? qs[i] & 15 : qs[i - 16] >> 4) | (qh[i / 8] >> (i % 8) & 1) << 4);
                    put_bytes(w, r, t);
                    continue;
                }
                const uint8_t *qs = block + (explicit ? 4 : 2);  // byte i: weight i low, weight i + 16 high
                put_nibbles(qs, 0, r, t, 2), put_nibbles(qs, 4, r, t + 128, 2);
            }
        }
    return bad;
}
