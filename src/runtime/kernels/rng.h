/* stablehlo.rng_bit_generator and stablehlo.rng.
 *
 * rng_bit_generator: THREEFRY (state u64[2]: key, counter) and PHILOX (state u64[2] or
 * u64[3]) bit-exact with XLA's expander; DEFAULT is what XLA's CPU backend does for it (see
 * rng.c). `out` may have any shape and an integer or float dtype of 8..64 bits (raw bits).
 * rng: UNIFORM in [a, b) for floats / integers, NORMAL(mu=a, sigma=b) for floats; drawn from a
 * caller-owned 64-bit counter `state` (the executor keeps one per program; NULL = seed 0). */
#ifndef ANVIL_RUNTIME_KERNELS_RNG_H
#define ANVIL_RUNTIME_KERNELS_RNG_H

#include <stdint.h>

#include "runtime/kernels/kernel_api.h"

typedef enum av_rng_algorithm {
  AV_RNG_ALGORITHM_DEFAULT,
  AV_RNG_ALGORITHM_THREE_FRY,
  AV_RNG_ALGORITHM_PHILOX
} av_rng_algorithm;

typedef struct av_rng_bit_generator_params {
  av_rng_algorithm algorithm;
} av_rng_bit_generator_params;

av_code av_kernel_rng_bit_generator(const av_rng_bit_generator_params *p,
                                    const av_view *initial_state, av_view *output_state,
                                    av_view *out, av_diag *d);

typedef enum av_rng_distribution { AV_RNG_UNIFORM, AV_RNG_NORMAL } av_rng_distribution;

typedef struct av_rng_params {
  av_rng_distribution distribution;
  uint64_t *state; /* advanced by the kernel; may be NULL */
} av_rng_params;

/* a, b: scalars of out's dtype. */
av_code av_kernel_rng(const av_rng_params *p, const av_view *a, const av_view *b, av_view *out,
                      av_diag *d);

#endif
