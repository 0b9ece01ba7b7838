/* Elementwise loops on complex<f32> and complex<f64>. */
#include <complex.h>
#include <math.h>
#include <string.h>

#include "runtime/kernels/elementwise.h"
#include "runtime/kernels/simd_clones.h"

typedef float complex cf;
typedef double complex cd;

/* CMPLX/CMPLXF are missing with clang's headers: build from parts (same layout as an array). */
static inline cd mk_cd(double re, double im) {
  double parts[2] = {re, im};
  cd z;
  memcpy(&z, parts, sizeof z);
  return z;
}
static inline cf mk_cf(float re, float im) {
  float parts[2] = {re, im};
  cf z;
  memcpy(&z, parts, sizeof z);
  return z;
}

#define CLOOP1(name, T, TO, EXPR)                                                           \
  static void name(const void *const *in, void *out, int64_t n, const void *aux) {         \
    (void)aux;                                                                             \
    const T *a = in[0];                                                                    \
    TO *o = out;                                                                           \
    for (int64_t i = 0; i < n; i++) {                                                      \
      T x = a[i];                                                                          \
      o[i] = (EXPR);                                                                       \
    }                                                                                      \
  }
#define CLOOP2(name, T, EXPR)                                                               \
  static void name(const void *const *in, void *out, int64_t n, const void *aux) {         \
    (void)aux;                                                                             \
    const T *a = in[0], *b = in[1];                                                        \
    T *o = out;                                                                            \
    for (int64_t i = 0; i < n; i++) {                                                      \
      T x = a[i], y = b[i];                                                                \
      o[i] = (EXPR);                                                                       \
    }                                                                                      \
  }

static inline cf csignf_(cf x) {
  float r = cabsf(x);
  if (isnan(crealf(x)) || isnan(cimagf(x))) return mk_cf(NAN, NAN);
  return r == 0 ? mk_cf(0, 0) : x / r;
}
static inline cd csign_(cd x) {
  double r = cabs(x);
  if (isnan(creal(x)) || isnan(cimag(x))) return mk_cd(NAN, NAN);
  return r == 0 ? mk_cd(0, 0) : x / r;
}
/* expm1 / log1p keep precision for small |z| through the real functions. */
static inline cd cexpm1_(cd z) {
  double re = creal(z), im = cimag(z);
  double em1 = expm1(re), s = sin(im / 2);
  /* a real argument has a real result (exp(re) * sin(0) would be inf * 0 = NaN for large re) */
  return mk_cd(em1 * cos(im) - 2 * s * s, im == 0 ? im : exp(re) * sin(im));
}
static inline cf cexpm1f_(cf z) { return (cf)cexpm1_((cd)z); }
static inline cd clog1p_(cd z) {
  double re = creal(z), im = cimag(z);
  double mag = hypot(re + 1, im);
  double lr = fabs(re) < 0.5 && fabs(im) < 0.5 ? 0.5 * log1p(re * (2 + re) + im * im) : log(mag);
  return mk_cd(lr, atan2(im, re + 1));
}
static inline cf clog1pf_(cf z) { return (cf)clog1p_((cd)z); }

/* Complex multiply as XLA computes it, so that products (and chains of them, e.g. cumprod's
 * reduce_window) round the same way: (a+bi)(c+di) = (ac - bd) + (bc + ad)i with one product
 * of each part fused (XLA's LLVM contracts them into FMAs; checked bit-exact against the
 * conformance data's expected values). Non-finite results fall back to C's operator, which
 * recovers infinities (C11 Annex G) where the plain formula gives NaN.
 * The products of a chunk go to a local buffer first, in loops the FMA clones vectorise
 * (fmaf/fma are single instructions there; in the baseline copy libm calls, 5x slower), and
 * the rare element whose parts are both NaN is then recomputed from its inputs (still
 * unchanged: the output may alias an input, so the chunk is stored only after that). */
