#include "ir/verify.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/attr_util.h"

enum { MAX_ERRORS = 100, MAX_DIMS = 64 };

typedef struct vctx {
  const av_module *m;
  av_diag *d;
  int errors;
  uint8_t *defined; /* per value id: visible at this point */
  uint32_t nvals;
  uint32_t *stack; /* ids defined in open regions, popped on region exit */
  size_t nstack, capstack;
  const av_func *func;
  bool oom;
} vctx;

static void report(vctx *v, const av_op *op, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void report(vctx *v, const av_op *op, const char *fmt, ...) {
  v->errors++;
  if (v->errors > MAX_ERRORS) return;
  char msg[320];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const char *fname = v->func && v->func->name ? v->func->name : "?";
  const char *loc = op ? op->loc : v->func ? v->func->loc : NULL;
  if (op) {
    av_diag_set(v->d, AV_INVALID_ARGUMENT, "verify: @%s: %s: %s (at %s)", fname,
                op->name ? op->name : "?", msg, loc ? loc : "unknown");
  } else {
    av_diag_set(v->d, AV_INVALID_ARGUMENT, "verify: @%s: %s (at %s)", fname, msg,
                loc ? loc : "unknown");
  }
}

static void define(vctx *v, const av_op *op, const av_value *val) {
  if (val->id >= v->nvals) {
    report(v, op, "value id %u out of range", val->id);
    return;
  }
  if (v->nstack == v->capstack) {
    size_t nc = v->capstack ? v->capstack * 2 : 256;
    uint32_t *ns = realloc(v->stack, nc * sizeof *ns);
    if (!ns) {
      v->oom = true;
      return;
    }
    v->stack = ns;
    v->capstack = nc;
  }
  v->stack[v->nstack++] = val->id;
  v->defined[val->id] = 1;
}

static void pop_to(vctx *v, size_t mark) {
  while (v->nstack > mark) v->defined[v->stack[--v->nstack]] = 0;
}

/* ------------------------------------------------------------ type helpers */

static const av_type *operand_type(const av_op *op, uint32_t i) {
  return i < op->noperands && op->operands[i] ? op->operands[i]->type : NULL;
}

static const av_type *result_type(const av_op *op, uint32_t i) {
  return i < op->nresults ? op->results[i].type : NULL;
}

static bool is_tensor(const av_type *t) { return t && t->kind == AV_TYPE_TENSOR; }

static bool same_shape(const av_type *a, const av_type *b) {
  if (!is_tensor(a) || !is_tensor(b) || a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i] && a->dims[i] >= 0 && b->dims[i] >= 0) return false;
  return true;
}

static bool same_tensor(const av_type *a, const av_type *b) {
  return same_shape(a, b) && a->dtype == b->dtype;
}

static av_dtype real_of(av_dtype t) {
  return t == AV_DT_C64 ? AV_DT_F32 : t == AV_DT_C128 ? AV_DT_F64 : t;
}

static bool counts(vctx *v, const av_op *op, int nops, int nres) {
  bool ok = true;
  if (nops >= 0 && op->noperands != (uint32_t)nops) {
    report(v, op, "expects %d operands, has %u", nops, op->noperands);
    ok = false;
  }
  if (nres >= 0 && op->nresults != (uint32_t)nres) {
    report(v, op, "expects %d results, has %u", nres, op->nresults);
    ok = false;
  }
  return ok;
}

/* Integer list attribute; returns the count or -1 (reported) when absent or malformed. */
static int ints_attr(vctx *v, const av_op *op, const char *name, int64_t *out, bool required) {
  const av_attr *a = av_op_attr(op, name);
  size_t n;
  if (!a) {
    if (required) report(v, op, "missing attribute '%s'", name);
    return -1;
  }
  if (!av_attr_as_i64s(a, out, MAX_DIMS, &n)) {
    report(v, op, "attribute '%s' is not a list of at most %d integers", name, MAX_DIMS);
    return -1;
  }
  return (int)n;
}

static bool int_attr(vctx *v, const av_op *op, const char *name, int64_t *out) {
  const av_attr *a = av_op_attr(op, name);
  if (!a || a->kind != AV_ATTR_INT) {
    report(v, op, "missing integer attribute '%s'", name);
    return false;
  }
  *out = a->u.i;
  return true;
}

/* ------------------------------------------------------------ per-op rules */

static void check_unary(vctx *v, const av_op *op, av_opcode c) {
  if (!counts(v, op, 1, 1)) return;
  const av_type *a = operand_type(op, 0), *r = result_type(op, 0);
  if (!is_tensor(a) || !is_tensor(r)) return;
  if (c != AV_OP_BITCAST_CONVERT && !same_shape(a, r)) {
    report(v, op, "operand and result shapes differ");
    return;
  }
  switch (c) {
    case AV_OP_CONVERT:
    case AV_OP_BITCAST_CONVERT:
      return;
    case AV_OP_IS_FINITE:
      if (r->dtype != AV_DT_PRED) report(v, op, "result must be i1");
      return;
    case AV_OP_ABS:
    case AV_OP_REAL:
    case AV_OP_IMAG:
      if (r->dtype != real_of(a->dtype) && r->dtype != a->dtype)
        report(v, op, "result element type %s does not fit operand %s", av_dtype_mlir_name(r->dtype),
               av_dtype_mlir_name(a->dtype));
      return;
    default:
      if (r->dtype != a->dtype)
        report(v, op, "result element type %s differs from operand %s", av_dtype_mlir_name(r->dtype),
               av_dtype_mlir_name(a->dtype));
  }
}

