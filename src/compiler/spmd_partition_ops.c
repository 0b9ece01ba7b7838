/* Ops on local shards: which factors of an op may be sharded (its rule, spmd_rules.c, and what
 * its local form computes), the operand shardings that follows from them, and the attributes
 * a local form needs (slice bounds, slice sizes). Constants and iota get each device's block. */
#include <stdlib.h>
#include <string.h>

#include "compiler/attrs.h"
#include "compiler/spmd_part_internal.h"
#include "ir/float_codec.h"

static bool is_tensor(const av_value *v) { return v->type && v->type->kind == AV_TYPE_TENSOR; }

static const av_type *gtype_of(av_part *P, const av_value *v) {
  return v->id < P->nval && P->gtype[v->id] ? P->gtype[v->id] : v->type;
}

/* The binary op a reduce/scatter body applies to its two arguments, or UNKNOWN. */
static av_opcode body_combiner(const av_op *op) {
  if (op->nregions != 1 || op->regions[0].nblocks != 1) return AV_OP_UNKNOWN;
  const av_block *b = &op->regions[0].blocks[0];
  const av_op *f = b->first;
  if (b->nargs != 2 || !f || !f->next || f->next->next || f->noperands != 2 || f->nresults != 1) return AV_OP_UNKNOWN;
  const av_op *ret = f->next;
  if (ret->noperands != 1 || ret->operands[0] != &f->results[0]) return AV_OP_UNKNOWN;
  bool args = (f->operands[0] == &b->args[0] && f->operands[1] == &b->args[1]) ||
              (f->operands[0] == &b->args[1] && f->operands[1] == &b->args[0]);
  if (!args) return AV_OP_UNKNOWN;
  switch (f->code) {
    case AV_OP_ADD: case AV_OP_MAXIMUM: case AV_OP_MINIMUM: case AV_OP_MULTIPLY: case AV_OP_AND: case AV_OP_OR:
      return f->code;
    default:
      return AV_OP_UNKNOWN;
  }
}

/* Whether the constant `v` holds the identity of `combiner` (so every device may start from
 * it). */
static bool is_identity(const av_value *v, av_opcode combiner) {
  const av_op *c = v->def;
  if (!c || c->code != AV_OP_CONSTANT || !is_tensor(v) || v->type->rank != 0) return false;
  const av_attr *a = av_op_attr(c, "value");
  av_dtype dt0 = v->type->dtype;
  size_t es = av_dtype_size(dt0);
  if (!a || a->kind != AV_ATTR_DENSE || !es || es > 8 || a->u.dense.size < es) return false;
  uint64_t bits = 0;
  memcpy(&bits, a->u.dense.data, es); /* little-endian hosts */
  double x;
  if (av_dtype_is_float(dt0)) x = av_float_decode(bits, dt0);
  else if (av_dtype_is_signed_int(dt0)) x = (double)((int64_t)(bits << (64 - 8 * es)) >> (64 - 8 * es));
  else x = (double)bits;
  switch (combiner) {
    case AV_OP_ADD: case AV_OP_OR: return x == 0;
    case AV_OP_MULTIPLY: case AV_OP_AND: return x == 1 || (combiner == AV_OP_AND && x != 0);
    case AV_OP_MAXIMUM: {
      av_dtype dt = v->type->dtype;
      if (av_dtype_is_float(dt)) return x == -__builtin_inf();
      int64_t mn, mx;
      return av_quant_storage_range(dt, &mn, &mx) && x == (double)mn;
    }
    case AV_OP_MINIMUM: {
      av_dtype dt = v->type->dtype;
      if (av_dtype_is_float(dt)) return x == __builtin_inf();
      int64_t mn, mx;
      return av_quant_storage_range(dt, &mn, &mx) && x == (double)mx;
    }
    default: return false;
  }
}

/* What a partial result (a sharded reduction factor) is combined with, or UNKNOWN when the op
 * cannot leave partial results. */
