// Decode steps of a Llama-family model (RMSNorm, pre-norm, RoPE, grouped-query attention, SwiGLU) in one call, with
// the switches other families add (QK-norm, sandwich norms, GeGLU, scaled embeddings, sliding windows with their own
// RoPE tables, a family's attention scale): each row's token embedding in, its logits out, its K and V appended to
// its sequence's blocks of a paged pool, each row at its own position and reading its K and V through its block
// table (a single sequence is a pool of one). The same arithmetic as the PyTorch blocks, without ~20 framework ops
// per layer and their dispatch.
//
// Threads: one OpenMP team for the whole step, five barriers per layer (team.h's, which sleep soon when a partner
// is not running; four more from SPLIT_ROWS rows). Matrix products split their rows (or groups of rows) across it,
// each unit of weights read from memory once for all the batch's rows; attention splits each row's positions into
// parts(m) parts however many threads run (a row's parts merged by every thread, or from SPLIT_ROWS rows by the one
// that prepares it), so a step's results are the same bits for any team size, and on 1 to PARTS threads.
#define _GNU_SOURCE
#include <omp.h>

#include "gemv.h"
#include "team.h"

// Attention's parts of a row's positions, each thread taking some: PARTS on up to PARTS threads, so that the partial
// sums meet in the same order on any of those counts; one a thread past them (each thread its share of the positions)
#define PARTS 4

static int parts(const Model *m) { return m->threads > PARTS ? m->threads : PARTS; }

// Where one sequence's keys (or values) of one layer and K/V head lie: slot j's row of head_dim numbers, through its
// block table, at base + table[j / block_size] × block_stride + (j % block_size) × stride bytes, stored as `kv` says
// (abi.h: float32, binary16 or q8_0 blocks; stride is a row's bytes)
typedef struct {
    char *base;
    size_t stride, block_stride;
    const int *table;
    int block_size, shift;  // shift: log2 of a power-of-two block_size (a shift, not a division, per slot), else -1
    int kv;
} Rows;

// Bytes of one row of head_dim numbers stored as `kv`
static inline size_t kv_row_bytes(int kv, int head_dim) {
    return kv == KV_Q8_0 ? (size_t)head_dim / BLOCK * KV_BLOCK_BYTES : (size_t)head_dim * (kv == KV_F16 ? 2 : 4);
}

// How far ahead of its reads attention asks for keys and values (into L2, not L1: the stream must stay ahead of the
// whole step's reads): one sequential stream per core reads memory at about half the rate the bus gives, and a long
// context's keys and values are most of a step's bytes
#define AHEAD 48

// Slot j's place within its block
static inline int in_block(const Rows *r, int j) {
    return r->shift >= 0 ? j & (r->block_size - 1) : j % r->block_size;
}

static inline void *row_at(const Rows *r, int j) {
    const int block = r->shift >= 0 ? j >> r->shift : j / r->block_size, at = j - block * r->block_size;
    return r->base + (size_t)r->table[block] * r->block_stride + (size_t)at * r->stride;
}

// Ask for the rows of slots [j, j + n) that lie before `end` (a later slot's are not in the cache yet): one run of
// bytes where they share a block, else slot by slot
static inline void ask_ahead(const Rows *r, int j, int n, int end) {
    n = end - j < n ? end - j : n;
    if (n <= 0) return;
    if (in_block(r, j) + n <= r->block_size) {
        const char *p = row_at(r, j);
        for (size_t c = 0; c < (size_t)n * r->stride; c += 64) __builtin_prefetch(p + c, 0, 2);
        return;
    }
    for (int i = 0; i < n; i++)
        for (size_t c = 0; c < r->stride; c += 64) __builtin_prefetch((char *)row_at(r, j + i) + c, 0, 2);
}

// Slot j's row, from a cursor along a block: `next`, the row after the last one taken, while `left` rows remain in its
// block; else looked up (row_at), the cursor set after it. A scan of consecutive slots looks each block up once.
static inline const char *row_next(const Rows *r, int j, const char **next, int *left) {
    if (*left <= 0) *next = row_at(r, j), *left = r->block_size - in_block(r, j);
    const char *row = *next;
    *next += r->stride, --*left;
    return row;
}

// LANES numbers of a cached key or value row from number `at` on (a multiple of LANES), as float32. A q8_0 block's
// LANES values × its scale: each product exact in float32, the numbers kv_q8_0.dequantize reads.
static inline V kv_load(const void *row, int kv, int at) {
    if (kv == KV_Q8_0) {
        const uint8_t *block = (const uint8_t *)row + (size_t)(at / BLOCK) * KV_BLOCK_BYTES;
        uint16_t scale;
        memcpy(&scale, block, 2);
        return v_mul(v_load_i8((const int8_t *)block + 2 + at % BLOCK), v_set1(half_float(scale)));
    }
    return kv == KV_F16 ? v_load_f16_n((const uint16_t *)row + at, LANES) : v_load((const float *)row + at);
}

// A row of n numbers (a multiple of BLOCK) as q8_0 blocks (kv_q8_0.quantize, bit for bit): scale = max|x| / 127 as
// binary16, each value x / scale rounded to nearest, ties to even (a zero scale: every value 0; a NaN: the scale NaN).
// Scalar, the same in every build: a step stores only its new keys and values.
static void q8_0_encode(const float *x, uint8_t *out, int n) {
    for (int b = 0; b < n / BLOCK; b++, x += BLOCK, out += KV_BLOCK_BYTES) {
        float most = 0.f;
        for (int i = 0; i < BLOCK; i++) {
            const float a = fabsf(x[i]);
            most = a > most || a != a ? a : most;  // a NaN stays
        }
        const uint16_t half = float_half(most / 127.f);
        const float scale = half_float(half), by = scale > 0.f ? scale : 1.f;
        memcpy(out, &half, 2);
        for (int i = 0; i < BLOCK; i++) {
            const float q = nearbyintf(x[i] / by);
            out[2 + i] = (uint8_t)(int8_t)(q > 127.f ? 127.f : q < -127.f ? -127.f : q == q ? q : 0.f);
        }
    }
}

