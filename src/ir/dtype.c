#include "ir/dtype.h"

#include <string.h>

typedef struct dtype_info {
  const char *mlir;
  unsigned char size;
  unsigned char bits;
  char klass; /* 'p' pred, 's' signed, 'u' unsigned, 'f' float, 'c' complex */
} dtype_info;

static const dtype_info kInfo[AV_DT_COUNT] = {
    [AV_DT_INVALID] = {"<invalid>", 0, 0, '?'},
    [AV_DT_PRED] = {"i1", 1, 1, 'p'},
    [AV_DT_S1] = {"si1", 1, 1, 's'},
    [AV_DT_S2] = {"i2", 1, 2, 's'},
    [AV_DT_S4] = {"i4", 1, 4, 's'},
    [AV_DT_S8] = {"i8", 1, 8, 's'},
    [AV_DT_S16] = {"i16", 2, 16, 's'},
    [AV_DT_S32] = {"i32", 4, 32, 's'},
    [AV_DT_S64] = {"i64", 8, 64, 's'},
    [AV_DT_U1] = {"ui1", 1, 1, 'u'},
    [AV_DT_U2] = {"ui2", 1, 2, 'u'},
    [AV_DT_U4] = {"ui4", 1, 4, 'u'},
    [AV_DT_U8] = {"ui8", 1, 8, 'u'},
    [AV_DT_U16] = {"ui16", 2, 16, 'u'},
    [AV_DT_U32] = {"ui32", 4, 32, 'u'},
    [AV_DT_U64] = {"ui64", 8, 64, 'u'},
    [AV_DT_F4E2M1FN] = {"f4E2M1FN", 1, 4, 'f'},
    [AV_DT_F6E2M3FN] = {"f6E2M3FN", 1, 6, 'f'},
    [AV_DT_F6E3M2FN] = {"f6E3M2FN", 1, 6, 'f'},
    [AV_DT_F8E3M4] = {"f8E3M4", 1, 8, 'f'},
    [AV_DT_F8E4M3] = {"f8E4M3", 1, 8, 'f'},
    [AV_DT_F8E4M3FN] = {"f8E4M3FN", 1, 8, 'f'},
    [AV_DT_F8E4M3FNUZ] = {"f8E4M3FNUZ", 1, 8, 'f'},
    [AV_DT_F8E4M3B11FNUZ] = {"f8E4M3B11FNUZ", 1, 8, 'f'},
    [AV_DT_F8E5M2] = {"f8E5M2", 1, 8, 'f'},
    [AV_DT_F8E5M2FNUZ] = {"f8E5M2FNUZ", 1, 8, 'f'},
    [AV_DT_F8E8M0FNU] = {"f8E8M0FNU", 1, 8, 'f'},
    [AV_DT_BF16] = {"bf16", 2, 16, 'f'},
    [AV_DT_F16] = {"f16", 2, 16, 'f'},
    [AV_DT_F32] = {"f32", 4, 32, 'f'},
    [AV_DT_F64] = {"f64", 8, 64, 'f'},
    [AV_DT_C64] = {"complex<f32>", 8, 64, 'c'},
    [AV_DT_C128] = {"complex<f64>", 16, 128, 'c'},
};

static const dtype_info *info(av_dtype t) {
  return (unsigned)t < AV_DT_COUNT ? &kInfo[t] : &kInfo[AV_DT_INVALID];
}

size_t av_dtype_size(av_dtype t) { return info(t)->size; }
int av_dtype_bits(av_dtype t) { return info(t)->bits; }
bool av_dtype_is_signed_int(av_dtype t) { return info(t)->klass == 's'; }
bool av_dtype_is_unsigned_int(av_dtype t) { return info(t)->klass == 'u'; }
bool av_dtype_is_int(av_dtype t) { return info(t)->klass == 's' || info(t)->klass == 'u'; }
bool av_dtype_is_float(av_dtype t) { return info(t)->klass == 'f'; }
bool av_dtype_is_complex(av_dtype t) { return info(t)->klass == 'c'; }
const char *av_dtype_mlir_name(av_dtype t) { return info(t)->mlir; }

av_dtype av_dtype_from_mlir_name(const char *s, size_t len) {
  /* VHLO/builtin spell signed ints "si32" as well as "i32"; both mean the same here. */
  if (len > 2 && s[0] == 's' && s[1] == 'i' && s[2] >= '0' && s[2] <= '9') {
    s++;
    len--;
    if (len == 2 && s[1] == '1') return AV_DT_S1;
  }
  for (int t = AV_DT_PRED; t < AV_DT_COUNT; t++) {
    const char *name = kInfo[t].mlir;
    if (strlen(name) == len && memcmp(name, s, len) == 0) return (av_dtype)t;
  }
  return AV_DT_INVALID;
}

bool av_dtype_host_differs(av_dtype t) { return av_dtype_is_signed_int(t) && av_dtype_bits(t) < 8; }

void av_subbyte_host_to_storage(av_dtype t, void *data, size_t n) {
  if (!av_dtype_host_differs(t)) return;
  int shift = 8 - av_dtype_bits(t);
  signed char *p = data;
  /* shift as unsigned (a negative value shifted left is undefined), then back arithmetically */
  for (size_t i = 0; i < n; i++)
    p[i] = (signed char)((signed char)(((unsigned char)p[i] << shift) & 0xff) >> shift);
}

void av_subbyte_storage_to_host(av_dtype t, void *data, size_t n) {
  if (!av_dtype_host_differs(t)) return;
  unsigned char mask = (unsigned char)((1u << av_dtype_bits(t)) - 1);
  unsigned char *p = data;
  for (size_t i = 0; i < n; i++) p[i] &= mask;
}