static av_opcode partial_combiner(const av_op *op) {
  switch (op->code) {
    case AV_OP_DOT: case AV_OP_DOT_GENERAL:
      return AV_OP_ADD;
    case AV_OP_CONVOLUTION: {
      int64_t fg = 1, bg = 1;
      av_attr_get_int(op, "feature_group_count", &fg);
      av_attr_get_int(op, "batch_group_count", &bg);
      return fg == 1 && bg == 1 ? AV_OP_ADD : AV_OP_UNKNOWN;
    }
    case AV_OP_REDUCE: {
      if (op->noperands != 2 || op->nresults != 1) return AV_OP_UNKNOWN;
      av_opcode c = body_combiner(op);
      return c != AV_OP_UNKNOWN && is_identity(op->operands[1], c) ? c : AV_OP_UNKNOWN;
    }
    case AV_OP_SCATTER:
      /* updates split over devices: each adds its own into the operand, which only the
       * devices at the axes' origin hold (the others start from zeros) */
      return op->nresults == 1 && op->noperands == 3 && body_combiner(op) == AV_OP_ADD ? AV_OP_ADD : AV_OP_UNKNOWN;
    default:
      return AV_OP_UNKNOWN;
  }
}

/* Ops whose local form is the same op on local shapes (attributes fixed where noted). */
static bool local_form_exists(const av_op *op) {
  if (av_spmd_is_elementwise(op)) return op->nregions == 0;
  switch (op->code) {
    case AV_OP_BROADCAST_IN_DIM: case AV_OP_RESHAPE: case AV_OP_TRANSPOSE: case AV_OP_DOT:
    case AV_OP_DOT_GENERAL: case AV_OP_REDUCE: case AV_OP_CONCATENATE: case AV_OP_SLICE:
    case AV_OP_PAD: case AV_OP_REVERSE: case AV_OP_SORT: case AV_OP_CONVOLUTION:
    case AV_OP_DYNAMIC_SLICE: case AV_OP_DYNAMIC_UPDATE_SLICE: case AV_OP_GATHER:
    case AV_OP_SCATTER: case AV_OP_REDUCE_WINDOW: case AV_OP_CHOLESKY: case AV_OP_CUSTOM_CALL:
    case AV_OP_TRIANGULAR_SOLVE:
      return true;
    default:
      return false;
  }
}

/* Factors of `op` that its local form cannot shard beyond its rule's kinds. */
static bool factor_allowed(const av_op *op, const av_factor_rule *r, int f, av_opcode partial) {
  switch (r->kind[f]) {
    case AV_FACTOR_NEED_REPLICATION: case AV_FACTOR_PERMUTATION: return false;
    case AV_FACTOR_REDUCTION: return partial != AV_OP_UNKNOWN;
    default: break;
  }
  if (op->code == AV_OP_SCATTER) {
    /* an operand dimension the indices point into: needs indices shifted per device */
    uint32_t n = op->nresults;
    const av_tensor_factors *in = &r->ops[0], *upd = &r->ops[n + 1];
    bool in_operand = false, in_update = false;
    for (int d = 0; d < in->rank; d++)
      for (int j = 0; j < in->dims[d].n; j++) in_operand |= in->dims[d].f[j] == f;
    for (int d = 0; d < upd->rank; d++)
      for (int j = 0; j < upd->dims[d].n; j++) in_update |= upd->dims[d].f[j] == f;
    if (in_operand && !in_update) return false;
  }
  if (op->code == AV_OP_CONVOLUTION) {
    int64_t fg = 1, bg = 1;
    av_attr_get_int(op, "feature_group_count", &fg);
    av_attr_get_int(op, "batch_group_count", &bg);
    if (fg != 1 || bg != 1) return false;
  }
  return true;
}

static bool overlaps_any(const av_axis_ref *r, const av_factor_axes *fa) {
  for (int i = 0; i < fa->n; i++)
    if (av_axis_refs_overlap(r, &fa->a[i])) return true;
  return false;
}

static bool tensor_has(const av_factor_rule *r, uint32_t t, int f) {
  const av_tensor_factors *tf = &r->ops[t];
  for (int d = 0; d < tf->rank; d++)
    for (int j = 0; j < tf->dims[d].n; j++)
      if (tf->dims[d].f[j] == f) return true;
  return false;
}

