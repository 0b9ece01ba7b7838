/* Transcendental functions as IR: step for step the operations of runtime/kernels/fast_math.h
 * (the same constants, the same fused multiply-adds, the same order), so generated code and
 * the interpreter agree to the bit. Comments name the fast_math.h function each follows. */
#include "codegen/cg_math.h"

#include <stdint.h>
#include <string.h>

#include "runtime/kernels/fast_math.h"

uint32_t cg_fconst(cg_region *r, cg_type t, double v) { return cg_constf(r, t, v); }

static uint32_t sign_mask(cg_region *r, cg_type t) {
  return cg_const(r, t, t == CG_F64 ? UINT64_C(0x8000000000000000) : 0x80000000u);
}

uint32_t cg_fneg(cg_region *r, uint32_t x) {
  cg_type t = cg_type_of(r, x);
  return cg_op2(r, CG_XOR, t, x, sign_mask(r, t));
}

uint32_t cg_fabs(cg_region *r, uint32_t x) {
  cg_type t = cg_type_of(r, x);
  return cg_op2(r, CG_ANDN, t, sign_mask(r, t), x);
}

uint32_t cg_copysign(cg_region *r, uint32_t mag, uint32_t sgn) {
  cg_type t = cg_type_of(r, mag);
  uint32_t m = sign_mask(r, t);
  return cg_op2(r, CG_OR, t, cg_op2(r, CG_ANDN, t, m, mag), cg_op2(r, CG_AND, t, m, sgn));
}

static uint32_t fma3(cg_region *r, uint32_t a, uint32_t b, uint32_t c) {
  return cg_op3(r, CG_FMA, cg_type_of(r, a), a, b, c);
}
static uint32_t fmaf_c(cg_region *r, uint32_t a, double b, double c) {
  cg_type t = cg_type_of(r, a);
  return fma3(r, a, cg_constf(r, t, b), cg_constf(r, t, c));
}
static uint32_t bin(cg_region *r, cg_opc op, uint32_t a, uint32_t b) {
  return cg_op2(r, op, cg_type_of(r, a), a, b);
}

/* av_fm_expm1_reduce_f: x = n*ln2 + r; returns expm1(r), *ni = n */
static uint32_t expm1_reduce_f(cg_region *r, uint32_t x, uint32_t *ni) {
  const float magic = 12582912.0f;
  uint32_t t = bin(r, CG_FADD, bin(r, CG_FMUL, x, cg_constf(r, CG_F32, 1.44269504f)),
                   cg_constf(r, CG_F32, magic));
  uint32_t n = bin(r, CG_FSUB, t, cg_constf(r, CG_F32, magic));
  *ni = cg_op2(r, CG_SUB, CG_I32, cg_bitcast(r, CG_I32, t), cg_const(r, CG_I32, 0x4B400000u));
  uint32_t rr = fma3(r, n, cg_constf(r, CG_F32, -0.693145751953125f), x);
  rr = fma3(r, n, cg_constf(r, CG_F32, -1.42860677e-6f), rr);
  uint32_t q = cg_constf(r, CG_F32, 0x1.a1533ap-13f);
  /* fmaf(q, r, c) == fmaf(r, q, c): the variable goes first */
  q = fma3(r, rr, q, cg_constf(r, CG_F32, 0x1.6d44d6p-10f));
  q = fma3(r, rr, q, cg_constf(r, CG_F32, 0x1.1110c6p-7f));
  q = fma3(r, rr, q, cg_constf(r, CG_F32, 0x1.5554e8p-5f));
  q = fma3(r, rr, q, cg_constf(r, CG_F32, 0x1.555556p-3f));
  q = fma3(r, rr, q, cg_constf(r, CG_F32, 0.5f));
  return fma3(r, bin(r, CG_FMUL, rr, rr), q, rr);
}

