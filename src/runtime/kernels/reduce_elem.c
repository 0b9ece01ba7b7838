#include "runtime/kernels/reduce_elem.h"

#include <math.h>
#include <string.h>

#include "ir/float_codec.h"

/* The narrow float codec is ir/float_codec.h's. */
bool av_kel_is_narrow_float(av_dtype t) {
  av_fp_format f;
  return av_fp_format_of(t, &f);
}

double av_kel_narrow_to_double(av_dtype t, uint32_t bits) {
  av_fp_format f;
  return av_fp_format_of(t, &f) ? av_fp_decode(bits, &f) : 0.0;
}

uint32_t av_kel_double_to_narrow(av_dtype t, double v) {
  av_fp_format f;
  return av_fp_format_of(t, &f) ? av_fp_encode(v, &f) : 0;
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
  if (rank <= 0) {
    av_kel_convert(dt, dst, st, src);
    return;
  }
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
