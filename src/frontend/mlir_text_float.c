#include "frontend/mlir_text_float.h"

#include <math.h>
#include <string.h>

typedef enum fkind {
  FK_IEEE,  /* inf and NaN at the all-ones exponent */
  FK_FN,    /* no inf; NaN is the all-ones pattern (e.g. f8E4M3FN) */
  FK_FNUZ,  /* no inf, no -0; NaN is the sign bit alone */
  FK_NONE,  /* neither inf nor NaN (f6, f4): saturating */
  FK_E8M0,  /* unsigned powers of two, 0xFF is NaN */
} fkind;

typedef struct ffmt {
  int ebits, mbits, bias;
  fkind kind;
} ffmt;

static bool narrow_format(av_dtype dt, ffmt *f) {
  switch (dt) {
    case AV_DT_F16: *f = (ffmt){5, 10, 15, FK_IEEE}; return true;
    case AV_DT_BF16: *f = (ffmt){8, 7, 127, FK_IEEE}; return true;
    case AV_DT_F8E5M2: *f = (ffmt){5, 2, 15, FK_IEEE}; return true;
    case AV_DT_F8E4M3: *f = (ffmt){4, 3, 7, FK_IEEE}; return true;
    case AV_DT_F8E3M4: *f = (ffmt){3, 4, 3, FK_IEEE}; return true;
    case AV_DT_F8E4M3FN: *f = (ffmt){4, 3, 7, FK_FN}; return true;
    case AV_DT_F8E4M3FNUZ: *f = (ffmt){4, 3, 8, FK_FNUZ}; return true;
    case AV_DT_F8E4M3B11FNUZ: *f = (ffmt){4, 3, 11, FK_FNUZ}; return true;
    case AV_DT_F8E5M2FNUZ: *f = (ffmt){5, 2, 16, FK_FNUZ}; return true;
    case AV_DT_F8E8M0FNU: *f = (ffmt){8, 0, 127, FK_E8M0}; return true;
    case AV_DT_F6E2M3FN: *f = (ffmt){2, 3, 1, FK_NONE}; return true;
    case AV_DT_F6E3M2FN: *f = (ffmt){3, 2, 3, FK_NONE}; return true;
    case AV_DT_F4E2M1FN: *f = (ffmt){2, 1, 1, FK_NONE}; return true;
    default: return false;
  }
}

static uint64_t encode_e8m0(double v) {
  if (!(v > 0) || isinf(v)) return 0xFF;
  int ex;
  double fr = frexp(v, &ex); /* v = fr * 2^ex, fr in [0.5, 1) */
  double r = rint(fr * 2.0); /* 1 or 2 */
  long biased = (long)ex - 1 + 127 + (long)(r - 1.0);
  if (biased > 254) return 0xFF;
  if (biased < 0) return 0;
  return (uint64_t)biased;
}

static uint64_t encode_narrow(double v, const ffmt *f) {
  int total = f->ebits + f->mbits;
  uint64_t sign = signbit(v) ? (uint64_t)1 << total : 0;
  uint64_t all_ones = ((uint64_t)1 << total) - 1;
  uint64_t exp_ones = (((uint64_t)1 << f->ebits) - 1) << f->mbits;
  uint64_t nan_bits = f->kind == FK_IEEE ? exp_ones | ((uint64_t)1 << (f->mbits - 1))
                      : f->kind == FK_FN ? all_ones | sign
                      : f->kind == FK_FNUZ ? (uint64_t)1 << total
                                           : all_ones | sign; /* FK_NONE: saturate */
  if (isnan(v)) return f->kind == FK_NONE ? all_ones : nan_bits;
  if (isinf(v)) {
    if (f->kind == FK_IEEE) return exp_ones | sign;
    return nan_bits;
  }
  double a = fabs(v);
  if (a == 0) return f->kind == FK_FNUZ ? 0 : sign;
  int ex;
  frexp(a, &ex);
  int e = ex - 1; /* a in [2^e, 2^(e+1)) */
  int emin = 1 - f->bias;
  int eq = (e < emin ? emin : e) - f->mbits; /* exponent of one unit in the last place */
  double r = rint(ldexp(a, -eq));           /* default rounding mode: nearest even */
  uint64_t bits;
  if (e < emin) {
    bits = (uint64_t)r; /* subnormal; r == 2^mbits lands on the smallest normal */
  } else {
    bits = ((uint64_t)(e + f->bias) << f->mbits) + ((uint64_t)r - ((uint64_t)1 << f->mbits));
  }
  switch (f->kind) {
    case FK_IEEE:
      if (bits >= exp_ones) return exp_ones | sign;
      break;
    case FK_FN:
      if (bits >= all_ones) return nan_bits;
      break;
    case FK_FNUZ:
      if (bits > all_ones) return nan_bits;
      if (bits == 0) return 0;
      break;
    case FK_NONE:
      if (bits > all_ones) bits = all_ones;
      break;
    case FK_E8M0:
      break;
  }
  return bits | sign;
}

uint64_t av_float_encode(double v, av_dtype dt) {
  if (dt == AV_DT_F64) {
    uint64_t b;
    memcpy(&b, &v, 8);
    return b;
  }
  if (dt == AV_DT_F32) {
    float x = (float)v;
    uint32_t b;
    memcpy(&b, &x, 4);
    return b;
  }
  ffmt f;
  if (!narrow_format(dt, &f)) return 0;
  if (f.kind == FK_E8M0) return encode_e8m0(v);
  return encode_narrow(v, &f);
}

double av_float_decode(uint64_t bits, av_dtype dt) {
  if (dt == AV_DT_F64) {
    double v;
    memcpy(&v, &bits, 8);
    return v;
  }
  if (dt == AV_DT_F32) {
    uint32_t b = (uint32_t)bits;
    float x;
    memcpy(&x, &b, 4);
    return x;
  }
  ffmt f;
  if (!narrow_format(dt, &f)) return 0;
  int total = f.ebits + f.mbits;
  bits &= ((uint64_t)1 << (total + (f.kind == FK_E8M0 ? 0 : 1))) - 1;
  if (f.kind == FK_E8M0) return bits == 0xFF ? NAN : ldexp(1.0, (int)bits - 127);
  bool neg = (bits >> total) & 1;
  uint64_t mag = bits & (((uint64_t)1 << total) - 1);
  uint64_t e = mag >> f.mbits, m = mag & (((uint64_t)1 << f.mbits) - 1);
  uint64_t emax = ((uint64_t)1 << f.ebits) - 1;
  double v;
  if (f.kind == FK_FNUZ && neg && mag == 0) return NAN;
  if (f.kind == FK_FN && mag == ((uint64_t)1 << total) - 1) return NAN;
  if (f.kind == FK_IEEE && e == emax) {
    v = m ? NAN : INFINITY;
  } else if (e == 0) {
    v = ldexp((double)m, 1 - f.bias - f.mbits);
  } else {
    v = ldexp((double)(m + ((uint64_t)1 << f.mbits)), (int)e - f.bias - f.mbits);
  }
  return neg ? -v : v;
}
