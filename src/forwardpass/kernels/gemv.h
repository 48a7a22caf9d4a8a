// Matrix-vector products for decode: one activation row against every row of a weight matrix, the weights
// streamed from memory once. Decode is memory-bound, so each weight byte must cost as few instructions as
// possible: the quantized kernels multiply integers with AVX-512 VNNI (64 multiply-adds per instruction).
//
// Quantized weights: blocks of 32 along K, w = min + scale × q with q unsigned (8-bit: [0, 255]; 4-bit:
// [0, 15], byte i of a 16-byte block holding weight i in its low nibble and weight i + 16 in its high one).
// The activation row is quantized too, per block of 32, to X = 128 hi + lo with hi in [-127, 127] and lo in
// [-64, 64]: 15 bits, an error under 1/32000 of the block's largest value (plain int8 activations, at 1/254,
// cost 4% of greedy tokens on the default model). A block's dot product is then
//   Σ w x = scale_w scale_x Σ q X + min_w scale_x Σ X,   Σ q X = 128 Σ q hi + Σ q lo
// The integer sums run two blocks per pair of VNNI instructions; the minimum term is one short dot product.
#pragma once
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK 32

enum { F32 = 0, F16 = 1, BF16 = 2, Q4 = 4, Q8 = 8 };  // how a weight matrix is stored

static inline int quantized(int kind) { return kind == Q4 || kind == Q8; }

static inline __mmask16 first_n(int n) { return n >= 16 ? 0xFFFF : (__mmask16)((1u << n) - 1); }  // lanes < n

// A linear layer's weight as the kernels read it: (N, K), row-major. Float kinds are read as they are
// (16-bit ones widened to float32 in registers) against the float32 activation row.
typedef struct {
    int kind, N, K;
    const void *w;        // F32: float (N, K); F16, BF16: uint16 (N, K); Q8: uint8 (N, K); Q4: uint8 (N, K / 2)
    const float *scale;   // (N, K / 32), quantized only
    const float *minimum; // (N, K / 32), quantized only
    const float *bias;    // (N) or NULL
} Linear;

// An activation row quantized for one weight format. Two blocks fill one 64-byte vector; the 4-bit
// layout interleaves them as the nibbles unpack: [b0 0-15, b1 0-15, b0 16-31, b1 16-31].
typedef struct {
    int8_t *hi, *lo;   // (pairs, 64) each, zero-padded past the last block
    __m512 *scale;     // (pairs): each lane the scale of the block its int32 lane sums
    float *sum;        // (blocks): scale × Σ xq, for the minimum term
    const float *x;    // float weights read the row itself
    float *unpacked;   // bf16 weights: the row reordered as bf16 pairs unpack (see bf16_order)
} Activation;

static inline int pairs_of(int K) { return (K / BLOCK + 1) / 2; }

static inline __m512i lane_blocks(int bits) {  // which of a pair's two blocks each int32 lane sums
    return bits == Q4 ? _mm512_set_epi32(1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0)
                      : _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
}

static Activation activation_alloc(int K) {
    const int pairs = pairs_of(K);
    Activation a = {aligned_alloc(64, (size_t)pairs * 64), aligned_alloc(64, (size_t)pairs * 64),
                    aligned_alloc(64, (size_t)pairs * 64), malloc(sizeof(float) * 2 * pairs), NULL,
                    aligned_alloc(64, (size_t)pairs * 64 * sizeof(float))};
    return a;
}

static void activation_free(Activation a) {
    free(a.hi);
    free(a.lo);
    free(a.scale);
    free(a.sum);
    free(a.unpacked);
}

// bf16 weights widen to float32 by placing each 16-bit value in the high half of a 32-bit lane: interleaving
// 32 of them with zeros (two unpack instructions) yields them in the order [0-3, 8-11, 16-19, 24-27] then
// [4-7, 12-15, 20-23, 28-31]. The activation row is put in the same order once, instead of every weight row.
static inline int bf16_order(int i) { return (i / 32) * 32 + (i % 8 < 4 ? 0 : 16) + (i % 32) / 8 * 4 + i % 4; }

