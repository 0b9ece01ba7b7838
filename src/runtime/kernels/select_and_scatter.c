#include "runtime/kernels/select_and_scatter.h"

av_code av_kernel_select_and_scatter(const av_select_and_scatter_params *p, const av_view *operand, const av_view *source, const av_view *init_value, av_view *out, av_diag *d) {
  return av_diag_set(d, AV_UNIMPLEMENTED, "select_and_scatter: not implemented yet");
}

void av_select_and_scatter_params_init(av_select_and_scatter_params *p, int rank) {
  *p = (av_select_and_scatter_params){0};
  p->rank = rank;
  for (int i = 0; i < AV_KMAX_RANK; i++) p->window_dimensions[i] = p->window_strides[i] = 1;
}
