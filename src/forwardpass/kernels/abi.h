// The kernels' interface with Python, declared once: the structs Python builds (kernels/abi.py mirrors them by field
// name), the constants both sides use, and every function the library exports. kernel_abi() reports each struct's
// size, each field's offset and each constant's value, kernel_exports() each export's signature, and Python compares
// them with its own when it loads the library, refusing a library that differs (abi.c).
#pragma once
#include <stddef.h>
#include <stdint.h>

#define BLOCK 32   // inputs per quantization block
#define GROUP 16   // rows of a quantized tile
#define OCTET 160  // FACTORS: bytes per group and 8 blocks (128 factors, 16 fp16)

enum { F32 = 0, F16 = 1, BF16 = 2, Q4 = 4, Q8 = 8 };  // how a weight matrix is stored
enum { FACTORS = 3, HALVES = 5 };  // how block scales are stored, beside F32 and F16: u8 factors × an fp16 per 8
                                   // blocks; float32 per 16 inputs (8-bit tiles only)
enum { KV_F32 = 0, KV_F16 = 1, KV_Q8_0 = 2 };  // how a KV pool stores its pairs (Batch.kv)
enum { ACT_EXACT = 0, ACT_Q8 = 1 };  // how a product's activation rows are quantized per block of 32 (gemv.h): to
                                     // 15 bits, or to int8 as llama.cpp's Q8_0 (one product per weight byte)
#define KV_BLOCK_BYTES 34  // KV_Q8_0: a block of BLOCK numbers, its binary16 scale then BLOCK int8 values (kv_q8_0.py)

// A linear layer's weight as the kernels read it: N rows of K. Float kinds are row-major and read as they are
// (16-bit ones widened to float32 in registers) against the float32 activation row.
typedef struct {
    int kind, N, K;
    const void *w;        // F32: float (N, K); F16, BF16: uint16 (N, K); Q8, Q4: uint8 tiles (groups, K / 32, 512 or 256)
    const void *scale;    // (groups, K / 32, 16), quantized only, as `scales` says (FACTORS: (groups, K / 256, 160);
                          // HALVES: (groups, K / 32, 2, 16))
    const void *minimum;  // the same; NULL: every block's minimum is -zero × its scale
    const float *bias;    // (N) or NULL
    int scales;           // F32; F16 where every scale and minimum is exact in 16 bits (a file's own block scales);
                          // FACTORS (K-quants: K a multiple of 256); HALVES (Q6_K: Q8 only)
    int zero;             // without minimums, the integer that stands for 0 (Q4_0 8, Q8_0 128: the file stores none)
} Linear;

typedef struct {
    const float *attn_norm, *ffn_norm;  // (d_model)
    Linear qkv;                         // (n_heads + 2 n_kv_heads) head_dim × d_model: Q, K, V rows
    Linear out;                         // d_model × n_heads head_dim
    Linear gate_up;                     // 2 hidden × d_model: gate rows, then up rows
    Linear down;                        // d_model × hidden
    const float *q_norm, *k_norm;       // (head_dim): QK-norm, each head of q and k RMS-normalized before RoPE; or NULL
    const float *attn_post_norm, *ffn_post_norm;  // (d_model): sandwich norms on each branch before its add; or NULL
    int window;                         // attends to its own slot and window - 1 before it; 0: to every earlier one
    int local_rope;                     // rotates by the model's local tables (cos_local, sin_local)
} Layer;

typedef struct {
    int n_layers, d_model, n_heads, n_kv_heads, head_dim, hidden, vocab_size, context_length, capacity;
    float norm_eps;
    Linear embeddings;        // vocab_size × d_model: a token's row is its embedding (linear_row)
    const Layer *layers;      // (n_layers)
    const float *norm_f;      // (d_model)
    Linear lm_head;           // vocab_size × d_model
    const float *cos, *sin;   // (context_length, head_dim / 2), filled past every position a step reads
    float *work;              // decode_workspace(this) floats, made once: a step allocates nothing
    int threads;              // the most threads a step runs; the workspace holds this many threads' buffers, and
                              // attention splits positions into this many parts
    int rows;                 // the most sequences one call decodes; the workspace holds this many rows
    float attn_scale;         // scores q·k × this (1/√head_dim unless the family says otherwise)
    float embed_scale;        // embeddings × this (1, or √d_model for Gemma)
    int gelu;                 // the feed-forward's gate: 0 SiLU (SwiGLU), 1 tanh GELU (GeGLU)
    const float *cos_local, *sin_local;  // (context_length, head_dim / 2): the sliding layers' tables (local_rope)
    int team;                 // threads the next step runs, 1 … threads (0: threads): fewer while cores are taken
    int activations;          // how the products over integer weights quantize their activation rows: ACT_EXACT or
                              // ACT_Q8 (decode_batch refuses any other)
} Model;

