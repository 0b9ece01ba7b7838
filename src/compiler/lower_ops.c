/* Per-op lowering: dispatch, elementwise, convert, constants, select/clamp, checks, calls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/lower_internal.h"
#include "runtime/ffi/ffi.h"
#include "compiler/lower_approx_topk.h"
#include "compiler/sharding_lower.h"

static bool same_shape(const av_slot_type *a, const av_slot_type *b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

static bool expect_counts(av_lower *c, const av_op *op, uint32_t nin, uint32_t nout) {
  if (op->noperands != nin || op->nresults != nout)
    return AV_INVALID(c, "expected %u operands and %u results, got %u and %u", nin, nout,
                      op->noperands, op->nresults);
  return true;
}

bool av_parse_cmp_dir(const char *s, av_cmp_dir *dir) {
  static const char *const names[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
  for (int i = 0; i < 6; i++)
    if (strcmp(s, names[i]) == 0) {
      *dir = (av_cmp_dir)i;
      return true;
    }
  return false;
}

av_cmp_type av_parse_cmp_type(const char *s) {
  if (strcmp(s, "FLOAT") == 0) return AV_CMP_FLOAT;
  if (strcmp(s, "TOTALORDER") == 0) return AV_CMP_TOTALORDER;
  if (strcmp(s, "SIGNED") == 0) return AV_CMP_SIGNED;
  if (strcmp(s, "UNSIGNED") == 0) return AV_CMP_UNSIGNED;
  return AV_CMP_DEFAULT;
}

/* Emits a box step broadcasting scalar slot `src` to slot `dst` of type `t`, or to a new slot
 * (dst < 0). Returns the destination slot, -1 on failure. */
static int32_t emit_broadcast_scalar(av_lower *c, int32_t src, const av_slot_type *t, int32_t dst) {
  av_slot_type bt = *t;
  bt.dtype = av_stype(c, src)->dtype;
  bt.nbytes = (size_t)bt.nelems * av_dtype_size(bt.dtype);
  int32_t tmp = dst >= 0 ? dst : av_lower_new_slot(c, &bt);
  av_box_params *p = av_lower_alloc(c, sizeof *p);
  if (tmp < 0 || !p) return -1;
  p->box.rank = t->rank;
  av_row_major_strides(t->rank, t->dims, p->box.dstride);
  for (int i = 0; i < t->rank; i++) {
    p->box.dims[i] = t->dims[i];
    p->box.sstride[i] = 0;
  }
  p->esize = av_dtype_size(bt.dtype);
  av_step *s = av_emit(c, av_step_box, p, 1, 1);
  if (!s) return -1;
  ((int32_t *)s->in)[0] = src;
  ((int32_t *)s->out)[0] = tmp;
  return tmp;
}

static void set_dead(av_lower *c, av_step *s, const int32_t *slots, uint32_t n) {
  int32_t *d = av_lower_alloc(c, (n + 1) * sizeof *d);
  if (!d) return;
  memcpy(d, slots, n * sizeof *d);
  s->dead = d;
  s->ndead = n;
}

bool av_compare_attrs(const av_op *op, av_cmp_dir *dir, av_cmp_type *ct, char *bad, size_t cap) {
  *dir = AV_CMP_EQ;
  *ct = AV_CMP_DEFAULT;
  bad[0] = '\0';
  if (op->code != AV_OP_COMPARE) return true;
  char buf[32];
  if (!av_attr_get_enum(op, "comparison_direction", buf, sizeof buf) &&
      !av_attr_get_enum(op, "direction", buf, sizeof buf))
    return false;
  if (!av_parse_cmp_dir(buf, dir)) {
    snprintf(bad, cap, "%s", buf);
    return false;
  }
  if (av_attr_get_enum(op, "compare_type", buf, sizeof buf)) *ct = av_parse_cmp_type(buf);
  return true;
}

