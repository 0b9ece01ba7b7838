#include "runtime/kernels/conv.h"

av_code av_kernel_convolution(const av_conv_params *p, const av_view *lhs, const av_view *rhs, av_view *out, av_diag *d) {
  return av_diag_set(d, AV_UNIMPLEMENTED, "convolution: not implemented yet");
}

void av_conv_params_init(av_conv_params *p) {
  *p = (av_conv_params){0};
  for (int i = 0; i < AV_KMAX_RANK; i++) p->window_strides[i] = p->lhs_dilation[i] = p->rhs_dilation[i] = 1;
  p->feature_group_count = p->batch_group_count = 1;
}
