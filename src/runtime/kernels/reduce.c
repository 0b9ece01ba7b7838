#include "runtime/kernels/reduce.h"

av_code av_kernel_reduce(const av_reduce_params *p, const av_view *inputs, const av_view *inits, av_view *outputs, av_diag *d) {
  return av_diag_set(d, AV_UNIMPLEMENTED, "reduce: not implemented yet");
}