// A row of head_dim numbers as `kv` stores it, into `out` (kv_row_bytes)
static void kv_encode(int kv, const float *values, void *out, int head_dim) {
    if (kv == KV_Q8_0)
        q8_0_encode(values, out, head_dim);
    else if (kv == KV_F16)
        floats_to_halves(values, out, head_dim);
    else
        memcpy(out, values, sizeof(float) * head_dim);
}

static Rows rows_of(const Model *m, const Batch *b, void *cache, int layer, int row, int g) {
    const int KV = m->n_kv_heads, bs = b->block_size, shift = bs & (bs - 1) ? -1 : __builtin_ctz((unsigned)bs);
    const size_t bytes = kv_row_bytes(b->kv, m->head_dim);
    const size_t start = ((size_t)layer * b->slots * KV + (size_t)g * bs) * bytes;
    const Rows r = {(char *)cache + start, bytes, (size_t)KV * bs * bytes, b->tables + (size_t)row * b->max_blocks, bs,
                    shift, b->kv};
    return r;
}

static void rmsnorm(const float *x, const float *weight, int n, float eps, float *out) {
    float ss = 0.f;
    #pragma omp simd reduction(+ : ss)
    for (int i = 0; i < n; i++) ss += x[i] * x[i];
    const float inv = 1.f / sqrtf(ss / (float)n + eps);
    for (int i = 0; i < n; i++) out[i] = x[i] * inv * weight[i];
}

// rotate each (i, i + head_dim/2) pair by the position's angle i (cos, sin: head_dim/2 each): x cos + rotate_half(x) sin
static void rope(float *x, const float *cos, const float *sin, int head_dim) {
    const int half = head_dim / 2;
    for (int i = 0; i < half; i++) {
        const float a = x[i], b = x[i + half];
        x[i] = a * cos[i] - b * sin[i];
        x[i + half] = b * cos[i] + a * sin[i];
    }
}

// e^x for x ≤ 0 (softmax scores less their maximum), 16 at a time: 2^n × a degree-6 polynomial in the rest
static inline V exp_v(V x) {
    x = v_max(x, v_set1(-87.f));  // below this e^x is 0 in float32
    const V n = v_round(v_mul(x, v_set1(1.44269504f)));
    V r = v_fnma(n, v_set1(0.693359375f), x);  // x - n ln 2, in two parts for precision
    r = v_fnma(n, v_set1(-2.12194440e-4f), r);
    V p = v_set1(1.9875691500e-4f);
    p = v_fma(p, r, v_set1(1.3981999507e-3f));
    p = v_fma(p, r, v_set1(8.3334519073e-3f));
    p = v_fma(p, r, v_set1(4.1665795894e-2f));
    p = v_fma(p, r, v_set1(1.6666665459e-1f));
    p = v_fma(p, r, v_set1(5.0000001201e-1f));
    p = v_fma(v_mul(p, r), r, v_add(r, v_set1(1.f)));
    return v_scalef(p, n);
}

// Where slots [lo, hi) of a chunk's rows are read: below `past` the cache's, from `past` on this step's new ones, in
// the cache's format, slot past + i's at fresh + i × stride bytes
typedef struct {
    const Rows *rows;
    int past;
    const char *fresh;
    size_t stride;
} Slots;

// Slot j's key (or value) row, through a cursor along the cache's blocks (row_next) below `past`
static inline const void *slot_row(const Slots *s, int j, const char **next, int *left) {
    return j < s->past ? (const void *)row_next(s->rows, j, next, left) : s->fresh + (size_t)(j - s->past) * s->stride;
}

// [*from, *to): the slots some one of M rows reads, row m [lo[m], hi[m])
static inline void slots_read(const int *lo, const int *hi, const int M, int *from, int *to) {
    *from = lo[0], *to = hi[0];
    for (int m = 1; m < M; m++) *from = lo[m] < *from ? lo[m] : *from, *to = hi[m] > *to ? hi[m] : *to;
}

// out + h × head_dim = Σ_j e[h][j - lo] v_j over one row's slots [lo, hi), for n ≤ 4 heads, four vectors of head_dim
// at a time (n × 4 sums in registers)
static inline __attribute__((always_inline)) void weigh_values(const Slots *values, const int n, int head_dim,
                                                               const int lo, const int hi, float *const *e, float *out,
                                                               int stored, const int kv) {
    const int nv = head_dim / LANES;
    for (int c0 = 0; c0 < nv; c0 += 4) {
        V acc[4][4];  // [head][vector]
        for (int h = 0; h < n; h++)
            for (int c = 0; c < 4; c++) acc[h][c] = v_zero();
        const char *next = NULL;
        int left = 0;
        for (int j = lo; j < hi; j++) {
            if (c0 == 0 && (j - lo) % 4 == 0) ask_ahead(values->rows, j + AHEAD, 4, stored);
            const void *vj = slot_row(values, j, &next, &left);
            V vv[4];
            for (int c = 0; c < 4; c++) vv[c] = c0 + c < nv ? kv_load(vj, kv, LANES * (c0 + c)) : v_zero();
            for (int h = 0; h < n; h++) {
                const V w = v_set1(e[h][j - lo]);
                for (int c = 0; c < 4; c++) acc[h][c] = v_fma(w, vv[c], acc[h][c]);
            }
        }
        for (int h = 0; h < n; h++)
            for (int c = 0; c < 4 && c0 + c < nv; c++) v_store(out + h * head_dim + LANES * (c0 + c), acc[h][c]);
    }
}

// mixed[(j - from) × M n + m n + h] = e[m][h][j - lo[m]] for row m's slots [lo[m], hi[m]), 0 at the others of
// [from, to): every row's weights of slot j side by side
static inline __attribute__((always_inline)) void interleave(float *const (*e)[4], const int M, const int n,
                                                             const int *lo, const int *hi, int from, int to,
                                                             float *mixed) {
    const int K = M * n;
    memset(mixed, 0, sizeof(float) * (size_t)(to - from) * K);
    for (int m = 0; m < M; m++)
        for (int h = 0; h < n; h++)
            for (int j = lo[m]; j < hi[m]; j++) mixed[(size_t)(j - from) * K + m * n + h] = e[m][h][j - lo[m]];
}

