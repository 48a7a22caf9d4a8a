// Matrix-vector products for decode: one activation row against every row of a weight matrix, the weights
// streamed from memory once. Decode is memory-bound, so each weight byte must cost as few instructions as
// possible: the quantized kernels multiply integers (AVX-512 VNNI: 64 multiply-adds per instruction). Written in
// simd.h's vector operations, so that one source builds for AVX-512, AVX2 and portable C.
//
// Quantized weights: blocks of 32 along K, w = min + scale × q with q unsigned (8-bit: [0, 255]; 4-bit:
// [0, 15]), stored tiled: rows in groups of 16 (N padded to a multiple of 16) and, for each group and block,
// 64-byte tiles of 16 rows × 4 consecutive inputs (byte 4 r + j: row r, input j). One VNNI instruction
// multiplies a tile by 4 activation bytes broadcast to every row: 16 row sums at once, with no shuffle and no
// horizontal sum. 8-bit: 8 tiles a block (inputs 4t … 4t + 3). 4-bit: 4 tiles of two nibbles a byte (low
// nibble input 8u + j, high nibble 8u + 4 + j). Scales and minimums: (groups, blocks, 16) as F32 or F16 values,
// or as FACTORS, K-quants' own form: per group and 8 blocks (a 256-block), 160 bytes: (8, 16) unsigned factors,
// then 16 fp16 scales of them (value = factor × its row's fp16; the product is exact in float32); or as HALVES, a
// float32 scale (and minimum) for each 16 inputs, (groups, blocks, 2, 16): Q6_K scales 16 weights at a time.
// The activation row is quantized too, per block of 32, to X = 128 hi + lo with hi in [-127, 127] and lo in
// [-64, 64]: 15 bits, an error under 1/32000 of the block's largest value (plain int8 activations, at 1/254,
// change greedy tokens). A block's dot product is then
//   Σ w x = scale_w step_x Σ q X + min_w step_x Σ X,   Σ q X = 128 Σ q hi + Σ q lo
// with the integer sum made each build's fastest exact way (simd.h: VS for 4-bit tiles, VQ for 8-bit) and the
// minimum term one multiply-add per block. That is ACT_EXACT (abi.h), the default. ACT_Q8 quantizes as llama.cpp's
// Q8_0 activations do: per block, d = amax / 127 and X = hi = round(x × (1 / d)) in [-127, 127], step d, no lo:
//   Σ w x = scale_w d Σ q X + min_w d Σ X
// with one integer product per weight byte instead of two. The product loops take the mode as a constant, as they
// take the weights' kind and scales, so that each mode's loops are its own.
#pragma once
#include <stdlib.h>

#include "abi.h"
#include "simd.h"


static inline int quantized(int kind) { return kind == Q4 || kind == Q8; }

// An activation row as the kernels read it
typedef struct {
    int8_t *hi, *lo;   // (K): X = 128 hi + lo per element, quantized weights only; ACT_Q8: X = hi, lo unused
    int16_t *X;        // (K): X itself, for the builds that multiply 8-bit tiles by it (simd.h: vq_dot)
    float *step;       // (K / 32): the value of one unit of X in each block
    float *sum;        // (K / 32): step × Σ X, for the minimum term
    float *half;       // (K / 16): step × Σ X over each 16 inputs, for HALVES' minimum terms
    const float *x;    // float weights read the row itself
} Activation;

// floats of memory an activation row of up to K inputs takes (64-byte aligned pieces, for a 64-byte aligned start)
static inline size_t activation_floats(int K) {
    const size_t padded = (K + 63) / 64 * 64;
    return padded / 4 * 2 + padded / 2 + (padded / BLOCK + 15) / 16 * 16 * 4;  // hi, lo; X; step, sum, half
}

// an activation row of up to K inputs in `mem` (activation_floats(K) floats, 64-byte aligned); NULL: an empty one
static inline Activation activation_in(float *mem, int K) {
    if (!mem) return (Activation){0};
    const size_t padded = (K + 63) / 64 * 64, blocks = (padded / BLOCK + 15) / 16 * 16;
    Activation a = {(int8_t *)mem, (int8_t *)(mem + padded / 4), (int16_t *)(mem + padded / 2), mem + padded,
                    mem + padded + blocks, mem + padded + 2 * blocks, NULL};
    return a;
}

static inline Activation activation_alloc(int K) {
    return activation_in(aligned_alloc(64, activation_floats(K) * sizeof(float)), K);
}

static inline void activation_free(Activation a) { free(a.hi); }