/* Drops the axes of factors that would shard one tensor along an axis twice (later factors
 * give way to earlier ones). */
static void make_disjoint(const av_factor_rule *r, av_factor_axes *fax) {
  for (int f = 0; f < r->nfactors; f++) {
    for (int i = 0; i < fax[f].n; i++) {
      bool clash = false;
      for (uint32_t t = 0; t < r->nops + r->nres && !clash; t++) {
        if (!tensor_has(r, t, f)) continue;
        for (int g = 0; g < f && !clash; g++)
          if (tensor_has(r, t, g)) clash = overlaps_any(&fax[f].a[i], &fax[g]);
      }
      if (clash) {
        fax[f].n = (uint8_t)i;
        break;
      }
    }
  }
}

/* Every tensor's sharding from the factors', dropping factors whose axes a tensor cannot show
 * (after a partly sharded factor of its dimension) or that do not divide a dimension. */
static bool settle_tensors(av_part *P, const av_op *op, const av_factor_rule *r, av_factor_axes *fax,
                           av_sharding *tsh) {
  uint32_t nt = r->nops + r->nres;
  for (int round = 0; round < 4 * AV_RULE_MAX_FACTORS; round++) {
    bool changed = false;
    for (uint32_t t = 0; t < nt && !changed; t++) {
      const av_value *v = t < r->nops ? op->operands[t] : &op->results[t - r->nops];
      const av_type *g = gtype_of(P, v);
      const av_tensor_factors *tf = &r->ops[t];
      if (!g || g->kind != AV_TYPE_TENSOR) {
        av_sharding_replicated(&tsh[t], 0);
        continue;
      }
      if (!av_spmd_unproject(r, t, P->mesh, fax, &tsh[t])) {
        /* a factor after a partly sharded one in its dimension loses its axes */
        for (int d = 0; d < tf->rank && !changed; d++) {
          bool partly = false;
          for (int j = 0; j < tf->dims[d].n && !changed; j++) {
            int f = tf->dims[d].f[j];
            if (partly && fax[f].n) {
              fax[f].n = 0;
              changed = true;
            }
            int64_t sz = 1;
            for (int i = 0; i < fax[f].n; i++) sz *= fax[f].a[i].size;
            if (sz < r->size[f]) partly = true;
          }
        }
        if (!changed) return false;
        continue;
      }
      for (int d = 0; d < g->rank && !changed; d++) {
        int64_t shards = av_sharding_dim_shards(&tsh[t], d, ~0u);
        if (g->dims[d] % shards == 0) continue;
        for (int j = tf->dims[d].n - 1; j >= 0 && !changed; j--) {
          int f = tf->dims[d].f[j];
          if (fax[f].n) {
            fax[f].n--;
            changed = true;
          }
        }
      }
    }
    if (!changed) return true;
  }
  return false;
}

/* The mesh axes along which a linear op (the devices' results sum to the result of the sums:
 * add, subtract, negate, transpose, reshape) leaves its result unreduced, as JAX asks for it,
 * when every operand is unreduced along them already: no all-reduce in between (a gradient
 * accumulated over microbatches is reduced once, after the loop, as XLA does). */
static uint32_t linear_unreduced(av_part *P, const av_op *op) {
  switch (op->code) {
    case AV_OP_ADD: case AV_OP_SUBTRACT: case AV_OP_NEGATE: case AV_OP_TRANSPOSE: case AV_OP_RESHAPE:
      break;
    default:
      return 0;
  }
  if (op->nresults != 1 || op->noperands == 0 || !is_tensor(&op->results[0])) return 0;
  av_sharding buf;
  const av_sharding *t = av_part_target(P, &op->results[0], &buf);
  uint32_t u = t ? t->unreduced : 0;
  for (uint32_t i = 0; u && i < op->noperands; i++) {
    const av_sharding *cur;
    av_part_get(P, op->operands[i], &cur);
    u &= cur ? cur->unreduced : 0;
  }
  return u;
}

