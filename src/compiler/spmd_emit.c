/* IR the partitioner adds: local types, constants, per-device offsets from partition_id, and
 * the collectives (all_gather, all_reduce, reduce_scatter, all_to_all) over mesh axes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/spmd_part_internal.h"

bool av_part_local_dims(const av_type *global, const av_sharding *s, int64_t *local) {
  for (int k = 0; k < global->rank; k++) {
    int64_t n = s && s->mesh && k < s->rank ? av_sharding_dim_shards(s, k, ~0u) : 1;
    if (n < 1 || global->dims[k] % n != 0) return false;
    local[k] = global->dims[k] / n;
  }
  return true;
}

const av_type *av_part_local_type(av_part *P, const av_type *global, const av_sharding *s) {
  if (!global || global->kind != AV_TYPE_TENSOR) return global;
  int64_t local[AV_MAX_RANK];
  if (!av_part_local_dims(global, s, local)) return NULL;
  bool same = true;
  for (int k = 0; k < global->rank; k++) same &= local[k] == global->dims[k];
  if (same) return global;
  return av_type_tensor(P->m, global->dtype, global->rank, local);
}

static av_op *new_op(av_part *P, const char *name, uint32_t nops, av_value *const *ops,
                     const av_type *rtype, uint32_t nattrs, const av_named_attr *attrs, uint32_t nregions) {
  for (uint32_t i = 0; i < nops; i++)
    if (!ops[i]) return NULL;
  if (!rtype) return NULL;
  av_op *op = av_op_new(P->m, name, nops, 1, &rtype, nattrs, nregions);
  if (!op) return NULL;
  for (uint32_t i = 0; i < nops; i++) op->operands[i] = ops[i];
  for (uint32_t i = 0; i < nattrs; i++) op->attrs[i] = attrs[i];
  op->loc = P->loc ? P->loc : "unknown";
  av_block_insert_before(P->b, P->before, op);
  return op;
}

av_value *av_emit_op1(av_part *P, const char *name, uint32_t nops, av_value *const *ops,
                      const av_type *rtype, uint32_t nattrs, const av_named_attr *attrs) {
  av_op *op = new_op(P, name, nops, ops, rtype, nattrs, attrs, 0);
  if (!op) {
    av_part_fail(P, AV_RESOURCE_EXHAUSTED, "out of memory");
    return NULL;
  }
  return &op->results[0];
}

static const av_type *i32_type(av_part *P, int rank, const int64_t *dims) {
  return av_type_tensor(P->m, AV_DT_S32, rank, dims);
}

static const av_attr *i64_attr(av_part *P, int64_t v) {
  return av_attr_int(P->m, v, av_type_tensor(P->m, AV_DT_S64, 0, NULL));
}

static av_value *i32_constant(av_part *P, const int32_t *v, int64_t n, int rank) {
  int64_t dims[1] = {n};
  const av_type *t = i32_type(P, rank, dims);
  const av_attr *a = t ? av_attr_dense(P->m, t, v, (size_t)n * 4, false, false) : NULL;
  if (!a) {
    av_part_fail(P, AV_RESOURCE_EXHAUSTED, "out of memory");
    return NULL;
  }
  av_named_attr attr = {"value", a};
  return av_emit_op1(P, "stablehlo.constant", 0, NULL, t, 1, &attr);
}

av_value *av_emit_i32_scalar(av_part *P, int32_t v) { return i32_constant(P, &v, 1, 0); }

av_value *av_emit_device_lookup(av_part *P, const int32_t *table) {
  bool same = true;
  for (int q = 1; q < P->ndev; q++) same &= table[q] == table[0];
  if (same) return av_emit_i32_scalar(P, table[0]);
  av_value *tab = i32_constant(P, table, P->ndev, 1);
  if (!tab || !P->pid) return NULL;
  int64_t one = 1;
  av_named_attr sz = {"slice_sizes", av_attr_ints(P->m, 1, &one)};
  av_value *ops[2] = {tab, P->pid};
  av_value *s = av_emit_op1(P, "stablehlo.dynamic_slice", 2, ops, i32_type(P, 1, &one), 1, &sz);
  return s ? av_emit_op1(P, "stablehlo.reshape", 1, &s, i32_type(P, 0, NULL), 0, NULL) : NULL;
}

av_value *av_emit_dynamic_slice(av_part *P, av_value *v, av_value *const *offsets, const int64_t *sizes) {
  const av_type *t = v->type;
  av_value *ops[AV_MAX_RANK + 1];
  ops[0] = v;
  for (int k = 0; k < t->rank; k++) ops[k + 1] = offsets[k];
  av_named_attr sz = {"slice_sizes", av_attr_ints(P->m, (size_t)t->rank, sizes)};
  return av_emit_op1(P, "stablehlo.dynamic_slice", (uint32_t)t->rank + 1, ops,
                     av_type_tensor(P->m, t->dtype, t->rank, sizes), 1, &sz);
}

/* A collective the partitioner adds is located at the op it serves, under its HLO name (the
 * name XLA gives it, which compiled.as_text() then shows): "all-reduce"(<the op's loc>). */
