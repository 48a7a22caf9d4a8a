// The vector operations the kernels are written in: 16 float32 lanes (V), 16 int32 lanes (VI) and a 64-byte weight
// tile (T), in four builds chosen at compile time (kernels/__init__.py picks one at run time by the CPU):
//   FP_AVX512  AVX-512 F/BW/VL + VNNI: one register each
//   FP_AVX2    AVX2 + FMA + F16C: two 8-lane halves (rows 0–7 and 8–15 of a tile)
//   FP_NEON    ARM64 Advanced SIMD: four 4-lane quarters
//   (none)     portable C: plain loops over lanes, the reference the others are tested against
// Every build does the same arithmetic lane by lane (fused multiply-adds where fma is written, round-to-nearest-even
// where round is), so the integer kernels give the same bits in all three; only the order of a horizontal sum differs.
#pragma once
#include <math.h>
#include <stdint.h>
#include <string.h>
#if defined(FP_AVX512) || defined(FP_AVX2)
#include <immintrin.h>
#endif

#define LANES 16

// a 32-bit lane holding four consecutive activation bytes
static inline int32_t four_bytes(const int8_t *v) {
    int32_t word;
    memcpy(&word, v, 4);
    return word;
}

static inline void prefetch_l2(const void *p) { __builtin_prefetch(p, 0, 2); }

// IEEE binary16 → float32 for n values, subnormals, infinities and NaNs included, in lane-wise integer and float
// operations selected by masks (a branch, even a conditional expression, keeps the loop scalar) so that it vectorizes:
// a normal half is its bits moved into float32's fields and scaled by 2^112 (exact), a subnormal one m × 2^-24 (exact,
// made from the integer m, so a CPU that flushes subnormal inputs reads it right too), and exponent 31 becomes
// float32's 255 with the same payload
static inline void halves_to_floats(const uint16_t *h, float *f, int n) {
    _Pragma("omp simd")
    for (int i = 0; i < n; i++) {
        const uint32_t em = h[i] & 0x7FFFu, bits = em << 13, sign = (uint32_t)(h[i] & 0x8000u) << 16;
        const uint32_t small = 0u - (uint32_t)(em < 0x0400u), special = 0u - (uint32_t)(em >= 0x7C00u);
        float normal, subnormal = (float)(int32_t)em * 0x1p-24f;
        uint32_t a, b;
        memcpy(&normal, &bits, 4);
        normal *= 0x1p112f;
        memcpy(&a, &normal, 4), memcpy(&b, &subnormal, 4);
        const uint32_t u = (((b & small) | (a & ~small)) & ~special) | ((0x7F800000u | bits) & special) | sign;
        memcpy(f + i, &u, 4);
    }
}

static inline float half_float(uint16_t h) {
    float f;
    halves_to_floats(&h, &f, 1);
    return f;
}

// float32 → IEEE binary16, rounded to nearest, ties to even (what PyTorch's .half() gives): past 65504 to infinity,
// below 2^-14 to a subnormal (or zero), a NaN to the quiet NaN 0x7E00 with its sign. Portable, so every build stores
// the same bits; the few values a decode step stores (its new keys and values) need no vector form.
static inline uint16_t float_half(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    const uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    const uint32_t a = x & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return sign | 0x7E00u;
    if (a >= 0x477FF000u) return sign | 0x7C00u;  // 65520 and above: halfway to 2^16 and past it
    if (a < 0x38800000u) {                        // below 2^-14: m × 2^-24, m rounded (exact scaling)
        float v;
        memcpy(&v, &a, 4);
        return sign | (uint16_t)nearbyintf(v * 0x1p24f);  // 1024 is 2^-14 itself, the smallest normal's bits
    }
    const uint32_t r = a - 0x38000000u;  // exponent rebiased by -112, then the low 13 bits rounded off
    return sign | (uint16_t)((r + 0xFFFu + ((r >> 13) & 1u)) >> 13);
}

static inline void floats_to_halves(const float *f, uint16_t *h, int n) {
    for (int i = 0; i < n; i++) h[i] = float_half(f[i]);
}

#if defined(FP_AVX512)
#define KERNEL_ISA "avx512"
#define PAIR_STREAMS 2  // 32 registers hold two groups' sums for two rows
#define QUAD_ROWS 1     // q8 rows four at a time (gemv.h: groups_dot_quad)
#define QUAD_STREAMS 2  // four q8 rows × two groups: 8 sums and 8 accumulators, the rest for tiles and scales
typedef __m512 V;
typedef __m512i VI;
typedef __m512i T;

