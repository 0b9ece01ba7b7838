/* stablehlo.dot_general (and dot, which the engine maps to dot_general with one contracting
 * dimension and no batch dimensions).
 *
 * Result layout (StableHLO): batch dims (in lhs_batch order), then the lhs free dims in
 * order, then the rhs free dims in order. The result dtype is the output view's dtype
 * (preferred_element_type semantics): inputs are converted to it, then multiplied and
 * accumulated; floats narrower than f32 accumulate in f32, integers wrap in the result type,
 * pred is or-of-ands. Small products (M*N*K <= 65536) sum each element sequentially in the
 * result precision (XLA's order, so results match its bit for bit); larger f32/f64/c64/c128
 * products go to GEMM (operands already in a GEMM layout are not copied): f32 to oneDNN's
 * single-threaded sgemm on fixed tiles of the result that anvil's pool shares out (when
 * dnnl_gemm; results then depend on the shapes only, never on the thread count), the rest to
 * OpenBLAS. */
#ifndef ANVIL_RUNTIME_KERNELS_DOT_H
#define ANVIL_RUNTIME_KERNELS_DOT_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/kernels/kernel_api.h"

#ifndef AV_KMAX_RANK
#define AV_KMAX_RANK 16
#endif

typedef struct av_dot_params {
  int nbatch;                             /* entries of lhs_batch / rhs_batch */
  int ncontract;                          /* entries of lhs_contract / rhs_contract */
  int64_t lhs_batch[AV_KMAX_RANK];        /* lhs_batching_dimensions */
  int64_t rhs_batch[AV_KMAX_RANK];        /* rhs_batching_dimensions */
  int64_t lhs_contract[AV_KMAX_RANK];     /* lhs_contracting_dimensions */
  int64_t rhs_contract[AV_KMAX_RANK];     /* rhs_contracting_dimensions */
  bool dnnl_gemm;               /* f32 GEMMs on oneDNN's sgemm in tiles (else OpenBLAS) */
  struct av_thread_pool *pool;  /* set per run: the tiles are split over it; NULL: serial */
} av_dot_params;

av_code av_kernel_dot_general(const av_dot_params *p, const av_view *lhs, const av_view *rhs,
                              av_view *out, av_diag *d);

#endif
