/* Lowering of all_reduce, all_gather, reduce_scatter, collective_permute, all_to_all,
 * collective_broadcast and collective_reduce. */
#include <string.h>

#include "compiler/lower_internal.h"
#include "runtime/collectives.h"

/* replica_groups / source_target_pairs: a rank-2 integer dense attribute. */
static bool pairs_attr(av_lower *c, const av_op *op, const char *name, int *rows, int *cols,
                       const int64_t **out) {
  const av_attr *a = av_op_attr(op, name);
  *rows = *cols = 0;
  *out = NULL;
  if (!a) return true;
  int64_t n = a->kind == AV_ATTR_DENSE ? av_type_num_elements(a->type) : -1;
  if (n < 0 || !a->type || a->type->rank != 2) return AV_INVALID(c, "%s must be a 2-d array", name);
  if (n == 0) return true;
  int64_t *v = av_lower_alloc(c, (size_t)n * sizeof *v);
  size_t got;
  if (!v || !av_attr_ints_of(a, v, (size_t)n, &got)) return AV_INVALID(c, "bad %s", name);
  *rows = (int)a->type->dims[0];
  *cols = (int)a->type->dims[1];
  *out = v;
  return true;
}

/* The combiner region as a binary elementwise op, per operand type. */
static bool combiner(av_lower *c, const av_op *op, av_coll_params *p) {
  if (op->nregions != 1 || op->regions[0].nblocks != 1) return AV_INVALID(c, "missing computation");
  const av_block *b = &op->regions[0].blocks[0];
  const av_op *f = b->first;
  /* the binary op, then (Shardy) sharding constraints on its result, then the return */
  const av_op *ret = f ? f->next : NULL;
  const av_value *last = f ? &f->results[0] : NULL;
  uint32_t nconstraints = 0;
  while (ret && ret->code == AV_OP_SDY_SHARDING_CONSTRAINT && ret->noperands == 1 &&
         ret->operands[0] == last && ret->nresults == 1) {
    last = &ret->results[0];
    ret = ret->next;
    nconstraints++;
  }
  if (b->nargs != 2 || b->nops != 2 + nconstraints || !f || f->noperands != 2 ||
      f->operands[0] != &b->args[0] || f->operands[1] != &b->args[1] || !ret ||
      ret->noperands != 1 || ret->operands[0] != last)
    return AV_UNSUPPORTED(c, "only single binary-op computations are supported");
  av_ew_kernel *k = av_lower_alloc(c, (op->noperands + 1) * sizeof *k);
  if (!k) return false;
  for (uint32_t i = 0; i < op->nresults; i++) {
    const av_slot_type *t = av_tensor_of(c, op->operands[i], "operand");
    if (!t) return false;
    if (av_ew_arity(f->code) != 2 || f->code == AV_OP_COMPARE ||
        !av_ew_prepare(f->code, t->dtype, t->dtype, AV_CMP_EQ, AV_CMP_DEFAULT, &k[i]))
      return AV_UNSUPPORTED(c, "computation %s on %s", f->name, av_dtype_mlir_name(t->dtype));
  }
  p->combine = k;
  return true;
}