static inline __mmask16 first_n(int n) { return n >= 16 ? 0xFFFF : (__mmask16)((1u << (n > 0 ? n : 0)) - 1); }
static inline V v_zero(void) { return _mm512_setzero_ps(); }
static inline V v_set1(float x) { return _mm512_set1_ps(x); }
static inline V v_load(const float *p) { return _mm512_loadu_ps(p); }
static inline void v_store(float *p, V v) { _mm512_storeu_ps(p, v); }
static inline V v_load_n(const float *p, int n, float fill) { return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), first_n(n), p); }
static inline void v_store_n(float *p, int n, V v) { _mm512_mask_storeu_ps(p, first_n(n), v); }
static inline V v_add(V a, V b) { return _mm512_add_ps(a, b); }
static inline V v_sub(V a, V b) { return _mm512_sub_ps(a, b); }
static inline V v_mul(V a, V b) { return _mm512_mul_ps(a, b); }
static inline V v_div(V a, V b) { return _mm512_div_ps(a, b); }
static inline V v_fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
static inline V v_fnma(V a, V b, V c) { return _mm512_fnmadd_ps(a, b, c); }
static inline V v_max(V a, V b) { return _mm512_max_ps(a, b); }
static inline V v_min(V a, V b) { return _mm512_min_ps(a, b); }
static inline V v_abs(V a) { return _mm512_abs_ps(a); }
static inline V v_round(V a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
static inline V v_scalef(V a, V n) { return _mm512_scalef_ps(a, n); }  // a × 2^n, n integral
static inline float v_reduce_add(V a) { return _mm512_reduce_add_ps(a); }
static inline float v_reduce_max(V a) { return _mm512_reduce_max_ps(a); }
static inline int v_any_nan(V a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q) != 0; }
// lane i: the sum of a[i]'s lanes, 16 sums at once: pairs of vectors interleaved and added within 128-bit lanes,
// twice, then the 128-bit lanes added across (a horizontal sum each would take four shuffles and four adds)
static inline __attribute__((always_inline)) V v_sums(const V a[16]) {
    V two[8], four[4], eight[2];
    for (int i = 0; i < 8; i++)
        two[i] = _mm512_add_ps(_mm512_unpacklo_ps(a[2 * i], a[2 * i + 1]), _mm512_unpackhi_ps(a[2 * i], a[2 * i + 1]));
    for (int i = 0; i < 4; i++) {
        const __m512d x = _mm512_castps_pd(two[2 * i]), y = _mm512_castps_pd(two[2 * i + 1]);
        four[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(x, y)), _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)));
    }
    for (int i = 0; i < 2; i++)  // 128-bit lanes 0, 2 of each against 1, 3
        eight[i] = _mm512_add_ps(_mm512_shuffle_f32x4(four[2 * i], four[2 * i + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                                 _mm512_shuffle_f32x4(four[2 * i], four[2 * i + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_add_ps(_mm512_shuffle_f32x4(eight[0], eight[1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(eight[0], eight[1], _MM_SHUFFLE(3, 1, 3, 1)));
}
static inline void v_store_i8(int8_t *p, V a) { _mm_storeu_si128((__m128i *)p, _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(a))); }
// 16 weights from 16-bit floats (n of them, the rest 0)
static inline V v_load_f16_n(const uint16_t *p, int n) {
    return _mm512_cvtph_ps(n >= 16 ? _mm256_loadu_si256((const __m256i *)p) : _mm256_maskz_loadu_epi16(first_n(n), p));
}
// 16 unsigned bytes as floats (block scale factors)
static inline V v_load_u8(const uint8_t *p) { return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)p))); }
// 16 signed bytes as floats (a q8_0 KV block's values)
static inline V v_load_i8(const int8_t *p) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)p))); }
static inline V v_load_bf16_n(const uint16_t *p, int n) {
    const __m256i h = n >= 16 ? _mm256_loadu_si256((const __m256i *)p) : _mm256_maskz_loadu_epi16(first_n(n), p);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

static inline VI vi_zero(void) { return _mm512_setzero_si512(); }
static inline VI vi_add(VI a, VI b) { return _mm512_add_epi32(a, b); }
static inline VI vi_shl7(VI a) { return _mm512_slli_epi32(a, 7); }
static inline V vi_float(VI a) { return _mm512_cvtepi32_ps(a); }
static inline T t_load(const uint8_t *p) { return _mm512_loadu_si512((const void *)p); }
static inline T t_low(T t) { return _mm512_and_si512(t, _mm512_set1_epi8(0x0F)); }
static inline T t_high(T t) { return _mm512_and_si512(_mm512_srli_epi16(t, 4), _mm512_set1_epi8(0x0F)); }
// acc[i] += Σ_j t[4 i + j] x_j, t unsigned and the x_j the four signed bytes of `word` (every build but AVX2's, whose
// byte products saturate in pairs: it has its own VS and VQ below)
static inline VI vi_dot(VI acc, T t, int32_t word) { return _mm512_dpbusd_epi32(acc, t, _mm512_set1_epi32(word)); }

#elif defined(FP_AVX2)
#define KERNEL_ISA "avx2"
#define PAIR_STREAMS 1  // 16 registers: a second group's sums would spill to memory
// no q8 rows four at a time: four rows' sums and accumulators alone take the 16 registers (an 8-bit tile's sums
// more), and the spilled sums ran slower than pairs
#define QUAD_ROWS 0
#define QUAD_STREAMS 1
typedef struct { __m256 a, b; } V;
typedef struct { __m256i a, b; } VI;
typedef struct { __m256i a, b; } T;

static inline __m256i mask8(int n) {  // lanes < n of 8 all ones
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
static inline V v_make(__m256 a, __m256 b) { V v = {a, b}; return v; }
static inline V v_zero(void) { return v_make(_mm256_setzero_ps(), _mm256_setzero_ps()); }
static inline V v_set1(float x) { return v_make(_mm256_set1_ps(x), _mm256_set1_ps(x)); }
static inline V v_load(const float *p) { return v_make(_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)); }
static inline void v_store(float *p, V v) { _mm256_storeu_ps(p, v.a), _mm256_storeu_ps(p + 8, v.b); }
static inline V v_load_n(const float *p, int n, float fill) {
    if (n >= 16) return v_load(p);
    const __m256i m0 = mask8(n), m1 = mask8(n - 8);
    const __m256 f = _mm256_set1_ps(fill);
    return v_make(_mm256_blendv_ps(f, _mm256_maskload_ps(p, m0), _mm256_castsi256_ps(m0)),
                  _mm256_blendv_ps(f, _mm256_maskload_ps(p + 8, m1), _mm256_castsi256_ps(m1)));
}
static inline void v_store_n(float *p, int n, V v) {
    if (n >= 16) { v_store(p, v); return; }
    _mm256_maskstore_ps(p, mask8(n), v.a), _mm256_maskstore_ps(p + 8, mask8(n - 8), v.b);
}
#define V2(name, op) static inline V name(V x, V y) { return v_make(op(x.a, y.a), op(x.b, y.b)); }
V2(v_add, _mm256_add_ps)
V2(v_sub, _mm256_sub_ps)
V2(v_mul, _mm256_mul_ps)
V2(v_div, _mm256_div_ps)
V2(v_max, _mm256_max_ps)
V2(v_min, _mm256_min_ps)
#undef V2
static inline V v_fma(V x, V y, V z) { return v_make(_mm256_fmadd_ps(x.a, y.a, z.a), _mm256_fmadd_ps(x.b, y.b, z.b)); }
static inline V v_fnma(V x, V y, V z) { return v_make(_mm256_fnmadd_ps(x.a, y.a, z.a), _mm256_fnmadd_ps(x.b, y.b, z.b)); }
static inline V v_abs(V x) {
    const __m256 m = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    return v_make(_mm256_and_ps(x.a, m), _mm256_and_ps(x.b, m));
}
static inline V v_round(V x) {
    return v_make(_mm256_round_ps(x.a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                  _mm256_round_ps(x.b, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
static inline __m256 pow2(__m256 n) {  // 2^n for integral n in [-126, 127]
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
}
static inline V v_scalef(V x, V n) { return v_make(_mm256_mul_ps(x.a, pow2(n.a)), _mm256_mul_ps(x.b, pow2(n.b))); }
static inline float sum8(__m256 x) {
    const __m128 h = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    const __m128 q = _mm_add_ps(h, _mm_movehl_ps(h, h));
    return _mm_cvtss_f32(_mm_add_ss(q, _mm_movehdup_ps(q)));
}
static inline float v_reduce_add(V x) { return sum8(_mm256_add_ps(x.a, x.b)); }
// lane i: the sum of a[i]'s lanes, 16 sums at once (each vector's halves added, then eight at a time by hadd)
static inline __m256 sums8(const V *a) {
    __m256 h[8];
    for (int i = 0; i < 8; i++) h[i] = _mm256_add_ps(a[i].a, a[i].b);
    const __m256 lo = _mm256_hadd_ps(_mm256_hadd_ps(h[0], h[1]), _mm256_hadd_ps(h[2], h[3]));
    const __m256 hi = _mm256_hadd_ps(_mm256_hadd_ps(h[4], h[5]), _mm256_hadd_ps(h[6], h[7]));
    return _mm256_add_ps(_mm256_permute2f128_ps(lo, hi, 0x20), _mm256_permute2f128_ps(lo, hi, 0x31));
}
static inline V v_sums(const V a[16]) { return v_make(sums8(a), sums8(a + 8)); }
static inline float v_reduce_max(V x) {
    const __m256 m = _mm256_max_ps(x.a, x.b);
    const __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    const __m128 q = _mm_max_ps(h, _mm_movehl_ps(h, h));
    return _mm_cvtss_f32(_mm_max_ss(q, _mm_movehdup_ps(q)));
}
static inline int v_any_nan(V x) {
    return _mm256_movemask_ps(_mm256_or_ps(_mm256_cmp_ps(x.a, x.a, _CMP_UNORD_Q), _mm256_cmp_ps(x.b, x.b, _CMP_UNORD_Q)));
}
static inline void v_store_i8(int8_t *p, V x) {  // integral values in [-128, 127]
    const __m256i w = _mm256_packs_epi32(_mm256_cvtps_epi32(x.a), _mm256_cvtps_epi32(x.b));  // 16-bit, lanes interleaved
    const __m128i b = _mm_packs_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
    _mm_storeu_si128((__m128i *)p, _mm_shuffle_epi32(b, _MM_SHUFFLE(3, 1, 2, 0)));
}
static inline __m256i load_u16_n(const uint16_t *p, int n) {  // n of 16 halfwords, the rest 0
    if (n >= 16) return _mm256_loadu_si256((const __m256i *)p);
    uint16_t tmp[16] = {0};
    memcpy(tmp, p, sizeof(uint16_t) * (n > 0 ? n : 0));
    return _mm256_loadu_si256((const __m256i *)tmp);
}
static inline V v_load_f16_n(const uint16_t *p, int n) {
    const __m256i h = load_u16_n(p, n);
    return v_make(_mm256_cvtph_ps(_mm256_castsi256_si128(h)), _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1)));
}
static inline V v_load_u8(const uint8_t *p) {
    const __m128i b = _mm_loadu_si128((const __m128i *)p);
    return v_make(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b)), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(b, 8))));
}
static inline V v_load_i8(const int8_t *p) {
    const __m128i b = _mm_loadu_si128((const __m128i *)p);
    return v_make(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b)), _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(b, 8))));
}
static inline V v_load_bf16_n(const uint16_t *p, int n) {
    const __m256i h = load_u16_n(p, n);
    const __m256i a = _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(h)), 16);
    const __m256i b = _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_extracti128_si256(h, 1)), 16);
    return v_make(_mm256_castsi256_ps(a), _mm256_castsi256_ps(b));
}

