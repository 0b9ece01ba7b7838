/* Generated code against the interpreter (its oracle), op by op: every elementwise op the
 * interpreter has (every opcode av_ew_prepare accepts, every compare direction and type),
 * every convert and select, for every element type, with each operand an array, a scalar
 * known at compile time or a scalar read at run time; on every ISA this CPU has. Inputs
 * cover NaN (quiet, signalling, negative, with payloads), +-inf, +-0, denormals, the largest
 * and smallest values, integer extremes, shift counts around the width, the thresholds of
 * the fast math paths, and random bits; lengths are odd (tails) and below one vector.
 * Arrays sit against PROT_NONE pages, so a generated load or store past an array faults.
 * Results must be bit-identical, transcendentals included (generated code computes them with
 * the kernels' own operations, or calls the kernels), except log, log1p, expm1 and erf_inv of
 * f32: generated code computes those in f64 with its own polynomials and rounds once, so they
 * are held against f64 references (glibc's f64 functions; for erf_inv, bisection and Newton
 * on glibc's erf / erfc) at the stated bound, 0.51 ulp, with the interpreter's own error
 * reported beside it; their special values (NaN, +-inf, +-0, +-1) must equal the
 * interpreter's. erf_inv is also swept densely below. CG_TRACE=1 lists every case and what was not generated. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "codegen/cg_ir.h"
#include "codegen/codegen.h"
#include "runtime/kernels/convert.h"
#include "runtime/kernels/elementwise.h"
#include "runtime/steps.h"

/* ---- arrays between guard pages */

typedef struct guarded {
  void *map;
  size_t len;
  void *data; /* ends at the second guard page */
} guarded;

static guarded galloc(size_t bytes) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t body = (bytes + page - 1) / page * page;
  guarded g;
  g.len = body + 2 * page;
  g.map = mmap(NULL, g.len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(g.map != MAP_FAILED);
  assert_int_equal(mprotect(g.map, page, PROT_NONE), 0);
  assert_int_equal(mprotect((char *)g.map + page + body, page, PROT_NONE), 0);
  g.data = (char *)g.map + page + body - bytes;
  return g;
}

static void gfree(guarded *g) { munmap(g->map, g->len); }

/* ---- input values */

static uint64_t rng_state = 0x9E3779B97F4A7C15u;
static uint64_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

static const uint32_t f32_special[] = {
    0x00000000, 0x80000000, 0x3f800000, 0xbf800000, 0x3f000000, 0xbf000000, 0x3fc00000, 0x40200000,
    0xc0200000, 0x40400000, 0x00000001, 0x80000001, 0x00800000, 0x007fffff, 0x000b6d18, 0x800b6d18,
    0x7f7fffff, 0xff7fffff, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000, 0x7fc12345, 0x7f800001,
    0xffa00001, 0x42b16666 /* 88.7 */, 0x42b20000, 0x42c80000 /* 100 */, 0x42ca0000, 0xc2ce0000,
    0xc2f00000 /* -120 */, 0xc2f20000, 0x43480000 /* 200 */, 0xc3480000, 0x48800000 /* 262144 */,
    0x48800002, 0x501502f9 /* 1e10 */, 0xd01502f9, 0x4b000001 /* 2^23 + 1 */, 0x4f000000 /* 2^31 */,
    0xcf000000, 0x4f800000 /* 2^32 */, 0x5f000000 /* 2^63 */, 0xdf000000, 0x5f800000, 0x40490fdb /* pi */,
    0x3a83126f, 0x41200000 /* 10 */, 0x41a00000, 0xc1200000, 0x42ae0000 /* 87 */, 0xc2ae0000,
    0x42fe0000 /* 127 */, 0x43000000 /* 128 */, 0xc3000000, 0x437f0000, 0x43800000, 0x477fff00,
    0x47800000, 0xbeffffff /* -0.49999997 */, 0x3effffff, 0x3f7fffff, 0x3f800001, 0x44800000,
};
static const uint64_t f64_special[] = {
    0, 0x8000000000000000u, 0x3ff0000000000000u, 0xbff0000000000000u, 0x3fe0000000000000u,
    0x4004000000000000u, 0xc004000000000000u, 1, 0x8000000000000001u, 0x0010000000000000u,
    0x000fffffffffffffu, 0x7fefffffffffffffu, 0xffefffffffffffffu, 0x7ff0000000000000u,
    0xfff0000000000000u, 0x7ff8000000000000u, 0xfff8000000000000u, 0x7ff8000000012345u,
    0x7ff0000000000001u, 0x4056280000000000u, 0x4059000000000000u, 0xc05e000000000000u,
    0x41e0000000000000u, 0xc1e0000000000000u, 0x41f0000000000000u, 0x43e0000000000000u,
    0xc3e0000000000000u, 0x43f0000000000000u, 0x400921fb54442d18u, 0x4024000000000000u,
    0x3fdfffffffffffffu, 0xbfdfffffffffffffu, 0x4330000000000001u, 0x3ff0000000000001u,
};