static void quantize_row(const float *x, int K, int bits, Activation *a) {
    a->x = x;
    if (bits == BF16)
        for (int i = 0; i < K - K % 32; i++) a->unpacked[bf16_order(i)] = x[i];
    if (!quantized(bits)) return;
    const int nb = K / BLOCK, pairs = pairs_of(K);
    float scales[2 * pairs];
    if (nb % 2) {  // a lone last block: its pair's other half multiplies as zeros
        memset(a->hi + (pairs - 1) * 64, 0, 64);
        memset(a->lo + (pairs - 1) * 64, 0, 64);
        scales[nb] = 0.f;
    }
    for (int b = 0; b < nb; b++) {
        const __m512 x0 = _mm512_loadu_ps(x + b * BLOCK), x1 = _mm512_loadu_ps(x + b * BLOCK + 16);
        const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(x0), _mm512_abs_ps(x1)));
        const float s = amax / 127.f, inv = s > 0.f ? 1.f / s : 0.f;
        const __m512 v0 = _mm512_mul_ps(x0, _mm512_set1_ps(inv)), v1 = _mm512_mul_ps(x1, _mm512_set1_ps(inv));
        const __m512i hi0 = _mm512_cvtps_epi32(v0), hi1 = _mm512_cvtps_epi32(v1);  // round to nearest even
        const __m512 step = _mm512_set1_ps(128.f);
        const __m512i lo0 = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_sub_ps(v0, _mm512_cvtepi32_ps(hi0)), step));
        const __m512i lo1 = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_sub_ps(v1, _mm512_cvtepi32_ps(hi1)), step));
        // where each half of the block goes: 8-bit [b0 0-31, b1 0-31]; 4-bit [b0 0-15, b1 0-15, b0 16-31, b1 16-31]
        const int first = (b / 2) * 64 + (bits == Q4 ? (b % 2) * 16 : (b % 2) * 32);
        const int second = first + (bits == Q4 ? 32 : 16);
        _mm_storeu_si128((__m128i *)(a->hi + first), _mm512_cvtepi32_epi8(hi0));
        _mm_storeu_si128((__m128i *)(a->hi + second), _mm512_cvtepi32_epi8(hi1));
        _mm_storeu_si128((__m128i *)(a->lo + first), _mm512_cvtepi32_epi8(lo0));
        _mm_storeu_si128((__m128i *)(a->lo + second), _mm512_cvtepi32_epi8(lo1));
        const __m512i X = _mm512_add_epi32(_mm512_slli_epi32(_mm512_add_epi32(hi0, hi1), 7), _mm512_add_epi32(lo0, lo1));
        scales[b] = s / 128.f;
        a->sum[b] = scales[b] * (float)_mm512_reduce_add_epi32(X);
    }
    const __m512i lanes = lane_blocks(bits);
    for (int p = 0; p < pairs; p++)
        a->scale[p] = _mm512_permutexvar_ps(lanes, _mm512_castps128_ps512(_mm_loadl_pi(_mm_setzero_ps(),
                                                                                      (const __m64 *)(scales + 2 * p))));
}

// Pair p of a quantized row as 64 unsigned bytes in the activation's layout.
static inline __m512i load_pair(const uint8_t *row, int p, int bits, int whole) {
    if (bits == Q8) {
        if (whole) return _mm512_loadu_si512((const void *)(row + p * 64));
        return _mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i *)(row + p * 64)));
    }
    const __m256i packed = whole ? _mm256_loadu_si256((const __m256i *)(row + p * 32))
                                 : _mm256_zextsi128_si256(_mm_loadu_si128((const __m128i *)(row + p * 32)));
    const __m256i nibble = _mm256_set1_epi8(0x0F);
    const __m256i lo = _mm256_and_si256(packed, nibble), hi = _mm256_and_si256(_mm256_srli_epi16(packed, 4), nibble);
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