static inline VI vi_make(__m256i a, __m256i b) { VI v = {a, b}; return v; }
static inline VI vi_zero(void) { return vi_make(_mm256_setzero_si256(), _mm256_setzero_si256()); }
static inline VI vi_add(VI x, VI y) { return vi_make(_mm256_add_epi32(x.a, y.a), _mm256_add_epi32(x.b, y.b)); }
static inline VI vi_shl7(VI x) { return vi_make(_mm256_slli_epi32(x.a, 7), _mm256_slli_epi32(x.b, 7)); }
static inline V vi_float(VI x) { return v_make(_mm256_cvtepi32_ps(x.a), _mm256_cvtepi32_ps(x.b)); }
static inline T t_load(const uint8_t *p) {
    T t = {_mm256_loadu_si256((const __m256i *)p), _mm256_loadu_si256((const __m256i *)(p + 32))};
    return t;
}
static inline T t_low(T t) {
    const __m256i m = _mm256_set1_epi8(0x0F);
    T r = {_mm256_and_si256(t.a, m), _mm256_and_si256(t.b, m)};
    return r;
}
static inline T t_high(T t) {
    const __m256i m = _mm256_set1_epi8(0x0F);
    T r = {_mm256_and_si256(_mm256_srli_epi16(t.a, 4), m), _mm256_and_si256(_mm256_srli_epi16(t.b, 4), m)};
    return r;
}
// 8-bit tiles: maddubs would saturate a pair of products past int16, so the tile's bytes are widened to 16 bits and
// multiplied by X itself (madd: 16-bit pairs into 32 bits). Four registers of sums, rows 4i … 4i + 3 in r[i], two
// lanes a row (inputs 0–1 and 2–3), folded to one lane a row once per block.
typedef struct { __m256i r[4]; } VQ;
static inline VQ vq_zero(void) { VQ s; for (int i = 0; i < 4; i++) s.r[i] = _mm256_setzero_si256(); return s; }
static inline VQ vq_dot(VQ acc, T q, const int8_t *hi, const int8_t *lo, const int16_t *X) {
    (void)hi, (void)lo;
    int64_t four;
    memcpy(&four, X, 8);
    const __m256i x = _mm256_set1_epi64x(four);  // X_k … X_k+3, four times
    const __m128i part[4] = {_mm256_castsi256_si128(q.a), _mm256_extracti128_si256(q.a, 1),
                             _mm256_castsi256_si128(q.b), _mm256_extracti128_si256(q.b, 1)};
    for (int i = 0; i < 4; i++)
        acc.r[i] = _mm256_add_epi32(acc.r[i], _mm256_madd_epi16(_mm256_cvtepu8_epi16(part[i]), x));
    return acc;
}
static inline VI vq_join(VQ s) {  // hadd: rows 0 1 4 5 | 2 3 6 7; the 64-bit permute puts them in order
    return vi_make(_mm256_permute4x64_epi64(_mm256_hadd_epi32(s.r[0], s.r[1]), 0xD8),
                   _mm256_permute4x64_epi64(_mm256_hadd_epi32(s.r[2], s.r[3]), 0xD8));
}
// ACT_Q8: X is the int8 activation itself, and the same widened products stay exact (maddubs would still saturate:
// two products of 255 × 127)
static inline VQ vq_dot_q8(VQ acc, T q, const int8_t *x, const int16_t *X) { return vq_dot(acc, q, x, NULL, X); }
static inline VI vq_join_q8(VQ s) { return vq_join(s); }
// 4-bit tiles: maddubs (u8 × s8, pairs summed into int16) into sums kept in 16 bits, two lanes a row (lanes 2r, 2r + 1
// of each half), widened into 32 bits once per block by vs_join
typedef struct { __m256i a, b; } VS;
static inline VS vs_zero(void) { VS s = {_mm256_setzero_si256(), _mm256_setzero_si256()}; return s; }
static inline VS vs_dot(VS acc, T t, int32_t word) {
    const __m256i x = _mm256_set1_epi32(word);
    VS s = {_mm256_add_epi16(acc.a, _mm256_maddubs_epi16(t.a, x)),
            _mm256_add_epi16(acc.b, _mm256_maddubs_epi16(t.b, x))};
    return s;
}
static inline VI vs_join(VS hi, VS lo) {
    const __m256i h = _mm256_set1_epi16(128), one = _mm256_set1_epi16(1);
    return vi_make(_mm256_add_epi32(_mm256_madd_epi16(hi.a, h), _mm256_madd_epi16(lo.a, one)),
                   _mm256_add_epi32(_mm256_madd_epi16(hi.b, h), _mm256_madd_epi16(lo.b, one)));
}
static inline VI vs_join_q8(VS s) {
    const __m256i one = _mm256_set1_epi16(1);
    return vi_make(_mm256_madd_epi16(s.a, one), _mm256_madd_epi16(s.b, one));
}