/* n values of dtype t into dst; `salt` varies the order between operands */
static void fill(av_dtype t, void *dst, int64_t n, int salt) {
  size_t es = av_dtype_size(t);
  for (int64_t i = 0; i < n; i++) {
    uint64_t v = rnd();
    int64_t pick = (i * (salt + 3) + salt * 7) % 97;
    char *o = (char *)dst + (size_t)i * es;
    if (t == AV_DT_PRED) {
      o[0] = (char)(v & 1);
      continue;
    }
    if (t == AV_DT_F32) {
      uint32_t u;
      int ns = (int)(sizeof f32_special / sizeof *f32_special);
      if (pick < ns) {
        u = f32_special[pick];
      } else if (pick < 80) { /* moderate values, both signs */
        float f = (float)((double)(int64_t)(v % 4000001) / 100000.0 - 20.0);
        memcpy(&u, &f, 4);
      } else {
        u = (uint32_t)v;
      }
      memcpy(o, &u, 4);
      continue;
    }
    if (t == AV_DT_F64) {
      uint64_t u;
      int ns = (int)(sizeof f64_special / sizeof *f64_special);
      if (pick < ns) {
        u = f64_special[pick];
      } else if (pick < 80) {
        double f = (double)(int64_t)(v % 4000001) / 100000.0 - 20.0;
        memcpy(&u, &f, 8);
      } else {
        u = v;
      }
      memcpy(o, &u, 8);
      continue;
    }
    int bits = (int)es * 8;
    uint64_t specials[] = {0, 1, UINT64_MAX, 2, 7, 8, (uint64_t)bits - 1, (uint64_t)bits, (uint64_t)bits + 1,
                           31, 32, 33, 63, 64, (uint64_t)1 << (bits - 1), ((uint64_t)1 << (bits - 1)) - 1,
                           ((uint64_t)1 << (bits - 1)) + 1, 100, 255, 256, 65535, 65536};
    int ns = (int)(sizeof specials / sizeof *specials);
    uint64_t u = pick < ns ? specials[pick] : pick < 70 ? v % 100 : v;
    memcpy(o, &u, es); /* little endian: the low bytes */
  }
}

/* ---- one region: one op over arrays / scalars */

enum { MAXIN = 3 };

static int ncases, ngenerated, nmismatch;

/* erf_inv in f64, independently of both implementations: bisection on erf (on erfc above 0.5,
 * where 1 - erf loses the digits) to 2^-60, then two Newton steps for relative accuracy near 0 */
static double erfinv_ref(double y) {
  if (isnan(y) || fabs(y) > 1) return NAN;
  if (fabs(y) == 1) return copysign(INFINITY, y);
  double a = fabs(y), lo = 0, hi = 6, x;
#define ERFINV_RESIDUAL(x) (a > 0.5 ? (1 - a) - erfc(x) : erf(x) - a)
  for (int i = 0; i < 60; i++) {
    double mid = 0.5 * (lo + hi);
    if (ERFINV_RESIDUAL(mid) < 0) lo = mid;
    else hi = mid;
  }
  x = 0.5 * (lo + hi);
  for (int i = 0; i < 2; i++) x -= ERFINV_RESIDUAL(x) / (1.1283791670955126 * exp(-x * x));
#undef ERFINV_RESIDUAL
  return copysign(x, y);
}

/* f32 ops held to an ulp bound against an f64 reference instead of bit-identity */
static double (*ulp_ref(const av_ew_kernel *k))(double) {
  if (k->dtype != AV_DT_F32) return NULL;
  switch (k->op) {
    case AV_OP_LOG: return log;
    case AV_OP_LOG_PLUS_ONE: return log1p;
    case AV_OP_EXPONENTIAL_MINUS_ONE: return expm1;
    case AV_OP_CHLO_ERF_INV: return erfinv_ref;
    default: return NULL;
  }
}

enum { ULP_BOUND_MILLI = 510 }; /* 0.51 ulp */
static double worst_gen[AV_OP_COUNT], worst_interp[AV_OP_COUNT];

/* Error of f32 result y against the exact value v, in ulps of f32 at v. */
static double ulp_err(float y, double v) {
  double a = fabs(v);
  int e;
  frexp(a < 0x1p-126 ? 0x1p-126 : a, &e);
  double ulp = ldexp(1.0, e - 24);
  return fabs((double)y - v) / ulp;
}

/* Whether y is a special value (NaN, inf, zero) equal to the interpreter's z in kind. */
static bool special_ok(float y, float z) {
  if (isnan(y) || isnan(z)) return isnan(y) && isnan(z);
  if (isinf(y) || isinf(z) || y == 0 || z == 0) return y == z && signbit(y) == signbit(z);
  return true;
}

/* Runs op kernel k (nin operands of in_dt[q], result out_dt) generated for `isa` against
 * av_ew_run, with operand `scalar` (-1: none) a scalar (known: its value is a compile-time
 * constant). Returns false on a mismatch (reported). */