/* av_fm_pow2_f */
static uint32_t pow2_f(cg_region *r, uint32_t k) {
  uint32_t e = cg_op2(r, CG_ADD, CG_I32, k, cg_const(r, CG_I32, 127));
  return cg_bitcast(r, CG_F32, cg_opi(r, CG_SHLI, CG_I32, e, 23));
}

static uint32_t select_if(cg_region *r, cg_cmp_kind how, uint32_t a, uint32_t b, uint32_t yes, uint32_t no) {
  return cg_select(r, cg_cmp(r, how, a, b), yes, no);
}

uint32_t cg_math_expf(cg_region *r, uint32_t x) {
  uint32_t ni;
  uint32_t em1 = expm1_reduce_f(r, x, &ni);
  /* n1 = ni / 2, truncating toward zero */
  uint32_t n1 = cg_opi(r, CG_SHRAI, CG_I32, cg_op2(r, CG_ADD, CG_I32, ni, cg_opi(r, CG_SHRLI, CG_I32, ni, 31)), 1);
  uint32_t s1 = pow2_f(r, n1), s2 = pow2_f(r, cg_op2(r, CG_SUB, CG_I32, ni, n1));
  uint32_t res = bin(r, CG_FMUL, bin(r, CG_FMUL, bin(r, CG_FADD, cg_constf(r, CG_F32, 1.0), em1), s1), s2);
  res = select_if(r, CG_CMP_GT, x, cg_constf(r, CG_F32, 100.0), cg_const(r, CG_F32, 0x7f800000u), res);
  res = select_if(r, CG_CMP_LT, x, cg_constf(r, CG_F32, -120.0), cg_constf(r, CG_F32, 0.0), res);
  return select_if(r, CG_CMP_UNORD, x, x, x, res);
}

uint32_t cg_math_tanhf(cg_region *r, uint32_t x) {
  uint32_t a = cg_fabs(r, x), ni;
  uint32_t em1 = expm1_reduce_f(r, bin(r, CG_FMUL, cg_constf(r, CG_F32, 2.0), a), &ni);
  uint32_t sc = pow2_f(r, ni);
  uint32_t e = fma3(r, sc, em1, bin(r, CG_FSUB, sc, cg_constf(r, CG_F32, 1.0)));
  uint32_t q = bin(r, CG_FDIV, e, bin(r, CG_FADD, e, cg_constf(r, CG_F32, 2.0)));
  uint32_t res = cg_copysign(r, q, x);
  res = select_if(r, CG_CMP_GT, a, cg_constf(r, CG_F32, 10.0), cg_copysign(r, cg_constf(r, CG_F32, 1.0), x), res);
  return select_if(r, CG_CMP_UNORD, x, x, x, res);
}

/* av_fm_expm1_small */
static uint32_t expm1_small(cg_region *r, uint32_t rr) {
  uint32_t q = cg_constf(r, CG_F64, 1.0 / 40320);
  static const double c[] = {1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5, 1.0};
  for (unsigned k = 0; k < sizeof c / sizeof *c; k++) q = fma3(r, rr, q, cg_constf(r, CG_F64, c[k]));
  return bin(r, CG_FMUL, q, rr);
}