static void check_binary(vctx *v, const av_op *op, av_opcode c) {
  if (!counts(v, op, 2, 1)) return;
  const av_type *a = operand_type(op, 0), *b = operand_type(op, 1), *r = result_type(op, 0);
  if (!is_tensor(a) || !is_tensor(b) || !is_tensor(r)) return;
  if (!same_shape(a, b) || !same_shape(a, r)) {
    report(v, op, "operand and result shapes differ");
    return;
  }
  if (a->dtype != b->dtype) {
    report(v, op, "operand element types differ (%s vs %s)", av_dtype_mlir_name(a->dtype),
           av_dtype_mlir_name(b->dtype));
    return;
  }
  if (c == AV_OP_COMPARE) {
    if (r->dtype != AV_DT_PRED) report(v, op, "result must be i1");
    if (!av_op_attr(op, "comparison_direction")) report(v, op, "missing comparison_direction");
    return;
  }
  if (c == AV_OP_COMPLEX) {
    if (real_of(r->dtype) != a->dtype || !av_dtype_is_complex(r->dtype))
      report(v, op, "result must be the complex type of the operands");
    return;
  }
  if (r->dtype != a->dtype) report(v, op, "result element type differs from operands");
}

static void check_select(vctx *v, const av_op *op) {
  if (!counts(v, op, 3, 1)) return;
  const av_type *p = operand_type(op, 0), *t = operand_type(op, 1), *f = operand_type(op, 2),
                *r = result_type(op, 0);
  if (!is_tensor(p) || !is_tensor(r)) return;
  if (p->dtype != AV_DT_PRED) report(v, op, "predicate must be i1");
  if (p->rank != 0 && !same_shape(p, r)) report(v, op, "predicate must be a scalar or match the result shape");
  if (!same_tensor(t, r) || !same_tensor(f, r)) report(v, op, "branches must have the result type");
}

static void check_clamp(vctx *v, const av_op *op) {
  if (!counts(v, op, 3, 1)) return;
  const av_type *lo = operand_type(op, 0), *x = operand_type(op, 1), *hi = operand_type(op, 2),
                *r = result_type(op, 0);
  if (!is_tensor(x) || !is_tensor(r)) return;
  if (!same_tensor(x, r)) report(v, op, "operand and result types differ");
  if (is_tensor(lo) && lo->rank != 0 && !same_tensor(lo, x)) report(v, op, "min must be a scalar or match the operand");
  if (is_tensor(hi) && hi->rank != 0 && !same_tensor(hi, x)) report(v, op, "max must be a scalar or match the operand");
}

static void check_constant(vctx *v, const av_op *op) {
  if (!counts(v, op, 0, 1)) return;
  const av_attr *val = av_op_attr(op, "value");
  if (!val) {
    report(v, op, "missing attribute 'value'");
    return;
  }
  if (val->kind != AV_ATTR_DENSE) return; /* e.g. quantized constants kept as text */
  const av_type *r = result_type(op, 0);
  if (!av_type_equal(val->type, r)) {
    report(v, op, "value type differs from the result type");
    return;
  }
  int64_t n = av_type_num_elements(r);
  size_t es = av_dtype_size(r->dtype);
  if (n < 0) {
    report(v, op, "constant with a dynamic shape");
    return;
  }
  bool ok = val->u.dense.splat ? val->u.dense.size == es : val->u.dense.size == (size_t)n * es;
  if (!ok) report(v, op, "value holds %zu bytes, expected %lld elements of %zu bytes", val->u.dense.size,
                  (long long)n, es);
}

static void check_iota(vctx *v, const av_op *op) {
  if (!counts(v, op, 0, 1)) return;
  int64_t d;
  const av_type *r = result_type(op, 0);
  if (int_attr(v, op, "iota_dimension", &d) && is_tensor(r) && (d < 0 || d >= r->rank))
    report(v, op, "iota_dimension %lld out of range for rank %d", (long long)d, r->rank);
}