static bool run_case(const char *isa, const char *what, const av_ew_kernel *k, const av_dtype *in_dt,
                     av_dtype out_dt, int scalar, bool known, int64_t n) {
  int nin = k->nin;
  av_fused_reg regs[MAXIN + 1];
  av_dtype dtype[MAXIN + 1];
  const void *value[MAXIN + 1] = {0};
  guarded in[MAXIN], out = galloc((size_t)n * av_dtype_size(out_dt));
  void *ref = malloc((size_t)n * av_dtype_size(out_dt) + 1);
  void *full[MAXIN]; /* the reference's operands: scalars expanded */
  for (int q = 0; q < nin; q++) {
    size_t es = av_dtype_size(in_dt[q]);
    bool sc = q == scalar;
    in[q] = galloc(sc ? es : (size_t)n * es);
    fill(in_dt[q], in[q].data, sc ? 1 : n, q * 5 + 1);
    full[q] = malloc((size_t)n * es + 1);
    for (int64_t i = 0; i < n; i++)
      memcpy((char *)full[q] + (size_t)i * es, (const char *)in[q].data + (sc ? 0 : (size_t)i * es), es);
    regs[q] = (av_fused_reg){sc ? AV_FUSED_SCALAR : AV_FUSED_IN, (uint32_t)q, es, NULL};
    dtype[q] = in_dt[q];
    if (sc && known) value[q] = in[q].data;
  }
  regs[nin] = (av_fused_reg){AV_FUSED_OUT, 0, av_dtype_size(out_dt), NULL};
  dtype[nin] = out_dt;
  av_fused_op op = {k, nin, {0, 1, 2}, (uint32_t)nin, NULL, 0};
  av_fused_params p = {n, (uint32_t)nin + 1, 1, regs, &op, NULL, NULL, 0};
  av_cg_region_desc d = {&p, &op, 1, dtype, value, NULL, NULL, what};
  ncases++;
  if (getenv("CG_TRACE")) fprintf(stderr, "case %s %s scalar %d%s n %lld\n", isa, what, scalar, known ? " known" : "", (long long)n);
  av_cg_kernel *g = av_codegen_fused_isa(&d, isa);
  bool ok = true;
  if (g) {
    ngenerated++;
    p.gen = g;
    void *at[MAXIN + 1];
    for (int q = 0; q < nin; q++) at[q] = in[q].data;
    at[nin] = out.data;
    assert_true(av_fused_gen_run(&p, at, n, 0));
    av_ew_run(k, (const void *const *)full, ref, n);
    size_t es = av_dtype_size(out_dt);
    double (*fref)(double) = ulp_ref(k);
    for (int64_t i = 0; i < n && ok && fref; i++) {
      float y, z, x;
      memcpy(&y, (char *)out.data + 4 * (size_t)i, 4);
      memcpy(&z, (char *)ref + 4 * (size_t)i, 4);
      memcpy(&x, (char *)full[0] + 4 * (size_t)i, 4);
      double v = fref((double)x);
      bool normal = !isnan(v) && !isinf(v) && !isinf((float)v) && v != 0;
      double eg = normal ? ulp_err(y, v) : 0, ez = normal ? ulp_err(z, v) : 0;
      if (eg > worst_gen[k->op]) worst_gen[k->op] = eg;
      if (ez > worst_interp[k->op]) worst_interp[k->op] = ez;
      if (special_ok(y, z) && eg * 1000 <= ULP_BOUND_MILLI) continue;
      print_error("%s %s: element %lld: x %a: generated %a, interpreter %a, exact %a (%.3f ulp)\n", isa, what,
                  (long long)i, x, y, z, v, eg);
      ok = false;
      nmismatch++;
    }
    for (int64_t i = 0; i < n && ok && !fref; i++) {
      const unsigned char *a = (const unsigned char *)out.data + (size_t)i * es, *b = (const unsigned char *)ref + (size_t)i * es;
      if (memcmp(a, b, es) == 0) continue;
      uint64_t ga = 0, gb = 0, x0 = 0, x1 = 0;
      memcpy(&ga, a, es);
      memcpy(&gb, b, es);
      memcpy(&x0, (char *)full[0] + (size_t)i * av_dtype_size(in_dt[0]), av_dtype_size(in_dt[0]));
      if (nin > 1) memcpy(&x1, (char *)full[1] + (size_t)i * av_dtype_size(in_dt[1]), av_dtype_size(in_dt[1]));
      print_error("%s %s (scalar %d%s, n %lld): element %lld: generated 0x%llx, interpreter 0x%llx "
                  "(inputs 0x%llx 0x%llx)\n", isa, what, scalar, known ? " known" : "", (long long)n,
                  (long long)i, (unsigned long long)ga, (unsigned long long)gb, (unsigned long long)x0,
                  (unsigned long long)x1);
      ok = false;
      nmismatch++;
    }
    av_codegen_free(g);
  } else if (getenv("CG_TRACE")) {
    fprintf(stderr, "not generated: %s %s\n", isa, what);
  }
  for (int q = 0; q < nin; q++) {
    gfree(&in[q]);
    free(full[q]);
  }
  gfree(&out);
  free(ref);
  return ok;
}

static const av_dtype types[] = {AV_DT_PRED, AV_DT_S8, AV_DT_S16, AV_DT_S32, AV_DT_S64, AV_DT_U8,
                                 AV_DT_U16, AV_DT_U32, AV_DT_U64, AV_DT_F32, AV_DT_F64, AV_DT_BF16,
                                 AV_DT_F16, AV_DT_S4, AV_DT_U4};
enum { NTYPES = sizeof types / sizeof *types };
static const int64_t lengths[] = {1037, 5};

static const char *const isas[] = {"avx512", "avx2"};

/* Every variant of one kernel: arrays, then each operand a scalar (known and not). */
static bool run_kernel(const char *isa, const char *what, const av_ew_kernel *k, const av_dtype *in_dt,
                       av_dtype out_dt) {
  bool ok = true;
  for (unsigned li = 0; li < sizeof lengths / sizeof *lengths; li++) {
    ok = run_case(isa, what, k, in_dt, out_dt, -1, false, lengths[li]) && ok;
    if (li) continue;
    for (int s = 0; s < k->nin; s++) {
      ok = run_case(isa, what, k, in_dt, out_dt, s, true, lengths[li]) && ok;
      ok = run_case(isa, what, k, in_dt, out_dt, s, false, lengths[li]) && ok;
    }
  }
  return ok;
}

