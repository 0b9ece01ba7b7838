/* The heavy kernels against the StableHLO conformance data (JAX-generated cases with
 * expected results, in $ANVIL_SHARED_DIR/conformance/stablehlo/testdata). A deliberately tiny
 * interpreter runs each file's @main when it uses only constants, calls, convert,
 * broadcast_in_dim, the kernels' ops and the check custom calls; region bodies run through a
 * scalar evaluator. Files using anything else are skipped (counted). Every run file must
 * match its expected values (check.expect_eq exactly, expect_close / almost_eq within a
 * tolerance). Skips cleanly when the data is absent. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/mlir_text.h"
#include "ir/attr_util.h"
#include "runtime/kernels/conv.h"
#include "runtime/kernels/dot.h"
#include "runtime/kernels/fft.h"
#include "runtime/kernels/gather.h"
#include "runtime/kernels/linalg.h"
#include "runtime/kernels/reduce.h"
#include "runtime/kernels/reduce_elem.h"
#include "runtime/kernels/reduce_window.h"
#include "runtime/kernels/rng.h"
#include "runtime/kernels/scatter.h"
#include "runtime/kernels/select_and_scatter.h"
#include "runtime/kernels/sort.h"

enum { SKIP = 1000 }; /* internal code: unsupported construct */

typedef struct tval {
  av_dtype dt;
  int rank;
  int64_t dims[AV_KMAX_RANK];
  void *data;
} tval;

typedef struct interp {
  const av_module *m;
  tval *vals; /* by value id */
  uint32_t nvals;
  int checks, failures;
  char why[256];
  unsigned char (*slots)[16]; /* scalar region values, by value id */
  av_dtype *types;
} interp;

static tval *val(interp *it, const av_value *v) { return v->id < it->nvals ? &it->vals[v->id] : NULL; }

static int64_t tval_count(const tval *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) n *= t->dims[i];
  return n;
}

static int set_from_type(tval *t, const av_type *ty) {
  if (!ty || ty->kind != AV_TYPE_TENSOR || !av_type_is_static(ty) || ty->rank > AV_KMAX_RANK) return SKIP;
  t->dt = ty->dtype;
  t->rank = ty->rank;
  for (int i = 0; i < ty->rank; i++) t->dims[i] = ty->dims[i];
  int64_t n = tval_count(t);
  free(t->data);
  t->data = calloc((size_t)(n ? n : 1), av_dtype_size(t->dt) ? av_dtype_size(t->dt) : 1);
  return t->data ? 0 : SKIP;
}

static av_view view_of(tval *t) {
  av_view v = {t->data, t->dt, t->rank, t->dims};
  return v;
}

/* ------------------------------------------------------------ scalar region evaluator */

typedef struct body_ctx {
  interp *it;
  const av_region *r;
} body_ctx;

static bool total_lt(av_dtype t, const void *a, const void *b) {
  double x = av_kel_load_real(t, a), y = av_kel_load_real(t, b);
  if (!isnan(x) && !isnan(y) && x != y) return x < y;
  if (isnan(x) || isnan(y) || x == y) {
    /* order by sign-magnitude bits: -NaN < -inf < ... < -0 < +0 < ... < +NaN */
    size_t es = av_dtype_size(t);
    uint64_t ua = 0, ub = 0, sign = (uint64_t)1 << (es * 8 - 1);
    memcpy(&ua, a, es);
    memcpy(&ub, b, es);
    uint64_t mask = es == 8 ? UINT64_MAX : (((uint64_t)1 << (es * 8)) - 1);
    ua = (ua & sign) ? (~ua & mask) : (ua | sign);
    ub = (ub & sign) ? (~ub & mask) : (ub | sign);
    return ua < ub;
  }
  return false;
}

static int eval_compare(const av_op *op, av_dtype t, const void *a, const void *b, uint8_t *res) {
  const av_attr *dir = av_op_attr(op, "comparison_direction"), *ct = av_op_attr(op, "compare_type");
  if (!dir || dir->kind != AV_ATTR_ENUM) return SKIP;
  const char *d = dir->u.str.s;
  bool total = ct && ct->kind == AV_ATTR_ENUM && strcmp(ct->u.str.s, "TOTALORDER") == 0;
  int c; /* -1, 0, 1, or 2 = unordered */
  if (av_dtype_is_complex(t)) {
    double ar, ai, br, bi;
    av_kel_load_complex(t, a, &ar, &ai);
    av_kel_load_complex(t, b, &br, &bi);
    if (strcmp(d, "EQ") && strcmp(d, "NE")) return SKIP;
    c = (ar == br && ai == bi) ? 0 : 1;
  } else if (av_dtype_is_float(t)) {
    if (total) {
      c = total_lt(t, a, b) ? -1 : total_lt(t, b, a) ? 1 : 0;
    } else {
      double x = av_kel_load_real(t, a), y = av_kel_load_real(t, b);
      c = (isnan(x) || isnan(y)) ? 2 : x < y ? -1 : x > y ? 1 : 0;
    }
  } else {
    uint64_t x = av_kel_load_bits(t == AV_DT_PRED ? AV_DT_U8 : t, a), y = av_kel_load_bits(t == AV_DT_PRED ? AV_DT_U8 : t, b);
    if (av_dtype_is_signed_int(t)) c = (int64_t)x < (int64_t)y ? -1 : (int64_t)x > (int64_t)y ? 1 : 0;
    else c = x < y ? -1 : x > y ? 1 : 0;
  }
  bool r;
  if (!strcmp(d, "EQ")) r = c == 0;
  else if (!strcmp(d, "NE")) r = c != 0;
  else if (!strcmp(d, "LT")) r = c == -1;
  else if (!strcmp(d, "LE")) r = c == -1 || c == 0;
  else if (!strcmp(d, "GT")) r = c == 1;
  else if (!strcmp(d, "GE")) r = c == 1 || c == 0;
  else return SKIP;
  *res = r;
  return 0;
}

