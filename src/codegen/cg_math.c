/* Transcendental functions as IR: step for step the operations of runtime/kernels/fast_math.h
 * (the same constants, the same fused multiply-adds, the same order), so generated code and
 * the interpreter agree to the bit. Comments name the fast_math.h function each follows. */
#include "codegen/cg_math.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "runtime/kernels/fast_math.h"

uint32_t cg_fconst(cg_region *r, cg_type t, double v) { return cg_constf(r, t, v); }

static uint32_t sign_mask(cg_region *r, cg_type t) {
  return cg_const(r, t, t == CG_F64 ? UINT64_C(0x8000000000000000) : 0x80000000u);
}

/* the largest magnitude in x's range */
static double max_abs(const cg_region *r, uint32_t x) { return fmax(fabs(r->v[x].lo), fabs(r->v[x].hi)); }

uint32_t cg_fneg(cg_region *r, uint32_t x) {
  cg_type t = cg_type_of(r, x);
  uint32_t y = cg_op2(r, CG_XOR, t, x, sign_mask(r, t));
  return r->failed ? y : cg_range_fact(r, y, -r->v[x].hi, -r->v[x].lo);
}

uint32_t cg_fabs(cg_region *r, uint32_t x) {
  cg_type t = cg_type_of(r, x);
  uint32_t y = cg_op2(r, CG_ANDN, t, sign_mask(r, t), x);
  if (r->failed) return y;
  double lo = r->v[x].lo, hi = r->v[x].hi;
  return cg_range_fact(r, y, lo >= 0 ? lo : hi <= 0 ? -hi : 0.0, max_abs(r, x));
}

uint32_t cg_copysign(cg_region *r, uint32_t mag, uint32_t sgn) {
  cg_type t = cg_type_of(r, mag);
  uint32_t m = sign_mask(r, t);
  uint32_t y = cg_op2(r, CG_OR, t, cg_op2(r, CG_ANDN, t, m, mag), cg_op2(r, CG_AND, t, m, sgn));
  return r->failed ? y : cg_range_fact(r, y, -max_abs(r, mag), max_abs(r, mag));
}

/* The range of y = f(x) for f increasing, from x's: f at its ends, moved out by far more than
 * the few ulp by which the expansions below differ from f (and past zero at underflow). */
static uint32_t increasing(cg_region *r, uint32_t y, uint32_t x, double (*f)(double)) {
  if (r->failed) return y;
  double lo = f(r->v[x].lo), hi = f(r->v[x].hi);
  lo = isnan(lo) ? -INFINITY : lo - (fabs(lo) * 0x1p-16 + 0x1p-126);
  hi = isnan(hi) ? INFINITY : hi + (fabs(hi) * 0x1p-16 + 0x1p-126);
  return cg_range_fact(r, y, lo, hi);
}
static double logistic(double x) { return 1 / (1 + exp(-x)); }

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
  return increasing(r, select_if(r, CG_CMP_UNORD, x, x, x, res), x, exp);
}

