#include "runtime/kernels/reduce_window.h"

av_code av_kernel_reduce_window(const av_reduce_window_params *p, const av_view *inputs, const av_view *inits, av_view *outputs, av_diag *d) {
  return av_diag_set(d, AV_UNIMPLEMENTED, "reduce_window: not implemented yet");
}

void av_reduce_window_params_init(av_reduce_window_params *p, int rank) {
  *p = (av_reduce_window_params){0};
  p->rank = rank;
  for (int i = 0; i < AV_KMAX_RANK; i++)
    p->window_dimensions[i] = p->window_strides[i] = p->base_dilations[i] = p->window_dilations[i] = 1;
}
