/* chlo.top_k: the k largest elements along the last dimension, in descending order, with
 * their indices (ties keep the lower index first; floats in total order, so NaN sorts above
 * +Inf). */
#ifndef ANVIL_RUNTIME_KERNELS_TOP_K_H
#define ANVIL_RUNTIME_KERNELS_TOP_K_H

#include <stdint.h>

#include "runtime/kernels/kernel_api.h"

av_code av_kernel_top_k(int64_t k, const av_view *operand, av_view *values, av_view *indices,
                        av_diag *d);

#endif
