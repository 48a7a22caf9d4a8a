// Matrix-vector products for decode: one activation row against every row of a weight matrix, the weights
// streamed from memory once. Decode is memory-bound, so each weight byte must cost as few instructions as
// possible: the quantized kernels multiply integers with AVX-512 VNNI (64 multiply-adds per instruction).
//
// Quantized weights: blocks of 32 along K, w = min + scale × q with q unsigned (8-bit: [0, 255]; 4-bit:
// [0, 15]), stored tiled: rows in groups of 16 (N padded to a multiple of 16) and, for each group and block,
// 64-byte tiles of 16 rows × 4 consecutive inputs (byte 4 r + j: row r, input j). One VNNI instruction
// multiplies a tile by 4 activation bytes broadcast to every row: 16 row sums at once, with no shuffle and no
// horizontal sum. 8-bit: 8 tiles a block (inputs 4t … 4t + 3). 4-bit: 4 tiles of two nibbles a byte (low
// nibble input 8u + j, high nibble 8u + 4 + j). Scales and minimums: (groups, blocks, 16).
// The activation row is quantized too, per block of 32, to X = 128 hi + lo with hi in [-127, 127] and lo in
// [-64, 64]: 15 bits, an error under 1/32000 of the block's largest value (plain int8 activations, at 1/254,
// cost 4% of greedy tokens on the default model). A block's dot product is then
//   Σ w x = scale_w step_x Σ q X + min_w step_x Σ X,   Σ q X = 128 Σ q hi + Σ q lo
// with the two integer sums in separate accumulators and the minimum term one multiply-add per block.
#pragma once
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK 32
#define GROUP 16  // rows of a quantized tile

enum { F32 = 0, F16 = 1, BF16 = 2, Q4 = 4, Q8 = 8 };  // how a weight matrix is stored

static inline int quantized(int kind) { return kind == Q4 || kind == Q8; }

static inline __mmask16 first_n(int n) { return n >= 16 ? 0xFFFF : (__mmask16)((1u << n) - 1); }  // lanes < n

// A linear layer's weight as the kernels read it: N rows of K. Float kinds are row-major and read as they are
// (16-bit ones widened to float32 in registers) against the float32 activation row.
typedef struct {
    int kind, N, K;
    const void *w;        // F32: float (N, K); F16, BF16: uint16 (N, K); Q8, Q4: uint8 tiles (groups, K / 32, 512 or 256)
    const float *scale;   // (groups, K / 32, 16), quantized only
    const float *minimum; // (groups, K / 32, 16), quantized only
    const float *bias;    // (N) or NULL
} Linear;

// An activation row as the kernels read it
typedef struct {
    int8_t *hi, *lo;   // (K): X = 128 hi + lo per element, quantized weights only
    float *step;       // (K / 32): the value of one unit of X in each block
    float *sum;        // (K / 32): step × Σ X, for the minimum term
    const float *x;    // float weights read the row itself
    float *unpacked;   // bf16 weights: the row reordered as bf16 pairs unpack (see bf16_order)
} Activation;

// floats of memory an activation row of up to K inputs takes (64-byte aligned pieces, for a 64-byte aligned start)
static inline size_t activation_floats(int K) {
    const size_t padded = (K + 63) / 64 * 64;
    return padded / 4 * 2 + (padded / BLOCK + 15) / 16 * 16 * 2 + padded;  // hi, lo; step, sum; unpacked
}

// an activation row of up to K inputs in `mem` (activation_floats(K) floats, 64-byte aligned); NULL: an empty one
static inline Activation activation_in(float *mem, int K) {
    if (!mem) return (Activation){0};
    const size_t padded = (K + 63) / 64 * 64, blocks = (padded / BLOCK + 15) / 16 * 16;
    Activation a = {(int8_t *)mem, (int8_t *)(mem + padded / 4), mem + padded / 2, mem + padded / 2 + blocks, NULL,
                    mem + padded / 2 + 2 * blocks};
    return a;
}

static inline Activation activation_alloc(int K) {
    return activation_in(aligned_alloc(64, activation_floats(K) * sizeof(float)), K);
}

static inline void activation_free(Activation a) { free(a.hi); }