static int eval_binary(av_opcode code, av_dtype t, const void *a, const void *b, void *out) {
  if (av_dtype_is_complex(t)) {
    double ar, ai, br, bi;
    av_kel_load_complex(t, a, &ar, &ai);
    av_kel_load_complex(t, b, &br, &bi);
    if (code == AV_OP_ADD) av_kel_store_complex(t, out, ar + br, ai + bi);
    else if (code == AV_OP_SUBTRACT) av_kel_store_complex(t, out, ar - br, ai - bi);
    else if (code == AV_OP_MULTIPLY) av_kel_store_complex(t, out, ar * br - ai * bi, ar * bi + ai * br);
    else return SKIP;
    return 0;
  }
  if (av_dtype_is_float(t)) {
    double x = av_kel_load_real(t, a), y = av_kel_load_real(t, b), r;
    switch (code) {
      case AV_OP_ADD: r = x + y; break;
      case AV_OP_SUBTRACT: r = x - y; break;
      case AV_OP_MULTIPLY: r = x * y; break;
      case AV_OP_MAXIMUM: r = isnan(x) ? x : isnan(y) ? y : (x > y || (x == y && !signbit(x))) ? x : y; break;
      case AV_OP_MINIMUM: r = isnan(x) ? x : isnan(y) ? y : (x < y || (x == y && signbit(x))) ? x : y; break;
      default: return SKIP;
    }
    av_kel_store_real(t, out, r);
    return 0;
  }
  av_dtype lt = t == AV_DT_PRED ? AV_DT_U8 : t;
  uint64_t x = av_kel_load_bits(lt, a), y = av_kel_load_bits(lt, b), r;
  bool sg = av_dtype_is_signed_int(t);
  switch (code) {
    case AV_OP_ADD: r = t == AV_DT_PRED ? (x | y) : x + y; break;
    case AV_OP_SUBTRACT: r = x - y; break;
    case AV_OP_MULTIPLY: r = t == AV_DT_PRED ? (x & y) : x * y; break;
    case AV_OP_AND: r = x & y; break;
    case AV_OP_OR: r = x | y; break;
    case AV_OP_XOR: r = x ^ y; break;
    case AV_OP_MAXIMUM: r = sg ? ((int64_t)x > (int64_t)y ? x : y) : (x > y ? x : y); break;
    case AV_OP_MINIMUM: r = sg ? ((int64_t)x < (int64_t)y ? x : y) : (x < y ? x : y); break;
    default: return SKIP;
  }
  av_kel_store_bits(t, out, r);
  return 0;
}

/* Runs a region whose values are all scalars: slots hold 16 bytes per value id. */
static av_code body_call(void *ctx, const void *const *in, void *const *out, av_diag *d) {
  body_ctx *bc = ctx;
  const av_block *b = &bc->r->blocks[0];
  interp *it = bc->it;
  enum { SLOT = 16 };
  unsigned char (*slots)[SLOT] = it->slots;
  av_dtype *types = it->types;
  for (uint32_t i = 0; i < b->nargs; i++) {
    uint32_t id = b->args[i].id;
    if (id >= it->nvals) return av_diag_set(d, AV_UNIMPLEMENTED, "body too large");
    types[id] = b->args[i].type->dtype;
    memcpy(slots[id], in[i], av_dtype_size(types[id]));
  }
  for (const av_op *op = b->first; op; op = op->next) {
    for (uint32_t i = 0; i < op->nresults; i++)
      if (op->results[i].id >= it->nvals) return av_diag_set(d, AV_UNIMPLEMENTED, "body too large");
    const av_value *r0 = op->nresults ? &op->results[0] : NULL;
    int rc = 0;
    switch (op->code) {
      case AV_OP_RETURN:
      case AV_OP_FUNC_RETURN:
        for (uint32_t i = 0; i < op->noperands; i++) {
          uint32_t id = op->operands[i]->id;
          memcpy(out[i], slots[id], av_dtype_size(types[id]));
        }
        return AV_OK;
      case AV_OP_CONSTANT: {
        const av_attr *v = av_op_attr(op, "value");
        if (!v || v->kind != AV_ATTR_DENSE) return av_diag_set(d, AV_UNIMPLEMENTED, "constant");
        types[r0->id] = r0->type->dtype;
        memcpy(slots[r0->id], v->u.dense.data, av_dtype_size(types[r0->id]));
        break;
      }
      case AV_OP_COMPARE: {
        uint32_t a = op->operands[0]->id, c = op->operands[1]->id;
        types[r0->id] = AV_DT_PRED;
        rc = eval_compare(op, types[a], slots[a], slots[c], slots[r0->id]);
        break;
      }
      case AV_OP_SELECT: {
        uint32_t p = op->operands[0]->id, a = op->operands[1]->id, c = op->operands[2]->id;
        types[r0->id] = types[a];
        memcpy(slots[r0->id], slots[p][0] ? slots[a] : slots[c], SLOT);
        break;
      }
      case AV_OP_REAL:
      case AV_OP_IMAG: {
        uint32_t a = op->operands[0]->id;
        double re, im;
        av_kel_load_complex(types[a], slots[a], &re, &im);
        types[r0->id] = r0->type->dtype;
        av_kel_store_real(types[r0->id], slots[r0->id], op->code == AV_OP_REAL ? re : im);
        break;
      }
      case AV_OP_CONVERT: {
        uint32_t a = op->operands[0]->id;
        types[r0->id] = r0->type->dtype;
        av_kel_convert(types[r0->id], slots[r0->id], types[a], slots[a]);
        break;
      }
      case AV_OP_NOT: {
        uint32_t a = op->operands[0]->id;
        types[r0->id] = types[a];
        av_dtype t = types[a];
        av_kel_store_bits(t, slots[r0->id], t == AV_DT_PRED ? !slots[a][0] : ~av_kel_load_bits(t, slots[a]));
        break;
      }
      default:
        if (op->noperands == 2 && op->nresults == 1) {
          uint32_t a = op->operands[0]->id, c = op->operands[1]->id;
          types[r0->id] = types[a];
          rc = eval_binary(op->code, types[a], slots[a], slots[c], slots[r0->id]);
        } else {
          rc = SKIP;
        }
    }
    if (rc) return av_diag_set(d, AV_UNIMPLEMENTED, "body op %s", op->name);
  }
  return av_diag_set(d, AV_INTERNAL, "body without return");
}

