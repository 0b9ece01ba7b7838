/* One HLO instruction -> IR ops (StableHLO names, flat VHLO attribute names). Result types
 * always come from the instruction's shape; tuple-shaped results become several results. */
#include <stdio.h>
#include <string.h>

#include "frontend/hlo_internal.h"

/* ---------------------------------------------------------------- helpers */

static bool need(hlo_scope *s, const hlo_instr *in, size_t min, size_t max) {
  size_t n = in->operand_ids.n;
  if (n >= min && n <= max) return true;
  if (min == max) return hlo_fail(s, in, "expects %zu operands, has %zu", min, n);
  return hlo_fail(s, in, "expects %zu to %zu operands, has %zu", min, max, n);
}

static hlo_val *operand(hlo_scope *s, const hlo_instr *in, size_t i) {
  if (i >= in->operand_ids.n) {
    hlo_fail(s, in, "missing operand %zu", i);
    return NULL;
  }
  hlo_val *v = hlo_map_get(&s->vals, in->operand_ids.v[i]);
  if (!v)
    hlo_fail(s, in, "operand %zu (id %lld) is not defined before use in this computation", i,
             (long long)in->operand_ids.v[i]);
  return v;
}

static av_value *leaf(hlo_scope *s, const hlo_instr *in, size_t i) {
  hlo_val *v = operand(s, in, i);
  if (!v) return NULL;
  if (!v->leaf) {
    hlo_fail(s, in, "operand %zu is a tuple where an array is expected", i);
    return NULL;
  }
  return v->leaf;
}

/* All operands from `from` on, flattened (tuples contribute their leaves). */
static bool flat_operands(hlo_scope *s, const hlo_instr *in, size_t from, av_value ***out,
                          size_t *n) {
  size_t count = 0;
  for (size_t i = from; i < in->operand_ids.n; i++) {
    hlo_val *v = operand(s, in, i);
    if (!v) return false;
    count += hlo_val_count(v);
    if (count > kMaxTupleLeaves) return hlo_fail(s, in, "too many operand values");
  }
  *out = av_arena_calloc(s->ctx->scratch, count + 1, sizeof **out);
  if (!*out) return hlo_fail(s, in, "out of memory");
  size_t k = 0;
  for (size_t i = from; i < in->operand_ids.n; i++)
    hlo_val_flatten(hlo_map_get(&s->vals, in->operand_ids.v[i]), *out, &k);
  *n = count;
  return true;
}

/* Operands that must all be arrays (no tuples). */
static bool leaf_operands(hlo_scope *s, const hlo_instr *in, av_value ***out, size_t *n) {
  *n = in->operand_ids.n;
  *out = av_arena_calloc(s->ctx->scratch, *n + 1, sizeof **out);
  if (!*out) return hlo_fail(s, in, "out of memory");
  for (size_t i = 0; i < *n; i++)
    if (!((*out)[i] = leaf(s, in, i))) return false;
  return true;
}

/* Creates op `name` whose results are the flattened leaves of the instruction's shape. */
static av_op *new_op(hlo_scope *s, const hlo_instr *in, const char *name, av_value *const *ops,
                     size_t nops, uint32_t nattrs, uint32_t nregions) {
  hlo_ctx *c = s->ctx;
  size_t nres = hlo_shape_leaf_count(&in->shape);
  const av_type **types = av_arena_calloc(c->scratch, nres + 1, sizeof *types);
  const char *err = "bad shape";
  if (!types) {
    hlo_fail(s, in, "out of memory");
    return NULL;
  }
  if (!hlo_shape_leaf_types(c->m, &in->shape, types, &err)) {
    hlo_fail(s, in, "result shape: %s", err);
    return NULL;
  }
  av_op *op = av_op_new(c->m, name, (uint32_t)nops, (uint32_t)nres, types, nattrs, nregions);
  if (!op) {
    hlo_fail(s, in, "out of memory");
    return NULL;
  }
  for (size_t i = 0; i < nops; i++) op->operands[i] = ops[i];
  op->loc = hlo_loc(c->m, in->name, in->source_file, in->source_line);
  av_block_append(s->block, op);
  return op;
}

/* The value tree of `op`'s results, shaped like the instruction. */
static bool results(hlo_scope *s, const hlo_instr *in, av_op *op, hlo_val **out) {
  av_value **leaves = av_arena_calloc(s->ctx->scratch, op->nresults + 1, sizeof *leaves);
  if (!leaves) return hlo_fail(s, in, "out of memory");
  for (uint32_t i = 0; i < op->nresults; i++) leaves[i] = &op->results[i];
  size_t k = 0;
  *out = hlo_val_from_leaves(s->ctx, &in->shape, leaves, &k);
  return *out ? true : hlo_fail(s, in, "out of memory");
}

/* Single-array-result check for ops whose StableHLO form has exactly one result. */
static bool array_result(hlo_scope *s, const hlo_instr *in) {
  if (hlo_shape_is_tuple(&in->shape)) return hlo_fail(s, in, "result must be an array, not a tuple");
  return true;
}

static bool set(hlo_scope *s, const hlo_instr *in, av_op *op, uint32_t i, const char *name,
                const av_attr *a) {
  /* A builder that failed may have said why already. */
  if (!a) return s->ctx->d->code != AV_OK ? false : hlo_fail(s, in, "out of memory");
  op->attrs[i].name = name;
  op->attrs[i].value = a;
  return true;
}

static const av_attr *a_ints(hlo_scope *s, const hlo_ints *v) {
  return av_attr_ints(s->ctx->m, v->n, v->v);
}
static const av_attr *a_int(hlo_scope *s, int64_t v) { return av_attr_int(s->ctx->m, v, s->ctx->i64); }
static const av_attr *a_i32(hlo_scope *s, int64_t v) { return av_attr_int(s->ctx->m, v, s->ctx->i32); }
static const av_attr *a_bool(hlo_scope *s, bool v) { return av_attr_bool(s->ctx->m, v); }
static const av_attr *a_enum(hlo_scope *s, const char *v) {
  return av_attr_string(s->ctx->m, AV_ATTR_ENUM, v, strlen(v));
}
/* A rows x cols i64 tensor attribute (padding, replica groups, source/target pairs). */
static const av_attr *a_dense2(hlo_scope *s, size_t rows, size_t cols, const int64_t *v) {
  int64_t dims[2] = {(int64_t)rows, (int64_t)cols};
  const av_type *t = av_type_tensor(s->ctx->m, AV_DT_S64, 2, dims);
  if (!t) return NULL;
  return av_attr_dense(s->ctx->m, t, v, rows * cols * sizeof(int64_t), false, false);
}

static int64_t *scratch_i64(hlo_scope *s, size_t n) {
  return av_arena_calloc(s->ctx->scratch, n ? n : 1, sizeof(int64_t));
}

static const char *precision_name(int64_t p) {
  return p == 1 ? "HIGH" : p == 2 ? "HIGHEST" : "DEFAULT";
}