const av_ew_kernel *av_ew_kernel_of(av_lower *c, const av_op *op, av_dtype in, av_dtype out,
                                    av_cmp_dir *dir, av_cmp_type *ct) {
  char bad[32];
  if (!av_compare_attrs(op, dir, ct, bad, sizeof bad)) return NULL;
  if ((op->code == AV_OP_REAL || op->code == AV_OP_IMAG) && !av_dtype_is_complex(in)) return NULL;
  av_ew_kernel *k = av_arena_alloc(c->a, sizeof *k);
  return k && av_ew_prepare(op->code, in, out, *dir, *ct, k) ? k : NULL;
}

static bool lower_elementwise(av_lower *c, const av_op *op) {
  int arity = av_ew_arity(op->code);
  if (!expect_counts(c, op, (uint32_t)arity, 1)) return false;
  const av_slot_type *rt = av_tensor_of(c, &op->results[0], "result");
  const av_slot_type *t0 = av_tensor_of(c, op->operands[0], "operand");
  if (!rt || !t0) return false;
  for (int i = 0; i < arity; i++) {
    const av_slot_type *ti = av_tensor_of(c, op->operands[i], "operand");
    if (!ti) return false;
    if (!same_shape(ti, rt)) return AV_INVALID(c, "operand %d shape differs from the result", i);
    if (ti->dtype != t0->dtype) return AV_INVALID(c, "operands have different element types");
  }
  /* real/imag of real numbers */
  if ((op->code == AV_OP_REAL || op->code == AV_OP_IMAG) && !av_dtype_is_complex(t0->dtype)) {
    if (rt->dtype != t0->dtype) return AV_INVALID(c, "result element type mismatch");
    return av_emit_op(c, op->code == AV_OP_REAL ? av_step_alias : av_step_zero, NULL) != NULL;
  }
  av_cmp_dir dir;
  av_cmp_type ctype;
  char bad[32];
  if (!av_compare_attrs(op, &dir, &ctype, bad, sizeof bad))
    return bad[0] ? AV_INVALID(c, "bad comparison_direction %s", bad)
                  : AV_INVALID(c, "missing comparison_direction");
  av_ew_kernel *k = av_lower_alloc(c, sizeof *k);
  if (!k) return false;
  if (!av_ew_prepare(op->code, t0->dtype, rt->dtype, dir, ctype, k))
    return AV_UNSUPPORTED(c, "not supported for %s -> %s", av_dtype_mlir_name(t0->dtype),
                          av_dtype_mlir_name(rt->dtype));
  return av_emit_op(c, av_step_ew, k) != NULL;
}

static bool lower_convert(av_lower *c, const av_op *op) {
  if (!expect_counts(c, op, 1, 1)) return false;
  const av_slot_type *it = av_tensor_of(c, op->operands[0], "operand");
  const av_slot_type *rt = av_tensor_of(c, &op->results[0], "result");
  if (!it || !rt) return false;
  if (it->nelems != rt->nelems) return AV_INVALID(c, "operand and result sizes differ");
  av_convert *cv = av_lower_alloc(c, sizeof *cv);
  if (!cv) return false;
  if (!av_convert_prepare(it->dtype, rt->dtype, cv))
    return AV_UNSUPPORTED(c, "conversion %s -> %s", av_dtype_mlir_name(it->dtype),
                          av_dtype_mlir_name(rt->dtype));
  return av_emit_op(c, av_step_convert, cv) != NULL;
}

static bool lower_bitcast(av_lower *c, const av_op *op) {
  if (!expect_counts(c, op, 1, 1)) return false;
  const av_slot_type *it = av_tensor_of(c, op->operands[0], "operand");
  const av_slot_type *rt = av_tensor_of(c, &op->results[0], "result");
  if (!it || !rt) return false;
  if (it->dtype != rt->dtype && (av_dtype_bits(it->dtype) < 8 || av_dtype_bits(rt->dtype) < 8)) {
    /* one element per byte in storage: the bits are packed/unpacked, not aliased */
    if (!av_bitcast_bits_supported(it->dtype, rt->dtype))
      return AV_UNSUPPORTED(c, "bitcast of sub-byte types (%s -> %s)",
                            av_dtype_mlir_name(it->dtype), av_dtype_mlir_name(rt->dtype));
    if (it->nelems * av_dtype_bits(it->dtype) != rt->nelems * av_dtype_bits(rt->dtype))
      return AV_INVALID(c, "operand and result sizes differ in bits");
    return av_emit_op(c, av_step_bitcast_bits, NULL) != NULL;
  }
  if (it->nbytes != rt->nbytes) return AV_INVALID(c, "operand and result sizes differ");
  return av_emit_op(c, av_step_alias, NULL) != NULL;
}

