/* stablehlo.gather (and dynamic_gather: the engine reads slice_sizes from the operand into
 * the params). Every dimension-number form, including operand_batching_dims /
 * start_indices_batching_dims and index_vector_dim == rank(start_indices) (implicit
 * trailing 1). Start indices are clamped so each slice lies inside the operand (spec).
 * start_indices may be any integer dtype. Pure data movement: works for every dtype. */
#ifndef ANVIL_RUNTIME_KERNELS_GATHER_H
#define ANVIL_RUNTIME_KERNELS_GATHER_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/kernels/kernel_api.h"

#ifndef AV_KMAX_RANK
#define AV_KMAX_RANK 16
#endif

typedef struct av_gather_params {
  int n_offset_dims;
  int n_collapsed_slice_dims;
  int n_operand_batching_dims;
  int n_start_indices_batching_dims;
  int n_start_index_map;
  int64_t offset_dims[AV_KMAX_RANK];
  int64_t collapsed_slice_dims[AV_KMAX_RANK];
  int64_t operand_batching_dims[AV_KMAX_RANK];
  int64_t start_indices_batching_dims[AV_KMAX_RANK];
  int64_t start_index_map[AV_KMAX_RANK];
  int64_t index_vector_dim;
  int64_t slice_sizes[AV_KMAX_RANK];  /* one per operand dimension */
  bool indices_are_sorted;            /* hint only */
  struct av_thread_pool *pool;        /* set per run: row gathers split over it; or NULL */
} av_gather_params;

av_code av_kernel_gather(const av_gather_params *p, const av_view *operand,
                         const av_view *start_indices, av_view *out, av_diag *d);
/* The checks of av_kernel_gather on shapes alone, for the compiler: a program with bad
 * dimension numbers is refused when it is compiled, not when it runs. */
av_code av_gather_check(const av_gather_params *p, av_dtype dtype, int rank, const int64_t *dims,
                        av_dtype index_dtype, int index_rank, const int64_t *index_dims,
                        int out_rank, const int64_t *out_dims, av_diag *d);

#endif
