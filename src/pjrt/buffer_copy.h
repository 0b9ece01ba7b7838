/* Shape and strided-copy helpers for host <-> buffer transfers. */
#ifndef ANVIL_PJRT_BUFFER_COPY_H
#define ANVIL_PJRT_BUFFER_COPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compiler/program.h"
#include "ir/dtype.h"

/* Bytes of a dense array; false on negative dims, invalid dtype or overflow. */
bool av_shape_bytes(av_dtype dt, int rank, const int64_t *dims, size_t *out);
/* Row-major byte strides of a dense array. */
void av_dense_strides(size_t elem, int rank, const int64_t *dims, int64_t *strides);
/* Byte strides of a dense array stored in the layout minor_to_major (a permutation). */
void av_layout_strides(size_t elem, int rank, const int64_t *dims, const int64_t *minor_to_major,
                       int64_t *strides);
/* minor_to_major is the default row-major {rank-1, ..., 0}. */
bool av_layout_is_default(int rank, const int64_t *minor_to_major);
bool av_strides_are_dense(size_t elem, int rank, const int64_t *dims, const int64_t *strides);
/* Byte range [lo, hi) touched relative to the first element; false on overflow. */
bool av_strided_extent(size_t elem, int rank, const int64_t *dims, const int64_t *strides,
                       int64_t *lo, int64_t *hi);
void av_copy_strided(char *dst, const int64_t *dst_strides, const char *src,
                     const int64_t *src_strides, const int64_t *dims, int rank, size_t elem);

#endif
