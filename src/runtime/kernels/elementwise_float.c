/* Elementwise loops on f32 and f64 (narrower floats run through f32, see elementwise.c). */
#include <math.h>
#include <string.h>

#include "runtime/kernels/elementwise.h"
#include "runtime/kernels/fast_math.h"
#include "runtime/kernels/simd_clones.h"

/* ------------------------------------------------------- scalar helpers */

/* maximum/minimum: NaN if either is (a's quieted payload when a is NaN, else b's), the larger/smaller
 * value, and for equal values the bits of a AND b (max: +0 unless both are -0) or a OR b
 * (min: -0 if either is); equal non-zero values have equal bits. Written as selects on bits
 * so the loops vectorise. */
#define FLOAT_HELPERS(T, S, U)                                                             \
  static inline T fsign##S(T x) { return isnan(x) ? x : x > 0 ? (T)1 : x < 0 ? (T)-1 : x; } \
  static inline T fbits_sel##S(int c, T a, T b) {                                          \
    union { T f; U u; } ua = {a}, ub = {b}, r;                                             \
    U m = (U)0 - (U)(c != 0);                                                              \
    r.u = (ua.u & m) | (ub.u & ~m);                                                        \
    return r.f;                                                                            \
  }                                                                                        \
  static inline T fbits_and##S(T a, T b, int or_) {                                        \
    union { T f; U u; } ua = {a}, ub = {b}, r;                                             \
    r.u = or_ ? (ua.u | ub.u) : (ua.u & ub.u);                                             \
    return r.f;                                                                            \
  }                                                                                        \
  static inline T fmax##S##_(T a, T b) {                                                   \
    T hi = fbits_sel##S(a > b, a, b);                                                      \
    T r = fbits_sel##S(a == b, fbits_and##S(a, b, 0), hi);                                 \
    return fbits_sel##S(isunordered(a, b), fbits_sel##S(a != a, a + a, b + b), r);                                      \
  }                                                                                        \
  static inline T fmin##S##_(T a, T b) {                                                   \
    T lo = fbits_sel##S(a < b, a, b);                                                      \
    T r = fbits_sel##S(a == b, fbits_and##S(a, b, 1), lo);                                 \
    return fbits_sel##S(isunordered(a, b), fbits_sel##S(a != a, a + a, b + b), r);                                      \
  }                                                                                        \
  static inline T frsqrt##S(T x) { return (T)1 / sqrt##S(x); }                             \
  static inline T flgamma##S(T x) {                                                        \
    int sgn;                                                                               \
    return lgamma##S##_r(x, &sgn);                                                         \
  }
FLOAT_HELPERS(float, f, uint32_t)
FLOAT_HELPERS(double, , uint64_t)
static inline double flogistic(double x) { return 1 / (1 + exp(-x)); }

/* cosh / sinh the way XLA expands chlo.cosh / chlo.sinh for f32 (exp of x + log(1/2), so the
 * results agree with JAX's to the ULP, and large |x| does not overflow early). */
static inline float cosh_f(float x) {
  const float log_half = -0.693147182f;
  return expf(x + log_half) + expf(-x + log_half);
}
static inline float sinh_f(float x) {
  const float log_half = -0.693147182f;
  if (fabsf(x) < 1.0f) {
    float e = expm1f(x);
    return 0.5f * e + 0.5f * e / (e + 1.0f);
  }
  return expf(x + log_half) - expf(-x + log_half);
}

/* digamma by recurrence up to x >= 6, then the asymptotic series; reflection for x < 0.5. */
static double digamma_d(double x) {
  if (isnan(x) || x == -INFINITY) return NAN;
  if (x == INFINITY) return INFINITY;
  if (x <= 0 && floor(x) == x) return NAN;
  double acc = 0;
  if (x < 0.5) {
    acc = -M_PI / tan(M_PI * x);
    x = 1 - x;
  }
  while (x < 6) {
    acc -= 1 / x;
    x += 1;
  }
  double inv = 1 / x, inv2 = inv * inv;
  double series = inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (1.0 / 240 -
                                                                                   inv2 / 132))));
  return acc + log(x) - 0.5 * inv - series;
}
static float digamma_f(float x) { return (float)digamma_d(x); }