/* Slice and gather sizes: the local extent of dimensions the local form splits. */
static bool fix_attrs(av_part *P, av_op *op, const av_type *g, const av_sharding *in0) {
  if (!g || g->kind != AV_TYPE_TENSOR) return true;
  int rank = g->rank;
  int64_t local[AV_MAX_RANK];
  if (!av_part_local_dims(g, in0, local)) return false;
  bool split = false;
  for (int k = 0; k < rank; k++) split |= local[k] != g->dims[k];
  if (!split) return true;
  for (uint32_t i = 0; i < op->nattrs; i++) {
    const char *n = op->attrs[i].name;
    int64_t v[AV_MAX_RANK];
    size_t nv = 0;
    bool slice_limits = op->code == AV_OP_SLICE && strcmp(n, "limit_indices") == 0;
    bool sizes = (op->code == AV_OP_DYNAMIC_SLICE || op->code == AV_OP_GATHER) && strcmp(n, "slice_sizes") == 0;
    if (!slice_limits && !sizes) continue;
    if (!av_attr_ints_of(op->attrs[i].value, v, AV_MAX_RANK, &nv) || (int)nv != rank) return false;
    for (int k = 0; k < rank; k++)
      if (local[k] != g->dims[k]) {
        /* a split dimension is taken whole, or (a gather's batching dimension, the only
           split one its rule lets a size-1 slice have) one index of it */
        if (op->code == AV_OP_GATHER && sizes && v[k] == 1) continue;
        if (v[k] != g->dims[k]) return false;
        v[k] = local[k];
      }
    const av_attr *a = av_attr_ints(P->m, (size_t)rank, v);
    if (!a) return false;
    op->attrs[i].value = a;
  }
  return true;
}

/* The op's rule on its global types (values rewritten earlier already hold local types). */
static av_factor_rule *global_rule(av_part *P, av_op *op) {
  enum { MAXT = 64 };
  if (op->noperands + op->nresults > MAXT) return NULL;
  const av_type *saved[MAXT];
  for (uint32_t i = 0; i < op->noperands; i++) {
    saved[i] = op->operands[i]->type;
    op->operands[i]->type = gtype_of(P, op->operands[i]);
  }
  for (uint32_t i = 0; i < op->nresults; i++) {
    saved[op->noperands + i] = op->results[i].type;
    op->results[i].type = gtype_of(P, &op->results[i]);
  }
  av_factor_rule *r = av_factor_rule_of(op);
  for (uint32_t i = 0; i < op->nresults; i++) op->results[i].type = saved[op->noperands + i];
  for (uint32_t i = op->noperands; i-- > 0;) op->operands[i]->type = saved[i];
  return r;
}

