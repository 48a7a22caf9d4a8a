// Runs the kernels of one build on fixed pseudo-random inputs and prints every result as its bits, one line per
// value: "exact <tag> <hex>" where every build must agree bit for bit (the integer kernels), "close <tag> <hex>"
// where only the order of a sum may differ. tests/test_kernel_builds.py compiles it once per build (for a CPU the
// machine can only emulate, too) and compares the outputs.
#define _GNU_SOURCE  // before any header: team.h needs clock_gettime and syscall declared
#include "abi.c"
#include "decode_step.c"
#include "dequantize.c"
#include "gemv.c"

#include <stdio.h>

static uint32_t state = 2463534242u;
static uint32_t next(void) { state ^= state << 13, state ^= state >> 17, state ^= state << 5; return state; }
static float uniform(float lo, float hi) { return lo + (hi - lo) * (float)(next() >> 8) / 16777216.f; }

static void print(const char *how, const char *tag, const float *v, int n) {
    for (int i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, v + i, 4);
        printf("%s %s %08x\n", how, tag, bits);
    }
}

// gemv's y for both modes of activations, printed as "<tag>" (ACT_EXACT) and "<tag>-q8-activations"
static void products(const char *tag, const float *x, int M, int kind, int K, const void *w, const void *scale,
                     const void *minimum, int scales, int zero, int N, float *y) {
    for (int act = ACT_EXACT; act <= ACT_Q8; act++) {
        char name[64];
        snprintf(name, sizeof name, "%s%s", tag, act == ACT_Q8 ? "-q8-activations" : "");
        gemv(x, M, kind, K, w, scale, minimum, scales, zero, N, y, act);
        print("exact", name, y, M * N);
    }
}

// One row's three query heads against slots [0, 21) of one K/V head: 20 in the cache, then the row's own new pair
static void attend_one(const float *q, const Rows *k, const Rows *v, const void *k_new, const void *v_new,
                       float *scores, float *out, float *top, float *total) {
    const Slots keys = {k, 20, k_new, 0}, values = {v, 20, v_new, 0};
    const float *qs[1] = {q};
    float *sc[1] = {scores}, *outs[1] = {out}, *tops[1] = {top}, *totals[1] = {total};
    const int lo[1] = {0}, hi[1] = {21};
    attend_group(qs, 1, 3, &keys, &values, 64, 0.125f, lo, hi, sc, NULL, outs, tops, totals);  // one row: no mixed weights
}