static void check_broadcast_in_dim(vctx *v, const av_op *op) {
  if (!counts(v, op, 1, 1)) return;
  const av_type *a = operand_type(op, 0), *r = result_type(op, 0);
  int64_t dims[MAX_DIMS];
  int n = ints_attr(v, op, "broadcast_dimensions", dims, true);
  if (n < 0 || !is_tensor(a) || !is_tensor(r)) return;
  if (a->dtype != r->dtype) report(v, op, "element types differ");
  if (n != a->rank) {
    report(v, op, "broadcast_dimensions has %d entries for an operand of rank %d", n, a->rank);
    return;
  }
  for (int i = 0; i < n; i++) {
    if (dims[i] < 0 || dims[i] >= r->rank) {
      report(v, op, "broadcast dimension %lld out of range", (long long)dims[i]);
      continue;
    }
    int64_t od = a->dims[i], rd = r->dims[dims[i]];
    if (od >= 0 && rd >= 0 && od != 1 && od != rd)
      report(v, op, "operand dimension %d (%lld) cannot broadcast to %lld", i, (long long)od, (long long)rd);
  }
}

static void check_reshape(vctx *v, const av_op *op) {
  if (!counts(v, op, 1, 1)) return;
  const av_type *a = operand_type(op, 0), *r = result_type(op, 0);
  if (!is_tensor(a) || !is_tensor(r)) return;
  if (a->dtype != r->dtype) report(v, op, "element types differ");
  int64_t na = av_type_num_elements(a), nr = av_type_num_elements(r);
  if (na >= 0 && nr >= 0 && na != nr)
    report(v, op, "reshape of %lld elements into %lld", (long long)na, (long long)nr);
}

static void check_transpose(vctx *v, const av_op *op) {
  if (!counts(v, op, 1, 1)) return;
  const av_type *a = operand_type(op, 0), *r = result_type(op, 0);
  int64_t perm[MAX_DIMS];
  int n = ints_attr(v, op, "permutation", perm, true);
  if (n < 0 || !is_tensor(a) || !is_tensor(r)) return;
  if (n != a->rank || r->rank != a->rank) {
    report(v, op, "permutation length %d does not match rank %d", n, a->rank);
    return;
  }
  bool seen[MAX_DIMS] = {false};
  for (int i = 0; i < n; i++) {
    if (perm[i] < 0 || perm[i] >= n || seen[perm[i]]) {
      report(v, op, "permutation is not a permutation of 0..%d", n - 1);
      return;
    }
    seen[perm[i]] = true;
    if (a->dims[perm[i]] >= 0 && r->dims[i] >= 0 && a->dims[perm[i]] != r->dims[i])
      report(v, op, "result dimension %d should be %lld", i, (long long)a->dims[perm[i]]);
  }
}

static void check_concatenate(vctx *v, const av_op *op) {
  if (op->noperands < 1 || op->nresults != 1) {
    report(v, op, "expects at least 1 operand and 1 result");
    return;
  }
  int64_t d;
  const av_type *r = result_type(op, 0);
  if (!int_attr(v, op, "dimension", &d) || !is_tensor(r)) return;
  if (d < 0 || d >= r->rank) report(v, op, "dimension %lld out of range", (long long)d);
  for (uint32_t i = 0; i < op->noperands; i++) {
    const av_type *t = operand_type(op, i);
    if (is_tensor(t) && (t->dtype != r->dtype || t->rank != r->rank))
      report(v, op, "operand %u type does not match the result", i);
  }
}

static void check_slice(vctx *v, const av_op *op) {
  if (!counts(v, op, 1, 1)) return;
  const av_type *a = operand_type(op, 0), *r = result_type(op, 0);
  int64_t st[MAX_DIMS], li[MAX_DIMS], sd[MAX_DIMS];
  int n1 = ints_attr(v, op, "start_indices", st, true);
  int n2 = ints_attr(v, op, "limit_indices", li, true);
  int n3 = ints_attr(v, op, "strides", sd, true);
  if (n1 < 0 || n2 < 0 || n3 < 0 || !is_tensor(a) || !is_tensor(r)) return;
  if (n1 != a->rank || n2 != a->rank || n3 != a->rank || r->rank != a->rank) {
    report(v, op, "slice attributes do not match rank %d", a->rank);
    return;
  }
  for (int i = 0; i < n1; i++) {
    if (sd[i] <= 0 || st[i] < 0 || li[i] < st[i] || (a->dims[i] >= 0 && li[i] > a->dims[i])) {
      report(v, op, "bad slice bounds in dimension %d", i);
      continue;
    }
    int64_t want = (li[i] - st[i] + sd[i] - 1) / sd[i];
    if (r->dims[i] >= 0 && r->dims[i] != want)
      report(v, op, "result dimension %d should be %lld", i, (long long)want);
  }
}