#elif defined(FP_NEON)
#define KERNEL_ISA "neon"
#define PAIR_STREAMS 1  // a row's sums take four registers
#define QUAD_ROWS 1
#define QUAD_STREAMS 1
#include <arm_neon.h>
typedef struct { float32x4_t v[4]; } V;  // lanes 4k … 4k + 3 in v[k]
typedef struct { int32x4_t v[4]; } VI;
typedef struct { uint8x16_t v[4]; } T;  // rows 4k … 4k + 3 of the tile in v[k]

#define EACH4(body) for (int k = 0; k < 4; k++) { body; }
static inline V v_zero(void) { V r; EACH4(r.v[k] = vdupq_n_f32(0.f)) return r; }
static inline V v_set1(float x) { V r; EACH4(r.v[k] = vdupq_n_f32(x)) return r; }
static inline V v_load(const float *p) { V r; EACH4(r.v[k] = vld1q_f32(p + 4 * k)) return r; }
static inline void v_store(float *p, V a) { EACH4(vst1q_f32(p + 4 * k, a.v[k])) }
static inline V v_load_n(const float *p, int n, float fill) {
    if (n >= 16) return v_load(p);
    float tmp[16];
    for (int l = 0; l < 16; l++) tmp[l] = l < n ? p[l] : fill;
    return v_load(tmp);
}
static inline void v_store_n(float *p, int n, V a) {
    if (n >= 16) { v_store(p, a); return; }
    float tmp[16];
    v_store(tmp, a);
    for (int l = 0; l < n; l++) p[l] = tmp[l];
}
#define N2(name, op) static inline V name(V a, V b) { EACH4(a.v[k] = op(a.v[k], b.v[k])) return a; }
N2(v_add, vaddq_f32)
N2(v_sub, vsubq_f32)
N2(v_mul, vmulq_f32)
N2(v_div, vdivq_f32)
N2(v_max, vmaxq_f32)
N2(v_min, vminq_f32)
#undef N2
static inline V v_fma(V a, V b, V c) { EACH4(c.v[k] = vfmaq_f32(c.v[k], a.v[k], b.v[k])) return c; }
static inline V v_fnma(V a, V b, V c) { EACH4(c.v[k] = vfmsq_f32(c.v[k], a.v[k], b.v[k])) return c; }
static inline V v_abs(V a) { EACH4(a.v[k] = vabsq_f32(a.v[k])) return a; }
static inline V v_round(V a) { EACH4(a.v[k] = vrndnq_f32(a.v[k])) return a; }  // nearest, ties to even
static inline V v_scalef(V a, V n) {  // a × 2^n for integral n in [-126, 127]
    EACH4(a.v[k] = vmulq_f32(a.v[k], vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n.v[k]),
                                                                                  vdupq_n_s32(127)), 23))))
    return a;
}
static inline float v_reduce_add(V a) {
    return vaddvq_f32(vaddq_f32(vaddq_f32(a.v[0], a.v[1]), vaddq_f32(a.v[2], a.v[3])));
}
static inline float v_reduce_max(V a) {
    return vmaxvq_f32(vmaxq_f32(vmaxq_f32(a.v[0], a.v[1]), vmaxq_f32(a.v[2], a.v[3])));
}
static inline int v_any_nan(V a) {
    uint32x4_t ordered = vdupq_n_u32(0xFFFFFFFFu);
    EACH4(ordered = vandq_u32(ordered, vceqq_f32(a.v[k], a.v[k])))
    return vminvq_u32(ordered) == 0;
}
static inline void v_store_i8(int8_t *p, V a) {  // integral values in [-128, 127]
    const int16x8_t lo = vcombine_s16(vmovn_s32(vcvtq_s32_f32(a.v[0])), vmovn_s32(vcvtq_s32_f32(a.v[1])));
    const int16x8_t hi = vcombine_s16(vmovn_s32(vcvtq_s32_f32(a.v[2])), vmovn_s32(vcvtq_s32_f32(a.v[3])));
    vst1q_s8(p, vcombine_s8(vmovn_s16(lo), vmovn_s16(hi)));
}
static inline V v_load_f16_n(const uint16_t *p, int n) {
    uint16_t tmp[16] = {0};
    memcpy(tmp, p, sizeof(uint16_t) * (n < 16 ? (n > 0 ? n : 0) : 16));
    V r;
    EACH4(r.v[k] = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(tmp + 4 * k))))
    return r;
}
static inline V v_load_u8(const uint8_t *p) {
    const uint8x16_t b = vld1q_u8(p);
    const uint16x8_t lo = vmovl_u8(vget_low_u8(b)), hi = vmovl_u8(vget_high_u8(b));
    V r;
    r.v[0] = vcvtq_f32_u32(vmovl_u16(vget_low_u16(lo))), r.v[1] = vcvtq_f32_u32(vmovl_u16(vget_high_u16(lo)));
    r.v[2] = vcvtq_f32_u32(vmovl_u16(vget_low_u16(hi))), r.v[3] = vcvtq_f32_u32(vmovl_u16(vget_high_u16(hi)));
    return r;
}
static inline V v_load_i8(const int8_t *p) {
    const int8x16_t b = vld1q_s8(p);
    const int16x8_t lo = vmovl_s8(vget_low_s8(b)), hi = vmovl_s8(vget_high_s8(b));
    V r;
    r.v[0] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo))), r.v[1] = vcvtq_f32_s32(vmovl_s16(vget_high_s16(lo)));
    r.v[2] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi))), r.v[3] = vcvtq_f32_s32(vmovl_s16(vget_high_s16(hi)));
    return r;
}
static inline V v_load_bf16_n(const uint16_t *p, int n) {
    uint16_t tmp[16] = {0};
    memcpy(tmp, p, sizeof(uint16_t) * (n < 16 ? (n > 0 ? n : 0) : 16));
    V r;
    EACH4(r.v[k] = vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(tmp + 4 * k), 16)))
    return r;
}