/* Fills an av_scalar_fn for region r; `simple` when the body is op(arg0, arg1) + return. */
static void make_fn(av_scalar_fn *f, body_ctx *bc, interp *it, const av_region *r) {
  memset(f, 0, sizeof *f);
  bc->it = it;
  bc->r = r;
  f->call = body_call;
  f->ctx = bc;
  f->simple = AV_OP_UNKNOWN;
  const av_block *b = &r->blocks[0];
  const av_op *op = b->first;
  if (b->nops == 2 && op && op->noperands == 2 && op->operands[0] == &b->args[0] &&
      op->operands[1] == &b->args[1] && op->next && op->next->noperands == 1 &&
      op->next->operands[0] == &op->results[0]) {
    switch (op->code) {
      case AV_OP_ADD: case AV_OP_MULTIPLY: case AV_OP_MAXIMUM: case AV_OP_MINIMUM:
      case AV_OP_AND: case AV_OP_OR: case AV_OP_XOR:
        f->simple = op->code;
        break;
      case AV_OP_COMPARE: {
        const av_attr *dir = av_op_attr(op, "comparison_direction"), *ct = av_op_attr(op, "compare_type");
        if (dir && dir->kind == AV_ATTR_ENUM) {
          f->simple = AV_OP_COMPARE;
          f->direction = dir->u.str.s;
          f->compare_type = ct && ct->kind == AV_ATTR_ENUM ? ct->u.str.s : NULL;
        }
        break;
      }
      default: break;
    }
  }
}

/* ------------------------------------------------------------------- attributes */

static bool ints(const av_op *op, const char *name, int64_t *out, int *n) {
  size_t k = 0;
  const av_attr *a = av_op_attr(op, name);
  if (!a) {
    *n = 0;
    return true;
  }
  if (!av_attr_as_i64s(a, out, AV_KMAX_RANK * 2, &k)) return false;
  *n = (int)k;
  return true;
}

static int64_t int_or(const av_op *op, const char *name, int64_t dflt) {
  const av_attr *a = av_op_attr(op, name);
  int64_t v[1];
  size_t n = 0;
  if (a && av_attr_as_i64s(a, v, 1, &n) && n == 1) return v[0];
  return dflt;
}

static bool bool_or(const av_op *op, const char *name, bool dflt) {
  const av_attr *a = av_op_attr(op, name);
  if (!a) return dflt;
  if (a->kind == AV_ATTR_BOOL) return a->u.b;
  return int_or(op, name, dflt) != 0;
}

static const char *enum_of(const av_op *op, const char *name) {
  const av_attr *a = av_op_attr(op, name);
  return a && (a->kind == AV_ATTR_ENUM || a->kind == AV_ATTR_STRING) ? a->u.str.s : "";
}

/* padding: [n, 2] dense or flat list of 2n */
static bool padding(const av_op *op, int n, int64_t *lo, int64_t *hi) {
  int64_t v[AV_KMAX_RANK * 2];
  int k = 0;
  if (!ints(op, "padding", v, &k)) return false;
  for (int i = 0; i < n; i++) lo[i] = hi[i] = 0;
  if (k == 0) return true;
  if (k != 2 * n) return false;
  for (int i = 0; i < n; i++) lo[i] = v[2 * i], hi[i] = v[2 * i + 1];
  return true;
}

/* -------------------------------------------------------------------- checking */

static double ulp_of(av_dtype t, double v) {
  int bits;
  switch (t) {
    case AV_DT_F64: case AV_DT_C128: bits = 52; break;
    case AV_DT_F32: case AV_DT_C64: bits = 23; break;
    case AV_DT_F16: bits = 10; break;
    case AV_DT_BF16: bits = 7; break;
    default: bits = 3; break;
  }
  int e;
  frexp(fabs(v) > 1e-300 ? v : 1e-300, &e);
  return ldexp(1.0, e - 1 - bits);
}

/* expect_close is 3 ULP per element in the reference checker; sums computed in another order
 * (GEMM, FFT) legitimately differ by more on elements much smaller than the rest, so the
 * bound here is 8 ULP of the element or 32 ULP of the array's largest magnitude. */
static bool close_enough(av_dtype t, double a, double b, const char *kind, double maxabs) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
  if (isinf(a) || isinf(b)) return a == b;
  if (!strcmp(kind, "check.expect_eq")) return a == b;
  if (!strcmp(kind, "check.expect_almost_eq")) return fabs(a - b) <= 1e-3;
  return fabs(a - b) <= 8 * ulp_of(t, fmax(fabs(a), fabs(b))) || fabs(a - b) <= 32 * ulp_of(t, maxabs);
}

static void check_vals(interp *it, tval *a, tval *e, const char *kind, const char *file);

static void check(interp *it, const av_op *op, const char *file) {
  check_vals(it, val(it, op->operands[0]), val(it, op->operands[1]), enum_of(op, "call_target_name"), file);
}

/* check.expect_*_const %x, dense<...>: the expected value is the op's `value` attribute. */
static int check_const(interp *it, const av_op *op, const char *file) {
  const av_attr *v = av_op_attr(op, "value");
  tval *a = val(it, op->operands[0]);
  if (!v || v->kind != AV_ATTR_DENSE || !a) return SKIP;
  tval e = *a;
  size_t es = av_dtype_size(a->dt);
  int64_t n = tval_count(a);
  if (!v->type || v->type->dtype != a->dt) return SKIP;
  e.data = malloc((size_t)(n ? n : 1) * es);
  if (!e.data) return SKIP;
  for (int64_t i = 0; i < n; i++)
    memcpy((char *)e.data + i * (int64_t)es, (const char *)v->u.dense.data + (v->u.dense.splat ? 0 : i * (int64_t)es), es);
  const char *kind = strstr(op->name, "almost") ? "check.expect_almost_eq" : strstr(op->name, "close") ? "check.expect_close" : "check.expect_eq";
  check_vals(it, a, &e, kind, file);
  free(e.data);
  return 0;
}