uint32_t cg_math_logisticf(cg_region *r, uint32_t x) {
  /* av_fm_exp_split(-(double)x) */
  uint32_t xd = cg_fneg(r, cg_cvt(r, CG_CVT_FLOAT, CG_F64, x));
  const double magic = 6755399441055744.0;
  uint32_t t = bin(r, CG_FADD, bin(r, CG_FMUL, xd, cg_constf(r, CG_F64, 1.4426950408889634)),
                   cg_constf(r, CG_F64, magic));
  uint32_t n = bin(r, CG_FSUB, t, cg_constf(r, CG_F64, magic));
  uint32_t bits = cg_op2(r, CG_ADD, CG_I64, cg_bitcast(r, CG_I64, t), cg_const(r, CG_I64, 1023));
  uint32_t s = cg_bitcast(r, CG_F64, cg_opi(r, CG_SHLI, CG_I64, cg_op2(r, CG_AND, CG_I64, bits, cg_const(r, CG_I64, 0x7ff)), 52));
  uint32_t rr = fma3(r, n, cg_constf(r, CG_F64, -2.319046813846299558e-17),
                     fma3(r, n, cg_constf(r, CG_F64, -0.6931471805599453094), xd));
  uint32_t q = expm1_small(r, rr);
  /* (float)(1 / (1 + (s + s * q))) */
  uint32_t den = bin(r, CG_FADD, cg_constf(r, CG_F64, 1.0), bin(r, CG_FADD, s, bin(r, CG_FMUL, s, q)));
  uint32_t res = cg_cvt(r, CG_CVT_FLOAT, CG_F32, bin(r, CG_FDIV, cg_constf(r, CG_F64, 1.0), den));
  res = select_if(r, CG_CMP_GT, x, cg_constf(r, CG_F32, 200.0), cg_constf(r, CG_F32, 1.0), res);
  res = select_if(r, CG_CMP_LT, x, cg_constf(r, CG_F32, -200.0), cg_constf(r, CG_F32, 0.0), res);
  return select_if(r, CG_CMP_UNORD, x, x, x, res);
}

uint32_t cg_math_sincosf_reduced(cg_region *r, uint32_t x, int cos_shift) {
  const double magic = 6755399441055744.0;
  uint32_t xd = cg_cvt(r, CG_CVT_FLOAT, CG_F64, x);
  uint32_t t = bin(r, CG_FADD, bin(r, CG_FMUL, xd, cg_constf(r, CG_F64, 0x1.45f306dc9c883p-1)),
                   cg_constf(r, CG_F64, magic));
  uint32_t k = bin(r, CG_FSUB, t, cg_constf(r, CG_F64, magic));
  uint32_t q = cg_cvt(r, CG_CVT_TRUNC, CG_I32, cg_bitcast(r, CG_I64, t));
  if (cos_shift) q = cg_op2(r, CG_ADD, CG_I32, q, cg_const(r, CG_I32, (uint64_t)cos_shift));
  uint32_t rr = fma3(r, k, cg_constf(r, CG_F64, -0x1.921fb544p+0), xd);
  rr = fma3(r, k, cg_constf(r, CG_F64, -0x1.0b4611a6p-34), rr);
  rr = fma3(r, k, cg_constf(r, CG_F64, -0x1.3198a2e037073p-69), rr);
  uint32_t r2 = bin(r, CG_FMUL, rr, rr);
  uint32_t ps = cg_constf(r, CG_F64, -1.0 / 6227020800);
  static const double sc[] = {1.0 / 39916800, -1.0 / 362880, 1.0 / 5040, -1.0 / 120, 1.0 / 6};
  for (unsigned i = 0; i < sizeof sc / sizeof *sc; i++) ps = fma3(r, r2, ps, cg_constf(r, CG_F64, sc[i]));
  uint32_t nr2 = cg_fneg(r, r2);
  uint32_t sn = bin(r, CG_FMUL, rr, fma3(r, nr2, ps, cg_constf(r, CG_F64, 1.0)));
  uint32_t pc = cg_constf(r, CG_F64, 1.0 / 87178291200);
  static const double cc[] = {-1.0 / 479001600, 1.0 / 3628800, -1.0 / 40320, 1.0 / 720, -1.0 / 24};
  for (unsigned i = 0; i < sizeof cc / sizeof *cc; i++) pc = fma3(r, r2, pc, cg_constf(r, CG_F64, cc[i]));
  uint32_t cs = fma3(r, bin(r, CG_FMUL, nr2, r2), pc, fmaf_c(r, r2, -0.5, 1.0));
  uint32_t odd = cg_cmp(r, CG_CMP_NE, cg_op2(r, CG_AND, CG_I32, q, cg_const(r, CG_I32, 1)), cg_const(r, CG_I32, 0));
  uint32_t res = cg_select(r, odd, cg_cvt(r, CG_CVT_FLOAT, CG_F32, cs), cg_cvt(r, CG_CVT_FLOAT, CG_F32, sn));
  uint32_t flip = cg_opi(r, CG_SHLI, CG_I32, cg_op2(r, CG_AND, CG_I32, q, cg_const(r, CG_I32, 2)), 30);
  return cg_bitcast(r, CG_F32, cg_op2(r, CG_XOR, CG_I32, cg_bitcast(r, CG_I32, res), flip));
}

