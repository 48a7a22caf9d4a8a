// The decode step's team of threads on a CPU it may share: a barrier that spins only briefly before it sleeps,
// and the CPU time the team got, so the caller can tell when its threads are not getting their cores.
//
// OpenMP's own barrier spins for a long while (hundreds of thousands of iterations) before it sleeps. On a machine
// where another process is busy, a waiting thread then burns the core its late partner needs, and a step of some
// 150 barriers waits out a scheduler slice at each. This one spins about SPIN_NS, then sleeps on a futex until the
// last thread arrives, so a thread that is not running costs the others a short spin, not a core.
// Include after _GNU_SOURCE is defined (clock_gettime, syscall).
#pragma once

#include <stdatomic.h>
#include <time.h>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#else
#include <sched.h>
#endif

#define SPIN_NS 50000  // how long a waiting thread spins before it sleeps

typedef struct {
    atomic_int arrived;     // threads at the barrier this round
    atomic_int generation;  // rounds completed: a waiter leaves when it changes
    atomic_int sleepers;    // threads asleep on `generation`
} TeamBarrier;

static inline double seconds(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

static inline void futex_wait(atomic_int *word, int value) {
#ifdef __linux__
    syscall(SYS_futex, (int *)word, FUTEX_WAIT_PRIVATE, value, NULL, NULL, 0);
#else
    (void)word, (void)value;
    sched_yield();
#endif
}

static inline void futex_wake_all(atomic_int *word) {
#ifdef __linux__
    syscall(SYS_futex, (int *)word, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL, 0);
#else
    (void)word;
#endif
}

// Every one of the team's T threads calls it; none returns before all have called it, and each then sees every
// write the others made before calling it.
static inline void team_barrier(TeamBarrier *b, int T) {
    if (T < 2) return;
    const int round = atomic_load_explicit(&b->generation, memory_order_acquire);
    if (atomic_fetch_add_explicit(&b->arrived, 1, memory_order_acq_rel) == T - 1) {  // the last to arrive
        atomic_store_explicit(&b->arrived, 0, memory_order_relaxed);
        atomic_fetch_add(&b->generation, 1);
        if (atomic_load(&b->sleepers) > 0) futex_wake_all(&b->generation);
        return;
    }
    const double until = seconds(CLOCK_MONOTONIC) + 1e-9 * SPIN_NS;
    for (int i = 1;; i++) {
        if (atomic_load_explicit(&b->generation, memory_order_acquire) != round) return;
        cpu_relax();
        if (i % 64 == 0 && seconds(CLOCK_MONOTONIC) > until) break;
    }
    atomic_fetch_add(&b->sleepers, 1);
    while (atomic_load(&b->generation) == round) futex_wait(&b->generation, round);  // returns at once if changed
    atomic_fetch_sub(&b->sleepers, 1);
}

// What the calling thread's steps have had: the CPU time their teams ran, and the time they could have run (team
// size × wall time), summed over every step it called; the ratio falls below one when threads wait for a core.
typedef struct {
    double cpu, offered;
} TeamUsage;