static bool lower_constant(av_lower *c, const av_op *op) {
  if (!expect_counts(c, op, 0, 1)) return false;
  const av_slot_type *rt = av_tensor_of(c, &op->results[0], "result");
  if (!rt) return false;
  const av_attr *a = av_op_attr(op, "value");
  av_const_params *p = av_lower_alloc(c, sizeof *p);
  if (!p) return false;
  /* A splat of many elements is its one element broadcast (as XLA's simplifier rewrites it):
   * a fused region reads it as a scalar known at compile time (an immediate in generated
   * code) instead of an array, and the plan holds one element, not nelems copies. */
  size_t es = av_dtype_size(rt->dtype);
  if (rt->nelems > 1 && a && a->kind == AV_ATTR_DENSE && a->u.dense.size == es && es > 0) {
    av_slot_type one = {rt->dtype, 0, rt->dims, 1, es, false};
    int32_t scalar = av_lower_new_slot(c, &one);
    if (scalar < 0 || !(p->st = av_lower_dense(c, a, &one))) return false;
    av_step *s = av_emit(c, av_step_const, p, 0, 1);
    if (!s) return false;
    ((int32_t *)s->out)[0] = scalar;
    int32_t result = av_vslot(c, &op->results[0]);
    return result >= 0 && emit_broadcast_scalar(c, scalar, rt, result) >= 0;
  }
  p->st = av_lower_dense(c, a, rt);
  if (!p->st) return false;
  return av_emit_op(c, av_step_const, p) != NULL;
}

static bool lower_iota(av_lower *c, const av_op *op) {
  /* dynamic_iota with a static result type is an iota (its shape operand is redundant) */
  if (!expect_counts(c, op, op->code == AV_OP_DYNAMIC_IOTA ? 1 : 0, 1)) return false;
  const av_slot_type *rt = av_tensor_of(c, &op->results[0], "result");
  if (!rt) return false;
  int64_t dim;
  if (!av_attr_get_int(op, "iota_dimension", &dim) || dim < 0 || dim >= rt->rank)
    return AV_INVALID(c, "bad iota_dimension");
  av_convert cv;
  if (!av_convert_prepare(AV_DT_S64, rt->dtype, &cv))
    return AV_UNSUPPORTED(c, "iota of %s", av_dtype_mlir_name(rt->dtype));
  av_const_params *p = av_lower_alloc(c, sizeof *p);
  if (!p) return false;
  p->st = av_lower_const_storage(c, rt->nbytes);
  if (!p->st) return false;
  /* computed now: an iota is a constant */
  int64_t inner = 1;
  for (int i = (int)dim + 1; i < rt->rank; i++) inner *= rt->dims[i];
  size_t es = av_dtype_size(rt->dtype);
  /* element i holds (i / inner) % size: runs of `inner` equal values counted up, not two
   * divisions per element (those were a sixth of a GPT's whole compile) */
  int64_t buf[256], value = 0, run = 0;
  for (int64_t i = 0; i < rt->nelems; i += 256) {
    int64_t m = rt->nelems - i < 256 ? rt->nelems - i : 256;
    for (int64_t e = 0; e < m; e++) {
      buf[e] = value;
      if (++run == inner) {
        run = 0;
        if (++value == rt->dims[dim]) value = 0;
      }
    }
    av_convert_run(&cv, buf, (char *)p->st->data + (size_t)i * es, m);
  }
  p->iota_inner = inner;
  p->iota_size = rt->dims[dim];
  /* the const step takes no inputs */
  av_step *s = av_emit(c, av_step_const, p, 0, 1);
  if (!s) return false;
  ((int32_t *)s->out)[0] = av_vslot(c, &op->results[0]);
  return true;
}

