/* Rewrites of a partitioned program's all-reduces (all_reduce_opt.c): fewer meetings of the
 * devices per run, and no copy pass after one. */
#ifndef ANVIL_COMPILER_ALL_REDUCE_OPT_H
#define ANVIL_COMPILER_ALL_REDUCE_OPT_H

#include "ir/ir.h"

/* Rewrites the entry function's top-level block of `m` in place:
 *  - transpose(all_reduce(x)), the all-reduce used only there, becomes
 *    all_reduce(transpose(x)) (a sum commutes with moving elements), so that the transpose
 *    can fold into the op computing x (compiler/fold.h) instead of copying the reduced array;
 *  - independent all-reduces with the same groups, channel kind and reduction (one binary
 *    op, one element type) become one all-reduce of all their operands, placed after the
 *    last of their operands; the ops that depend on their results move after it.
 * Ops it does not understand stop a rewrite, never the program. Returns how many all-reduces
 * were merged away. */
int av_optimize_all_reduces(av_module *m);

#endif
