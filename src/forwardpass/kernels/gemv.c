// y = x Wᵀ for the M rows of x (a batch of decode steps, or a prompt's tokens), W in any stored kind (gemv.h): the
// decode step's own product (gemv_part), each thread its share of W's units, each unit read from memory once for
// every row of x.
#define _GNU_SOURCE  // syscall
#include <omp.h>
#include <stdlib.h>
#if defined(FP_AVX512) && defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "gemv.h"

// Whether kernel_tiles wants the tile unit (tiles.h) where it is ready
static int tiles_wanted = 1;

#if TILES
// Whether the CPU has AMX-TILE and AMX-INT8 and Linux let this process use their registers (arch_prctl
// ARCH_REQ_XCOMP_PERM for XTILEDATA), asked once as the library loads
static int tiles_ready;

static void __attribute__((constructor)) tiles_ask(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d >> 24 & 1) || !(d >> 25 & 1)) return;  // AMX-TILE, AMX-INT8
    tiles_ready = syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XFEATURE_XTILEDATA */) == 0;
}

int tiles_in_use(void) { return tiles_ready && tiles_wanted; }
#endif

int kernel_tiles(int use) {
    if (use >= 0) tiles_wanted = use;
    return tiles_in_use();
}

// gemv_part_of for L's quantized kind and scales, with them and `act` constants
static inline __attribute__((always_inline)) void quantized_part(const Linear *L, int act, const Activation *a, int rows,
                                                                 int t, int T, float *y, size_t ldy, int accumulate) {
#define GEMV_PART(kind, scales) gemv_part_of(L, kind, scales, act, a, rows, t, T, y, ldy, accumulate)
    const int s = L->scales;
    if (L->kind == Q4)
        s == F16 ? GEMV_PART(Q4, F16) : s == FACTORS ? GEMV_PART(Q4, FACTORS) : GEMV_PART(Q4, F32);
    else
        s == F16       ? GEMV_PART(Q8, F16)
        : s == FACTORS ? GEMV_PART(Q8, FACTORS)
        : s == HALVES  ? GEMV_PART(Q8, HALVES)
                       : GEMV_PART(Q8, F32);
#undef GEMV_PART
}

// gemv_part_of with `kind`, `scales` and the activations' mode constants: one instance of the loops per combination,
// out of line (a branch on the scales' kind inside the loops made every kind's 4-bit product up to twice as slow).
// Float weights read the rows as they are, in any mode.
void gemv_part(const Linear *L, const Activation *a, int activations, int rows, int t, int T, float *y, size_t ldy,
               int accumulate) {
    if (!quantized(L->kind))
        gemv_part_of(L, L->kind, F32, ACT_EXACT, a, rows, t, T, y, ldy, accumulate);
    else if (activations == ACT_Q8)
        quantized_part(L, ACT_Q8, a, rows, t, T, y, ldy, accumulate);
    else
        quantized_part(L, ACT_EXACT, a, rows, t, T, y, ldy, accumulate);
}

void gemv(const float *x, int M, int kind, int K, const void *w, const void *w_scale, const void *w_min, int scales,
          int zero, int N, float *y, int activations) {
    const Linear L = {kind, N, K, w, w_scale, w_min, NULL, scales, zero};
    Activation *a = malloc(sizeof(Activation) * (size_t)M);  // a prompt's rows: more than a stack should hold
    #pragma omp parallel for schedule(static)
    for (int m = 0; m < M; m++) {
        a[m] = activation_alloc(K);
        quantize_row(x + (size_t)m * K, K, kind, activations, &a[m]);
    }
    #pragma omp parallel
    gemv_part(&L, a, activations, M, omp_get_thread_num(), omp_get_num_threads(), y, N, 0);
    for (int m = 0; m < M; m++) activation_free(a[m]);
    free(a);
}
