// y = x Wᵀ for a few rows of x (decode), W stored as 8-bit or 4-bit integers in blocks of 32 along K.
//
// Both store w = min + scale × q with q unsigned (8-bit: [0, 255]; 4-bit: [0, 15]), one scale and min
// per block. Each call quantizes x to int16, one scale per block of 32 (a relative error near 1/32767,
// far below the weights' own), so every block's dot product is an integer one (AVX-512: 32 multiply-adds
// per instruction into 16 int32 lanes), scaled once per block:
//   Σ w x = Σ_b scale_b sx_b Σ_i q_i xq_i + min_b sx_b Σ_i xq_i
// The kernels stream each weight row once for all M rows of x: they are memory-bound, as decode is.
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#define BLOCK 32

typedef struct {
    int16_t *q;   // (M, K)
    float *scale; // (M, K / 32)
    float *sum;   // (M, K / 32): scale × Σ q, for the minimum term
} QuantizedX;

static QuantizedX quantize_x(const float *x, int M, int K) {
    const int nb = K / BLOCK;
    QuantizedX qx = {aligned_alloc(64, (size_t)M * K * sizeof(int16_t)), malloc(sizeof(float) * M * nb),
                     malloc(sizeof(float) * M * nb)};
    for (int m = 0; m < M; m++) {
        for (int b = 0; b < nb; b++) {
            const float *xb = x + (size_t)m * K + b * BLOCK;
            float amax = 0.f;
            for (int i = 0; i < BLOCK; i++) amax = fmaxf(amax, fabsf(xb[i]));
            const float s = amax / 32767.f, inv = s > 0.f ? 1.f / s : 0.f;
            int sum = 0;
            for (int i = 0; i < BLOCK; i++) {
                const int v = (int)lrintf(xb[i] * inv);
                qx.q[(size_t)m * K + b * BLOCK + i] = (int16_t)v;
                sum += v;
            }
            qx.scale[m * nb + b] = s;
            qx.sum[m * nb + b] = s * (float)sum;
        }
    }
    return qx;
}

static void release(QuantizedX qx) {
    free(qx.q);
    free(qx.scale);
    free(qx.sum);
}

// one block: 32 weights (as 16-bit lanes) against 32 activations, into y's accumulator
static inline __m512 block_dot(__m512i w16, const int16_t *xq, float scale, __m512 acc) {
    const __m512i dot = _mm512_madd_epi16(w16, _mm512_load_si512((const void *)xq));  // 16 lanes, 2 products each
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_set1_ps(scale), acc);
}

// one block's 32 weights as 16-bit lanes. 8-bit: 32 bytes. 4-bit: 16 bytes, byte i holding weight i in
// its low nibble and weight i + 16 in its high one.
static inline __m512i load_block(const uint8_t *row, int b, int bits) {
    if (bits == 8) return _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(row + b * BLOCK)));
    const __m128i packed = _mm_loadu_si128((const __m128i *)(row + b * BLOCK / 2)), nibble = _mm_set1_epi8(0x0F);
    const __m128i lo = _mm_and_si128(packed, nibble), hi = _mm_and_si128(_mm_srli_epi16(packed, 4), nibble);
    return _mm512_cvtepu8_epi16(_mm256_set_m128i(hi, lo));  // weights 0-15, then 16-31
}

static void gemv(const float *x, int M, int K, const uint8_t *w, const float *w_scale, const float *w_min, int N,
                 float *y, int bits) {
    const int nb = K / BLOCK;
    const QuantizedX qx = quantize_x(x, M, K);
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const uint8_t *wr = w + (size_t)n * K * bits / 8;
        const float *sr = w_scale + (size_t)n * nb, *mr = w_min + (size_t)n * nb;
        for (int m = 0; m < M; m++) {
            const float *sx = qx.scale + m * nb, *cx = qx.sum + m * nb;
            const int16_t *xr = qx.q + (size_t)m * K;
            __m512 acc = _mm512_setzero_ps();
            float corr = 0.f;
            for (int b = 0; b < nb; b++) {
                acc = block_dot(load_block(wr, b, bits), xr + b * BLOCK, sr[b] * sx[b], acc);
                corr += mr[b] * cx[b];
            }
            y[(size_t)m * N + n] = _mm512_reduce_add_ps(acc) + corr;
        }
    }
    release(qx);
}

void q8_gemv(const float *x, int M, int K, const uint8_t *w, const float *w_scale, const float *w_min, int N,
             float *y) {
    gemv(x, M, K, w, w_scale, w_min, N, y, 8);
}

void q4_gemv(const float *x, int M, int K, const uint8_t *w, const float *w_scale, const float *w_min, int N,
             float *y) {
    gemv(x, M, K, w, w_scale, w_min, N, y, 4);
}
