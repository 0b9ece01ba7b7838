#include "runtime/kernels/reduce_elem.h"

#include <math.h>
#include <string.h>

/* One description per narrow float format. */
typedef enum nan_kind {
  NK_IEEE,   /* all-ones exponent: inf (mantissa 0) or NaN */
  NK_FN,     /* no inf; NaN = all-ones exponent and mantissa */
  NK_FNUZ,   /* no inf, no -0; NaN = sign bit alone (0x80) */
  NK_NONE,   /* no inf, no NaN (f4/f6): overflow saturates */
  NK_E8M0,   /* unsigned exponent-only: 2^(e-127), 0xFF NaN */
} nan_kind;

typedef struct mini_fmt {
  int ebits, mbits, bias;
  nan_kind nk;
} mini_fmt;

static bool fmt_of(av_dtype t, mini_fmt *f) {
  switch (t) {
    case AV_DT_F16: *f = (mini_fmt){5, 10, 15, NK_IEEE}; return true;
    case AV_DT_BF16: *f = (mini_fmt){8, 7, 127, NK_IEEE}; return true;
    case AV_DT_F8E5M2: *f = (mini_fmt){5, 2, 15, NK_IEEE}; return true;
    case AV_DT_F8E4M3: *f = (mini_fmt){4, 3, 7, NK_IEEE}; return true;
    case AV_DT_F8E3M4: *f = (mini_fmt){3, 4, 3, NK_IEEE}; return true;
    case AV_DT_F8E4M3FN: *f = (mini_fmt){4, 3, 7, NK_FN}; return true;
    case AV_DT_F8E4M3FNUZ: *f = (mini_fmt){4, 3, 8, NK_FNUZ}; return true;
    case AV_DT_F8E4M3B11FNUZ: *f = (mini_fmt){4, 3, 11, NK_FNUZ}; return true;
    case AV_DT_F8E5M2FNUZ: *f = (mini_fmt){5, 2, 16, NK_FNUZ}; return true;
    case AV_DT_F8E8M0FNU: *f = (mini_fmt){8, 0, 127, NK_E8M0}; return true;
    case AV_DT_F4E2M1FN: *f = (mini_fmt){2, 1, 1, NK_NONE}; return true;
    case AV_DT_F6E2M3FN: *f = (mini_fmt){2, 3, 1, NK_NONE}; return true;
    case AV_DT_F6E3M2FN: *f = (mini_fmt){3, 2, 3, NK_NONE}; return true;
    default: return false;
  }
}

bool av_kel_is_narrow_float(av_dtype t) {
  mini_fmt f;
  return fmt_of(t, &f);
}

double av_kel_narrow_to_double(av_dtype t, uint32_t bits) {
  mini_fmt f;
  if (!fmt_of(t, &f)) return 0.0;
  if (f.nk == NK_E8M0) return (bits & 0xFF) == 0xFF ? NAN : ldexp(1.0, (int)(bits & 0xFF) - 127);
  int nb = f.ebits + f.mbits;
  uint32_t sign = (bits >> nb) & 1u;
  uint32_t e = (bits >> f.mbits) & ((1u << f.ebits) - 1u);
  uint32_t m = bits & ((1u << f.mbits) - 1u);
  uint32_t emax = (1u << f.ebits) - 1u;
  if (f.nk == NK_FNUZ && sign && e == 0 && m == 0) return NAN;
  if (f.nk == NK_IEEE && e == emax) return m ? NAN : (sign ? -INFINITY : INFINITY);
  if (f.nk == NK_FN && e == emax && m == (1u << f.mbits) - 1u) return NAN;
  double v = e == 0 ? ldexp((double)m, 1 - f.bias - f.mbits)
                    : ldexp((double)(m | (1u << f.mbits)), (int)e - f.bias - f.mbits);
  return sign ? -v : v;
}