bool av_part_local_op(av_part *P, av_op *op) {
  if (!P->mesh || !local_form_exists(op)) return false;
  for (uint32_t i = 0; i < op->noperands; i++)
    if (op->operands[i]->type && op->operands[i]->type->kind != AV_TYPE_TENSOR) return false;
  for (uint32_t i = 0; i < op->nresults; i++)
    if (!is_tensor(&op->results[i])) return false;
  av_factor_rule *r = global_rule(P, op);
  if (!r) return false;
  int nf = r->nfactors;
  uint32_t nt = r->nops + r->nres;
  av_factor_axes fax[AV_RULE_MAX_FACTORS];
  bool set[AV_RULE_MAX_FACTORS], present[AV_RULE_MAX_FACTORS];
  memset(fax, 0, sizeof fax);
  memset(set, 0, sizeof set);
  av_sharding *tsh = calloc((size_t)nt + 1, sizeof *tsh);
  bool ok = tsh != NULL;
  av_opcode partial = partial_combiner(op);
  /* the results' propagated shardings decide their factors; operands the rest */
  for (uint32_t i = 0; ok && i < r->nres; i++) {
    av_sharding buf;
    const av_sharding *t = av_part_target(P, &op->results[i], &buf);
    av_factor_axes tmp[AV_RULE_MAX_FACTORS];
    memset(tmp, 0, sizeof tmp);
    av_sharding rep;
    av_sharding_replicated(&rep, op->results[i].type->rank);
    rep.mesh = P->mesh;
    if (!av_spmd_project(r, r->nops + i, P->mesh, t ? t : &rep, tmp, present)) continue;
    for (int f = 0; f < nf; f++)
      if (present[f] && !set[f]) {
        fax[f] = tmp[f];
        set[f] = true;
      }
  }
  for (uint32_t i = 0; ok && i < r->nops; i++) {
    const av_sharding *cur;
    av_part_get(P, op->operands[i], &cur);
    if (!cur) continue;
    av_factor_axes tmp[AV_RULE_MAX_FACTORS];
    memset(tmp, 0, sizeof tmp);
    if (!av_spmd_project(r, i, P->mesh, cur, tmp, present)) continue;
    for (int f = 0; f < nf; f++)
      if (present[f] && !set[f] && tmp[f].n) {
        fax[f] = tmp[f];
        set[f] = true;
      }
  }
  for (int f = 0; f < nf; f++)
    if (!factor_allowed(op, r, f, partial)) fax[f].n = 0;
  make_disjoint(r, fax);
  ok = ok && settle_tensors(P, op, r, fax, tsh);
  /* what the local form leaves partial: reduction factors with axes */
  av_axis_ref partial_refs[AV_MESH_MAX_AXES];
  int npartial = 0;
  for (int f = 0; ok && f < nf; f++)
    if (r->kind[f] == AV_FACTOR_REDUCTION)
      for (int i = 0; i < fax[f].n && npartial < AV_MESH_MAX_AXES; i++) partial_refs[npartial++] = fax[f].a[i];
  if (!ok) {
    free(tsh);
    av_factor_rule_free(r);
    return false;
  }
  /* a scatter's partial sums need an operand that is unreduced over the same axes */
  if (op->code == AV_OP_SCATTER && npartial) {
    bool whole = true;
    for (int k = 0; k < npartial; k++)
      whole &= partial_refs[k].pre == 1 && partial_refs[k].size == P->mesh->sizes[partial_refs[k].axis];
    if (!whole) {
      free(tsh);
      av_factor_rule_free(r);
      return false;
    }
    tsh[0].mesh = P->mesh;
    for (int k = 0; k < npartial; k++) tsh[0].unreduced |= 1u << partial_refs[k].axis;
  }
  /* partial sums that stay partial through a linear op */
  uint32_t keep = linear_unreduced(P, op);
  for (uint32_t t = 0; keep && t < nt; t++) {
    tsh[t].mesh = P->mesh;
    tsh[t].unreduced |= keep;
  }
  /* operands on their shardings, results on local types */
  const av_type *g0 = gtype_of(P, op->operands[0]);
  for (uint32_t i = 0; i < r->nops && !P->failed; i++) {
    const av_sharding *want = av_sharding_is_replicated(&tsh[i]) ? NULL : &tsh[i];
    op->operands[i] = av_part_operand(P, op->operands[i], want);
  }
  if (!P->failed && !fix_attrs(P, op, g0, &tsh[0])) av_part_fail(P, AV_INTERNAL, "partitioning %s: bad local attributes", op->name);
  for (uint32_t i = 0; i < r->nres && !P->failed; i++) {
    av_value *res = &op->results[i];
    const av_type *lt = av_part_local_type(P, gtype_of(P, res), &tsh[r->nops + i]);
    if (!lt) {
      av_part_fail(P, AV_INTERNAL, "partitioning %s: result does not divide", op->name);
      break;
    }
    res->type = lt;
    av_sharding rs = tsh[r->nops + i];
    rs.mesh = P->mesh;
    bool whole = true; /* partial sums over whole axes are unreduced values */
    for (int k = 0; k < npartial; k++) whole &= partial_refs[k].pre == 1 && partial_refs[k].size == P->mesh->sizes[partial_refs[k].axis];
    if (npartial && partial == AV_OP_ADD && whole) {
      for (int k = 0; k < npartial; k++) rs.unreduced |= 1u << partial_refs[k].axis;
      av_part_set(P, res, res, av_part_keep(P, &rs));
    } else if (npartial) {
      int ng, gs;
      int64_t *groups = av_part_groups(P, partial_refs, npartial, &ng, &gs);
      av_op *saved = P->before;
      P->before = op->next;
      av_value *red = groups ? av_emit_all_reduce(P, res, groups, ng, gs, partial) : NULL;
      P->before = saved;
      free(groups);
      av_part_set(P, res, red, av_sharding_is_replicated(&rs) ? NULL : av_part_keep(P, &rs));
    } else {
      av_part_set(P, res, res, av_sharding_is_replicated(&rs) ? NULL : av_part_keep(P, &rs));
    }
  }
  free(tsh);
  av_factor_rule_free(r);
  return !P->failed;
}