static void check_dot_general(vctx *v, const av_op *op) {
  if (!counts(v, op, 2, 1)) return;
  const av_type *a = operand_type(op, 0), *b = operand_type(op, 1);
  int64_t lc[MAX_DIMS], rc[MAX_DIMS], lb[MAX_DIMS], rb[MAX_DIMS];
  int nlc = ints_attr(v, op, "lhs_contracting_dimensions", lc, true);
  int nrc = ints_attr(v, op, "rhs_contracting_dimensions", rc, true);
  int nlb = ints_attr(v, op, "lhs_batching_dimensions", lb, false);
  int nrb = ints_attr(v, op, "rhs_batching_dimensions", rb, false);
  if (nlc < 0 || nrc < 0 || !is_tensor(a) || !is_tensor(b)) return;
  if (nlc != nrc) report(v, op, "contracting dimension lists differ in length");
  if (nlb != nrb) report(v, op, "batching dimension lists differ in length");
  for (int i = 0; i < nlc && i < nrc; i++) {
    if (lc[i] < 0 || lc[i] >= a->rank || rc[i] < 0 || rc[i] >= b->rank) {
      report(v, op, "contracting dimension out of range");
      continue;
    }
    if (a->dims[lc[i]] >= 0 && b->dims[rc[i]] >= 0 && a->dims[lc[i]] != b->dims[rc[i]])
      report(v, op, "contracting dimensions have sizes %lld and %lld", (long long)a->dims[lc[i]],
             (long long)b->dims[rc[i]]);
  }
}

static void check_reduce(vctx *v, const av_op *op) {
  uint32_t n = op->noperands / 2;
  if (op->noperands == 0 || op->noperands % 2 || op->nresults != n) {
    report(v, op, "expects 2N operands (inputs, inits) and N results; has %u and %u", op->noperands,
           op->nresults);
    return;
  }
  if (op->nregions != 1) {
    report(v, op, "expects 1 region");
    return;
  }
  const av_region *r = &op->regions[0];
  if (r->nblocks < 1 || r->blocks[0].nargs != 2 * n)
    report(v, op, "body must take %u arguments", 2 * n);
  int64_t dims[MAX_DIMS];
  (void)ints_attr(v, op, "dimensions", dims, true);
}

static void check_while(vctx *v, const av_op *op) {
  if (op->noperands != op->nresults) {
    report(v, op, "has %u operands but %u results", op->noperands, op->nresults);
    return;
  }
  if (op->nregions != 2) {
    report(v, op, "expects 2 regions (cond, body)");
    return;
  }
  for (int k = 0; k < 2; k++) {
    const av_region *r = &op->regions[k];
    if (r->nblocks < 1 || r->blocks[0].nargs != op->noperands) {
      report(v, op, "%s region must take %u arguments", k ? "body" : "cond", op->noperands);
      continue;
    }
    for (uint32_t i = 0; i < op->noperands; i++)
      if (!av_type_equal(r->blocks[0].args[i].type, operand_type(op, i)))
        report(v, op, "%s argument %u type differs from the operand", k ? "body" : "cond", i);
  }
  for (uint32_t i = 0; i < op->nresults; i++)
    if (!av_type_equal(result_type(op, i), operand_type(op, i)))
      report(v, op, "result %u type differs from operand", i);
}

static void check_call(vctx *v, const av_op *op) {
  const av_attr *callee = av_op_attr(op, "callee");
  if (!callee || (callee->kind != AV_ATTR_SYMBOL && callee->kind != AV_ATTR_STRING)) {
    report(v, op, "missing callee");
    return;
  }
  const av_func *f = av_module_find_func(v->m, callee->u.str.s);
  if (!f) {
    report(v, op, "calls unknown function @%s", callee->u.str.s);
    return;
  }
  const av_type *ft = f->type;
  int nin = ft->ninputs, nout = ft->nelems - ft->ninputs;
  if (op->noperands != (uint32_t)nin || op->nresults != (uint32_t)nout) {
    report(v, op, "@%s takes %d arguments and returns %d results; call has %u and %u", f->name, nin,
           nout, op->noperands, op->nresults);
    return;
  }
  for (int i = 0; i < nin; i++)
    if (!av_type_equal(operand_type(op, (uint32_t)i), ft->elems[i]))
      report(v, op, "argument %d type differs from @%s's parameter", i, f->name);
  for (int i = 0; i < nout; i++)
    if (!av_type_equal(result_type(op, (uint32_t)i), ft->elems[nin + i]))
      report(v, op, "result %d type differs from @%s's result", i, f->name);
}

static void check_pad(vctx *v, const av_op *op) {
  if (!counts(v, op, 2, 1)) return;
  const av_type *a = operand_type(op, 0), *pv = operand_type(op, 1), *r = result_type(op, 0);
  int64_t lo[MAX_DIMS], hi[MAX_DIMS], in[MAX_DIMS];
  int n1 = ints_attr(v, op, "edge_padding_low", lo, true);
  int n2 = ints_attr(v, op, "edge_padding_high", hi, true);
  int n3 = ints_attr(v, op, "interior_padding", in, true);
  if (n1 < 0 || n2 < 0 || n3 < 0 || !is_tensor(a) || !is_tensor(r)) return;
  if (is_tensor(pv) && (pv->rank != 0 || pv->dtype != a->dtype))
    report(v, op, "padding value must be a scalar of the operand's element type");
  if (n1 != a->rank || n2 != a->rank || n3 != a->rank || r->rank != a->rank) {
    report(v, op, "padding attributes do not match rank %d", a->rank);
    return;
  }
  for (int i = 0; i < a->rank; i++) {
    if (in[i] < 0) report(v, op, "negative interior padding in dimension %d", i);
    int64_t d = a->dims[i];
    if (d < 0 || r->dims[i] < 0 || in[i] < 0) continue;
    int64_t want = lo[i] + hi[i] + d + (d > 0 ? (d - 1) * in[i] : 0);
    if (want != r->dims[i]) report(v, op, "result dimension %d should be %lld", i, (long long)want);
  }
}

