/* Vectorisable f32 exp / tanh / logistic / sin / cos. glibc's expf/tanhf are scalar calls
 * (tanhf goes through expm1f) and dominate elementwise chains; these are plain arithmetic the
 * compiler turns into SIMD loops. exp: x = n*ln2 + r with |r| <= ln2/2, a polynomial for
 * expm1(r), and 2^n built from its bits; logistic does the same in double (degree-8 Taylor,
 * relative truncation error < 3e-10, 1/200 of an f32 ulp). Results are within 1 ulp (tanh 2),
 * almost always correctly rounded. Reductions and polynomials use explicit fused
 * multiply-adds (fmaf / fma: one rounding, so the same bits on every machine); the loops
 * calling them are built with AV_CLONES_FMA so that the FMA instructions exist. */
#ifndef ANVIL_RUNTIME_KERNELS_FAST_MATH_H
#define ANVIL_RUNTIME_KERNELS_FAST_MATH_H

#include <math.h>
#include <stdint.h>

/* Always inlined: only inside a kernel loop's SIMD clone do fmaf / fma become instructions and
 * the loop vectorise; an out-of-line copy (gcc -O2 keeps sincos out of line) is baseline
 * code calling libm's fma, 16x slower. */
#define AV_FM_INLINE static inline __attribute__((always_inline))

/* expm1(r) for |r| <= 0.35 (Horner; the terms are 1/k!) */
AV_FM_INLINE double av_fm_expm1_small(double r) {
  double q = 1.0 / 40320;
  q = fma(q, r, 1.0 / 5040);
  q = fma(q, r, 1.0 / 720);
  q = fma(q, r, 1.0 / 120);
  q = fma(q, r, 1.0 / 24);
  q = fma(q, r, 1.0 / 6);
  q = fma(q, r, 0.5);
  q = fma(q, r, 1.0);
  return q * r;
}

/* Splits x (|x| <= 300 for a meaningful result) into 2^n * (1 + q); returns q, sets *scale=2^n. */
AV_FM_INLINE double av_fm_exp_split(double x, double *scale) {
  const double magic = 6755399441055744.0; /* 1.5 * 2^52: adding it rounds to an integer */
  double t = x * 1.4426950408889634 + magic;
  double n = t - magic;
  union {
    double d;
    uint64_t u;
  } bits = {t}, s;
  /* the low bits of t hold n (two's complement); unsigned arithmetic, no overflow */
  s.u = ((bits.u + 1023u) & 0x7ffu) << 52;
  *scale = s.d;
  double r = fma(n, -2.319046813846299558e-17, fma(n, -0.6931471805599453094, x));
  return av_fm_expm1_small(r);
}

/* c ? a : b on bits: gcc keeps float ternaries as branches (then no SIMD) but vectorises masks */
AV_FM_INLINE float av_fm_select(int c, float a, float b) {
  union {
    float f;
    uint32_t u;
  } ua = {a}, ub = {b}, r;
  uint32_t m = 0u - (uint32_t)(c != 0);
  r.u = (ua.u & m) | (ub.u & ~m);
  return r.f;
}

/* Arguments outside the ranges below are computed as garbage (no traps, no UB: all the
 * arithmetic is floating point or unsigned) and replaced by the limit values at the end. */
/* exp in f32 arithmetic (4 lanes per SSE register, twice the double path's width): Cody-Waite
 * reduction with a 2-term ln2, a degree-5 fit of (e^r - 1 - r) / r^2 on |r| <= ln2/2 (relative
 * error 7e-10 with these f32 coefficients), and 2^n applied as two factors so every
 * intermediate stays normal down to the subnormal results. */
/* x = n*ln2 + r (|r| <= ln2/2); returns expm1(r) and sets *ni = n (garbage when x is out
 * of range). */
AV_FM_INLINE float av_fm_expm1_reduce_f(float x, int32_t *ni) {
  const float magic = 12582912.0f; /* 1.5 * 2^23 */
  float t = x * 1.44269504f + magic;
  float n = t - magic;
  union {
    float f;
    uint32_t u;
  } tb = {t};
  *ni = (int32_t)(tb.u - 0x4B400000u); /* n as an integer */
  float r = fmaf(n, -0.693145751953125f, x); /* exact: ln2's high part has 12 significant bits */
  r = fmaf(n, -1.42860677e-6f, r);
  float q = 0x1.a1533ap-13f;
  q = fmaf(q, r, 0x1.6d44d6p-10f);
  q = fmaf(q, r, 0x1.1110c6p-7f);
  q = fmaf(q, r, 0x1.5554e8p-5f);
  q = fmaf(q, r, 0x1.555556p-3f);
  q = fmaf(q, r, 0.5f);
  return fmaf(r * r, q, r);
}

/* 2^k as an f32 for -126 <= k <= 127 */
AV_FM_INLINE float av_fm_pow2_f(int32_t k) {
  union {
    uint32_t u;
    float f;
  } s = {(uint32_t)(k + 127) << 23};
  return s.f;
}

/* For |x| <= 120: expm1(r), with 2^n returned as s1*s2 (two factors keep every intermediate
 * normal down to the subnormal results). */
