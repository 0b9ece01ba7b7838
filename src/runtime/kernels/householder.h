/* The QR custom calls JAX emits on platforms without LAPACK bindings (XLA expands them
 * itself): @Qr computes a Householder QR in LAPACK geqrf form (R on and above the diagonal,
 * the reflectors' vectors below it with an implicit leading 1, and their scales `taus`), and
 * @ProductOfElementaryHouseholderReflectors forms Q = H_0 H_1 ... H_{k-1} (orgqr).
 * Real f32/f64 matrices, batched over leading dimensions; computed in double. */
#ifndef ANVIL_RUNTIME_KERNELS_HOUSEHOLDER_H
#define ANVIL_RUNTIME_KERNELS_HOUSEHOLDER_H

#include "runtime/kernels/kernel_api.h"

av_code av_kernel_qr(const av_view *a, av_view *out, av_view *taus, av_diag *d);
av_code av_kernel_householder_product(const av_view *a, const av_view *taus, av_view *out,
                                      av_diag *d);

#endif
