#include "runtime/kernels/convert.h"

#include <math.h>
#include <string.h>

#include "runtime/kernels/simd_clones.h"

enum { CHUNK = 256 };

#define UNUSED_FMT (void)fin, (void)fout

/* ---------------------------------------------------------------- loaders */

#define LOAD_I64(name, T)                                                                  \
  static void name(const void *src, void *dst, int64_t n, const av_fp_format *fin,         \
                   const av_fp_format *fout) {                                             \
    UNUSED_FMT;                                                                            \
    const T *s = src;                                                                      \
    int64_t *o = dst;                                                                      \
    for (int64_t i = 0; i < n; i++) o[i] = (int64_t)s[i];                                  \
  }
LOAD_I64(li_u8, uint8_t)
LOAD_I64(li_s8, int8_t)
LOAD_I64(li_s16, int16_t)
LOAD_I64(li_s32, int32_t)
LOAD_I64(li_s64, int64_t)
LOAD_I64(li_u16, uint16_t)
LOAD_I64(li_u32, uint32_t)
LOAD_I64(li_u64, uint64_t)

#define LOAD_F64(name, T)                                                                  \
  static void name(const void *src, void *dst, int64_t n, const av_fp_format *fin,         \
                   const av_fp_format *fout) {                                             \
    UNUSED_FMT;                                                                            \
    const T *s = src;                                                                      \
    double *o = dst;                                                                       \
    for (int64_t i = 0; i < n; i++) o[i] = (double)s[i];                                   \
  }
LOAD_F64(lf_u8, uint8_t)
LOAD_F64(lf_s8, int8_t)
LOAD_F64(lf_s16, int16_t)
LOAD_F64(lf_s32, int32_t)
LOAD_F64(lf_s64, int64_t)
LOAD_F64(lf_u16, uint16_t)
LOAD_F64(lf_u32, uint32_t)
LOAD_F64(lf_u64, uint64_t)
LOAD_F64(lf_f32, float)
LOAD_F64(lf_f64, double)

static void lf_pred(const void *src, void *dst, int64_t n, const av_fp_format *fin,
                    const av_fp_format *fout) {
  UNUSED_FMT;
  const uint8_t *s = src;
  double *o = dst;
  for (int64_t i = 0; i < n; i++) o[i] = s[i] ? 1.0 : 0.0;
}
static void li_pred(const void *src, void *dst, int64_t n, const av_fp_format *fin,
                    const av_fp_format *fout) {
  UNUSED_FMT;
  const uint8_t *s = src;
  int64_t *o = dst;
  for (int64_t i = 0; i < n; i++) o[i] = s[i] != 0;
}
static void lf_bf16(const void *src, void *dst, int64_t n, const av_fp_format *fin,
                    const av_fp_format *fout) {
  UNUSED_FMT;
  const uint16_t *s = src;
  double *o = dst;
  for (int64_t i = 0; i < n; i++) o[i] = av_bf16_to_f32(s[i]);
}
static void lf_f16(const void *src, void *dst, int64_t n, const av_fp_format *fin,
                   const av_fp_format *fout) {
  UNUSED_FMT;
  const uint16_t *s = src;
  double *o = dst;
  for (int64_t i = 0; i < n; i++) o[i] = av_f16_to_f32(s[i]);
}
static void lf_narrow8(const void *src, void *dst, int64_t n, const av_fp_format *fin,
                       const av_fp_format *fout) {
  (void)fout;
  const uint8_t *s = src;
  double *o = dst;
  for (int64_t i = 0; i < n; i++) o[i] = av_fp_decode(s[i], fin);
}
static void lf_c64(const void *src, void *dst, int64_t n, const av_fp_format *fin,
                   const av_fp_format *fout) {
  UNUSED_FMT;
  const float *s = src;
  double *o = dst;
  for (int64_t i = 0; i < n; i++) o[i] = s[2 * i];
}
static void lf_c128(const void *src, void *dst, int64_t n, const av_fp_format *fin,
                    const av_fp_format *fout) {
  UNUSED_FMT;
  const double *s = src;
  double *o = dst;
  for (int64_t i = 0; i < n; i++) o[i] = s[2 * i];
}
static void lc_c64(const void *src, void *dst, int64_t n, const av_fp_format *fin,
                   const av_fp_format *fout) {
  UNUSED_FMT;
  const float *s = src;
  double *o = dst;
  for (int64_t i = 0; i < 2 * n; i++) o[i] = s[i];
}
static void lc_c128(const void *src, void *dst, int64_t n, const av_fp_format *fin,
                    const av_fp_format *fout) {
  UNUSED_FMT;
  memcpy(dst, src, (size_t)n * 16);
}