// out[m] + h × head_dim = Σ_j mixed[(j - from) × M n + m n + h] v_j over slots [from, to) (interleave's weights), for
// M ≤ 4 rows and n ≤ 4 heads, W vectors of head_dim at a time (M n × W sums in registers): each value row read and
// widened once for every row and head. A slot outside a row's range adds 0 × v_j to its sums, which leaves them as
// they were (they start at +0), so each row's sums are those it makes alone (weigh_values), bit for bit.
static inline __attribute__((always_inline)) void weigh_mixed(const Slots *values, const int M, const int n,
                                                              int head_dim, int from, int to, const float *mixed,
                                                              float *const *out, int stored, const int kv) {
    enum { MOST = 16 };
    const int K = M * n, W = K <= 6 ? 4 : K <= 12 ? 2 : 1, nv = head_dim / LANES;
    for (int c0 = 0; c0 < nv; c0 += W) {
        V acc[MOST][4];  // [row × n + head][vector]
        for (int k = 0; k < K; k++)
            for (int c = 0; c < W; c++) acc[k][c] = v_zero();
        const char *next = NULL;
        int left = 0;
        const float *e = mixed;
        for (int j = from; j < to; j++, e += K) {
            if (c0 == 0 && (j - from) % 4 == 0) ask_ahead(values->rows, j + AHEAD, 4, stored);
            const void *vj = slot_row(values, j, &next, &left);
            V vv[4];
            for (int c = 0; c < W; c++) vv[c] = c0 + c < nv ? kv_load(vj, kv, LANES * (c0 + c)) : v_zero();
            for (int k = 0; k < K; k++) {
                const V w = v_set1(e[k]);
                for (int c = 0; c < W; c++) acc[k][c] = v_fma(w, vv[c], acc[k][c]);
            }
        }
        for (int k = 0; k < K; k++)
            for (int c = 0; c < W && c0 + c < nv; c++)
                v_store(out[k / n] + k % n * head_dim + LANES * (c0 + c), acc[k][c]);
    }
}

// M consecutive rows of one chunk (M ≤ 4), each with query heads q[m][0 … n-1] (n ≤ 4, consecutive rows of head_dim)
// of one K/V head, row m against slots [lo[m], hi[m]) (a row's causal range, or the part of it this thread takes). One
// pass over the keys and one over the values serve every row and head: rows of a chunk read nearly the same slots, so
// each key and each value is read (and widened) once for all of them. Leaves per row and head the scores' maximum,
// the sum of their exponentials and the exponential-weighted sum of values (top[m][h], total[m][h], out[m] + h ×
// head_dim), to be merged with the other threads' parts (`merge_heads`); an empty range leaves -inf, 0, 0. Each row's
// numbers are made by the same operations in the same order whatever M is, so a row's result is the same bit for bit
// alone or among its chunk. scores[m]: n × (hi[m] - lo[m]) floats; mixed: M × n × (to - from) (interleave). head_dim
// is a multiple of 16, at most 256.
static inline __attribute__((always_inline)) void attend_heads(const float *const *q, const int M, const int n,
                                                               const Slots *keys, const Slots *values, int head_dim,
                                                               float scale, const int *range_lo, const int *range_hi,
                                                               float *const *scores, float *mixed,
                                                               float *const *out, float *const *top,
                                                               float *const *total, const int kv) {
    const int nv = head_dim / LANES;
    int lo[4], hi[4], from, to;
    for (int m = 0; m < M; m++) lo[m] = range_lo[m], hi[m] = range_hi[m];
    slots_read(lo, hi, M, &from, &to);
    float *s[4][4];  // row m's head h's score of slot j at s[m][h][j - lo[m]]
    for (int m = 0; m < M; m++)
        for (int h = 0; h < n; h++) s[m][h] = scores[m] + h * (hi[m] - lo[m]);
    const int stored = to < keys->past ? to : keys->past;
    const char *next = NULL;
    int left = 0;
    for (int j = from; j < to; j += 4) {  // scores q·k × scale: four positions, every row and head
        const void *row[4];
        for (int r = 0; r < 4; r++)  // past the range: a repeat of the first
            row[r] = j + r < to ? slot_row(keys, j + r, &next, &left) : row[0];
        ask_ahead(keys->rows, j + AHEAD, 4, stored);
        float wide[M > 1 ? 4 * 256 : 1];  // several rows: the four keys widened once, for all of them
        if (M > 1)
            for (int r = 0; r < 4; r++)
                for (int c = 0; c < nv; c++) v_store(wide + r * head_dim + LANES * c, kv_load(row[r], kv, LANES * c));
        for (int m = 0; m < M; m++) {
            if (j + 4 <= lo[m] || j >= hi[m]) continue;
            V acc[16];  // [head × 4 + position]
            for (int i = 0; i < 16; i++) acc[i] = v_zero();
            for (int c = 0; c < nv; c++)
                for (int r = 0; r < 4; r++) {
                    const V key = M > 1 ? v_load(wide + r * head_dim + LANES * c) : kv_load(row[r], kv, LANES * c);
                    for (int h = 0; h < n; h++)
                        acc[4 * h + r] = v_fma(v_load(q[m] + h * head_dim + LANES * c), key, acc[4 * h + r]);
                }
            float sums[LANES];
            v_store(sums, v_mul(v_sums(acc), v_set1(scale)));
            if (j >= lo[m] && j + 4 <= hi[m])
                for (int h = 0; h < n; h++) memcpy(s[m][h] + j - lo[m], sums + 4 * h, 4 * sizeof(float));
            else
                for (int h = 0; h < n; h++)
                    for (int r = 0; r < 4; r++)
                        if (j + r >= lo[m] && j + r < hi[m]) s[m][h][j + r - lo[m]] = sums[4 * h + r];
        }
    }
    for (int m = 0; m < M; m++) {
        const int len = hi[m] - lo[m];
        for (int h = 0; h < n; h++) {  // e^(score - max)
            float *e = s[m][h];
            V most = v_set1(-INFINITY), sum = v_zero();
            for (int j = 0; j < len; j += LANES) most = v_max(most, v_load_n(e + j, len - j, -INFINITY));
            top[m][h] = v_reduce_max(most);
            for (int j = 0; j < len; j += LANES) {
                const V x = exp_v(v_sub(v_load_n(e + j, len - j, -INFINITY), v_set1(top[m][h])));
                v_store_n(e + j, len - j, x);
                sum = v_add(sum, len - j >= LANES ? x : v_load_n(e + j, len - j, 0.f));  // the range's lanes only
            }
            total[m][h] = len > 0 ? v_reduce_add(sum) : 0.f;
        }
    }
    // Σ e^score v: one row over its own slots; several rows over every slot one of them reads, each value row once
    if (M == 1) {
        weigh_values(values, n, head_dim, lo[0], hi[0], s[0], out[0], stored, kv);
        return;
    }
    interleave(s, M, n, lo, hi, from, to, mixed);
    weigh_mixed(values, M, n, head_dim, from, to, mixed, out, stored, kv);
}

