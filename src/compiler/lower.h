/* Lowering the IR to an execution plan (runtime/plan.h).
 *
 * Walks the entry function and everything it calls, checks every op and type on the way
 * (collecting all problems into the diag, not just the first), removes dead code, decodes
 * attributes once, materialises constants, and computes slot liveness so the executor can
 * free each value right after its last use. */
#ifndef ANVIL_COMPILER_LOWER_H
#define ANVIL_COMPILER_LOWER_H

#include "ir/ir.h"
#include "runtime/plan.h"

/* NULL on failure, with every problem found in `d`. */
av_plan *av_lower_module(const av_module *m, av_diag *d);
void av_plan_free(av_plan *p);

#endif