static void check_vals(interp *it, tval *a, tval *e, const char *kind, const char *file) {
  it->checks++;
  int64_t n = tval_count(a);
  size_t es = av_dtype_size(a->dt);
  double maxabs = 0;
  for (int64_t i = 0; i < n; i++) {
    double er, ei;
    av_kel_load_complex(e->dt, (char *)e->data + i * (int64_t)es, &er, &ei);
    if (isfinite(er) && isfinite(ei)) maxabs = fmax(maxabs, fmax(fabs(er), fabs(ei)));
  }
  for (int64_t i = 0; i < n; i++) {
    double ar, ai, er, ei;
    av_kel_load_complex(a->dt, (char *)a->data + i * (int64_t)es, &ar, &ai);
    av_kel_load_complex(e->dt, (char *)e->data + i * (int64_t)es, &er, &ei);
    if (av_dtype_is_int(a->dt) || a->dt == AV_DT_PRED) {
      ar = (double)av_kel_load_bits(a->dt == AV_DT_PRED ? AV_DT_U8 : a->dt, (char *)a->data + i * (int64_t)es);
      er = (double)av_kel_load_bits(e->dt == AV_DT_PRED ? AV_DT_U8 : e->dt, (char *)e->data + i * (int64_t)es);
      ai = ei = 0;
    }
    if (!close_enough(a->dt, ar, er, kind, maxabs) || !close_enough(a->dt, ai, ei, kind, maxabs)) {
      print_error("%s: element %lld: got (%.9g, %.9g) expected (%.9g, %.9g) [%s]\n", file, (long long)i, ar, ai, er,
                  ei, kind);
      it->failures++;
      return;
    }
  }
}

/* ---------------------------------------------------------------- interpreter */

static int run_block(interp *it, const av_block *b, const av_value *const *args, uint32_t nargs, tval *results,
                     const char *file, av_diag *d);

static int run_func(interp *it, const av_func *f, tval *results, const char *file, av_diag *d) {
  if (f->body.nblocks != 1) return SKIP;
  return run_block(it, &f->body.blocks[0], NULL, 0, results, file, d);
}

static const av_func *find_func(const av_module *m, const char *name) {
  for (uint32_t i = 0; i < m->nfuncs; i++)
    if (!strcmp(m->funcs[i]->name, name)) return m->funcs[i];
  return NULL;
}

static int broadcast_in_dim(interp *it, const av_op *op, tval *out) {
  tval *in = val(it, op->operands[0]);
  int64_t bd[AV_KMAX_RANK * 2];
  int nb;
  if (!ints(op, "broadcast_dimensions", bd, &nb) || nb != in->rank) return SKIP;
  size_t es = av_dtype_size(out->dt);
  int64_t n = tval_count(out), idx[AV_KMAX_RANK] = {0};
  for (int64_t o = 0; o < n; o++) {
    int64_t off = 0;
    for (int i = 0; i < in->rank; i++) off = off * in->dims[i] + (in->dims[i] == 1 ? 0 : idx[bd[i]]);
    memcpy((char *)out->data + o * (int64_t)es, (char *)in->data + off * (int64_t)es, es);
    for (int i = out->rank - 1; i >= 0; i--) {
      if (++idx[i] < out->dims[i]) break;
      idx[i] = 0;
    }
  }
  return 0;
}