static const av_attr *a_precision(hlo_scope *s, const hlo_instr *in) {
  size_t n = in->operand_precision.n;
  const av_attr **items = av_arena_calloc(s->ctx->scratch, n + 1, sizeof *items);
  if (!items) return NULL;
  for (size_t i = 0; i < n; i++)
    if (!(items[i] = a_enum(s, precision_name(in->operand_precision.v[i])))) return NULL;
  return av_attr_array(s->ctx->m, n, items);
}

/* Window sizes/strides/dilations/padding from a Window message. */
typedef struct window_attrs {
  hlo_ints size, stride, base_dil, win_dil;
  int64_t *pad; /* n x 2 */
  bool *reversal;
  size_t n;
} window_attrs;

static bool window(hlo_scope *s, const hlo_instr *in, window_attrs *w) {
  size_t n = in->nwindow;
  w->n = n;
  w->size.v = scratch_i64(s, n);
  w->stride.v = scratch_i64(s, n);
  w->base_dil.v = scratch_i64(s, n);
  w->win_dil.v = scratch_i64(s, n);
  w->pad = scratch_i64(s, 2 * n);
  w->reversal = av_arena_calloc(s->ctx->scratch, n + 1, sizeof *w->reversal);
  if (!w->size.v || !w->stride.v || !w->base_dil.v || !w->win_dil.v || !w->pad || !w->reversal)
    return hlo_fail(s, in, "out of memory");
  w->size.n = w->stride.n = w->base_dil.n = w->win_dil.n = n;
  for (size_t i = 0; i < n; i++) {
    const hlo_window_dim *d = &in->window[i];
    w->size.v[i] = d->size;
    w->stride.v[i] = d->stride;
    w->base_dil.v[i] = d->base_dilation;
    w->win_dil.v[i] = d->window_dilation;
    w->pad[2 * i] = d->pad_lo;
    w->pad[2 * i + 1] = d->pad_hi;
    w->reversal[i] = d->reversal;
  }
  return true;
}

enum { kMaxGroupEntries = 1 << 24 };

/* Replica groups as a G x S tensor, short groups padded with -1 (StableHLO's convention). */
static const av_attr *a_groups(hlo_scope *s, const hlo_instr *in) {
  size_t g = in->ngroups, width = 0;
  for (size_t i = 0; i < g; i++)
    if (in->replica_groups[i].n > width) width = in->replica_groups[i].n;
  if (g && width > kMaxGroupEntries / g) {
    hlo_fail(s, in, "replica groups too large (%zu groups, up to %zu ids each)", g, width);
    return NULL;
  }
  int64_t *v = scratch_i64(s, g * width);
  if (!v) return NULL;
  for (size_t i = 0; i < g; i++)
    for (size_t j = 0; j < width; j++)
      v[i * width + j] = j < in->replica_groups[i].n ? in->replica_groups[i].v[j] : -1;
  return a_dense2(s, g, width, v);
}

static bool dim0(hlo_scope *s, const hlo_instr *in, int64_t *d) {
  if (in->dimensions.n != 1)
    return hlo_fail(s, in, "expects exactly one entry in `dimensions`, has %zu", in->dimensions.n);
  *d = in->dimensions.v[0];
  return true;
}

/* ---------------------------------------------------------------- handlers */

typedef bool (*handler)(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out);

/* Ops with array operands, results from the shape, and no attributes. */
static bool h_plain(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  av_value **ops;
  size_t n;
  if (!leaf_operands(s, in, &ops, &n)) return false;
  av_op *op = new_op(s, in, name, ops, n, 0, 0);
  return op && results(s, in, op, out);
}

static bool h_unary(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  return need(s, in, 1, 1) && array_result(s, in) && h_plain(s, in, name, out);
}
static bool h_binary(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  return need(s, in, 2, 2) && array_result(s, in) && h_plain(s, in, name, out);
}
static bool h_ternary(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  return need(s, in, 3, 3) && array_result(s, in) && h_plain(s, in, name, out);
}

/* Unknown/unsupported opcode: kept as "hlo.<opcode>" with flattened operands. */
static bool h_unknown(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  (void)name;
  char buf[96];
  snprintf(buf, sizeof buf, "hlo.%.80s", in->opcode);
  av_value **ops;
  size_t n;
  if (!flat_operands(s, in, 0, &ops, &n)) return false;
  av_op *op = new_op(s, in, buf, ops, n, 0, 0);
  return op && results(s, in, op, out);
}

static bool h_parameter(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  (void)name;
  if (in->parameter_number < 0 || (uint64_t)in->parameter_number >= s->nparams ||
      !s->params[in->parameter_number])
    return hlo_fail(s, in, "parameter number %lld is not bound (%zu parameters)",
                    (long long)in->parameter_number, s->nparams);
  hlo_val *v = s->params[in->parameter_number];
  /* The bound value must have the parameter's structure. */
  if (hlo_val_count(v) != hlo_shape_leaf_count(&in->shape))
    return hlo_fail(s, in, "parameter shape does not match the value passed");
  *out = v;
  return true;
}

static bool h_constant(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  if (!need(s, in, 0, 0)) return false;
  if (!in->has_literal) return hlo_fail(s, in, "constant without a literal");
  size_t n = hlo_shape_leaf_count(&in->shape);
  const av_attr **vals = av_arena_calloc(s->ctx->scratch, n + 1, sizeof *vals);
  av_value **leaves = av_arena_calloc(s->ctx->scratch, n + 1, sizeof *leaves);
  const char *err = "bad literal";
  if (!vals || !leaves) return hlo_fail(s, in, "out of memory");
  if (!hlo_literal_leaves(s->ctx->m, s->ctx->scratch, &in->shape, in->literal, vals, &err))
    return hlo_fail(s, in, "literal: %s", err);
  for (size_t i = 0; i < n; i++) {
    av_op *op = av_op_new(s->ctx->m, name, 0, 1, &vals[i]->type, 1, 0);
    if (!op) return hlo_fail(s, in, "out of memory");
    op->attrs[0] = (av_named_attr){"value", vals[i]};
    op->loc = hlo_loc(s->ctx->m, in->name, in->source_file, in->source_line);
    av_block_append(s->block, op);
    leaves[i] = &op->results[0];
  }
  size_t k = 0;
  *out = hlo_val_from_leaves(s->ctx, &in->shape, leaves, &k);
  return *out ? true : hlo_fail(s, in, "out of memory");
}

static bool h_tuple(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  (void)name;
  /* a shape that lists its elements must list one per operand */
  if (hlo_shape_is_tuple(&in->shape) && in->shape.ntuple && in->shape.ntuple != in->operand_ids.n)
    return hlo_fail(s, in, "%zu operands, but its shape is a tuple of %zu elements",
                    in->operand_ids.n, in->shape.ntuple);
  hlo_val *t = av_arena_alloc(s->ctx->scratch, sizeof *t);
  if (!t) return hlo_fail(s, in, "out of memory");
  t->nkids = in->operand_ids.n;
  t->kids = av_arena_calloc(s->ctx->scratch, t->nkids + 1, sizeof *t->kids);
  if (!t->kids) return hlo_fail(s, in, "out of memory");
  t->depth = 1;
  for (size_t i = 0; i < t->nkids; i++) {
    if (!(t->kids[i] = operand(s, in, i))) return false;
    t->nleaves += t->kids[i]->nleaves;
    if (t->kids[i]->depth >= t->depth) t->depth = t->kids[i]->depth + 1;
    if (t->nleaves > kMaxTupleLeaves || t->depth > kMaxTupleDepth)
      return hlo_fail(s, in, "tuple nested too deeply or with too many elements");
  }
  *out = t;
  return true;
}

