// What abi.h declares, as this build compiled it: every struct's size, every field's offset and every shared
// constant, and every export's signature, for kernels/abi.py to hold against its own before Python builds a struct or
// calls a function.
#include "abi.h"
#include "simd.h"

const char *kernel_isa(void) { return KERNEL_ISA; }

#define SIZE(S) {#S, (long long)sizeof(S)},
#define AT(S, f) {#S "." #f, (long long)offsetof(S, f)},
#define CONSTANT(c) {#c, (long long)(c)},

static const AbiEntry ABI[] = {
    SIZE(Linear) AT(Linear, kind) AT(Linear, N) AT(Linear, K) AT(Linear, w) AT(Linear, scale) AT(Linear, minimum)
    AT(Linear, bias) AT(Linear, scales) AT(Linear, zero)
    SIZE(Layer) AT(Layer, attn_norm) AT(Layer, ffn_norm) AT(Layer, qkv) AT(Layer, out) AT(Layer, gate_up)
    AT(Layer, down) AT(Layer, q_norm) AT(Layer, k_norm) AT(Layer, attn_post_norm) AT(Layer, ffn_post_norm)
    AT(Layer, window) AT(Layer, local_rope)
    SIZE(Model) AT(Model, n_layers) AT(Model, d_model) AT(Model, n_heads) AT(Model, n_kv_heads) AT(Model, head_dim)
    AT(Model, hidden) AT(Model, vocab_size) AT(Model, context_length) AT(Model, capacity) AT(Model, norm_eps)
    AT(Model, embeddings) AT(Model, layers) AT(Model, norm_f) AT(Model, lm_head) AT(Model, cos) AT(Model, sin)
    AT(Model, work) AT(Model, threads) AT(Model, rows) AT(Model, attn_scale)
    AT(Model, embed_scale) AT(Model, gelu) AT(Model, cos_local) AT(Model, sin_local) AT(Model, team)
    AT(Model, activations)
    SIZE(RepackFormat) AT(RepackFormat, kind) AT(RepackFormat, block_bytes) AT(RepackFormat, tile)
    AT(RepackFormat, scales) AT(RepackFormat, zero)
    SIZE(AbiExport) AT(AbiExport, name) AT(AbiExport, result) AT(AbiExport, args)
    SIZE(Batch) AT(Batch, rows) AT(Batch, tokens) AT(Batch, positions) AT(Batch, lengths) AT(Batch, k) AT(Batch, v)
    AT(Batch, slots) AT(Batch, block_size) AT(Batch, max_blocks) AT(Batch, tables) AT(Batch, kv)
    AT(Batch, chunk) AT(Batch, emit)
    CONSTANT(BLOCK) CONSTANT(GROUP) CONSTANT(OCTET) CONSTANT(F32) CONSTANT(F16) CONSTANT(BF16) CONSTANT(Q4)
    CONSTANT(Q8) CONSTANT(FACTORS) CONSTANT(HALVES) CONSTANT(KV_F32) CONSTANT(KV_F16) CONSTANT(KV_Q8_0)
    CONSTANT(KV_BLOCK_BYTES) CONSTANT(ACT_EXACT) CONSTANT(ACT_Q8) CONSTANT(MOST_ARGS)
};

const AbiEntry *kernel_abi(int *n) {
    *n = (int)(sizeof ABI / sizeof ABI[0]);
    return ABI;
}

// A type's code (AbiExport), told apart by the type of a pointer to a function returning it, which void has too; a
// scalar type not named here would read as a pointer, so a new one needs its code here and in abi.py's _CODES
#define TYPE_CODE(type)                                                                                                \
    _Generic((type(*)(void))0, void (*)(void): 'v', int (*)(void): 'i', size_t (*)(void): 'z', float (*)(void): 'f', \
             double (*)(void): 'd', const char *(*)(void): 's', default: 'p')
#define ARGUMENT_CODE(type, name) TYPE_CODE(type)
#define DESCRIBE(name, ...) {#name, TYPE_CODE(ABI_RESULT(__VA_ARGS__, )), {ABI_EACH(ARGUMENT_CODE, 0, __VA_ARGS__)}},

static const AbiExport EXPORTED[] = {EXPORTS(DESCRIBE)};

const AbiExport *kernel_exports(int *n) {
    *n = (int)(sizeof EXPORTED / sizeof EXPORTED[0]);
    return EXPORTED;
}