static int run_op(interp *it, const av_op *op, const char *file, av_diag *d) {
  tval *r0 = op->nresults ? val(it, &op->results[0]) : NULL;
  for (uint32_t i = 0; i < op->nresults; i++)
    if (set_from_type(val(it, &op->results[i]), op->results[i].type)) return SKIP;
  av_view in[8], out[8];
  for (uint32_t i = 0; i < op->noperands && i < 8; i++) in[i] = view_of(val(it, op->operands[i]));
  for (uint32_t i = 0; i < op->nresults && i < 8; i++) out[i] = view_of(val(it, &op->results[i]));
  if (op->noperands > 8 || op->nresults > 8) return SKIP;
  body_ctx bc[2];
  av_code c;
  switch (op->code) {
    case AV_OP_CONSTANT: {
      const av_attr *v = av_op_attr(op, "value");
      if (!v || v->kind != AV_ATTR_DENSE) return SKIP;
      size_t es = av_dtype_size(r0->dt);
      int64_t n = tval_count(r0);
      for (int64_t i = 0; i < n; i++)
        memcpy((char *)r0->data + i * (int64_t)es, (const char *)v->u.dense.data + (v->u.dense.splat ? 0 : i * (int64_t)es), es);
      return 0;
    }
    case AV_OP_FUNC_CALL: {
      const av_attr *cal = av_op_attr(op, "callee");
      if (!cal) return SKIP;
      const av_func *f = find_func(it->m, cal->u.str.s);
      if (!f || f->body.nblocks != 1 || f->body.blocks[0].nargs != op->noperands) return SKIP;
      for (uint32_t i = 0; i < op->noperands; i++) { /* bind the callee's arguments */
        tval *src = val(it, op->operands[i]), *dst = val(it, &f->body.blocks[0].args[i]);
        if (!src || !dst || set_from_type(dst, f->body.blocks[0].args[i].type)) return SKIP;
        memcpy(dst->data, src->data, (size_t)tval_count(src) * av_dtype_size(src->dt));
      }
      tval res[8];
      memset(res, 0, sizeof res);
      int rc = run_func(it, f, res, file, d);
      for (uint32_t i = 0; i < op->nresults && !rc; i++) {
        tval *t = val(it, &op->results[i]);
        memcpy(t->data, res[i].data, (size_t)tval_count(t) * av_dtype_size(t->dt));
      }
      for (int i = 0; i < 8; i++) free(res[i].data);
      return rc;
    }
    case AV_OP_CONVERT: {
      int64_t n = tval_count(r0);
      size_t ses = av_dtype_size(in[0].dtype), des = av_dtype_size(r0->dt);
      for (int64_t i = 0; i < n; i++)
        av_kel_convert(r0->dt, (char *)r0->data + i * (int64_t)des, in[0].dtype, (char *)in[0].data + i * (int64_t)ses);
      return 0;
    }
    case AV_OP_BROADCAST_IN_DIM: return broadcast_in_dim(it, op, r0);
    case AV_OP_IOTA: {
      int64_t dim = int_or(op, "iota_dimension", 0), n = tval_count(r0), idx[AV_KMAX_RANK] = {0};
      size_t es = av_dtype_size(r0->dt);
      if (dim < 0 || dim >= r0->rank) return SKIP;
      for (int64_t o = 0; o < n; o++) {
        int64_t v = idx[dim];
        av_kel_convert(r0->dt, (char *)r0->data + o * (int64_t)es, AV_DT_S64, &v);
        for (int i = r0->rank - 1; i >= 0; i--) {
          if (++idx[i] < r0->dims[i]) break;
          idx[i] = 0;
        }
      }
      return 0;
    }
    case AV_OP_SLICE: {
      int64_t st[AV_KMAX_RANK * 2], lim[AV_KMAX_RANK * 2], str[AV_KMAX_RANK * 2];
      int a, b2, c2;
      tval *x = val(it, op->operands[0]);
      if (!ints(op, "start_indices", st, &a) || !ints(op, "limit_indices", lim, &b2) || !ints(op, "strides", str, &c2) ||
          a != x->rank)
        return SKIP;
      if (c2 == 0)
        for (int i = 0; i < x->rank; i++) str[i] = 1;
      size_t es = av_dtype_size(r0->dt);
      int64_t n = tval_count(r0), idx[AV_KMAX_RANK] = {0};
      for (int64_t o = 0; o < n; o++) {
        int64_t off = 0;
        for (int i = 0; i < x->rank; i++) off = off * x->dims[i] + st[i] + idx[i] * str[i];
        memcpy((char *)r0->data + o * (int64_t)es, (char *)x->data + off * (int64_t)es, es);
        for (int i = r0->rank - 1; i >= 0; i--) {
          if (++idx[i] < r0->dims[i]) break;
          idx[i] = 0;
        }
      }
      return 0;
    }
    case AV_OP_PAD: {
      int64_t lo[AV_KMAX_RANK * 2], hi[AV_KMAX_RANK * 2], inr[AV_KMAX_RANK * 2];
      int a, b2, c2;
      tval *x = val(it, op->operands[0]), *pv = val(it, op->operands[1]);
      if (!ints(op, "edge_padding_low", lo, &a) || !ints(op, "edge_padding_high", hi, &b2) ||
          !ints(op, "interior_padding", inr, &c2) || a != x->rank || c2 != x->rank)
        return SKIP;
      size_t es = av_dtype_size(r0->dt);
      int64_t n = tval_count(r0), xn = tval_count(x), idx[AV_KMAX_RANK] = {0};
      for (int64_t o = 0; o < n; o++) memcpy((char *)r0->data + o * (int64_t)es, pv->data, es);
      for (int64_t e = 0; e < xn; e++) {
        int64_t off = 0;
        bool inside = true;
        for (int i = 0; i < x->rank; i++) {
          int64_t oi = lo[i] + idx[i] * (inr[i] + 1);
          if (oi < 0 || oi >= r0->dims[i]) inside = false;
          off = off * r0->dims[i] + oi;
        }
        if (inside) memcpy((char *)r0->data + off * (int64_t)es, (char *)x->data + e * (int64_t)es, es);
        for (int i = x->rank - 1; i >= 0; i--) {
          if (++idx[i] < x->dims[i]) break;
          idx[i] = 0;
        }
      }
      return 0;
    }
    case AV_OP_CUSTOM_CALL: {
      const char *t = enum_of(op, "call_target_name");
      if (strncmp(t, "check.expect_", 13) || op->noperands != 2) return SKIP;
      check(it, op, file);
      return 0;
    }
    case AV_OP_DOT_GENERAL: {
      av_dot_params p;
      memset(&p, 0, sizeof p);
      int nb2, nc2;
      if (!ints(op, "lhs_batching_dimensions", p.lhs_batch, &p.nbatch) ||
          !ints(op, "rhs_batching_dimensions", p.rhs_batch, &nb2) ||
          !ints(op, "lhs_contracting_dimensions", p.lhs_contract, &p.ncontract) ||
          !ints(op, "rhs_contracting_dimensions", p.rhs_contract, &nc2))
        return SKIP;
      c = av_kernel_dot_general(&p, &in[0], &in[1], &out[0], d);
      break;
    }
    case AV_OP_CONVOLUTION: {
      av_conv_params p;
      av_conv_params_init(&p);
      int n = op->results[0].type->rank - 2, k;
      p.nspatial = n;
      p.input_batch_dimension = int_or(op, "input_batch_dimension", 0);
      p.input_feature_dimension = int_or(op, "input_feature_dimension", 1);
      p.kernel_input_feature_dimension = int_or(op, "kernel_input_feature_dimension", 0);
      p.kernel_output_feature_dimension = int_or(op, "kernel_output_feature_dimension", 1);
      p.output_batch_dimension = int_or(op, "output_batch_dimension", 0);
      p.output_feature_dimension = int_or(op, "output_feature_dimension", 1);
      if (!ints(op, "input_spatial_dimensions", p.input_spatial_dimensions, &k) || k != n) return SKIP;
      if (!ints(op, "kernel_spatial_dimensions", p.kernel_spatial_dimensions, &k) || k != n) return SKIP;
      if (!ints(op, "output_spatial_dimensions", p.output_spatial_dimensions, &k) || k != n) return SKIP;
      int64_t tmp[AV_KMAX_RANK * 2];
      if (ints(op, "window_strides", tmp, &k) && k == n) memcpy(p.window_strides, tmp, sizeof(int64_t) * (size_t)n);
      if (ints(op, "lhs_dilation", tmp, &k) && k == n) memcpy(p.lhs_dilation, tmp, sizeof(int64_t) * (size_t)n);
      if (ints(op, "rhs_dilation", tmp, &k) && k == n) memcpy(p.rhs_dilation, tmp, sizeof(int64_t) * (size_t)n);
      if (ints(op, "window_reversal", tmp, &k) && k == n)
        for (int i = 0; i < n; i++) p.window_reversal[i] = tmp[i] != 0;
      if (!padding(op, n, p.padding_lo, p.padding_hi)) return SKIP;
      p.feature_group_count = int_or(op, "feature_group_count", 1);
      p.batch_group_count = int_or(op, "batch_group_count", 1);
      c = av_kernel_convolution(&p, &in[0], &in[1], &out[0], d);
      break;
    }
    case AV_OP_GATHER: {
      av_gather_params p;
      memset(&p, 0, sizeof p);
      int k;
      if (!ints(op, "offset_dims", p.offset_dims, &p.n_offset_dims) ||
          !ints(op, "collapsed_slice_dims", p.collapsed_slice_dims, &p.n_collapsed_slice_dims) ||
          !ints(op, "operand_batching_dims", p.operand_batching_dims, &p.n_operand_batching_dims) ||
          !ints(op, "start_indices_batching_dims", p.start_indices_batching_dims, &p.n_start_indices_batching_dims) ||
          !ints(op, "start_index_map", p.start_index_map, &p.n_start_index_map) ||
          !ints(op, "slice_sizes", p.slice_sizes, &k))
        return SKIP;
      p.index_vector_dim = int_or(op, "index_vector_dim", 0);
      c = av_kernel_gather(&p, &in[0], &in[1], &out[0], d);
      break;
    }
    case AV_OP_SCATTER: {
      av_scatter_params p;
      memset(&p, 0, sizeof p);
      if (op->noperands % 2 != 1 || op->nregions != 1) return SKIP;
      p.ninputs = (int)(op->noperands - 1) / 2;
      if (!ints(op, "update_window_dims", p.update_window_dims, &p.n_update_window_dims) ||
          !ints(op, "inserted_window_dims", p.inserted_window_dims, &p.n_inserted_window_dims) ||
          !ints(op, "input_batching_dims", p.input_batching_dims, &p.n_input_batching_dims) ||
          !ints(op, "scatter_indices_batching_dims", p.scatter_indices_batching_dims, &p.n_scatter_indices_batching_dims) ||
          !ints(op, "scatter_dims_to_operand_dims", p.scatter_dims_to_operand_dims, &p.n_scatter_dims_to_operand_dims))
        return SKIP;
      p.index_vector_dim = int_or(op, "index_vector_dim", 0);
      make_fn(&p.update, &bc[0], it, &op->regions[0]);
      c = av_kernel_scatter(&p, in, &in[p.ninputs], &in[p.ninputs + 1], out, d);
      break;
    }
    case AV_OP_REDUCE: {
      av_reduce_params p;
      memset(&p, 0, sizeof p);
      p.ninputs = (int)op->noperands / 2;
      if (!ints(op, "dimensions", p.dims, &p.ndims) || op->nregions != 1) return SKIP;
      make_fn(&p.body, &bc[0], it, &op->regions[0]);
      c = av_kernel_reduce(&p, in, &in[p.ninputs], out, d);
      break;
    }
    case AV_OP_REDUCE_WINDOW: {
      av_reduce_window_params p;
      int r = op->results[0].type->rank, k;
      av_reduce_window_params_init(&p, r);
      p.ninputs = (int)op->noperands / 2;
      int64_t tmp[AV_KMAX_RANK * 2];
      if (!ints(op, "window_dimensions", p.window_dimensions, &k) || k != r) return SKIP;
      if (ints(op, "window_strides", tmp, &k) && k == r) memcpy(p.window_strides, tmp, sizeof(int64_t) * (size_t)r);
      if (ints(op, "base_dilations", tmp, &k) && k == r) memcpy(p.base_dilations, tmp, sizeof(int64_t) * (size_t)r);
      if (ints(op, "window_dilations", tmp, &k) && k == r) memcpy(p.window_dilations, tmp, sizeof(int64_t) * (size_t)r);
      if (!padding(op, r, p.padding_lo, p.padding_hi)) return SKIP;
      make_fn(&p.body, &bc[0], it, &op->regions[0]);
      c = av_kernel_reduce_window(&p, in, &in[p.ninputs], out, d);
      break;
    }
    case AV_OP_SELECT_AND_SCATTER: {
      av_select_and_scatter_params p;
      int r = op->results[0].type->rank, k;
      av_select_and_scatter_params_init(&p, r);
      int64_t tmp[AV_KMAX_RANK * 2];
      if (ints(op, "window_dimensions", tmp, &k) && k == r) memcpy(p.window_dimensions, tmp, sizeof(int64_t) * (size_t)r);
      if (ints(op, "window_strides", tmp, &k) && k == r) memcpy(p.window_strides, tmp, sizeof(int64_t) * (size_t)r);
      if (!padding(op, r, p.padding_lo, p.padding_hi) || op->nregions != 2) return SKIP;
      make_fn(&p.select, &bc[0], it, &op->regions[0]);
      make_fn(&p.scatter, &bc[1], it, &op->regions[1]);
      c = av_kernel_select_and_scatter(&p, &in[0], &in[1], &in[2], &out[0], d);
      break;
    }
    case AV_OP_SORT: {
      av_sort_params p;
      memset(&p, 0, sizeof p);
      p.ninputs = (int)op->noperands;
      p.dimension = int_or(op, "dimension", -1);
      p.is_stable = bool_or(op, "is_stable", false);
      make_fn(&p.comparator, &bc[0], it, &op->regions[0]);
      c = av_kernel_sort(&p, in, out, d);
      break;
    }
    case AV_OP_FFT: {
      av_fft_params p;
      memset(&p, 0, sizeof p);
      const char *t = enum_of(op, "fft_type");
      p.type = !strcmp(t, "FFT") ? AV_FFT_FFT : !strcmp(t, "IFFT") ? AV_FFT_IFFT : !strcmp(t, "RFFT") ? AV_FFT_RFFT : AV_FFT_IRFFT;
      if (!ints(op, "fft_length", p.fft_length, &p.nlengths) || p.nlengths > 3) return SKIP;
      av_arena plan_arena; /* the plan a compiled step builds at compile time */
      av_arena_init(&plan_arena);
      char err[160];
      c = av_fft_plan_build(&p, &in[0], &out[0], &plan_arena, err, sizeof err, &p.plan);
      if (c == AV_OK) c = av_kernel_fft(&p, &in[0], &out[0], d);
      else av_diag_set(d, c, "fft plan: %s", err);
      av_arena_free(&plan_arena);
      break;
    }
    case AV_OP_TRIANGULAR_SOLVE: {
      const char *t = enum_of(op, "transpose_a");
      av_triangular_solve_params p = {bool_or(op, "left_side", false), bool_or(op, "lower", false),
                                      bool_or(op, "unit_diagonal", false),
                                      !strcmp(t, "TRANSPOSE") ? AV_TRANSPOSE_TRANSPOSE
                                      : !strcmp(t, "ADJOINT") ? AV_TRANSPOSE_ADJOINT
                                                              : AV_TRANSPOSE_NO_TRANSPOSE,
                                      NULL};
      c = av_kernel_triangular_solve(&p, &in[0], &in[1], &out[0], d);
      break;
    }
    case AV_OP_CHOLESKY: {
      av_cholesky_params p = {bool_or(op, "lower", false), NULL};
      c = av_kernel_cholesky(&p, &in[0], &out[0], d);
      break;
    }
    case AV_OP_RNG_BIT_GENERATOR: {
      const char *t = enum_of(op, "rng_algorithm");
      av_rng_bit_generator_params p = {!strcmp(t, "THREE_FRY") ? AV_RNG_ALGORITHM_THREE_FRY
                                       : !strcmp(t, "PHILOX")  ? AV_RNG_ALGORITHM_PHILOX
                                                               : AV_RNG_ALGORITHM_DEFAULT};
      c = av_kernel_rng_bit_generator(&p, &in[0], &out[0], &out[1], d);
      break;
    }
    case AV_OP_RESHAPE: {
      tval *x = val(it, op->operands[0]);
      if (tval_count(x) != tval_count(r0)) return SKIP;
      memcpy(r0->data, x->data, (size_t)tval_count(x) * av_dtype_size(x->dt));
      return 0;
    }
    default: {
      if (op->code == AV_OP_UNKNOWN && !strncmp(op->name, "check.expect_", 13)) {
        if (op->noperands == 1) return check_const(it, op, file);
        if (op->noperands == 2) {
          check_vals(it, val(it, op->operands[0]), val(it, op->operands[1]),
                     strstr(op->name, "almost") ? "check.expect_almost_eq" : "check.expect_eq", file);
          return 0;
        }
        goto unsupported;
      }
      /* element-wise compare / select / binary ops on same-shape operands */
      int64_t n = tval_count(r0);
      for (uint32_t i = 0; i < op->noperands; i++)
        if (tval_count(val(it, op->operands[i])) != n) goto unsupported;
      size_t es = av_dtype_size(r0->dt);
      for (int64_t e = 0; e < n; e++) {
        int rc;
        if (op->code == AV_OP_COMPARE && op->noperands == 2) {
          tval *a = val(it, op->operands[0]), *b = val(it, op->operands[1]);
          size_t aes = av_dtype_size(a->dt);
          rc = eval_compare(op, a->dt, (char *)a->data + e * (int64_t)aes, (char *)b->data + e * (int64_t)aes,
                            (uint8_t *)r0->data + e);
        } else if (op->code == AV_OP_SELECT && op->noperands == 3) {
          tval *p = val(it, op->operands[0]), *a = val(it, op->operands[1]), *b = val(it, op->operands[2]);
          memcpy((char *)r0->data + e * (int64_t)es, ((uint8_t *)p->data)[e] ? (char *)a->data + e * (int64_t)es : (char *)b->data + e * (int64_t)es, es);
          rc = 0;
        } else if (op->noperands == 2) {
          tval *a = val(it, op->operands[0]), *b = val(it, op->operands[1]);
          rc = eval_binary(op->code, r0->dt, (char *)a->data + e * (int64_t)es, (char *)b->data + e * (int64_t)es,
                           (char *)r0->data + e * (int64_t)es);
        } else {
          rc = SKIP;
        }
        if (rc) goto unsupported;
      }
      return 0;
    unsupported:
      snprintf(it->why, sizeof it->why, "%s", op->name);
      return SKIP;
    }
  }
  if (c == AV_UNIMPLEMENTED && strstr(d->msg, "body op")) return SKIP;
  if (c) {
    print_error("%s: %s failed: %s\n", file, op->name, d->msg);
    it->failures++;
    return (int)c;
  }
  return 0;
}

