/* Tensor helpers for C tests that run programs below the PJRT layer (include after cmocka.h). */
#ifndef ANVIL_TESTS_TENSOR_UTIL_H
#define ANVIL_TESTS_TENSOR_UTIL_H

#include <string.h>

#include "runtime/tensor.h"

/* A row-major f32 tensor holding a copy of v (dims[0] x ... x dims[rank-1] values). */
static inline av_tensor f32_tensor(int rank, const int64_t *dims, const float *v) {
  av_tensor t;
  memset(&t, 0, sizeof t);
  t.dtype = AV_DT_F32;
  t.rank = rank;
  size_t n = 1;
  for (int k = 0; k < rank; k++) {
    t.dims[k] = dims[k];
    n *= (size_t)dims[k];
  }
  t.storage = av_storage_alloc(n * sizeof(float) + 1); /* +1: an empty tensor still has storage */
  assert_non_null(t.storage);
  if (n) memcpy(t.storage->data, v, n * sizeof(float));
  return t;
}

#endif
