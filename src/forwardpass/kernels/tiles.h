// Products of several rows on the tile unit (Intel AMX: Sapphire Rapids and later), the AVX-512 build's alternative
// to groups_dot_pair and groups_dot_quad where the CPU has it (gemv.c: tiles_ready) and a step has TILE_ROWS rows or
// more. One TDPBSUD multiplies a tile of up to 16 activation rows × 32 signed bytes (one block of each row) by a tile
// of 8 × 64 unsigned weight bytes, which is exactly one group's block as gemv.h stores 8-bit weights (8 tiles of 16
// rows × 4 consecutive inputs: row i of the weight tile holds inputs 4 i … 4 i + 3 of the 16 rows); a 4-bit block is
// unpacked into that form first (its tile u: low nibbles are inputs 8 u + j, high ones 8 u + 4 + j). The result is
// each row's 16 integer sums Σ q X of the block, the same integers groups_dot makes (ACT_EXACT: hi and lo summed
// apart, then 128 Σ q hi + Σ q lo), and each row's float steps are groups_dot's in its order, so every row's result
// is the same bit for bit. The vector unit is left the block scales' multiply-adds, which the tiles cannot do.
#pragma once
#if defined(FP_AVX512) && defined(__x86_64__)
#define TILES 1
// the fewest rows a product takes on the tiles, per activation mode: below, the vector unit's pairs and quads are
// faster (a block's products, their store and the vector unit's reading of it form a chain too long for few rows'
// scaling to hide)
#define TILE_ROWS(act) ((act) == ACT_Q8 ? 12 : 6)

int tiles_in_use(void);  // gemv.c: the CPU has the tiles, the kernel granted them, and kernel_tiles did not turn them off

// ldtilecfg's 64 bytes: palette 1; tiles 0, 1 the sums (rows × 16 int32), 2, 3 the activations (rows × 32 bytes), 4, 5
// the weights (8 × 64 bytes): two sets, for blocks in turn, so that one block's products run while the vector unit
// scales the one before. HALVES sum each 16 inputs apart: their tiles are half as deep (rows × 16 bytes, 4 × 64).
typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} TileConfig;

// `pieces` 1: a product's piece is a block (32 inputs); 2 (HALVES): half a block, each scaled on its own
static inline void tiles_configure(int rows, int pieces) {
    _Alignas(64) TileConfig c = {.palette = 1};
    for (int t = 0; t < 4; t++) c.rows[t] = (uint8_t)rows, c.colsb[t] = t < 2 ? 64 : BLOCK / pieces;
    c.rows[4] = c.rows[5] = 8 / pieces, c.colsb[4] = c.colsb[5] = 64;
    __asm__ volatile("ldtilecfg %0" ::"m"(c));
}

static inline void tiles_release(void) { __asm__ volatile("tilerelease" ::: "memory"); }

// the tile instructions on registers named at compile time; loads and stores are compiler barriers, since the
// compiler does not see that they read (or write) the buffers the vector code fills (or reads)
// (each through a second macro, so that a register given by name is expanded to its number first)
#define TILE_LOAD(t, p, stride) TILE_LOAD_(t, p, stride)
#define TILE_LOAD_(t, p, stride) __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #t ::"r"(p), "r"((long)(stride)) : "memory")
#define TILE_STORE(t, p, stride) TILE_STORE_(t, p, stride)
#define TILE_STORE_(t, p, stride) __asm__ volatile("tilestored %%tmm" #t ", (%0,%1,1)" ::"r"(p), "r"((long)(stride)) : "memory")
#define TILE_ZERO(t) TILE_ZERO_(t)
#define TILE_ZERO_(t) __asm__ volatile("tilezero %%tmm" #t ::)
#define TILE_DOT(c, a, b) TILE_DOT_(c, a, b)
#define TILE_DOT_(c, a, b) __asm__ volatile("tdpbsud %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::)