// One call's rows: sequence r's token at positions[r], its pairs so far in its first lengths[r] slots, its new K and V
// into slot lengths[r]. Rows may be chunks of one sequence: chunk[r] rows right before row r are the same sequence's
// previous positions (positions and lengths one less each, the same block table), whose new pairs row r reads as it
// reads its own (a prompt's chunk, or a token and the drafts after it, in one step, each row causal); NULL: every row
// its own sequence's only one. The pool k, v (n_layers, slots / block_size, n_kv_heads, block_size, head_dim) holds blocks
// of block_size slots, slot j of row r in block tables[r × max_blocks + j / block_size], at j % block_size (where the
// paged engine keeps them, and lengths = positions). A slot holds one K (or V) head's row of head_dim numbers as `kv`
// says: float32, IEEE binary16, or q8_0 blocks (head_dim / BLOCK of KV_BLOCK_BYTES each; head_dim a multiple of
// BLOCK). Each new pair is rounded to the format as it is stored, and read back widened: the row's own pair too, so a
// step attends to exactly what later steps will read.
typedef struct {
    int rows;
    const int *tokens, *positions, *lengths;  // (rows)
    void *k, *v;
    int slots, block_size, max_blocks;
    const int *tables;                        // (rows, max_blocks)
    int kv;                                   // KV_F32, KV_F16 or KV_Q8_0
    const int *chunk;                         // (rows) or NULL, as above
    const int *emit;                          // (rows) or NULL: the rows whose logits are made (nonzero), in row
                                              // order; NULL: every row's
} Batch;

// A block format repack() reads, one row each (weights/formats.py holds the same rows and checks them against
// repack_formats() before it repacks): ggml's type id, the file's bytes per block, the tile bytes per group of 16 rows
// and block of 32 inputs (256: 4-bit tiles, 512: 8-bit), the form of its scales (F16, FACTORS or HALVES) and, for a
// symmetric grid, its zero (every minimum is -zero × its scale; -1: the format keeps minimums of its own).
typedef struct {
    int kind, block_bytes, tile, scales, zero;
} RepackFormat;

// kernel_abi(&n): n entries, each a name and its value: "Linear" its size in bytes, "Linear.kind" a field's offset,
// "BLOCK" a constant
typedef struct {
    const char *name;
    long long value;
} AbiEntry;

// kernel_exports(&n): n entries, one per exported function (EXPORTS below): its name, and its result's and arguments'
// types as codes: 'v' void, 'i' int, 'z' size_t, 'f' float, 'd' double, 's' const char *, 'p' any other pointer
#define MOST_ARGS 12  // arguments an export may take (ABI_EACH counts up to this many)
typedef struct {
    const char *name;
    char result;
    char args[MOST_ARGS + 1];  // in order, then NUL
} AbiExport;