// bf16 weights widen to float32 by placing each 16-bit value in the high half of a 32-bit lane: interleaving
// 32 of them with zeros (two unpack instructions) yields them in the order [0-3, 8-11, 16-19, 24-27] then
// [4-7, 12-15, 20-23, 28-31]. The activation row is put in the same order once, instead of every weight row.
static inline int bf16_order(int i) { return (i / 32) * 32 + (i % 8 < 4 ? 0 : 16) + (i % 32) / 8 * 4 + i % 4; }

static void quantize_row(const float *x, int K, int kind, Activation *a) {
    a->x = x;
    if (kind == BF16)
        for (int i = 0; i < K - K % 32; i++) a->unpacked[bf16_order(i)] = x[i];
    if (!quantized(kind)) return;
    for (int b = 0; b < K / BLOCK; b++) {
        const __m512 x0 = _mm512_loadu_ps(x + b * BLOCK), x1 = _mm512_loadu_ps(x + b * BLOCK + 16);
        const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(x0), _mm512_abs_ps(x1)));
        const float s = amax / 127.f, inv = s > 0.f ? 1.f / s : 0.f;
        const __m512 v0 = _mm512_mul_ps(x0, _mm512_set1_ps(inv)), v1 = _mm512_mul_ps(x1, _mm512_set1_ps(inv));
        const __m512i hi0 = _mm512_cvtps_epi32(v0), hi1 = _mm512_cvtps_epi32(v1);  // round to nearest even
        const __m512 unit = _mm512_set1_ps(128.f);
        const __m512i lo0 = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_sub_ps(v0, _mm512_cvtepi32_ps(hi0)), unit));
        const __m512i lo1 = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_sub_ps(v1, _mm512_cvtepi32_ps(hi1)), unit));
        _mm_storeu_si128((__m128i *)(a->hi + b * BLOCK), _mm512_cvtepi32_epi8(hi0));
        _mm_storeu_si128((__m128i *)(a->hi + b * BLOCK + 16), _mm512_cvtepi32_epi8(hi1));
        _mm_storeu_si128((__m128i *)(a->lo + b * BLOCK), _mm512_cvtepi32_epi8(lo0));
        _mm_storeu_si128((__m128i *)(a->lo + b * BLOCK + 16), _mm512_cvtepi32_epi8(lo1));
        const __m512i X = _mm512_add_epi32(_mm512_slli_epi32(_mm512_add_epi32(hi0, hi1), 7), _mm512_add_epi32(lo0, lo1));
        a->step[b] = s / 128.f;
        a->sum[b] = a->step[b] * (float)_mm512_reduce_add_epi32(X);
    }
}

// four activation bytes (inputs k … k + 3) in every 32-bit lane
static inline __m512i four(const int8_t *v, int k) {
    int32_t word;
    memcpy(&word, v + k, 4);
    return _mm512_set1_epi32(word);
}

// How far ahead of its reads each 4-bit weight stream asks for its tiles (into L2: into L1 it was slower). Four
// VNNI instructions per 64 bytes are enough work that the hardware's own prefetching falls behind when memory runs
// at its fastest here: a large 4-bit matrix read at 77–85% of a plain read's rate at ~50 GB/s, 84–89% with this.
// 8-bit tiles (two instructions per 64 bytes) and float weights gain nothing measurable, so only 4-bit asks.
#define PREFETCH_BYTES 4096

// Where groups g0, g0 + stride, … (R of them) of a quantized W start: tiles, scales, minimums
static inline __attribute__((always_inline)) void group_starts(const Linear *L, int g0, int stride, int R,
                                                               const uint8_t **w, const float **ws, const float **wm) {
    const int nb = L->K / BLOCK, tiles = L->kind == Q8 ? 8 : 4;
    for (int r = 0; r < R; r++) {
        const size_t g = (size_t)(g0 + r * stride);
        w[r] = (const uint8_t *)L->w + g * nb * tiles * 64, ws[r] = L->scale + g * nb * GROUP;
        wm[r] = L->minimum + g * nb * GROUP;
    }
}

// Ask for block b + ahead of each of R streams (into L2), while it is inside the groups they still read
static inline __attribute__((always_inline)) void prefetch_blocks(const uint8_t *const *w, int R, int b, int ahead,
                                                                  int blocks_left, int tiles) {
    if (b + ahead < blocks_left)
        for (int r = 0; r < R; r++)
            for (int t = 0; t < tiles; t++)
                _mm_prefetch((const char *)(w[r] + ((size_t)(b + ahead) * tiles + t) * 64), _MM_HINT_T1);
}