AV_FM_INLINE float av_fm_expm1_split_f(float x, float *s1f, float *s2f) {
  int32_t ni;
  float em1 = av_fm_expm1_reduce_f(x, &ni);
  int32_t n1 = ni / 2;
  *s1f = av_fm_pow2_f(n1);
  *s2f = av_fm_pow2_f(ni - n1);
  return em1;
}

AV_FM_INLINE float av_fm_expf(float x) {
  float s1, s2, em1 = av_fm_expm1_split_f(x, &s1, &s2);
  float res = ((1.0f + em1) * s1) * s2;
  res = av_fm_select(isgreater(x, 100.0f), INFINITY, res); /* overflows from 88.73 on */
  res = av_fm_select(isless(x, -120.0f), 0.0f, res);       /* underflows below -103.98 */
  return av_fm_select(isunordered(x, x), x, res);
}

/* exp for |x| <= AV_FM_EXP_PLAIN (no NaN): no fix-ups, and 2^n as one factor, which is
 * normal there, as is the result (e^-87 > FLT_MIN), so (1 + em1) * 2^n is exactly the
 * general path's ((1 + em1) * 2^(n/2)) * 2^(n - n/2): the same bits. */
#define AV_FM_EXP_PLAIN 87.0f
AV_FM_INLINE float av_fm_expf_plain(float x) {
  int32_t ni;
  float em1 = av_fm_expm1_reduce_f(x, &ni);
  return (1.0f + em1) * av_fm_pow2_f(ni);
}

AV_FM_INLINE float av_fm_tanhf(float x) {
  /* tanh(a) = expm1(2a) / (expm1(2a) + 2), sign restored; |x| > 10 rounds to +-1. In f32:
   * 2a <= 20 keeps 2^n below 2^29 (one factor is enough: the same bits as two), and
   * expm1 = s*(em1 + 1) - 1 = s*em1 + (s - 1). */
  float a = fabsf(x);
  int32_t ni;
  float em1 = av_fm_expm1_reduce_f(2.0f * a, &ni);
  float sc = av_fm_pow2_f(ni);
  float e = fmaf(sc, em1, sc - 1.0f);
  float r = copysignf(e / (e + 2.0f), x);
  r = av_fm_select(isgreater(a, 10.0f), copysignf(1.0f, x), r);
  return av_fm_select(isunordered(x, x), x, r);
}

AV_FM_INLINE float av_fm_logisticf(float x) {
  double s, q = av_fm_exp_split(-(double)x, &s);
  float r = (float)(1 / (1 + (s + s * q)));
  r = av_fm_select(isgreater(x, 200.0f), 1.0f, r);
  r = av_fm_select(isless(x, -200.0f), 0.0f, r);
  return av_fm_select(isunordered(x, x), x, r);
}

/* sin / cos of f32 in double: x = k*pi/2 + r with |r| <= pi/4 (Cody-Waite with pi/2 split
 * into 33 + 33 + 53 bits, so k*P1 and k*P2 are exact for |k| < 2^20), Taylor polynomials to
 * r^13 / r^14 (truncation below 3e-14 relative), quadrant k mod 4 picking +-sin r or +-cos r.
 * Valid for |x| <= AV_FM_TRIG_MAX only (beyond it, and for inf/nan, the result is garbage
 * that the caller replaces with libm's). */
#define AV_FM_TRIG_MAX 262144.0f
AV_FM_INLINE float av_fm_sincos_reduced(float x, uint32_t cos_shift) {
  const double magic = 6755399441055744.0; /* 1.5 * 2^52: adding it rounds to an integer */
  double xd = x;
  double t = xd * 0x1.45f306dc9c883p-1 + magic; /* 2/pi */
  double k = t - magic;
  union {
    double d;
    uint64_t u;
  } tb = {t};
  uint32_t q = (uint32_t)tb.u + cos_shift; /* cos(x) = sin(x + pi/2): one quadrant on */
  double r = fma(k, -0x1.3198a2e037073p-69, fma(k, -0x1.0b4611a6p-34, fma(k, -0x1.921fb544p+0, xd)));
  double r2 = r * r;
  double ps = -1.0 / 6227020800;
  ps = fma(ps, r2, 1.0 / 39916800);
  ps = fma(ps, r2, -1.0 / 362880);
  ps = fma(ps, r2, 1.0 / 5040);
  ps = fma(ps, r2, -1.0 / 120);
  ps = fma(ps, r2, 1.0 / 6);
  double sn = r * fma(-r2, ps, 1.0); /* keeps sin(-0) = -0 */
  double pc = 1.0 / 87178291200;
  pc = fma(pc, r2, -1.0 / 479001600);
  pc = fma(pc, r2, 1.0 / 3628800);
  pc = fma(pc, r2, -1.0 / 40320);
  pc = fma(pc, r2, 1.0 / 720);
  pc = fma(pc, r2, -1.0 / 24);
  double cs = fma(-r2 * r2, pc, fma(-0.5, r2, 1.0));
  float res = av_fm_select((int)(q & 1u), (float)cs, (float)sn);
  union {
    float f;
    uint32_t u;
  } rb = {res};
  rb.u ^= (q & 2u) << 30; /* quadrants 2 and 3 negate */
  return rb.f;
}
AV_FM_INLINE float av_fm_sinf_reduced(float x) { return av_fm_sincos_reduced(x, 0); }
AV_FM_INLINE float av_fm_cosf_reduced(float x) { return av_fm_sincos_reduced(x, 1); }

#endif
