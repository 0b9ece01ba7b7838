/* stablehlo.compare loops (pred result) and select. */
#include <complex.h>
#include <string.h>

#include "runtime/kernels/elementwise.h"

#define CMP_LOOP(name, T, KT, KEY, OPR)                                                    \
  static void name(const void *const *in, void *out, int64_t n, const void *aux) {         \
    (void)aux;                                                                             \
    const T *a = in[0], *b = in[1];                                                        \
    uint8_t *o = out;                                                                      \
    for (int64_t i = 0; i < n; i++) {                                                      \
      KT x = KEY(a[i]), y = KEY(b[i]);                                                     \
      o[i] = x OPR y;                                                                      \
    }                                                                                      \
  }

#define ID(v) (v)
/* Total order on floats: -NaN < -Inf < ... < -0 < +0 < ... < +Inf < +NaN, by mapping the
 * bits to integers whose order is that one. */
static inline int32_t key_f32(float v) {
  int32_t b;
  memcpy(&b, &v, sizeof b);
  return b < 0 ? b ^ INT32_MAX : b;
}
static inline int64_t key_f64(double v) {
  int64_t b;
  memcpy(&b, &v, sizeof b);
  return b < 0 ? b ^ INT64_MAX : b;
}

#define CMP_ALL(S, T, KT, KEY)                                                             \
  CMP_LOOP(eq_##S, T, KT, KEY, ==)                                                         \
  CMP_LOOP(ne_##S, T, KT, KEY, !=)                                                         \
  CMP_LOOP(lt_##S, T, KT, KEY, <)                                                          \
  CMP_LOOP(le_##S, T, KT, KEY, <=)                                                         \
  CMP_LOOP(gt_##S, T, KT, KEY, >)                                                          \
  CMP_LOOP(ge_##S, T, KT, KEY, >=)                                                         \
  static const av_ew_fn cmp_##S[6] = {eq_##S, ne_##S, lt_##S, le_##S, gt_##S, ge_##S};

CMP_ALL(s8, int8_t, int8_t, ID)
CMP_ALL(s16, int16_t, int16_t, ID)
CMP_ALL(s32, int32_t, int32_t, ID)
CMP_ALL(s64, int64_t, int64_t, ID)
CMP_ALL(u8, uint8_t, uint8_t, ID)
CMP_ALL(u16, uint16_t, uint16_t, ID)
CMP_ALL(u32, uint32_t, uint32_t, ID)
CMP_ALL(u64, uint64_t, uint64_t, ID)
CMP_ALL(f32, float, float, ID)
CMP_ALL(f64, double, double, ID)
CMP_ALL(t32, float, int32_t, key_f32)
CMP_ALL(t64, double, int64_t, key_f64)

CMP_LOOP(eq_c64, float complex, float complex, ID, ==)
CMP_LOOP(ne_c64, float complex, float complex, ID, !=)
CMP_LOOP(eq_c128, double complex, double complex, ID, ==)
CMP_LOOP(ne_c128, double complex, double complex, ID, !=)

av_ew_fn av_ew_compare_fn(av_dtype t, av_cmp_dir dir, av_cmp_type ctype) {
  if ((unsigned)dir > AV_CMP_GE) return NULL;
  switch (t) {
    case AV_DT_PRED:
    case AV_DT_U8: return cmp_u8[dir];
    case AV_DT_S8: return cmp_s8[dir];
    case AV_DT_S16: return cmp_s16[dir];
    case AV_DT_S32: return cmp_s32[dir];
    case AV_DT_S64: return cmp_s64[dir];
    case AV_DT_U16: return cmp_u16[dir];
    case AV_DT_U32: return cmp_u32[dir];
    case AV_DT_U64: return cmp_u64[dir];
    case AV_DT_F32: return ctype == AV_CMP_TOTALORDER ? cmp_t32[dir] : cmp_f32[dir];
    case AV_DT_F64: return ctype == AV_CMP_TOTALORDER ? cmp_t64[dir] : cmp_f64[dir];
    case AV_DT_C64: return dir == AV_CMP_EQ ? eq_c64 : dir == AV_CMP_NE ? ne_c64 : NULL;
    case AV_DT_C128: return dir == AV_CMP_EQ ? eq_c128 : dir == AV_CMP_NE ? ne_c128 : NULL;
    default: return NULL;
  }
}

#define SELECT_LOOP(T)                                                                     \
  {                                                                                        \
    const T *x = a, *y = b;                                                                \
    T *o = out;                                                                            \
    for (int64_t i = 0; i < n; i++) { /* both loaded, picked by mask: the loop vectorises */ \
      T xv = x[i], yv = y[i], m = (T)((T)0 - (T)(pred[i] != 0));                           \
      o[i] = (T)((xv & m) | (yv & (T)~m));                                                 \
    }                                                                                      \
    return;                                                                                \
  }

void av_select_run(const uint8_t *pred, const void *a, const void *b, void *out, int64_t n,
                   size_t elem_size) {
  switch (elem_size) {
    case 1: SELECT_LOOP(uint8_t)
    case 2: SELECT_LOOP(uint16_t)
    case 4: SELECT_LOOP(uint32_t)
    case 8: SELECT_LOOP(uint64_t)
    default: break;
  }
  const char *x = a, *y = b;
  char *o = out;
  for (int64_t i = 0; i < n; i++)
    memmove(o + (size_t)i * elem_size, (pred[i] ? x : y) + (size_t)i * elem_size, elem_size);
}

void av_ew_select(const void *const *in, void *out, int64_t n, const void *aux) {
  const av_ew_kernel *k = aux;
  av_select_run(in[0], in[1], in[2], out, n, k->out_size);
}
