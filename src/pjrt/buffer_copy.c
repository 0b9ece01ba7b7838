/* Strided copies between host memory and dense row-major anvil storage, and the shape /
 * stride arithmetic they need (all overflow-checked: sizes come from the framework). */
#include <string.h>

#include "pjrt/buffer_copy.h"

bool av_shape_bytes(av_dtype dt, int rank, const int64_t *dims, size_t *out) {
  size_t n = av_dtype_size(dt);
  if (n == 0) return false;
  for (int i = 0; i < rank; i++) {
    if (dims[i] < 0) return false;
    size_t d = (size_t)dims[i];
    if (d != 0 && n > SIZE_MAX / d) return false;
    n *= d;
  }
  *out = n;
  return true;
}

void av_dense_strides(size_t elem, int rank, const int64_t *dims, int64_t *strides) {
  int64_t s = (int64_t)elem;
  for (int i = rank - 1; i >= 0; i--) {
    strides[i] = s;
    s *= dims[i] > 0 ? dims[i] : 1;
  }
}

void av_layout_strides(size_t elem, int rank, const int64_t *dims, const int64_t *minor_to_major,
                       int64_t *strides) {
  int64_t s = (int64_t)elem;
  for (int k = 0; k < rank; k++) {
    int64_t d = minor_to_major[k];
    strides[d] = s;
    s *= dims[d] > 0 ? dims[d] : 1;
  }
}

bool av_layout_is_default(int rank, const int64_t *minor_to_major) {
  for (int k = 0; k < rank; k++)
    if (minor_to_major[k] != rank - 1 - k) return false;
  return true;
}

bool av_strides_are_dense(size_t elem, int rank, const int64_t *dims, const int64_t *strides) {
  int64_t dense[AV_MAX_RANK];
  av_dense_strides(elem, rank, dims, dense);
  for (int i = 0; i < rank; i++)
    if (dims[i] > 1 && strides[i] != dense[i]) return false;
  return true;
}

bool av_strided_extent(size_t elem, int rank, const int64_t *dims, const int64_t *strides,
                       int64_t *lo, int64_t *hi) {
  int64_t l = 0, h = 0;
  for (int i = 0; i < rank; i++) {
    if (dims[i] == 0) { /* nothing is read */
      *lo = 0;
      *hi = 0;
      return true;
    }
  }
  for (int i = 0; i < rank; i++) {
    int64_t span;
    if (__builtin_mul_overflow(dims[i] - 1, strides[i], &span)) return false;
    if (span < 0) {
      if (__builtin_add_overflow(l, span, &l)) return false;
    } else {
      if (__builtin_add_overflow(h, span, &h)) return false;
    }
  }
  if (__builtin_add_overflow(h, (int64_t)elem, &h)) return false;
  *lo = l;
  *hi = h;
  return true;
}

/* Copies every element from src (strides ss) to dst (strides ds); inner dimension by memcpy
 * when both sides are contiguous there. */
void av_copy_strided(char *dst, const int64_t *ds, const char *src, const int64_t *ss,
                     const int64_t *dims, int rank, size_t elem) {
  for (int i = 0; i < rank; i++)
    if (dims[i] == 0) return;
  if (rank == 0) {
    memcpy(dst, src, elem);
    return;
  }
  int64_t idx[AV_MAX_RANK] = {0};
  int inner = rank - 1;
  bool inner_contig = ds[inner] == (int64_t)elem && ss[inner] == (int64_t)elem;
  for (;;) {
    int64_t doff = 0, soff = 0;
    for (int i = 0; i < inner; i++) {
      doff += idx[i] * ds[i];
      soff += idx[i] * ss[i];
    }
    if (inner_contig) {
      memcpy(dst + doff, src + soff, (size_t)dims[inner] * elem);
    } else {
      for (int64_t j = 0; j < dims[inner]; j++)
        memcpy(dst + doff + j * ds[inner], src + soff + j * ss[inner], elem);
    }
    int d = inner - 1;
    while (d >= 0 && ++idx[d] == dims[d]) idx[d--] = 0;
    if (d < 0) break;
  }
}