static int run_block(interp *it, const av_block *b, const av_value *const *args, uint32_t nargs, tval *results,
                     const char *file, av_diag *d) {
  (void)args;
  (void)nargs;
  for (const av_op *op = b->first; op; op = op->next) {
    if (op->code == AV_OP_FUNC_RETURN || op->code == AV_OP_RETURN) {
      for (uint32_t i = 0; i < op->noperands && i < 8; i++) {
        tval *t = val(it, op->operands[i]);
        results[i] = *t;
        size_t sz = (size_t)tval_count(t) * av_dtype_size(t->dt);
        results[i].data = malloc(sz ? sz : 1);
        if (!results[i].data) return SKIP;
        memcpy(results[i].data, t->data, sz);
      }
      return 0;
    }
    int rc = run_op(it, op, file, d);
    if (rc) return rc;
  }
  return SKIP;
}

static bool wanted(const char *name) {
  static const char *const prefixes[] = {"dot_general", "conv", "gather", "scatter", "reduce_window", "select_and_scatter",
                                         "fft", "triangular_solve", "cholesky", "rng_bit_generator", "sort", "reduce_",
                                         "argmax", "argmin", "top_k"};
  for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
    if (!strncmp(name, prefixes[i], strlen(prefixes[i]))) return true;
  return false;
}