/* ---------------------------------------------------------------- storers */

#define STORE_I64(name, T)                                                                 \
  static void name(const void *src, void *dst, int64_t n, const av_fp_format *fin,         \
                   const av_fp_format *fout) {                                             \
    UNUSED_FMT;                                                                            \
    const int64_t *s = src;                                                                \
    T *o = dst;                                                                            \
    for (int64_t i = 0; i < n; i++) o[i] = (T)(uint64_t)s[i];                              \
  }
STORE_I64(si_s8, int8_t)
STORE_I64(si_s16, int16_t)
STORE_I64(si_s32, int32_t)
STORE_I64(si_s64, int64_t)
STORE_I64(si_u8, uint8_t)
STORE_I64(si_u16, uint16_t)
STORE_I64(si_u32, uint32_t)
STORE_I64(si_u64, uint64_t)

#define STORE_I64_SUB(name, BITS, SIGNED)                                                  \
  static void name(const void *src, void *dst, int64_t n, const av_fp_format *fin,         \
                   const av_fp_format *fout) {                                             \
    UNUSED_FMT;                                                                            \
    const int64_t *s = src;                                                                \
    uint8_t *o = dst;                                                                      \
    for (int64_t i = 0; i < n; i++) {                                                      \
      uint8_t v = (uint8_t)((uint64_t)s[i] & ((1u << BITS) - 1));                          \
      if (SIGNED && (v >> (BITS - 1)) & 1) v |= (uint8_t)(0xffu << BITS);                  \
      o[i] = v;                                                                            \
    }                                                                                      \
  }
STORE_I64_SUB(si_s1, 1, 1)
STORE_I64_SUB(si_s2, 2, 1)
STORE_I64_SUB(si_s4, 4, 1)
STORE_I64_SUB(si_u1, 1, 0)
STORE_I64_SUB(si_u2, 2, 0)
STORE_I64_SUB(si_u4, 4, 0)

static void si_pred(const void *src, void *dst, int64_t n, const av_fp_format *fin,
                    const av_fp_format *fout) {
  UNUSED_FMT;
  const int64_t *s = src;
  uint8_t *o = dst;
  for (int64_t i = 0; i < n; i++) o[i] = s[i] != 0;
}

/* Saturating float -> integer: NaN gives 0, out of range gives the nearest bound. */
#define STORE_F64_INT(name, T, LO, HI, TMIN, TMAX)                                         \
  static void name(const void *src, void *dst, int64_t n, const av_fp_format *fin,         \
                   const av_fp_format *fout) {                                             \
    UNUSED_FMT;                                                                            \
    const double *s = src;                                                                 \
    T *o = dst;                                                                            \
    for (int64_t i = 0; i < n; i++) {                                                      \
      double x = s[i];                                                                     \
      o[i] = isnan(x) ? (T)0 : x >= (HI) ? (T)(TMAX) : x <= (LO) ? (T)(TMIN) : (T)x;      \
    }                                                                                      \
  }
STORE_F64_INT(sf_s8, int8_t, -128.0, 128.0, -128, 127)
STORE_F64_INT(sf_s16, int16_t, -32768.0, 32768.0, INT16_MIN, INT16_MAX)
STORE_F64_INT(sf_s32, int32_t, -2147483648.0, 2147483648.0, INT32_MIN, INT32_MAX)
STORE_F64_INT(sf_s64, int64_t, -9223372036854775808.0, 9223372036854775808.0, INT64_MIN,
              INT64_MAX)
