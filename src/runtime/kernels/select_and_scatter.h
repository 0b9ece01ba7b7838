/* stablehlo.select_and_scatter: for each window of the padded operand, `select`
 * (select(a, b) -> i1; true keeps a) picks one element; the source value for that window is
 * combined into the result at that element with `scatter`(current, source) -> new, the
 * result starting as init_value everywhere. Padding elements are never selected. */
#ifndef ANVIL_RUNTIME_KERNELS_SELECT_AND_SCATTER_H
#define ANVIL_RUNTIME_KERNELS_SELECT_AND_SCATTER_H

#include <stdint.h>

#include "runtime/kernels/kernel_api.h"

#ifndef AV_KMAX_RANK
#define AV_KMAX_RANK 16
#endif

typedef struct av_select_and_scatter_params {
  int rank;
  /* Callers fill defaults when absent: window 1, strides 1, padding 0. */
  int64_t window_dimensions[AV_KMAX_RANK];
  int64_t window_strides[AV_KMAX_RANK];
  int64_t padding_lo[AV_KMAX_RANK];
  int64_t padding_hi[AV_KMAX_RANK];
  av_scalar_fn select;  /* (a, b) -> pred */
  av_scalar_fn scatter; /* (current, source) -> new */
} av_select_and_scatter_params;

void av_select_and_scatter_params_init(av_select_and_scatter_params *p, int rank);

av_code av_kernel_select_and_scatter(const av_select_and_scatter_params *p,
                                     const av_view *operand, const av_view *source,
                                     const av_view *init_value, av_view *out, av_diag *d);

#endif
