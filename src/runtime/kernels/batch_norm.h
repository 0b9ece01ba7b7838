/* stablehlo.batch_norm_inference / _training / _grad on f32 and f64 (computed in double),
 * feature dimension `feature_index`. Training uses the biased (population) variance. */
#ifndef ANVIL_RUNTIME_KERNELS_BATCH_NORM_H
#define ANVIL_RUNTIME_KERNELS_BATCH_NORM_H

#include "runtime/kernels/kernel_api.h"

typedef enum av_batch_norm_kind {
  AV_BN_INFERENCE, /* in: x, scale, offset, mean, variance; out: y */
  AV_BN_TRAINING,  /* in: x, scale, offset; out: y, batch_mean, batch_var */
  AV_BN_GRAD,      /* in: x, scale, mean, variance, grad_y; out: grad_x, grad_scale, grad_offset */
} av_batch_norm_kind;

typedef struct av_batch_norm_params {
  av_batch_norm_kind kind;
  double epsilon;
  int64_t feature_index;
} av_batch_norm_params;

av_code av_kernel_batch_norm(const av_batch_norm_params *p, const av_view *in, av_view *out,
                             av_diag *d);

#endif