static bool lower_get_dimension_size(av_lower *c, const av_op *op) {
  if (!expect_counts(c, op, 1, 1)) return false;
  const av_slot_type *it = av_tensor_of(c, op->operands[0], "operand");
  const av_slot_type *rt = av_tensor_of(c, &op->results[0], "result");
  if (!it || !rt) return false;
  int64_t dim;
  if (!av_attr_get_int(op, "dimension", &dim) || dim < 0 || dim >= it->rank)
    return AV_INVALID(c, "bad dimension");
  if (rt->rank != 0 || rt->dtype != AV_DT_S32) return AV_INVALID(c, "result must be tensor<i32>");
  av_const_params *p = av_lower_alloc(c, sizeof *p);
  if (!p) return false;
  p->st = av_lower_const_storage(c, 4);
  if (!p->st) return false;
  int32_t v = (int32_t)it->dims[dim];
  memcpy(p->st->data, &v, 4);
  av_step *s = av_emit(c, av_step_const, p, 0, 1);
  if (!s) return false;
  ((int32_t *)s->out)[0] = av_vslot(c, &op->results[0]);
  return true;
}

static bool lower_select(av_lower *c, const av_op *op) {
  if (!expect_counts(c, op, 3, 1)) return false;
  const av_slot_type *pt = av_tensor_of(c, op->operands[0], "pred");
  const av_slot_type *at = av_tensor_of(c, op->operands[1], "on_true");
  const av_slot_type *bt = av_tensor_of(c, op->operands[2], "on_false");
  const av_slot_type *rt = av_tensor_of(c, &op->results[0], "result");
  if (!pt || !at || !bt || !rt) return false;
  if (pt->dtype != AV_DT_PRED) return AV_INVALID(c, "pred must be i1");
  if (!same_shape(at, rt) || !same_shape(bt, rt) || at->dtype != rt->dtype ||
      bt->dtype != rt->dtype)
    return AV_INVALID(c, "on_true/on_false must have the result type");
  if (pt->rank != 0 && !same_shape(pt, rt)) return AV_INVALID(c, "pred shape mismatch");
  size_t es = av_dtype_size(rt->dtype);
  if (pt->rank != 0 && (es == 1 || es == 2 || es == 4 || es == 8)) {
    /* an elementwise kernel: it fuses with the steps around it */
    av_ew_kernel *k = av_lower_alloc(c, sizeof *k);
    if (!k) return false;
    memset(k, 0, sizeof *k);
    k->fn = av_ew_select;
    k->nin = 3;
    k->op = AV_OP_SELECT;
    k->dtype = rt->dtype;
    k->in_size[0] = 1;
    k->in_size[1] = k->in_size[2] = k->out_size = k->cin_size = k->cout_size = es;
    return av_emit_op(c, av_step_ew, k) != NULL;
  }
  return av_emit_op(c, av_step_select, NULL) != NULL;
}

