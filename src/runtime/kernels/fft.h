/* stablehlo.fft over the last fft_length.size() (1..3) dimensions, any length, f32/c64 data in
 * single precision and f64/c128 in double (the precision XLA:CPU computes in).
 *  FFT / IFFT: complex -> complex of the same shape; IFFT scales by 1/N.
 *  RFFT: real (f32/f64) -> complex; the last dim becomes fft_length[-1]/2 + 1.
 *  IRFFT: complex -> real; the last dim of the input is fft_length[-1]/2 + 1, of the result
 *         fft_length[-1]; imaginary parts of the self-conjugate bins are ignored.
 *
 * The plan (factorisations, twiddles, Bluestein chirps, the split of long lines) is built once,
 * at compile time, by av_fft_plan_build into the program's arena, and only read when the
 * kernel runs, so executions may share it. How transforms are computed: fft_plan.c (plans),
 * fft_engine.inc (the SIMD transforms), fft.c (the passes over the axes), fft_wide.c (the f64
 * engine in 64-byte vectors on AVX-512). */
#ifndef ANVIL_RUNTIME_KERNELS_FFT_H
#define ANVIL_RUNTIME_KERNELS_FFT_H

#include <stdint.h>

#include "runtime/kernels/kernel_api.h"
#include "util/arena.h"

typedef enum av_fft_type { AV_FFT_FFT, AV_FFT_IFFT, AV_FFT_RFFT, AV_FFT_IRFFT } av_fft_type;

typedef struct av_fft_plan av_fft_plan;
struct av_thread_pool;

typedef struct av_fft_params {
  av_fft_type type;
  int nlengths;           /* 1..3 */
  int64_t fft_length[3];
  const av_fft_plan *plan;     /* from av_fft_plan_build; the kernel refuses to run without */
  struct av_thread_pool *pool; /* set per execution */
} av_fft_params;

/* Checks the operand and result types and shapes against p (type, lengths) and builds the plan
 * into `arena`. On error returns its code with the reason in `err` (INVALID_ARGUMENT for
 * inconsistent shapes, UNIMPLEMENTED for a length too long to plan, RESOURCE_EXHAUSTED). */
av_code av_fft_plan_build(const av_fft_params *p, const av_view *operand, const av_view *result,
                          av_arena *arena, char *err, size_t errlen, const av_fft_plan **out);

av_code av_kernel_fft(const av_fft_params *p, const av_view *operand, av_view *out, av_diag *d);

#endif