// Groups g0, g0 + stride, … (R of them, R ≤ 4) of a quantized W · x: 16 rows each, into out[16 r + i]. Several
// groups at once keep several weight streams in flight and several chains of VNNI sums busy. Each stream runs on
// through `left` groups (this one included): its prefetches stay inside them.
static inline __attribute__((always_inline)) void groups_dot(const Linear *L, const Activation *a, int g0, int stride,
                                                             int R, int left, float *out) {
    const int nb = L->K / BLOCK, kind = L->kind, tiles = kind == Q8 ? 8 : 4;
    const int ahead = PREFETCH_BYTES / (tiles * 64), blocks_left = kind == Q4 ? left * nb : 0;  // in blocks
    const uint8_t *w[4];
    const float *ws[4], *wm[4];
    __m512 acc[4];
    group_starts(L, g0, stride, R, w, ws, wm);
    for (int r = 0; r < R; r++) acc[r] = _mm512_setzero_ps();
    const __m512i nibble = _mm512_set1_epi8(0x0F);
    for (int b = 0; b < nb; b++) {
        prefetch_blocks(w, R, b, ahead, blocks_left, tiles);
        __m512i hi[4], lo[4];  // Σ q hi and Σ q lo of this block, per row
        for (int r = 0; r < R; r++) hi[r] = lo[r] = _mm512_setzero_si512();
        for (int t = 0; t < tiles; t++) {
            if (kind == Q8) {
                const int k = b * BLOCK + 4 * t;
                const __m512i h = four(a->hi, k), l = four(a->lo, k);
                for (int r = 0; r < R; r++) {
                    const __m512i q = _mm512_loadu_si512((const void *)(w[r] + ((size_t)b * tiles + t) * 64));
                    hi[r] = _mm512_dpbusd_epi32(hi[r], q, h), lo[r] = _mm512_dpbusd_epi32(lo[r], q, l);
                }
            } else {
                const int k = b * BLOCK + 8 * t;
                const __m512i h0 = four(a->hi, k), l0 = four(a->lo, k), h1 = four(a->hi, k + 4), l1 = four(a->lo, k + 4);
                for (int r = 0; r < R; r++) {
                    const __m512i packed = _mm512_loadu_si512((const void *)(w[r] + ((size_t)b * tiles + t) * 64));
                    const __m512i q0 = _mm512_and_si512(packed, nibble);
                    const __m512i q1 = _mm512_and_si512(_mm512_srli_epi16(packed, 4), nibble);
                    hi[r] = _mm512_dpbusd_epi32(hi[r], q0, h0), lo[r] = _mm512_dpbusd_epi32(lo[r], q0, l0);
                    hi[r] = _mm512_dpbusd_epi32(hi[r], q1, h1), lo[r] = _mm512_dpbusd_epi32(lo[r], q1, l1);
                }
            }
        }
        const __m512 step = _mm512_set1_ps(a->step[b]), sum = _mm512_set1_ps(a->sum[b]);
        for (int r = 0; r < R; r++) {
            const __m512i dot = _mm512_add_epi32(_mm512_slli_epi32(hi[r], 7), lo[r]);  // Σ q X
            const __m512 scale = _mm512_mul_ps(_mm512_loadu_ps(ws[r] + b * GROUP), step);
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, acc[r]);
            acc[r] = _mm512_fmadd_ps(_mm512_loadu_ps(wm[r] + b * GROUP), sum, acc[r]);
        }
    }
    for (int r = 0; r < R; r++) _mm512_storeu_ps(out + GROUP * r, acc[r]);
}

