/* Sharding rules: how the dimensions of an op's operands and results correspond, as factors
 * (Shardy's OpShardingRule). A factor is a sub-dimension shared by some of the op's tensors;
 * a dimension maps to one or more factors, major to minor (a reshape merging dims 2 x 4 into
 * 8 gives the result dimension factors (2, 4)). Propagation moves mesh axes along factors
 * (spmd_propagate.c); partitioning runs an op on local shards when its factors allow it
 * (spmd_partition*.c).
 *
 * Factor kinds, as in Shardy: pass-through (sharding it needs no communication), reduction
 * (contracted or reduced: sharding it leaves partial sums), need-replication (the op needs
 * the whole factor) and permutation (sharding it needs data moved between devices: slice,
 * pad, concatenate, reverse dimensions). A blocked factor never propagates. */
#ifndef ANVIL_COMPILER_SPMD_RULES_H
#define ANVIL_COMPILER_SPMD_RULES_H

#include <stdbool.h>
#include <stdint.h>

#include "compiler/sharding.h"
#include "ir/ir.h"

enum { AV_RULE_MAX_FACTORS = 64, AV_RULE_MAX_DIM_FACTORS = 8 };

typedef enum av_factor_kind {
  AV_FACTOR_PASS_THROUGH,
  AV_FACTOR_REDUCTION,
  AV_FACTOR_NEED_REPLICATION,
  AV_FACTOR_PERMUTATION,
} av_factor_kind;

typedef struct av_dim_factors {
  uint8_t n;
  uint8_t f[AV_RULE_MAX_DIM_FACTORS]; /* factor indices, major to minor */
} av_dim_factors;

typedef struct av_tensor_factors {
  int rank;
  av_dim_factors dims[AV_MAX_RANK];
} av_tensor_factors;

typedef struct av_factor_rule {
  int nfactors;
  int64_t size[AV_RULE_MAX_FACTORS];
  uint8_t kind[AV_RULE_MAX_FACTORS];
  bool blocked[AV_RULE_MAX_FACTORS];
  uint32_t nops, nres;
  av_tensor_factors *ops, *res; /* [nops], [nres] (malloc'd with the rule) */
} av_factor_rule;

/* The rule of `op`, or NULL when it has none (ops Shardy does not propagate through:
 * constants, iota, collectives of manual code, unknown custom calls, control flow, which
 * propagation handles as data-flow edges). Free with av_factor_rule_free. `rule_op` is the
 * op the rule describes; `ntensors` operands/results are taken from it. */
av_factor_rule *av_factor_rule_of(const av_op *op);
/* One factor per dimension shared by `nops` operands and `nres` results of type `t` (the
 * rule of data-flow edges and of func results). */
av_factor_rule *av_factor_rule_identity(const av_type *t, uint32_t nops, uint32_t nres);
void av_factor_rule_free(av_factor_rule *r);
/* The rule an op states in its sdy.sharding_rule attribute (text of #sdy.op_sharding_rule<...>,
 * checked against the op's operands and results); NULL with the reason in why[cap] when it
 * cannot be read. av_factor_rule_of uses it for custom calls with a custom partitioner
 * (compiler/custom_partitioner.h). */
av_factor_rule *av_factor_rule_from_sdy(const av_op *op, const char *text, char *why, size_t cap);
/* Whether Shardy counts `op` as elementwise (its propagation schedule and conflict order). */
bool av_spmd_is_elementwise(const av_op *op);

#endif