// x (K) quantized for weights of `kind` into a, as `activations` says (ACT_EXACT or ACT_Q8: abi.h)
static __attribute__((unused)) void quantize_row(const float *x, int K, int kind, int activations, Activation *a) {
    a->x = x;
    if (!quantized(kind)) return;
    for (int b = 0; b < K / BLOCK; b++) {
        const V x0 = v_load(x + b * BLOCK), x1 = v_load(x + b * BLOCK + 16);
        const float amax = v_reduce_max(v_max(v_abs(x0), v_abs(x1)));
        const float s = amax / 127.f, inv = s > 0.f ? 1.f / s : 0.f;
        const V v0 = v_mul(x0, v_set1(inv)), v1 = v_mul(x1, v_set1(inv)), unit = v_set1(128.f);
        const V hi0 = v_round(v0), hi1 = v_round(v1);  // nearest, ties to even
        int8_t *restrict hi = a->hi + b * BLOCK, *restrict lo = a->lo + b * BLOCK;
        int16_t *restrict X = a->X + b * BLOCK;  // restrict: the byte rows may not alias it, so the copies vectorize
        v_store_i8(hi, hi0), v_store_i8(hi + 16, hi1);
        // the sums are of integers under 2^20 in magnitude: exact in float32 in any order, so a block's sum is its
        // halves' sum
        if (activations == ACT_Q8) {  // X = hi alone, in units of s
            for (int k = 0; k < BLOCK; k++) X[k] = hi[k];
            const float h0 = v_reduce_add(hi0), h1 = v_reduce_add(hi1);
            a->step[b] = s, a->sum[b] = s * (h0 + h1), a->half[2 * b] = s * h0, a->half[2 * b + 1] = s * h1;
            continue;
        }
        const V lo0 = v_round(v_mul(v_sub(v0, hi0), unit)), lo1 = v_round(v_mul(v_sub(v1, hi1), unit));
        v_store_i8(lo, lo0), v_store_i8(lo + 16, lo1);
        for (int k = 0; k < BLOCK; k++) X[k] = (int16_t)(128 * hi[k] + lo[k]);
        const float step = a->step[b] = s / 128.f;
        const float h0 = v_reduce_add(v_fma(hi0, unit, lo0)), h1 = v_reduce_add(v_fma(hi1, unit, lo1));
        a->sum[b] = step * (h0 + h1), a->half[2 * b] = step * h0, a->half[2 * b + 1] = step * h1;
    }
}

// How far ahead of its reads each 4-bit weight stream asks for its tiles (into L2: into L1 it was slower). Four
// VNNI instructions per 64 bytes are enough work that the hardware's own prefetching falls behind when memory runs
// at its fastest, and a large 4-bit matrix is read below a plain read's rate without it. 8-bit tiles (two
// instructions per 64 bytes) and float weights gain nothing from it, so only 4-bit asks.
#define PREFETCH_BYTES 4096

// Where groups g0, g0 + stride, … (R of them) of a quantized W start: tiles, scales, minimums (stored as `scales`)
static inline __attribute__((always_inline)) void group_starts(const Linear *L, int scales, int g0, int stride, int R,
                                                               const uint8_t **w, const uint8_t **ws,
                                                               const uint8_t **wm) {
    const int nb = L->K / BLOCK, tiles = L->kind == Q8 ? 8 : 4;
    const size_t bytes = scales == FACTORS ? (size_t)nb / 8 * OCTET
                                           : (size_t)nb * GROUP * (scales == F16 ? 2 : scales == HALVES ? 8 : 4);
    for (int r = 0; r < R; r++) {
        const size_t g = (size_t)(g0 + r * stride);
        w[r] = (const uint8_t *)L->w + g * nb * tiles * 64;
        ws[r] = (const uint8_t *)L->scale + g * bytes;
        wm[r] = L->minimum ? (const uint8_t *)L->minimum + g * bytes : NULL;
    }
}

// Block b's 16 scales (or minimums) of a group whose scales start at p
static inline V block_scales(const uint8_t *p, int b, int scales) {
    if (scales == FACTORS) {
        const uint8_t *octet = p + (size_t)(b / 8) * OCTET;
        return v_mul(v_load_u8(octet + b % 8 * GROUP), v_load_f16_n((const uint16_t *)(octet + 8 * GROUP), GROUP));
    }
    return scales == F16 ? v_load_f16_n((const uint16_t *)p + b * GROUP, GROUP) : v_load((const float *)p + b * GROUP);
}

// Block b's 16 minimums of a group whose scales start at ws and minimums at wm (NULL: -zero × each scale, the same
// float32 product quant/packed.py's zero_point checked the file's minimums against)
static inline V block_minimums(const Linear *L, int scales, const uint8_t *ws, const uint8_t *wm, int b) {
    return wm ? block_scales(wm, b, scales) : v_mul(block_scales(ws, b, scales), v_set1(-(float)L->zero));
}