// attend_heads for M ≤ 4 rows, n ≤ 4 heads and each format, each compiled on its own (its sums stay in registers)
static void attend_group(const float *const *q, int M, int n, const Slots *keys, const Slots *values, int head_dim,
                         float scale, const int *lo, const int *hi, float *const *scores, float *mixed,
                         float *const *out, float *const *top, float *const *total) {
#define ATTEND(R, N, KV) \
    attend_heads(q, R, N, keys, values, head_dim, scale, lo, hi, scores, mixed, out, top, total, KV)
#define EACH_N(R, KV)                \
    switch (n) {                     \
    case 1: ATTEND(R, 1, KV); break; \
    case 2: ATTEND(R, 2, KV); break; \
    case 3: ATTEND(R, 3, KV); break; \
    default: ATTEND(R, 4, KV);       \
    }
#define EACH_M(KV)                  \
    switch (M) {                    \
    case 1: EACH_N(1, KV); break;   \
    case 2: EACH_N(2, KV); break;   \
    case 3: EACH_N(3, KV); break;   \
    default: EACH_N(4, KV);         \
    }
    const int kv = keys->rows->kv;
    if (kv == KV_Q8_0)
        EACH_M(KV_Q8_0)
    else if (kv == KV_F16)
        EACH_M(KV_F16)
    else
        EACH_M(KV_F32)
#undef EACH_M
#undef EACH_N
#undef ATTEND
}

// softmax(q kᵀ × scale) v over every position, from its T parts (out, top, total: (T, H × head_dim), (T, H),
// (T, H)): Σ_t e^(top_t - M) out_t / Σ_t e^(top_t - M) total_t, with M the largest top_t
static void merge_heads(const float *out, const float *top, const float *total, int T, int H, int head_dim,
                        float *attn) {
    for (int i = 0; i < H; i++) {
        float M = -INFINITY, sum = 0.f;
        for (int t = 0; t < T; t++) M = top[t * H + i] > M ? top[t * H + i] : M;
        for (int e = 0; e < head_dim; e++) attn[i * head_dim + e] = 0.f;
        for (int t = 0; t < T; t++) {
            const float w = total[t * H + i] > 0.f ? expf(top[t * H + i] - M) : 0.f;
            sum += w * total[t * H + i];
            for (int e = 0; e < head_dim; e++) attn[i * head_dim + e] += w * out[((size_t)t * H + i) * head_dim + e];
        }
        for (int e = 0; e < head_dim; e++) attn[i * head_dim + e] /= sum;
    }
}

// h = silu(gate) × up, 16 at a time: gate / (1 + e^-gate)
static void swiglu(const float *gate, const float *up, int n, float *h) {
    for (int i = 0; i < n; i += LANES) {
        const V g = v_load_n(gate + i, n - i, 0.f);
        const V e = exp_v(v_min(v_sub(v_zero(), g), v_set1(88.f)));
        const V silu = v_div(g, v_add(v_set1(1.f), e));
        v_store_n(h + i, n - i, v_mul(silu, v_load_n(up + i, n - i, 0.f)));
    }
}

// h = gelu_tanh(gate) × up, 16 at a time: 0.5 g (1 + tanh u) = g / (1 + e^-2u), u = √(2/π) (g + 0.044715 g³)
static void geglu(const float *gate, const float *up, int n, float *h) {
    for (int i = 0; i < n; i += LANES) {
        const V g = v_load_n(gate + i, n - i, 0.f);
        const V u = v_mul(v_mul(g, v_set1(0.7978845608f)), v_fma(v_mul(g, g), v_set1(0.044715f), v_set1(1.f)));
        const V e = exp_v(v_min(v_mul(u, v_set1(-2.f)), v_set1(88.f)));
        v_store_n(h + i, n - i, v_mul(v_div(g, v_add(v_set1(1.f), e)), v_load_n(up + i, n - i, 0.f)));
    }
}

// x[r] += norm(branch[r]) for this thread's rows of R (a sandwich norm's add); branch is normalized in place
static void add_normed(float *x, float *branch, int R, int n, const float *weight, float eps, int t, int T) {
    for (int r = t; r < R; r += T) {
        float *b = branch + (size_t)r * n, *y = x + (size_t)r * n;
        rmsnorm(b, weight, n, eps, b);
        for (int i = 0; i < n; i++) y[i] += b[i];
    }
}

// The first index of the largest of v[0 … n-1] (n ≥ 1), a NaN counting as the largest, as torch.argmax has it
static int argmax(const float *v, int n) {
    V top = v_set1(-INFINITY);
    for (int i = 0; i < n; i += LANES) {
        const V x = v_load_n(v + i, n - i, -INFINITY);
        if (v_any_nan(x))  // a NaN: the first one is the answer
            for (int j = i;; j++)
                if (isnan(v[j])) return j;
        top = v_max(top, x);
    }
    const float best = v_reduce_max(top);
    for (int i = 0;; i++)
        if (v[i] == best) return i;
}

// this thread's share of y = W x for `rows` rows (y: rows × L->N; accumulate: y += W x), quantized as m says
static void gemv_share(const Model *m, const Linear *L, const Activation *a, int rows, float *y, int accumulate) {
    gemv_part(L, a, m->activations, rows, omp_get_thread_num(), omp_get_num_threads(), y, L->N, accumulate);
}