/* Inverse error function: a rational first guess refined by Newton steps on erf. */
static double erfinv_d(double y) {
  if (isnan(y) || y < -1 || y > 1) return NAN;
  if (y == 1) return INFINITY;
  if (y == -1) return -INFINITY;
  double w = -log((1 - y) * (1 + y)), x;
  if (w < 5) {
    w -= 2.5;
    x = 2.81022636e-08;
    x = 3.43273939e-07 + x * w;
    x = -3.5233877e-06 + x * w;
    x = -4.39150654e-06 + x * w;
    x = 0.00021858087 + x * w;
    x = -0.00125372503 + x * w;
    x = -0.00417768164 + x * w;
    x = 0.246640727 + x * w;
    x = 1.50140941 + x * w;
  } else {
    w = sqrt(w) - 3;
    x = -0.000200214257;
    x = 0.000100950558 + x * w;
    x = 0.00134934322 + x * w;
    x = -0.00367342844 + x * w;
    x = 0.00573950773 + x * w;
    x = -0.0076224613 + x * w;
    x = 0.00943887047 + x * w;
    x = 1.00167406 + x * w;
    x = 2.83297682 + x * w;
  }
  x *= y;
  for (int i = 0; i < 3; i++) {
    double err = erf(x) - y;
    double deriv = 1.1283791670955126 * exp(-x * x);
    if (deriv == 0) break;
    x -= err / deriv;
  }
  return x;
}
static float erfinv_f(float y) { return (float)erfinv_d(y); }

/* Modified Bessel function of the first kind, order 1, exponentially scaled: power series
 * for small |x|, asymptotic expansion for large |x|. */
static double bessel_i1e_d(double x) {
  if (isnan(x)) return x;
  double ax = fabs(x);
  if (ax < 15) {
    double term = ax / 2, sum = term, q = ax * ax / 4;
    for (int k = 1; k < 200; k++) {
      term *= q / ((double)k * (double)(k + 1));
      sum += term;
      if (term < sum * 1e-17) break;
    }
    double r = sum * exp(-ax);
    return x < 0 ? -r : r;
  }
  if (isinf(ax)) return x < 0 ? -0.0 : 0.0;
  /* i1e(x) ~ 1/sqrt(2 pi x) * (1 - 3/(8x) - 15/(128x^2) - ...) */
  double mu = 4.0, term = 1, sum = 1, z = 8 * ax;
  for (int k = 1; k < 30; k++) {
    double odd = 2.0 * k - 1;
    double next = -term * (mu - odd * odd) / (k * z);
    if (fabs(next) > fabs(term)) break;
    term = next;
    sum += term;
  }
  double r = sum / sqrt(2 * M_PI * ax);
  return x < 0 ? -r : r;
}
static float bessel_i1e_f(float x) { return (float)bessel_i1e_d(x); }

/* ------------------------------------------------------------- loops */

#define UNARY(name, T, TO, EXPR)                                                            \
  AV_CLONES_FMA static void name(const void *const *in, void *out, int64_t n, const void *aux) {         \
    (void)aux;                                                                             \
    const T *a = in[0];                                                                    \
    TO *o = out;                                                                           \
    AV_IVDEP                                                                               \
    for (int64_t i = 0; i < n; i++) {                                                      \
      T x = a[i];                                                                          \
      o[i] = (TO)(EXPR);                                                                   \
    }                                                                                      \
  }
#define BINARY(name, T, EXPR)                                                               \
  AV_CLONES_FMA static void name(const void *const *in, void *out, int64_t n, const void *aux) {         \
    (void)aux;                                                                             \
    const T *a = in[0], *b = in[1];                                                        \
    T *o = out;                                                                            \
    AV_IVDEP                                                                               \
    for (int64_t i = 0; i < n; i++) {                                                      \
      T x = a[i], y = b[i];                                                                \
      o[i] = (EXPR);                                                                       \
    }                                                                                      \
  }

