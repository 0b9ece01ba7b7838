/* A static cost estimate of a program, for PJRT_Executable_GetCostAnalysis (JAX's
 * compiled.cost_analysis()): floating-point operations, transcendental evaluations and bytes
 * read + written by each op, summed over the entry function and everything it calls. Loop
 * bodies count once (trip counts are unknown at compile time), like XLA's own estimate. */
#ifndef ANVIL_COMPILER_COST_H
#define ANVIL_COMPILER_COST_H

#include "ir/ir.h"

typedef struct av_cost {
  double flops;
  double transcendentals;
  double bytes_accessed;
} av_cost;

av_cost av_module_cost(const av_module *m);
/* One op's own cost (a control-flow op's or call's body not included): what the profiler
 * shows for the step that runs it. */
av_cost av_op_cost(const av_op *op);

#endif