static bool h_gte(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  (void)name;
  if (!need(s, in, 1, 1)) return false;
  hlo_val *t = operand(s, in, 0);
  if (!t) return false;
  if (t->leaf) return hlo_fail(s, in, "operand is not a tuple");
  if (in->tuple_index < 0 || (uint64_t)in->tuple_index >= t->nkids)
    return hlo_fail(s, in, "tuple index %lld out of range (%zu elements)",
                    (long long)in->tuple_index, t->nkids);
  *out = t->kids[in->tuple_index];
  return true;
}

/* copy, domain, add-dependency: value of operand 0. */
static bool h_forward(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  (void)name;
  if (in->operand_ids.n < 1) return hlo_fail(s, in, "expects an operand");
  return (*out = operand(s, in, 0)) != NULL;
}

static bool h_bitcast(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  (void)name;
  if (!need(s, in, 1, 1) || !array_result(s, in)) return false;
  av_value *x = leaf(s, in, 0);
  if (!x) return false;
  bool same = x->type && x->type->kind == AV_TYPE_TENSOR &&
              x->type->dtype == hlo_dtype(in->shape.element_type);
  return h_plain(s, in, same ? "stablehlo.reshape" : "stablehlo.bitcast_convert", out);
}

/* An op with array operands and a fixed attribute list built by `fill`. */
#define SIMPLE_OP(nattrs)                                        \
  av_value **ops;                                                \
  size_t nops;                                                   \
  if (!array_result(s, in) || !leaf_operands(s, in, &ops, &nops)) \
    return false;                                                \
  av_op *op = new_op(s, in, name, ops, nops, nattrs, 0);         \
  if (!op) return false

static bool h_broadcast(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  if (!need(s, in, 1, 1)) return false;
  SIMPLE_OP(1);
  return set(s, in, op, 0, "broadcast_dimensions", a_ints(s, &in->dimensions)) &&
         results(s, in, op, out);
}

static bool h_dims_attr(hlo_scope *s, const hlo_instr *in, const char *name, const char *attr,
                        hlo_val **out) {
  if (!need(s, in, 1, 1)) return false;
  SIMPLE_OP(1);
  return set(s, in, op, 0, attr, a_ints(s, &in->dimensions)) && results(s, in, op, out);
}

static bool h_transpose(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  return h_dims_attr(s, in, name, "permutation", out);
}
static bool h_reverse(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  return h_dims_attr(s, in, name, "dimensions", out);
}

static bool h_slice(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  if (!need(s, in, 1, 1)) return false;
  size_t n = in->nslices;
  hlo_ints start = {scratch_i64(s, n), n}, limit = {scratch_i64(s, n), n},
           stride = {scratch_i64(s, n), n};
  if (!start.v || !limit.v || !stride.v) return hlo_fail(s, in, "out of memory");
  for (size_t i = 0; i < n; i++) {
    start.v[i] = in->slices[i].start;
    limit.v[i] = in->slices[i].limit;
    stride.v[i] = in->slices[i].stride;
  }
  SIMPLE_OP(3);
  return set(s, in, op, 0, "start_indices", a_ints(s, &start)) &&
         set(s, in, op, 1, "limit_indices", a_ints(s, &limit)) &&
         set(s, in, op, 2, "strides", a_ints(s, &stride)) && results(s, in, op, out);
}

static bool h_dynamic_slice(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  if (in->operand_ids.n < 1) return hlo_fail(s, in, "expects an operand");
  SIMPLE_OP(1);
  return set(s, in, op, 0, "slice_sizes", a_ints(s, &in->dynamic_slice_sizes)) &&
         results(s, in, op, out);
}

static bool h_dynamic_update_slice(hlo_scope *s, const hlo_instr *in, const char *name,
                                   hlo_val **out) {
  if (in->operand_ids.n < 2) return hlo_fail(s, in, "expects operand and update");
  return array_result(s, in) && h_plain(s, in, name, out);
}

static bool h_one_dim(hlo_scope *s, const hlo_instr *in, const char *name, const char *attr,
                      size_t min, size_t max, hlo_val **out) {
  int64_t d = 0;
  if (!need(s, in, min, max) || !dim0(s, in, &d)) return false;
  SIMPLE_OP(1);
  return set(s, in, op, 0, attr, a_int(s, d)) && results(s, in, op, out);
}

static bool h_concatenate(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  return h_one_dim(s, in, name, "dimension", 1, SIZE_MAX, out);
}
static bool h_iota(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  return h_one_dim(s, in, name, "iota_dimension", 0, 0, out);
}
static bool h_get_dimension_size(hlo_scope *s, const hlo_instr *in, const char *name,
                                 hlo_val **out) {
  return h_one_dim(s, in, name, "dimension", 1, 1, out);
}
static bool h_set_dimension_size(hlo_scope *s, const hlo_instr *in, const char *name,
                                 hlo_val **out) {
  return h_one_dim(s, in, name, "dimension", 2, 2, out);
}

static bool h_pad(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  if (!need(s, in, 2, 2)) return false;
  size_t n = in->npadding;
  hlo_ints lo = {scratch_i64(s, n), n}, hi = {scratch_i64(s, n), n}, mid = {scratch_i64(s, n), n};
  if (!lo.v || !hi.v || !mid.v) return hlo_fail(s, in, "out of memory");
  for (size_t i = 0; i < n; i++) {
    lo.v[i] = in->padding[i].lo;
    hi.v[i] = in->padding[i].hi;
    mid.v[i] = in->padding[i].interior;
  }
  SIMPLE_OP(3);
  return set(s, in, op, 0, "edge_padding_low", a_ints(s, &lo)) &&
         set(s, in, op, 1, "edge_padding_high", a_ints(s, &hi)) &&
         set(s, in, op, 2, "interior_padding", a_ints(s, &mid)) && results(s, in, op, out);
}

