// y = x Wᵀ for a few rows of x (a batch of decode steps), W stored as 8-bit or 4-bit blocks (gemv.h).
#include "gemv.h"

static void gemv(const float *x, int M, const Linear *L, float *y) {
    Activation a[M];
    for (int m = 0; m < M; m++) {
        a[m] = activation_alloc(L->K);
        quantize_row(x + (size_t)m * L->K, L->K, L->kind, &a[m]);
    }
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < L->N; n++)  // each weight row read once, for every row of x
        for (int m = 0; m < M; m++) y[(size_t)m * L->N + n] = row_dot(L, &a[m], n);
    for (int m = 0; m < M; m++) activation_free(a[m]);
}

void q8_gemv(const float *x, int M, int K, const uint8_t *w, const float *w_scale, const float *w_min, int N,
             float *y) {
    const Linear L = {Q8, N, K, w, w_scale, w_min, NULL};
    gemv(x, M, &L, y);
}

void q4_gemv(const float *x, int M, int K, const uint8_t *w, const float *w_scale, const float *w_min, int N,
             float *y) {
    const Linear L = {Q4, N, K, w, w_scale, w_min, NULL};
    gemv(x, M, &L, y);
}
