/* Quantized types -> integer and float ops (see quant_legalize.h for the arithmetic).
 *
 * Two walks over every function:
 *  1. Ops whose meaning depends on the quantization (quantize, dequantize, add, dot,
 *     convolution and the elementwise ops) are replaced by new ops inserted before them. The
 *     new ops read replacements (c->map) of the old values, while the quantization parameters
 *     are read from the old values' types, which stay as they were during this walk.
 *  2. Every type left quantized (block arguments, function signatures, data-movement ops that
 *     run on the stored integers) becomes its storage type. */
#include "compiler/quant_legalize.h"

#include "compiler/attrs.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct qctx {
  av_module *m;
  av_diag *d;
  int nerrors;
  av_value **map; /* old value id -> its replacement; ids >= nmap are new values */
  uint32_t nmap;
  av_block *b;    /* new ops go into b before `before` */
  av_op *before;
} qctx;

static bool has_quant(const av_type *t) {
  if (!t) return false;
  if (t->kind == AV_TYPE_TENSOR) return t->quant != NULL;
  if (t->kind == AV_TYPE_TUPLE || t->kind == AV_TYPE_FUNCTION)
    for (int i = 0; i < t->nelems; i++)
      if (has_quant(t->elems[i])) return true;
  return false;
}

static bool fail(qctx *c, const av_op *op, av_code code, const char *why) {
  c->nerrors++;
  av_diag_set(c->d, code, "%s at %s: %s", op->name, op->loc, why);
  return false;
}

/* The type with its quantized tensors replaced by their storage tensors. */
static const av_type *storage_type(qctx *c, const av_type *t) {
  if (!has_quant(t)) return t;
  if (t->kind == AV_TYPE_TENSOR) {
    av_type *s = (av_type *)av_type_tensor(c->m, t->dtype, t->rank, t->dims);
    if (s) s->encoding = t->encoding;
    return s;
  }
  const av_type **e = av_arena_calloc(&c->m->arena, (size_t)t->nelems + 1, sizeof *e);
  if (!e) return NULL;
  for (int i = 0; i < t->nelems; i++)
    if (!(e[i] = storage_type(c, t->elems[i]))) return NULL;
  if (t->kind == AV_TYPE_TUPLE) return av_type_tuple(c->m, t->nelems, e);
  return av_type_function(c->m, t->ninputs, e, t->nelems - t->ninputs, e + t->ninputs);
}

static av_value *repl(const qctx *c, av_value *v) {
  return v && v->id < c->nmap && c->map[v->id] ? c->map[v->id] : v;
}

/* ------------------------------------------------------------ building ops */

static const av_type *shaped(qctx *c, const av_type *like, av_dtype dt) {
  return av_type_tensor(c->m, dt, like->rank, like->dims);
}

/* A new op before the one being rewritten; NULL (propagated by every helper) when out of
 * memory or given a NULL operand. */
static av_op *add_op(qctx *c, const char *name, uint32_t nops, av_value *const *ops,
                     uint32_t nres, const av_type *const *rtypes, uint32_t nattrs,
                     const av_named_attr *attrs) {
  for (uint32_t i = 0; i < nops; i++)
    if (!ops[i]) return NULL;
  for (uint32_t i = 0; i < nres; i++)
    if (!rtypes[i]) return NULL;
  av_op *op = av_op_new(c->m, name, nops, nres, rtypes, nattrs, 0);
  if (!op) return NULL;
  for (uint32_t i = 0; i < nops; i++) op->operands[i] = ops[i];
  for (uint32_t i = 0; i < nattrs; i++) op->attrs[i] = attrs[i];
  op->loc = c->before->loc;
  av_block_insert_before(c->b, c->before, op);
  return op;
}

static av_value *emit(qctx *c, const char *name, const av_type *rt, uint32_t nops,
                      av_value *const *ops, uint32_t nattrs, const av_named_attr *attrs) {
  av_op *op = add_op(c, name, nops, ops, 1, &rt, nattrs, attrs);
  return op ? &op->results[0] : NULL;
}

/* v as a 32-bit integer, wrapping like the reference's static_cast<int32_t> of a zero point */
static int32_t wrap_i32(double v) {
  if (!(v >= -9.2e18 && v <= 9.2e18)) return 0; /* never for the integers stored here */
  return (int32_t)(uint32_t)(uint64_t)(int64_t)v;
}

/* A constant of type t from n doubles (n == 1: a splat), stored as t's dtype: f32, or a
 * 32-bit integer. */