/* ---- log, log1p, expm1 of f32 in f64 (own derivation, not in fast_math.h) */

/* log(u) for u > 0 finite (f64): u = m * 2^k with m in [sqrt(1/2), sqrt(2)), log(m) =
 * 2 atanh(s) with s = (m - 1) / (m + 1), |s| <= 0.1716, as 2s (1 + z/3 + ... + z^6/13),
 * z = s^2: the next term is below 2^-34 of the result. k comes from the exponent bits as a
 * double (the 2^52 trick), so no 64-bit integer conversion is needed. */
static uint32_t log_pos_f64(cg_region *r, uint32_t u) {
  uint32_t bits = cg_bitcast(r, CG_I64, u);
  uint32_t m = cg_bitcast(r, CG_F64, cg_op2(r, CG_OR, CG_I64, cg_op2(r, CG_AND, CG_I64, bits, cg_const(r, CG_I64, UINT64_C(0x000fffffffffffff))),
                                            cg_const(r, CG_I64, UINT64_C(0x3ff0000000000000))));
  uint32_t e = cg_opi(r, CG_SHRLI, CG_I64, bits, 52); /* u > 0: the sign bit is clear */
  uint32_t ed = bin(r, CG_FSUB, cg_bitcast(r, CG_F64, cg_op2(r, CG_OR, CG_I64, e, cg_const(r, CG_I64, UINT64_C(0x4330000000000000)))),
                    cg_constf(r, CG_F64, 4503599627370496.0 + 1023.0));
  uint32_t big = cg_cmp(r, CG_CMP_GT, m, cg_constf(r, CG_F64, 1.4142135623730951));
  m = cg_select(r, big, bin(r, CG_FMUL, m, cg_constf(r, CG_F64, 0.5)), m);
  ed = cg_select(r, big, bin(r, CG_FADD, ed, cg_constf(r, CG_F64, 1.0)), ed);
  uint32_t one = cg_constf(r, CG_F64, 1.0);
  uint32_t sv = bin(r, CG_FDIV, bin(r, CG_FSUB, m, one), bin(r, CG_FADD, m, one));
  uint32_t z = bin(r, CG_FMUL, sv, sv);
  uint32_t p = cg_constf(r, CG_F64, 1.0 / 13);
  static const double c[] = {1.0 / 11, 1.0 / 9, 1.0 / 7, 1.0 / 5, 1.0 / 3, 1.0};
  for (unsigned i = 0; i < sizeof c / sizeof *c; i++) p = fma3(r, z, p, cg_constf(r, CG_F64, c[i]));
  uint32_t lm = bin(r, CG_FMUL, bin(r, CG_FADD, sv, sv), p);
  return fma3(r, ed, cg_constf(r, CG_F64, 0.6931471805599453094), lm);
}

static uint32_t default_nan(cg_region *r) { return cg_const(r, CG_F32, 0xffc00000u); }

/* the specials of log / log1p: u (f64) = 0 gives -inf, u < 0 NaN, +inf and NaN pass */
static uint32_t log_specials(cg_region *r, uint32_t x, uint32_t u, uint32_t res) {
  res = select_if(r, CG_CMP_EQ, u, cg_constf(r, CG_F64, 0.0), cg_const(r, CG_F32, 0xff800000u), res);
  res = select_if(r, CG_CMP_LT, u, cg_constf(r, CG_F64, 0.0), default_nan(r), res);
  res = select_if(r, CG_CMP_EQ, x, cg_const(r, CG_F32, 0x7f800000u), x, res);
  return select_if(r, CG_CMP_UNORD, x, x, bin(r, CG_FADD, x, x), res);
}