static void check_dynamic_slice(vctx *v, const av_op *op) {
  const av_type *a = operand_type(op, 0), *r = result_type(op, 0);
  if (op->nresults != 1 || op->noperands < 1 || !is_tensor(a)) {
    report(v, op, "expects an operand, one index per dimension and 1 result");
    return;
  }
  if (op->noperands != (uint32_t)a->rank + 1)
    report(v, op, "has %u start indices for rank %d", op->noperands - 1, a->rank);
  int64_t sz[MAX_DIMS];
  int n = ints_attr(v, op, "slice_sizes", sz, true);
  if (n < 0 || !is_tensor(r)) return;
  if (n != a->rank || r->rank != a->rank) {
    report(v, op, "slice_sizes does not match rank %d", a->rank);
    return;
  }
  for (int i = 0; i < n; i++)
    if (sz[i] < 0 || (a->dims[i] >= 0 && sz[i] > a->dims[i]) || (r->dims[i] >= 0 && r->dims[i] != sz[i]))
      report(v, op, "bad slice size in dimension %d", i);
}

static void check_dynamic_update_slice(vctx *v, const av_op *op) {
  const av_type *a = operand_type(op, 0), *u = operand_type(op, 1), *r = result_type(op, 0);
  if (op->nresults != 1 || op->noperands < 2 || !is_tensor(a) || !is_tensor(u)) {
    report(v, op, "expects operand, update, one index per dimension and 1 result");
    return;
  }
  if (op->noperands != (uint32_t)a->rank + 2)
    report(v, op, "has %u start indices for rank %d", op->noperands - 2, a->rank);
  if (!same_tensor(a, r)) report(v, op, "result type differs from the operand");
  if (u->rank != a->rank || u->dtype != a->dtype) report(v, op, "update rank or element type differs");
}

static void check_tuple_ops(vctx *v, const av_op *op, av_opcode c) {
  if (c == AV_OP_TUPLE) {
    if (!counts(v, op, -1, 1)) return;
    const av_type *r = result_type(op, 0);
    if (!r || r->kind != AV_TYPE_TUPLE || (uint32_t)r->nelems != op->noperands) {
      report(v, op, "result must be a tuple of the operands");
      return;
    }
    for (uint32_t i = 0; i < op->noperands; i++)
      if (!av_type_equal(r->elems[i], operand_type(op, i))) report(v, op, "tuple element %u type differs", i);
    return;
  }
  if (!counts(v, op, 1, 1)) return;
  const av_type *t = operand_type(op, 0);
  int64_t idx;
  if (!int_attr(v, op, "index", &idx) || !t) return;
  if (t->kind != AV_TYPE_TUPLE || idx < 0 || idx >= t->nelems) {
    report(v, op, "index %lld is not an element of the operand tuple", (long long)idx);
    return;
  }
  if (!av_type_equal(t->elems[idx], result_type(op, 0))) report(v, op, "result type differs from the tuple element");
}

static void check_branches(vctx *v, const av_op *op, av_opcode c) {
  if (op->noperands != 1) {
    report(v, op, "expects 1 operand (the %s)", c == AV_OP_IF ? "predicate" : "index");
    return;
  }
  const av_type *p = operand_type(op, 0);
  if (is_tensor(p) && (p->rank != 0 || p->dtype != (c == AV_OP_IF ? AV_DT_PRED : AV_DT_S32)))
    report(v, op, "%s must be a scalar %s", c == AV_OP_IF ? "predicate" : "index", c == AV_OP_IF ? "i1" : "i32");
  if (c == AV_OP_IF && op->nregions != 2) report(v, op, "expects 2 regions");
  if (c == AV_OP_CASE && op->nregions < 1) report(v, op, "expects at least 1 region");
  for (uint32_t i = 0; i < op->nregions; i++) {
    const av_region *r = &op->regions[i];
    if (r->nblocks < 1) continue;
    if (r->blocks[0].nargs) report(v, op, "branch %u must take no arguments", i);
    const av_op *ret = r->blocks[0].last;
    if (!ret || ret->code != AV_OP_RETURN) continue;
    if (ret->noperands != op->nresults) {
      report(v, op, "branch %u returns %u values for %u results", i, ret->noperands, op->nresults);
      continue;
    }
    for (uint32_t k = 0; k < op->nresults; k++)
      if (!av_type_equal(operand_type(ret, k), result_type(op, k)))
        report(v, op, "branch %u result %u type differs", i, k);
  }
}