static av_value *constant(qctx *c, const av_type *t, const double *v, size_t n) {
  if (!t || av_dtype_size(t->dtype) != 4) return NULL;
  void *data = av_arena_calloc(&c->m->arena, n, 4);
  if (!data) return NULL;
  for (size_t i = 0; i < n; i++) {
    if (t->dtype == AV_DT_F32) ((float *)data)[i] = (float)v[i];
    else ((int32_t *)data)[i] = wrap_i32(v[i]);
  }
  const av_attr *a = av_attr_dense(c->m, t, data, n * 4, n == 1, true);
  if (!a) return NULL;
  av_named_attr attr = {"value", a};
  return emit(c, "stablehlo.constant", t, 0, NULL, 1, &attr);
}

static av_value *scalar(qctx *c, av_dtype dt, double v) {
  return constant(c, av_type_tensor(c->m, dt, 0, NULL), &v, 1);
}

/* A tensor shaped like `like` holding v[k] at index k of dimension axis (n == 1: everywhere). */
static av_value *per_channel(qctx *c, const av_type *like, av_dtype dt, const double *v,
                             uint32_t n, int axis) {
  if (n == 1 || axis < 0) return constant(c, shaped(c, like, dt), v, 1);
  int64_t dim = n;
  av_value *vec = constant(c, av_type_tensor(c->m, dt, 1, &dim), v, n);
  int64_t bdim = axis;
  av_named_attr attr = {"broadcast_dimensions", av_attr_ints(c->m, 1, &bdim)};
  if (!attr.value) return NULL;
  return emit(c, "stablehlo.broadcast_in_dim", shaped(c, like, dt), 1, &vec, 1, &attr);
}

static av_value *splat_like(qctx *c, const av_value *like, av_dtype dt, double v) {
  return like ? constant(c, shaped(c, like->type, dt), &v, 1) : NULL;
}

static av_value *binary(qctx *c, const char *name, av_value *a, av_value *b) {
  if (!a || !b) return NULL;
  av_value *ops[2] = {a, b};
  return emit(c, name, a->type, 2, ops, 0, NULL);
}

static av_value *unary(qctx *c, const char *name, av_value *a) {
  return a ? emit(c, name, a->type, 1, &a, 0, NULL) : NULL;
}

static av_value *convert(qctx *c, av_value *v, av_dtype dt) {
  if (!v) return NULL;
  return emit(c, "stablehlo.convert", shaped(c, v->type, dt), 1, &v, 0, NULL);
}

static av_value *clamp(qctx *c, double lo, av_value *v, double hi) {
  if (!v) return NULL;
  av_value *ops[3] = {scalar(c, v->type->dtype, lo), v, scalar(c, v->type->dtype, hi)};
  return emit(c, "stablehlo.clamp", v->type, 3, ops, 0, NULL);
}

/* ------------------------------------------------------- quantization math */

static double *doubles(qctx *c, uint32_t n) {
  return av_arena_calloc(&c->m->arena, n, sizeof(double));
}

static av_value *channel_scales(qctx *c, const av_type *like, const av_quant *q) {
  return per_channel(c, like, AV_DT_F32, q->scales, q->n, q->axis);
}

static av_value *channel_zero_points(qctx *c, const av_type *like, av_dtype dt,
                                     const av_quant *q) {
  double *zp = doubles(c, q->n);
  if (!zp) return NULL;
  for (uint32_t i = 0; i < q->n; i++) zp[i] = (double)q->zero_points[i];
  return per_channel(c, like, dt, zp, q->n, q->axis);
}

static bool zero_points_zero(const av_quant *q) {
  for (uint32_t i = 0; i < q->n; i++)
    if (q->zero_points[i]) return false;
  return true;
}

/* float x -> stored integers of quantized type qt */
static av_value *quantize(qctx *c, av_value *x, const av_type *qt) {
  const av_quant *q = qt->quant;
  if (x && x->type->dtype != AV_DT_F32) x = convert(c, x, AV_DT_F32);
  if (!x) return NULL;
  av_value *t = binary(c, "stablehlo.divide", x, channel_scales(c, x->type, q));
  t = binary(c, "stablehlo.add", t, channel_zero_points(c, x->type, AV_DT_F32, q));
  t = clamp(c, (double)(float)q->storage_min, t, (double)(float)q->storage_max);
  t = unary(c, "stablehlo.round_nearest_even", t);
  return convert(c, t, qt->dtype);
}