/* X(opcode suffix, f32 expression, f64 expression) on x */
#define FLOAT_UNARY_OPS(X)                                                                 \
  X(ABS, fabsf(x), fabs(x))                                                                \
  X(NEGATE, -x, -x)                                                                        \
  X(SQRT, sqrtf(x), sqrt(x))                                                               \
  X(RSQRT, frsqrtf(x), frsqrt(x))                                                          \
  X(CBRT, cbrtf(x), cbrt(x))                                                               \
  X(EXPONENTIAL_MINUS_ONE, expm1f(x), expm1(x))                                            \
  X(LOG, logf(x), log(x))                                                                  \
  X(LOG_PLUS_ONE, log1pf(x), log1p(x))                                                     \
  X(LOGISTIC, av_fm_logisticf(x), flogistic(x))                                                 \
  X(TAN, tanf(x), tan(x))                                                                  \
  X(TANH, av_fm_tanhf(x), tanh(x))                                                               \
  X(FLOOR, floorf(x), floor(x))                                                            \
  X(CEIL, ceilf(x), ceil(x))                                                               \
  X(ROUND_NEAREST_AFZ, roundf(x), round(x))                                                \
  X(ROUND_NEAREST_EVEN, nearbyintf(x), nearbyint(x))                                       \
  X(SIGN, fsignf(x), fsign(x))                                                             \
  X(CHLO_ACOS, acosf(x), acos(x))                                                          \
  X(CHLO_ACOSH, acoshf(x), acosh(x))                                                       \
  X(CHLO_ASIN, asinf(x), asin(x))                                                          \
  X(CHLO_ASINH, asinhf(x), asinh(x))                                                       \
  X(CHLO_ATAN, atanf(x), atan(x))                                                          \
  X(CHLO_ATANH, atanhf(x), atanh(x))                                                       \
  X(CHLO_COSH, cosh_f(x), cosh(x))                                                          \
  X(CHLO_SINH, sinh_f(x), sinh(x))                                                          \
  X(CHLO_TAN, tanf(x), tan(x))                                                             \
  X(CHLO_ERF, erff(x), erf(x))                                                             \
  X(CHLO_ERFC, erfcf(x), erfc(x))                                                          \
  X(CHLO_ERF_INV, erfinv_f(x), erfinv_d(x))                                                \
  X(CHLO_LGAMMA, flgammaf(x), flgamma(x))                                                  \
  X(CHLO_DIGAMMA, digamma_f(x), digamma_d(x))                                              \
  X(CHLO_BESSEL_I1E, bessel_i1e_f(x), bessel_i1e_d(x))                                     \
  X(CHLO_SQUARE, x * x, x * x)

#define FLOAT_PRED_OPS(X)                                                                  \
  X(IS_FINITE, isfinite(x))                                                                \
  X(CHLO_IS_INF, isinf(x) != 0)                                                              \
  X(CHLO_IS_POS_INF, isinf(x) && x > 0)                                                    \
  X(CHLO_IS_NEG_INF, isinf(x) && x < 0)

#define FLOAT_BINARY_OPS(X)                                                                \
  X(ADD, x + y, x + y)                                                                     \
  X(SUBTRACT, x - y, x - y)                                                                \
  X(MULTIPLY, x * y, x * y)                                                                \
  X(DIVIDE, x / y, x / y)                                                                  \
  X(REMAINDER, fmodf(x, y), fmod(x, y))                                                    \
  X(POWER, powf(x, y), pow(x, y))                                                          \
  X(MAXIMUM, fmaxf_(x, y), fmax_(x, y))                                                    \
  X(MINIMUM, fminf_(x, y), fmin_(x, y))                                                    \
  X(ATAN2, atan2f(x, y), atan2(x, y))                                                      \
  X(CHLO_NEXT_AFTER, nextafterf(x, y), nextafter(x, y))

/* f32 sin / cos: the vectorisable reduced-argument path (fast_math.h), then glibc for the
 * rare |x| > AV_FM_TRIG_MAX (and inf/nan), found by a vectorised scan; in place, each chunk
 * of inputs is saved first so that fix-up still has them */