enum { kMulChunk = 256 };
#define CMUL_LOOP(name, T, CT, FMA, MUL)                                                     \
  AV_CLONES_FMA static void name(const void *const *in, void *out, int64_t n,               \
                                 const void *aux) {                                          \
    (void)aux;                                                                               \
    const T *a = in[0], *b = in[1];                                                          \
    T *o = out;                                                                              \
    T tmp[2 * kMulChunk];                                                                    \
    for (int64_t i0 = 0; i0 < n; i0 += kMulChunk) {                                          \
      int64_t m = n - i0 < kMulChunk ? n - i0 : kMulChunk;                                   \
      const T *x = a + 2 * i0, *y = b + 2 * i0;                                              \
      for (int64_t i = 0; i < m; i++) {                                                      \
        tmp[2 * i] = FMA(x[2 * i], y[2 * i], -(x[2 * i + 1] * y[2 * i + 1]));               \
        tmp[2 * i + 1] = FMA(x[2 * i + 1], y[2 * i], x[2 * i] * y[2 * i + 1]);              \
      }                                                                                      \
      /* a separate pass with an integer flag, so that both loops vectorise */               \
      int nan = 0;                                                                           \
      for (int64_t i = 0; i < m; i++)                                                        \
        nan |= (tmp[2 * i] != tmp[2 * i]) & (tmp[2 * i + 1] != tmp[2 * i + 1]);              \
      if (nan)                                                                               \
        for (int64_t i = 0; i < m; i++)                                                      \
          if (isnan(tmp[2 * i]) && isnan(tmp[2 * i + 1])) {                                  \
            CT p = MUL(x + 2 * i, y + 2 * i);                                                \
            memcpy(tmp + 2 * i, &p, sizeof p);                                               \
          }                                                                                  \
      memcpy(o + 2 * i0, tmp, sizeof(T) * 2 * (size_t)m);                                   \
    }                                                                                        \
  }
static cf annex_g_mulf(const float *x, const float *y) {
  return mk_cf(x[0], x[1]) * mk_cf(y[0], y[1]);
}
static cd annex_g_mul(const double *x, const double *y) {
  return mk_cd(x[0], x[1]) * mk_cd(y[0], y[1]);
}
CMUL_LOOP(cmul64_loop, float, cf, fmaf, annex_g_mulf)
CMUL_LOOP(cmul128_loop, double, cd, fma, annex_g_mul)

/* asin of complex<f32> through double: casinf's result is off by up to 4 ULP (the reference
 * interpreter's expected values are within 3 of the correctly rounded result). */
static inline cf casinf_(cf x) { return (cf)casin((cd)x); }

/* maximum/minimum order complex numbers lexicographically (real part, then imaginary). */
static inline bool cless_f(cf a, cf b) {
  return crealf(a) < crealf(b) || (crealf(a) == crealf(b) && cimagf(a) < cimagf(b));
}
static inline bool cless_d(cd a, cd b) {
  return creal(a) < creal(b) || (creal(a) == creal(b) && cimag(a) < cimag(b));
}
static inline bool cnan_f(cf a) { return isnan(crealf(a)) || isnan(cimagf(a)); }
static inline bool cnan_d(cd a) { return isnan(creal(a)) || isnan(cimag(a)); }
static inline cf cmaxf_(cf a, cf b) { return cnan_f(a) ? a : cnan_f(b) ? b : cless_f(a, b) ? b : a; }
static inline cf cminf_(cf a, cf b) { return cnan_f(a) ? a : cnan_f(b) ? b : cless_f(b, a) ? b : a; }
static inline cd cmax_(cd a, cd b) { return cnan_d(a) ? a : cnan_d(b) ? b : cless_d(a, b) ? b : a; }
static inline cd cmin_(cd a, cd b) { return cnan_d(a) ? a : cnan_d(b) ? b : cless_d(b, a) ? b : a; }
/* atan2(y, x) = -i * log((x + i y) / sqrt(x^2 + y^2)) */
static inline cd catan2_(cd y, cd x) {
  cd i = mk_cd(0, 1);
  return -i * clog((x + i * y) / csqrt(x * x + y * y));
}
static inline cf catan2f_(cf y, cf x) { return (cf)catan2_((cd)y, (cd)x); }
static inline cd ccbrt_(cd z) {
  if (creal(z) == 0 && cimag(z) == 0) return z;
  return cpow(z, mk_cd(1.0 / 3.0, 0));
}
static inline cf ccbrtf_(cf z) { return (cf)ccbrt_((cd)z); }