/* stored integers x of quantized type qt -> real values of dtype dt */
static av_value *dequantize(qctx *c, av_value *x, const av_type *qt, av_dtype dt) {
  const av_quant *q = qt->quant;
  av_value *i = convert(c, x, AV_DT_S32);
  if (!i) return NULL;
  i = binary(c, "stablehlo.subtract", i, channel_zero_points(c, i->type, AV_DT_S32, q));
  av_value *f = convert(c, i, AV_DT_F32);
  if (!f) return NULL;
  f = binary(c, "stablehlo.multiply", f, channel_scales(c, f->type, q));
  return dt == AV_DT_F32 ? f : convert(c, f, dt);
}

/* Stored integers of type `from` re-expressed in the scale and zero point of `to`, as dtype
 * dt: x * (s/s') + (zp' - zp * s/s') rounded in f32; clamped to to's range when dt is
 * narrower than 32 bits. */
static av_value *requantize(qctx *c, av_value *x, const av_type *from, const av_type *to,
                            av_dtype dt) {
  const av_quant *a = from->quant, *b = to->quant;
  if (from->dtype == to->dtype && av_quant_equal(a, b)) return convert(c, x, dt);
  uint32_t n = a->n > b->n ? a->n : b->n;
  int axis = a->axis >= 0 ? a->axis : b->axis;
  double *scale = doubles(c, n), *zp = doubles(c, n);
  if (!scale || !zp || !x) return NULL;
  bool any_zp = false;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t ia = a->n == 1 ? 0 : i, ib = b->n == 1 ? 0 : i;
    scale[i] = a->scales[ia] / b->scales[ib];
    zp[i] = (double)b->zero_points[ib] - (double)a->zero_points[ia] * scale[i];
    any_zp |= n == 1 ? zp[i] != 0 : (float)zp[i] != 0;
  }
  av_value *f = convert(c, x, AV_DT_F32);
  if (!f) return NULL;
  f = binary(c, "stablehlo.multiply", f, per_channel(c, f->type, AV_DT_F32, scale, n, axis));
  if (any_zp)
    f = binary(c, "stablehlo.add", f, per_channel(c, x->type, AV_DT_F32, zp, n, axis));
  if (av_dtype_bits(dt) < 32) f = clamp(c, (double)(float)b->storage_min, f, (double)(float)b->storage_max);
  f = unary(c, "stablehlo.round_nearest_even", f);
  return convert(c, f, dt);
}

/* ----------------------------------------------------------------- rewrites */

/* A copy of op on new operands and result types (attributes shared, regions moved). */
static av_op *clone_op(qctx *c, av_op *op, av_value *const *ops, const av_type *const *rtypes) {
  av_op *n = add_op(c, op->name, op->noperands, ops, op->nresults, rtypes, op->nattrs, op->attrs);
  if (!n) return NULL;
  if (op->nregions) {
    n->regions = op->regions;
    n->nregions = op->nregions;
    op->regions = NULL;
    op->nregions = 0;
    for (uint32_t r = 0; r < n->nregions; r++)
      for (uint32_t k = 0; k < n->regions[r].nblocks; k++) n->regions[r].blocks[k].parent = &n->regions[r];
  }
  return n;
}

static const av_type *operand_t(const av_op *op, uint32_t i) { return op->operands[i]->type; }

static void set_result(qctx *c, av_op *op, uint32_t i, av_value *v) {
  if (op->results[i].id < c->nmap) c->map[op->results[i].id] = v;
}

/* dequantize -> op on the expressed type -> quantize */
static bool rewrite_qdq(qctx *c, av_op *op) {
  av_value **ops = av_arena_calloc(&c->m->arena, (size_t)op->noperands + 1, sizeof *ops);
  const av_type **rt = av_arena_calloc(&c->m->arena, (size_t)op->nresults + 1, sizeof *rt);
  if (!ops || !rt) return false;
  for (uint32_t i = 0; i < op->noperands; i++) {
    const av_type *t = operand_t(op, i);
    av_value *v = repl(c, op->operands[i]);
    ops[i] = t->kind == AV_TYPE_TENSOR && t->quant ? dequantize(c, v, t, t->quant->expressed) : v;
  }
  for (uint32_t i = 0; i < op->nresults; i++) {
    const av_type *t = op->results[i].type;
    if (has_quant(t) && t->kind != AV_TYPE_TENSOR) return fail(c, op, AV_UNIMPLEMENTED, "quantized tuple results");
    rt[i] = t->quant ? shaped(c, t, t->quant->expressed) : t;
  }
  av_op *n = clone_op(c, op, ops, rt);
  if (!n) return false;
  for (uint32_t i = 0; i < op->nresults; i++) {
    const av_type *t = op->results[i].type;
    set_result(c, op, i, t->quant ? quantize(c, &n->results[i], t) : &n->results[i]);
  }
  return true;
}

