// Read bandwidth as the decode kernels see it: every thread streams its share of a buffer through several
// concurrent read streams (a matrix-vector product reads a few weight rows at once), summing what it reads.
#include <omp.h>
#include <stddef.h>

#include "abi.h"
#include "simd.h"

#define STREAMS 4

float stream_read(const float *x, size_t n) {  // n a multiple of 16 × STREAMS × threads
    float total = 0.f;
    #pragma omp parallel reduction(+ : total)
    {
        const size_t per = n / (size_t)omp_get_num_threads(), chunk = per / STREAMS;
        const float *base = x + (size_t)omp_get_thread_num() * per;
        V acc[STREAMS];
        for (int s = 0; s < STREAMS; s++) acc[s] = v_zero();
        for (size_t i = 0; i + LANES <= chunk; i += LANES)
            for (int s = 0; s < STREAMS; s++) acc[s] = v_add(acc[s], v_load(base + s * chunk + i));
        for (int s = 0; s < STREAMS; s++) total += v_reduce_add(acc[s]);
    }
    return total;
}
