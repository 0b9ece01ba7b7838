#include "runtime/kernels/scatter.h"

av_code av_kernel_scatter(const av_scatter_params *p, const av_view *inputs, const av_view *scatter_indices, const av_view *updates, av_view *outputs, av_diag *d) {
  return av_diag_set(d, AV_UNIMPLEMENTED, "scatter: not implemented yet");
}