uint32_t av_kel_double_to_narrow(av_dtype t, double v) {
  mini_fmt f;
  if (!fmt_of(t, &f)) return 0;
  int nb = f.ebits + f.mbits;
  uint32_t emax = (1u << f.ebits) - 1u;
  uint32_t nan_bits, inf_bits = 0, max_bits;
  switch (f.nk) {
    case NK_IEEE:
      nan_bits = (emax << f.mbits) | (1u << (f.mbits - 1));
      inf_bits = emax << f.mbits;
      max_bits = inf_bits - 1;
      break;
    case NK_FN: nan_bits = (1u << nb) - 1; max_bits = nan_bits - 1; break;
    case NK_FNUZ: nan_bits = 1u << nb; max_bits = (1u << nb) - 1; break;
    case NK_NONE: /* no NaN encoding: NaN becomes -0 (what ml_dtypes does) */
      nan_bits = 1u << nb; max_bits = (1u << nb) - 1; break;
    default: /* E8M0 */
      if (isnan(v) || v <= 0 || isinf(v)) return 0xFF;
      {
        int e;
        double fr = frexp(v, &e); /* v = fr * 2^e, fr in [0.5, 1) */
        int ex = e - 1 + (fr > 0.75 ? 1 : 0); /* nearest power of two (ties by mantissa) */
        ex += 127;
        if (ex < 0) ex = 0;
        if (ex > 254) return 0xFF;
        return (uint32_t)ex;
      }
  }
  if (isnan(v)) return nan_bits;
  uint32_t sign = signbit(v) ? 1u : 0u;
  double a = fabs(v);
  uint32_t mag;
  if (isinf(a)) {
    mag = f.nk == NK_IEEE ? inf_bits : (f.nk == NK_NONE ? max_bits : nan_bits);
  } else if (a == 0) {
    mag = 0;
  } else {
    int e;
    (void)frexp(a, &e);
    int E = e - 1; /* a = 1.xxx * 2^E */
    int emin = 1 - f.bias;
    if (E < emin) E = emin;
    double q = nearbyint(ldexp(a, f.mbits - E)); /* round half even in default mode */
    if (q > 4294967295.0) q = 4294967295.0;
    /* (E - emin) << mbits counts the normal binades below; q carries the implicit bit. */
    double bits = ldexp((double)(E - emin), f.mbits) + q;
    if (bits > (double)max_bits) {
      mag = f.nk == NK_IEEE ? inf_bits : (f.nk == NK_NONE ? max_bits : nan_bits);
    } else {
      mag = (uint32_t)bits;
    }
  }
  if (f.nk == NK_FNUZ) return (mag == 0 || mag == nan_bits) ? mag : (mag | (sign << nb));
  if (f.nk != NK_IEEE && mag == nan_bits) return nan_bits | (sign << nb);
  return mag | (sign << nb);
}

static uint32_t load_u(const void *p, size_t n) {
  uint32_t v = 0;
  if (n == 1) v = *(const uint8_t *)p;
  else if (n == 2) { uint16_t x; memcpy(&x, p, 2); v = x; }
  return v;
}

double av_kel_load_real(av_dtype t, const void *p) {
  switch (t) {
    case AV_DT_F32: { float x; memcpy(&x, p, 4); return x; }
    case AV_DT_F64: { double x; memcpy(&x, p, 8); return x; }
    case AV_DT_C64: { float x; memcpy(&x, p, 4); return x; }
    case AV_DT_C128: { double x; memcpy(&x, p, 8); return x; }
    case AV_DT_PRED: return *(const uint8_t *)p ? 1.0 : 0.0;
    default: break;
  }
  if (av_dtype_is_signed_int(t)) return (double)(int64_t)av_kel_load_bits(t, p);
  if (av_dtype_is_unsigned_int(t)) return (double)av_kel_load_bits(t, p);
  if (av_kel_is_narrow_float(t)) return av_kel_narrow_to_double(t, load_u(p, av_dtype_size(t)));
  return 0.0;
}

