/* Shardy's sharding groups (sdy.sharding_group, what jax.experimental.shard_alike lowers to):
 * the values of one group end propagation with one sharding. As Shardy's import does, groups
 * that share a value become one group, and a group must keep to one shape and to one
 * sdy.manual_computation (or none). Propagation (spmd_propagate.c) joins each group's values
 * by an identity edge; the partitioner then drops the ops. */
#ifndef ANVIL_COMPILER_SPMD_GROUPS_H
#define ANVIL_COMPILER_SPMD_GROUPS_H

#include <stdint.h>

#include "ir/ir.h"
#include "util/diag.h"

typedef struct av_sharding_group {
  const av_value **members; /* distinct values, calloc'd (ownership may be taken: set NULL) */
  uint32_t n;
  const av_op *op; /* the first sdy.sharding_group op of the group */
} av_sharding_group;

/* The merged groups of `f`'s body (nested regions included) with two or more values each.
 * `nvalues` bounds the value ids. Free with av_sharding_groups_free. */
av_code av_sharding_groups_collect(const av_func *f, uint32_t nvalues, av_sharding_group **out,
                                   uint32_t *n, av_diag *d);
void av_sharding_groups_free(av_sharding_group *g, uint32_t n);

#endif