// 16 weights from element k of a float row (those `m` selects), as float32
static inline __m512 load_floats(const void *w, size_t k, int kind, __mmask16 m) {
    if (kind == F32) return m == 0xFFFF ? _mm512_loadu_ps((const float *)w + k) : _mm512_maskz_loadu_ps(m, (const float *)w + k);
    const __m256i h = m == 0xFFFF ? _mm256_loadu_si256((const __m256i *)((const uint16_t *)w + k))
                                  : _mm256_maskz_loadu_epi16(m, (const uint16_t *)w + k);
    if (kind == F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));  // bf16: the high half of a float
}

// Rows n0, n0 + stride, … (R of them, R ≤ 4) of W · x into y[0 … R-1], bias included. Several rows at once
// share each activation load and keep several streams of weights in flight: one sequential stream per
// core reads memory at about half the rate several do.
static inline __attribute__((always_inline)) void rows_dot(const Linear *L, const Activation *a, int n0, int stride,
                                                           int R, float *y) {
    const int K = L->K, kind = L->kind;
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    if (!quantized(kind)) {
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
    } else {
        const int nb = K / BLOCK, full = nb / 2, bits = kind;
        const uint8_t *w[4];
        const float *ws[4], *wm[4];
        for (int r = 0; r < R; r++) {
            const size_t n = (size_t)(n0 + r * stride);
            w[r] = (const uint8_t *)L->w + n * K * bits / 8, ws[r] = L->scale + n * nb, wm[r] = L->minimum + n * nb;
        }
        const __m512i lanes = lane_blocks(bits);
        for (int p = 0; p < pairs_of(K); p++) {
            const __m512i hi = _mm512_load_si512((const void *)(a->hi + p * 64));
            const __m512i lo = _mm512_load_si512((const void *)(a->lo + p * 64));
            for (int r = 0; r < R; r++) {
                const __m512i q = load_pair(w[r], p, bits, p < full);
                __m512i dot = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q, hi);
                dot = _mm512_dpbusd_epi32(_mm512_slli_epi32(dot, 7), q, lo);
                const __m128 two = p < full ? _mm_loadl_pi(_mm_setzero_ps(), (const __m64 *)(ws[r] + 2 * p))
                                            : _mm_load_ss(ws[r] + 2 * p);
                const __m512 scale = _mm512_mul_ps(_mm512_permutexvar_ps(lanes, _mm512_castps128_ps512(two)),
                                                   a->scale[p]);
                acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, acc[r]);
            }
        }
        for (int b = 0; b < nb; b += 16) {  // the minimum term: Σ_b min_b × scale_x Σ X over the row's blocks
            const __mmask16 m = first_n(nb - b);
            const __m512 sums = _mm512_maskz_loadu_ps(m, a->sum + b);
            for (int r = 0; r < R; r++) acc[r] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, wm[r] + b), sums, acc[r]);
        }
    }
    for (int r = 0; r < R; r++) y[r] = _mm512_reduce_add_ps(acc[r]) + (L->bias ? L->bias[n0 + r * stride] : 0.f);
}

static inline float row_dot(const Linear *L, const Activation *a, int n) {
    float y;
    rows_dot(L, a, n, 0, 1, &y);
    return y;
}

// y[n] = (row n of W) · x for rows [lo, hi), in four concurrent streams (accumulate: y[n] += instead)
static void gemv_rows(const Linear *L, const Activation *a, int lo, int hi, float *y, int accumulate) {
    const int quarter = (hi - lo) / 4;
    for (int i = 0; i < quarter; i++) {
        float r[4];
        rows_dot(L, a, lo + i, quarter, 4, r);
        for (int s = 0; s < 4; s++) y[lo + i + s * quarter] = (accumulate ? y[lo + i + s * quarter] : 0.f) + r[s];
    }
    for (int n = lo + 4 * quarter; n < hi; n++) y[n] = (accumulate ? y[n] : 0.f) + row_dot(L, a, n);
}
