/* Rewrites before lowering that spare a materialised intermediate (fold.c, fold_slices.c). */
#ifndef ANVIL_COMPILER_FOLD_H
#define ANVIL_COMPILER_FOLD_H

#include "ir/ir.h"

/* Rewrites m in place: a reduce_window reading a pad by its init value (with no base
 * dilation of its own) reads the pad's operand instead, the pad turned into its padding and
 * base dilation; a [1, 0] transpose of a batch-free dot_general used only there becomes the
 * dot_general of the swapped operands. Ops it cannot read are left alone for the lowering to
 * report. */
void av_fold_module(av_module *m);
/* Rewrites m in place: slices moved through concatenates, scalar broadcasts and elementwise
 * ops toward what they read (fold_slices.c). Called by av_fold_module. */
void av_fold_slices(av_module *m);

#endif