static bool lower_clamp(av_lower *c, const av_op *op) {
  if (!expect_counts(c, op, 3, 1)) return false;
  const av_slot_type *lt = av_tensor_of(c, op->operands[0], "min");
  const av_slot_type *xt = av_tensor_of(c, op->operands[1], "operand");
  const av_slot_type *ht = av_tensor_of(c, op->operands[2], "max");
  const av_slot_type *rt = av_tensor_of(c, &op->results[0], "result");
  if (!lt || !xt || !ht || !rt) return false;
  if (!same_shape(xt, rt) || xt->dtype != rt->dtype || lt->dtype != rt->dtype ||
      ht->dtype != rt->dtype)
    return AV_INVALID(c, "operand types mismatch");
  if ((lt->rank != 0 && !same_shape(lt, rt)) || (ht->rank != 0 && !same_shape(ht, rt)))
    return AV_INVALID(c, "min/max must be scalars or have the operand's shape");
  av_ew_kernel *kmax = av_lower_alloc(c, sizeof *kmax), *kmin = av_lower_alloc(c, sizeof *kmin);
  if (!kmax || !kmin) return false;
  if (!av_ew_prepare(AV_OP_MAXIMUM, rt->dtype, rt->dtype, AV_CMP_EQ, AV_CMP_DEFAULT, kmax) ||
      !av_ew_prepare(AV_OP_MINIMUM, rt->dtype, rt->dtype, AV_CMP_EQ, AV_CMP_DEFAULT, kmin))
    return AV_UNSUPPORTED(c, "not supported for %s", av_dtype_mlir_name(rt->dtype));
  int32_t lo = av_vslot(c, op->operands[0]), x = av_vslot(c, op->operands[1]);
  int32_t hi = av_vslot(c, op->operands[2]), out = av_vslot(c, &op->results[0]);
  int32_t temps[3];
  uint32_t ntemps = 0;
  if (lt->rank == 0 && rt->rank != 0) lo = temps[ntemps++] = emit_broadcast_scalar(c, lo, rt, -1);
  if (ht->rank == 0 && rt->rank != 0) hi = temps[ntemps++] = emit_broadcast_scalar(c, hi, rt, -1);
  int32_t mid = av_lower_new_slot(c, rt);
  if (lo < 0 || hi < 0 || mid < 0) return false;
  av_step *s1 = av_emit(c, av_step_ew, kmax, 2, 1);
  if (!s1) return false;
  ((int32_t *)s1->in)[0] = x;
  ((int32_t *)s1->in)[1] = lo;
  ((int32_t *)s1->out)[0] = mid;
  av_step *s2 = av_emit(c, av_step_ew, kmin, 2, 1);
  if (!s2) return false;
  ((int32_t *)s2->in)[0] = mid;
  ((int32_t *)s2->in)[1] = hi;
  ((int32_t *)s2->out)[0] = out;
  temps[ntemps++] = mid;
  set_dead(c, s2, temps, ntemps);
  return true;
}

static bool lower_reduce_precision(av_lower *c, const av_op *op) {
  if (!expect_counts(c, op, 1, 1)) return false;
  const av_slot_type *it = av_tensor_of(c, op->operands[0], "operand");
  const av_slot_type *rt = av_tensor_of(c, &op->results[0], "result");
  if (!it || !rt) return false;
  if (!same_shape(it, rt) || it->dtype != rt->dtype || !av_dtype_is_float(it->dtype))
    return AV_INVALID(c, "operand must be floating point with the result's type");
  int64_t eb, mb;
  if (!av_attr_get_int(op, "exponent_bits", &eb) || !av_attr_get_int(op, "mantissa_bits", &mb) ||
      eb < 1 || mb < 0)
    return AV_INVALID(c, "bad exponent_bits/mantissa_bits");
  av_reduce_precision_params *p = av_lower_alloc(c, sizeof *p);
  if (!p) return false;
  p->f64 = it->dtype == AV_DT_F64;
  av_dtype wide = p->f64 ? AV_DT_F64 : AV_DT_F32;
  if (!av_convert_prepare(it->dtype, wide, &p->to_wide) ||
      !av_convert_prepare(wide, it->dtype, &p->from_wide))
    return AV_UNSUPPORTED(c, "type %s", av_dtype_mlir_name(it->dtype));
  p->exponent_bits = (int)(eb > 64 ? 64 : eb);
  p->mantissa_bits = (int)(mb > 64 ? 64 : mb);
  return av_emit_op(c, av_step_reduce_precision, p) != NULL;
}

/* ------------------------------------------------------------- checks */