STORE_F64_INT(sf_u8, uint8_t, 0.0, 256.0, 0, UINT8_MAX)
STORE_F64_INT(sf_u16, uint16_t, 0.0, 65536.0, 0, UINT16_MAX)
STORE_F64_INT(sf_u32, uint32_t, 0.0, 4294967296.0, 0, UINT32_MAX)
STORE_F64_INT(sf_u64, uint64_t, 0.0, 18446744073709551616.0, 0, UINT64_MAX)
STORE_F64_INT(sf_s1, int8_t, -1.0, 1.0, -1, 0)
STORE_F64_INT(sf_s2, int8_t, -2.0, 2.0, -2, 1)
STORE_F64_INT(sf_s4, int8_t, -8.0, 8.0, -8, 7)
STORE_F64_INT(sf_u1, uint8_t, 0.0, 2.0, 0, 1)
STORE_F64_INT(sf_u2, uint8_t, 0.0, 4.0, 0, 3)
STORE_F64_INT(sf_u4, uint8_t, 0.0, 16.0, 0, 15)

static void sf_pred(const void *src, void *dst, int64_t n, const av_fp_format *fin,
                    const av_fp_format *fout) {
  UNUSED_FMT;
  const double *s = src;
  uint8_t *o = dst;
  for (int64_t i = 0; i < n; i++) o[i] = s[i] != 0;
}
static void sf_f32(const void *src, void *dst, int64_t n, const av_fp_format *fin,
                   const av_fp_format *fout) {
  UNUSED_FMT;
  const double *s = src;
  float *o = dst;
  for (int64_t i = 0; i < n; i++) o[i] = (float)s[i];
}
static void sf_f64(const void *src, void *dst, int64_t n, const av_fp_format *fin,
                   const av_fp_format *fout) {
  UNUSED_FMT;
  memcpy(dst, src, (size_t)n * 8);
}
static void sf_16(const void *src, void *dst, int64_t n, const av_fp_format *fin,
                  const av_fp_format *fout) {
  (void)fin;
  const double *s = src;
  uint16_t *o = dst;
  for (int64_t i = 0; i < n; i++) o[i] = (uint16_t)av_fp_encode(s[i], fout);
}
static void sf_narrow8(const void *src, void *dst, int64_t n, const av_fp_format *fin,
                       const av_fp_format *fout) {
  (void)fin;
  const double *s = src;
  uint8_t *o = dst;
  for (int64_t i = 0; i < n; i++) o[i] = (uint8_t)av_fp_encode(s[i], fout);
}
static void sf_c64(const void *src, void *dst, int64_t n, const av_fp_format *fin,
                   const av_fp_format *fout) {
  UNUSED_FMT;
  const double *s = src;
  float *o = dst;
  for (int64_t i = 0; i < n; i++) {
    o[2 * i] = (float)s[i];
    o[2 * i + 1] = 0;
  }
}
static void sf_c128(const void *src, void *dst, int64_t n, const av_fp_format *fin,
                    const av_fp_format *fout) {
  UNUSED_FMT;
  const double *s = src;
  double *o = dst;
  for (int64_t i = 0; i < n; i++) {
    o[2 * i] = s[i];
    o[2 * i + 1] = 0;
  }
}
static void sc_c64(const void *src, void *dst, int64_t n, const av_fp_format *fin,
                   const av_fp_format *fout) {
  UNUSED_FMT;
  const double *s = src;
  float *o = dst;
  for (int64_t i = 0; i < 2 * n; i++) o[i] = (float)s[i];
}
static void sc_c128(const void *src, void *dst, int64_t n, const av_fp_format *fin,
                    const av_fp_format *fout) {
  UNUSED_FMT;
  memcpy(dst, src, (size_t)n * 16);
}
static void sc_pred(const void *src, void *dst, int64_t n, const av_fp_format *fin,
                    const av_fp_format *fout) {
  UNUSED_FMT;
  const double *s = src;
  uint8_t *o = dst;
  for (int64_t i = 0; i < n; i++) o[i] = s[2 * i] != 0; /* the real part, as for ints */
}

/* Direct loops where going through double would round twice. */
static void d_s64_f32(const void *src, void *dst, int64_t n, const av_fp_format *fin,
                      const av_fp_format *fout) {
  UNUSED_FMT;
  const int64_t *s = src;
  float *o = dst;
  for (int64_t i = 0; i < n; i++) o[i] = (float)s[i];
}
static void d_u64_f32(const void *src, void *dst, int64_t n, const av_fp_format *fin,
                      const av_fp_format *fout) {
  UNUSED_FMT;
  const uint64_t *s = src;
  float *o = dst;
  for (int64_t i = 0; i < n; i++) o[i] = (float)s[i];
}
/* bf16 <-> f32 in wide-vector clones: every bf16 elementwise op and fused chain widens its
 * operands and narrows its result through these (integer bit operations, so the same results
 * in every copy). */