static bool h_compare(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  static const char *const kDirs[] = {"EQ", "NE", "GE", "GT", "LE", "LT"};
  static const char *const kTypes[] = {"FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"};
  if (!need(s, in, 2, 2)) return false;
  const char *dir = NULL, *type = NULL;
  for (size_t i = 0; i < 6; i++)
    if (strcmp(in->comparison_direction, kDirs[i]) == 0) dir = kDirs[i];
  if (!dir) return hlo_fail(s, in, "unknown comparison direction '%s'", in->comparison_direction);
  for (size_t i = 0; i < 4; i++)
    if (strcmp(in->comparison_type, kTypes[i]) == 0) type = kTypes[i];
  if (in->comparison_type[0] && !type)
    return hlo_fail(s, in, "unknown comparison type '%s'", in->comparison_type);
  SIMPLE_OP(2);
  if (!type) { /* XLA's default by element type */
    const av_type *t = ops[0]->type;
    av_dtype dt = t && t->kind == AV_TYPE_TENSOR ? t->dtype : AV_DT_INVALID;
    type = av_dtype_is_float(dt) || av_dtype_is_complex(dt) ? "FLOAT"
           : av_dtype_is_signed_int(dt)                     ? "SIGNED"
                                                            : "UNSIGNED";
  }
  return set(s, in, op, 0, "comparison_direction", a_enum(s, dir)) &&
         set(s, in, op, 1, "compare_type", a_enum(s, type)) && results(s, in, op, out);
}

static bool h_dot(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  if (!need(s, in, 2, 2)) return false;
  const hlo_dot_dims *dd = &in->dot;
  SIMPLE_OP(5);
  return set(s, in, op, 0, "lhs_batching_dimensions", a_ints(s, &dd->lhs_batch)) &&
         set(s, in, op, 1, "rhs_batching_dimensions", a_ints(s, &dd->rhs_batch)) &&
         set(s, in, op, 2, "lhs_contracting_dimensions", a_ints(s, &dd->lhs_contracting)) &&
         set(s, in, op, 3, "rhs_contracting_dimensions", a_ints(s, &dd->rhs_contracting)) &&
         set(s, in, op, 4, "precision_config", a_precision(s, in)) && results(s, in, op, out);
}

static bool h_convolution(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  if (!need(s, in, 2, 2)) return false;
  if (!in->has_conv) return hlo_fail(s, in, "convolution without dimension numbers");
  const hlo_conv_dims *cd = &in->conv;
  window_attrs w;
  if (!window(s, in, &w)) return false;
  if (w.n != cd->input_spatial.n)
    return hlo_fail(s, in, "window has %zu dimensions, the convolution %zu spatial ones", w.n,
                    cd->input_spatial.n);
  SIMPLE_OP(17);
  return set(s, in, op, 0, "window_strides", a_ints(s, &w.stride)) &&
         set(s, in, op, 1, "padding", a_dense2(s, w.n, 2, w.pad)) &&
         set(s, in, op, 2, "lhs_dilation", a_ints(s, &w.base_dil)) &&
         set(s, in, op, 3, "rhs_dilation", a_ints(s, &w.win_dil)) &&
         set(s, in, op, 4, "window_reversal", av_attr_bools(s->ctx->m, w.n, w.reversal)) &&
         set(s, in, op, 5, "input_batch_dimension", a_int(s, cd->input_batch)) &&
         set(s, in, op, 6, "input_feature_dimension", a_int(s, cd->input_feature)) &&
         set(s, in, op, 7, "input_spatial_dimensions", a_ints(s, &cd->input_spatial)) &&
         set(s, in, op, 8, "kernel_input_feature_dimension", a_int(s, cd->kernel_input_feature)) &&
         set(s, in, op, 9, "kernel_output_feature_dimension",
             a_int(s, cd->kernel_output_feature)) &&
         set(s, in, op, 10, "kernel_spatial_dimensions", a_ints(s, &cd->kernel_spatial)) &&
         set(s, in, op, 11, "output_batch_dimension", a_int(s, cd->output_batch)) &&
         set(s, in, op, 12, "output_feature_dimension", a_int(s, cd->output_feature)) &&
         set(s, in, op, 13, "output_spatial_dimensions", a_ints(s, &cd->output_spatial)) &&
         set(s, in, op, 14, "feature_group_count",
             a_int(s, in->feature_group_count ? in->feature_group_count : 1)) &&
         set(s, in, op, 15, "batch_group_count",
             a_int(s, in->batch_group_count ? in->batch_group_count : 1)) &&
         set(s, in, op, 16, "precision_config", a_precision(s, in)) && results(s, in, op, out);
}

/* Ops taking flattened operands, one region from called computation 0, and `nattrs`. */
static av_op *region_op(hlo_scope *s, const hlo_instr *in, const char *name, uint32_t nattrs,
                        uint32_t nregions) {
  av_value **ops;
  size_t nops;
  if (!flat_operands(s, in, 0, &ops, &nops)) return NULL;
  av_op *op = new_op(s, in, name, ops, nops, nattrs, nregions);
  if (!op) return NULL;
  for (uint32_t r = 0; r < nregions; r++) {
    const hlo_computation *comp = hlo_called(s, in, r);
    if (!comp || !hlo_region_with_args(s, in, comp, &op->regions[r])) return NULL;
  }
  return op;
}

static bool h_reduce(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  if (in->operand_ids.n < 2 || in->operand_ids.n % 2)
    return hlo_fail(s, in, "expects inputs and as many init values");
  av_op *op = region_op(s, in, name, 1, 1);
  return op && set(s, in, op, 0, "dimensions", a_ints(s, &in->dimensions)) &&
         results(s, in, op, out);
}

static bool h_reduce_window(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  if (in->operand_ids.n < 2 || in->operand_ids.n % 2)
    return hlo_fail(s, in, "expects inputs and as many init values");
  window_attrs w;
  if (!window(s, in, &w)) return false;
  av_op *op = region_op(s, in, name, 5, 1);
  return op && set(s, in, op, 0, "window_dimensions", a_ints(s, &w.size)) &&
         set(s, in, op, 1, "window_strides", a_ints(s, &w.stride)) &&
         set(s, in, op, 2, "base_dilations", a_ints(s, &w.base_dil)) &&
         set(s, in, op, 3, "window_dilations", a_ints(s, &w.win_dil)) &&
         set(s, in, op, 4, "padding", a_dense2(s, w.n, 2, w.pad)) && results(s, in, op, out);
}

static bool h_select_and_scatter(hlo_scope *s, const hlo_instr *in, const char *name,
                                 hlo_val **out) {
  if (!need(s, in, 3, 3)) return false;
  window_attrs w;
  if (!window(s, in, &w)) return false;
  av_op *op = region_op(s, in, name, 3, 2); /* regions: select, scatter */
  return op && set(s, in, op, 0, "window_dimensions", a_ints(s, &w.size)) &&
         set(s, in, op, 1, "window_strides", a_ints(s, &w.stride)) &&
         set(s, in, op, 2, "padding", a_dense2(s, w.n, 2, w.pad)) && results(s, in, op, out);
}