static bool rewrite_quantize(qctx *c, av_op *op) {
  const av_type *in = operand_t(op, 0), *out = op->results[0].type;
  av_value *x = repl(c, op->operands[0]);
  if (!out->quant) return fail(c, op, AV_INVALID_ARGUMENT, "result must be quantized");
  if (!in->quant) {
    set_result(c, op, 0, quantize(c, x, out));
    return true;
  }
  if (in->quant->axis >= 0 && out->quant->axis >= 0 && in->quant->axis != out->quant->axis)
    return fail(c, op, AV_UNIMPLEMENTED, "requantizing to another quantized dimension");
  set_result(c, op, 0, requantize(c, x, in, out, out->dtype));
  return true;
}

static bool rewrite_add(qctx *c, av_op *op) {
  const av_type *l = operand_t(op, 0), *r = operand_t(op, 1), *res = op->results[0].type;
  av_value *lv = repl(c, op->operands[0]), *rv = repl(c, op->operands[1]);
  if (!l->quant || !r->quant || !res->quant) return rewrite_qdq(c, op);
  if (l->quant->axis < 0 && r->quant->axis < 0 && res->quant->axis < 0) {
    av_value *s = binary(c, "stablehlo.add", requantize(c, lv, l, res, AV_DT_S32),
                         requantize(c, rv, r, res, AV_DT_S32));
    s = binary(c, "stablehlo.subtract", s,
               splat_like(c, s, AV_DT_S32, (double)res->quant->zero_points[0]));
    if (av_dtype_bits(res->dtype) < 32)
      s = clamp(c, (double)res->quant->storage_min, s, (double)res->quant->storage_max);
    set_result(c, op, 0, res->dtype == AV_DT_S32 ? s : convert(c, s, res->dtype));
    return true;
  }
  /* per axis: only the same type everywhere with i32 storage (the fused conv/dot case) */
  if (av_type_equal(l, r) && av_type_equal(l, res) && res->dtype == AV_DT_S32) {
    av_value *s = binary(c, "stablehlo.add", lv, rv);
    if (!zero_points_zero(res->quant))
      s = binary(c, "stablehlo.subtract", s, channel_zero_points(c, res, res->dtype, res->quant));
    set_result(c, op, 0, s);
    return true;
  }
  return rewrite_qdq(c, op);
}

/* A copy of dot/dot_general/convolution op on new operands with result type rt. */
static av_value *dot_like(qctx *c, av_op *op, av_value *l, av_value *r, const av_type *rt) {
  av_value *ops[2] = {l, r};
  av_op *n = clone_op(c, op, ops, &rt);
  return n ? &n->results[0] : NULL;
}

/* f32(x) * scale -> i32, truncating like convert does */
static av_value *rescale_i32(qctx *c, av_value *x, double scale) {
  av_value *f = convert(c, x, AV_DT_F32);
  return convert(c, binary(c, "stablehlo.multiply", f, splat_like(c, f, AV_DT_F32, scale)), AV_DT_S32);
}

/* The convolutions the reference lowers in integers: rhs (and a per-axis result) with zero
 * points 0, a per-axis rhs quantized on its last dimension with the same result/rhs scale
 * ratio on every channel, no lhs dilation, and one of the layouts b01f x 01io, bf01 x oi01,
 * b012f x 012io, bf012 x io012 (to the same output layout). Others take the
 * dequantize-op-quantize form. */