// A branch's output projection written into the stream: x += W a, or with a sandwich norm x += norm(W a), the
// product first into `branch` (a barrier between, as the norm reads whole rows)
static void branch_into(const Model *m, const Linear *W, const Activation *a, int R, float *x, float *branch,
                        const float *post_norm, TeamBarrier *bar, int t, int T) {
    if (!post_norm) {
        gemv_share(m, W, a, R, x, 1);
        return;
    }
    gemv_share(m, W, a, R, branch, 0);
    team_barrier(bar, T);
    add_normed(x, branch, R, m->d_model, post_norm, m->norm_eps, t, T);
}

// Where a step's buffers lie in its workspace: pieces cut one after another, each 64-byte aligned; with no
// workspace (base NULL) only the floats they need are counted.
typedef struct {
    float *base;
    size_t used;
} Cut;

static void *cut(Cut *c, size_t floats) {
    float *at = c->base ? c->base + c->used : NULL;
    c->used += (floats + 15) / 16 * 16;
    return at;
}

static int widest_row(const Model *m) {
    const int d = m->d_model, F = m->hidden, attn = m->n_heads * m->head_dim;
    return F > attn ? (F > d ? F : d) : (attn > d ? attn : d);
}

// the buffers every thread shares, then thread t's own: the same cuts for sizing and for use; R rows of each
typedef struct {
    float *x, *qkv, *gate_up, *part_out, *part_top, *part_total, *best_logit, *branch;
    int *best;
    float *xn, *attn, *act;  // as Own's, for steps whose threads prepare their rows between them (SPLIT_ROWS)
} Shared;

typedef struct {
    float *xn, *rotated, *scores, *mixed, *attn, *act, *own;  // own: each row's new K and V heads as the cache holds them
} Own;

static Shared cut_shared(Cut *c, const Model *m) {
    const size_t H = m->n_heads, T = m->threads, P = parts(m), hd = m->head_dim, R = m->rows;
    Shared s = {cut(c, R * m->d_model), cut(c, R * (H + 2 * m->n_kv_heads) * hd), cut(c, R * 2 * m->hidden),
                cut(c, R * P * H * hd), cut(c, R * P * H), cut(c, R * P * H), cut(c, R * T),
                cut(c, R * m->d_model),
                cut(c, R * T), cut(c, R * widest_row(m)), cut(c, R * H * hd),
                cut(c, R * activation_floats(widest_row(m)))};
    return s;
}

static Own cut_own(Cut *c, const Model *m) {
    const size_t H = m->n_heads, hd = m->head_dim, R = m->rows, tile = R < 4 ? R : 4;  // tile: rows attending at once
    Own o = {cut(c, R * widest_row(m)), cut(c, R * (H + m->n_kv_heads) * hd), cut(c, tile * 4 * (size_t)m->capacity),
             cut(c, tile > 1 ? tile * 4 * (size_t)m->capacity : 0), cut(c, R * H * hd),
             cut(c, R * activation_floats(widest_row(m))), cut(c, R * 2 * m->n_kv_heads * hd)};
    return o;
}

// floats of workspace a step needs for m's shapes, m->capacity cache slots, m->threads threads and m->rows rows
size_t decode_workspace(const Model *m) {
    Cut c = {NULL, 0};
    cut_shared(&c, m);
    for (int t = 0; t < m->threads; t++) cut_own(&c, m);
    return c.used;
}

// The calling thread's steps so far: their teams' CPU time and the time offered them (TeamUsage), as out[0], out[1].
static _Thread_local TeamUsage usage;
void decode_usage(double *out) { out[0] = usage.cpu, out[1] = usage.offered; }

// Rows from which a step's threads prepare each product's input rows between them (each its share, then a barrier)
// rather than each thread all of them: a barrier costs about as much as preparing a dozen rows twice
#define SPLIT_ROWS 16

// rows first, first + stride, … of R rows of `x` (row stride n) normalized and quantized for `kind` into a[r] as
// `activations` says (Model.activations), through `out` (R × n); every a[r] pointed at its row (float weights read the
// row itself)
static void prepare(const float *x, int R, int n, const float *weight, float eps, int kind, int activations,
                    float *out, Activation *a, int first, int stride) {
    for (int r = 0; r < R; r++) {
        const float *row = weight ? out + (size_t)r * n : x + (size_t)r * n;
        a[r].x = row;
        if (r % stride != first) continue;
        if (weight) rmsnorm(x + (size_t)r * n, weight, n, eps, out + (size_t)r * n);
        quantize_row(row, n, kind, activations, a + r);
    }
}

// Whether row r's logits are made (Batch.emit)
static inline int emits(const Batch *b, int r) { return !b->emit || b->emit[r]; }

static int emitted(const Batch *b) {
    int E = 0;
    for (int r = 0; r < b->rows; r++) E += emits(b, r);
    return E;
}

// What one thread of a step's team works with, the same in every phase: the shared buffers, its own (cut after
// threads 0 … t-1's), and its products' input rows a[0 … R-1]. Each thread prepares its own copy of a matrix
// product's inputs (norms, quantizing rows: a few microseconds), which saves a barrier per product; from SPLIT_ROWS
// rows, each prepares its share of them (rows first, first + stride, …) in shared buffers, then a barrier.
typedef struct {
    const Model *m;
    const Batch *b;
    const Shared *s;
    Own o;
    Activation *a;
    TeamBarrier *bar;
    int t, T, P;               // thread t of the team's T; P: attention's parts
    int split, first, stride;  // split: from SPLIT_ROWS rows; the rows t prepares
    float *xn, *attn;          // the prepared rows: the shared buffers' when split, else its own
    size_t row_bytes;          // one K or V head's row as the cache stores it (kv_row_bytes)
} Worker;

