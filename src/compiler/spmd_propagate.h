/* Sharding propagation with Shardy's semantics: from the shardings a program states (main's
 * sdy.sharding argument/result attributes, sdy.sharding_constraint, sdy.reshard,
 * sdy.manual_computation in/out shardings) to a sharding for every tensor value of main
 * (outside manual computations) and for main's results, as XLA's Shardy pipeline computes
 * them: op-priority propagation (elementwise/reshape/transpose first, then the rest) with the
 * aggressive factor strategy (conflicts resolved towards the larger tensor), factors from
 * compiler/spmd_rules.c, while/case/optimization_barrier as data-flow edges, and main's
 * argument/result shardings made evenly divisible and closed at the end.
 *
 * The module is prepared first (spmd_prepare.c): calls inlined and constant expressions
 * split per use, as Shardy's import does, so value ids refer to the prepared module. */
#ifndef ANVIL_COMPILER_SPMD_PROPAGATE_H
#define ANVIL_COMPILER_SPMD_PROPAGATE_H

#include <stdbool.h>
#include <stdio.h>

#include "compiler/sharding.h"
#include "ir/ir.h"
#include "util/arena.h"
#include "util/diag.h"

typedef struct av_spmd_shardings {
  av_arena arena;
  av_mesh_table meshes;
  const av_mesh *mesh;   /* the mesh main's shardings use; NULL: nothing is sharded */
  uint32_t nvalues;
  const av_sharding **of; /* [nvalues] by value id; NULL: no sharding (replicated) */
  uint32_t nargs, nres;
  av_sharding *args, *res; /* main's argument and result shardings as compiled */
} av_spmd_shardings;

/* Prepares `m` (in place) and propagates. `out` is initialised here; free it with
 * av_spmd_shardings_free (also after a failure). Custom-partitioned calls
 * (compiler/custom_partitioner.h) propagate through their sdy.sharding_rule; without one,
 * when `infer_custom`, their partitioner's infer_sharding_from_operands gives their results'
 * shardings (JAX gives that callback instead of a rule when Shardy is off). */
av_code av_spmd_propagate(av_module *m, bool infer_custom, av_spmd_shardings *out, av_diag *d);
void av_spmd_shardings_free(av_spmd_shardings *s);

/* The mesh axes one factor of an op is sharded along, major to minor. */
typedef struct av_factor_axes {
  uint8_t n;
  av_axis_ref a[AV_DIM_MAX_AXES];
} av_factor_axes;

struct av_factor_rule;
/* Projects the sharding `s` of tensor `t` of rule `r` (operands first, then results) onto
 * its factors: per_factor[f] for the factors the tensor has (others left empty). False when a
 * dimension's axes do not split along its factors (Shardy's overflow axes). */
bool av_spmd_project(const struct av_factor_rule *r, uint32_t t, const av_mesh *m,
                     const av_sharding *s, av_factor_axes *per_factor, bool *present);
/* The sharding of tensor `t` of `r` when its factors are sharded along per_factor; false when
 * some factor's axes cannot appear in it (an earlier factor of its dimension is only partly
 * sharded). */
bool av_spmd_unproject(const struct av_factor_rule *r, uint32_t t, const av_mesh *m,
                       const av_factor_axes *per_factor, av_sharding *out);

/* Prints every value's sharding (anvil-check --shardings). */
void av_spmd_shardings_print(FILE *f, const av_module *m, const av_spmd_shardings *s);

/* Inlines every func.call reachable from main and splits constant expressions per use
 * (Shardy's import: every user gets its own copy to shard as it needs). */
av_code av_spmd_prepare(av_module *m, av_diag *d);

/* Parses a sharding attribute's text for a value of `rank` (tables meshes in `s`), dropping
 * axes of size 1; NULL (and a message in d) when it cannot be read. */
av_sharding *av_spmd_parse_sharding(av_spmd_shardings *s, const char *text, int rank, av_diag *d);

#endif
