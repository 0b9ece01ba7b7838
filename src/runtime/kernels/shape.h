/* Data movement kernels: one strided box copy serves broadcast_in_dim, transpose, slice,
 * reverse, concatenate, pad, dynamic_slice and dynamic_update_slice (the compiler turns each
 * op's attributes into strides and offsets once). */
#ifndef ANVIL_RUNTIME_KERNELS_SHAPE_H
#define ANVIL_RUNTIME_KERNELS_SHAPE_H

#include <stddef.h>
#include <stdint.h>

enum { AV_BOX_MAX_RANK = 16 };

/* Copies a box of `dims` elements of `esize` bytes: element (i0..ir) goes from
 * src + sum(i_k * sstride_k) to dst + sum(i_k * dstride_k) (strides in elements, may be 0
 * for src, or negative). */
typedef struct av_box {
  int rank;
  int64_t dims[AV_BOX_MAX_RANK];
  int64_t sstride[AV_BOX_MAX_RANK];
  int64_t dstride[AV_BOX_MAX_RANK];
} av_box;

void av_box_copy(const av_box *b, const void *src, void *dst, size_t esize);

/* Fills n elements of `esize` bytes with copies of `value`. */
void av_fill(void *dst, int64_t n, const void *value, size_t esize);

/* Row-major strides (in elements) of a shape. */
void av_row_major_strides(int rank, const int64_t *dims, int64_t *strides);

#endif