// Thread t of T's Worker, its own buffers cut from `mine` (where the shared ones end), a[r] pointed into them
static Worker worker_of(const Model *m, const Batch *b, const Shared *s, Cut mine, Activation *a, TeamBarrier *bar,
                        int t, int T, int P) {
    for (int i = 0; i < t; i++) cut_own(&mine, m);
    const Own o = cut_own(&mine, m);
    const int R = b->rows, split = R >= SPLIT_ROWS, widest = widest_row(m);
    const Worker w = {.m = m, .b = b, .s = s, .o = o, .a = a, .bar = bar, .t = t, .T = T, .P = P, .split = split,
                      .first = split ? t : 0, .stride = split ? T : 1, .xn = split ? s->xn : o.xn,
                      .attn = split ? s->attn : o.attn, .row_bytes = kv_row_bytes(b->kv, m->head_dim)};
    for (int r = 0; r < R; r++)
        a[r] = activation_in((split ? s->act : o.act) + (size_t)r * activation_floats(widest), widest);
    return w;
}

// Each row's token embedding (× the family's embedding scale) into x (R × d_model)
static void embed_rows(const Model *m, const Batch *b, float *x) {
    const int d = m->d_model;
    for (int r = 0; r < b->rows; r++) {
        float *row = x + (size_t)r * d;
        linear_row(&m->embeddings, b->tokens[r], row);
        if (m->embed_scale != 1.f)
            for (int i = 0; i < d; i++) row[i] *= m->embed_scale;
    }
}

// Every row's queries and new keys (qkv: R × (H + 2 KV) × head_dim) QK-normed where the family has it and rotated
// to the row's position, into the thread's `rotated` (R × (H + KV) × head_dim); in a binary16 or q8_0 pool each
// row's new pair also as the cache will hold it, into its `own` (R × 2 KV rows: KV keys, then KV values). Every
// thread rotates them all itself (cheaper than a barrier).
static void rotate_rows(const Worker *w, const Layer *L) {
    const Model *m = w->m;
    const Batch *b = w->b;
    const int hd = m->head_dim, H = m->n_heads, KV = m->n_kv_heads, QKV = (H + 2 * KV) * hd;
    for (int r = 0; r < b->rows; r++) {
        const size_t at = (size_t)b->positions[r] * (hd / 2);
        const float *cos = (L->local_rope ? m->cos_local : m->cos) + at;
        const float *sin = (L->local_rope ? m->sin_local : m->sin) + at;
        const float *q = w->s->qkv + (size_t)r * QKV;
        float *rot = w->o.rotated + (size_t)r * (H + KV) * hd;
        for (int i = 0; i < H + KV; i++) {
            if (L->q_norm)
                rmsnorm(q + i * hd, i < H ? L->q_norm : L->k_norm, hd, m->norm_eps, rot + i * hd);
            else
                memcpy(rot + i * hd, q + i * hd, sizeof(float) * hd);
            rope(rot + i * hd, cos, sin, hd);
        }
        uint8_t *mine = (uint8_t *)w->o.own + (size_t)r * 2 * KV * w->row_bytes;
        if (b->kv != KV_F32)  // the row's own pair as the cache will hold it
            for (int g = 0; g < KV; g++) {
                kv_encode(b->kv, rot + (H + g) * hd, mine + g * w->row_bytes, hd);
                kv_encode(b->kv, q + (H + KV + g) * hd, mine + (KV + g) * w->row_bytes, hd);
            }
    }
}

// Layer l's attention of rows r … r + M - 1 (one chunk's, or one row), the thread's parts c = t, t + T, … of P of
// each row's slots: each part's sums into part_out, part_top and part_total ((R, P, H) × head_dim, (R, P, H),
// (R, P, H)), for merge_heads. Each K/V head's share is read once for up to four query heads of its group and all
// M rows.
static void attend_chunk(const Worker *w, const Layer *L, int l, int r, int M) {
    const Model *m = w->m;
    const Batch *b = w->b;
    const int hd = m->head_dim, H = m->n_heads, KV = m->n_kv_heads, group = H / KV, QKV = (H + 2 * KV) * hd, P = w->P;
    const size_t row_bytes = w->row_bytes;
    const Shared *s = w->s;
    // their slots: the pool's below `past`, then this step's new pairs, of the chunk's first row (r0) on
    const int r0 = r - (b->chunk ? b->chunk[r] : 0), past = b->lengths[r0];
    int first[4], span[4];
    for (int e = 0; e < M; e++) {
        const int len = b->lengths[r + e] + 1;
        first[e] = L->window > 0 && len > L->window ? len - L->window : 0, span[e] = len - first[e];
    }
    const uint8_t *news = (const uint8_t *)w->o.own + (size_t)r0 * 2 * KV * row_bytes;  // r0's pairs, r0 + 1's, …
    const int f32 = b->kv == KV_F32;
    const size_t k_stride = f32 ? sizeof(float) * (H + KV) * hd : 2 * KV * row_bytes;
    const size_t v_stride = f32 ? sizeof(float) * QKV : 2 * KV * row_bytes;
    for (int c = w->t; c < P; c += w->T) {
        int lo[4], hi[4];
        for (int e = 0; e < M; e++) lo[e] = first[e] + span[e] * c / P, hi[e] = first[e] + span[e] * (c + 1) / P;
        for (int i = 0, n; i < H; i += n) {  // up to four query heads of one group at a time
            const int g = i / group;
            n = (g + 1) * group - i < 4 ? (g + 1) * group - i : 4;
            const Rows k = rows_of(m, b, b->k, l, r, g), v = rows_of(m, b, b->v, l, r, g);
            const Slots keys = {&k, past,
                                f32 ? (const char *)(w->o.rotated + ((size_t)r0 * (H + KV) + H + g) * hd)
                                    : (const char *)news + g * row_bytes, k_stride};
            const Slots values = {&v, past,
                                  f32 ? (const char *)(s->qkv + (size_t)r0 * QKV + (H + KV + g) * hd)
                                      : (const char *)news + (KV + g) * row_bytes, v_stride};
            const float *q[4];
            float *sc[4], *out[4], *top[4], *total[4];
            for (int e = 0; e < M; e++) {
                const size_t part = ((size_t)(r + e) * P + c) * H + i;
                q[e] = w->o.rotated + (size_t)(r + e) * (H + KV) * hd + i * hd;
                sc[e] = w->o.scores + (size_t)e * 4 * m->capacity;
                out[e] = s->part_out + part * hd, top[e] = s->part_top + part, total[e] = s->part_total + part;
            }
            attend_group(q, M, n, &keys, &values, hd, m->attn_scale, lo, hi, sc, w->o.mixed, out, top, total);
        }
    }
}

