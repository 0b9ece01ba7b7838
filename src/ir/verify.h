/* IR verifier: checks the structure of a module and basic per-op type rules, reporting
 * every problem found (not just the first) into the diagnostic, each with the function,
 * the op and its source location.
 *
 * Structure: values defined before use (block arguments of enclosing blocks, results of
 * earlier ops; nothing from other functions or from sibling regions), valid value ids,
 * entry block arguments matching the function type, terminators (func.return matching the
 * function results; stablehlo.return closing StableHLO op regions), func.call callees and
 * signatures. Per-op: operand/result/region counts and basic type rules for the common
 * ops (elementwise, compare, select, clamp, constant, convert, broadcast_in_dim, reshape,
 * transpose, iota, concatenate, slice, dot_general, reduce, while, ...). Ops anvil does not
 * know are only checked structurally. */
#ifndef ANVIL_IR_VERIFY_H
#define ANVIL_IR_VERIFY_H

#include "ir/ir.h"
#include "util/diag.h"

/* AV_OK, or AV_INVALID_ARGUMENT with every problem listed in `d`. */
av_code av_module_verify(const av_module *m, av_diag *d);

#endif