static int64_t sat_i64(double v, double lo, double hi) {
  if (isnan(v)) return 0;
  if (v <= lo) return (int64_t)lo;
  if (v >= hi) return (int64_t)hi;
  return (int64_t)v;
}

void av_kel_store_real(av_dtype t, void *p, double v) {
  switch (t) {
    case AV_DT_F32: { float x = (float)v; memcpy(p, &x, 4); return; }
    case AV_DT_F64: memcpy(p, &v, 8); return;
    case AV_DT_C64: { float x[2] = {(float)v, 0.0f}; memcpy(p, x, 8); return; }
    case AV_DT_C128: { double x[2] = {v, 0.0}; memcpy(p, x, 16); return; }
    case AV_DT_PRED: *(uint8_t *)p = v != 0; return;
    default: break;
  }
  int bits = av_dtype_bits(t);
  if (av_dtype_is_signed_int(t)) {
    double hi = ldexp(1.0, bits - 1);
    int64_t x = bits == 64 ? sat_i64(v, -9223372036854775808.0, 9223372036854774784.0)
                           : sat_i64(v, -hi, hi - 1);
    av_kel_store_bits(t, p, (uint64_t)x);
  } else if (av_dtype_is_unsigned_int(t)) {
    uint64_t x;
    if (isnan(v) || v <= 0) x = 0;
    else if (v >= ldexp(1.0, bits)) x = bits == 64 ? UINT64_MAX : (((uint64_t)1 << bits) - 1);
    else x = (uint64_t)v;
    av_kel_store_bits(t, p, x);
  } else if (av_kel_is_narrow_float(t)) {
    uint32_t b = av_kel_double_to_narrow(t, v);
    if (av_dtype_size(t) == 2) { uint16_t x = (uint16_t)b; memcpy(p, &x, 2); }
    else *(uint8_t *)p = (uint8_t)b;
  }
}

void av_kel_load_complex(av_dtype t, const void *p, double *re, double *im) {
  if (t == AV_DT_C64) {
    float x[2];
    memcpy(x, p, 8);
    *re = x[0];
    *im = x[1];
  } else if (t == AV_DT_C128) {
    double x[2];
    memcpy(x, p, 16);
    *re = x[0];
    *im = x[1];
  } else {
    *re = av_kel_load_real(t, p);
    *im = 0.0;
  }
}

void av_kel_store_complex(av_dtype t, void *p, double re, double im) {
  if (t == AV_DT_C64) {
    float x[2] = {(float)re, (float)im};
    memcpy(p, x, 8);
  } else if (t == AV_DT_C128) {
    double x[2] = {re, im};
    memcpy(p, x, 16);
  } else {
    av_kel_store_real(t, p, re);
  }
}

uint64_t av_kel_load_bits(av_dtype t, const void *p) {
  size_t n = av_dtype_size(t);
  bool sgn = av_dtype_is_signed_int(t);
  switch (n) {
    case 1: return sgn ? (uint64_t)(int64_t) * (const int8_t *)p : *(const uint8_t *)p;
    case 2: { uint16_t x; memcpy(&x, p, 2); return sgn ? (uint64_t)(int64_t)(int16_t)x : x; }
    case 4: { uint32_t x; memcpy(&x, p, 4); return sgn ? (uint64_t)(int64_t)(int32_t)x : x; }
    case 8: { uint64_t x; memcpy(&x, p, 8); return x; }
    default: return 0;
  }
}

void av_kel_store_bits(av_dtype t, void *p, uint64_t v) {
  int bits = av_dtype_bits(t);
  if (t == AV_DT_PRED) { *(uint8_t *)p = (uint8_t)(v & 1); return; }
  if (bits < 64) {
    uint64_t mask = ((uint64_t)1 << bits) - 1;
    v &= mask;
    if (av_dtype_is_signed_int(t) && (v >> (bits - 1)) & 1) v |= ~mask;
  }
  switch (av_dtype_size(t)) {
    case 1: *(uint8_t *)p = (uint8_t)v; break;
    case 2: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
    case 4: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
    case 8: memcpy(p, &v, 8); break;
    default: break;
  }
}