/* u of a special input, replaced by 1 so the main path stays finite */
static uint32_t safe_log_arg(cg_region *r, uint32_t u) {
  uint32_t bad = cg_op1(r, CG_PNOT, CG_PRED, cg_cmp(r, CG_CMP_GT, u, cg_constf(r, CG_F64, 0.0)));
  bad = cg_op2(r, CG_POR, CG_PRED, bad, cg_cmp(r, CG_CMP_EQ, u, cg_const(r, CG_F64, UINT64_C(0x7ff0000000000000))));
  return cg_select(r, bad, cg_constf(r, CG_F64, 1.0), u);
}

uint32_t cg_math_logf(cg_region *r, uint32_t x) {
  uint32_t u = cg_cvt(r, CG_CVT_FLOAT, CG_F64, x);
  uint32_t res = cg_cvt(r, CG_CVT_FLOAT, CG_F32, log_pos_f64(r, safe_log_arg(r, u)));
  return log_specials(r, x, u, res);
}

/* log1p(x) = log(u) with u = 1 + x in f64, which is exact for an f32 x of |x| >= 2^-29 (its
 * last bit is then at least 2^-52). Below that, log1p(x) = x (1 - x/2 + ...) rounds to x
 * itself in f32 (x/2 < 2^-30 is far below half an ulp, 2^-25 relative), which is also the
 * answer for +-0. */
uint32_t cg_math_log1pf(cg_region *r, uint32_t x) {
  uint32_t xd = cg_cvt(r, CG_CVT_FLOAT, CG_F64, x), one = cg_constf(r, CG_F64, 1.0);
  uint32_t u = bin(r, CG_FADD, one, xd);
  uint32_t res = cg_cvt(r, CG_CVT_FLOAT, CG_F32, log_pos_f64(r, safe_log_arg(r, u)));
  res = log_specials(r, x, u, res);
  return select_if(r, CG_CMP_LT, cg_fabs(r, x), cg_constf(r, CG_F32, 0x1p-29), x, res);
}

/* expm1(x) = 2^n * (1 + q) - 1 = 2^n * q + (2^n - 1), in f64 with av_fm_exp_split's reduction
 * (valid for |x| <= 300: x is clamped to [-120, 100], beyond which the f32 result is -1 or
 * inf either way) */
uint32_t cg_math_expm1f(cg_region *r, uint32_t x) {
  uint32_t c = select_if(r, CG_CMP_GT, x, cg_constf(r, CG_F32, 100.0), cg_constf(r, CG_F32, 100.0), x);
  c = select_if(r, CG_CMP_LT, c, cg_constf(r, CG_F32, -120.0), cg_constf(r, CG_F32, -120.0), c);
  uint32_t xd = cg_cvt(r, CG_CVT_FLOAT, CG_F64, c);
  const double magic = 6755399441055744.0;
  uint32_t t = bin(r, CG_FADD, bin(r, CG_FMUL, xd, cg_constf(r, CG_F64, 1.4426950408889634)), cg_constf(r, CG_F64, magic));
  uint32_t n = bin(r, CG_FSUB, t, cg_constf(r, CG_F64, magic));
  uint32_t bits = cg_op2(r, CG_ADD, CG_I64, cg_bitcast(r, CG_I64, t), cg_const(r, CG_I64, 1023));
  uint32_t sc = cg_bitcast(r, CG_F64, cg_opi(r, CG_SHLI, CG_I64, cg_op2(r, CG_AND, CG_I64, bits, cg_const(r, CG_I64, 0x7ff)), 52));
  uint32_t rr = fma3(r, n, cg_constf(r, CG_F64, -2.319046813846299558e-17), fma3(r, n, cg_constf(r, CG_F64, -0.6931471805599453094), xd));
  uint32_t q = expm1_small(r, rr);
  uint32_t em1 = fma3(r, sc, q, bin(r, CG_FSUB, sc, cg_constf(r, CG_F64, 1.0)));
  uint32_t res = cg_cvt(r, CG_CVT_FLOAT, CG_F32, em1);
  res = select_if(r, CG_CMP_EQ, x, cg_constf(r, CG_F32, 0.0), x, res); /* +-0 */
  return select_if(r, CG_CMP_UNORD, x, x, bin(r, CG_FADD, x, x), res);
}