static bool isa_available(const char *isa) {
  av_fused_reg regs[2] = {{AV_FUSED_IN, 0, 4, NULL}, {AV_FUSED_OUT, 0, 4, NULL}};
  av_ew_kernel k;
  av_ew_prepare(AV_OP_NEGATE, AV_DT_S32, AV_DT_S32, AV_CMP_EQ, AV_CMP_DEFAULT, &k);
  av_fused_op op = {&k, 1, {0}, 1, NULL, 0};
  av_fused_params p = {64, 2, 1, regs, &op, NULL, NULL, 0};
  av_dtype dt[2] = {AV_DT_S32, AV_DT_S32};
  av_cg_region_desc d = {&p, &op, 1, dt, NULL, NULL, NULL, "probe"};
  av_cg_kernel *g = av_codegen_fused_isa(&d, isa);
  av_codegen_free(g);
  return g != NULL;
}

static void test_every_op(void **state) {
  (void)state;
  bool ok = true;
  for (unsigned ii = 0; ii < sizeof isas / sizeof *isas; ii++) {
    const char *isa = isas[ii];
    if (!isa_available(isa)) {
      print_message("%s: not on this CPU\n", isa);
      continue;
    }
    int c0 = ncases, g0 = ngenerated, m0 = nmismatch;
    for (int op = 1; op < AV_OP_COUNT; op++) {
      int arity = av_ew_arity((av_opcode)op);
      if (arity == 0) continue;
      for (int ti = 0; ti < NTYPES; ti++) {
        av_dtype t = types[ti], in_dt[MAXIN] = {t, t, t};
        av_dtype out = av_ew_result_dtype((av_opcode)op, t);
        int ndir = op == AV_OP_COMPARE ? 6 : 1, nct = op == AV_OP_COMPARE ? 2 : 1;
        for (int dir = 0; dir < ndir; dir++)
          for (int ct = 0; ct < nct; ct++) {
            av_ew_kernel k;
            av_cmp_type ctype = ct ? AV_CMP_TOTALORDER : AV_CMP_DEFAULT;
            if (!av_ew_prepare((av_opcode)op, t, out, (av_cmp_dir)dir, ctype, &k)) continue;
            char what[96];
            snprintf(what, sizeof what, "%s.%s%s%s", av_opcode_name((av_opcode)op), av_dtype_mlir_name(t),
                     op == AV_OP_COMPARE ? (const char *[]){" EQ", " NE", " LT", " LE", " GT", " GE"}[dir] : "",
                     ct ? " TOTALORDER" : "");
            ok = run_kernel(isa, what, &k, in_dt, out) && ok;
          }
      }
    }
    /* select */
    for (int ti = 0; ti < NTYPES; ti++) {
      av_dtype t = types[ti], in_dt[MAXIN] = {AV_DT_PRED, t, t};
      size_t es = av_dtype_size(t);
      if (es != 1 && es != 2 && es != 4 && es != 8) continue;
      av_ew_kernel k;
      memset(&k, 0, sizeof k);
      k.fn = av_ew_select;
      k.nin = 3;
      k.op = AV_OP_SELECT;
      k.dtype = t;
      k.in_size[0] = 1;
      k.in_size[1] = k.in_size[2] = k.out_size = k.cin_size = k.cout_size = es;
      char what[64];
      snprintf(what, sizeof what, "select.%s", av_dtype_mlir_name(t));
      ok = run_kernel(isa, what, &k, in_dt, t) && ok;
    }
    /* converts */
    for (int a = 0; a < NTYPES; a++)
      for (int b = 0; b < NTYPES; b++) {
        av_convert cv;
        if (!av_convert_prepare(types[a], types[b], &cv)) continue;
        av_ew_kernel k;
        av_ew_convert_kernel(&cv, &k);
        char what[64];
        snprintf(what, sizeof what, "convert.%s->%s", av_dtype_mlir_name(types[a]), av_dtype_mlir_name(types[b]));
        ok = run_kernel(isa, what, &k, (av_dtype[]){types[a]}, types[b]) && ok;
      }
    print_message("%s: %d cases, %d generated, %d mismatches\n", isa, ncases - c0, ngenerated - g0,
                  nmismatch - m0);
    const int ulp_ops[] = {AV_OP_LOG, AV_OP_LOG_PLUS_ONE, AV_OP_EXPONENTIAL_MINUS_ONE, AV_OP_CHLO_ERF_INV};
    for (unsigned q = 0; q < sizeof ulp_ops / sizeof *ulp_ops; q++)
      print_message("  %s f32: generated within %.3f ulp, interpreter %.3f ulp\n",
                    av_opcode_name((av_opcode)ulp_ops[q]), worst_gen[ulp_ops[q]], worst_interp[ulp_ops[q]]);
  }
  assert_true(ok);
}

/* A reduction nest, n-body's forces: acc[i, k] = sum over j of (p[j,k] - p[i,k]) * m[j] *
 * rsqrt(sum over k' of (p[j,k'] - p[i,k'])^2 + eps)^3, against the same arithmetic in C in
 * the interpreter's order (inner sum and outer sum in double, sequentially): the same bits,
 * for a body count that is not a multiple of the lanes (the last block's lanes clamp). */