bool av_lower_collective_op(av_lower *c, const av_op *op, bool *handled) {
  *handled = true;
  av_coll_params *p = av_lower_alloc(c, sizeof *p);
  if (!p) return false;
  switch (op->code) {
    case AV_OP_ALL_REDUCE: p->kind = AV_COLL_ALL_REDUCE; break;
    case AV_OP_ALL_GATHER: p->kind = AV_COLL_ALL_GATHER; break;
    case AV_OP_REDUCE_SCATTER: p->kind = AV_COLL_REDUCE_SCATTER; break;
    case AV_OP_COLLECTIVE_PERMUTE: p->kind = AV_COLL_PERMUTE; break;
    case AV_OP_ALL_TO_ALL: p->kind = AV_COLL_ALL_TO_ALL; break;
    case AV_OP_COLLECTIVE_BROADCAST: p->kind = AV_COLL_BROADCAST; break;
    case AV_OP_COLLECTIVE_REDUCE: p->kind = AV_COLL_REDUCE; break;
    default: *handled = false; return false;
  }
  p->dynamic_root = p->kind == AV_COLL_BROADCAST && av_op_attr(op, "has_dynamic_root");
  uint32_t ndata = op->noperands - (p->dynamic_root ? 1 : 0); /* operands that are data */
  if (op->noperands < 1 || ndata < 1 || ndata != op->nresults)
    return AV_INVALID(c, "operand and result counts differ");
  for (uint32_t i = 0; i < ndata; i++)
    if (!av_tensor_of(c, op->operands[i], "operand") || !av_tensor_of(c, &op->results[i], "result")) return false;
  if (p->dynamic_root) {
    const av_slot_type *rt = av_tensor_of(c, op->operands[ndata], "root");
    if (!rt) return false;
    if (rt->rank != 1 || rt->dtype != AV_DT_S32) return AV_INVALID(c, "root must be a 1-d i32 tensor");
  }
  if (!pairs_attr(c, op, "replica_groups", &p->ngroups, &p->group_size, &p->groups)) return false;
  bool global = false;
  av_attr_get_bool(op, "use_global_device_ids", &global);
  int64_t channel = 0;
  if (!av_attr_get_int(op, "channel_id", &channel) && av_op_attr(op, "channel_handle")) {
    if (!av_attr_get_int(op, "channel_handle", &channel)) channel = 1;
  }
  if (p->kind == AV_COLL_PERMUTE || p->kind == AV_COLL_ALL_TO_ALL || p->kind == AV_COLL_BROADCAST)
    p->mode = channel > 0 ? AV_COLL_CROSS_PARTITION : AV_COLL_CROSS_REPLICA;
  else if (global)
    p->mode = AV_COLL_FLATTENED_IDS;
  else
    p->mode = channel > 0 ? AV_COLL_CROSS_REPLICA_AND_PARTITION : AV_COLL_CROSS_REPLICA;
  int cols = 0;
  if (p->kind == AV_COLL_PERMUTE) {
    if (!pairs_attr(c, op, "source_target_pairs", &p->npairs, &cols, &p->pairs)) return false;
    if (p->npairs && cols != 2) return AV_INVALID(c, "source_target_pairs must be pairs");
  }
  if (p->kind == AV_COLL_ALL_REDUCE || p->kind == AV_COLL_REDUCE_SCATTER || p->kind == AV_COLL_REDUCE) {
    if (!combiner(c, op, p)) return false;
  }
  const char *dim_attr = p->kind == AV_COLL_ALL_GATHER ? "all_gather_dim"
                         : p->kind == AV_COLL_REDUCE_SCATTER ? "scatter_dimension"
                         : p->kind == AV_COLL_ALL_TO_ALL ? "split_dimension" : NULL;
  int64_t factor = p->group_size;
  if (p->kind == AV_COLL_ALL_TO_ALL) {
    int64_t sc;
    if (!av_attr_get_int(op, "split_count", &sc) || sc < 1) return AV_INVALID(c, "bad split_count");
    if (!av_attr_get_int(op, "concat_dimension", &p->concat_dim)) return AV_INVALID(c, "missing concat_dimension");
    if (factor && factor != sc) return AV_INVALID(c, "split_count differs from the group size");
    factor = sc;
  }
  if (dim_attr) {
    if (!av_attr_get_int(op, dim_attr, &p->dim)) return AV_INVALID(c, "missing %s", dim_attr);
    /* with no replica_groups the group is every replica: the shapes tell its size */
    for (uint32_t i = 0; i < op->noperands; i++) {
      const av_slot_type *it = av_vtype(c, op->operands[i]), *rt = av_vtype(c, &op->results[i]);
      if (p->dim < 0 || p->dim >= it->rank || it->rank != rt->rank) return AV_INVALID(c, "bad %s", dim_attr);
      if (p->kind == AV_COLL_ALL_TO_ALL &&
          (p->concat_dim < 0 || p->concat_dim >= it->rank || it->dims[p->dim] % factor))
        return AV_INVALID(c, "bad split/concat dimensions");
    }
  }
  p->op_id = c->plan->ncollectives++;
  if (!c->plan->rv) {
    c->plan->rv = av_rendezvous_new();
    if (!c->plan->rv) return av_lower_fail(c, AV_RESOURCE_EXHAUSTED, "out of memory");
  }
  return av_emit_op(c, av_step_collective, p) != NULL;
}