static bool h_gather(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  if (!need(s, in, 2, 2)) return false;
  if (!in->has_gather) return hlo_fail(s, in, "gather without dimension numbers");
  const hlo_gather_dims *g = &in->gather;
  SIMPLE_OP(8);
  return set(s, in, op, 0, "offset_dims", a_ints(s, &g->offset_dims)) &&
         set(s, in, op, 1, "collapsed_slice_dims", a_ints(s, &g->collapsed_slice_dims)) &&
         set(s, in, op, 2, "operand_batching_dims", a_ints(s, &g->operand_batching_dims)) &&
         set(s, in, op, 3, "start_indices_batching_dims",
             a_ints(s, &g->start_indices_batching_dims)) &&
         set(s, in, op, 4, "start_index_map", a_ints(s, &g->start_index_map)) &&
         set(s, in, op, 5, "index_vector_dim", a_int(s, g->index_vector_dim)) &&
         set(s, in, op, 6, "slice_sizes", a_ints(s, &in->gather_slice_sizes)) &&
         set(s, in, op, 7, "indices_are_sorted", a_bool(s, in->indices_are_sorted)) &&
         results(s, in, op, out);
}

static bool h_scatter(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  if (in->operand_ids.n < 3 || (in->operand_ids.n - 1) % 2)
    return hlo_fail(s, in, "expects inputs, indices and as many updates as inputs");
  if (!in->has_scatter) return hlo_fail(s, in, "scatter without dimension numbers");
  const hlo_scatter_dims *d = &in->scatter;
  av_op *op = region_op(s, in, name, 8, 1);
  return op && set(s, in, op, 0, "update_window_dims", a_ints(s, &d->update_window_dims)) &&
         set(s, in, op, 1, "inserted_window_dims", a_ints(s, &d->inserted_window_dims)) &&
         set(s, in, op, 2, "input_batching_dims", a_ints(s, &d->input_batching_dims)) &&
         set(s, in, op, 3, "scatter_indices_batching_dims",
             a_ints(s, &d->scatter_indices_batching_dims)) &&
         set(s, in, op, 4, "scatter_dims_to_operand_dims",
             a_ints(s, &d->scatter_dims_to_operand_dims)) &&
         set(s, in, op, 5, "index_vector_dim", a_int(s, d->index_vector_dim)) &&
         set(s, in, op, 6, "indices_are_sorted", a_bool(s, in->indices_are_sorted)) &&
         set(s, in, op, 7, "unique_indices", a_bool(s, in->unique_indices)) &&
         results(s, in, op, out);
}

static bool h_sort(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  int64_t d = 0;
  if (in->operand_ids.n < 1) return hlo_fail(s, in, "expects operands");
  if (!dim0(s, in, &d)) return false;
  av_op *op = region_op(s, in, name, 2, 1);
  return op && set(s, in, op, 0, "dimension", a_int(s, d)) &&
         set(s, in, op, 1, "is_stable", a_bool(s, in->is_stable)) && results(s, in, op, out);
}

static bool h_map(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  if (in->operand_ids.n < 1 || !array_result(s, in)) return hlo_fail(s, in, "expects operands");
  av_op *op = region_op(s, in, name, 1, 1);
  return op && set(s, in, op, 0, "dimensions", a_ints(s, &in->dimensions)) &&
         results(s, in, op, out);
}

/* while: called [0] = body, [1] = condition; StableHLO regions are (cond, body). */
static bool h_while(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  if (!need(s, in, 1, 1)) return false;
  const hlo_computation *body = hlo_called(s, in, 0), *cond = body ? hlo_called(s, in, 1) : NULL;
  if (!cond) return false;
  av_value **ops;
  size_t nops;
  if (!flat_operands(s, in, 0, &ops, &nops)) return false;
  if (nops != hlo_shape_leaf_count(&in->shape))
    return hlo_fail(s, in, "loop state and result shapes differ");
  av_op *op = new_op(s, in, name, ops, nops, 0, 2);
  return op && hlo_region_with_args(s, in, cond, &op->regions[0]) &&
         hlo_region_with_args(s, in, body, &op->regions[1]) && results(s, in, op, out);
}

/* conditional: operand 0 is a pred (if) or s32 index (case); operand i+1 feeds branch i. */
static bool h_conditional(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  (void)name;
  size_t nbranches = in->called_ids.n;
  if (nbranches < 1 || in->operand_ids.n != nbranches + 1)
    return hlo_fail(s, in, "expects one operand per branch plus the selector");
  av_value *sel = leaf(s, in, 0);
  if (!sel) return false;
  bool is_if = sel->type && sel->type->kind == AV_TYPE_TENSOR && sel->type->dtype == AV_DT_PRED;
  if (is_if && nbranches != 2) return hlo_fail(s, in, "a pred conditional needs 2 branches");
  av_op *op = new_op(s, in, is_if ? "stablehlo.if" : "stablehlo.case", &sel, 1, 0,
                     (uint32_t)nbranches);
  if (!op) return false;
  for (size_t b = 0; b < nbranches; b++) {
    const hlo_computation *comp = hlo_called(s, in, b);
    hlo_val *arg = comp ? operand(s, in, b + 1) : NULL;
    if (!arg || !hlo_region_capturing(s, in, comp, arg, &op->regions[b])) return false;
  }
  return results(s, in, op, out);
}

static bool h_call(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  (void)name;
  const hlo_computation *comp = hlo_called(s, in, 0);
  av_func *f = comp ? hlo_func_for(s, in, comp) : NULL;
  if (!f) return false;
  av_value **ops;
  size_t nops;
  if (!flat_operands(s, in, 0, &ops, &nops)) return false;
  if ((int)nops != f->type->ninputs)
    return hlo_fail(s, in, "passes %zu values to '%s', which takes %d", nops, f->name,
                    f->type->ninputs);
  av_op *op = new_op(s, in, "func.call", ops, nops, 1, 0);
  if (!op) return false;
  if ((int)op->nresults != f->type->nelems - f->type->ninputs)
    return hlo_fail(s, in, "result shape does not match '%s'", f->name);
  return set(s, in, op, 0, "callee", av_attr_string(s->ctx->m, AV_ATTR_SYMBOL, f->name, strlen(f->name))) &&
         results(s, in, op, out);
}

static bool collective_common(hlo_scope *s, const hlo_instr *in, av_op *op, uint32_t first) {
  return set(s, in, op, first, "replica_groups", a_groups(s, in)) &&
         set(s, in, op, first + 1, "channel_id", a_int(s, in->channel_id > 0 ? in->channel_id : 0)) &&
         set(s, in, op, first + 2, "use_global_device_ids", a_bool(s, in->use_global_device_ids));
}

static bool h_all_reduce(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  if (in->operand_ids.n < 1) return hlo_fail(s, in, "expects operands");
  av_op *op = region_op(s, in, name, 3, 1);
  return op && collective_common(s, in, op, 0) && results(s, in, op, out);
}

static bool h_reduce_scatter(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  int64_t d = 0;
  if (!need(s, in, 1, 1) || !dim0(s, in, &d)) return false;
  av_op *op = region_op(s, in, name, 4, 1);
  return op && collective_common(s, in, op, 0) &&
         set(s, in, op, 3, "scatter_dimension", a_int(s, d)) && results(s, in, op, out);
}

