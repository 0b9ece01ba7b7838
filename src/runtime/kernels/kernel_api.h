/* What every kernel sees: plain views of dense row-major arrays, and scalar functions for
 * region bodies (reduce bodies, sort comparators, scatter combiners). Kernels know nothing
 * about PJRT, and nothing about the IR beyond the opcode of a "simple" region body.
 *
 * Calling convention: a kernel is one C function per op (family), `av_code av_kernel_X(...)`
 * returning AV_OK or an error filled into the av_diag it is given; shapes were checked at
 * compile time, so kernels only assert cheap invariants. */
#ifndef ANVIL_RUNTIME_KERNELS_KERNEL_API_H
#define ANVIL_RUNTIME_KERNELS_KERNEL_API_H

#include <stdint.h>

#include "ir/dtype.h"
#include "ir/ir.h"
#include "util/diag.h"

/* A dense row-major array in anvil storage format (ir/dtype.h). */
typedef struct av_view {
  void *data;
  av_dtype dtype;
  int rank;
  const int64_t *dims;
} av_view;

/* A region body reduced to a scalar function: `in` holds n_in pointers to one element each
 * (in the order of the region's block arguments), `out` n_out pointers to write results to.
 * `simple` is the opcode when the body is just `return op(arg0, arg1)` for a binary op on
 * its two arguments (AV_OP_ADD, AV_OP_MULTIPLY, AV_OP_MAXIMUM, AV_OP_MINIMUM, AV_OP_AND,
 * AV_OP_OR, AV_OP_XOR), or a comparison `compare(arg0, arg1)` (AV_OP_COMPARE with `direction`
 * "LT"/"GT"... and `compare_type`), so kernels can take a vectorised fast path; otherwise
 * AV_OP_UNKNOWN and `call` must be used. `call` is always valid. */
typedef struct av_scalar_fn {
  av_code (*call)(void *ctx, const void *const *in, void *const *out, av_diag *d);
  void *ctx;
  av_opcode simple;
  const char *direction;    /* for simple == AV_OP_COMPARE */
  const char *compare_type; /* "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED" or NULL */
} av_scalar_fn;

int64_t av_view_num_elements(const av_view *v);

#endif