static void check_same_types(vctx *v, const av_op *op) {
  /* optimization_barrier: results are the operands */
  if (op->noperands != op->nresults) {
    report(v, op, "has %u operands but %u results", op->noperands, op->nresults);
    return;
  }
  for (uint32_t i = 0; i < op->nresults; i++)
    if (!av_type_equal(operand_type(op, i), result_type(op, i))) report(v, op, "result %u type differs", i);
}

static void check_reverse(vctx *v, const av_op *op) {
  if (!counts(v, op, 1, 1)) return;
  const av_type *a = operand_type(op, 0);
  int64_t dims[MAX_DIMS];
  int n = ints_attr(v, op, "dimensions", dims, true);
  if (n < 0 || !is_tensor(a)) return;
  if (!same_tensor(a, result_type(op, 0))) report(v, op, "result type differs from the operand");
  for (int i = 0; i < n; i++)
    if (dims[i] < 0 || dims[i] >= a->rank) report(v, op, "dimension %lld out of range", (long long)dims[i]);
}

static void check_sort(vctx *v, const av_op *op) {
  if (op->noperands < 1 || op->noperands != op->nresults || op->nregions != 1) {
    report(v, op, "expects N operands, N results and a comparator");
    return;
  }
  const av_region *r = &op->regions[0];
  if (r->nblocks >= 1 && r->blocks[0].nargs != 2 * op->noperands)
    report(v, op, "comparator must take %u arguments", 2 * op->noperands);
  const av_type *first = operand_type(op, 0);
  for (uint32_t i = 0; i < op->noperands; i++) {
    if (!av_type_equal(operand_type(op, i), result_type(op, i))) report(v, op, "result %u type differs", i);
    if (i && !same_shape(operand_type(op, i), first)) report(v, op, "operand %u shape differs", i);
  }
}

static void check_gather_scatter(vctx *v, const av_op *op, av_opcode c) {
  if (c == AV_OP_GATHER) {
    if (!counts(v, op, 2, 1)) return;
    int64_t tmp[MAX_DIMS];
    (void)ints_attr(v, op, "offset_dims", tmp, true);
    (void)ints_attr(v, op, "collapsed_slice_dims", tmp, true);
    (void)ints_attr(v, op, "start_index_map", tmp, true);
    int n = ints_attr(v, op, "slice_sizes", tmp, true);
    const av_type *a = operand_type(op, 0);
    if (n >= 0 && is_tensor(a) && n != a->rank)
      report(v, op, "slice_sizes has %d entries for rank %d", n, a->rank);
    int64_t ivd;
    (void)int_attr(v, op, "index_vector_dim", &ivd);
    return;
  }
  /* scatter: N inputs, indices, N updates; N results; update region */
  uint32_t n = op->nresults;
  if (n < 1 || op->noperands != 2 * n + 1) {
    report(v, op, "expects N inputs, the indices and N updates for N results; has %u operands, %u results",
           op->noperands, op->nresults);
    return;
  }
  for (uint32_t i = 0; i < n; i++)
    if (is_tensor(operand_type(op, i)) && !same_shape(operand_type(op, i), result_type(op, i)))
      report(v, op, "result %u shape differs from input", i); /* element types may be promoted */
  if (op->nregions != 1) report(v, op, "expects 1 region");
  int64_t tmp[MAX_DIMS];
  (void)ints_attr(v, op, "update_window_dims", tmp, true);
  (void)ints_attr(v, op, "inserted_window_dims", tmp, true);
  (void)ints_attr(v, op, "scatter_dims_to_operand_dims", tmp, true);
}

static void check_convolution(vctx *v, const av_op *op) {
  if (!counts(v, op, 2, 1)) return;
  const av_type *a = operand_type(op, 0), *k = operand_type(op, 1), *r = result_type(op, 0);
  int64_t is[MAX_DIMS], ks[MAX_DIMS], os[MAX_DIMS], x;
  int ni = ints_attr(v, op, "input_spatial_dimensions", is, true);
  int nk = ints_attr(v, op, "kernel_spatial_dimensions", ks, true);
  int no = ints_attr(v, op, "output_spatial_dimensions", os, true);
  static const char *const kScalars[] = {
      "input_batch_dimension",  "input_feature_dimension", "kernel_input_feature_dimension",
      "kernel_output_feature_dimension", "output_batch_dimension", "output_feature_dimension"};
  bool ok = true;
  for (size_t i = 0; i < sizeof kScalars / sizeof kScalars[0]; i++)
    if (!int_attr(v, op, kScalars[i], &x)) ok = false; /* report every missing one */
  if (!ok || ni < 0 || nk < 0 || no < 0) return;
  if (ni != nk || ni != no) report(v, op, "spatial dimension lists differ in length");
  if (is_tensor(a) && a->rank != ni + 2) report(v, op, "input rank %d does not fit %d spatial dimensions", a->rank, ni);
  if (is_tensor(k) && k->rank != nk + 2) report(v, op, "kernel rank %d does not fit %d spatial dimensions", k->rank, nk);
  if (is_tensor(r) && r->rank != no + 2) report(v, op, "result rank %d does not fit %d spatial dimensions", r->rank, no);
}