// attend_chunk over every row, a chunk's consecutive rows (up to four) together
static void attend_rows(const Worker *w, const Layer *L, int l) {
    const Batch *b = w->b;
    for (int r = 0, M; r < b->rows; r += M) {  // rows r … r + M - 1: one chunk's (or one row)
        for (M = 1; M < 4 && r + M < b->rows && b->chunk && b->chunk[r + M] == b->chunk[r] + M; M++) {}
        attend_chunk(w, L, l, r, M);
    }
}

// Every row's new K and V of layer l into its slot of the pool (b->lengths[r]), as the pool stores them
static void store_new_pairs(const Worker *w, int l) {
    const Model *m = w->m;
    const Batch *b = w->b;
    const int hd = m->head_dim, H = m->n_heads, KV = m->n_kv_heads, QKV = (H + 2 * KV) * hd;
    for (int r = 0; r < b->rows; r++)
        for (int g = 0; g < KV; g++) {
            const Rows k = rows_of(m, b, b->k, l, r, g), v = rows_of(m, b, b->v, l, r, g);
            const float *q = w->s->qkv + (size_t)r * QKV;
            kv_encode(b->kv, w->o.rotated + ((size_t)r * (H + KV) + H + g) * hd, row_at(&k, b->lengths[r]), hd);
            kv_encode(b->kv, q + (H + KV + g) * hd, row_at(&v, b->lengths[r]), hd);
        }
}

// Layer l's attention, the thread's share: x += out(attend(rope(q), cache + rope(k), cache + v)) over norm(x)
static void attention_block(const Worker *w, const Layer *L, int l) {
    const Model *m = w->m;
    const Shared *s = w->s;
    const int R = w->b->rows, d = m->d_model, H = m->n_heads, hd = m->head_dim, P = w->P, T = w->T;
    prepare(s->x, R, d, L->attn_norm, m->norm_eps, L->qkv.kind, m->activations, w->xn, w->a, w->first, w->stride);
    if (w->split) team_barrier(w->bar, T);
    gemv_share(m, &L->qkv, w->a, R, s->qkv, 0);
    team_barrier(w->bar, T);
    // Attention splits each row's slots into P parts, thread t taking parts t, t + T, …: each reads its share of
    // every K/V head once, for all the group's query heads and up to four rows of a chunk, after rotating every
    // query and new key itself.
    rotate_rows(w, L);
    attend_rows(w, L, l);
    team_barrier(w->bar, T);
    if (w->t == 0) store_new_pairs(w, l);  // after every thread has read the caches' earlier slots
    for (int r = w->first; r < R; r += w->stride)
        merge_heads(s->part_out + (size_t)r * P * H * hd, s->part_top + (size_t)r * P * H,
                    s->part_total + (size_t)r * P * H, P, H, hd, w->attn + (size_t)r * H * hd);
    prepare(w->attn, R, H * hd, NULL, 0.f, L->out.kind, m->activations, NULL, w->a, w->first, w->stride);
    if (w->split) team_barrier(w->bar, T);
    branch_into(m, &L->out, w->a, R, s->x, s->branch, L->attn_post_norm, w->bar, w->t, T);
    team_barrier(w->bar, T);
}

// The layer's feed-forward, the thread's share: x += down(act(gate) × up) over norm(x)
static void feed_forward_block(const Worker *w, const Layer *L) {
    const Model *m = w->m;
    const Shared *s = w->s;
    const int R = w->b->rows, d = m->d_model, F = m->hidden, T = w->T;
    prepare(s->x, R, d, L->ffn_norm, m->norm_eps, L->gate_up.kind, m->activations, w->xn, w->a, w->first, w->stride);
    if (w->split) team_barrier(w->bar, T);
    gemv_share(m, &L->gate_up, w->a, R, s->gate_up, 0);
    team_barrier(w->bar, T);
    for (int r = w->first; r < R; r += w->stride)
        (m->gelu ? geglu : swiglu)(s->gate_up + (size_t)r * 2 * F, s->gate_up + (size_t)r * 2 * F + F, F,
                                   w->xn + (size_t)r * F);
    prepare(w->xn, R, F, NULL, 0.f, L->down.kind, m->activations, NULL, w->a, w->first, w->stride);
    if (w->split) team_barrier(w->bar, T);
    branch_into(m, &L->down, w->a, R, s->x, s->branch, L->ffn_post_norm, w->bar, w->t, T);
    team_barrier(w->bar, T);
}

// The E emitted rows' final norm and logits (E × vocab_size), the thread's share of them, and its argmax over its
// share of each row: best[r × T + t], -1 where its share is empty
static void unembed_rows(const Worker *w, int E, float *logits) {
    const Model *m = w->m;
    const int R = w->b->rows, d = m->d_model, V = m->vocab_size, t = w->t, T = w->T;
    for (int r = 0, e = 0; r < R; r++)  // final norm, then unembedding, of the emitted rows
        if (emits(w->b, r)) {
            w->a[e].x = w->xn + (size_t)e * d;
            if (e % w->stride == w->first)
                prepare(w->s->x + (size_t)r * d, 1, d, m->norm_f, m->norm_eps, m->lm_head.kind, m->activations,
                        w->xn + (size_t)e * d, w->a + e, 0, 1);
            e++;
        }
    if (w->split) team_barrier(w->bar, T);
    gemv_share(m, &m->lm_head, w->a, E, logits, 0);
    int lo, hi;  // this thread's rows of logits: its units', less the padding past vocab_size
    part_units(&m->lm_head, t, T, &lo, &hi);
    lo *= unit_rows(&m->lm_head), hi *= unit_rows(&m->lm_head);
    hi = hi < V ? hi : V;
    for (int r = 0; r < E; r++)
        w->s->best[r * T + t] = hi > lo ? lo + argmax(logits + (size_t)r * V + lo, hi - lo) : -1;
}