static inline VI vi_zero(void) { VI r; EACH4(r.v[k] = vdupq_n_s32(0)) return r; }
static inline VI vi_add(VI a, VI b) { EACH4(a.v[k] = vaddq_s32(a.v[k], b.v[k])) return a; }
static inline VI vi_shl7(VI a) { EACH4(a.v[k] = vshlq_n_s32(a.v[k], 7)) return a; }
static inline V vi_float(VI a) { V r; EACH4(r.v[k] = vcvtq_f32_s32(a.v[k])) return r; }
static inline T t_load(const uint8_t *p) { T t; EACH4(t.v[k] = vld1q_u8(p + 16 * k)) return t; }
static inline T t_low(T t) { EACH4(t.v[k] = vandq_u8(t.v[k], vdupq_n_u8(15))) return t; }
static inline T t_high(T t) { EACH4(t.v[k] = vshrq_n_u8(t.v[k], 4)) return t; }
// four rows' 4-byte dot products: bytes widened to 16 bits (each product within int16 for |x| ≤ 128), then summed
// in pairs twice
static inline VI vi_dot(VI acc, T t, int32_t word) {
    const int16x8_t x = vmovl_s8(vreinterpret_s8_s32(vdup_n_s32(word)));  // x0 … x3, x0 … x3
    EACH4(const int16x8_t lo = vmulq_s16(vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(t.v[k]))), x);
          const int16x8_t hi = vmulq_s16(vreinterpretq_s16_u16(vmovl_u8(vget_high_u8(t.v[k]))), x);
          acc.v[k] = vaddq_s32(acc.v[k], vpaddq_s32(vpaddlq_s16(lo), vpaddlq_s16(hi))))
    return acc;
}
#undef EACH4

