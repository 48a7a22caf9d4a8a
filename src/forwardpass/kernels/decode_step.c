// One decode step of a Llama-family model (RMSNorm, pre-norm, RoPE, grouped-query attention, SwiGLU) for
// one sequence, in one call: the token's embedding row in, logits out, its K and V appended to the cache.
// The same arithmetic as the PyTorch blocks, without ~20 framework ops per layer and their dispatch.
//
// Threads: one OpenMP team for the whole step. Matrix-vector products split their rows across it and
// attention its heads; the small per-token work between them (norms, quantizing a row, RoPE) runs on one
// thread while the rest wait at the barrier.
#include "gemv.h"

typedef struct {
    const float *attn_norm, *ffn_norm;  // (d_model)
    Linear qkv;                         // (n_heads + 2 n_kv_heads) head_dim × d_model: Q, K, V rows
    Linear out;                         // d_model × n_heads head_dim
    Linear gate_up;                     // 2 hidden × d_model: gate rows, then up rows
    Linear down;                        // d_model × hidden
} Layer;

typedef struct {
    int n_layers, d_model, n_heads, n_kv_heads, head_dim, hidden, vocab_size, context_length, capacity;
    float norm_eps;
    const float *embeddings;  // (vocab_size, d_model)
    const Layer *layers;      // (n_layers)
    const float *norm_f;      // (d_model)
    Linear lm_head;           // vocab_size × d_model
    const float *cos, *sin;   // (context_length, head_dim)
    float *k_cache, *v_cache; // (n_layers, n_kv_heads, capacity, head_dim)
} Model;

static void rmsnorm(const float *x, const float *weight, int n, float eps, float *out) {
    float ss = 0.f;
    #pragma omp simd reduction(+ : ss)
    for (int i = 0; i < n; i++) ss += x[i] * x[i];
    const float inv = 1.f / sqrtf(ss / (float)n + eps);
    for (int i = 0; i < n; i++) out[i] = x[i] * inv * weight[i];
}

// rotate each (i, i + head_dim/2) pair by the position's angles: x cos + rotate_half(x) sin
static void rope(float *x, const float *cos, const float *sin, int head_dim) {
    const int half = head_dim / 2;
    for (int i = 0; i < half; i++) {
        const float a = x[i], b = x[i + half];
        x[i] = a * cos[i] - b * sin[i];
        x[i + half] = b * cos[i + half] + a * sin[i + half];
    }
}

// one query head against the `len` cached positions of its K/V head: softmax(q kᵀ / √head_dim) v
static void attend(const float *q, const float *k, const float *v, int len, int head_dim, float *scores, float *out) {
    const float scale = 1.f / sqrtf((float)head_dim);
    float top = -INFINITY;
    for (int j = 0; j < len; j++) {
        const float *kj = k + (size_t)j * head_dim;
        float s = 0.f;
        #pragma omp simd reduction(+ : s)
        for (int d = 0; d < head_dim; d++) s += q[d] * kj[d];
        scores[j] = s * scale;
        top = fmaxf(top, scores[j]);
    }
    float total = 0.f;
    for (int j = 0; j < len; j++) total += scores[j] = expf(scores[j] - top);
    for (int d = 0; d < head_dim; d++) out[d] = 0.f;
    for (int j = 0; j < len; j++) {
        const float w = scores[j] / total, *vj = v + (size_t)j * head_dim;
        #pragma omp simd
        for (int d = 0; d < head_dim; d++) out[d] += w * vj[d];
    }
}

static inline float silu(float g) { return g / (1.f + expf(-g)); }

