/* Where gather's slices and scatter's windows start in the operand: one offset per position
 * of the index array's batch dims (all its dims but index_vector_dim, row-major). */
#ifndef ANVIL_RUNTIME_KERNELS_WINDOW_STARTS_H
#define ANVIL_RUNTIME_KERNELS_WINDOW_STARTS_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/kernels/kernel_api.h"

#ifndef AV_KMAX_RANK
#define AV_KMAX_RANK 16
#endif

typedef struct av_window_starts {
  const void *indices; /* the start indices: integers of `dtype`, `rank` dims */
  av_dtype dtype;
  int rank;
  const int64_t *dims;
  int64_t index_vector_dim; /* rank: an implicit vector of one entry */
  int nmap;
  const int64_t *map; /* the operand dim each index vector entry names */
  const int64_t *hi;  /* per entry: the largest start whose window fits */
  int orank;
  const int64_t *ostr; /* operand row-major strides */
  const int *bpos;     /* per operand dim: the batch dim of its batching coordinate, or -1 */
  bool drop;           /* an index outside [0, hi]: false clamps it (gather), true makes the
                          position's start -1 (scatter: its window is skipped) */
} av_window_starts;

/* base[p] = sum over entries j of index_j(p) * ostr[map[j]] + sum over batching dims of the
 * position's coordinate * that dim's stride; the positions run as an odometer whose offsets
 * move by one stride per dim, the innermost dim as a tight loop (one s32 index per position,
 * x[arange(n), i], has its own). Map entries must name distinct dims. */
void av_window_starts_fill(const av_window_starts *w, int64_t *base);

#endif