AV_CLONES static void d_f32_bf16(const void *src, void *dst, int64_t n, const av_fp_format *fin,
                                 const av_fp_format *fout) {
  UNUSED_FMT;
  const float *s = src;
  uint16_t *o = dst;
  for (int64_t i = 0; i < n; i++) o[i] = av_f32_to_bf16(s[i]);
}
AV_CLONES static void d_bf16_f32(const void *src, void *dst, int64_t n, const av_fp_format *fin,
                                 const av_fp_format *fout) {
  UNUSED_FMT;
  const uint16_t *s = src;
  float *o = dst;
  for (int64_t i = 0; i < n; i++) o[i] = av_bf16_to_f32(s[i]);
}
static void d_f32_f16(const void *src, void *dst, int64_t n, const av_fp_format *fin,
                      const av_fp_format *fout) {
  UNUSED_FMT;
  const float *s = src;
  uint16_t *o = dst;
  for (int64_t i = 0; i < n; i++) o[i] = av_f32_to_f16(s[i]);
}
static void d_f16_f32(const void *src, void *dst, int64_t n, const av_fp_format *fin,
                      const av_fp_format *fout) {
  UNUSED_FMT;
  const uint16_t *s = src;
  float *o = dst;
  for (int64_t i = 0; i < n; i++) o[i] = av_f16_to_f32(s[i]);
}

/* ----------------------------------------------------------- route choice */

static av_convert_loop int_loader(av_dtype t) {
  switch (t) {
    case AV_DT_PRED: return li_pred;
    case AV_DT_S1: case AV_DT_S2: case AV_DT_S4: case AV_DT_S8: return li_s8;
    case AV_DT_S16: return li_s16;
    case AV_DT_S32: return li_s32;
    case AV_DT_S64: return li_s64;
    case AV_DT_U1: case AV_DT_U2: case AV_DT_U4: case AV_DT_U8: return li_u8;
    case AV_DT_U16: return li_u16;
    case AV_DT_U32: return li_u32;
    case AV_DT_U64: return li_u64;
    default: return NULL;
  }
}

static av_convert_loop int_storer(av_dtype t) {
  switch (t) {
    case AV_DT_PRED: return si_pred;
    case AV_DT_S1: return si_s1;
    case AV_DT_S2: return si_s2;
    case AV_DT_S4: return si_s4;
    case AV_DT_S8: return si_s8;
    case AV_DT_S16: return si_s16;
    case AV_DT_S32: return si_s32;
    case AV_DT_S64: return si_s64;
    case AV_DT_U1: return si_u1;
    case AV_DT_U2: return si_u2;
    case AV_DT_U4: return si_u4;
    case AV_DT_U8: return si_u8;
    case AV_DT_U16: return si_u16;
    case AV_DT_U32: return si_u32;
    case AV_DT_U64: return si_u64;
    default: return NULL;
  }
}

static av_convert_loop real_loader(av_dtype t) {
  switch (t) {
    case AV_DT_PRED: return lf_pred;
    case AV_DT_S1: case AV_DT_S2: case AV_DT_S4: case AV_DT_S8: return lf_s8;
    case AV_DT_S16: return lf_s16;
    case AV_DT_S32: return lf_s32;
    case AV_DT_S64: return lf_s64;
    case AV_DT_U1: case AV_DT_U2: case AV_DT_U4: case AV_DT_U8: return lf_u8;
    case AV_DT_U16: return lf_u16;
    case AV_DT_U32: return lf_u32;
    case AV_DT_U64: return lf_u64;
    case AV_DT_F32: return lf_f32;
    case AV_DT_F64: return lf_f64;
    case AV_DT_BF16: return lf_bf16;
    case AV_DT_F16: return lf_f16;
    case AV_DT_C64: return lf_c64;
    case AV_DT_C128: return lf_c128;
    default: return av_dtype_is_float(t) && av_dtype_size(t) == 1 ? lf_narrow8 : NULL;
  }
}

