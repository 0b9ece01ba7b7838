/* The floating-point environment computing threads run in.
 *
 * XLA:CPU computes with denormals flushed: results that would be subnormal become zero
 * (flush-to-zero, FTZ) and subnormal inputs read as zero (denormals-are-zero, DAZ). anvil
 * does the same by default, so results match XLA:CPU's and no kernel hits the slow microcode
 * paths some CPUs take on subnormals; AV_DENORMALS_IEEE keeps exact IEEE arithmetic
 * (ANVIL_DENORMALS=ieee, or the client create option `denormals`).
 *
 * Where the mode is set: the executor switches the calling thread (a caller running an
 * execution inline, or a device worker) for the length of each top-level execution and
 * restores the thread's previous mode before returning to it; the client's pool threads run
 * in the client's mode; OpenBLAS's own threads are restarted once per process in flush mode
 * (av_fp_blas_threads_flush, thread_pool.c), and executions in IEEE mode then keep their GEMMs
 * on the calling thread. On CPUs other than x86-64 the environment is left as it is. */
#ifndef ANVIL_RUNTIME_FP_ENV_H
#define ANVIL_RUNTIME_FP_ENV_H

#include <stdbool.h>
#include <stdint.h>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

typedef enum av_denormals {
  AV_DENORMALS_FLUSH = 0, /* FTZ + DAZ, as XLA:CPU (the default) */
  AV_DENORMALS_IEEE = 1,  /* exact subnormals */
} av_denormals;

/* Parses "flush"/"ftz" or "ieee"; false for anything else. */
bool av_parse_denormals(const char *s, av_denormals *out);

enum { AV_MXCSR_FTZ = 1u << 15, AV_MXCSR_DAZ = 1u << 6 };

/* Switches the calling thread to `mode`; returns what av_fp_leave needs to restore it. */
static inline uint32_t av_fp_enter(av_denormals mode) {
#if defined(__x86_64__) || defined(__i386__)
  uint32_t saved = _mm_getcsr();
  uint32_t want = mode == AV_DENORMALS_IEEE ? saved & ~(uint32_t)(AV_MXCSR_FTZ | AV_MXCSR_DAZ)
                                            : saved | AV_MXCSR_FTZ | AV_MXCSR_DAZ;
  if (want != saved) _mm_setcsr(want);
  return saved;
#else
  (void)mode;
  return 0;
#endif
}

static inline void av_fp_leave(uint32_t saved) {
#if defined(__x86_64__) || defined(__i386__)
  if (_mm_getcsr() != saved) _mm_setcsr(saved);
#else
  (void)saved;
#endif
}

#endif