static void test_nest_nbody(void **state) {
  (void)state;
  enum { N = 77 };
  av_ew_kernel sub, mul, add, rsq;
  av_ew_prepare(AV_OP_SUBTRACT, AV_DT_F32, AV_DT_F32, AV_CMP_EQ, AV_CMP_DEFAULT, &sub);
  av_ew_prepare(AV_OP_MULTIPLY, AV_DT_F32, AV_DT_F32, AV_CMP_EQ, AV_CMP_DEFAULT, &mul);
  av_ew_prepare(AV_OP_ADD, AV_DT_F32, AV_DT_F32, AV_CMP_EQ, AV_CMP_DEFAULT, &add);
  av_ew_prepare(AV_OP_RSQRT, AV_DT_F32, AV_DT_F32, AV_CMP_EQ, AV_CMP_DEFAULT, &rsq);
  float eps = 0.01f;
  uint32_t eps_bits;
  memcpy(&eps_bits, &eps, 4);
  const int V = AV_NEST_V, R = AV_NEST_R, K = AV_NEST_K;
  av_cg_nest_node nodes[] = {
      {AV_NEST_LEAF, R | K, AV_DT_F32, 0, 0, 3, 1, 0, NULL, {0}},       /* 0: p[j, k] */
      {AV_NEST_LEAF, V | K, AV_DT_F32, 0, 3, 0, 1, 0, NULL, {0}},       /* 1: p[i, k] */
      {AV_NEST_LEAF, R, AV_DT_F32, 1, 0, 1, 0, 0, NULL, {0}},           /* 2: m[j] */
      {AV_NEST_CONST, 0, AV_DT_F32, 0, 0, 0, 0, eps_bits, NULL, {0}},   /* 3: eps */
      {AV_NEST_CONST, 0, AV_DT_F32, 0, 0, 0, 0, 0, NULL, {0}},          /* 4: 0 */
      {AV_NEST_OP, V | R | K, AV_DT_F32, 0, 0, 0, 0, 0, &sub, {0, 1}},  /* 5: d */
      {AV_NEST_OP, V | R | K, AV_DT_F32, 0, 0, 0, 0, 0, &mul, {5, 5}},  /* 6: d * d */
      {AV_NEST_SUM_K, V | R, AV_DT_F32, 0, 0, 0, 0, 0, NULL, {6, 4}},   /* 7: r2 */
      {AV_NEST_OP, V | R, AV_DT_F32, 0, 0, 0, 0, 0, &add, {7, 3}},      /* 8: r2 + eps */
      {AV_NEST_OP, V | R, AV_DT_F32, 0, 0, 0, 0, 0, &rsq, {8}},         /* 9 */
      {AV_NEST_OP, V | R, AV_DT_F32, 0, 0, 0, 0, 0, &mul, {9, 9}},      /* 10 */
      {AV_NEST_OP, V | R, AV_DT_F32, 0, 0, 0, 0, 0, &mul, {10, 9}},     /* 11 */
      {AV_NEST_OP, V | R, AV_DT_F32, 0, 0, 0, 0, 0, &mul, {2, 11}},     /* 12: inv */
      {AV_NEST_OP, V | R | K, AV_DT_F32, 0, 0, 0, 0, 0, &mul, {5, 12}}, /* 13: d * inv */
  };
  av_cg_nest_desc d = {N, N, 3, nodes, sizeof nodes / sizeof *nodes, 13, 4, "nbody"};
  guarded p = galloc(N * 3 * sizeof(float)), m = galloc(N * sizeof(float));
  float *pv = p.data, *mv = m.data, want[N * 3];
  for (int i = 0; i < N * 3; i++) pv[i] = (float)((i * 37) % 101) * 0.03f - 1.5f;
  for (int i = 0; i < N; i++) mv[i] = 0.5f + (float)(i % 7) * 0.1f;
  for (int i = 0; i < N; i++)
    for (int k = 0; k < 3; k++) {
      double acc = 0.0;
      for (int j = 0; j < N; j++) {
        float dd[3];
        for (int q = 0; q < 3; q++) dd[q] = pv[j * 3 + q] - pv[i * 3 + q];
        double s = -0.0;
        for (int q = 0; q < 3; q++) s += (double)(dd[q] * dd[q]);
        float r2 = (float)(0.0 + s) + eps, rs = 1.0f / sqrtf(r2), c = rs * rs, c2 = c * rs, inv = mv[j] * c2;
        acc += (double)(dd[k] * inv);
      }
      want[i * 3 + k] = (float)acc;
    }
  for (unsigned ii = 0; ii < sizeof isas / sizeof *isas; ii++) {
    av_cg_nest_kernel *g = av_codegen_nest_isa(&d, isas[ii]);
    if (!g) {
      print_message("%s: nest not generated (not on this CPU?)\n", isas[ii]);
      continue;
    }
    const void *ptr[2] = {pv, mv};
    float stage[3 * 16];
    for (int v0 = 0; v0 < N; v0 += g->lanes) {
      av_cg_nest_args a = {ptr, stage, v0, N - 1, N};
      g->entry(&a);
      for (int l = 0; l < g->lanes && v0 + l < N; l++)
        for (int k = 0; k < 3; k++) {
          float got = stage[k * g->lanes + l], w = want[(v0 + l) * 3 + k];
          if (memcmp(&got, &w, 4)) fail_msg("%s: acc[%d, %d] = %a, expected %a", isas[ii], v0 + l, k, got, w);
        }
    }
    av_codegen_free(g);
  }
  gfree(&p);
  gfree(&m);
}

