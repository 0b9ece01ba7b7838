#include "runtime/kernels/linalg.h"

av_code av_kernel_cholesky(const av_cholesky_params *p, const av_view *a, av_view *out, av_diag *d) {
  return av_diag_set(d, AV_UNIMPLEMENTED, "cholesky: not implemented yet");
}

av_code av_kernel_triangular_solve(const av_triangular_solve_params *p, const av_view *a,
                                   const av_view *b, av_view *out, av_diag *d) {
  return av_diag_set(d, AV_UNIMPLEMENTED, "triangular_solve: not implemented yet");
}