// Rows [0, M) of a laid out for tiles of S tile rows (S ≥ M × parts; the rest zeros), parts = 1 (ACT_Q8: hi) or 2
// (ACT_EXACT: hi and lo, each its own tile row): for each block, tile row p × S / parts + m holds row m's part p
// (32 bytes), into `x` (blocks × S × 32 bytes); each block's steps (a->step) into step (blocks × S / parts floats), and
// each piece's sums (pieces 1: a->sum; 2: a->half) into sum (blocks × pieces × S / parts floats)
static inline void tiles_pack(const Activation *a, int M, int S, int K, int act, int pieces, int8_t *x, float *step,
                              float *sum) {
    const int nb = K / BLOCK, parts = act == ACT_Q8 ? 1 : 2, per = S / parts;
    for (int b = 0; b < nb; b++)
        for (int m = 0; m < per; m++) {
            step[b * per + m] = m < M ? a[m].step[b] : 0.f;
            for (int h = 0; h < pieces; h++)
                sum[(b * pieces + h) * per + m] = m >= M ? 0.f : pieces == 2 ? a[m].half[2 * b + h] : a[m].sum[b];
            for (int p = 0; p < parts; p++) {
                int8_t *at = x + ((size_t)b * S + p * per + m) * BLOCK;
                if (m < M)
                    memcpy(at, (p ? a[m].lo : a[m].hi) + b * BLOCK, BLOCK);
                else
                    memset(at, 0, BLOCK);
            }
        }
}

