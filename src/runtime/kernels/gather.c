#include "runtime/kernels/gather.h"

av_code av_kernel_gather(const av_gather_params *p, const av_view *operand, const av_view *start_indices, av_view *out, av_diag *d) {
  return av_diag_set(d, AV_UNIMPLEMENTED, "gather: not implemented yet");
}