static bool conv_integer_form(const av_op *op, const av_type *r, const av_type *res) {
  const av_quant *rq = r->quant, *resq = res->quant;
  if (!zero_points_zero(rq) || (rq->axis >= 0 && !zero_points_zero(resq))) return false;
  if (rq->axis >= 0) {
    if (rq->axis != r->rank - 1 || resq->n != rq->n) return false;
    double r0 = resq->scales[0] / rq->scales[0];
    for (uint32_t i = 0; i < rq->n; i++)
      if (fabs((resq->scales[i] / rq->scales[i] - r0) / r0) > 0.001) return false;
  }
  int64_t v[8];
  size_t n;
  if (av_attr_get_ints(op, "lhs_dilation", v, 8, &n))
    for (size_t i = 0; i < n; i++)
      if (v[i] != 1) return false;
  static const char *const names[] = {"input_batch_dimension", "input_feature_dimension",
                                      "kernel_input_feature_dimension",
                                      "kernel_output_feature_dimension", "output_batch_dimension",
                                      "output_feature_dimension"};
  static const char *const spatial[] = {"input_spatial_dimensions", "kernel_spatial_dimensions",
                                        "output_spatial_dimensions"};
  /* per layout: the six dimensions above, then the first input, kernel and output spatial
   * dimension (the others follow it), and the number of spatial dimensions */
  static const int64_t layouts[4][10] = {{0, 3, 2, 3, 0, 3, 1, 0, 1, 2}, {0, 1, 1, 0, 0, 1, 2, 2, 2, 2},
                                         {0, 4, 3, 4, 0, 4, 1, 0, 1, 3}, {0, 1, 0, 1, 0, 1, 2, 2, 2, 3}};
  int64_t got[6];
  for (int i = 0; i < 6; i++)
    if (!av_attr_get_int(op, names[i], &got[i])) return false;
  for (int l = 0; l < 4; l++) {
    bool ok = memcmp(got, layouts[l], sizeof got) == 0;
    for (int k = 0; ok && k < 3; k++) {
      ok = av_attr_get_ints(op, spatial[k], v, 8, &n) && n == (size_t)layouts[l][9];
      for (size_t i = 0; ok && i < n; i++) ok = v[i] == layouts[l][6 + k] + (int64_t)i;
    }
    if (ok) return true;
  }
  return false;
}

/* conv(l padded with zp, r) with no padding of its own: the reference's uncentred product */
static av_value *conv_padded(qctx *c, av_op *op, av_value *l, double zp, av_value *r,
                             const av_type *rt) {
  int64_t pad[16], sp[8];
  size_t npad = 0, nsp = 0;
  if (!l || !av_attr_get_ints(op, "input_spatial_dimensions", sp, 8, &nsp)) return NULL;
  if (!av_attr_get_ints(op, "padding", pad, 16, &npad)) npad = 0;
  if (npad != 2 * nsp) { /* no padding */
    npad = 2 * nsp;
    memset(pad, 0, sizeof pad);
  }
  int rank = l->type->rank;
  if (rank > 8) return NULL; /* conv_integer_form admits ranks 4 and 5 */
  int64_t lo[8] = {0}, hi[8] = {0}, in[8] = {0}, dims[8];
  for (int i = 0; i < rank; i++) dims[i] = l->type->dims[i];
  for (size_t i = 0; i < nsp; i++) {
    if (sp[i] < 0 || sp[i] >= rank) return NULL;
    lo[sp[i]] = pad[2 * i];
    hi[sp[i]] = pad[2 * i + 1];
    dims[sp[i]] += lo[sp[i]] + hi[sp[i]];
  }
  av_named_attr pa[3] = {{"edge_padding_low", av_attr_ints(c->m, (size_t)rank, lo)},
                         {"edge_padding_high", av_attr_ints(c->m, (size_t)rank, hi)},
                         {"interior_padding", av_attr_ints(c->m, (size_t)rank, in)}};
  av_value *ops[2] = {l, scalar(c, AV_DT_S32, zp)};
  av_value *padded = emit(c, "stablehlo.pad", av_type_tensor(c->m, AV_DT_S32, rank, dims), 2, ops,
                          3, pa);
  av_named_attr *attrs = av_arena_calloc(&c->m->arena, (size_t)op->nattrs + 1, sizeof *attrs);
  int64_t zeros[16] = {0};
  const av_attr *nopad = av_attr_ints(c->m, npad, zeros);
  if (!padded || !attrs || !nopad) return NULL;
  for (uint32_t i = 0; i < op->nattrs; i++) {
    attrs[i] = op->attrs[i];
    if (strcmp(attrs[i].name, "padding") == 0) attrs[i].value = nopad;
  }
  av_value *pr[2] = {padded, r};
  av_op *n = add_op(c, op->name, 2, pr, 1, &rt, op->nattrs, attrs);
  return n ? &n->results[0] : NULL;
}

