/* fft_wide: the f64 FFT engine in 64-byte vectors (8 transforms per block instead of 4), for
 * CPUs with AVX-512. The whole file is compiled for AVX-512F/VL/DQ (so the 64-byte vectors
 * never cross a function boundary of another ISA), and fft.c calls it only after
 * av_fft_wide_available() has checked the CPU and the OS. Same engine source as fft.c
 * (fft_engine.inc), same operations per lane in the same order (-ffp-contract=off), so the
 * results are bit-identical to the 4-lane engine's; only passes over many lines come here.
 * 2-D 512x512 c128 on Zen 4: see the commit that added this file. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/fft_internal.h"
#include "runtime/kernels/simd_transpose.h"

static bool g_wide_enabled = true;

bool av_fft_wide_set_enabled(bool on) {
  return __atomic_exchange_n(&g_wide_enabled, on, __ATOMIC_RELAXED);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512vl,avx512dq,fma"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512dq,fma")
#endif

typedef double fft_vw __attribute__((vector_size(64)));

AV_DEFINE_TRANSPOSE8(transpose8_f64w, fft_vw)

#define FFT_ENTRY
#define FFT_LANES_ONLY 1
#define FT double
#define FMA_FT __builtin_fma
#define FV fft_vw
#define TRANSPOSE(m) transpose8_f64w(m)
#define NL 8
#define F(x) x##_f64w
#define DEINT_RE FFT_DEINT8_RE
#define DEINT_IM FFT_DEINT8_IM
#define INTERLEAVE_LO FFT_INTERLEAVE8_LO
#define INTERLEAVE_HI FFT_INTERLEAVE8_HI
#include "runtime/kernels/fft_engine.inc"

bool av_fft_pass_f64_wide(const fft_pass_spec *s, av_thread_pool *pool) {
  return run_pass_f64w(s, pool);
}

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

bool av_fft_wide_available(void) {
  static int cached = -1; /* every thread that races here computes the same answer */
  int has = __atomic_load_n(&cached, __ATOMIC_RELAXED);
  if (has < 0) {
    __builtin_cpu_init();
    has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
          __builtin_cpu_supports("avx512dq");
    __atomic_store_n(&cached, has, __ATOMIC_RELAXED);
  }
  return has && __atomic_load_n(&g_wide_enabled, __ATOMIC_RELAXED);
}

#else /* other CPUs: the 4-lane engine only */

bool av_fft_wide_available(void) { return false; }

bool av_fft_pass_f64_wide(const fft_pass_spec *s, av_thread_pool *pool) {
  (void)s;
  (void)pool;
  return false;
}

#endif