/* ---- erf_inv of f32 in f64: the interpreter's first guess (elementwise_float.c erfinv_d),
 * then one Newton step on erf (the guess is good to ~1e-7, so one step leaves ~1e-13), with
 * erf from its Taylor series below 0.5 and the tail through erfc (Taylor below 2, the
 * continued fraction's 30th convergent above: relative error <= 5e-12 at 2), where the
 * residual (1 - y) - erfc(x) keeps its relative accuracy up to y = 1 - 2^-24. */

/* exp(v) for v in [-40, 0], relative error ~2e-16 (degree-12 Taylor on |r| <= 0.35) */
static uint32_t exp_f64(cg_region *r, uint32_t v) {
  const double magic = 6755399441055744.0;
  uint32_t t = bin(r, CG_FADD, bin(r, CG_FMUL, v, cg_constf(r, CG_F64, 1.4426950408889634)), cg_constf(r, CG_F64, magic));
  uint32_t n = bin(r, CG_FSUB, t, cg_constf(r, CG_F64, magic));
  uint32_t bits = cg_op2(r, CG_ADD, CG_I64, cg_bitcast(r, CG_I64, t), cg_const(r, CG_I64, 1023));
  uint32_t s = cg_bitcast(r, CG_F64, cg_opi(r, CG_SHLI, CG_I64, cg_op2(r, CG_AND, CG_I64, bits, cg_const(r, CG_I64, 0x7ff)), 52));
  uint32_t rr = fma3(r, n, cg_constf(r, CG_F64, -2.319046813846299558e-17), fma3(r, n, cg_constf(r, CG_F64, -0.6931471805599453094), v));
  double fact = 1;
  for (int k = 2; k <= 13; k++) fact *= k;
  uint32_t q = cg_constf(r, CG_F64, 1.0 / fact); /* 1/13! */
  for (int k = 12; k >= 1; k--) {
    fact /= (k + 1);
    q = fma3(r, rr, q, cg_constf(r, CG_F64, 1.0 / fact)); /* ... + 1/k! */
  }
  /* q = expm1(rr) / rr; e^v = s * (1 + rr * q) */
  return fma3(r, s, bin(r, CG_FMUL, rr, q), s);
}

/* erf(x) / x = 2/sqrt(pi) * sum (-1)^n x^2n / (n! (2n+1)), n <= 30 (enough to |x| = 2) */
static uint32_t erf_taylor(cg_region *r, uint32_t x) {
  uint32_t z = bin(r, CG_FMUL, x, x);
  double c[31], f = 1;
  for (int n = 0; n <= 30; n++) {
    if (n) f *= n;
    c[n] = (n & 1 ? -1.0 : 1.0) / (f * (2 * n + 1));
  }
  uint32_t p = cg_constf(r, CG_F64, c[30]);
  for (int n = 29; n >= 0; n--) p = fma3(r, p, z, cg_constf(r, CG_F64, c[n]));
  return bin(r, CG_FMUL, bin(r, CG_FMUL, x, cg_constf(r, CG_F64, 1.1283791670955126)), p);
}

/* erfc(x) for x >= 2: exp(-x^2)/sqrt(pi) / K, K = x + (1/2)/(x + 1/(x + (3/2)/(x + ...))) to 30
 * terms, as the ratio of its forward recurrences (one division) */