#else
#define KERNEL_ISA "generic"
#define PAIR_STREAMS 1
#define QUAD_ROWS 1
#define QUAD_STREAMS 1
typedef struct { float f[LANES]; } V;
typedef struct { int32_t i[LANES]; } VI;
typedef struct { uint32_t w[LANES]; } T;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the generic kernels read a tile's bytes as little-endian words"
#endif

// a lane-wise loop: every lane independent, so the compiler is told to vectorize it (-fopenmp's simd); left to itself
// it made some kernels' lanes scalar code (the 8-bit one-row product ran at a tenth of its vectorized rate)
#define EACH(body) _Pragma("omp simd") for (int l = 0; l < LANES; l++) { body; }
#define ACROSS(body) for (int l = 0; l < LANES; l++) { body; }  // a loop carrying a value from lane to lane
static inline V v_zero(void) { V v; EACH(v.f[l] = 0.f) return v; }
static inline V v_set1(float x) { V v; EACH(v.f[l] = x) return v; }
static inline V v_load(const float *p) { V v; memcpy(v.f, p, sizeof v.f); return v; }
static inline void v_store(float *p, V v) { memcpy(p, v.f, sizeof v.f); }
static inline V v_load_n(const float *p, int n, float fill) { V v; EACH(v.f[l] = l < n ? p[l] : fill) return v; }
static inline void v_store_n(float *p, int n, V v) { EACH(if (l < n) p[l] = v.f[l]) }
static inline V v_add(V a, V b) { EACH(a.f[l] += b.f[l]) return a; }
static inline V v_sub(V a, V b) { EACH(a.f[l] -= b.f[l]) return a; }
static inline V v_mul(V a, V b) { EACH(a.f[l] *= b.f[l]) return a; }
static inline V v_div(V a, V b) { EACH(a.f[l] /= b.f[l]) return a; }
static inline V v_fma(V a, V b, V c) { EACH(c.f[l] = fmaf(a.f[l], b.f[l], c.f[l])) return c; }
static inline V v_fnma(V a, V b, V c) { EACH(c.f[l] = fmaf(-a.f[l], b.f[l], c.f[l])) return c; }
static inline V v_max(V a, V b) { EACH(a.f[l] = a.f[l] > b.f[l] ? a.f[l] : b.f[l]) return a; }  // b where unordered
static inline V v_min(V a, V b) { EACH(a.f[l] = a.f[l] < b.f[l] ? a.f[l] : b.f[l]) return a; }
static inline V v_abs(V a) { EACH(a.f[l] = fabsf(a.f[l])) return a; }
static inline V v_round(V a) { EACH(a.f[l] = nearbyintf(a.f[l])) return a; }  // the default mode: nearest, ties even
static inline V v_scalef(V a, V n) { EACH(a.f[l] = ldexpf(a.f[l], (int)n.f[l])) return a; }
static inline float v_reduce_add(V a) { float s = 0.f; ACROSS(s += a.f[l]) return s; }
static inline float v_reduce_max(V a) { float m = a.f[0]; ACROSS(m = a.f[l] > m ? a.f[l] : m) return m; }
static inline int v_any_nan(V a) { int any = 0; ACROSS(any |= isnan(a.f[l])) return any; }
static inline void v_store_i8(int8_t *p, V a) { EACH(p[l] = (int8_t)a.f[l]) }
static inline V v_load_f16_n(const uint16_t *p, int n) {
    V v = v_zero();
    halves_to_floats(p, v.f, n < LANES ? (n > 0 ? n : 0) : LANES);
    return v;
}
static inline V v_load_u8(const uint8_t *p) { V v; EACH(v.f[l] = (float)p[l]) return v; }
static inline V v_load_i8(const int8_t *p) { V v; EACH(v.f[l] = (float)p[l]) return v; }
static inline V v_load_bf16_n(const uint16_t *p, int n) {
    V v;
    EACH(uint32_t bits = l < n ? (uint32_t)p[l] << 16 : 0; memcpy(&v.f[l], &bits, 4))
    return v;
}