static bool h_all_gather(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  int64_t d = 0;
  if (in->operand_ids.n < 1 || !dim0(s, in, &d)) return hlo_fail(s, in, "expects operands");
  av_value **ops;
  size_t nops;
  if (!flat_operands(s, in, 0, &ops, &nops)) return false;
  av_op *op = new_op(s, in, name, ops, nops, 4, 0);
  return op && collective_common(s, in, op, 0) &&
         set(s, in, op, 3, "all_gather_dim", a_int(s, d)) && results(s, in, op, out);
}

/* The array form (split dimension given) maps to stablehlo.all_to_all; the tuple form has
 * no StableHLO counterpart. */
static bool h_all_to_all(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  if (in->dimensions.n != 1 || in->ngroups == 0 || in->operand_ids.n != 1)
    return h_unknown(s, in, name, out);
  SIMPLE_OP(5);
  int64_t d = in->dimensions.v[0];
  return set(s, in, op, 0, "split_dimension", a_int(s, d)) &&
         set(s, in, op, 1, "concat_dimension", a_int(s, d)) &&
         set(s, in, op, 2, "split_count", a_int(s, (int64_t)in->replica_groups[0].n)) &&
         set(s, in, op, 3, "replica_groups", a_groups(s, in)) &&
         set(s, in, op, 4, "channel_id", a_int(s, in->channel_id > 0 ? in->channel_id : 0)) &&
         results(s, in, op, out);
}

static bool h_collective_permute(hlo_scope *s, const hlo_instr *in, const char *name,
                                 hlo_val **out) {
  if (!need(s, in, 1, 1)) return false;
  int64_t *pairs = scratch_i64(s, 2 * in->npairs);
  if (!pairs) return hlo_fail(s, in, "out of memory");
  for (size_t i = 0; i < in->npairs; i++) {
    pairs[2 * i] = in->source_target[i][0];
    pairs[2 * i + 1] = in->source_target[i][1];
  }
  SIMPLE_OP(2);
  return set(s, in, op, 0, "source_target_pairs", a_dense2(s, in->npairs, 2, pairs)) &&
         set(s, in, op, 1, "channel_id", a_int(s, in->channel_id > 0 ? in->channel_id : 0)) &&
         results(s, in, op, out);
}

static bool h_rng_bit_generator(hlo_scope *s, const hlo_instr *in, const char *name,
                                hlo_val **out) {
  static const char *const kAlg[] = {"DEFAULT", "THREE_FRY", "PHILOX"};
  if (!need(s, in, 1, 1)) return false;
  if (in->rng_algorithm < 0 || in->rng_algorithm > 2)
    return hlo_fail(s, in, "unknown rng algorithm %lld", (long long)in->rng_algorithm);
  av_value *st = leaf(s, in, 0);
  if (!st) return false;
  av_op *op = new_op(s, in, name, &st, 1, 1, 0);
  if (!op) return false;
  if (op->nresults != 2) return hlo_fail(s, in, "result must be a (state, output) tuple");
  return set(s, in, op, 0, "rng_algorithm", a_enum(s, kAlg[in->rng_algorithm])) &&
         results(s, in, op, out);
}

/* rng(a, b) with the result shape -> stablehlo.rng(a, b, shape constant). */
static bool h_rng(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  if (!need(s, in, 2, 2) || !array_result(s, in)) return false;
  if (in->distribution != 1 && in->distribution != 2)
    return hlo_fail(s, in, "unknown rng distribution %lld", (long long)in->distribution);
  av_value *ops[3] = {leaf(s, in, 0), leaf(s, in, 1), NULL};
  if (!ops[0] || !ops[1]) return false;
  int64_t rank = (int64_t)in->shape.dims.n;
  const av_type *st = av_type_tensor(s->ctx->m, AV_DT_S64, 1, &rank);
  const av_attr *sv = st ? av_attr_dense(s->ctx->m, st, in->shape.dims.v,
                                         in->shape.dims.n * sizeof(int64_t), false, false)
                         : NULL;
  av_op *c = sv ? av_op_new(s->ctx->m, "stablehlo.constant", 0, 1, &st, 1, 0) : NULL;
  if (!c) return hlo_fail(s, in, "out of memory");
  c->attrs[0] = (av_named_attr){"value", sv};
  c->loc = "unknown";
  av_block_append(s->block, c);
  ops[2] = &c->results[0];
  av_op *op = new_op(s, in, name, ops, 3, 1, 0);
  return op &&
         set(s, in, op, 0, "rng_distribution", a_enum(s, in->distribution == 1 ? "UNIFORM" : "NORMAL")) &&
         results(s, in, op, out);
}

/* The minor_to_major of an array shape (row-major when it has no layout) as a 1-D tensor. */
static const av_attr *a_layout(hlo_scope *s, const hlo_shape *shp) {
  size_t n = shp->dims.n;
  int64_t *v = scratch_i64(s, n);
  if (!v) return NULL;
  bool given = shp->has_layout && shp->minor_to_major.n == n;
  for (size_t i = 0; i < n; i++) v[i] = given ? shp->minor_to_major.v[i] : (int64_t)(n - 1 - i);
  int64_t len = (int64_t)n;
  const av_type *t = av_type_tensor(s->ctx->m, AV_DT_S64, 1, &len);
  return t ? av_attr_dense(s->ctx->m, t, v, n * sizeof *v, false, false) : NULL;
}

static void leaf_shapes(const hlo_shape *shp, const hlo_shape **out, size_t *k) {
  if (!hlo_shape_is_tuple(shp)) {
    out[(*k)++] = shp;
    return;
  }
  for (size_t i = 0; i < shp->ntuple; i++) leaf_shapes(&shp->tuple[i], out, k);
}

/* operand_layouts / result_layouts of a layout-constrained custom call (StableHLO form:
 * arrays of minor_to_major tensors), which kernels such as LAPACK calls rely on. */
static bool custom_call_layouts(hlo_scope *s, const hlo_instr *in, av_op *op, uint32_t first) {
  hlo_ctx *c = s->ctx;
  size_t nops = in->noperand_shapes, nres = op->nresults;
  const av_attr **ol = av_arena_calloc(c->scratch, nops + 1, sizeof *ol);
  const av_attr **rl = av_arena_calloc(c->scratch, nres + 1, sizeof *rl);
  const hlo_shape **leaves = av_arena_calloc(c->scratch, nres + 1, sizeof *leaves);
  if (!ol || !rl || !leaves) return hlo_fail(s, in, "out of memory");
  for (size_t i = 0; i < nops; i++)
    if (!(ol[i] = a_layout(s, &in->operand_shapes[i]))) return hlo_fail(s, in, "out of memory");
  size_t k = 0;
  leaf_shapes(&in->shape, leaves, &k);
  for (size_t i = 0; i < nres; i++)
    if (!(rl[i] = a_layout(s, leaves[i]))) return hlo_fail(s, in, "out of memory");
  return set(s, in, op, first, "operand_layouts", av_attr_array(c->m, nops, ol)) &&
         set(s, in, op, first + 1, "result_layouts", av_attr_array(c->m, nres, rl));
}

