/* Multi-device lowering entry points (sharding_lower.c, sharding_program.c). */
#ifndef ANVIL_COMPILER_SHARDING_LOWER_H
#define ANVIL_COMPILER_SHARDING_LOWER_H

#include <stdbool.h>

#include "compiler/sharding.h"
#include "compiler/spmd_propagate.h"
#include "runtime/plan.h"
#include "runtime/spmd.h"

struct av_lower;

/* sdy.manual_computation whose manual axes span more than one device: lowers it to a step
 * that runs the region on every device in parallel. *handled stays false when the op is not
 * such a computation (the single-device lowering then applies). */
bool av_lower_spmd_manual(struct av_lower *c, const av_op *op, bool *handled);

/* Whether main's sdy.sharding attributes agree with the in/out shardings of the one manual
 * computation `mc` it wraps (arguments/results without one count as agreeing). */
bool av_manual_entry_shardings_match(const av_module *m, const av_func *fn, const av_op *mc);

/* The per-device view of a program compiled for num_replicas * num_partitions devices: the
 * shardings of main's arguments/results (as propagated, `ps`; for a main that only wraps
 * one manual computation, that computation's in/out shardings), their serialized OpShardings,
 * and whether the program must run once for all devices (partitions > 1, neither the wrapper
 * form nor `partitioned`: main already is the per-device program, spmd_partition.h). *out is NULL for single-device programs. */
av_code av_spmd_program_build(const av_module *m, const av_plan *plan, int num_replicas,
                              int num_partitions, const av_spmd_shardings *ps, bool partitioned,
                              av_spmd_program **out, av_diag *d);

#endif