static bool rewrite_dot(qctx *c, av_op *op) {
  const av_type *l = operand_t(op, 0), *r = operand_t(op, 1), *res = op->results[0].type;
  const av_quant *lq = l->quant, *rq = r->quant, *resq = res->quant;
  av_value *lv = repl(c, op->operands[0]), *rv = repl(c, op->operands[1]);
  if (!lq && rq && !resq) { /* weight-only: float lhs, quantized rhs, float result */
    av_value *rf = convert(c, rv, AV_DT_F32);
    if (!zero_points_zero(rq))
      rf = binary(c, "stablehlo.subtract", rf, channel_zero_points(c, r, AV_DT_F32, rq));
    rf = binary(c, "stablehlo.multiply", rf, channel_scales(c, r, rq));
    set_result(c, op, 0, dot_like(c, op, lv, rf, res));
    return true;
  }
  /* the integer form: per-tensor lhs; rhs and result both per tensor or both per axis */
  if (!lq || lq->axis >= 0 || !rq || !resq || (rq->axis < 0) != (resq->axis < 0) ||
      (op->code == AV_OP_CONVOLUTION && !conv_integer_form(op, r, res)))
    return rewrite_qdq(c, op);
  /* Per-axis rhs and results count as zero point 0 and use their first scale, as in the
   * reference lowering. */
  double lzp = (double)lq->zero_points[0], rzp = rq->axis < 0 ? (double)rq->zero_points[0] : 0;
  double res_zp = resq->axis < 0 ? (double)resq->zero_points[0] : 0;
  double scale = lq->scales[0] * rq->scales[0] / resq->scales[0];
  const av_type *acc = shaped(c, res, AV_DT_S32);
  av_value *l32 = convert(c, lv, AV_DT_S32), *r32 = convert(c, rv, AV_DT_S32);
  av_value *lc = lzp != 0 ? binary(c, "stablehlo.subtract", l32, splat_like(c, l32, AV_DT_S32, lzp)) : l32;
  av_value *rc = rzp != 0 ? binary(c, "stablehlo.subtract", r32, splat_like(c, r32, AV_DT_S32, rzp)) : r32;
  /* sum((l - lzp)(r - rzp)), exact in i32; a convolution's padding then stands for lzp */
  av_value *out = dot_like(c, op, lc, rc, acc);
  if (fabs(scale - 1.0) > 0.001) {
    /* The reference rescales dot(l, r) and the zero-point terms dot(l, r) - out apart, each
     * truncated to i32, so the same is done here. */
    bool offset = lzp != 0 || rzp != 0;
    av_value *raw = !offset ? out
                    : op->code == AV_OP_CONVOLUTION ? conv_padded(c, op, l32, lzp, r32, acc)
                                                    : dot_like(c, op, l32, r32, acc);
    av_value *scaled = rescale_i32(c, raw, scale);
    if (offset)
      scaled = binary(c, "stablehlo.subtract", scaled,
                      rescale_i32(c, binary(c, "stablehlo.subtract", raw, out), scale));
    out = scaled;
  }
  out = binary(c, "stablehlo.add", out, splat_like(c, out, AV_DT_S32, res_zp));
  set_result(c, op, 0, res->dtype == AV_DT_S32 ? out : convert(c, out, res->dtype));
  return true;
}

/* Ops that only move or pick stored values: they run on the storage type unchanged. */
static bool moves_values(const av_op *op) {
  switch (op->code) {
    case AV_OP_BITCAST_CONVERT: case AV_OP_BROADCAST_IN_DIM: case AV_OP_COMPOSITE:
    case AV_OP_CONCATENATE: case AV_OP_CONSTANT: case AV_OP_DYNAMIC_RESHAPE:
    case AV_OP_DYNAMIC_SLICE: case AV_OP_DYNAMIC_UPDATE_SLICE: case AV_OP_GATHER:
    case AV_OP_PAD: case AV_OP_REDUCE_WINDOW: case AV_OP_RESHAPE: case AV_OP_SELECT:
    case AV_OP_SLICE: case AV_OP_TRANSPOSE: case AV_OP_GET_DIMENSION_SIZE:
    case AV_OP_DYNAMIC_BROADCAST_IN_DIM: case AV_OP_REVERSE:
    /* structure: values pass through unchanged */
    case AV_OP_FUNC_RETURN: case AV_OP_RETURN: case AV_OP_FUNC_CALL: case AV_OP_CALL:
    case AV_OP_WHILE: case AV_OP_IF: case AV_OP_CASE: case AV_OP_OPTIMIZATION_BARRIER:
    case AV_OP_TUPLE: case AV_OP_GET_TUPLE_ELEMENT:
      return true;
    default:
      return false;
  }
}