/* `actual` is the operand checked: 0, or 1 for testdata's check.eq(expected, actual). */
static bool lower_check(av_lower *c, const av_op *op, av_check_kind kind, bool with_const,
                        uint32_t actual) {
  if (op->noperands != (with_const ? 1u : 2u))
    return AV_INVALID(c, "expected %d operands", with_const ? 1 : 2);
  const av_slot_type *t = av_tensor_of(c, op->operands[actual], "actual");
  if (!t) return false;
  av_check_params *p = av_lower_alloc(c, sizeof *p);
  if (!p) return false;
  p->kind = kind;
  p->tolerance = 1e-3;
  const av_attr *tol = av_op_attr(op, "tolerance");
  if (tol && tol->kind == AV_ATTR_FLOAT) {
    if (!(tol->u.f >= 0)) return AV_INVALID(c, "bad tolerance");
    p->tolerance = tol->u.f;
  }
  if (with_const) {
    const av_attr *a = av_op_dense_attr(op);
    if (a && a->type && a->type->kind == AV_TYPE_TENSOR) {
      av_slot_type et;
      if (!av_slot_type_of(c, a->type, &et) || et.dtype != t->dtype || !same_shape(&et, t))
        return AV_INVALID(c, "expected value type differs from the operand type");
    }
    p->expected = av_lower_dense(c, a, t);
    if (!p->expected) return false;
  } else {
    const av_slot_type *e = av_tensor_of(c, op->operands[1 - actual], "expected");
    if (!e) return false;
    if (e->dtype != t->dtype || !same_shape(e, t))
      return AV_INVALID(c, "actual and expected types differ");
  }
  av_step *s = av_emit(c, av_step_check, p, op->noperands, 0);
  if (!s) return false;
  for (uint32_t i = 0; i < op->noperands; i++)
    ((int32_t *)s->in)[i] = av_vslot(c, op->operands[i == 0 ? actual : 1 - actual]);
  /* results (if any) are unused placeholders */
  return true;
}

/* Ops that only annotate placement or sharding: on one device they pass values through. */
static bool lower_identity(av_lower *c, const av_op *op) {
  if (op->noperands != op->nresults) return AV_INVALID(c, "operand and result counts differ");
  for (uint32_t i = 0; i < op->noperands; i++)
    if (!av_type_equal(op->operands[i]->type, op->results[i].type)) {
      const char *t = av_attr_get_str(op, "call_target_name");
      if (t && strncmp(t, "SPMD", 4) == 0) /* GSPMD's shard_map form (pre-Shardy JAX) */
        return AV_UNSUPPORTED(c, "@%s changing the shape: GSPMD manual sharding is not "
                                 "supported (Shardy's sdy.manual_computation is)", t);
      return AV_UNSUPPORTED(c, "operand %u and result %u types differ", i, i);
    }
  return av_emit_op(c, av_step_alias, NULL) != NULL;
}

static bool is_identity_target(const char *t) {
  static const char *const names[] = {"annotate_device_placement", "Sharding",
                                      "SPMDFullToShardShape", "SPMDShardToFullShape",
                                      "MoveToHost", "MoveToDevice", "LayoutConstraint",
                                      "xla.sdy.GlobalToLocalShape", "xla.sdy.LocalToGlobalShape",
                                      "xla.sdy.FuncResultSharding",
                                      /* told its sharding at compile time (program.c) */
                                      "InspectSharding"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(t, names[i]) == 0) return true;
  return false;
}

static bool lower_manual_computation(av_lower *c, const av_op *op) {
  bool spmd = false; /* real mesh axes: one region run per device (sharding_lower.c) */
  bool spmd_ok = av_lower_spmd_manual(c, op, &spmd);
  if (spmd) return spmd_ok;
  if (op->nregions != 1 || op->regions[0].nblocks != 1) return AV_INVALID(c, "expected one region");
  const av_block *b = &op->regions[0].blocks[0];
  if (b->nargs != op->noperands) return AV_INVALID(c, "region arguments differ from operands");
  /* with every mesh axis of size 1, the local shapes are the global ones */
  for (uint32_t i = 0; i < b->nargs; i++)
    if (!av_type_equal(b->args[i].type, op->operands[i]->type))
      return AV_UNSUPPORTED(c, "sharded manual computation (local shapes differ)");
  const av_op *term = b->last;
  if (!term || term->noperands != op->nresults) return AV_INVALID(c, "bad region results");
  for (uint32_t i = 0; i < op->nresults; i++)
    if (!av_type_equal(term->operands[i]->type, op->results[i].type))
      return AV_UNSUPPORTED(c, "sharded manual computation (local shapes differ)");
  av_region_step_params *p = av_lower_alloc(c, sizeof *p);
  if (!p) return false;
  p->isolated = false;
  p->block = av_lower_region(c, &op->regions[0]);
  if (!p->block) return false;
  return av_emit_op(c, av_step_region, p) != NULL;
}

/* custom_call @anvil_host_callback, backend_config = the callback's decimal id;
 * @anvil_partitioned_host_callback (shaped) runs on whatever shard the device holds, so each
 * argument is preceded by its shape (see host_callback.h) */