/* erf_inv of f32 (jax.random.normal's transform) over a dense sweep of (-1, 1): 2^16 evenly
 * spaced bit patterns of each sign and the 4096 values nearest +-1, where the tail polynomial
 * decides; the generated result within 0.51 ulp of erfinv_ref, the interpreter's beside it. */
static void test_erfinv_sweep(void **state) {
  (void)state;
  enum { SPREAD = 1 << 16, EDGE = 4096, N = 2 * (SPREAD + EDGE) };
  av_ew_kernel k;
  assert_true(av_ew_prepare(AV_OP_CHLO_ERF_INV, AV_DT_F32, AV_DT_F32, AV_CMP_EQ, AV_CMP_DEFAULT, &k));
  guarded x = galloc(N * 4), y = galloc(N * 4);
  float *xv = x.data, *interp = malloc(N * 4);
  double *exact = malloc(N * sizeof(double)), worst_interp_sweep = 0;
  for (uint32_t i = 0; i < N / 2; i++) {
    uint32_t b = i < SPREAD ? (uint32_t)((uint64_t)i * 0x3f800000u / SPREAD) : 0x3f800000u - 1 - (i - SPREAD);
    memcpy(&xv[2 * i], &b, 4);
    xv[2 * i + 1] = -xv[2 * i];
  }
  av_ew_run(&k, (const void *const[]){xv}, interp, N);
  for (int i = 0; i < N; i++) {
    exact[i] = erfinv_ref(xv[i]);
    if (xv[i] != 0) worst_interp_sweep = fmax(worst_interp_sweep, ulp_err(interp[i], exact[i]));
  }
  for (unsigned ii = 0; ii < sizeof isas / sizeof *isas; ii++) {
    if (!isa_available(isas[ii])) continue;
    av_fused_reg regs[2] = {{AV_FUSED_IN, 0, 4, NULL}, {AV_FUSED_OUT, 0, 4, NULL}};
    av_dtype dtype[2] = {AV_DT_F32, AV_DT_F32};
    const void *value[2] = {0};
    av_fused_op op = {&k, 1, {0, 1, 2}, 1, NULL, 0};
    av_fused_params p = {N, 2, 1, regs, &op, NULL, NULL, 0};
    av_cg_region_desc d = {&p, &op, 1, dtype, value, NULL, NULL, "erf_inv sweep"};
    av_cg_kernel *g = av_codegen_fused_isa(&d, isas[ii]);
    assert_non_null(g);
    p.gen = g;
    assert_true(av_fused_gen_run(&p, (void *const[]){xv, y.data}, N, 0));
    const float *got = y.data;
    double worst = 0;
    for (int i = 0; i < N; i++) {
      double e = xv[i] == 0 ? (got[i] == 0 && signbit(got[i]) == signbit(xv[i]) ? 0 : 1) : ulp_err(got[i], exact[i]);
      worst = fmax(worst, e);
      if (e * 1000 > ULP_BOUND_MILLI)
        fail_msg("%s: erf_inv(%a) = %a, exact %a (%.3f ulp), interpreter %a", isas[ii], xv[i], got[i], exact[i], e,
                 interp[i]);
    }
    print_message("%s: erf_inv sweep: generated within %.3f ulp, interpreter %.3f ulp\n", isas[ii], worst,
                  worst_interp_sweep);
    av_codegen_free(g);
  }
  free(interp);
  free(exact);
  gfree(&x);
  gfree(&y);
}

/* ---- value ranges: a region of three ops (g, then f, then a compare of f's result with a
 * constant) against the same three ops generated one region each. In the three-op region
 * each op's argument has a known range (a sine's [-1, 1], exp of that in [e^-1, e]...), and
 * the selects and compares that it decides are folded away (cg_node.lo / hi); alone, an op's
 * argument is an unknown array and nothing folds. Both must give the same bits (each alone
 * matches the interpreter: test_every_op). */

typedef struct stage {
  av_opcode op;
  float scalar;      /* the known operand of a binary op */
  bool scalar_first; /* it is the first operand */
} stage;

/* Generates the ops ks[0..nk) as one region over IN register 0: op i reads register r_i (the
 * previous op's result, the input for the first) and scalar register 1 + i when binary, and
 * writes register 1 + nk + i (TEMP for the first of several ops, else OUT). Runs it over n
 * elements of x into outs (one per OUT register, in order). false: not generated. */
static bool run_chain(const char *isa, const av_ew_kernel *const *ks, const stage *st, int nk, const float *x,
                      void *const *outs, int64_t n) {
  enum { MAXK = 3 };
  av_fused_reg regs[1 + 2 * MAXK];
  av_dtype dt[1 + 2 * MAXK];
  const void *value[1 + 2 * MAXK] = {0};
  av_fused_op ops[MAXK];
  void *at[1 + 2 * MAXK] = {0};
  regs[0] = (av_fused_reg){AV_FUSED_IN, 0, 4, NULL};
  dt[0] = AV_DT_F32;
  at[0] = (void *)x;
  uint32_t prev = 0, nout = 0, ntemp = 0;
  for (int i = 0; i < nk; i++) {
    uint32_t sr = 1 + (uint32_t)i, rr = 1 + (uint32_t)nk + (uint32_t)i;
    regs[sr] = (av_fused_reg){AV_FUSED_SCALAR, sr, 4, NULL};
    dt[sr] = AV_DT_F32;
    value[sr] = &st[i].scalar;
    at[sr] = (void *)&st[i].scalar;
    bool pred = st[i].op == AV_OP_COMPARE, out = i > 0 || nk == 1;
    regs[rr] = (av_fused_reg){out ? AV_FUSED_OUT : AV_FUSED_TEMP, out ? nout : ntemp, pred ? 1 : 4, NULL};
    dt[rr] = pred ? AV_DT_PRED : AV_DT_F32;
    if (out) at[rr] = outs[nout++];
    else ntemp++;
    ops[i] = (av_fused_op){ks[i], ks[i]->nin, {prev}, rr, NULL, 0};
    if (ks[i]->nin == 2) {
      ops[i].in[st[i].scalar_first ? 0 : 1] = sr;
      ops[i].in[st[i].scalar_first ? 1 : 0] = prev;
    }
    if (!pred) prev = rr;
  }
  av_fused_params p = {n, 1 + 2 * (uint32_t)nk, (uint32_t)nk, regs, ops, NULL, NULL, 0};
  av_cg_region_desc d = {&p, ops, (uint32_t)nk, dt, value, NULL, NULL, "ranges"};
  av_cg_kernel *g = av_codegen_fused_isa(&d, isa);
  if (!g) return false;
  p.gen = g;
  assert_true(av_fused_gen_run(&p, at, n, 0));
  av_codegen_free(g);
  return true;
}