static void test_conformance_testdata(void **state) {
  (void)state;
  const char *shared = getenv("ANVIL_SHARED_DIR");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/conformance/stablehlo/testdata", shared ? shared : "/nonexistent");
  DIR *dh = opendir(dir);
  if (!dh) {
    skip();
    return;
  }
  int ran = 0, skipped = 0, failed_files = 0, checks = 0;
  struct dirent *de;
  while ((de = readdir(dh))) {
    size_t len = strlen(de->d_name);
    if (len < 6 || strcmp(de->d_name + len - 5, ".mlir") || !wanted(de->d_name)) continue;
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    FILE *fh = fopen(path, "rb");
    if (!fh) continue;
    fseek(fh, 0, SEEK_END);
    long sz = ftell(fh);
    fseek(fh, 0, SEEK_SET);
    char *text = malloc((size_t)sz + 1);
    size_t got = text ? fread(text, 1, (size_t)sz, fh) : 0;
    fclose(fh);
    if (!text || got != (size_t)sz) {
      free(text);
      continue;
    }
    av_diag d;
    av_diag_init(&d);
    av_module *m = av_load_mlir_text(text, (size_t)sz, &d);
    free(text);
    if (!m) {
      skipped++;
      continue;
    }
    interp it;
    memset(&it, 0, sizeof it);
    it.m = m;
    it.nvals = m->next_value_id;
    it.vals = calloc(it.nvals ? it.nvals : 1, sizeof *it.vals);
    it.slots = calloc(it.nvals ? it.nvals : 1, sizeof *it.slots);
    it.types = calloc(it.nvals ? it.nvals : 1, sizeof *it.types);
    const av_func *mainf = av_module_entry(m);
    tval res[8];
    memset(res, 0, sizeof res);
    int rc = it.vals && it.slots && it.types && mainf ? run_func(&it, mainf, res, de->d_name, &d) : SKIP;
    for (int i = 0; i < 8; i++) free(res[i].data);
    if (rc == SKIP && it.failures == 0) {
      skipped++;
      if (getenv("ANVIL_KERNELS_VERBOSE")) print_message("skip %s: %s %s\n", de->d_name, it.why, d.msg);
    } else {
      ran++;
      checks += it.checks;
      if (it.failures || rc) failed_files++;
    }
    for (uint32_t i = 0; i < it.nvals; i++) free(it.vals[i].data);
    free(it.vals);
    free(it.slots);
    free(it.types);
    av_module_free(m);
  }
  closedir(dh);
  print_message("conformance (kernel ops): %d files run, %d checks, %d failed, %d skipped\n", ran, checks,
                failed_files, skipped);
  assert_true(ran > 0);
  assert_int_equal(failed_files, 0);
}