void av_part_name_loc(av_part *P, av_op *op, const char *hlo_name) {
  const char *base = P->loc && strcmp(P->loc, "unknown") != 0 ? P->loc : NULL;
  size_t n = strlen(hlo_name) + (base ? strlen(base) : 0) + 8;
  char *s = av_arena_alloc(&P->m->arena, n);
  if (!s) return;
  if (base) snprintf(s, n, "\"%s\"(%s)", hlo_name, base);
  else snprintf(s, n, "\"%s\"", hlo_name);
  op->loc = s;
}

const char *av_hlo_collective_name(const char *stablehlo_name) {
  static const char *const names[][2] = {
      {"stablehlo.all_gather", "all-gather"}, {"stablehlo.all_reduce", "all-reduce"},
      {"stablehlo.reduce_scatter", "reduce-scatter"}, {"stablehlo.all_to_all", "all-to-all"},
      {"stablehlo.collective_broadcast", "collective-broadcast"},
      {"stablehlo.collective_permute", "collective-permute"}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(names[i][0], stablehlo_name) == 0) return names[i][1];
  return NULL;
}

static const av_attr *groups_attr(av_part *P, const int64_t *groups, int ngroups, int gsize) {
  int64_t dims[2] = {ngroups, gsize};
  const av_type *t = av_type_tensor(P->m, AV_DT_S64, 2, dims);
  return t ? av_attr_dense(P->m, t, groups, (size_t)ngroups * (size_t)gsize * 8, false, false) : NULL;
}

/* The combiner region: (a, b) -> a `combiner` b on scalars of dtype dt. */
static bool combiner_region(av_part *P, av_op *op, av_dtype dt, av_opcode combiner) {
  const av_type *st = av_type_tensor(P->m, dt, 0, NULL);
  const av_type *types[2] = {st, st};
  av_block *b = av_region_add_block(P->m, &op->regions[0], 2, types);
  if (!b) return false;
  const char *name = av_opcode_name(combiner);
  av_op *f = av_op_new(P->m, name, 2, 1, &st, 0, 0);
  av_op *ret = av_op_new(P->m, "stablehlo.return", 1, 0, NULL, 0, 0);
  if (!f || !ret) return false;
  f->operands[0] = &b->args[0];
  f->operands[1] = &b->args[1];
  f->loc = ret->loc = op->loc;
  ret->operands[0] = &f->results[0];
  av_block_append(b, f);
  av_block_append(b, ret);
  return true;
}

static av_value *collective(av_part *P, const char *name, av_value *v, const av_type *rtype,
                            const int64_t *groups, int ngroups, int gsize, const char *dim_name,
                            int64_t dim, av_opcode combiner, bool global_ids) {
  av_named_attr attrs[6];
  uint32_t n = 0;
  attrs[n++] = (av_named_attr){"replica_groups", groups_attr(P, groups, ngroups, gsize)};
  attrs[n++] = (av_named_attr){"channel_id", i64_attr(P, 1)};
  if (global_ids) attrs[n++] = (av_named_attr){"use_global_device_ids", av_attr_bool(P->m, true)};
  if (dim_name) attrs[n++] = (av_named_attr){dim_name, i64_attr(P, dim)};
  for (uint32_t i = 0; i < n; i++)
    if (!attrs[i].value) {
      av_part_fail(P, AV_RESOURCE_EXHAUSTED, "out of memory");
      return NULL;
    }
  av_op *op = new_op(P, name, 1, &v, rtype, n, attrs, combiner ? 1 : 0);
  if (!op || (combiner && !combiner_region(P, op, v->type->dtype, combiner))) {
    av_part_fail(P, AV_RESOURCE_EXHAUSTED, "out of memory");
    return NULL;
  }
  av_part_name_loc(P, op, av_hlo_collective_name(name));
  if (P->rep) P->rep->ncollectives++;
  return &op->results[0];
}

av_value *av_emit_all_gather(av_part *P, av_value *v, int dim, const int64_t *groups, int ngroups,
                             int gsize, const av_type *rtype) {
  return collective(P, "stablehlo.all_gather", v, rtype, groups, ngroups, gsize, "all_gather_dim", dim,
                    AV_OP_UNKNOWN, true);
}