static av_convert_loop real_storer(av_dtype t) {
  switch (t) {
    case AV_DT_PRED: return sf_pred;
    case AV_DT_S1: return sf_s1;
    case AV_DT_S2: return sf_s2;
    case AV_DT_S4: return sf_s4;
    case AV_DT_S8: return sf_s8;
    case AV_DT_S16: return sf_s16;
    case AV_DT_S32: return sf_s32;
    case AV_DT_S64: return sf_s64;
    case AV_DT_U1: return sf_u1;
    case AV_DT_U2: return sf_u2;
    case AV_DT_U4: return sf_u4;
    case AV_DT_U8: return sf_u8;
    case AV_DT_U16: return sf_u16;
    case AV_DT_U32: return sf_u32;
    case AV_DT_U64: return sf_u64;
    case AV_DT_F32: return sf_f32;
    case AV_DT_F64: return sf_f64;
    case AV_DT_BF16: case AV_DT_F16: return sf_16;
    case AV_DT_C64: return sf_c64;
    case AV_DT_C128: return sf_c128;
    default: return av_dtype_is_float(t) && av_dtype_size(t) == 1 ? sf_narrow8 : NULL;
  }
}

bool av_convert_prepare(av_dtype from, av_dtype to, av_convert *c) {
  memset(c, 0, sizeof *c);
  c->from = from;
  c->to = to;
  c->from_size = av_dtype_size(from);
  c->to_size = av_dtype_size(to);
  if (c->from_size == 0 || c->to_size == 0) return false;
  av_fp_format_of(from, &c->fin);
  av_fp_format_of(to, &c->fout);
  if (from == to) {
    c->route = AV_CONV_COPY;
    return true;
  }
  c->route = AV_CONV_DIRECT;
  if (from == AV_DT_S64 && to == AV_DT_F32) c->direct = d_s64_f32;
  if (from == AV_DT_U64 && to == AV_DT_F32) c->direct = d_u64_f32;
  if (from == AV_DT_F32 && to == AV_DT_BF16) c->direct = d_f32_bf16;
  if (from == AV_DT_BF16 && to == AV_DT_F32) c->direct = d_bf16_f32;
  if (from == AV_DT_F32 && to == AV_DT_F16) c->direct = d_f32_f16;
  if (from == AV_DT_F16 && to == AV_DT_F32) c->direct = d_f16_f32;
  if (c->direct) return true;
  bool fint = from == AV_DT_PRED || av_dtype_is_int(from);
  bool tint = to == AV_DT_PRED || av_dtype_is_int(to);
  if (fint && tint) {
    c->route = AV_CONV_INT;
    c->load = int_loader(from);
    c->store = int_storer(to);
  } else if (av_dtype_is_complex(to) || (av_dtype_is_complex(from) && to == AV_DT_PRED)) {
    c->route = AV_CONV_CPLX;
    c->load = from == AV_DT_C64 ? lc_c64 : from == AV_DT_C128 ? lc_c128 : real_loader(from);
    c->store = to == AV_DT_C64 ? sc_c64 : to == AV_DT_C128 ? sc_c128 : sc_pred;
  } else {
    c->route = AV_CONV_REAL;
    c->load = real_loader(from);
    c->store = real_storer(to);
  }
  return c->load && c->store;
}

void av_convert_run(const av_convert *c, const void *src, void *dst, int64_t n) {
  const char *s = src;
  char *o = dst;
  switch (c->route) {
    case AV_CONV_COPY:
      if (n > 0) memmove(dst, src, (size_t)n * c->from_size);
      return;
    case AV_CONV_DIRECT:
      c->direct(src, dst, n, &c->fin, &c->fout);
      return;
    default: break;
  }
  /* int64 patterns or doubles, depending on the route */
  union {
    double d[2 * CHUNK];
    int64_t i[2 * CHUNK];
  } u;
  double *buf = u.d;
  double re[CHUNK];
  bool cplx_from_real = c->route == AV_CONV_CPLX && !av_dtype_is_complex(c->from);
  for (int64_t i = 0; i < n; i += CHUNK) {
    int64_t m = n - i < CHUNK ? n - i : CHUNK;
    const void *sp = s + (size_t)i * c->from_size;
    void *op = o + (size_t)i * c->to_size;
    if (cplx_from_real) {
      c->load(sp, re, m, &c->fin, &c->fout);
      for (int64_t k = 0; k < m; k++) {
        buf[2 * k] = re[k];
        buf[2 * k + 1] = 0;
      }
    } else {
      c->load(sp, buf, m, &c->fin, &c->fout);
    }
    c->store(buf, op, m, &c->fin, &c->fout);
  }
}