int main(void) {
    enum { M = 5, K = 192, N = 70, KF = 200, GROUPS = (N + 15) / 16 };
    static float x[M * KF], y[M * N], scale[GROUPS * (K / 32) * 16], minimum[GROUPS * (K / 32) * 16], wf[N * KF];
    static uint8_t tiles[GROUPS * (K / 32) * 512];
    static uint16_t wh[N * KF];
    for (int i = 0; i < M * KF; i++) x[i] = uniform(-3.f, 3.f);
    for (size_t i = 0; i < sizeof tiles; i++) tiles[i] = (uint8_t)next();
    for (size_t i = 0; i < sizeof scale / 4; i++) scale[i] = uniform(0.001f, 0.02f), minimum[i] = uniform(-0.2f, 0.f);
    const int kinds[2] = {Q8, Q4};
    for (int i = 0; i < 2; i++) {  // five rows: two pairs and one alone (ACT_Q8: four at once, then one)
        products(kinds[i] == Q8 ? "q8" : "q4", x, M, kinds[i], K, tiles, scale, minimum, F32, 0, N, y);
    }
    {  // scales and minimums stored as float16 (positive scales, negative minimums, 2^-10 … 2^-1)
        static uint16_t half_scale[sizeof scale / 4], half_minimum[sizeof scale / 4];
        for (size_t i = 0; i < sizeof scale / 4; i++) {
            half_scale[i] = (uint16_t)(((5 + next() % 10) << 10) | (next() & 1023u));
            half_minimum[i] = (uint16_t)(0x8000u | ((5 + next() % 10) << 10) | (next() & 1023u));
        }
        for (int i = 0; i < 2; i++) {
            products(kinds[i] == Q8 ? "q8-half-scales" : "q4-half-scales", x, M, kinds[i], K, tiles, half_scale,
                     half_minimum, F16, 0, N, y);
            dequantize(kinds[i] == Q8 ? 8 : 4, N, K, tiles, half_scale, half_minimum, F16, 0, wf);
            print("exact", kinds[i] == Q8 ? "dequantize-q8-half-scales" : "dequantize-q4-half-scales", wf, N * K);
        }
    }
    {  // no minimums (a symmetric grid, as Q4_0 and Q8_0 store): each is -zero × its float16 scale
        static uint16_t half_scale[sizeof scale / 4];
        for (size_t i = 0; i < sizeof scale / 4; i++)
            half_scale[i] = (uint16_t)((next() & 0x8000u) | ((5 + next() % 10) << 10) | (next() & 1023u));
        for (int i = 0; i < 2; i++) {
            const int zero = kinds[i] == Q8 ? 128 : 8;
            products(kinds[i] == Q8 ? "q8-zero" : "q4-zero", x, M, kinds[i], K, tiles, half_scale, NULL, F16, zero, N,
                     y);
            dequantize(kinds[i] == Q8 ? 8 : 4, N, K, tiles, half_scale, NULL, F16, zero, wf);
            print("exact", kinds[i] == Q8 ? "dequantize-q8-zero" : "dequantize-q4-zero", wf, N * K);
        }
    }
    {  // K-quant scales (FACTORS): per group and 256-block, 8 × 16 factors, then 16 fp16 scales; K two such blocks
        enum { KK = 512, NB = KK / 32 };
        static float xk[M * KK], yk[M * N], wk[N * KK];
        static uint8_t qk[GROUPS * NB * 512], fs[GROUPS * NB / 8 * OCTET], fm[GROUPS * NB / 8 * OCTET];
        for (int i = 0; i < M * KK; i++) xk[i] = uniform(-3.f, 3.f);
        for (size_t i = 0; i < sizeof qk; i++) qk[i] = (uint8_t)next();
        for (size_t o = 0; o < sizeof fs / OCTET; o++)
            for (int i = 0; i < OCTET; i++) {
                const int factor = i < 8 * GROUP;  // 6-bit factors; positive fp16 scales, negative ones for minimums
                fs[o * OCTET + i] = (uint8_t)(factor ? next() % 64 : i % 2 ? 0x20 + next() % 8 : next());
                fm[o * OCTET + i] = (uint8_t)(factor ? next() % 64 : i % 2 ? 0xa0 + next() % 8 : next());
            }
        for (int i = 0; i < 2; i++) {
            products(kinds[i] == Q8 ? "q8-factors" : "q4-factors", xk, M, kinds[i], KK, qk, fs, fm, FACTORS, 0, N, yk);
            dequantize(kinds[i] == Q8 ? 8 : 4, N, KK, qk, fs, fm, FACTORS, 0, wk);
            print("exact", kinds[i] == Q8 ? "dequantize-q8-factors" : "dequantize-q4-factors", wk, N * KK);
        }
    }
    {  // scales per 16 inputs (HALVES, Q6_K's), 8-bit tiles: with minimums, and without (each -32 × its scale)
        static float hs[GROUPS * (K / 32) * 2 * 16], hm[sizeof hs / 4];
        for (size_t i = 0; i < sizeof hs / 4; i++) hs[i] = uniform(-0.02f, 0.02f), hm[i] = uniform(-0.2f, 0.f);
        products("q8-halves", x, M, Q8, K, tiles, hs, hm, HALVES, 0, N, y);
        products("q8-halves-zero", x, M, Q8, K, tiles, hs, NULL, HALVES, 32, N, y);
        dequantize(8, N, K, tiles, hs, hm, HALVES, 0, wf);
        print("exact", "dequantize-q8-halves", wf, N * K);
    }
    {  // the largest integer sums a block can make: every weight byte 255, activations all ± their block's maximum
        static uint8_t full[sizeof tiles];
        static float same[3 * K];
        memset(full, 255, sizeof full);
        for (int k = 0; k < 3 * K; k++) same[k] = k < K ? 2.5f : k < 2 * K ? -2.5f : (k % 2 ? 2.5f : -2.5f);
        for (int i = 0; i < 2; i++) {
            products(kinds[i] == Q8 ? "q8-largest" : "q4-largest", same, 3, kinds[i], K, full, scale, minimum, F32, 0, N,
                     y);
        }
    }
    for (int i = 0; i < 2; i++) {  // the tiles back to floats: wf holds N × K
        dequantize(kinds[i] == Q8 ? 8 : 4, N, K, tiles, scale, minimum, F32, 0, wf);
        print("exact", kinds[i] == Q8 ? "dequantize-q8" : "dequantize-q4", wf, N * K);
    }
    for (int i = 0; i < N * KF; i++) wf[i] = uniform(-0.1f, 0.1f);
    gemv(x, M, F32, KF, wf, NULL, NULL, F32, 0, N, y, ACT_EXACT);
    print("close", "f32", y, M * N);
    for (int i = 0; i < N * KF; i++) wh[i] = (uint16_t)((next() & 0x8000u) | ((5 + next() % 10) << 10) | (next() & 1023u));
    gemv(x, M, F16, KF, wh, NULL, NULL, F32, 0, N, y, ACT_EXACT);
    print("close", "f16", y, M * N);
    for (int i = 0; i < N * KF; i++) {
        uint32_t bits;
        memcpy(&bits, wf + i, 4);
        wh[i] = (uint16_t)(bits >> 16);
    }
    gemv(x, M, BF16, KF, wh, NULL, NULL, F32, 0, N, y, ACT_EXACT);
    print("close", "bf16", y, M * N);

    static float halves[65536];  // every binary16 value as float32: subnormals, infinities and NaNs included
    for (int i = 0; i < 65536; i += 16) {
        uint16_t h[16];
        for (int l = 0; l < 16; l++) h[l] = (uint16_t)(i + l);
        v_store(halves + i, v_load_f16_n(h, 16));
    }
    print("exact", "half", halves, 65536);

    // float32 → binary16 (rounded to nearest, ties to even), as the cache stores keys and values: edge cases, then
    // random bit patterns of every kind, then values around binary16's range
    enum { TO_HALF = 4096 };
    static float wide[TO_HALF], narrowed[TO_HALF];
    const uint32_t edges[] = {0u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00001u, 0x477FE000u,
                              0x477FEFFFu, 0x477FF000u, 0x477FF001u, 0x38800000u, 0x387FFFFFu, 0x33800000u,
                              0x33800001u, 0x337FFFFFu, 0x33000000u, 0x33000001u, 0x3F801000u, 0x3F803000u,
                              0x3F800FFFu, 0x00000001u, 0x80800000u, 0x387FE000u, 0x387FF000u};
    for (int i = 0; i < TO_HALF; i++) {
        uint32_t bits = i < (int)(sizeof edges / 4) ? edges[i] : next();
        if (i >= TO_HALF / 2) bits = (bits & 0x807FFFFFu) | ((100u + next() % 50u) << 23);  // exponents 2^-27 … 2^22
        memcpy(wide + i, &bits, 4);
        narrowed[i] = half_float(float_half(wide[i]));
    }
    print("exact", "to-half-in", wide, TO_HALF);
    print("exact", "to-half", narrowed, TO_HALF);

    static float gate[50], up[50], h[50], v[41];
    for (int i = 0; i < 50; i++) gate[i] = uniform(-100.f, 100.f), up[i] = uniform(-2.f, 2.f);
    swiglu(gate, up, 50, h);
    print("exact", "swiglu", h, 50);
    geglu(gate, up, 50, h);
    print("exact", "geglu", h, 50);
    for (int i = 0; i < 41; i++) v[i] = (float)(next() % 7);
    const float best = (float)argmax(v, 41);
    print("exact", "argmax", &best, 1);

    enum { HD = 64, PAST = 20, HEADS = 3 };
    static float q[HEADS * HD], keys[PAST * HD], values[PAST * HD], k_new[HD], v_new[HD], scores[4 * (PAST + 1)];
    static float out[HEADS * HD], top[HEADS], total[HEADS];
    for (int i = 0; i < HEADS * HD; i++) q[i] = uniform(-1.f, 1.f);
    for (int i = 0; i < PAST * HD; i++) keys[i] = uniform(-1.f, 1.f), values[i] = uniform(-1.f, 1.f);
    for (int i = 0; i < HD; i++) k_new[i] = uniform(-1.f, 1.f), v_new[i] = uniform(-1.f, 1.f);
    static const int one_block[1] = {0};  // the cache as one block of 32 slots (PAST of them held)
    const Rows k = {(char *)keys, 4 * HD, 4 * 32 * HD, one_block, 32, 5, KV_F32};
    const Rows vr = {(char *)values, 4 * HD, 4 * 32 * HD, one_block, 32, 5, KV_F32};
    attend_one(q, &k, &vr, k_new, v_new, scores, out, top, total);
    print("close", "attention", out, HEADS * HD);
    print("close", "attention-top", top, HEADS);
    print("close", "attention-total", total, HEADS);
    static uint16_t half_keys[PAST * HD], half_values[PAST * HD], half_k_new[HD], half_v_new[HD];  // a binary16 cache
    floats_to_halves(keys, half_keys, PAST * HD), floats_to_halves(values, half_values, PAST * HD);
    floats_to_halves(k_new, half_k_new, HD), floats_to_halves(v_new, half_v_new, HD);
    const Rows hk = {(char *)half_keys, 2 * HD, 2 * 32 * HD, one_block, 32, 5, KV_F16};
    const Rows hv = {(char *)half_values, 2 * HD, 2 * 32 * HD, one_block, 32, 5, KV_F16};
    attend_one(q, &hk, &hv, half_k_new, half_v_new, scores, out, top, total);
    print("close", "attention-half", out, HEADS * HD);
    print("close", "attention-half-top", top, HEADS);
    print("close", "attention-half-total", total, HEADS);
    enum { Q8_ROW = HD / BLOCK * KV_BLOCK_BYTES };  // a q8_0 cache: each row as blocks of an fp16 scale and 32 bytes
    static uint8_t q8_keys[PAST * Q8_ROW], q8_values[PAST * Q8_ROW], q8_k_new[Q8_ROW], q8_v_new[Q8_ROW];
    for (int j = 0; j < PAST; j++) {
        kv_encode(KV_Q8_0, keys + j * HD, q8_keys + j * Q8_ROW, HD);
        kv_encode(KV_Q8_0, values + j * HD, q8_values + j * Q8_ROW, HD);
    }
    kv_encode(KV_Q8_0, k_new, q8_k_new, HD), kv_encode(KV_Q8_0, v_new, q8_v_new, HD);
    const Rows qk = {(char *)q8_keys, Q8_ROW, 32 * Q8_ROW, one_block, 32, 5, KV_Q8_0};
    const Rows qv = {(char *)q8_values, Q8_ROW, 32 * Q8_ROW, one_block, 32, 5, KV_Q8_0};
    attend_one(q, &qk, &qv, q8_k_new, q8_v_new, scores, out, top, total);
    print("close", "attention-q8_0", out, HEADS * HD);
    print("close", "attention-q8_0-top", top, HEADS);
    print("close", "attention-q8_0-total", total, HEADS);

    // numbers → q8_0 blocks → numbers, as a q8_0 cache stores and reads keys and values: blocks of every magnitude
    // (binary16's subnormal scales, its largest), a zero block, ties, values past 127 × the rounded scale
    enum { Q8_IN = 64 * BLOCK };
    static float q8_in[Q8_IN], q8_out[Q8_IN];
    static uint8_t q8_blocks[Q8_IN / BLOCK * KV_BLOCK_BYTES];
    for (int i = 0; i < Q8_IN; i++) {
        const int block = i / BLOCK;
        q8_in[i] = block == 0 ? 0.f : block == 1 ? (float)(i % BLOCK - 16) * 0.5f
                 : ldexpf(uniform(-1.f, 1.f), block % 48 - 30);  // 2^-30 … 2^17
    }
    q8_in[3 * BLOCK] = ldexpf(127.f, -24) * 1.0004f;  // a scale that rounds down: max / scale just past 127
    q8_0_encode(q8_in, q8_blocks, Q8_IN);
    for (int i = 0; i < Q8_IN; i += LANES)
        v_store(q8_out + i, kv_load(q8_blocks + i / BLOCK * KV_BLOCK_BYTES, KV_Q8_0, i % BLOCK));
    print("exact", "q8_0-in", q8_in, Q8_IN);
    print("exact", "q8_0-out", q8_out, Q8_IN);
    printf("isa %s\n", kernel_isa());
    return 0;
}