// groups_dot for two activation rows a[0], a[1] at once, R ≤ 2 groups: each tile is loaded (and a 4-bit tile
// unpacked) once for both rows, which is where a batch's step spends its time once it is bound by arithmetic rather
// than by reading weights. out[(2 m + r) × 16 + i] for row m, group r. Each row's sums are made in the same order
// as groups_dot's, so a row's result is the same bit for bit.
static inline __attribute__((always_inline)) void groups_dot_pair(const Linear *L, const Activation *a, int g0,
                                                                  int stride, int R, int left, float *out) {
    const int nb = L->K / BLOCK, kind = L->kind, tiles = kind == Q8 ? 8 : 4;
    const int ahead = PREFETCH_BYTES / (tiles * 64), blocks_left = kind == Q4 ? left * nb : 0;  // in blocks
    const uint8_t *w[2];
    const float *ws[2], *wm[2];
    __m512 acc[2][2];
    group_starts(L, g0, stride, R, w, ws, wm);
    for (int r = 0; r < R; r++) acc[0][r] = acc[1][r] = _mm512_setzero_ps();
    const __m512i nibble = _mm512_set1_epi8(0x0F);
    for (int b = 0; b < nb; b++) {
        prefetch_blocks(w, R, b, ahead, blocks_left, tiles);
        __m512i hi[2][2], lo[2][2];  // [row of x][group]
        for (int r = 0; r < R; r++) hi[0][r] = lo[0][r] = hi[1][r] = lo[1][r] = _mm512_setzero_si512();
        for (int t = 0; t < tiles; t++) {
            if (kind == Q8) {
                const int k = b * BLOCK + 4 * t;
                for (int r = 0; r < R; r++) {
                    const __m512i q = _mm512_loadu_si512((const void *)(w[r] + ((size_t)b * tiles + t) * 64));
                    for (int m = 0; m < 2; m++) {
                        hi[m][r] = _mm512_dpbusd_epi32(hi[m][r], q, four(a[m].hi, k));
                        lo[m][r] = _mm512_dpbusd_epi32(lo[m][r], q, four(a[m].lo, k));
                    }
                }
            } else {
                const int k = b * BLOCK + 8 * t;
                for (int r = 0; r < R; r++) {
                    const __m512i packed = _mm512_loadu_si512((const void *)(w[r] + ((size_t)b * tiles + t) * 64));
                    const __m512i q0 = _mm512_and_si512(packed, nibble);
                    const __m512i q1 = _mm512_and_si512(_mm512_srli_epi16(packed, 4), nibble);
                    for (int m = 0; m < 2; m++) {
                        hi[m][r] = _mm512_dpbusd_epi32(hi[m][r], q0, four(a[m].hi, k));
                        lo[m][r] = _mm512_dpbusd_epi32(lo[m][r], q0, four(a[m].lo, k));
                        hi[m][r] = _mm512_dpbusd_epi32(hi[m][r], q1, four(a[m].hi, k + 4));
                        lo[m][r] = _mm512_dpbusd_epi32(lo[m][r], q1, four(a[m].lo, k + 4));
                    }
                }
            }
        }
        for (int m = 0; m < 2; m++) {
            const __m512 step = _mm512_set1_ps(a[m].step[b]), sum = _mm512_set1_ps(a[m].sum[b]);
            for (int r = 0; r < R; r++) {
                const __m512i dot = _mm512_add_epi32(_mm512_slli_epi32(hi[m][r], 7), lo[m][r]);  // Σ q X
                const __m512 scale = _mm512_mul_ps(_mm512_loadu_ps(ws[r] + b * GROUP), step);
                acc[m][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, acc[m][r]);
                acc[m][r] = _mm512_fmadd_ps(_mm512_loadu_ps(wm[r] + b * GROUP), sum, acc[m][r]);
            }
        }
    }
    for (int m = 0; m < 2; m++)
        for (int r = 0; r < R; r++) _mm512_storeu_ps(out + GROUP * (2 * m + r), acc[m][r]);
}

// 16 weights from element k of a float row (those `m` selects), as float32
static inline __m512 load_floats(const void *w, size_t k, int kind, __mmask16 m) {
    if (kind == F32) return m == 0xFFFF ? _mm512_loadu_ps((const float *)w + k) : _mm512_maskz_loadu_ps(m, (const float *)w + k);
    const __m256i h = m == 0xFFFF ? _mm256_loadu_si256((const __m256i *)((const uint16_t *)w + k))
                                  : _mm256_maskz_loadu_epi16(m, (const uint16_t *)w + k);
    if (kind == F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));  // bf16: the high half of a float
}

