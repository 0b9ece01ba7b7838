/* Lowering of the ops whose kernels live in src/runtime/kernels/<family>.c (reduce, dot,
 * convolution, gather/scatter, sort...). Each family is wired in as its kernel lands. */
#include "compiler/lower_internal.h"

bool av_lower_kernel_op(av_lower *c, const av_op *op, bool *handled) {
  (void)c;
  (void)op;
  *handled = false;
  return false;
}
