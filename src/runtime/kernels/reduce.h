/* stablehlo.reduce (variadic). `inputs`, `inits` and `outputs` are arrays of `ninputs`
 * views. The body is called as body(acc_0..acc_{n-1}, x_0..x_{n-1}) -> (acc'_0..acc'_{n-1}),
 * i.e. block arguments in StableHLO order (accumulators first). Reducing a zero-size axis
 * yields the init values. Fast paths: single input with a `simple` body (add, multiply,
 * maximum, minimum, and, or, xor) on f32/f64/integer/pred. */
#ifndef ANVIL_RUNTIME_KERNELS_REDUCE_H
#define ANVIL_RUNTIME_KERNELS_REDUCE_H

#include <stdint.h>

#include "runtime/kernels/kernel_api.h"

#ifndef AV_KMAX_RANK
#define AV_KMAX_RANK 16
#endif
#define AV_KMAX_VARIADIC 64

typedef struct av_reduce_params {
  int ninputs;                   /* 1 .. AV_KMAX_VARIADIC */
  int ndims;
  int64_t dims[AV_KMAX_RANK];    /* `dimensions`: input axes to reduce (any order) */
  av_scalar_fn body;
  struct av_thread_pool *pool; /* set per run: large simple reductions split over it; or NULL */
} av_reduce_params;

av_code av_kernel_reduce(const av_reduce_params *p, const av_view *inputs, const av_view *inits,
                         av_view *outputs, av_diag *d);

/* The rows of a reduce over the innermost `len` elements of each of `rows` contiguous rows
 * into out[0..rows), folded from *init exactly as av_kernel_reduce folds them (same order,
 * same bits): fused row groups (runtime/steps_rows.c) reduce a block of rows at a time. f32
 * with an add, maximum or minimum body; false (nothing written) otherwise. */
bool av_reduce_rows(av_opcode op, av_dtype t, const void *in, int64_t rows, int64_t len,
                    const void *init, void *out);

#endif