#define TRIG32(name, FAST, SLOW)                                                            \
  AV_CLONES_FMA static void name(const void *const *in, void *out, int64_t n, const void *aux) { \
    (void)aux;                                                                             \
    const float *a = in[0];                                                                \
    float *o = out;                                                                        \
    for (int64_t j = 0; j < n; j += 256) {                                                 \
      int64_t m = n - j < 256 ? n - j : 256;                                               \
      float saved[256];                                                                    \
      const float *x = a + j;                                                              \
      if (a == o) {                                                                        \
        memcpy(saved, x, (size_t)m * sizeof *x);                                           \
        x = saved;                                                                         \
      }                                                                                    \
      uint32_t big = 0;                                                                    \
      for (int64_t i = 0; i < m; i++) {                                                    \
        o[j + i] = FAST(x[i]);                                                             \
        big |= (uint32_t)!(fabsf(x[i]) <= AV_FM_TRIG_MAX);                                  \
      }                                                                                    \
      if (big)                                                                             \
        for (int64_t i = 0; i < m; i++)                                                    \
          if (!(fabsf(x[i]) <= AV_FM_TRIG_MAX)) o[j + i] = SLOW(x[i]);                     \
    }                                                                                      \
  }
/* f32 exp: a chunk whose inputs all lie within +-AV_FM_EXP_PLAIN (found by a vectorised scan)
 * takes the loop without the range fix-ups, the rest the general one; the same bits either
 * way (fast_math.h). The scan reads a chunk before any of it is written, so in place works. */
AV_CLONES_FMA static void u32_EXPONENTIAL(const void *const *in, void *out, int64_t n,
                                          const void *aux) {
  (void)aux;
  const float *a = in[0];
  float *o = out;
  for (int64_t j = 0; j < n; j += 256) {
    int64_t m = n - j < 256 ? n - j : 256;
    const float *x = a + j;
    uint32_t wide = 0;
    for (int64_t i = 0; i < m; i++) wide |= (uint32_t)!(fabsf(x[i]) <= AV_FM_EXP_PLAIN);
    if (wide)
      for (int64_t i = 0; i < m; i++) o[j + i] = av_fm_expf(x[i]);
    else
      for (int64_t i = 0; i < m; i++) o[j + i] = av_fm_expf_plain(x[i]);
  }
}
UNARY(u64_EXPONENTIAL, double, double, exp(x))
TRIG32(u32_SINE, av_fm_sinf_reduced, sinf)
TRIG32(u32_COSINE, av_fm_cosf_reduced, cosf)
UNARY(u64_SINE, double, double, sin(x))
UNARY(u64_COSINE, double, double, cos(x))

#define DEF_UNARY(OP, E32, E64)                                                            \
  UNARY(u32_##OP, float, float, E32)                                                       \
  UNARY(u64_##OP, double, double, E64)
FLOAT_UNARY_OPS(DEF_UNARY)
#define DEF_PRED(OP, E)                                                                    \
  UNARY(p32_##OP, float, uint8_t, E)                                                       \
  UNARY(p64_##OP, double, uint8_t, E)
FLOAT_PRED_OPS(DEF_PRED)
#define DEF_BINARY(OP, E32, E64)                                                           \
  BINARY(b32_##OP, float, E32)                                                             \
  BINARY(b64_##OP, double, E64)
FLOAT_BINARY_OPS(DEF_BINARY)

av_ew_fn av_ew_float_fn(av_opcode op, av_dtype t) {
  bool f32 = t == AV_DT_F32;
  if (!f32 && t != AV_DT_F64) return NULL;
  switch (op) {
    case AV_OP_SINE: return f32 ? u32_SINE : u64_SINE;
    case AV_OP_COSINE: return f32 ? u32_COSINE : u64_COSINE;
    case AV_OP_EXPONENTIAL: return f32 ? u32_EXPONENTIAL : u64_EXPONENTIAL;
#define CASE_U(OP, E32, E64) \
  case AV_OP_##OP: return f32 ? u32_##OP : u64_##OP;
    FLOAT_UNARY_OPS(CASE_U)
#define CASE_P(OP, E) \
  case AV_OP_##OP: return f32 ? p32_##OP : p64_##OP;
    FLOAT_PRED_OPS(CASE_P)
#define CASE_B(OP, E32, E64) \
  case AV_OP_##OP: return f32 ? b32_##OP : b64_##OP;
    FLOAT_BINARY_OPS(CASE_B)
    default: return NULL;
  }
}