static bool needs_stablehlo_return(av_opcode c) {
  switch (c) {
    case AV_OP_REDUCE:
    case AV_OP_REDUCE_WINDOW:
    case AV_OP_WHILE:
    case AV_OP_IF:
    case AV_OP_CASE:
    case AV_OP_SORT:
    case AV_OP_SCATTER:
    case AV_OP_SELECT_AND_SCATTER:
    case AV_OP_MAP:
    case AV_OP_ALL_REDUCE:
    case AV_OP_REDUCE_SCATTER:
      return true;
    default:
      return false;
  }
}

static void check_op(vctx *v, const av_op *op) {
  av_opcode c = op->code;
  for (uint32_t i = 0; i < op->nresults; i++) {
    const av_type *t = op->results[i].type;
    if (!t) report(v, op, "result %u has no type", i);
    else if (t->kind == AV_TYPE_TENSOR && t->dtype == AV_DT_INVALID) report(v, op, "result %u has no element type", i);
  }
  switch (c) {
    case AV_OP_ABS: case AV_OP_CBRT: case AV_OP_CEIL: case AV_OP_COSINE:
    case AV_OP_COUNT_LEADING_ZEROS: case AV_OP_EXPONENTIAL: case AV_OP_EXPONENTIAL_MINUS_ONE:
    case AV_OP_FLOOR: case AV_OP_LOG: case AV_OP_LOG_PLUS_ONE: case AV_OP_LOGISTIC:
    case AV_OP_NEGATE: case AV_OP_NOT: case AV_OP_POPCNT: case AV_OP_ROUND_NEAREST_AFZ:
    case AV_OP_ROUND_NEAREST_EVEN: case AV_OP_RSQRT: case AV_OP_SIGN: case AV_OP_SINE:
    case AV_OP_SQRT: case AV_OP_TAN: case AV_OP_TANH: case AV_OP_IS_FINITE: case AV_OP_REAL:
    case AV_OP_IMAG: case AV_OP_CONVERT: case AV_OP_BITCAST_CONVERT:
      check_unary(v, op, c);
      break;
    case AV_OP_ADD: case AV_OP_SUBTRACT: case AV_OP_MULTIPLY: case AV_OP_DIVIDE:
    case AV_OP_REMAINDER: case AV_OP_MAXIMUM: case AV_OP_MINIMUM: case AV_OP_POWER:
    case AV_OP_AND: case AV_OP_OR: case AV_OP_XOR: case AV_OP_SHIFT_LEFT:
    case AV_OP_SHIFT_RIGHT_ARITHMETIC: case AV_OP_SHIFT_RIGHT_LOGICAL: case AV_OP_ATAN2:
    case AV_OP_COMPARE: case AV_OP_COMPLEX:
      check_binary(v, op, c);
      break;
    case AV_OP_SELECT: check_select(v, op); break;
    case AV_OP_CLAMP: check_clamp(v, op); break;
    case AV_OP_CONSTANT: check_constant(v, op); break;
    case AV_OP_IOTA: check_iota(v, op); break;
    case AV_OP_BROADCAST_IN_DIM: check_broadcast_in_dim(v, op); break;
    case AV_OP_RESHAPE: check_reshape(v, op); break;
    case AV_OP_TRANSPOSE: check_transpose(v, op); break;
    case AV_OP_CONCATENATE: check_concatenate(v, op); break;
    case AV_OP_SLICE: check_slice(v, op); break;
    case AV_OP_DOT_GENERAL: check_dot_general(v, op); break;
    case AV_OP_REDUCE: check_reduce(v, op); break;
    case AV_OP_WHILE: check_while(v, op); break;
    case AV_OP_FUNC_CALL: check_call(v, op); break;
    case AV_OP_PAD: check_pad(v, op); break;
    case AV_OP_DYNAMIC_SLICE: check_dynamic_slice(v, op); break;
    case AV_OP_DYNAMIC_UPDATE_SLICE: check_dynamic_update_slice(v, op); break;
    case AV_OP_TUPLE: case AV_OP_GET_TUPLE_ELEMENT: check_tuple_ops(v, op, c); break;
    case AV_OP_IF: case AV_OP_CASE: check_branches(v, op, c); break;
    case AV_OP_OPTIMIZATION_BARRIER: check_same_types(v, op); break;
    case AV_OP_REVERSE: check_reverse(v, op); break;
    case AV_OP_SORT: check_sort(v, op); break;
    case AV_OP_GATHER: case AV_OP_SCATTER: check_gather_scatter(v, op, c); break;
    case AV_OP_CONVOLUTION: check_convolution(v, op); break;
    case AV_OP_CUSTOM_CALL:
      if (!av_op_attr(op, "call_target_name")) report(v, op, "missing call_target_name");
      break;
    default:
      break;
  }
}

