/* stablehlo.convolution: every dimension-number layout, window strides, padding (negative
 * allowed), lhs (base) and rhs (window) dilation, window reversal, feature_group_count and
 * batch_group_count. f32 and bf16 convolutions that map onto a oneDNN primitive run there
 * (conv_dnnl.h);
 * everything else goes through im2col + GEMM in a compute type: f32 (f32 and
 * narrower floats), f64, c64, c128 (BLAS GEMM, or a sequential loop for small products, as in
 * dot.h) or wrapping 64-bit integers (pred: or-of-ands). */
#ifndef ANVIL_RUNTIME_KERNELS_CONV_H
#define ANVIL_RUNTIME_KERNELS_CONV_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/kernels/kernel_api.h"

#ifndef AV_KMAX_RANK
#define AV_KMAX_RANK 16
#endif

typedef struct av_conv_params {
  int nspatial;                                   /* rank - 2 */
  int64_t input_batch_dimension;
  int64_t input_feature_dimension;
  int64_t input_spatial_dimensions[AV_KMAX_RANK];
  int64_t kernel_input_feature_dimension;
  int64_t kernel_output_feature_dimension;
  int64_t kernel_spatial_dimensions[AV_KMAX_RANK];
  int64_t output_batch_dimension;
  int64_t output_feature_dimension;
  int64_t output_spatial_dimensions[AV_KMAX_RANK];
  /* Per spatial dimension, in the order of the *_spatial_dimensions lists.
   * Callers fill the defaults when the attribute is absent: strides 1, padding 0,
   * dilations 1, reversal false. */
  int64_t window_strides[AV_KMAX_RANK];
  int64_t padding_lo[AV_KMAX_RANK];               /* padding[i][0] */
  int64_t padding_hi[AV_KMAX_RANK];               /* padding[i][1] */
  int64_t lhs_dilation[AV_KMAX_RANK];
  int64_t rhs_dilation[AV_KMAX_RANK];
  bool window_reversal[AV_KMAX_RANK];
  int64_t feature_group_count;                    /* >= 1 */
  int64_t batch_group_count;                      /* >= 1 */
  struct av_thread_pool *pool; /* set per run: patch gathering and GEMM rows split over it */
  int blas_share;              /* set per run: av_frame.blas_share */
  /* set by the compiler when oneDNN runs this convolution (conv_dnnl.h); NULL: im2col */
  struct av_conv_dnnl *dnnl;
} av_conv_params;

/* Fills the defaults above (strides/dilations 1, padding 0, no reversal, group counts 1). */
void av_conv_params_init(av_conv_params *p);

av_code av_kernel_convolution(const av_conv_params *p, const av_view *lhs, const av_view *rhs,
                              av_view *out, av_diag *d);

#endif
