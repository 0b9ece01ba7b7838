#include "runtime/kernels/sort.h"

av_code av_kernel_sort(const av_sort_params *p, const av_view *inputs, av_view *outputs, av_diag *d) {
  return av_diag_set(d, AV_UNIMPLEMENTED, "sort: not implemented yet");
}