// Where in W's scales (as `scales` stores them) the one of row r of group g, block b, inputs 16 h … 16 h + 15 is:
// the i scale_at reads
static inline size_t scale_index(size_t g, int nb, int b, int h, int r, int scales) {
    return scales == HALVES ? ((g * nb + b) * 2 + h) * GROUP + r : (g * nb + b) * GROUP + r;
}

// Scale (or minimum) i of W's as `scales` stores them, i = (group × blocks + block) × 16 + row (scale_index)
static inline float scale_at(const void *p, size_t i, int scales) {
    if (scales == FACTORS) {
        const uint8_t *octet = (const uint8_t *)p + i / (8 * GROUP) * OCTET;
        return (float)octet[i % (8 * GROUP)] * half_float(((const uint16_t *)(octet + 8 * GROUP))[i % GROUP]);
    }
    return scales == F16 ? half_float(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

// Minimum i of W's, whose scale i is s: stored, or -zero × s
static inline float minimum_at(const void *minimum, size_t i, int scales, int zero, float s) {
    return minimum ? scale_at(minimum, i, scales) : -(float)zero * s;
}

// HALVES: acc plus half h of block b for 16 rows (dot: its Σ q X) scaled, and its minimum term. A group's HALVES
// scales are float32 ones of twice as many blocks: half h of block b is their block 2 b + h.
static inline __attribute__((always_inline)) V half_term(const Linear *L, const uint8_t *ws, const uint8_t *wm, int b,
                                                         int h, const Activation *a, VI dot, V acc) {
    acc = v_fma(vi_float(dot), v_mul(block_scales(ws, 2 * b + h, F32), v_set1(a->step[b])), acc);
    return v_fma(block_minimums(L, F32, ws, wm, 2 * b + h), v_set1(a->half[2 * b + h]), acc);
}

// Ask for block b + ahead of each of R streams (into L2), while it is inside the groups they still read
static inline __attribute__((always_inline)) void prefetch_blocks(const uint8_t *const *w, int R, int b, int ahead,
                                                                  int blocks_left, int tiles) {
    if (b + ahead < blocks_left)
        for (int r = 0; r < R; r++)
            for (int t = 0; t < tiles; t++)
                prefetch_l2(w[r] + ((size_t)(b + ahead) * tiles + t) * 64);
}

// Groups g0, g0 + stride, … (R of them, R ≤ 4) of a quantized W · x: 16 rows each, into out[16 r + i]. Several
// groups at once keep several weight streams in flight and several chains of VNNI sums busy. Each stream runs on
// through `left` groups (this one included): its prefetches stay inside them. `act`: how x was quantized (ACT_Q8:
// hi alone, one product per weight byte).
static inline __attribute__((always_inline)) void groups_dot(const Linear *L, int kind, int scales, int act,
                                                             const Activation *a, int g0, int stride, int R, int left,
                                                             float *out) {
    const int nb = L->K / BLOCK, tiles = kind == Q8 ? 8 : 4;
    const int ahead = PREFETCH_BYTES / (tiles * 64), blocks_left = kind == Q4 ? left * nb : 0;  // in blocks
    const uint8_t *w[4], *ws[4], *wm[4];
    V acc[4];
    group_starts(L, scales, g0, stride, R, w, ws, wm);
    for (int r = 0; r < R; r++) acc[r] = v_zero();
    for (int b = 0; b < nb; b++) {
        prefetch_blocks(w, R, b, ahead, blocks_left, tiles);
        VI dot[4];  // Σ q X of this block, per row
        if (kind == Q8) {
            const int halves = scales == HALVES ? 2 : 1;  // HALVES: inputs 0–15 (tiles 0–3), then 16–31, each scaled
            for (int h = 0; h < halves; h++) {            // as it is summed (a second set of sums would spill)
                VQ sums[4];
                for (int r = 0; r < R; r++) sums[r] = vq_zero();
                for (int t = h * tiles / halves; t < (h + 1) * tiles / halves; t++) {
                    const int k = b * BLOCK + 4 * t;
                    for (int r = 0; r < R; r++) {
                        const T q = t_load(w[r] + ((size_t)b * tiles + t) * 64);
                        sums[r] = act == ACT_Q8 ? vq_dot_q8(sums[r], q, a->hi + k, a->X + k)
                                                : vq_dot(sums[r], q, a->hi + k, a->lo + k, a->X + k);
                    }
                }
                for (int r = 0; r < R; r++) dot[r] = act == ACT_Q8 ? vq_join_q8(sums[r]) : vq_join(sums[r]);
                if (scales == HALVES)
                    for (int r = 0; r < R; r++) acc[r] = half_term(L, ws[r], wm[r], b, h, a, dot[r], acc[r]);
            }
            if (scales == HALVES) continue;
        } else {
            VS hi[4], lo[4];
            for (int r = 0; r < R; r++) hi[r] = lo[r] = vs_zero();
            for (int t = 0; t < tiles; t++) {
                const int k = b * BLOCK + 8 * t;
                if (act == ACT_Q8) {
                    const int32_t x0 = four_bytes(a->hi + k), x1 = four_bytes(a->hi + k + 4);
                    for (int r = 0; r < R; r++) {
                        const T packed = t_load(w[r] + ((size_t)b * tiles + t) * 64);
                        hi[r] = vs_dot(hi[r], t_low(packed), x0), hi[r] = vs_dot(hi[r], t_high(packed), x1);
                    }
                    continue;
                }
                const int32_t h0 = four_bytes(a->hi + k), l0 = four_bytes(a->lo + k);
                const int32_t h1 = four_bytes(a->hi + k + 4), l1 = four_bytes(a->lo + k + 4);
                for (int r = 0; r < R; r++) {
                    const T packed = t_load(w[r] + ((size_t)b * tiles + t) * 64), q0 = t_low(packed), q1 = t_high(packed);
                    hi[r] = vs_dot(hi[r], q0, h0), lo[r] = vs_dot(lo[r], q0, l0);
                    hi[r] = vs_dot(hi[r], q1, h1), lo[r] = vs_dot(lo[r], q1, l1);
                }
            }
            for (int r = 0; r < R; r++) dot[r] = act == ACT_Q8 ? vs_join_q8(hi[r]) : vs_join(hi[r], lo[r]);
        }
        const V step = v_set1(a->step[b]), sum = v_set1(a->sum[b]);
        for (int r = 0; r < R; r++) {
            const V scale = v_mul(block_scales(ws[r], b, scales), step);
            acc[r] = v_fma(vi_float(dot[r]), scale, acc[r]);
            acc[r] = v_fma(block_minimums(L, scales, ws[r], wm[r], b), sum, acc[r]);
        }
    }
    for (int r = 0; r < R; r++) v_store(out + GROUP * r, acc[r]);
}

// groups_dot for two activation rows a[0], a[1] at once, R ≤ 2 groups: each tile is loaded (and a 4-bit tile
// unpacked) once for both rows, which is where a batch's step spends its time once it is bound by arithmetic rather
// than by reading weights. out[(2 m + r) × 16 + i] for row m, group r. Each row's sums are made in the same order
// as groups_dot's, so a row's result is the same bit for bit.
static inline __attribute__((always_inline)) void groups_dot_pair(const Linear *L, int kind, int scales, int act,
                                                                  const Activation *a, int g0, int stride, int R,
                                                                  int left, float *out) {
    const int nb = L->K / BLOCK, tiles = kind == Q8 ? 8 : 4;
    const int ahead = PREFETCH_BYTES / (tiles * 64), blocks_left = kind == Q4 ? left * nb : 0;  // in blocks
    const uint8_t *w[2], *ws[2], *wm[2];
    V acc[2][2];
    group_starts(L, scales, g0, stride, R, w, ws, wm);
    for (int r = 0; r < R; r++) acc[0][r] = acc[1][r] = v_zero();
    for (int b = 0; b < nb; b++) {
        prefetch_blocks(w, R, b, ahead, blocks_left, tiles);
        VI dot[2][2];  // Σ q X of this block, [row of x][group]
        if (kind == Q8) {
            const int halves = scales == HALVES ? 2 : 1;  // HALVES: each half summed and scaled on its own (groups_dot)
            for (int h = 0; h < halves; h++) {
                VQ sums[2][2];
                for (int r = 0; r < R; r++) sums[0][r] = sums[1][r] = vq_zero();
                #pragma GCC unroll 1  // unrolled, the activations' broadcasts spill: a 16-row product ran at half speed
                for (int t = h * tiles / halves; t < (h + 1) * tiles / halves; t++) {
                    const int k = b * BLOCK + 4 * t;
                    for (int r = 0; r < R; r++) {
                        const T q = t_load(w[r] + ((size_t)b * tiles + t) * 64);
                        for (int m = 0; m < 2; m++)
                            sums[m][r] = act == ACT_Q8 ? vq_dot_q8(sums[m][r], q, a[m].hi + k, a[m].X + k)
                                                       : vq_dot(sums[m][r], q, a[m].hi + k, a[m].lo + k, a[m].X + k);
                    }
                }
                for (int m = 0; m < 2; m++)
                    for (int r = 0; r < R; r++)
                        dot[m][r] = act == ACT_Q8 ? vq_join_q8(sums[m][r]) : vq_join(sums[m][r]);
                if (scales == HALVES)
                    for (int m = 0; m < 2; m++)
                        for (int r = 0; r < R; r++)
                            acc[m][r] = half_term(L, ws[r], wm[r], b, h, a + m, dot[m][r], acc[m][r]);
            }
            if (scales == HALVES) continue;
        } else {
            VS hi[2][2], lo[2][2];
            for (int r = 0; r < R; r++) hi[0][r] = lo[0][r] = hi[1][r] = lo[1][r] = vs_zero();
            #pragma GCC unroll 1  // unrolled, the tiles' unpacked nibbles spill out of AVX2's 16 registers
            for (int t = 0; t < tiles; t++) {
                const int k = b * BLOCK + 8 * t;
                for (int r = 0; r < R; r++) {
                    const T packed = t_load(w[r] + ((size_t)b * tiles + t) * 64), q0 = t_low(packed), q1 = t_high(packed);
                    for (int m = 0; m < 2; m++) {
                        if (act == ACT_Q8) {
                            hi[m][r] = vs_dot(hi[m][r], q0, four_bytes(a[m].hi + k));
                            hi[m][r] = vs_dot(hi[m][r], q1, four_bytes(a[m].hi + k + 4));
                            continue;
                        }
                        hi[m][r] = vs_dot(hi[m][r], q0, four_bytes(a[m].hi + k));
                        lo[m][r] = vs_dot(lo[m][r], q0, four_bytes(a[m].lo + k));
                        hi[m][r] = vs_dot(hi[m][r], q1, four_bytes(a[m].hi + k + 4));
                        lo[m][r] = vs_dot(lo[m][r], q1, four_bytes(a[m].lo + k + 4));
                    }
                }
            }
            for (int m = 0; m < 2; m++)
                for (int r = 0; r < R; r++)
                    dot[m][r] = act == ACT_Q8 ? vs_join_q8(hi[m][r]) : vs_join(hi[m][r], lo[m][r]);
        }
        V block[2], minimums[2];  // each group's scales and minimums, read (and multiplied out) once for both rows
        for (int r = 0; r < R; r++)
            block[r] = block_scales(ws[r], b, scales), minimums[r] = block_minimums(L, scales, ws[r], wm[r], b);
        for (int m = 0; m < 2; m++) {
            const V step = v_set1(a[m].step[b]), sum = v_set1(a[m].sum[b]);
            for (int r = 0; r < R; r++) {
                acc[m][r] = v_fma(vi_float(dot[m][r]), v_mul(block[r], step), acc[m][r]);
                acc[m][r] = v_fma(minimums[r], sum, acc[m][r]);
            }
        }
    }
    for (int m = 0; m < 2; m++)
        for (int r = 0; r < R; r++) v_store(out + GROUP * (2 * m + r), acc[m][r]);
}

// groups_dot for four activation rows a[0] … a[3] quantized as ACT_Q8, R ≤ QUAD_STREAMS groups: each tile is loaded
// (and a 4-bit tile unpacked) once for four rows. A q8 row's block sum is one set of registers a group (no lo), so
// four rows' sums take the registers two rows' take in the default mode, and the tile's load, unpacking and the
// block's scales are shared twice as widely. out[(QUAD_STREAMS m + r) × 16 + i] for row m, group r. Integer sums are
// exact in any order; each row's float steps are groups_dot's, in its order, so a row's result is the same bit for bit.
static inline __attribute__((always_inline)) void groups_dot_quad(const Linear *L, int kind, int scales,
                                                                  const Activation *a, int g0, int stride, int R,
                                                                  int left, float *out) {
    const int nb = L->K / BLOCK, tiles = kind == Q8 ? 8 : 4;
    const int ahead = PREFETCH_BYTES / (tiles * 64), blocks_left = kind == Q4 ? left * nb : 0;  // in blocks
    const uint8_t *w[QUAD_STREAMS], *ws[QUAD_STREAMS], *wm[QUAD_STREAMS];
    V acc[4][QUAD_STREAMS];
    group_starts(L, scales, g0, stride, R, w, ws, wm);
    for (int m = 0; m < 4; m++)
        for (int r = 0; r < R; r++) acc[m][r] = v_zero();
    for (int b = 0; b < nb; b++) {
        prefetch_blocks(w, R, b, ahead, blocks_left, tiles);
        VI dot[4][QUAD_STREAMS];  // Σ q X of this block, [row of x][group]
        if (kind == Q8) {
            const int halves = scales == HALVES ? 2 : 1;  // HALVES: each half summed and scaled on its own (groups_dot)
            for (int h = 0; h < halves; h++) {
                VQ sums[4][QUAD_STREAMS];
                for (int m = 0; m < 4; m++)
                    for (int r = 0; r < R; r++) sums[m][r] = vq_zero();
                #pragma GCC unroll 1  // one tile at a time: the rows' sums and accumulators take the registers
                for (int t = h * tiles / halves; t < (h + 1) * tiles / halves; t++) {
                    const int k = b * BLOCK + 4 * t;
                    for (int r = 0; r < R; r++) {
                        const T q = t_load(w[r] + ((size_t)b * tiles + t) * 64);
                        for (int m = 0; m < 4; m++) sums[m][r] = vq_dot_q8(sums[m][r], q, a[m].hi + k, a[m].X + k);
                    }
                }
                for (int m = 0; m < 4; m++)
                    for (int r = 0; r < R; r++) dot[m][r] = vq_join_q8(sums[m][r]);
                if (scales == HALVES)
                    for (int m = 0; m < 4; m++)
                        for (int r = 0; r < R; r++)
                            acc[m][r] = half_term(L, ws[r], wm[r], b, h, a + m, dot[m][r], acc[m][r]);
            }
            if (scales == HALVES) continue;
        } else {
            VS sums[4][QUAD_STREAMS];
            for (int m = 0; m < 4; m++)
                for (int r = 0; r < R; r++) sums[m][r] = vs_zero();
            #pragma GCC unroll 1  // one tile at a time: the rows' sums and accumulators take the registers
            for (int t = 0; t < tiles; t++) {
                const int k = b * BLOCK + 8 * t;
                // the low nibbles into each row's sums, then the high ones: one unpacked half live at a time
                for (int r = 0; r < R; r++) {
                    const T packed = t_load(w[r] + ((size_t)b * tiles + t) * 64);
                    const T q0 = t_low(packed);
                    for (int m = 0; m < 4; m++) sums[m][r] = vs_dot(sums[m][r], q0, four_bytes(a[m].hi + k));
                    const T q1 = t_high(packed);
                    for (int m = 0; m < 4; m++) sums[m][r] = vs_dot(sums[m][r], q1, four_bytes(a[m].hi + k + 4));
                }
            }
            for (int m = 0; m < 4; m++)
                for (int r = 0; r < R; r++) dot[m][r] = vs_join_q8(sums[m][r]);
        }
        V block[QUAD_STREAMS], minimums[QUAD_STREAMS];  // each group's scales and minimums, once for the four rows
        for (int r = 0; r < R; r++)
            block[r] = block_scales(ws[r], b, scales), minimums[r] = block_minimums(L, scales, ws[r], wm[r], b);
        for (int m = 0; m < 4; m++) {
            const V step = v_set1(a[m].step[b]), sum = v_set1(a[m].sum[b]);
            for (int r = 0; r < R; r++) {
                acc[m][r] = v_fma(vi_float(dot[m][r]), v_mul(block[r], step), acc[m][r]);
                acc[m][r] = v_fma(minimums[r], sum, acc[m][r]);
            }
        }
    }
    for (int m = 0; m < 4; m++)
        for (int r = 0; r < R; r++) v_store(out + GROUP * (QUAD_STREAMS * m + r), acc[m][r]);
}

// n ≤ 16 weights from element k of a float row, as float32 (the rest of the 16 lanes 0)
static inline V load_floats(const void *w, size_t k, int kind, int n) {
    if (kind == F32) return v_load_n((const float *)w + k, n, 0.f);
    if (kind == F16) return v_load_f16_n((const uint16_t *)w + k, n);
    return v_load_bf16_n((const uint16_t *)w + k, n);  // bf16: the high half of a float32
}

// Rows n0, n0 + stride, … (R of them, R ≤ 4) of a float W · x into out[0 … R-1]. Several rows at once share
// each activation load and keep several streams of weights in flight: one sequential stream per core reads
// memory at about half the rate several do.
static inline __attribute__((always_inline)) void rows_dot(const Linear *L, const Activation *a, int n0, int stride,
                                                           int R, float *out) {
    const int K = L->K, kind = L->kind;
    V acc[4] = {v_zero(), v_zero(), v_zero(), v_zero()};
    const size_t row = (size_t)K * (kind == F32 ? 4 : 2);
    const uint8_t *w[4];
    for (int r = 0; r < R; r++) w[r] = (const uint8_t *)L->w + (size_t)(n0 + r * stride) * row;
    for (int k = 0; k < K; k += LANES) {
        const int n = K - k < LANES ? K - k : LANES;
        const V x = v_load_n(a->x + k, n, 0.f);
        for (int r = 0; r < R; r++) acc[r] = v_fma(load_floats(w[r], k, kind, n), x, acc[r]);
    }
    for (int r = 0; r < R; r++) out[r] = v_reduce_add(acc[r]);
}

// Row n of W as float32 (K values): an embedding lookup in a table stored as any kind. Quantized rows are computed as
// quant.QuantizedEmbedding computes them, q × scale then + minimum, two roundings.
static inline void linear_row(const Linear *L, int n, float *out) {
    const int K = L->K, kind = L->kind;
    if (!quantized(kind)) {
        const uint8_t *w = (const uint8_t *)L->w + (size_t)n * K * (kind == F32 ? 4 : 2);
        for (int k = 0; k < K; k += LANES) v_store_n(out + k, K - k, load_floats(w, k, kind, K - k < LANES ? K - k : LANES));
        return;
    }
    const int nb = K / BLOCK, tiles = kind == Q8 ? 8 : 4, i = n % GROUP;
    const size_t g = (size_t)(n / GROUP);
    const uint8_t *w = (const uint8_t *)L->w + g * nb * tiles * 64;
    for (int b = 0; b < nb; b++)
        for (int t = 0; t < tiles; t++) {
            const size_t at = scale_index(g, nb, b, t >= 4, i, L->scales);  // HALVES (8-bit tiles): 4-7 hold 16-31
            const float s = scale_at(L->scale, at, L->scales), m = minimum_at(L->minimum, at, L->scales, L->zero, s);
            for (int j = 0; j < 4; j++) {
                const uint8_t q = w[((size_t)b * tiles + t) * 64 + 4 * i + j];
                if (kind == Q8) {
                    const float p = (float)q * s;
                    out[b * BLOCK + 4 * t + j] = p + m;
                } else {
                    const float lo = (float)(q & 15) * s, hi = (float)(q >> 4) * s;
                    out[b * BLOCK + 8 * t + j] = lo + m, out[b * BLOCK + 8 * t + 4 + j] = hi + m;
                }
            }
        }
}

// The kernels' unit of work: a group of 16 rows for quantized weights, one row for float ones
static inline int unit_rows(const Linear *L) { return quantized(L->kind) ? GROUP : 1; }

static inline int units_of(const Linear *L) { return (L->N + unit_rows(L) - 1) / unit_rows(L); }

// Units u0, u0 + stride, … (R of them, R ≤ 4) of W · x into out, unit_rows values each; each stream has `left`
// units from its current one on
static inline __attribute__((always_inline)) void units_dot(const Linear *L, int kind, int scales, int act,
                                                            const Activation *a, int u0, int stride, int R, int left,
                                                            float *out) {
    if (quantized(kind))
        groups_dot(L, kind, scales, act, a, u0, stride, R, left, out);
    else
        rows_dot(L, a, u0, stride, R, out);
}

// y[n] = v[n - n0] + bias[n] (accumulate: y[n] += instead) for the rows n0 … n0 + count - 1 that exist
static inline void put(const Linear *L, int n0, const float *v, int count, float *y, int accumulate) {
    for (int i = 0; i < count && n0 + i < L->N; i++)
        y[n0 + i] = (accumulate ? y[n0 + i] : 0.f) + v[i] + (L->bias ? L->bias[n0 + i] : 0.f);
}

// Thread t of T's share of W's units: [*lo, *hi)
static inline void part_units(const Linear *L, int t, int T, int *lo, int *hi) {
    *lo = (int)((long)units_of(L) * t / T), *hi = (int)((long)units_of(L) * (t + 1) / T);
}

// Units u0, u0 + stride, … (R streams, each with `left` units from its current one on) of W · x for every row: rows
// [0, 4 quads) four at a time (groups_dot_quad), the next 2 pairs two at a time (groups_dot_pair), the rest one at a
// time; into y (row r at y + r × ldy; accumulate: y +=), bias included. The first product reads the units from memory,
// the others find them in cache.
static inline __attribute__((always_inline)) void units_every_row(const Linear *L, int kind, int scales, int act,
                                                                  const Activation *a, int rows, int quads, int pairs,
                                                                  int u0, int stride, int R, int left, float *y,
                                                                  size_t ldy, int accumulate) {
    const int per = unit_rows(L), paired = 4 * quads, single = paired + 2 * pairs;
    float out[4 * QUAD_STREAMS * GROUP];  // the largest: four rows' sums of QUAD_STREAMS groups
    for (int p = 0; p < quads; p++) {
        groups_dot_quad(L, kind, scales, a + 4 * p, u0, stride, R, left, out);
        for (int m = 0; m < 4; m++)
            for (int s = 0; s < R; s++)
                put(L, (u0 + s * stride) * per, out + (QUAD_STREAMS * m + s) * per, per, y + (4 * p + m) * ldy,
                    accumulate);
    }
    for (int p = 0; p < pairs; p++) {
        groups_dot_pair(L, kind, scales, act, a + paired + 2 * p, u0, stride, R, left, out);
        for (int m = 0; m < 2; m++)
            for (int s = 0; s < R; s++)
                put(L, (u0 + s * stride) * per, out + (2 * m + s) * per, per, y + (paired + 2 * p + m) * ldy,
                    accumulate);
    }
    for (int r = single; r < rows; r++) {
        units_dot(L, kind, scales, act, a + r, u0, stride, R, left, out);
        for (int s = 0; s < R; s++) put(L, (u0 + s * stride) * per, out + s * per, per, y + r * ldy, accumulate);
    }
}

#include "tiles.h"  // after put: the tiles' products write their rows with it

_Static_assert(QUAD_STREAMS <= PAIR_STREAMS && PAIR_STREAMS <= 4, "a sweep's streams: quads ≤ pairs ≤ 4");

// units_every_row over W's units [lo, hi) in S streams, then the units past S × ((hi - lo) / S) one at a time
static inline __attribute__((always_inline)) void sweep_units(const Linear *L, int kind, int scales, int act,
                                                              const Activation *a, int rows, int quads, int pairs,
                                                              int lo, int hi, const int S, float *y, size_t ldy,
                                                              int accumulate) {
    const int part = (hi - lo) / S;
    for (int i = 0; i < part; i++)
        units_every_row(L, kind, scales, act, a, rows, quads, pairs, lo + i, part, S, part - i, y, ldy, accumulate);
    for (int u = lo + S * part; u < hi; u++)
        units_every_row(L, kind, scales, act, a, rows, quads, pairs, u, 0, 1, hi - u, y, ldy, accumulate);
}

// Thread t of T: its share of y = W x for each of the `rows` activation rows a[r] (y's row r at y + r × ldy;
// accumulate: y += W x), bias included, in concurrent weight streams. Each unit of W is read from memory once: every
// row's products over it run before the sweep moves on, and find it in cache. Where the CPU has a tile unit (tiles.h),
// quantized weights take TILE_ROWS rows or more there, 16 at a time. Otherwise they take rows two at a time
// (groups_dot_pair), one tile load for both; in ACT_Q8, where the build has the registers for it (QUAD_ROWS), four at
// a time first (groups_dot_quad), then the rest in pairs; a lone row, and float weights, one at a time. The sweep
// keeps as many streams as the fewest its products hold the sums of (QUAD_STREAMS, PAIR_STREAMS, or four for rows
// one at a time). `kind` is L->kind, a constant where gemv_part calls it: each kind gets its own loops, and so do its
// scales' forms and the activations' modes (`act`: ACT_EXACT or ACT_Q8, as the rows were quantized).
static inline __attribute__((always_inline)) void gemv_part_of(const Linear *L, int kind, int scales, int act,
                                                               const Activation *a, int rows, int t, int T, float *y,
                                                               size_t ldy, int accumulate) {
    int lo, hi;
    part_units(L, t, T, &lo, &hi);
    if (TILES && quantized(kind) && rows >= TILE_ROWS(act) && tiles_in_use() &&
        tiles_part(L, kind, scales, act, a, rows, lo, hi, y, ldy, accumulate))
        return;
    const int quads = act == ACT_Q8 && QUAD_ROWS && quantized(kind) ? rows / 4 : 0;
    const int pairs = quantized(kind) ? (rows - 4 * quads) / 2 : 0;
    if (quads)  // each stream count a constant of its own loops
        sweep_units(L, kind, scales, act, a, rows, quads, pairs, lo, hi, QUAD_STREAMS, y, ldy, accumulate);
    else if (pairs)
        sweep_units(L, kind, scales, act, a, rows, 0, pairs, lo, hi, PAIR_STREAMS, y, ldy, accumulate);
    else
        sweep_units(L, kind, scales, act, a, rows, 0, 0, lo, hi, 4, y, ldy, accumulate);
}

// gemv_part_of for L's kind and scales and the rows' `activations` (as quantize_row made them), one instance of the
// loops each (gemv.c: compiled once for every source)
void gemv_part(const Linear *L, const Activation *a, int activations, int rows, int t, int T, float *y, size_t ldy,
               int accumulate);