av_value *av_emit_all_reduce(av_part *P, av_value *v, const int64_t *groups, int ngroups, int gsize,
                             av_opcode combiner) {
  return collective(P, "stablehlo.all_reduce", v, v->type, groups, ngroups, gsize, NULL, 0, combiner, true);
}

av_value *av_emit_reduce_scatter(av_part *P, av_value *v, int dim, const int64_t *groups, int ngroups,
                                 int gsize, av_opcode combiner, const av_type *rtype) {
  return collective(P, "stablehlo.reduce_scatter", v, rtype, groups, ngroups, gsize, "scatter_dimension",
                    dim, combiner, true);
}

av_value *av_emit_all_to_all(av_part *P, av_value *v, int split_dim, int concat_dim, const int64_t *groups,
                             int ngroups, int gsize, const av_type *rtype) {
  av_named_attr attrs[5] = {
      {"replica_groups", groups_attr(P, groups, ngroups, gsize)},
      {"channel_id", i64_attr(P, 1)},
      {"split_dimension", i64_attr(P, split_dim)},
      {"concat_dimension", i64_attr(P, concat_dim)},
      {"split_count", i64_attr(P, gsize)},
  };
  for (int i = 0; i < 5; i++)
    if (!attrs[i].value) {
      av_part_fail(P, AV_RESOURCE_EXHAUSTED, "out of memory");
      return NULL;
    }
  av_op *op = new_op(P, "stablehlo.all_to_all", 1, &v, rtype, 5, attrs, 0);
  if (!op) {
    av_part_fail(P, AV_RESOURCE_EXHAUSTED, "out of memory");
    return NULL;
  }
  av_part_name_loc(P, op, "all-to-all");
  if (P->rep) P->rep->ncollectives++;
  return &op->results[0];
}

/* A mesh position's coordinate along every axis, with the digits of `refs` zeroed. */
static void rest_coords(const av_mesh *m, const av_axis_ref *refs, int nrefs, int64_t pos, int64_t *out) {
  int64_t stride = 1;
  for (int a = m->naxes - 1; a >= 0; a--) {
    out[a] = (pos / stride) % m->sizes[a];
    stride *= m->sizes[a];
  }
  for (int i = 0; i < nrefs; i++) {
    const av_axis_ref *r = &refs[i];
    int64_t part = (int64_t)r->pre * r->size, st = part > 0 ? m->sizes[r->axis] / part : 1;
    if (st < 1 || r->size < 1) continue;
    out[r->axis] -= (out[r->axis] / st) % r->size * st;
  }
}

static int64_t block_of(const av_mesh *m, const av_axis_ref *refs, int nrefs, int64_t pos) {
  int64_t b = 0;
  for (int i = 0; i < nrefs; i++) b = b * refs[i].size + av_axis_ref_coord(m, &refs[i], pos);
  return b;
}

int64_t *av_part_groups(av_part *P, const av_axis_ref *refs, int nrefs, int *ngroups, int *gsize) {
  const av_mesh *m = P->mesh;
  int64_t size = 1;
  for (int i = 0; i < nrefs; i++) size *= refs[i].size;
  int64_t n = m->ndevices, ng = n / size;
  int64_t *groups = malloc((size_t)n * sizeof *groups);
  int64_t *keys = malloc((size_t)(ng ? ng : 1) * AV_MESH_MAX_AXES * sizeof *keys);
  if (!groups || !keys) {
    free(groups);
    free(keys);
    av_part_fail(P, AV_RESOURCE_EXHAUSTED, "out of memory");
    return NULL;
  }
  int64_t found = 0;
  for (int64_t pos = 0; pos < n; pos++) {
    int64_t key[AV_MESH_MAX_AXES];
    rest_coords(m, refs, nrefs, pos, key);
    int64_t g = 0;
    while (g < found && memcmp(&keys[g * AV_MESH_MAX_AXES], key, (size_t)m->naxes * sizeof *key) != 0) g++;
    if (g == found) {
      if (found >= ng) break; /* cannot happen for refs of this mesh */
      memcpy(&keys[g * AV_MESH_MAX_AXES], key, (size_t)m->naxes * sizeof *key);
      found++;
    }
    groups[g * size + block_of(m, refs, nrefs, pos)] = av_mesh_device_id(m, pos);
  }
  free(keys);
  *ngroups = (int)ng;
  *gsize = (int)size;
  return groups;
}

void av_part_block_index(av_part *P, const av_axis_ref *refs, int nrefs, int32_t *out) {
  for (int q = 0; q < P->ndev; q++) {
    int64_t pos = av_mesh_position(P->mesh, q);
    out[q] = pos < 0 ? 0 : (int32_t)block_of(P->mesh, refs, nrefs, pos);
  }
}