static void test_ranges_fold_nothing_visible(void **state) {
  (void)state;
  static const stage stages[] = {
      {AV_OP_SINE, 0, false}, {AV_OP_COSINE, 0, false}, {AV_OP_EXPONENTIAL, 0, false},
      {AV_OP_EXPONENTIAL_MINUS_ONE, 0, false}, {AV_OP_LOG, 0, false}, {AV_OP_LOG_PLUS_ONE, 0, false},
      {AV_OP_TANH, 0, false}, {AV_OP_LOGISTIC, 0, false}, {AV_OP_SQRT, 0, false}, {AV_OP_RSQRT, 0, false},
      {AV_OP_ABS, 0, false}, {AV_OP_NEGATE, 0, false}, {AV_OP_FLOOR, 0, false}, {AV_OP_ADD, 1.0f, false},
      {AV_OP_MULTIPLY, -3.0f, false}, {AV_OP_DIVIDE, 4.0f, false}, {AV_OP_SUBTRACT, 1.0f, true},
      {AV_OP_DIVIDE, 2.0f, true}, {AV_OP_MAXIMUM, 0.0f, false}, {AV_OP_MINIMUM, 100.0f, false},
      {AV_OP_CHLO_SQUARE, 0, false}, /* a product of two ranges: 0 * inf at their ends */
  };
  /* the thresholds of the expansions' special cases */
  static const float limits[] = {0.0f, 1.0f, -1.0f, 10.0f, 100.0f, -120.0f, 0x1p-29f, 262144.0f, INFINITY, 0.5f, 2.0f};
  enum { NS = sizeof stages / sizeof *stages, NL = sizeof limits / sizeof *limits, N = 1037 };
  av_ew_kernel ks[NS], cmp[6];
  for (int i = 0; i < NS; i++)
    assert_true(av_ew_prepare(stages[i].op, AV_DT_F32, AV_DT_F32, AV_CMP_EQ, AV_CMP_DEFAULT, &ks[i]));
  for (int dir = 0; dir < 6; dir++)
    assert_true(av_ew_prepare(AV_OP_COMPARE, AV_DT_F32, AV_DT_PRED, (av_cmp_dir)dir, AV_CMP_DEFAULT, &cmp[dir]));
  guarded x = galloc(N * 4);
  fill(AV_DT_F32, x.data, N, 11);
  float *chain_y = malloc(N * 4), *one_a = malloc(N * 4), *one_b = malloc(N * 4);
  unsigned char *chain_p = malloc(N), *one_p = malloc(N);
  int cases = 0, differ = 0;
  for (unsigned ii = 0; ii < sizeof isas / sizeof *isas; ii++) {
    if (!isa_available(isas[ii])) continue;
    for (int a = 0; a < NS; a++)
      for (int b = 0; b < NS; b++) {
        int li = (a * NS + b) % NL, dir = (a + b) % 6;
        stage st[3] = {stages[a], stages[b], {AV_OP_COMPARE, limits[li], false}};
        const av_ew_kernel *chain[3] = {&ks[a], &ks[b], &cmp[dir]};
        if (!run_chain(isas[ii], chain, st, 3, x.data, (void *[]){chain_y, chain_p}, N)) continue;
        /* the same ops one region each */
        assert_true(run_chain(isas[ii], chain, st, 1, x.data, (void *[]){one_a}, N));
        assert_true(run_chain(isas[ii], chain + 1, st + 1, 1, one_a, (void *[]){one_b}, N));
        assert_true(run_chain(isas[ii], chain + 2, st + 2, 1, one_b, (void *[]){one_p}, N));
        cases++;
        for (int i = 0; i < N; i++) {
          if (memcmp(&chain_y[i], &one_b[i], 4) == 0 && chain_p[i] == one_p[i]) continue;
          print_error("%s: %s then %s, compare %d with %a: element %d: x %a: chained %a %d, one by one %a %d\n",
                      isas[ii], av_opcode_name(stages[a].op), av_opcode_name(stages[b].op), dir, limits[li], i,
                      ((float *)x.data)[i], chain_y[i], chain_p[i], one_b[i], one_p[i]);
          differ++;
          break;
        }
      }
  }
  print_message("ranges: %d three-op regions, %d differ from their ops one by one\n", cases, differ);
  assert_true(cases >= NS * NS); /* at least one ISA generated every chain */
  gfree(&x);
  free(chain_y);
  free(one_a);
  free(one_b);
  free(chain_p);
  free(one_p);
  assert_int_equal(differ, 0);
}