// Every function the library exports, declared once: X(name, result type, (type, name) of each argument). The list
// both declares each one (ABI_DECLARE, below) and fills kernel_exports()'s report of its signature (abi.c), which
// kernels/abi.py compares with its own declaration when it loads the library.
#define EXPORTS(X)                                                                                                     \
    /* abi.c: this interface as the library was compiled; which build of simd.h it is */                              \
    X(kernel_abi, const AbiEntry *, (int *, n))                                                                        \
    X(kernel_exports, const AbiExport *, (int *, n))                                                                   \
    X(kernel_isa, const char *)                                                                                        \
    /* gemv.c: y (M, N) = x (M, K) @ Wᵀ, W stored as `kind` (w, w_scale, w_min, scales, zero as in Linear), x's rows  \
       quantized as `activations` says (ACT_EXACT or ACT_Q8; float weights read them as they are) */                  \
    X(gemv, void, (const float *, x), (int, M), (int, kind), (int, K), (const void *, w), (const void *, w_scale),    \
      (const void *, w_min), (int, scales), (int, zero), (int, N), (float *, y), (int, activations))                  \
    /* gemv.c: whether products of several rows run on the CPU's tile unit (AMX, tiles.h); use 1 where it has one,   \
       0 never, -1 as it is. The same bits either way */                                                             \
    X(kernel_tiles, int, (int, use))                                                                                   \
    /* decode_step.c: n steps of a batch of sequences over a paged pool (Batch): each emitted row's logits           \
       (vocab_size) and its highest-scoring token per step; the steps done, or -1. decode_usage: the calling         \
       thread's steps so far, their CPU time and the time offered their teams */                                      \
    X(decode_workspace, size_t, (const Model *, m))                                                                    \
    X(decode_usage, void, (double *, out))                                                                             \
    X(decode_batch, int, (const Model *, m), (const Batch *, b), (int, n), (const int *, stop), (int, n_stop),       \
      (float *, logits), (int *, tokens))                                                                              \
    /* dequantize.c: (N, K) float32 from 8- or 4-bit tiles */                                                          \
    X(dequantize, void, (int, bits), (int, N), (int, K), (const uint8_t *, q), (const void *, scale),                 \
      (const void *, minimum), (int, scales), (int, zero), (float *, w))                                               \
    /* repack.c: a band of a GGUF tensor in ggml type `kind` into tiles, scales and minimums; nonzero where a scale   \
       is not finite in 16 bits. repack_formats: the formats repack() reads, n of them */                              \
    X(repack, int, (int, kind), (int, rows), (int, K), (const uint8_t *, src), (uint8_t *, q), (void *, scale),       \
      (void *, minimum))                                                                                               \
    X(repack_formats, const RepackFormat *, (int *, n))                                                                \
    /* stream_read.c: the sum of n floats, read in concurrent streams */                                               \
    X(stream_read, float, (const float *, x), (size_t, n))

// ABI_EACH(f, none, result, args...): f applied to each (type, name) argument, comma-separated; `none` where there
// are none (ABI_PICK chooses by counting them)
#define ABI_EACH(f, none, ...)                                                                                         \
    ABI_PICK(__VA_ARGS__, ABI_12, ABI_11, ABI_10, ABI_9, ABI_8, ABI_7, ABI_6, ABI_5, ABI_4, ABI_3, ABI_2, ABI_1,      \
             ABI_0, )(f, none, __VA_ARGS__)
#define ABI_PICK(r, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, each, ...) each
#define ABI_0(f, none, r) none
#define ABI_1(f, none, r, a) f a
#define ABI_2(f, none, r, a, ...) f a, ABI_1(f, none, r, __VA_ARGS__)
#define ABI_3(f, none, r, a, ...) f a, ABI_2(f, none, r, __VA_ARGS__)
#define ABI_4(f, none, r, a, ...) f a, ABI_3(f, none, r, __VA_ARGS__)
#define ABI_5(f, none, r, a, ...) f a, ABI_4(f, none, r, __VA_ARGS__)
#define ABI_6(f, none, r, a, ...) f a, ABI_5(f, none, r, __VA_ARGS__)
#define ABI_7(f, none, r, a, ...) f a, ABI_6(f, none, r, __VA_ARGS__)
#define ABI_8(f, none, r, a, ...) f a, ABI_7(f, none, r, __VA_ARGS__)
#define ABI_9(f, none, r, a, ...) f a, ABI_8(f, none, r, __VA_ARGS__)
#define ABI_10(f, none, r, a, ...) f a, ABI_9(f, none, r, __VA_ARGS__)
#define ABI_11(f, none, r, a, ...) f a, ABI_10(f, none, r, __VA_ARGS__)
#define ABI_12(f, none, r, a, ...) f a, ABI_11(f, none, r, __VA_ARGS__)
#define ABI_RESULT(result, ...) result
#define ABI_PARAMETER(type, name) type name
#define ABI_DECLARE(name, ...) ABI_RESULT(__VA_ARGS__, ) name(ABI_EACH(ABI_PARAMETER, void, __VA_ARGS__));

EXPORTS(ABI_DECLARE)