#define COMPLEX_UNARY_OPS(X)                                                               \
  X(NEGATE, -x, -x)                                                                        \
  X(SQRT, csqrtf(x), csqrt(x))                                                             \
  X(RSQRT, 1.0f / csqrtf(x), 1.0 / csqrt(x))                                               \
  X(EXPONENTIAL, cexpf(x), cexp(x))                                                        \
  X(EXPONENTIAL_MINUS_ONE, cexpm1f_(x), cexpm1_(x))                                        \
  X(LOG, clogf(x), clog(x))                                                                \
  X(LOG_PLUS_ONE, clog1pf_(x), clog1p_(x))                                                 \
  X(LOGISTIC, 1.0f / (1.0f + cexpf(-x)), 1.0 / (1.0 + cexp(-x)))                           \
  X(SINE, csinf(x), csin(x))                                                               \
  X(COSINE, ccosf(x), ccos(x))                                                             \
  X(TAN, ctanf(x), ctan(x))                                                                \
  X(TANH, ctanhf(x), ctanh(x))                                                             \
  X(SIGN, csignf_(x), csign_(x))                                                           \
  X(CHLO_ACOS, cacosf(x), cacos(x))                                                        \
  X(CHLO_ACOSH, cacoshf(x), cacosh(x))                                                     \
  X(CHLO_ASIN, casinf_(x), casin(x))                                                        \
  X(CHLO_ASINH, casinhf(x), casinh(x))                                                     \
  X(CHLO_ATAN, catanf(x), catan(x))                                                        \
  X(CHLO_ATANH, catanhf(x), catanh(x))                                                     \
  X(CHLO_COSH, ccoshf(x), ccosh(x))                                                        \
  X(CHLO_SINH, csinhf(x), csinh(x))                                                        \
  X(CHLO_TAN, ctanf(x), ctan(x))                                                           \
  X(CHLO_CONJ, conjf(x), conj(x))                                                          \
  X(CHLO_SQUARE, x * x, x * x)                                                             \
  X(CBRT, ccbrtf_(x), ccbrt_(x))

#define COMPLEX_REAL_OPS(X)                                                                \
  X(ABS, cabsf(x), cabs(x))                                                                \
  X(REAL, crealf(x), creal(x))                                                             \
  X(IMAG, cimagf(x), cimag(x))

#define COMPLEX_BINARY_OPS(X)                                                              \
  X(ADD, x + y, x + y)                                                                     \
  X(SUBTRACT, x - y, x - y)                                                                \
  X(DIVIDE, x / y, x / y)                                                                  \
  X(POWER, cpowf(x, y), cpow(x, y))                                                       \
  X(MAXIMUM, cmaxf_(x, y), cmax_(x, y))                                                    \
  X(MINIMUM, cminf_(x, y), cmin_(x, y))                                                    \
  X(ATAN2, catan2f_(x, y), catan2_(x, y))

#define DEF_CU(OP, EF, ED)                                                                 \
  CLOOP1(cu64_##OP, cf, cf, EF)                                                            \
  CLOOP1(cu128_##OP, cd, cd, ED)
COMPLEX_UNARY_OPS(DEF_CU)
#define DEF_CR(OP, EF, ED)                                                                 \
  CLOOP1(cr64_##OP, cf, float, EF)                                                         \
  CLOOP1(cr128_##OP, cd, double, ED)
COMPLEX_REAL_OPS(DEF_CR)
#define DEF_CB(OP, EF, ED)                                                                 \
  CLOOP2(cb64_##OP, cf, EF)                                                                \
  CLOOP2(cb128_##OP, cd, ED)
COMPLEX_BINARY_OPS(DEF_CB)

/* stablehlo.complex(re, im): real operands, complex result. */
static void make_c64(const void *const *in, void *out, int64_t n, const void *aux) {
  (void)aux;
  const float *a = in[0], *b = in[1];
  float *o = out;
  for (int64_t i = 0; i < n; i++) {
    o[2 * i] = a[i];
    o[2 * i + 1] = b[i];
  }
}
static void make_c128(const void *const *in, void *out, int64_t n, const void *aux) {
  (void)aux;
  const double *a = in[0], *b = in[1];
  double *o = out;
  for (int64_t i = 0; i < n; i++) {
    o[2 * i] = a[i];
    o[2 * i + 1] = b[i];
  }
}
/* is_finite etc. are not defined on complex; real/imag of real types are identity/zero. */

av_ew_fn av_ew_complex_fn(av_opcode op, av_dtype t) {
  bool c64 = t == AV_DT_C64;
  if (op == AV_OP_COMPLEX) {
    if (t == AV_DT_F32) return make_c64;
    if (t == AV_DT_F64) return make_c128;
    return NULL;
  }
  if (!c64 && t != AV_DT_C128) return NULL;
  switch (op) {
    case AV_OP_MULTIPLY: return c64 ? cmul64_loop : cmul128_loop;
#define CASE_CU(OP, EF, ED) \
  case AV_OP_##OP: return c64 ? cu64_##OP : cu128_##OP;
    COMPLEX_UNARY_OPS(CASE_CU)
#define CASE_CR(OP, EF, ED) \
  case AV_OP_##OP: return c64 ? cr64_##OP : cr128_##OP;
    COMPLEX_REAL_OPS(CASE_CR)
#define CASE_CB(OP, EF, ED) \
  case AV_OP_##OP: return c64 ? cb64_##OP : cb128_##OP;
    COMPLEX_BINARY_OPS(CASE_CB)
    default: return NULL;
  }
}
