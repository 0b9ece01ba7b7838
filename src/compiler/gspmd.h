/* GSPMD-form multi-device programs (jax 0.4.35 to 0.6.x, before Shardy) rewritten into the
 * Shardy form the rest of the compiler understands.
 *
 * Those JAX releases mark shardings with `mhlo.sharding` strings in XLA's HloSharding syntax
 * ("{devices=[4,1]<=[4]}", "{replicated}", "{devices=[1,2,2]<=[2,2]T(1,0)
 * last_tile_dim_replicate}") and lower shard_map to
 *     custom_call @Sharding(x) {mhlo.sharding = S_in} -> @SPMDFullToShardShape {manual}
 *     -> func.call @shmap_body -> @Sharding {manual} -> @SPMDShardToFullShape {mhlo.sharding = S_out}
 * av_gspmd_import turns
 *   - `mhlo.sharding` on main's arguments and results into `sdy.sharding` attributes, each with
 *     an inline mesh of the sharding's own tile assignment (exact for any device order);
 *   - each such shard_map chain into an sdy.manual_computation over a mesh (an sdy.mesh op it
 *     adds) whose axes are the prime factors of the device count, in the order that expresses
 *     every sharding of the computation, all of them manual;
 *   - the other @Sharding calls: with_sharding_constraint's (a tiled or replicated sharding)
 *     into sdy.sharding_constraint on the sharding's own inline mesh, shard_alike's
 *     ("{unknown shard_as N}", "shard_like N") into sdy.sharding_group N on the call's operand.
 * Anything else GSPMD-specific (maximal or partially manual shardings, tuple shardings, a chain
 * of another shape) is reported UNIMPLEMENTED with the sharding it met. Programs without
 * `mhlo.sharding` are left as they are. */
#ifndef ANVIL_COMPILER_GSPMD_H
#define ANVIL_COMPILER_GSPMD_H

#include "ir/ir.h"
#include "util/diag.h"

av_code av_gspmd_import(av_module *m, int num_partitions, av_diag *d);

#endif