/* Ops computed on the real values: dequantize -> op -> quantize. */
static bool computes_values(const av_op *op) {
  switch (op->code) {
    case AV_OP_ABS: case AV_OP_ATAN2: case AV_OP_BATCH_NORM_GRAD: case AV_OP_BATCH_NORM_INFERENCE:
    case AV_OP_BATCH_NORM_TRAINING: case AV_OP_CBRT: case AV_OP_CEIL: case AV_OP_CHOLESKY:
    case AV_OP_CLAMP: case AV_OP_COMPARE: case AV_OP_COSINE: case AV_OP_DIVIDE:
    case AV_OP_EXPONENTIAL_MINUS_ONE: case AV_OP_EXPONENTIAL: case AV_OP_FLOOR:
    case AV_OP_LOG_PLUS_ONE: case AV_OP_LOGISTIC: case AV_OP_LOG: case AV_OP_MAXIMUM:
    case AV_OP_MINIMUM: case AV_OP_MULTIPLY: case AV_OP_NEGATE: case AV_OP_POWER:
    case AV_OP_REDUCE_PRECISION: case AV_OP_REMAINDER: case AV_OP_ROUND_NEAREST_AFZ:
    case AV_OP_ROUND_NEAREST_EVEN: case AV_OP_RSQRT: case AV_OP_SIGN: case AV_OP_SINE:
    case AV_OP_SQRT: case AV_OP_SUBTRACT: case AV_OP_TANH: case AV_OP_TAN:
    case AV_OP_TRIANGULAR_SOLVE:
      return true;
    default:
      return false;
  }
}

/* A quantized tensor type whose parameters fit its shape: per-axis scales for every index of
 * a static quantized dimension. */
static bool quant_fits(const av_type *t) {
  const av_quant *q = t && t->kind == AV_TYPE_TENSOR ? t->quant : NULL;
  if (!q) return true;
  if (q->axis < 0) return q->n == 1;
  return q->axis < t->rank && t->dims[q->axis] == (int64_t)q->n;
}

/* Rewrites op when it needs it; true when op was replaced (and is to be removed). */
static bool rewrite_op(qctx *c, av_op *op, bool *replaced) {
  *replaced = false;
  bool any = false, fits = true;
  for (uint32_t i = 0; i < op->noperands; i++) {
    any |= has_quant(op->operands[i]->type);
    fits &= quant_fits(op->operands[i]->type);
  }
  for (uint32_t i = 0; i < op->nresults; i++) {
    any |= has_quant(op->results[i].type);
    fits &= quant_fits(op->results[i].type);
  }
  if (!any) return true;
  if (!fits)
    return fail(c, op, AV_INVALID_ARGUMENT,
                "per-axis quantization needs one scale per index of its quantized dimension");
  bool ok;
  if (op->code == AV_OP_UNIFORM_QUANTIZE || op->code == AV_OP_UNIFORM_DEQUANTIZE) {
    if (op->noperands != 1 || op->nresults != 1 || operand_t(op, 0)->kind != AV_TYPE_TENSOR ||
        op->results[0].type->kind != AV_TYPE_TENSOR)
      return fail(c, op, AV_INVALID_ARGUMENT, "expects one tensor operand and result");
    if (op->code == AV_OP_UNIFORM_QUANTIZE) {
      ok = rewrite_quantize(c, op);
    } else {
      const av_type *in = operand_t(op, 0), *out = op->results[0].type;
      if (!in->quant || out->quant || !av_dtype_is_float(out->dtype))
        return fail(c, op, AV_INVALID_ARGUMENT, "expects a quantized operand and a float result");
      set_result(c, op, 0, dequantize(c, repl(c, op->operands[0]), in, out->dtype));
      ok = true;
    }
  } else if ((op->code == AV_OP_MAXIMUM || op->code == AV_OP_MINIMUM) && op->noperands == 2 &&
             av_type_equal(operand_t(op, 0), operand_t(op, 1)) &&
             av_type_equal(operand_t(op, 0), op->results[0].type) &&
             operand_t(op, 0)->quant && operand_t(op, 0)->quant->axis < 0) {
    return true; /* the order of stored values is the order of real values */
  } else if (moves_values(op)) {
    return true;
  } else if (op->code == AV_OP_ADD && op->noperands == 2 && op->nresults == 1) {
    ok = rewrite_add(c, op);
  } else if ((op->code == AV_OP_DOT || op->code == AV_OP_DOT_GENERAL ||
              op->code == AV_OP_CONVOLUTION) && op->noperands == 2 && op->nresults == 1) {
    ok = rewrite_dot(c, op);
  } else if (computes_values(op)) {
    ok = rewrite_qdq(c, op);
  } else {
    return fail(c, op, AV_UNIMPLEMENTED, "this op on quantized types is not supported");
  }
  if (!ok) return false;
  for (uint32_t i = 0; i < op->nresults; i++)
    if (!c->map[op->results[i].id]) {
      c->nerrors++;
      av_diag_set(c->d, AV_RESOURCE_EXHAUSTED, "out of memory legalizing quantized types");
      return false;
    }
  *replaced = true;
  return true;
}