static uint32_t erfc_cf(cg_region *r, uint32_t x) {
  uint32_t a0 = cg_constf(r, CG_F64, 1.0), a1 = x, b0 = cg_constf(r, CG_F64, 0.0), b1 = cg_constf(r, CG_F64, 1.0);
  for (int n = 1; n <= 30; n++) {
    uint32_t an = cg_constf(r, CG_F64, n / 2.0);
    uint32_t a2 = fma3(r, x, a1, bin(r, CG_FMUL, an, a0)), b2 = fma3(r, x, b1, bin(r, CG_FMUL, an, b0));
    a0 = a1;
    a1 = a2;
    b0 = b1;
    b1 = b2;
  }
  uint32_t e = exp_f64(r, cg_fneg(r, bin(r, CG_FMUL, x, x)));
  return bin(r, CG_FMUL, bin(r, CG_FMUL, e, cg_constf(r, CG_F64, 0.5641895835477563)), bin(r, CG_FDIV, b1, a1));
}

static uint32_t horner64(cg_region *r, uint32_t w, const double *c, int n) {
  uint32_t p = cg_constf(r, CG_F64, c[0]);
  for (int i = 1; i < n; i++) p = fma3(r, p, w, cg_constf(r, CG_F64, c[i]));
  return p;
}

uint32_t cg_math_erfinvf(cg_region *r, uint32_t y) {
  uint32_t yd = cg_cvt(r, CG_CVT_FLOAT, CG_F64, y), a = cg_fabs(r, yd), one = cg_constf(r, CG_F64, 1.0);
  /* the first guess, on |y| (erfinv is odd): the interpreter's two polynomials */
  uint32_t prod = bin(r, CG_FMUL, bin(r, CG_FSUB, one, a), bin(r, CG_FADD, one, a));
  uint32_t w = cg_fneg(r, log_pos_f64(r, safe_log_arg(r, prod)));
  static const double lo[] = {2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                              -0.00125372503, -0.00417768164, 0.246640727, 1.50140941};
  static const double hi[] = {-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                              -0.0076224613, 0.00943887047, 1.00167406, 2.83297682};
  uint32_t xlo = horner64(r, bin(r, CG_FSUB, w, cg_constf(r, CG_F64, 2.5)), lo, 9);
  uint32_t xhi = horner64(r, bin(r, CG_FSUB, cg_op1(r, CG_FSQRT, CG_F64, w), cg_constf(r, CG_F64, 3.0)), hi, 9);
  uint32_t x0 = bin(r, CG_FMUL, select_if(r, CG_CMP_LT, w, cg_constf(r, CG_F64, 5.0), xlo, xhi), a);
  /* one Newton step: the residual erf(x0) - a, through erfc in the tail */
  uint32_t small = cg_cmp(r, CG_CMP_LE, a, cg_constf(r, CG_F64, 0.5));
  uint32_t erf0 = erf_taylor(r, x0);
  uint32_t erfc0 = select_if(r, CG_CMP_LT, x0, cg_constf(r, CG_F64, 2.0), bin(r, CG_FSUB, one, erf0), erfc_cf(r, x0));
  uint32_t res = cg_select(r, small, bin(r, CG_FSUB, erf0, a), bin(r, CG_FSUB, bin(r, CG_FSUB, one, a), erfc0));
  uint32_t deriv = bin(r, CG_FMUL, cg_constf(r, CG_F64, 1.1283791670955126), exp_f64(r, cg_fneg(r, bin(r, CG_FMUL, x0, x0))));
  uint32_t x1 = bin(r, CG_FSUB, x0, bin(r, CG_FDIV, res, deriv));
  uint32_t out = cg_copysign(r, cg_cvt(r, CG_CVT_FLOAT, CG_F32, x1), y);
  /* |y| = 1: +-inf; |y| > 1 or NaN: NaN (as erfinv_d: a quiet NaN, positive) */
  out = select_if(r, CG_CMP_EQ, a, one, cg_copysign(r, cg_const(r, CG_F32, 0x7f800000u), y), out);
  out = select_if(r, CG_CMP_GT, a, one, cg_const(r, CG_F32, 0x7fc00000u), out);
  return select_if(r, CG_CMP_UNORD, y, y, cg_const(r, CG_F32, 0x7fc00000u), out);
}