void av_kel_convert(av_dtype dt, void *dst, av_dtype st, const void *src) {
  if (dt == st) {
    memcpy(dst, src, av_dtype_size(dt));
    return;
  }
  bool s_int = av_dtype_is_int(st) || st == AV_DT_PRED;
  bool d_int = av_dtype_is_int(dt) || dt == AV_DT_PRED;
  if (dt == AV_DT_PRED) {
    double re, im;
    av_kel_load_complex(st, src, &re, &im);
    *(uint8_t *)dst = (re != 0 || im != 0);
  } else if (s_int && d_int) {
    av_kel_store_bits(dt, dst, st == AV_DT_PRED ? (*(const uint8_t *)src != 0) : av_kel_load_bits(st, src));
  } else if (av_dtype_is_complex(dt)) {
    double re, im;
    av_kel_load_complex(st, src, &re, &im);
    av_kel_store_complex(dt, dst, re, im);
  } else if (s_int && av_dtype_is_signed_int(st) && !d_int) {
    av_kel_store_real(dt, dst, (double)(int64_t)av_kel_load_bits(st, src));
  } else {
    av_kel_store_real(dt, dst, av_kel_load_real(st, src));
  }
}

void av_kel_permute_copy(av_dtype dt, void *dst, av_dtype st, const void *src, int rank,
                         const int64_t *dims, const int *perm) {
  size_t ses = av_dtype_size(st), des = av_dtype_size(dt);
  int64_t sstride[64], odims[64], ostr[64], idx[64];
  if (rank > 64) return;
  int64_t total = 1;
  for (int i = rank - 1, s = 1; i >= 0; i--) {
    sstride[i] = s;
    s *= dims[i];
  }
  for (int i = 0; i < rank; i++) {
    odims[i] = dims[perm[i]];
    ostr[i] = sstride[perm[i]];
    total *= odims[i];
    idx[i] = 0;
  }
  if (total == 0) return;
  if (rank == 0) {
    av_kel_convert(dt, dst, st, src);
    return;
  }
  const char *s = src;
  char *o = dst;
  int64_t inner = odims[rank - 1], istr = ostr[rank - 1];
  int64_t off = 0;
  for (int64_t done = 0; done < total; done += inner) {
    if (dt == st && istr == 1) {
      memcpy(o, s + off * (int64_t)ses, (size_t)inner * ses);
      o += inner * (int64_t)des;
    } else if (dt == st && ses == 4) {
      for (int64_t j = 0; j < inner; j++, o += 4) memcpy(o, s + (off + j * istr) * 4, 4);
    } else if (dt == st && ses == 8) {
      for (int64_t j = 0; j < inner; j++, o += 8) memcpy(o, s + (off + j * istr) * 8, 8);
    } else {
      for (int64_t j = 0; j < inner; j++, o += des)
        av_kel_convert(dt, o, st, s + (off + j * istr) * (int64_t)ses);
    }
    /* advance the odometer over dims [0, rank-1) */
    for (int k = rank - 2; k >= 0; k--) {
      idx[k]++;
      off += ostr[k];
      if (idx[k] < odims[k]) break;
      off -= ostr[k] * odims[k];
      idx[k] = 0;
    }
  }
}

int64_t av_kel_load_index(av_dtype t, const void *p) {
  uint64_t v = av_kel_load_bits(t, p);
  if (av_dtype_is_unsigned_int(t) && v > (uint64_t)INT64_MAX) return INT64_MAX;
  return (int64_t)v;
}

void av_kel_fill(void *dst, const void *elem, size_t es, int64_t n) {
  if (n <= 0 || es == 0) return;
  char *d = dst;
  memcpy(d, elem, es);
  size_t done = es, total = (size_t)n * es;
  while (done < total) {
    size_t chunk = done < total - done ? done : total - done;
    memcpy(d + done, d, chunk);
    done += chunk;
  }
}