/* Walk 1: rewrites the ops of b (regions first, so they see their outer values' types). */
static void rewrite_block(qctx *c, av_block *b) {
  for (av_op *op = b->first, *next; op; op = next) {
    next = op->next;
    for (uint32_t r = 0; r < op->nregions; r++)
      for (uint32_t k = 0; k < op->regions[r].nblocks; k++) rewrite_block(c, &op->regions[r].blocks[k]);
    c->b = b;
    c->before = op;
    bool replaced = false;
    if (rewrite_op(c, op, &replaced) && replaced) {
      av_block_remove(b, op);
    } else {
      for (uint32_t i = 0; i < op->noperands; i++) op->operands[i] = repl(c, op->operands[i]);
    }
  }
}

/* Walk 2: every type still quantized becomes its storage type. */
static bool retype_block(qctx *c, av_block *b) {
  for (uint32_t i = 0; i < b->nargs; i++)
    if (!(b->args[i].type = storage_type(c, b->args[i].type))) return false;
  for (av_op *op = b->first; op; op = op->next) {
    for (uint32_t i = 0; i < op->nresults; i++)
      if (!(op->results[i].type = storage_type(c, op->results[i].type))) return false;
    for (uint32_t i = 0; i < op->nattrs; i++) {
      const av_attr *a = op->attrs[i].value;
      if (a && a->kind == AV_ATTR_DENSE && has_quant(a->type)) {
        a = av_attr_dense(c->m, storage_type(c, a->type), a->u.dense.data, a->u.dense.size,
                          a->u.dense.splat, true);
        if (!a) return false;
        op->attrs[i].value = a;
      }
    }
    for (uint32_t r = 0; r < op->nregions; r++)
      for (uint32_t k = 0; k < op->regions[r].nblocks; k++)
        if (!retype_block(c, &op->regions[r].blocks[k])) return false;
  }
  return true;
}

static bool block_has_quant(const av_block *b) {
  for (uint32_t i = 0; i < b->nargs; i++)
    if (has_quant(b->args[i].type)) return true;
  for (const av_op *op = b->first; op; op = op->next) {
    for (uint32_t i = 0; i < op->nresults; i++)
      if (has_quant(op->results[i].type)) return true;
    for (uint32_t r = 0; r < op->nregions; r++)
      for (uint32_t k = 0; k < op->regions[r].nblocks; k++)
        if (block_has_quant(&op->regions[r].blocks[k])) return true;
  }
  return false;
}

av_code av_legalize_quant(av_module *m, av_diag *d) {
  bool any = false;
  for (uint32_t f = 0; f < m->nfuncs && !any; f++) {
    const av_func *fn = m->funcs[f];
    any = has_quant(fn->type);
    for (uint32_t k = 0; k < fn->body.nblocks && !any; k++) any = block_has_quant(&fn->body.blocks[k]);
  }
  if (!any) return AV_OK;
  qctx c = {.m = m, .d = d, .nmap = m->next_value_id};
  c.map = calloc((size_t)c.nmap + 1, sizeof *c.map);
  if (!c.map) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  for (uint32_t f = 0; f < m->nfuncs; f++)
    for (uint32_t k = 0; k < m->funcs[f]->body.nblocks; k++) rewrite_block(&c, &m->funcs[f]->body.blocks[k]);
  free(c.map);
  if (c.nerrors) return d->code;
  for (uint32_t f = 0; f < m->nfuncs; f++) {
    av_func *fn = m->funcs[f];
    bool ok = (fn->type = storage_type(&c, fn->type)) != NULL;
    for (uint32_t k = 0; ok && k < fn->body.nblocks; k++) ok = retype_block(&c, &fn->body.blocks[k]);
    if (!ok) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory legalizing quantized types");
  }
  return AV_OK;
}
