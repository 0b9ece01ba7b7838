/* Moving a value from one sharding to another on the devices' local shards: partial sums are
 * reduced (all_reduce, or reduce_scatter straight into a split dimension), dimensions split
 * along axes the target does not use are gathered (all_gather), and dimensions the target
 * splits further are sliced at each device's offset (no communication). */
#include <stdlib.h>
#include <string.h>

#include "compiler/spmd_part_internal.h"

static bool ref_eq(const av_axis_ref *a, const av_axis_ref *b) {
  return a->axis == b->axis && a->pre == b->pre && a->size == b->size;
}

static int64_t refs_size(const av_axis_ref *r, int n) {
  int64_t s = 1;
  for (int i = 0; i < n; i++) s *= r[i].size;
  return s;
}

/* The unreduced axes of `u` as whole-axis refs, mesh order. */
static int axis_refs_of(const av_mesh *m, uint32_t u, av_axis_ref *out) {
  int n = 0;
  for (int a = 0; a < m->naxes; a++)
    if (u >> a & 1u) out[n++] = av_axis_ref_whole(m, a);
  return n;
}

av_value *av_reshard(av_part *P, av_value *v, const av_type *global, const av_sharding *from,
                     const av_sharding *to) {
  if (!v || P->failed) return NULL;
  if (!global || global->kind != AV_TYPE_TENSOR || global->rank > AV_MAX_RANK) return v;
  int rank = global->rank;
  av_sharding cur, want;
  av_sharding_replicated(&cur, rank);
  av_sharding_replicated(&want, rank);
  if (from && from->mesh) cur = *from;
  if (to && to->mesh) want = *to;
  if (!cur.mesh) cur.mesh = P->mesh;
  if (!want.mesh) want.mesh = P->mesh;
  if (!P->mesh) return v;
  if (av_sharding_equal(&cur, &want)) return v;
  const av_mesh *m = P->mesh;
  int64_t local[AV_MAX_RANK];
  if (!av_part_local_dims(global, &cur, local)) {
    av_part_fail(P, AV_INTERNAL, "partitioning: a value's sharding does not divide its shape");
    return NULL;
  }
  int common[AV_MAX_RANK];
  for (int d = 0; d < rank; d++) {
    int c = 0;
    while (c < cur.naxes[d] && c < want.naxes[d] && ref_eq(&cur.axes[d][c], &want.axes[d][c])) c++;
    common[d] = c;
  }
  /* 1. partial sums: reduced, into a split dimension when the target splits one by them */
  uint32_t ured = av_sharding_unreduced(&cur, ~0u) & ~av_sharding_unreduced(&want, ~0u);
  if (ured) {
    av_axis_ref ur[AV_MESH_MAX_AXES];
    int nu = axis_refs_of(m, ured, ur);
    int scatter_dim = -1;
    for (int d = 0; d < rank && scatter_dim < 0; d++) {
      if (common[d] != cur.naxes[d] || want.naxes[d] - common[d] != nu) continue;
      bool all = true;
      for (int i = 0; i < nu && all; i++) {
        const av_axis_ref *r = &want.axes[d][common[d] + i];
        all = r->pre == 1 && r->size == m->sizes[r->axis] && (ured >> r->axis & 1u);
      }
      if (all && local[d] % refs_size(&want.axes[d][common[d]], nu) == 0) scatter_dim = d;
    }
    int ng, gs;
    if (scatter_dim >= 0) {
      int d = scatter_dim;
      int64_t *groups = av_part_groups(P, &want.axes[d][common[d]], nu, &ng, &gs);
      if (!groups) return NULL;
      int64_t dims[AV_MAX_RANK];
      memcpy(dims, local, sizeof dims);
      dims[d] = local[d] / gs;
      v = av_emit_reduce_scatter(P, v, d, groups, ng, gs, AV_OP_ADD, av_type_tensor(P->m, global->dtype, rank, dims));
      free(groups);
      if (!v) return NULL;
      local[d] = dims[d];
      for (int i = 0; i < nu; i++) cur.axes[d][cur.naxes[d]++] = want.axes[d][common[d] + i];
      common[d] = cur.naxes[d];
    } else {
      int64_t *groups = av_part_groups(P, ur, nu, &ng, &gs);
      if (!groups) return NULL;
      v = av_emit_all_reduce(P, v, groups, ng, gs, AV_OP_ADD);
      free(groups);
      if (!v) return NULL;
    }
    cur.unreduced &= ~ured;
  }
  /* 2a. axes that split a dimension and become unreduced: each device's block stays where it
   * is in a dimension of zeros (their sum is the value; no communication) */
  uint32_t add = av_sharding_unreduced(&want, ~0u) & ~av_sharding_unreduced(&cur, ~0u);
  uint32_t placed = 0;
  for (int d = 0; d < rank && add; d++) {
    int extra = cur.naxes[d] - common[d];
    if (extra <= 0) continue;
    bool all = true;
    for (int i = 0; i < extra && all; i++) {
      const av_axis_ref *r = &cur.axes[d][common[d] + i];
      all = r->pre == 1 && r->size == m->sizes[r->axis] && (add >> r->axis & 1u);
    }
    if (!all) continue;
    int64_t n = refs_size(&cur.axes[d][common[d]], extra);
    int64_t dims[AV_MAX_RANK];
    memcpy(dims, local, sizeof dims);
    dims[d] = local[d] * n;
    const av_type *bt = av_type_tensor(P->m, global->dtype, rank, dims);
    int32_t *table = calloc((size_t)P->ndev + 1, sizeof *table);
    if (!table || !bt) {
      free(table);
      av_part_fail(P, AV_RESOURCE_EXHAUSTED, "out of memory");
      return NULL;
    }
    av_part_block_index(P, &cur.axes[d][common[d]], extra, table);
    for (int q = 0; q < P->ndev; q++) table[q] = (int32_t)(table[q] * local[d]);
    av_value *off = av_emit_device_lookup(P, table);
    free(table);
    av_value *z0 = off ? av_emit_i32_scalar(P, 0) : NULL;
    av_value *zs = z0 ? av_emit_op1(P, "stablehlo.convert", 1, &z0, av_type_tensor(P->m, global->dtype, 0, NULL), 0, NULL) : NULL;
    av_named_attr bd = {"broadcast_dimensions", av_attr_ints(P->m, 0, NULL)};
    av_value *zb = zs ? av_emit_op1(P, "stablehlo.broadcast_in_dim", 1, &zs, bt, 1, &bd) : NULL;
    av_value *ops[AV_MAX_RANK + 2];
    ops[0] = zb;
    ops[1] = v;
    for (int k = 0; k < rank; k++) ops[k + 2] = k == d ? off : z0;
    v = zb ? av_emit_op1(P, "stablehlo.dynamic_update_slice", (uint32_t)rank + 2, ops, bt, 0, NULL) : NULL;
    if (!v) return NULL;
    local[d] = dims[d];
    for (int i = 0; i < extra; i++) placed |= 1u << cur.axes[d][common[d] + i].axis;
    cur.naxes[d] = (uint8_t)common[d];
  }
  cur.unreduced |= placed;
  /* 2. gather what the target does not split the same way */
  for (int d = 0; d < rank; d++) {
    int extra = cur.naxes[d] - common[d];
    if (extra <= 0) continue;
    int ng, gs;
    int64_t *groups = av_part_groups(P, &cur.axes[d][common[d]], extra, &ng, &gs);
    if (!groups) return NULL;
    int64_t dims[AV_MAX_RANK];
    memcpy(dims, local, sizeof dims);
    dims[d] = local[d] * gs;
    v = av_emit_all_gather(P, v, d, groups, ng, gs, av_type_tensor(P->m, global->dtype, rank, dims));
    free(groups);
    if (!v) return NULL;
    local[d] = dims[d];
    cur.naxes[d] = (uint8_t)common[d];
  }
  /* 3. slice what the target splits further: this device's block of each dimension */
  bool slice = false;
  av_value *offs[AV_MAX_RANK];
  int64_t sizes[AV_MAX_RANK];
  int32_t *table = calloc((size_t)P->ndev + 1, sizeof *table);
  if (!table) {
    av_part_fail(P, AV_RESOURCE_EXHAUSTED, "out of memory");
    return NULL;
  }
  for (int d = 0; d < rank; d++) {
    int extra = want.naxes[d] - common[d];
    sizes[d] = local[d];
    offs[d] = NULL;
    if (extra <= 0) continue;
    int64_t n = refs_size(&want.axes[d][common[d]], extra);
    if (n <= 1) continue;
    if (local[d] % n != 0) {
      free(table);
      av_part_fail(P, AV_INTERNAL, "partitioning: a target sharding does not divide its shape");
      return NULL;
    }
    sizes[d] = local[d] / n;
    av_part_block_index(P, &want.axes[d][common[d]], extra, table);
    for (int q = 0; q < P->ndev; q++) table[q] = (int32_t)(table[q] * sizes[d]);
    offs[d] = av_emit_device_lookup(P, table);
    if (!offs[d]) {
      free(table);
      return NULL;
    }
    slice = true;
  }
  if (slice) {
    av_value *zero = NULL;
    for (int d = 0; d < rank && !P->failed; d++)
      if (!offs[d]) offs[d] = zero ? zero : (zero = av_emit_i32_scalar(P, 0));
    v = P->failed ? NULL : av_emit_dynamic_slice(P, v, offs, sizes);
  }
  /* 4. newly unreduced axes: the value stays on the devices at their origin, zeros elsewhere */
  add = av_sharding_unreduced(&want, ~0u) & ~av_sharding_unreduced(&cur, ~0u);
  if (v && add) {
    for (int q = 0; q < P->ndev; q++) {
      int64_t pos = av_mesh_position(m, q);
      table[q] = pos >= 0 && av_mesh_at_origin(m, add, pos) ? 1 : 0;
    }
    av_value *keep = av_emit_device_lookup(P, table);
    const av_type *vt = v->type;
    av_value *zero_i = keep ? av_emit_i32_scalar(P, 0) : NULL;
    av_named_attr cmp[1] = {{"comparison_direction", av_attr_string(P->m, AV_ATTR_ENUM, "NE", 2)}};
    av_value *cops[2] = {keep, zero_i};
    av_value *pred = zero_i ? av_emit_op1(P, "stablehlo.compare", 2, cops,
                                          av_type_tensor(P->m, AV_DT_PRED, 0, NULL), 1, cmp) : NULL;
    /* zeros of v's type: v - v is not zero for inf/nan, so a converted constant */
    av_value *z0 = pred ? av_emit_i32_scalar(P, 0) : NULL;
    av_value *zs = z0 ? av_emit_op1(P, "stablehlo.convert", 1, &z0, av_type_tensor(P->m, vt->dtype, 0, NULL), 0, NULL) : NULL;
    av_named_attr bd = {"broadcast_dimensions", av_attr_ints(P->m, 0, NULL)};
    av_value *zb = zs ? av_emit_op1(P, "stablehlo.broadcast_in_dim", 1, &zs, vt, 1, &bd) : NULL;
    av_value *sops[3] = {pred, v, zb};
    v = zb ? av_emit_op1(P, "stablehlo.select", 3, sops, vt, 0, NULL) : NULL;
  }
  free(table);
  return v;
}

av_value *av_part_operand(av_part *P, const av_value *orig, const av_sharding *to) {
  const av_sharding *sh;
  av_value *v = av_part_get(P, orig, &sh);
  const av_type *g = orig->id < P->nval && P->gtype[orig->id] ? P->gtype[orig->id] : orig->type;
  return av_reshard(P, v, g, sh, to);
}