bool av_part_constant(av_part *P, av_op *op) {
  if (op->nresults != 1 || !is_tensor(&op->results[0])) return false;
  av_sharding buf;
  const av_sharding *t = av_part_target(P, &op->results[0], &buf);
  const av_attr *a = av_op_attr(op, "value");
  if (t && a && a->kind == AV_ATTR_DENSE && a->u.dense.splat) { /* a splat is its own block */
    const av_type *lt = av_part_local_type(P, op->results[0].type, t);
    const av_attr *la = lt ? av_attr_dense(P->m, lt, a->u.dense.data, a->u.dense.size, true, true) : NULL;
    if (la) {
      for (uint32_t i = 0; i < op->nattrs; i++)
        if (strcmp(op->attrs[i].name, "value") == 0) op->attrs[i].value = la;
      op->results[0].type = lt;
      av_part_set(P, &op->results[0], &op->results[0], av_part_keep(P, t));
      return true;
    }
  }
  /* the whole constant, then this device's block */
  av_part_set(P, &op->results[0], &op->results[0], NULL);
  if (!t) return true;
  av_op *saved = P->before;
  P->before = op->next;
  av_value *v = av_reshard(P, &op->results[0], op->results[0].type, NULL, t);
  P->before = saved;
  av_part_set(P, &op->results[0], v, av_part_keep(P, t));
  return !P->failed;
}

bool av_part_iota(av_part *P, av_op *op) {
  if (op->nresults != 1 || !is_tensor(&op->results[0])) return false;
  av_sharding buf;
  const av_sharding *t = av_part_target(P, &op->results[0], &buf);
  int64_t dim = 0;
  const av_type *g = op->results[0].type;
  if (!av_attr_get_int(op, "iota_dimension", &dim) || dim < 0 || dim >= g->rank) return false;
  if (!t) {
    av_part_set(P, &op->results[0], &op->results[0], NULL);
    return true;
  }
  const av_type *lt = av_part_local_type(P, g, t);
  if (!lt) return false;
  op->results[0].type = lt;
  av_part_set(P, &op->results[0], &op->results[0], av_part_keep(P, t));
  if (av_sharding_dim_shards(t, (int)dim, ~0u) <= 1) return true;
  /* values along the split dimension start at this device's offset */
  int32_t *table = calloc((size_t)P->ndev + 1, sizeof *table);
  if (!table) return av_part_fail(P, AV_RESOURCE_EXHAUSTED, "out of memory");
  av_part_block_index(P, t->axes[dim], t->naxes[dim], table);
  for (int q = 0; q < P->ndev; q++) table[q] = (int32_t)(table[q] * lt->dims[dim]);
  av_op *saved = P->before;
  P->before = op->next;
  av_value *off = av_emit_device_lookup(P, table);
  free(table);
  av_value *offc = off ? av_emit_op1(P, "stablehlo.convert", 1, &off, av_type_tensor(P->m, lt->dtype, 0, NULL), 0, NULL) : NULL;
  av_named_attr bd = {"broadcast_dimensions", av_attr_ints(P->m, 0, NULL)};
  av_value *ob = offc ? av_emit_op1(P, "stablehlo.broadcast_in_dim", 1, &offc, lt, 1, &bd) : NULL;
  av_value *ops[2] = {&op->results[0], ob};
  av_value *sum = ob ? av_emit_op1(P, "stablehlo.add", 2, ops, lt, 0, NULL) : NULL;
  P->before = saved;
  if (!sum) return false;
  av_part_set(P, &op->results[0], sum, av_part_keep(P, t));
  return true;
}
