#include "runtime/kernels/rng.h"

av_code av_kernel_rng_bit_generator(const av_rng_bit_generator_params *p, const av_view *initial_state, av_view *output_state, av_view *out, av_diag *d) {
  return av_diag_set(d, AV_UNIMPLEMENTED, "rng_bit_generator: not implemented yet");
}

av_code av_kernel_rng(const av_rng_params *p, const av_view *a, const av_view *b, av_view *out,
                      av_diag *d) {
  return av_diag_set(d, AV_UNIMPLEMENTED, "rng: not implemented yet");
}
