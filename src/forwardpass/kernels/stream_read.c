// Read bandwidth as the decode kernels see it: every thread streams its share of a buffer through several
// concurrent read streams (a matrix-vector product reads a few weight rows at once), summing what it reads.
#include <immintrin.h>
#include <omp.h>
#include <stddef.h>

#define STREAMS 4

float stream_read(const float *x, size_t n) {  // n a multiple of 16 × STREAMS × threads
    float total = 0.f;
    #pragma omp parallel reduction(+ : total)
    {
        const size_t per = n / (size_t)omp_get_num_threads(), chunk = per / STREAMS;
        const float *base = x + (size_t)omp_get_thread_num() * per;
        __m512 acc[STREAMS];
        for (int s = 0; s < STREAMS; s++) acc[s] = _mm512_setzero_ps();
        for (size_t i = 0; i + 16 <= chunk; i += 16)
            for (int s = 0; s < STREAMS; s++) acc[s] = _mm512_add_ps(acc[s], _mm512_loadu_ps(base + s * chunk + i));
        for (int s = 0; s < STREAMS; s++) total += _mm512_reduce_add_ps(acc[s]);
    }
    return total;
}