static inline VI vi_zero(void) { VI v; EACH(v.i[l] = 0) return v; }
static inline VI vi_add(VI a, VI b) { EACH(a.i[l] += b.i[l]) return a; }
static inline VI vi_shl7(VI a) { EACH(a.i[l] *= 128) return a; }
static inline V vi_float(VI a) { V v; EACH(v.f[l] = (float)a.i[l]) return v; }
// a tile as 16 words, row l's four bytes in word l (little-endian: byte j in bits 8j … 8j + 7), so that every
// operation below is one lane-wise operation over 16 words, which compilers vectorize on any SIMD unit
static inline T t_load(const uint8_t *p) { T t; memcpy(t.w, p, 64); return t; }
static inline T t_low(T t) { EACH(t.w[l] &= 0x0F0F0F0Fu) return t; }
static inline T t_high(T t) { EACH(t.w[l] = (t.w[l] >> 4) & 0x0F0F0F0Fu) return t; }
static inline VI vi_dot(VI acc, T t, int32_t word) {
    const int32_t x0 = (int8_t)word, x1 = (int8_t)(word >> 8), x2 = (int8_t)(word >> 16), x3 = (int8_t)(word >> 24);
    EACH(const uint32_t w = t.w[l];
         acc.i[l] += (int32_t)(w & 255) * x0 + (int32_t)((w >> 8) & 255) * x1 + (int32_t)((w >> 16) & 255) * x2 +
                     (int32_t)(w >> 24) * x3)
    return acc;
}
#undef EACH
#undef ACROSS
#endif

