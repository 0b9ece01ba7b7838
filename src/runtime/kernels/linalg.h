/* stablehlo.cholesky and stablehlo.triangular_solve, batched over leading dims, on
 * f32/f64/c64/c128 (narrow floats via f32).
 * cholesky: the result's other triangle is zeroed; a non-positive-definite input gives NaNs
 *   in the affected part (never a crash).
 * triangular_solve: left_side: op(a) x = b, else x op(a) = b; op per transpose_a; only the
 *   `lower`/upper triangle of a is read; unit_diagonal assumes ones on the diagonal. */
#ifndef ANVIL_RUNTIME_KERNELS_LINALG_H
#define ANVIL_RUNTIME_KERNELS_LINALG_H

#include <stdbool.h>

#include "runtime/kernels/kernel_api.h"

struct av_thread_pool;

typedef struct av_cholesky_params {
  bool lower;
  struct av_thread_pool *pool; /* set per run: batches of small matrices split over it; or NULL */
} av_cholesky_params;

typedef enum av_transpose {
  AV_TRANSPOSE_NO_TRANSPOSE,
  AV_TRANSPOSE_TRANSPOSE,
  AV_TRANSPOSE_ADJOINT
} av_transpose;

typedef struct av_triangular_solve_params {
  bool left_side;
  bool lower;
  bool unit_diagonal;
  av_transpose transpose_a;
  struct av_thread_pool *pool; /* set per run, as for cholesky */
} av_triangular_solve_params;

av_code av_kernel_cholesky(const av_cholesky_params *p, const av_view *a, av_view *out,
                           av_diag *d);
av_code av_kernel_triangular_solve(const av_triangular_solve_params *p, const av_view *a,
                                   const av_view *b, av_view *out, av_diag *d);

#endif