uint32_t cg_math_tanhf(cg_region *r, uint32_t x) {
  uint32_t a = cg_fabs(r, x), ni;
  uint32_t em1 = expm1_reduce_f(r, bin(r, CG_FMUL, cg_constf(r, CG_F32, 2.0), a), &ni);
  uint32_t sc = pow2_f(r, ni);
  uint32_t e = fma3(r, sc, em1, bin(r, CG_FSUB, sc, cg_constf(r, CG_F32, 1.0)));
  uint32_t q = bin(r, CG_FDIV, e, bin(r, CG_FADD, e, cg_constf(r, CG_F32, 2.0)));
  uint32_t res = cg_copysign(r, q, x);
  res = select_if(r, CG_CMP_GT, a, cg_constf(r, CG_F32, 10.0), cg_copysign(r, cg_constf(r, CG_F32, 1.0), x), res);
  return increasing(r, select_if(r, CG_CMP_UNORD, x, x, x, res), x, tanh);
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
  return increasing(r, select_if(r, CG_CMP_UNORD, x, x, x, res), x, logistic);
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

static uint32_t horner64(cg_region *r, uint32_t w, const double *c, int n) {
  uint32_t p = cg_constf(r, CG_F64, c[0]);
  for (int i = 1; i < n; i++) p = fma3(r, p, w, cg_constf(r, CG_F64, c[i]));
  return p;
}

/* log(u) for u > 0 finite (f64): u = m * 2^k with m in [sqrt(1/2), sqrt(2)), and log(m) =
 * f * P(f) with f = m - 1 (exact), P a degree-12 least-squares fit of log1p(f) / f on that
 * range (relative error 1.9e-11, 1/3000 of an f32 ulp; tools/fit_log_erfinv.py makes it). It
 * takes no division (the atanh form before it took one; the same speed on a Xeon, Emerald
 * Rapids, and the divider is the slowest unit on many cores). The split takes no compare or
 * select: t = bits(u) - bits(sqrt(1/2)) + 1023 * 2^52 carries into the exponent field exactly
 * when m >= sqrt(1/2), so t's exponent field is k + 1023 and its mantissa field plus
 * bits(sqrt(1/2)) is m (for every u >= 2^-1022, which covers f32's denormals). k becomes a
 * double by the 2^52 trick, so no 64-bit integer conversion is needed. */
static uint32_t log_pos_f64(cg_region *r, uint32_t u) {
  static const double p[] = {0.05226071514591663,  -0.09797081026590859, 0.10048371912590764, -0.09947773531690522,
                             0.11006093720240598,  -0.12495276157760463, 0.14290799612311333, -0.1666703095884444,
                             0.19999888635203167,  -0.24999992620506478, 0.3333333424320005,  -0.5000000003648191,
                             0.9999999999875707};
  const uint64_t sqrt_half = UINT64_C(0x3fe6a09e667f3bcd), one = UINT64_C(0x3ff0000000000000);
  uint32_t t = cg_op2(r, CG_ADD, CG_I64, cg_bitcast(r, CG_I64, u), cg_const(r, CG_I64, one - sqrt_half));
  uint32_t m = cg_bitcast(r, CG_F64, cg_op2(r, CG_ADD, CG_I64, cg_op2(r, CG_AND, CG_I64, t, cg_const(r, CG_I64, UINT64_C(0x000fffffffffffff))),
                                            cg_const(r, CG_I64, sqrt_half)));
  uint32_t e = cg_opi(r, CG_SHRLI, CG_I64, t, 52); /* k + 1023 */
  uint32_t ed = bin(r, CG_FSUB, cg_bitcast(r, CG_F64, cg_op2(r, CG_OR, CG_I64, e, cg_const(r, CG_I64, UINT64_C(0x4330000000000000)))),
                    cg_constf(r, CG_F64, 4503599627370496.0 + 1023.0));
  uint32_t f = bin(r, CG_FSUB, m, cg_constf(r, CG_F64, 1.0));
  uint32_t lm = bin(r, CG_FMUL, f, horner64(r, f, p, (int)(sizeof p / sizeof *p)));
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

/* log and log1p run log_pos_f64 on every lane, special ones included (0, negative, inf, NaN:
 * the bit arithmetic and the polynomial make a finite or NaN value without trapping), and
 * log_specials then replaces those lanes: no safe argument is needed first. */
uint32_t cg_math_logf(cg_region *r, uint32_t x) {
  uint32_t u = cg_cvt(r, CG_CVT_FLOAT, CG_F64, x);
  uint32_t res = cg_cvt(r, CG_CVT_FLOAT, CG_F32, log_pos_f64(r, u));
  return increasing(r, log_specials(r, x, u, res), x, log);
}

/* log1p(x) = log(u) with u = 1 + x in f64, which is exact for an f32 x of |x| >= 2^-29 (its
 * last bit is then at least 2^-52). Below that, log1p(x) = x (1 - x/2 + ...) rounds to x
 * itself in f32 (x/2 < 2^-30 is far below half an ulp, 2^-25 relative), which is also the
 * answer for +-0. */
uint32_t cg_math_log1pf(cg_region *r, uint32_t x) {
  uint32_t xd = cg_cvt(r, CG_CVT_FLOAT, CG_F64, x), one = cg_constf(r, CG_F64, 1.0);
  uint32_t u = bin(r, CG_FADD, one, xd);
  uint32_t res = cg_cvt(r, CG_CVT_FLOAT, CG_F32, log_pos_f64(r, u));
  res = log_specials(r, x, u, res);
  return increasing(r, select_if(r, CG_CMP_LT, cg_fabs(r, x), cg_constf(r, CG_F32, 0x1p-29), x, res), x, log1p);
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
  return increasing(r, select_if(r, CG_CMP_UNORD, x, x, bin(r, CG_FADD, x, x), res), x, expm1);
}

/* ---- erf_inv of f32 in f64: erfinv(y) = y * P(w), w = -log((1 - y)(1 + y)), with P a
 * degree-12 least-squares fit of erfinv(y) / y in w - 2.5 for w < 5 (|y| < 0.9966) and in
 * sqrt(w) - 3 up to w = 17 (f32's largest y below 1 gives w = 15.9): relative errors 3e-11 and
 * 1.5e-10 against mpmath, 1/400 of an f32 ulp, so the f32 result is the correctly rounded one
 * but in rare near-ties (the interpreter's three Newton steps on libm's erf stay the oracle;
 * the generated value is held within 0.51 ulp of it). The same variables as Giles's
 * single-precision approximation, with own coefficients of higher degree (12 against 8),
 * fitted by tools/fit_log_erfinv.py. */
uint32_t cg_math_erfinvf(cg_region *r, uint32_t y) {
  static const double lo[] = {-2.0256056843301772e-11, 1.2297995013023453e-10, 8.149109853675728e-10, -1.0853548291471911e-08,
                              1.3816777390517055e-08,  4.786394616559076e-07,  -3.417522059781e-06,  -4.995866588630179e-06,
                              0.0002182512468969775,   -0.0012527081004848118, -0.004177318131340395, 0.2466402767906619,
                              1.5014093511388102};
  static const double hi[] = {9.50569712434322e-06,   -2.5257162924896548e-05, -2.8395365024314616e-05, 0.00020178826680798147,
                              -0.0002944911704570174, -0.00014534128888349902, 0.0014872839875823944,   -0.003559888660340687,
                              0.0056846484374778175,  -0.007643679602777895,   0.009445553470738227,    1.0016752728692404,
                              2.8329767984080356};
  uint32_t yd = cg_cvt(r, CG_CVT_FLOAT, CG_F64, y), a = cg_fabs(r, yd), one = cg_constf(r, CG_F64, 1.0);
  uint32_t prod = bin(r, CG_FMUL, bin(r, CG_FSUB, one, a), bin(r, CG_FADD, one, a));
  uint32_t w = cg_fneg(r, log_pos_f64(r, safe_log_arg(r, prod)));
  uint32_t plo = horner64(r, bin(r, CG_FSUB, w, cg_constf(r, CG_F64, 2.5)), lo, (int)(sizeof lo / sizeof *lo));
  uint32_t phi = horner64(r, bin(r, CG_FSUB, cg_op1(r, CG_FSQRT, CG_F64, w), cg_constf(r, CG_F64, 3.0)), hi,
                          (int)(sizeof hi / sizeof *hi));
  uint32_t x = bin(r, CG_FMUL, select_if(r, CG_CMP_LT, w, cg_constf(r, CG_F64, 5.0), plo, phi), a);
  uint32_t out = cg_copysign(r, cg_cvt(r, CG_CVT_FLOAT, CG_F32, x), y);
  /* |y| = 1: +-inf; |y| > 1 or NaN: NaN (as erfinv_d: a quiet NaN, positive) */
  out = select_if(r, CG_CMP_EQ, a, one, cg_copysign(r, cg_const(r, CG_F32, 0x7f800000u), y), out);
  out = select_if(r, CG_CMP_GT, a, one, cg_const(r, CG_F32, 0x7fc00000u), out);
  return select_if(r, CG_CMP_UNORD, y, y, cg_const(r, CG_F32, 0x7fc00000u), out);
}
