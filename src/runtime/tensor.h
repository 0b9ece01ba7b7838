/* A dense tensor as the runtime hands it over: the PJRT layer's buffers going into and coming
 * out of an execution (compiler/program.h) and the per-device shards of a sharded program
 * (runtime/spmd.h). */
#ifndef ANVIL_RUNTIME_TENSOR_H
#define ANVIL_RUNTIME_TENSOR_H

#include <stdint.h>

#include "ir/dtype.h"
#include "util/storage.h"

enum { AV_MAX_RANK = 16 };

/* A dense row-major tensor in anvil storage format (see ir/dtype.h). */
typedef struct av_tensor {
  av_storage *storage; /* one reference owned by whoever holds the av_tensor */
  av_dtype dtype;
  int rank;
  int64_t dims[AV_MAX_RANK];
} av_tensor;

#endif
