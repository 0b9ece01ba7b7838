/* Steps that call the heavy kernels (src/runtime/kernels/<family>.c) with array views, and
 * region bodies turned into av_scalar_fn. */
#ifndef ANVIL_RUNTIME_STEPS_KERNELS_H
#define ANVIL_RUNTIME_STEPS_KERNELS_H

#include "runtime/kernels/batch_norm.h"
#include "runtime/kernels/conv.h"
#include "runtime/kernels/dot.h"
#include "runtime/kernels/fft.h"
#include "runtime/kernels/gather.h"
#include "runtime/kernels/householder.h"
#include "runtime/kernels/linalg.h"
#include "runtime/kernels/reduce.h"
#include "runtime/kernels/reduce_window.h"
#include "runtime/kernels/rng.h"
#include "runtime/kernels/scatter.h"
#include "runtime/kernels/select_and_scatter.h"
#include "runtime/kernels/sort.h"
#include "runtime/kernels/top_k.h"
#include "runtime/plan.h"
#include "runtime/scalar_prog.h"

typedef enum av_kernel_kind {
  AV_K_REDUCE,
  AV_K_REDUCE_WINDOW,
  AV_K_SELECT_AND_SCATTER,
  AV_K_DOT,
  AV_K_CONV,
  AV_K_GATHER,
  AV_K_SCATTER,
  AV_K_SORT,
  AV_K_FFT,
  AV_K_CHOLESKY,
  AV_K_TRIANGULAR_SOLVE,
  AV_K_RNG_BIT_GENERATOR,
  AV_K_RNG,
  AV_K_TOP_K,
  AV_K_BATCH_NORM,
  AV_K_QR,                /* custom_call @Qr */
  AV_K_HOUSEHOLDER_PRODUCT, /* custom_call @ProductOfElementaryHouseholderReflectors */
  AV_K_MAP, /* stablehlo.map: the region applied element by element */
} av_kernel_kind;

typedef struct av_kernel_params {
  av_kernel_kind kind;
  union {
    av_reduce_params reduce;
    av_reduce_window_params reduce_window;
    av_select_and_scatter_params sas;
    av_dot_params dot;
    av_conv_params conv;
    av_gather_params gather;
    av_scatter_params scatter;
    av_sort_params sort;
    av_fft_params fft;
    av_cholesky_params cholesky;
    av_triangular_solve_params tsolve;
    av_rng_bit_generator_params rbg;
    av_rng_params rng;
    av_scalar_fn map;
    int64_t top_k;
    av_batch_norm_params batch_norm;
  } u;
  /* region bodies (up to two), and where their av_scalar_fn lives inside `u` */
  const av_block_plan *regions[2];
  const av_scalar_prog *progs[2]; /* fast form of the regions, when they qualify */
  int nregions;
} av_kernel_params;

av_code av_step_kernel(const av_step *s, av_frame *f, av_diag *d);

/* The av_scalar_fn `call` of region bodies: ctx is an av_region_ctx. */
typedef struct av_region_ctx {
  av_frame *f;
  const av_block_plan *block;
  const av_scalar_prog *prog; /* used instead of `block` when set */
} av_region_ctx;
av_code av_region_scalar_call(void *ctx, const void *const *in, void *const *out, av_diag *d);

#endif
