#include "ir/attr_util.h"

#include <string.h>

static bool dense_elem(const av_attr *a, size_t i, int64_t *v) {
  av_dtype dt = a->type->dtype;
  size_t es = av_dtype_size(dt);
  const unsigned char *p = (const unsigned char *)a->u.dense.data + (a->u.dense.splat ? 0 : i * es);
  switch (dt) {
    case AV_DT_PRED:
    case AV_DT_U1: case AV_DT_U2: case AV_DT_U4: case AV_DT_U8: *v = *p; return true;
    case AV_DT_S1: case AV_DT_S2: case AV_DT_S4: case AV_DT_S8: *v = (int8_t)*p; return true;
    case AV_DT_S16: { int16_t x; memcpy(&x, p, 2); *v = x; return true; }
    case AV_DT_U16: { uint16_t x; memcpy(&x, p, 2); *v = x; return true; }
    case AV_DT_S32: { int32_t x; memcpy(&x, p, 4); *v = x; return true; }
    case AV_DT_U32: { uint32_t x; memcpy(&x, p, 4); *v = x; return true; }
    case AV_DT_S64:
    case AV_DT_U64: { int64_t x; memcpy(&x, p, 8); *v = x; return true; }
    default: return false;
  }
}

int64_t av_attr_i64s_count(const av_attr *a) {
  if (!a) return -1;
  switch (a->kind) {
    case AV_ATTR_INTS: return (int64_t)a->u.ints.n;
    case AV_ATTR_BOOLS: return (int64_t)a->u.bools.n;
    case AV_ATTR_INT: return 1;
    case AV_ATTR_ARRAY:
      for (size_t i = 0; i < a->u.array.n; i++) {
        const av_attr *e = a->u.array.items[i];
        if (!e || (e->kind != AV_ATTR_INT && e->kind != AV_ATTR_BOOL)) return -1;
      }
      return (int64_t)a->u.array.n;
    case AV_ATTR_DENSE: {
      if (!a->type || a->type->kind != AV_TYPE_TENSOR) return -1;
      av_dtype dt = a->type->dtype;
      if (!av_dtype_is_int(dt) && dt != AV_DT_PRED) return -1;
      return av_type_num_elements(a->type);
    }
    default: return -1;
  }
}

bool av_attr_as_i64s(const av_attr *a, int64_t *out, size_t cap, size_t *n) {
  int64_t count = av_attr_i64s_count(a);
  if (count < 0 || (uint64_t)count > cap) return false;
  for (int64_t i = 0; i < count; i++) {
    switch (a->kind) {
      case AV_ATTR_INTS: out[i] = a->u.ints.v[i]; break;
      case AV_ATTR_BOOLS: out[i] = a->u.bools.v[i]; break;
      case AV_ATTR_INT: out[i] = a->u.i; break;
      case AV_ATTR_ARRAY: {
        const av_attr *e = a->u.array.items[i];
        out[i] = e->kind == AV_ATTR_INT ? e->u.i : e->u.b;
        break;
      }
      case AV_ATTR_DENSE:
        if (!dense_elem(a, (size_t)i, &out[i])) return false;
        break;
      default: return false;
    }
  }
  *n = (size_t)count;
  return true;
}
