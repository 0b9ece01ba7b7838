#include "runtime/kernels/fft.h"

av_code av_kernel_fft(const av_fft_params *p, const av_view *operand, av_view *out, av_diag *d) {
  return av_diag_set(d, AV_UNIMPLEMENTED, "fft: not implemented yet");
}