/* ------------------------------------------------------------ walking */

static void walk_region(vctx *v, const av_region *r, const av_op *owner, int depth);

static void walk_block(vctx *v, const av_block *b, const av_op *owner, int depth) {
  for (uint32_t i = 0; i < b->nargs; i++) define(v, owner, &b->args[i]);
  uint32_t count = 0;
  for (const av_op *op = b->first; op; op = op->next) {
    if (++count > b->nops) {
      report(v, op, "block op list is longer than its count");
      break;
    }
    if (op->parent != b) report(v, op, "op's parent is not its block");
    for (uint32_t i = 0; i < op->noperands; i++) {
      const av_value *val = op->operands[i];
      if (!val) {
        report(v, op, "operand %u is missing", i);
      } else if (val->id >= v->nvals) {
        report(v, op, "operand %u has an invalid value id", i);
      } else if (!v->defined[val->id]) {
        report(v, op, "operand %u is used before its definition or outside its scope", i);
      }
    }
    for (uint32_t i = 0; i < op->nregions; i++) {
      size_t mark = v->nstack;
      walk_region(v, &op->regions[i], op, depth + 1);
      pop_to(v, mark);
    }
    for (uint32_t i = 0; i < op->nresults; i++) define(v, op, &op->results[i]);
    check_op(v, op);
    bool term = op->code == AV_OP_FUNC_RETURN || op->code == AV_OP_RETURN || op->code == AV_OP_SDY_RETURN;
    if (term && op->next) report(v, op, "terminator is not the last op of its block");
  }
}

static void walk_region(vctx *v, const av_region *r, const av_op *owner, int depth) {
  if (depth > 512) {
    report(v, owner, "regions nested too deeply");
    return;
  }
  bool want_return = owner && needs_stablehlo_return(owner->code);
  for (uint32_t i = 0; i < r->nblocks; i++) {
    const av_block *b = &r->blocks[i];
    size_t mark = v->nstack;
    walk_block(v, b, owner, depth);
    pop_to(v, mark);
    if (want_return && (!b->last || b->last->code != AV_OP_RETURN))
      report(v, owner, "region %u must end with stablehlo.return", i);
  }
}

static void check_func(vctx *v, const av_func *f) {
  v->func = f;
  const av_type *ft = f->type;
  if (!ft || ft->kind != AV_TYPE_FUNCTION) {
    report(v, NULL, "function has no function type");
    return;
  }
  if (f->body.nblocks == 0) {
    if (f->is_public) report(v, NULL, "public function has no body");
    return;
  }
  const av_block *entry = &f->body.blocks[0];
  if (entry->nargs != (uint32_t)ft->ninputs) {
    report(v, NULL, "entry block has %u arguments, the function type %d", entry->nargs, ft->ninputs);
  } else {
    for (int i = 0; i < ft->ninputs; i++)
      if (!av_type_equal(entry->args[i].type, ft->elems[i]))
        report(v, NULL, "argument %d type differs from the function type", i);
  }
  int nout = ft->nelems - ft->ninputs;
  for (uint32_t bi = 0; bi < f->body.nblocks; bi++) {
    const av_block *b = &f->body.blocks[bi];
    size_t mark = v->nstack;
    walk_block(v, b, NULL, 0);
    pop_to(v, mark);
    const av_op *last = b->last;
    if (!last || last->code != AV_OP_FUNC_RETURN) {
      report(v, last, "function body block %u must end with func.return", bi);
      continue;
    }
    if (last->noperands != (uint32_t)nout) {
      report(v, last, "returns %u values, the function type %d", last->noperands, nout);
      continue;
    }
    for (int i = 0; i < nout; i++)
      if (!av_type_equal(operand_type(last, (uint32_t)i), ft->elems[ft->ninputs + i]))
        report(v, last, "returned value %d type differs from the function result type", i);
  }
}

av_code av_module_verify(const av_module *m, av_diag *d) {
  vctx v;
  memset(&v, 0, sizeof v);
  v.m = m;
  v.d = d;
  v.nvals = m->next_value_id;
  v.defined = calloc((size_t)v.nvals + 1, 1);
  if (!v.defined) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "verify: out of memory");
  for (uint32_t i = 0; i < m->nfuncs; i++) {
    for (uint32_t j = 0; j < i; j++)
      if (strcmp(m->funcs[i]->name, m->funcs[j]->name) == 0) {
        v.func = m->funcs[i];
        report(&v, NULL, "function defined twice");
      }
    check_func(&v, m->funcs[i]);
    pop_to(&v, 0);
  }
  free(v.stack);
  free(v.defined);
  if (v.oom) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "verify: out of memory");
  if (v.errors > MAX_ERRORS)
    av_diag_set(d, AV_INVALID_ARGUMENT, "verify: ... %d problems in all", v.errors);
  return v.errors ? AV_INVALID_ARGUMENT : AV_OK;
}