// Each emitted row's argmax into greedy: the argmax of the teams' shares' argmaxes (best, E × teams), in order, the
// first largest or first NaN
static void pick_greedy(const Shared *s, const float *logits, int E, int V, int teams, int *greedy) {
    for (int r = 0; r < E; r++) {
        int shares = 0, *mine = s->best + r * teams;
        float *values = s->best_logit + r * teams;
        for (int t = 0; t < teams; t++)
            if (mine[t] >= 0) mine[shares] = mine[t], values[shares++] = logits[(size_t)r * V + mine[t]];
        greedy[r] = mine[argmax(values, shares)];
    }
}

// The rows' step: the emitted rows' logits (E × vocab_size, in row order) and each one's argmax in greedy. Checked by
// the callers. One OpenMP parallel region spans every layer (one team per step, team.h's barriers between phases),
// each thread calling the phase functions with its Worker.
static void step_rows(const Model *m, const Batch *b, float *logits, int *greedy) {
    const int R = b->rows, E = emitted(b);
    Cut shared = {m->work, 0};
    const Shared s = cut_shared(&shared, m);
    embed_rows(m, b, s.x);
    const int P = parts(m), team = m->team > 0 && m->team < m->threads ? m->team : m->threads;  // P: attention's parts
    TeamBarrier bar = {0, 0, 0};
    int teams = 1;
    double cpu = 0.;
    const double start = seconds(CLOCK_MONOTONIC);
    #pragma omp parallel num_threads(team) reduction(+ : cpu)
    {
        const int t = omp_get_thread_num(), T = omp_get_num_threads();
        cpu -= seconds(CLOCK_THREAD_CPUTIME_ID);
        Activation a[R];
        const Worker w = worker_of(m, b, &s, shared, a, &bar, t, T, P);
        for (int l = 0; l < m->n_layers; l++) {
            attention_block(&w, m->layers + l, l);
            feed_forward_block(&w, m->layers + l);
        }
        unembed_rows(&w, E, logits);
        if (t == 0) teams = T;
        cpu += seconds(CLOCK_THREAD_CPUTIME_ID);
    }
    usage.cpu += cpu;
    usage.offered += teams * (seconds(CLOCK_MONOTONIC) - start);
    pick_greedy(&s, logits, E, m->vocab_size, teams, greedy);
}

// Whether row r continues row r - 1's sequence as Batch.chunk says: one position on, over the same block table
static int chunk_follows(const Batch *b, int r) {
    const int back = b->chunk[r];
    if (back == 0) return 1;
    const int *table = b->tables + (size_t)r * b->max_blocks;
    return r > 0 && back == b->chunk[r - 1] + 1 && b->lengths[r - 1] == b->lengths[r] - 1 &&
           b->positions[r - 1] == b->positions[r] - 1 &&
           !memcmp(table - b->max_blocks, table, sizeof(int) * (size_t)b->max_blocks);
}

// Whether the next `steps` steps of b's rows stay inside the model's tables, the workspace and the pool (several
// steps: every row emitted, none a chunk's), in a mode of activations the products know
static int batch_fits(const Model *m, const Batch *b, int steps) {
    if (b->rows < 1 || b->rows > m->rows || m->threads < 1 || !m->work || !b->tables || b->block_size < 1 ||
        m->head_dim > 256 || m->head_dim % LANES ||
        b->max_blocks < 1 || b->slots < b->block_size || steps < 1 ||
        (steps > 1 && (b->chunk || emitted(b) < b->rows)) ||
        (b->kv != KV_F32 && b->kv != KV_F16 && (b->kv != KV_Q8_0 || m->head_dim % BLOCK)) ||
        (m->activations != ACT_EXACT && m->activations != ACT_Q8))
        return 0;
    for (int r = 0; r < b->rows; r++) {
        if (b->chunk && !chunk_follows(b, r)) return 0;
        const int last = b->lengths[r] + steps - 1;  // the slot of the last step's new pair
        if (b->tokens[r] < 0 || b->tokens[r] >= m->vocab_size || b->positions[r] < 0 || b->lengths[r] < 0 ||
            b->positions[r] > m->context_length - steps || last >= m->capacity || last >= b->max_blocks * b->block_size)
            return 0;
        for (int j = 0; j <= last / b->block_size; j++) {
            const int block = b->tables[(size_t)r * b->max_blocks + j];
            if (block < 0 || (size_t)(block + 1) * b->block_size > (size_t)b->slots) return 0;
        }
    }
    return 1;
}

// Decoding b->rows sequences over a paged pool (Batch), n steps in one call (no Python between them): each step's
// logits (E × vocab_size: the emitted rows', in row order) and each emitted row's argmax; with n > 1 (every row
// emitted, no chunks) each row's argmax is fed back as its next token, until n steps are done or a row chooses one of
// stop[0 … n_stop-1] (chosen, not fed back; every row stops with it). tokens (n, E) gets each step's chosen ids,
// `logits` the last step's. m->capacity must exceed every row's last
// length (it sizes the attention scores) and m->rows be at least b->rows. Returns the steps done (1 … n; every fed
// token's K and V went to its row's slot), or -1 (touching nothing) if any of the n steps would fall outside the
// model's tables, the workspace or the pool, or m->activations names no mode: checked before the first.
int decode_batch(const Model *m, const Batch *b, int n, const int *stop, int n_stop, float *logits, int *tokens) {
    if (n_stop < 0 || !batch_fits(m, b, n)) return -1;
    const int R = b->rows, E = emitted(b);
    int token[R], position[R], length[R];
    for (int r = 0; r < R; r++) token[r] = b->tokens[r], position[r] = b->positions[r], length[r] = b->lengths[r];
    Batch now = *b;
    now.tokens = token, now.positions = position, now.lengths = length;
    for (int i = 0; i < n; i++) {
        int *chosen = tokens + (size_t)i * E, stopped = 0;
        step_rows(m, &now, logits, chosen);
        for (int r = 0; r < E; r++) {  // n > 1: E = R
            for (int s = 0; s < n_stop; s++) stopped |= chosen[r] == stop[s];
            token[r] = chosen[r], position[r]++, length[r]++;
        }
        if (stopped) return i + 1;
    }
    return n;
}