static bool lower_host_callback(av_lower *c, const av_op *op, bool shaped) {
  const char *cfg = av_attr_get_str(op, "backend_config");
  if (!cfg || !*cfg) return AV_INVALID(c, "host callback without an id in backend_config");
  uint64_t id = 0;
  for (const char *q = cfg; *q; q++) {
    if (*q < '0' || *q > '9' || id > (UINT64_MAX - 9) / 10)
      return AV_INVALID(c, "host callback id '%.40s' is not a decimal integer", cfg);
    id = id * 10 + (uint64_t)(*q - '0');
  }
  av_host_callback_params *p = av_lower_alloc(c, sizeof *p);
  if (!p) return false;
  p->id = id;
  p->shaped = shaped;
  c->plan->calls_host = true;
  return av_emit_op(c, av_step_host_callback, p) != NULL;
}

/* JAX's LAPACK targets run on anvil's own kernels. A call their signature does not fit
 * (ffi_test's test_effects_hlo: no operands) goes to the handler registered under that name
 * (jaxlib's own, queued for "cpu"), which judges it at run time as on XLA:CPU. */
static bool lower_lapack_or_ffi(av_lower *c, const av_op *op, const char *target) {
  const av_ffi_handler *h = av_ffi_find(target);
  if (!h) return av_lower_lapack(c, op, target);
  av_diag *saved = malloc(sizeof *saved);
  if (!saved) return av_lower_fail(c, AV_RESOURCE_EXHAUSTED, "out of memory");
  *saved = *c->d;
  int nerrors = c->nerrors;
  bool ok = av_lower_lapack(c, op, target);
  if (!ok && !c->out_of_memory) {
    *c->d = *saved;
    c->nerrors = nerrors;
    ok = av_lower_ffi(c, op, target, h);
  }
  free(saved);
  return ok;
}

static bool lower_custom_call(av_lower *c, const av_op *op) {
  const char *target = av_attr_get_str(op, "call_target_name");
  if (!target) return AV_INVALID(c, "missing call_target_name");
  av_check_kind k;
  bool with_const;
  if (av_check_kind_of(target, &k, &with_const) && !with_const) return lower_check(c, op, k, false, 0);
  /* StableHLO's generated testdata (testdata-quantized): check.eq(expected, actual), exact */
  if (strcmp(target, "check.eq") == 0) return lower_check(c, op, AV_CHECK_EQ, false, 1);
  if (is_identity_target(target)) return lower_identity(c, op);
  /* lax.dce_sink: keeps its operands alive through DCE and does nothing else */
  if (strcmp(target, "dce_sink") == 0 && op->nresults == 0) return true;
  if (strcmp(target, "Qr") == 0 || strcmp(target, "ProductOfElementaryHouseholderReflectors") == 0)
    return av_lower_qr_custom_call(c, op, target);
  if (av_is_lapack_target(target)) return lower_lapack_or_ffi(c, op, target);
  if (strcmp(target, "anvil_host_callback") == 0) return lower_host_callback(c, op, false);
  if (strcmp(target, "anvil_partitioned_host_callback") == 0) return lower_host_callback(c, op, true);
  if (strcmp(target, "ApproxTopK") == 0) return av_lower_approx_topk(c, op);
  /* users' custom ops: XLA FFI handlers and legacy targets registered with anvil */
  const av_ffi_handler *h = av_ffi_find(target);
  if (h) return av_lower_ffi(c, op, target, h);
  return AV_UNSUPPORTED(c, "custom_call target @%s is not supported (no XLA FFI handler or "
                        "custom call target of that name is registered for anvil or cpu)",
                        target);
}

/* ------------------------------------------------------------- calls */