/* The ranges cg_add derives hold: operand ranges from ends that include zeros, denormals and
 * infinities, values drawn at and between their ends, and every non-NaN result of each
 * arithmetic node (computed here in that type with C's operators) inside the node's range. */
static double draw(double lo, double hi, cg_type t) {
  static const double picks[] = {-INFINITY, -3e38, -1e30, -3.5, -1, -0.3, -0x1p-130, -0.0, 0.0,
                                 0x1p-130, 1e-3, 0.5, 1, 2, 7.25, 1e30, 3e38, INFINITY};
  enum { NP = sizeof picks / sizeof *picks };
  uint64_t u = rnd();
  double v;
  if (u % 3 == 0) v = u % 2 ? lo : hi;
  else if (u % 3 == 1) v = picks[(u >> 8) % NP];
  else v = isinf(lo) || isinf(hi) ? ldexp((double)(u >> 40) / 16777216.0, (int)((u >> 8) % 200) - 100) * (u & 4 ? -1 : 1)
                                  : lo + (hi - lo) * ((double)(u >> 11) / 9007199254740992.0);
  if (t == CG_F32) { /* the nearest float inside: a value the node can hold */
    float f = (float)v;
    if (f < lo) f = nextafterf(f, INFINITY);
    if (f > hi) f = nextafterf(f, -INFINITY);
    v = f;
  }
  return v >= lo && v <= hi ? v : NAN; /* none: the sample is skipped */
}

static void test_range_rules_hold(void **state) {
  (void)state;
  static const double ends[] = {-INFINITY, -1e30, -3.5, -1, -0x1p-130, 0.0, 0x1p-130, 1e-3, 0.5, 1, 2, 7.25, 1e30, INFINITY};
  enum { NE = sizeof ends / sizeof *ends, OPS = 9 };
  int checked = 0;
  for (int ti = 0; ti < 2; ti++) {
    cg_type t = ti ? CG_F64 : CG_F32;
    for (int trial = 0; trial < 3000; trial++) {
      double lo[3], hi[3];
      for (int q = 0; q < 3; q++) {
        double e1 = ends[rnd() % NE], e2 = ends[rnd() % NE];
        lo[q] = fmin(e1, e2), hi[q] = fmax(e1, e2);
      }
      cg_region r = {0};
      uint32_t in[3];
      for (int q = 0; q < 3; q++) {
        in[q] = cg_add(&r, (cg_node){.op = CG_LOAD, .type = (uint8_t)t, .reg = (uint32_t)q});
        cg_range_fact(&r, in[q], lo[q], hi[q]);
      }
      cg_type other = t == CG_F32 ? CG_F64 : CG_F32;
      uint32_t node[OPS] = {
          cg_op2(&r, CG_FADD, t, in[0], in[1]), cg_op2(&r, CG_FSUB, t, in[0], in[1]),
          cg_op2(&r, CG_FMUL, t, in[0], in[1]), cg_op2(&r, CG_FDIV, t, in[0], in[1]),
          cg_op3(&r, CG_FMA, t, in[0], in[1], in[2]), cg_op1(&r, CG_FSQRT, t, in[0]),
          cg_opi(&r, CG_FROUND, t, in[0], CG_ROUND_FLOOR), cg_cvt(&r, CG_CVT_FLOAT, other, in[0]),
          cg_op3(&r, CG_SELECT, t, cg_cmp(&r, CG_CMP_LT, in[2], in[1]), in[0], in[1])};
      assert_false(r.failed);
      for (int k = 0; k < OPS; k++) {
        const cg_node *n = &r.v[node[k]];
        for (int sample = 0; sample < 20; sample++) {
          double a = draw(lo[0], hi[0], t), b = draw(lo[1], hi[1], t), c = draw(lo[2], hi[2], t), y;
          if (isnan(a) || isnan(b) || isnan(c)) continue;
          if (t == CG_F32) {
            float fa = (float)a, fb = (float)b, fc = (float)c;
            float ys[OPS] = {fa + fb, fa - fb, fa * fb, fa / fb, fmaf(fa, fb, fc), sqrtf(fa), floorf(fa), 0, sample % 2 ? fa : fb};
            y = k == 7 ? (double)fa : ys[k];
          } else {
            double ys[OPS] = {a + b, a - b, a * b, a / b, fma(a, b, c), sqrt(a), floor(a), 0, sample % 2 ? a : b};
            y = k == 7 ? (double)(float)a : ys[k];
          }
          checked++;
          if (isnan(y) || (y >= n->lo && y <= n->hi)) continue;
          fail_msg("%s %s: operands in [%g, %g] [%g, %g] [%g, %g]: %a, %a, %a gave %a outside [%a, %a]",
                   cg_type_name(t), cg_op_name((cg_opc)n->op), lo[0], hi[0], lo[1], hi[1], lo[2], hi[2], a, b, c, y,
                   n->lo, n->hi);
        }
      }
      cg_region_free(&r);
    }
  }
  print_message("range rules: %d results inside their ranges\n", checked);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_nest_nbody),
      cmocka_unit_test(test_every_op),
      cmocka_unit_test(test_erfinv_sweep),
      cmocka_unit_test(test_range_rules_hold),
      cmocka_unit_test(test_ranges_fold_nothing_visible),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