#if !defined(FP_AVX512) && !defined(FP_AVX2)
// lane i: the sum of a[i]'s lanes, 16 sums at once
static inline V v_sums(const V a[16]) {
    float sums[LANES];
    for (int i = 0; i < LANES; i++) sums[i] = v_reduce_add(a[i]);
    return v_load(sums);
}
#endif

// A block's row sums Σ q X, X = 128 hi + lo, for the quantized kernels. VS: 4-bit tiles (each lane at most 16 products
// of q ≤ 15 and a byte, |Σ| ≤ 30480: within int16), vs_dot once for hi and once for lo; vq: 8-bit tiles, both at once.
// *_join: the sums as 32-bit lanes, one a row. Integer sums are exact in any order, so every build gives the same bits.
// ACT_Q8 activations are one int8 per input (X = hi): vs_dot for hi alone, vq_dot_q8 one product per weight byte and
// *_join_q8 without the × 128. AVX2 keeps its own (above); the others sum bytes with vi_dot.
#if !defined(FP_AVX2)
typedef VI VS;
static inline VS vs_zero(void) { return vi_zero(); }
static inline VS vs_dot(VS acc, T t, int32_t word) { return vi_dot(acc, t, word); }
static inline VI vs_join(VS hi, VS lo) { return vi_add(vi_shl7(hi), lo); }
static inline VI vs_join_q8(VS s) { return s; }

typedef struct { VI hi, lo; } VQ;
static inline VQ vq_zero(void) { VQ s = {vi_zero(), vi_zero()}; return s; }
static inline VQ vq_dot(VQ acc, T q, const int8_t *hi, const int8_t *lo, const int16_t *X) {
    (void)X;
    acc.hi = vi_dot(acc.hi, q, four_bytes(hi)), acc.lo = vi_dot(acc.lo, q, four_bytes(lo));
    return acc;
}
static inline VI vq_join(VQ s) { return vi_add(vi_shl7(s.hi), s.lo); }
static inline VQ vq_dot_q8(VQ acc, T q, const int8_t *x, const int16_t *X) {
    (void)X;
    acc.hi = vi_dot(acc.hi, q, four_bytes(x));
    return acc;
}
static inline VI vq_join_q8(VQ s) { return s.hi; }
#endif