// Rows n0, n0 + stride, … (R of them, R ≤ 4) of a float W · x into out[0 … R-1]. Several rows at once share
// each activation load and keep several streams of weights in flight: one sequential stream per core reads
// memory at about half the rate several do.
static inline __attribute__((always_inline)) void rows_dot(const Linear *L, const Activation *a, int n0, int stride,
                                                           int R, float *out) {
    const int K = L->K, kind = L->kind;
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    const size_t row = (size_t)K * (kind == F32 ? 4 : 2);
    const uint8_t *w[4];
    for (int r = 0; r < R; r++) w[r] = (const uint8_t *)L->w + (size_t)(n0 + r * stride) * row;
    int k = 0;
    if (kind == BF16)
        for (; k + 32 <= K; k += 32) {
            const __m512 x0 = _mm512_load_ps(a->unpacked + k), x1 = _mm512_load_ps(a->unpacked + k + 16);
            for (int r = 0; r < R; r++) {
                const __m512i h = _mm512_loadu_si512((const void *)((const uint16_t *)w[r] + k));
                const __m512i zero = _mm512_setzero_si512();
                acc[r] = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_unpacklo_epi16(zero, h)), x0, acc[r]);
                acc[r] = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_unpackhi_epi16(zero, h)), x1, acc[r]);
            }
        }
    for (; k < K; k += 16) {
        const __mmask16 m = first_n(K - k);
        const __m512 x = _mm512_maskz_loadu_ps(m, a->x + k);
        for (int r = 0; r < R; r++) acc[r] = _mm512_fmadd_ps(load_floats(w[r], k, kind, m), x, acc[r]);
    }
    for (int r = 0; r < R; r++) out[r] = _mm512_reduce_add_ps(acc[r]);
}

// The kernels' unit of work: a group of 16 rows for quantized weights, one row for float ones
static inline int unit_rows(const Linear *L) { return quantized(L->kind) ? GROUP : 1; }

static inline int units_of(const Linear *L) { return (L->N + unit_rows(L) - 1) / unit_rows(L); }

// Units u0, u0 + stride, … (R of them, R ≤ 4) of W · x into out, unit_rows values each; each stream has `left`
// units from its current one on
static inline __attribute__((always_inline)) void units_dot(const Linear *L, const Activation *a, int u0, int stride,
                                                            int R, int left, float *out) {
    if (quantized(L->kind))
        groups_dot(L, a, u0, stride, R, left, out);
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

// Thread t of T: its share of y = W x for each of the `rows` activation rows a[r] (y's row r at y + r × ldy;
// accumulate: y += W x), bias included, in concurrent weight streams. Each unit of W is read from memory once: the
// other rows find it in cache. Quantized weights take rows two at a time in two streams (groups_dot_pair), one
// tile load for both; a lone row, and float weights, four streams of one row.
static inline void gemv_part(const Linear *L, const Activation *a, int rows, int t, int T, float *y, size_t ldy,
                             int accumulate) {
    const int per = unit_rows(L);
    int lo, hi;
    part_units(L, t, T, &lo, &hi);
    const int pairs = quantized(L->kind) ? rows / 2 : 0, single = 2 * pairs;  // rows [single, rows) one at a time
    const int quarter = (hi - lo) / 4, half = (hi - lo) / 2;
    float out[4 * GROUP];
    for (int i = 0; pairs && i < half; i++)
        for (int p = 0; p < pairs; p++) {
            groups_dot_pair(L, a + 2 * p, lo + i, half, 2, half - i, out);
            for (int m = 0; m < 2; m++)
                for (int s = 0; s < 2; s++)
                    put(L, (lo + i + s * half) * per, out + (2 * m + s) * per, per, y + (2 * p + m) * ldy, accumulate);
        }
    for (int u = lo + 2 * half; pairs && u < hi; u++)
        for (int p = 0; p < pairs; p++) {
            groups_dot_pair(L, a + 2 * p, u, 0, 1, hi - u, out);
            for (int m = 0; m < 2; m++) put(L, u * per, out + 2 * m * per, per, y + (2 * p + m) * ldy, accumulate);
        }
    for (int i = 0; single < rows && i < quarter; i++)
        for (int r = single; r < rows; r++) {
            units_dot(L, a + r, lo + i, quarter, 4, quarter - i, out);
            for (int s = 0; s < 4; s++)
                put(L, (lo + i + s * quarter) * per, out + s * per, per, y + r * ldy, accumulate);
        }
    for (int u = lo + 4 * quarter; single < rows && u < hi; u++)
        for (int r = single; r < rows; r++) {
            units_dot(L, a + r, u, 0, 1, hi - u, out);
            put(L, u * per, out, per, y + r * ldy, accumulate);
        }
}