/* The hand-written per-op cases (tests/interpret/OP.mlir, split at "// -----"): every
 * function in a chunk is run; its check.expect_*_const ops compare. */
static void test_interpret_cases(void **state) {
  (void)state;
  static const char *const files[] = {"scatter", "gather", "sort", "reduce", "reduce_window", "select_and_scatter",
                                      "dot_general", "convolution", "fft", "triangular_solve"};
  const char *shared = getenv("ANVIL_SHARED_DIR");
  int ran = 0, skipped = 0, failed = 0, checks = 0, found = 0;
  for (size_t fi = 0; fi < sizeof files / sizeof *files; fi++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/conformance/stablehlo/tests/interpret/%s.mlir", shared ? shared : "/nonexistent",
             files[fi]);
    FILE *fh = fopen(path, "rb");
    if (!fh) continue;
    found++;
    fseek(fh, 0, SEEK_END);
    long sz = ftell(fh);
    fseek(fh, 0, SEEK_SET);
    char *text = malloc((size_t)sz + 1);
    size_t got = text ? fread(text, 1, (size_t)sz, fh) : 0;
    fclose(fh);
    if (!text || got != (size_t)sz) {
      free(text);
      continue;
    }
    text[sz] = 0;
    char *chunk = text;
    int index = 0;
    while (chunk && *chunk) {
      char *next = strstr(chunk, "\n// -----");
      size_t clen = next ? (size_t)(next - chunk) : strlen(chunk);
      char name[256];
      snprintf(name, sizeof name, "%s.mlir#%d", files[fi], index++);
      av_diag d;
      av_diag_init(&d);
      av_module *m = av_load_mlir_text(chunk, clen, &d);
      chunk = next ? next + 9 : NULL;
      if (!m) {
        skipped++;
        continue;
      }
      interp it;
      memset(&it, 0, sizeof it);
      it.m = m;
      it.nvals = m->next_value_id;
      it.vals = calloc(it.nvals ? it.nvals : 1, sizeof *it.vals);
      it.slots = calloc(it.nvals ? it.nvals : 1, sizeof *it.slots);
      it.types = calloc(it.nvals ? it.nvals : 1, sizeof *it.types);
      int rc = SKIP;
      for (uint32_t f = 0; f < m->nfuncs && it.vals && it.slots && it.types; f++) {
        if (m->funcs[f]->body.nblocks != 1 || m->funcs[f]->body.blocks[0].nargs) continue;
        tval res[8];
        memset(res, 0, sizeof res);
        av_diag_init(&d);
        rc = run_func(&it, m->funcs[f], res, name, &d);
        for (int i = 0; i < 8; i++) free(res[i].data);
        if (rc) break;
      }
      if (rc == SKIP && it.failures == 0) {
        skipped++;
        if (getenv("ANVIL_KERNELS_VERBOSE")) print_message("skip %s: %s %s\n", name, it.why, d.msg);
      } else {
        ran++;
        checks += it.checks;
        if (it.failures || rc) failed++;
      }
      for (uint32_t i = 0; i < it.nvals; i++) free(it.vals[i].data);
      free(it.vals);
      free(it.slots);
      free(it.types);
      av_module_free(m);
    }
    free(text);
  }
  if (!found) {
    skip();
    return;
  }
  print_message("interpret cases (kernel ops): %d run, %d checks, %d failed, %d skipped\n", ran, checks, failed, skipped);
  assert_true(ran > 0);
  assert_int_equal(failed, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conformance_testdata),
      cmocka_unit_test(test_interpret_cases),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