static bool lower_call(av_lower *c, const av_op *op, const char *attr) {
  const char *callee = av_attr_get_str(op, attr);
  if (!callee) return AV_INVALID(c, "missing %s", attr);
  const av_func *fn = av_module_find_func(c->m, callee);
  if (!fn) return AV_INVALID(c, "call to unknown function @%s", callee);
  const av_type *ft = fn->type;
  if ((uint32_t)ft->ninputs != op->noperands || (uint32_t)(ft->nelems - ft->ninputs) != op->nresults)
    return AV_INVALID(c, "call to @%s with %u operands and %u results; it takes %d and returns %d",
                      callee, op->noperands, op->nresults, ft->ninputs, ft->nelems - ft->ninputs);
  for (uint32_t i = 0; i < op->noperands; i++)
    if (!av_type_equal(ft->elems[i], op->operands[i]->type))
      return AV_INVALID(c, "operand %u type differs from @%s's parameter", i, callee);
  for (uint32_t i = 0; i < op->nresults; i++)
    if (!av_type_equal(ft->elems[ft->ninputs + (int)i], op->results[i].type))
      return AV_INVALID(c, "result %u type differs from @%s's result", i, callee);
  bool inlined = false;
  if (!av_lower_inline_call(c, op, fn, &inlined)) return false;
  if (inlined) return true;
  av_call_params *p = av_lower_alloc(c, sizeof *p);
  if (!p) return false;
  p->callee = av_lower_need_func(c, callee);
  if (!p->callee) return false;
  return av_emit_op(c, av_step_call, p) != NULL;
}

/* ------------------------------------------------------------ dispatch */

bool av_lower_op(av_lower *c, const av_op *op) {
  if (av_ew_arity(op->code) > 0) return lower_elementwise(c, op);
  bool handled = false;
  bool ok = av_lower_shape_op(c, op, &handled);
  if (handled) return ok;
  ok = av_lower_control_op(c, op, &handled);
  if (handled) return ok;
  ok = av_lower_kernel_op(c, op, &handled);
  if (handled) return ok;
  ok = av_lower_collective_op(c, op, &handled);
  if (handled) return ok;
  switch (op->code) {
    case AV_OP_CONSTANT: return lower_constant(c, op);
    case AV_OP_IOTA: case AV_OP_DYNAMIC_IOTA: return lower_iota(c, op);
    case AV_OP_GET_DIMENSION_SIZE: return lower_get_dimension_size(c, op);
    case AV_OP_CONVERT: return lower_convert(c, op);
    case AV_OP_BITCAST_CONVERT: return lower_bitcast(c, op);
    case AV_OP_SELECT: return lower_select(c, op);
    case AV_OP_CLAMP: return lower_clamp(c, op);
    case AV_OP_REDUCE_PRECISION: return lower_reduce_precision(c, op);
    case AV_OP_CUSTOM_CALL: return lower_custom_call(c, op);
    case AV_OP_FUNC_CALL: case AV_OP_CALL: return lower_call(c, op, "callee");
    case AV_OP_COMPOSITE: return lower_call(c, op, "decomposition");
    case AV_OP_SDY_SHARDING_CONSTRAINT: case AV_OP_SDY_RESHARD: return lower_identity(c, op);
    case AV_OP_SDY_SHARDING_GROUP: return true; /* a hint to sharding propagation only */
    case AV_OP_SDY_MANUAL_COMPUTATION: return lower_manual_computation(c, op);
    case AV_OP_AFTER_ALL: case AV_OP_CREATE_TOKEN: return av_emit_op(c, av_step_token, NULL) != NULL;
    case AV_OP_REPLICA_ID: case AV_OP_PARTITION_ID: {
      if (!expect_counts(c, op, 0, 1)) return false;
      int *which = av_lower_alloc(c, sizeof *which);
      if (!which) return false;
      *which = op->code == AV_OP_PARTITION_ID;
      return av_emit_op(c, av_step_device_id, which) != NULL;
    }
    case AV_OP_TUPLE: case AV_OP_OPTIMIZATION_BARRIER: {
      av_step *s = av_emit_op(c, av_step_alias, NULL);
      if (s && s->nin != s->nout) return AV_INVALID(c, "operands and results differ");
      return s != NULL;
    }
    case AV_OP_UNKNOWN: {
      av_check_kind k;
      bool with_const;
      if (av_check_kind_of(op->name, &k, &with_const)) return lower_check(c, op, k, with_const, 0);
      return AV_UNSUPPORTED(c, "unknown op");
    }
    default:
      return AV_UNSUPPORTED(c, "op not supported");
  }
}
