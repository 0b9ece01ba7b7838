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
bool av_strides_are_dense(size_t elem, int rank, const int64_t *dims, const int64_t *strides);
/* Byte range [lo, hi) touched relative to the first element; false on overflow. */
bool av_strided_extent(size_t elem, int rank, const int64_t *dims, const int64_t *strides,
                       int64_t *lo, int64_t *hi);
void av_copy_strided(char *dst, const int64_t *dst_strides, const char *src,
                     const int64_t *src_strides, const int64_t *dims, int rank, size_t elem);

#endif
