/* Shared by the partitioner's files: the rewrite state, IR emission (spmd_emit.c), resharding
 * (spmd_reshard.c) and the per-op rules (spmd_partition_ops.c). */
#ifndef ANVIL_COMPILER_SPMD_PART_INTERNAL_H
#define ANVIL_COMPILER_SPMD_PART_INTERNAL_H

#include "compiler/spmd_partition.h"
#include "compiler/spmd_rules.h"

typedef struct av_part {
  av_module *m;
  const av_spmd_shardings *S;
  const av_mesh *mesh;
  int ndev;
  av_block *b;     /* where new ops go: before `before` */
  av_op *before;
  const char *loc; /* location of the op being partitioned, for the ops it adds */
  /* the local value that stands for an original value, and the sharding it carries */
  av_value **val;
  const av_sharding **sh;
  const av_type **gtype; /* every original value's global type, by id */
  uint32_t nval;
  av_arena *arena;       /* shardings made while partitioning */
  av_value *pid; /* this device's partition id as a tensor<i32> */
  av_spmd_report *rep;
  av_diag *d;
  bool failed;
} av_part;

/* ---- state (spmd_partition.c) */
bool av_part_set(av_part *P, const av_value *orig, av_value *local, const av_sharding *sh);
/* The local value standing for `orig` and its sharding (orig itself, replicated, if unset). */
av_value *av_part_get(av_part *P, const av_value *orig, const av_sharding **sh);
/* The propagated sharding of `v` reduced to what divides its shape evenly (NULL: replicated). */
const av_sharding *av_part_target(av_part *P, const av_value *v, av_sharding *buf);
const av_sharding *av_part_replicated(av_part *P, int rank);
/* `s` on the partitioner's mesh (s itself when already; NULL and P failed when impossible). */
const av_sharding *av_part_on_mesh(av_part *P, const av_sharding *s, av_sharding *buf);
const av_sharding *av_part_keep(av_part *P, const av_sharding *s); /* an arena copy */
bool av_part_fail(av_part *P, av_code code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void av_part_note_fallback(av_part *P, const av_op *op, const char *why);
/* op's results, set to their local values and shardings, resharded after op to their
 * propagated shardings. */
void av_part_settle_results(av_part *P, av_op *op);

/* ---- emission (spmd_emit.c): new ops before P->before */
const av_type *av_part_local_type(av_part *P, const av_type *global, const av_sharding *s);
bool av_part_local_dims(const av_type *global, const av_sharding *s, int64_t *local);
av_value *av_emit_op1(av_part *P, const char *name, uint32_t nops, av_value *const *ops,
                      const av_type *rtype, uint32_t nattrs, const av_named_attr *attrs);
av_value *av_emit_i32_scalar(av_part *P, int32_t v);
/* table[device index], as a tensor<i32> (a constant when every device has the same) */
av_value *av_emit_device_lookup(av_part *P, const int32_t *table);
av_value *av_emit_dynamic_slice(av_part *P, av_value *v, av_value *const *offsets, const int64_t *sizes);
/* all_gather / all_reduce / reduce_scatter over device groups (ids in group order) */
av_value *av_emit_all_gather(av_part *P, av_value *v, int dim, const int64_t *groups, int ngroups,
                             int gsize, const av_type *rtype);
av_value *av_emit_all_reduce(av_part *P, av_value *v, const int64_t *groups, int ngroups, int gsize,
                             av_opcode combiner);
av_value *av_emit_reduce_scatter(av_part *P, av_value *v, int dim, const int64_t *groups, int ngroups,
                                 int gsize, av_opcode combiner, const av_type *rtype);
av_value *av_emit_all_to_all(av_part *P, av_value *v, int split_dim, int concat_dim, const int64_t *groups,
                             int ngroups, int gsize, const av_type *rtype);
/* Locates op at the op being partitioned under an HLO name: "all-reduce"(<loc>). */
void av_part_name_loc(av_part *P, av_op *op, const char *hlo_name);
/* The HLO name of a StableHLO collective ("all-reduce" for stablehlo.all_reduce), or NULL. */
const char *av_hlo_collective_name(const char *stablehlo_name);
/* Device groups that differ only in the coordinates of `refs` (ordered by the block index
 * over refs, major to minor); malloc'd [ngroups * gsize] device ids. */
int64_t *av_part_groups(av_part *P, const av_axis_ref *refs, int nrefs, int *ngroups, int *gsize);
/* Block index of each device (by device index) over refs. */
void av_part_block_index(av_part *P, const av_axis_ref *refs, int nrefs, int32_t *out);

/* ---- resharding (spmd_reshard.c): v (local, sharding `from`) as sharding `to` */
av_value *av_reshard(av_part *P, av_value *v, const av_type *global, const av_sharding *from,
                     const av_sharding *to);
/* The local value of `orig` with sharding `to` (NULL: replicated). */
av_value *av_part_operand(av_part *P, const av_value *orig, const av_sharding *to);

/* ---- per-op rules (spmd_partition_ops.c): false when the op must fall back */
bool av_part_local_op(av_part *P, av_op *op);
bool av_part_iota(av_part *P, av_op *op);
bool av_part_constant(av_part *P, av_op *op);
/* A custom call with a registered custom partitioner (spmd_custom.c); false when op has none. */
bool av_part_custom(av_part *P, av_op *op);

#endif