static bool h_custom_call(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  av_value **ops;
  size_t nops;
  if (!flat_operands(s, in, 0, &ops, &nops)) return false;
  size_t ncalled = in->called_ids.n;
  const av_attr **callees = av_arena_calloc(s->ctx->scratch, ncalled + 1, sizeof *callees);
  if (!callees) return hlo_fail(s, in, "out of memory");
  for (size_t i = 0; i < ncalled; i++) {
    const hlo_computation *comp = hlo_called(s, in, i);
    av_func *f = comp ? hlo_func_for(s, in, comp) : NULL;
    if (!f) return false;
    callees[i] = av_attr_string(s->ctx->m, AV_ATTR_SYMBOL, f->name, strlen(f->name));
    if (!callees[i]) return hlo_fail(s, in, "out of memory");
  }
  bool layouts = in->noperand_shapes > 0;
  if (layouts && in->noperand_shapes != nops)
    return hlo_fail(s, in, "%zu operand layouts for %zu operands", in->noperand_shapes, nops);
  av_op *op = new_op(s, in, name, ops, nops, layouts ? 7 : 5, 0);
  const char *target = in->custom_call_target;
  return op && (!layouts || custom_call_layouts(s, in, op, 5)) &&
         set(s, in, op, 0, "call_target_name",
             av_attr_string(s->ctx->m, AV_ATTR_STRING, target, strlen(target))) &&
         set(s, in, op, 1, "backend_config",
             av_attr_string(s->ctx->m, AV_ATTR_STRING, (const char *)in->backend_config.p,
                            in->backend_config.n)) &&
         set(s, in, op, 2, "has_side_effect", a_bool(s, in->custom_call_has_side_effect)) &&
         set(s, in, op, 3, "api_version", a_i32(s, in->custom_call_api_version)) &&
         set(s, in, op, 4, "called_computations", av_attr_array(s->ctx->m, ncalled, callees)) &&
         results(s, in, op, out);
}

static bool h_opt_barrier(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  av_value **ops;
  size_t nops;
  if (!flat_operands(s, in, 0, &ops, &nops)) return false;
  if (nops != hlo_shape_leaf_count(&in->shape))
    return hlo_fail(s, in, "operand and result shapes differ");
  av_op *op = new_op(s, in, name, ops, nops, 0, 0);
  return op && results(s, in, op, out);
}

static bool h_reduce_precision(hlo_scope *s, const hlo_instr *in, const char *name,
                               hlo_val **out) {
  if (!need(s, in, 1, 1)) return false;
  SIMPLE_OP(2);
  return set(s, in, op, 0, "exponent_bits", a_i32(s, in->exponent_bits)) &&
         set(s, in, op, 1, "mantissa_bits", a_i32(s, in->mantissa_bits)) &&
         results(s, in, op, out);
}

static bool h_batch_norm(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  av_value **ops;
  size_t nops;
  if (!leaf_operands(s, in, &ops, &nops)) return false;
  av_op *op = new_op(s, in, name, ops, nops, 2, 0);
  return op && set(s, in, op, 0, "epsilon", av_attr_float(s->ctx->m, in->epsilon, s->ctx->f32)) &&
         set(s, in, op, 1, "feature_index", a_int(s, in->feature_index)) &&
         results(s, in, op, out);
}

static bool h_fft(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  static const char *const kTypes[] = {"FFT", "IFFT", "RFFT", "IRFFT"};
  if (!need(s, in, 1, 1)) return false;
  if (in->fft_type < 0 || in->fft_type > 3)
    return hlo_fail(s, in, "unknown fft type %lld", (long long)in->fft_type);
  SIMPLE_OP(2);
  return set(s, in, op, 0, "fft_type", a_enum(s, kTypes[in->fft_type])) &&
         set(s, in, op, 1, "fft_length", a_ints(s, &in->fft_length)) && results(s, in, op, out);
}

static bool h_cholesky(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  if (!need(s, in, 1, 1)) return false;
  SIMPLE_OP(1);
  return set(s, in, op, 0, "lower", a_bool(s, in->lower)) && results(s, in, op, out);
}

static bool h_triangular_solve(hlo_scope *s, const hlo_instr *in, const char *name,
                               hlo_val **out) {
  static const char *const kTranspose[] = {"NO_TRANSPOSE", "NO_TRANSPOSE", "TRANSPOSE",
                                           "ADJOINT"};
  if (!need(s, in, 2, 2)) return false;
  if (in->transpose_a < 0 || in->transpose_a > 3)
    return hlo_fail(s, in, "unknown transpose_a %lld", (long long)in->transpose_a);
  SIMPLE_OP(4);
  return set(s, in, op, 0, "left_side", a_bool(s, in->left_side)) &&
         set(s, in, op, 1, "lower", a_bool(s, in->lower)) &&
         set(s, in, op, 2, "unit_diagonal", a_bool(s, in->unit_diagonal)) &&
         set(s, in, op, 3, "transpose_a", a_enum(s, kTranspose[in->transpose_a])) &&
         results(s, in, op, out);
}

/* topk (largest) -> chlo.top_k; the smallest-k form has no counterpart. */
static bool h_topk(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  if (!in->largest) return h_unknown(s, in, name, out);
  if (!need(s, in, 1, 1)) return false;
  av_value *x = leaf(s, in, 0);
  if (!x) return false;
  av_op *op = new_op(s, in, name, &x, 1, 1, 0);
  if (!op) return false;
  if (op->nresults != 2) return hlo_fail(s, in, "result must be a (values, indices) tuple");
  return set(s, in, op, 0, "k", a_int(s, in->k)) && results(s, in, op, out);
}

static const av_attr *a_bytes(hlo_scope *s, hlo_bytes b) {
  return av_attr_string(s->ctx->m, AV_ATTR_STRING, b.p ? (const char *)b.p : "", b.n);
}

/* infeed(token) -> ((data...), token): StableHLO's results are (data..., token), the same
 * leaves in the same order. */
static bool h_infeed(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  if (!need(s, in, 1, 1)) return false;
  av_value *tok = leaf(s, in, 0);
  if (!tok) return false;
  av_op *op = new_op(s, in, name, &tok, 1, 1, 0);
  return op && set(s, in, op, 0, "infeed_config", a_bytes(s, in->infeed_config)) &&
         results(s, in, op, out);
}

/* outfeed(data, token) -> token, data flattened. */
static bool h_outfeed(hlo_scope *s, const hlo_instr *in, const char *name, hlo_val **out) {
  if (!need(s, in, 2, 2)) return false;
  av_value **ops;
  size_t nops;
  if (!flat_operands(s, in, 0, &ops, &nops)) return false;
  av_op *op = new_op(s, in, name, ops, nops, 1, 0);
  return op && set(s, in, op, 0, "outfeed_config", a_bytes(s, in->outfeed_config)) &&
         results(s, in, op, out);
}

/* ------------------------------------------------------------------ table */

typedef struct op_entry {
  const char *opcode;
  const char *name;
  handler h;
} op_entry;