// logits (vocab_size) for `token` at `position`; its K and V go to cache slot `slot`, after slots 0 … slot - 1.
// Returns 0, or -1 (touching nothing) for a token, position or slot outside the model's tables or the cache.
int decode_step(const Model *m, int token, int position, int slot, float *logits) {
    if (token < 0 || token >= m->vocab_size || position < 0 || position >= m->context_length || slot < 0 ||
        slot >= m->capacity)
        return -1;
    const int d = m->d_model, hd = m->head_dim, H = m->n_heads, KV = m->n_kv_heads, group = H / KV;
    const int len = slot + 1, qkv_n = (H + 2 * KV) * hd;
    float *x = malloc(sizeof(float) * d), *xn = malloc(sizeof(float) * d);
    float *qkv = malloc(sizeof(float) * qkv_n), *attn = malloc(sizeof(float) * H * hd);
    float *h = malloc(sizeof(float) * m->hidden), *scores = malloc(sizeof(float) * H * len);
    const int widest = m->hidden > H * hd ? (m->hidden > d ? m->hidden : d) : (H * hd > d ? H * hd : d);
    Activation a = activation_alloc(widest);
    memcpy(x, m->embeddings + (size_t)token * d, sizeof(float) * d);
    const float *cos = m->cos + (size_t)position * hd, *sin = m->sin + (size_t)position * hd;

    #pragma omp parallel
    for (int l = 0; l < m->n_layers; l++) {
        const Layer *L = m->layers + l;
        float *kc = m->k_cache + (size_t)l * KV * m->capacity * hd, *vc = m->v_cache + (size_t)l * KV * m->capacity * hd;
        // attention: x += out(attend(rope(q), cache + rope(k), cache + v)) over norm(x)
        #pragma omp single
        {
            rmsnorm(x, L->attn_norm, d, m->norm_eps, xn);
            quantize_row(xn, d, L->qkv.kind, &a);
        }
        #pragma omp for schedule(static)
        for (int n = 0; n < qkv_n; n++) qkv[n] = row_dot(&L->qkv, &a, n);
        #pragma omp single
        {
            for (int i = 0; i < H + KV; i++) rope(qkv + i * hd, cos, sin, hd);  // the query heads, then the key heads
            for (int g = 0; g < KV; g++) {
                memcpy(kc + ((size_t)g * m->capacity + slot) * hd, qkv + (H + g) * hd, sizeof(float) * hd);
                memcpy(vc + ((size_t)g * m->capacity + slot) * hd, qkv + (H + KV + g) * hd, sizeof(float) * hd);
            }
        }
        #pragma omp for schedule(static)
        for (int i = 0; i < H; i++) {
            const size_t head = (size_t)(i / group) * m->capacity * hd;
            attend(qkv + i * hd, kc + head, vc + head, len, hd, scores + (size_t)i * len, attn + i * hd);
        }
        #pragma omp single
        quantize_row(attn, H * hd, L->out.kind, &a);
        #pragma omp for schedule(static)
        for (int n = 0; n < d; n++) x[n] += row_dot(&L->out, &a, n);
        // feed-forward: x += down(silu(gate) × up) over norm(x)
        #pragma omp single
        {
            rmsnorm(x, L->ffn_norm, d, m->norm_eps, xn);
            quantize_row(xn, d, L->gate_up.kind, &a);
        }
        #pragma omp for schedule(static)
        for (int n = 0; n < m->hidden; n++) h[n] = silu(row_dot(&L->gate_up, &a, n)) * row_dot(&L->gate_up, &a, m->hidden + n);
        #pragma omp single
        quantize_row(h, m->hidden, L->down.kind, &a);
        #pragma omp for schedule(static)
        for (int n = 0; n < d; n++) x[n] += row_dot(&L->down, &a, n);
    }
    rmsnorm(x, m->norm_f, d, m->norm_eps, xn);  // final norm, then unembedding
    quantize_row(xn, d, m->lm_head.kind, &a);
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < m->vocab_size; n++) logits[n] = row_dot(&m->lm_head, &a, n);
    activation_free(a);
    free(x), free(xn), free(qkv), free(attn), free(h), free(scores);
    return 0;
}
