// y = x Wᵀ for a few rows of x (a batch of decode steps), W in any stored kind (gemv.h): each unit of W (a
// row, or a quantized group of rows) is read from memory once for every row of x.
#include "gemv.h"

void gemv(const float *x, int M, int kind, int K, const void *w, const void *w_scale, const void *w_min, int scales,
          int N, float *y) {
    const Linear L = {kind, N, K, w, w_scale, w_min, NULL, scales};
    Activation a[M];
    for (int m = 0; m < M; m++) {
        a[m] = activation_alloc(K);
        quantize_row(x + (size_t)m * K, K, kind, &a[m]);
    }
    #pragma omp parallel for schedule(static)
    for (int u = 0; u < units_of(&L); u++)
        for (int m = 0; m < M; m++) {
            float out[GROUP];
            units_dot(&L, kind, &a[m], u, 0, 1, 1, out);
            put(&L, u * unit_rows(&L), out, unit_rows(&L), y + (size_t)m * N, 0);
        }
    for (int m = 0; m < M; m++) activation_free(a[m]);
}