// Piece j (of `pieces` a block) of a group's 8-bit tiles q (blocks × 8 × 64 bytes) against the packed activations x
// (a half block: every row's 16 bytes of its 32, 32 apart) on tile set `set`, the sums stored into `sums` (S × 16
// int32)
#define TILES_PIECE(set, q, x, j, pieces, S, sums)                                                                 \
    do {                                                                                                           \
        TILE_LOAD(set##_W, (q) + (size_t)(j) * 512 / (pieces), 64);                                                \
        TILE_LOAD(set##_X, (x) + (size_t)((j) / (pieces)) * (S) * BLOCK + (j) % (pieces) * BLOCK / (pieces), BLOCK); \
        TILE_ZERO(set##_S);                                                                                        \
        TILE_DOT(set##_S, set##_X, set##_W);                                                                       \
        TILE_STORE(set##_S, (sums), 64);                                                                           \
    } while (0)
#define EVEN_S 0
#define EVEN_X 2
#define EVEN_W 4
#define ODD_S 1
#define ODD_X 3
#define ODD_W 5

// A group of W · M rows, on tiles of S rows (configured so): q the group's weights as 8-bit tiles (blocks × 8 × 64
// bytes), ws and wm its scales and minimums (as `scales` stores them), x, step, sum the rows as tiles_pack laid them
// out; into out[16 m + i]. Piece j + 1's products are issued on the other tile set before piece j's sums are scaled.
// M a constant where it can be (a chunk of full rows): each row's accumulator then stays in a register. Each row's
// float steps are groups_dot's (HALVES: half_term's), in its order.
static inline __attribute__((always_inline)) void tiles_group(const Linear *L, int scales, int act, const uint8_t *q,
                                                              const uint8_t *ws, const uint8_t *wm, const int8_t *x,
                                                              const float *step, const float *sum, const int M,
                                                              const int S, float *out) {
    const int pieces = scales == HALVES ? 2 : 1, n = L->K / BLOCK * pieces, per = act == ACT_Q8 ? S : S / 2;
    const int form = scales == HALVES ? F32 : scales;  // HALVES: float32 scales of twice as many blocks, one a piece
    _Alignas(64) int32_t sums[2][GROUP][GROUP];  // [set][tile row][weight row]
    V acc[GROUP];
    for (int m = 0; m < M; m++) acc[m] = v_zero();
    TILES_PIECE(EVEN, q, x, 0, pieces, S, sums[0]);
    for (int j = 0; j < n; j++) {
        if (j + 1 < n) {
            if (j % 2)
                TILES_PIECE(EVEN, q, x, j + 1, pieces, S, sums[0]);
            else
                TILES_PIECE(ODD, q, x, j + 1, pieces, S, sums[1]);
        }
        const int32_t(*s)[GROUP] = sums[j % 2];
        const int b = j / pieces;
        const V scale = block_scales(ws, j, form), minimums = block_minimums(L, form, ws, wm, j);
        for (int m = 0; m < M; m++) {
            const VI hi = _mm512_load_si512(s[m]);
            const VI dot = act == ACT_Q8 ? hi : vi_add(vi_shl7(hi), _mm512_load_si512(s[per + m]));
            acc[m] = v_fma(vi_float(dot), v_mul(scale, v_set1(step[b * per + m])), acc[m]);
            acc[m] = v_fma(minimums, v_set1(sum[j * per + m]), acc[m]);
        }
    }
    for (int m = 0; m < M; m++) v_store(out + GROUP * m, acc[m]);
}

// Where chunk c's steps lie in tiles_part's layout (chunks of `chunk_bytes`), after its blocks × S bytes, and its sums
// (*sum) after the steps (blocks × S / parts floats)
static inline float *chunk_steps(uint8_t *buffer, size_t chunk_bytes, int c, int nb, int S, int parts, float **sum) {
    float *step = (float *)(buffer + chunk_bytes * c + (size_t)nb * S * BLOCK);
    *sum = step + (size_t)nb * (S / parts);
    return step;
}

// Units [lo, hi) of a quantized W · every one of the `rows` rows of a, on the tiles, 16 tile rows at a
// time (ACT_EXACT: 8 rows, each a hi and a lo tile row), fewer where there are fewer (the last chunk padded with zero
// rows: one configuration), into y (row r at y + r × ldy; accumulate: y +=), bias included: each unit read from
// memory once (4-bit weights unpacked once), for all the rows. 0 where it could not (no memory for the rows' layout).
static inline __attribute__((always_inline)) int tiles_part(const Linear *L, int kind, int scales, int act,
                                                            const Activation *a, int rows, int lo, int hi, float *y,
                                                            size_t ldy, int accumulate) {
    static _Thread_local uint8_t *buffer;  // the rows laid out for the tiles, then a unit's unpacked weights: grown
    static _Thread_local size_t capacity;
    const int nb = L->K / BLOCK, parts = act == ACT_Q8 ? 1 : 2, per = GROUP / parts;
    const int chunks = (rows + per - 1) / per, S = (chunks > 1 ? per : rows) * parts, pieces = scales == HALVES ? 2 : 1;
    const size_t chunk_bytes = ((size_t)nb * S * BLOCK + (1 + pieces) * sizeof(float) * nb * (S / parts) + 63) / 64 * 64;
    const size_t need = chunk_bytes * chunks + (size_t)nb * 512;
    if (capacity < need) {
        free(buffer);
        buffer = aligned_alloc(64, (need + 63) / 64 * 64);
        capacity = buffer ? need : 0;
        if (!buffer) return 0;  // no memory for the layout: the vector unit takes the product
    }
    uint8_t *unpacked = buffer + chunk_bytes * chunks;  // (blocks, 8, 64): a 4-bit unit as 8-bit tiles
    for (int c = 0; c < chunks; c++) {
        float *sum, *step = chunk_steps(buffer, chunk_bytes, c, nb, S, parts, &sum);
        const int M = rows - per * c < per ? rows - per * c : per;
        tiles_pack(a + per * c, M, S, L->K, act, pieces, (int8_t *)(buffer + chunk_bytes * c), step, sum);
    }
    float out[GROUP * GROUP];
    const size_t bytes = (size_t)nb * (kind == Q8 ? 512 : 256);  // a unit's weights
    tiles_configure(S, pieces);
    for (int u = lo; u < hi; u++) {
        const uint8_t *w, *ws, *wm;
        group_starts(L, scales, u, 0, 1, &w, &ws, &wm);
        if (u + 1 < hi)  // the next unit's weights asked for while this one's rows run
            for (size_t at = 0; at < bytes; at += 64) prefetch_l2(w + bytes + at);
        if (kind == Q4) {  // tile u of a block: low nibbles are inputs 8 u + j, high ones 8 u + 4 + j
            for (int t = 0; t < nb * 4; t++) {
                const T p = t_load(w + 64 * (size_t)t);
                _mm512_store_si512(unpacked + 128 * (size_t)t, t_low(p));
                _mm512_store_si512(unpacked + 128 * (size_t)t + 64, t_high(p));
            }
            w = unpacked;
        }
        for (int c = 0; c < chunks; c++) {
            const int M = rows - per * c < per ? rows - per * c : per;
            const int8_t *x = (const int8_t *)(buffer + chunk_bytes * c);
            float *sum, *step = chunk_steps(buffer, chunk_bytes, c, nb, S, parts, &sum);
            if (M == per && S == GROUP)  // a full chunk: its row count a constant
                tiles_group(L, scales, act, w, ws, wm, x, step, sum, per, GROUP, out);
            else
                tiles_group(L, scales, act, w, ws, wm, x, step, sum, M, S, out);
            for (int m = 0; m < M; m++) put(L, u * GROUP, out + GROUP * m, GROUP, y + (per * c + m) * ldy, accumulate);
        }
    }
    tiles_release();
    return 1;
}
#else
#define TILES 0
#define TILE_ROWS(act) 0
static inline int tiles_in_use(void) { return 0; }
static inline int tiles_part(const Linear *L, int kind, int scales, int act, const Activation *a, int rows, int lo,
                             int hi, float *y, size_t ldy, int accumulate) {
    (void)L, (void)kind, (void)scales, (void)act, (void)a, (void)rows, (void)lo, (void)hi, (void)y, (void)ldy,
        (void)accumulate;
    return 0;
}
#endif
