/* stablehlo.scatter (variadic). `inputs`, `updates`, `outputs`: arrays of `ninputs` views.
 * outputs start as copies of inputs (the same buffer is allowed); then for each update
 * element whose full update window lies inside the operand, in row-major order of the
 * updates, outputs[i][idx] = update(outputs_0[idx]..outputs_{n-1}[idx], upd_0..upd_{n-1})
 * (block arguments: current values first, then updates). Updates whose window is out of
 * bounds are skipped (spec). indices_are_sorted / unique_indices are hints only. */
#ifndef ANVIL_RUNTIME_KERNELS_SCATTER_H
#define ANVIL_RUNTIME_KERNELS_SCATTER_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/kernels/kernel_api.h"
#include "runtime/kernels/reduce.h"

typedef struct av_scatter_params {
  int ninputs;  /* 1 .. AV_KMAX_VARIADIC */
  int n_update_window_dims;
  int n_inserted_window_dims;
  int n_input_batching_dims;
  int n_scatter_indices_batching_dims;
  int n_scatter_dims_to_operand_dims;
  int64_t update_window_dims[AV_KMAX_RANK];
  int64_t inserted_window_dims[AV_KMAX_RANK];
  int64_t input_batching_dims[AV_KMAX_RANK];
  int64_t scatter_indices_batching_dims[AV_KMAX_RANK];
  int64_t scatter_dims_to_operand_dims[AV_KMAX_RANK];
  int64_t index_vector_dim;
  bool indices_are_sorted; /* hint only */
  bool unique_indices;     /* hint only */
  bool update_is_replace;  /* the body returns its update arguments unchanged (x.at[i].set) */
  av_scalar_fn update;
  struct av_thread_pool *pool; /* set per run: the operand -> result copy is split over it */
} av_scatter_params;

av_code av_kernel_scatter(const av_scatter_params *p, const av_view *inputs,
                          const av_view *scatter_indices, const av_view *updates,
                          av_view *outputs, av_diag *d);
/* The checks of av_kernel_scatter on shapes alone (views without data), for the compiler: a
 * program with bad dimension numbers is refused when it is compiled, not when it runs. */
av_code av_scatter_check(const av_scatter_params *p, const av_view *inputs,
                         const av_view *scatter_indices, const av_view *updates, av_diag *d);

#endif