static const op_entry kOps[] = {
    /* structure */
    {"parameter", NULL, h_parameter},
    {"constant", "stablehlo.constant", h_constant},
    {"tuple", NULL, h_tuple},
    {"get-tuple-element", NULL, h_gte},
    {"copy", NULL, h_forward},
    {"domain", NULL, h_forward},
    {"add-dependency", NULL, h_forward},
    {"bitcast", NULL, h_bitcast},
    {"call", NULL, h_call},
    {"fusion", NULL, h_call},
    {"while", "stablehlo.while", h_while},
    {"conditional", NULL, h_conditional},
    {"opt-barrier", "stablehlo.optimization_barrier", h_opt_barrier},
    {"after-all", "stablehlo.after_all", h_plain},
    {"infeed", "stablehlo.infeed", h_infeed},
    {"outfeed", "stablehlo.outfeed", h_outfeed},
    {"custom-call", "stablehlo.custom_call", h_custom_call},
    /* unary elementwise */
    {"abs", "stablehlo.abs", h_unary},
    {"cbrt", "stablehlo.cbrt", h_unary},
    {"ceil", "stablehlo.ceil", h_unary},
    {"cosine", "stablehlo.cosine", h_unary},
    {"count-leading-zeros", "stablehlo.count_leading_zeros", h_unary},
    {"erf", "chlo.erf", h_unary},
    {"exponential", "stablehlo.exponential", h_unary},
    {"exponential-minus-one", "stablehlo.exponential_minus_one", h_unary},
    {"floor", "stablehlo.floor", h_unary},
    {"imag", "stablehlo.imag", h_unary},
    {"is-finite", "stablehlo.is_finite", h_unary},
    {"log", "stablehlo.log", h_unary},
    {"log-plus-one", "stablehlo.log_plus_one", h_unary},
    {"logistic", "stablehlo.logistic", h_unary},
    {"negate", "stablehlo.negate", h_unary},
    {"not", "stablehlo.not", h_unary},
    {"popcnt", "stablehlo.popcnt", h_unary},
    {"real", "stablehlo.real", h_unary},
    {"round-nearest-afz", "stablehlo.round_nearest_afz", h_unary},
    {"round-nearest-even", "stablehlo.round_nearest_even", h_unary},
    {"rsqrt", "stablehlo.rsqrt", h_unary},
    {"sign", "stablehlo.sign", h_unary},
    {"sine", "stablehlo.sine", h_unary},
    {"sqrt", "stablehlo.sqrt", h_unary},
    {"tan", "stablehlo.tan", h_unary},
    {"tanh", "stablehlo.tanh", h_unary},
    {"convert", "stablehlo.convert", h_unary},
    {"bitcast-convert", "stablehlo.bitcast_convert", h_unary},
    {"reshape", "stablehlo.reshape", h_unary},
    /* binary elementwise */
    {"add", "stablehlo.add", h_binary},
    {"and", "stablehlo.and", h_binary},
    {"atan2", "stablehlo.atan2", h_binary},
    {"complex", "stablehlo.complex", h_binary},
    {"divide", "stablehlo.divide", h_binary},
    {"maximum", "stablehlo.maximum", h_binary},
    {"minimum", "stablehlo.minimum", h_binary},
    {"multiply", "stablehlo.multiply", h_binary},
    {"or", "stablehlo.or", h_binary},
    {"power", "stablehlo.power", h_binary},
    {"remainder", "stablehlo.remainder", h_binary},
    {"shift-left", "stablehlo.shift_left", h_binary},
    {"shift-right-arithmetic", "stablehlo.shift_right_arithmetic", h_binary},
    {"shift-right-logical", "stablehlo.shift_right_logical", h_binary},
    {"subtract", "stablehlo.subtract", h_binary},
    {"xor", "stablehlo.xor", h_binary},
    {"select", "stablehlo.select", h_ternary},
    {"clamp", "stablehlo.clamp", h_ternary},
    {"compare", "stablehlo.compare", h_compare},
    /* shape manipulation */
    {"broadcast", "stablehlo.broadcast_in_dim", h_broadcast},
    {"transpose", "stablehlo.transpose", h_transpose},
    {"reverse", "stablehlo.reverse", h_reverse},
    {"slice", "stablehlo.slice", h_slice},
    {"dynamic-slice", "stablehlo.dynamic_slice", h_dynamic_slice},
    {"dynamic-update-slice", "stablehlo.dynamic_update_slice", h_dynamic_update_slice},
    {"concatenate", "stablehlo.concatenate", h_concatenate},
    {"pad", "stablehlo.pad", h_pad},
    {"iota", "stablehlo.iota", h_iota},
    {"get-dimension-size", "stablehlo.get_dimension_size", h_get_dimension_size},
    {"set-dimension-size", "stablehlo.set_dimension_size", h_set_dimension_size},
    /* linear algebra, windows, indexing */
    {"dot", "stablehlo.dot_general", h_dot},
    {"convolution", "stablehlo.convolution", h_convolution},
    {"reduce", "stablehlo.reduce", h_reduce},
    {"reduce-window", "stablehlo.reduce_window", h_reduce_window},
    {"select-and-scatter", "stablehlo.select_and_scatter", h_select_and_scatter},
    {"gather", "stablehlo.gather", h_gather},
    {"scatter", "stablehlo.scatter", h_scatter},
    {"sort", "stablehlo.sort", h_sort},
    {"map", "stablehlo.map", h_map},
    {"reduce-precision", "stablehlo.reduce_precision", h_reduce_precision},
    {"batch-norm-training", "stablehlo.batch_norm_training", h_batch_norm},
    {"batch-norm-inference", "stablehlo.batch_norm_inference", h_batch_norm},
    {"batch-norm-grad", "stablehlo.batch_norm_grad", h_batch_norm},
    {"fft", "stablehlo.fft", h_fft},
    {"cholesky", "stablehlo.cholesky", h_cholesky},
    {"triangular-solve", "stablehlo.triangular_solve", h_triangular_solve},
    {"topk", "chlo.top_k", h_topk},
    /* random numbers */
    {"rng", "stablehlo.rng", h_rng},
    {"rng-bit-generator", "stablehlo.rng_bit_generator", h_rng_bit_generator},
    /* collectives */
    {"all-reduce", "stablehlo.all_reduce", h_all_reduce},
    {"all-gather", "stablehlo.all_gather", h_all_gather},
    {"reduce-scatter", "stablehlo.reduce_scatter", h_reduce_scatter},
    {"all-to-all", "stablehlo.all_to_all", h_all_to_all},
    {"collective-permute", "stablehlo.collective_permute", h_collective_permute},
    {"replica-id", "stablehlo.replica_id", h_plain},
    {"partition-id", "stablehlo.partition_id", h_plain},
};

bool hlo_import_instr(hlo_scope *s, const hlo_instr *in, hlo_val **out) {
  for (size_t i = 0; i < sizeof kOps / sizeof kOps[0]; i++)
    if (strcmp(kOps[i].opcode, in->opcode) == 0) return kOps[i].h(s, in, kOps[i].name, out);
  if (!in->opcode[0]) return hlo_fail(s, in, "instruction without an opcode");
  return h_unknown(s, in, NULL, out);
}
