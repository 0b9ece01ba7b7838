#include "compiler/attrs.h"

#include <ctype.h>
#include <string.h>

#include "runtime/kernels/shape.h"

static bool dense_int_at(const av_attr *a, size_t i, int64_t *v) {
  if (!a->type || a->type->kind != AV_TYPE_TENSOR) return false;
  av_dtype dt = a->type->dtype;
  size_t es = av_dtype_size(dt);
  if (es == 0 || (!av_dtype_is_int(dt) && dt != AV_DT_PRED)) return false;
  size_t off = a->u.dense.splat ? 0 : i * es;
  if (off + es > a->u.dense.size) return false;
  const unsigned char *p = (const unsigned char *)a->u.dense.data + off;
  bool sgn = av_dtype_is_signed_int(dt);
  switch (es) {
    case 1: { int8_t s; uint8_t u; memcpy(&s, p, 1); memcpy(&u, p, 1); *v = sgn ? s : u; return true; }
    case 2: { int16_t s; uint16_t u; memcpy(&s, p, 2); memcpy(&u, p, 2); *v = sgn ? s : u; return true; }
    case 4: { int32_t s; uint32_t u; memcpy(&s, p, 4); memcpy(&u, p, 4); *v = sgn ? s : (int64_t)u; return true; }
    case 8: memcpy(v, p, 8); return true;
    default: return false;
  }
}

bool av_attr_ints_of(const av_attr *a, int64_t *out, size_t cap, size_t *n) {
  if (!a) return false;
  switch (a->kind) {
    case AV_ATTR_INTS:
      if (a->u.ints.n > cap) return false;
      if (a->u.ints.n) memcpy(out, a->u.ints.v, a->u.ints.n * sizeof *out);
      *n = a->u.ints.n;
      return true;
    case AV_ATTR_DENSE: {
      int64_t cnt = av_type_num_elements(a->type);
      if (cnt < 0 || (size_t)cnt > cap) return false;
      for (int64_t i = 0; i < cnt; i++)
        if (!dense_int_at(a, (size_t)i, &out[i])) return false;
      *n = (size_t)cnt;
      return true;
    }
    case AV_ATTR_ARRAY:
      if (a->u.array.n > cap) return false;
      for (size_t i = 0; i < a->u.array.n; i++) {
        const av_attr *it = a->u.array.items[i];
        if (!it || it->kind != AV_ATTR_INT) return false;
        out[i] = it->u.i;
      }
      *n = a->u.array.n;
      return true;
    default:
      return false;
  }
}

bool av_attr_get_ints(const av_op *op, const char *name, int64_t *out, size_t cap, size_t *n) {
  return av_attr_ints_of(av_op_attr(op, name), out, cap, n);
}

bool av_attr_get_int(const av_op *op, const char *name, int64_t *v) {
  const av_attr *a = av_op_attr(op, name);
  if (!a) return false;
  if (a->kind == AV_ATTR_INT) {
    *v = a->u.i;
    return true;
  }
  if (a->kind == AV_ATTR_BOOL) {
    *v = a->u.b;
    return true;
  }
  int64_t buf[1];
  size_t n;
  if (av_attr_ints_of(a, buf, 1, &n) && n == 1) {
    *v = buf[0];
    return true;
  }
  return false;
}

bool av_attr_get_bools(const av_op *op, const char *name, bool *out, size_t cap, size_t *n) {
  const av_attr *a = av_op_attr(op, name);
  if (!a) return false;
  if (a->kind == AV_ATTR_BOOLS) {
    if (a->u.bools.n > cap) return false;
    if (a->u.bools.n) memcpy(out, a->u.bools.v, a->u.bools.n * sizeof *out);
    *n = a->u.bools.n;
    return true;
  }
  if (a->kind == AV_ATTR_ARRAY) {
    if (a->u.array.n > cap) return false;
    for (size_t i = 0; i < a->u.array.n; i++) {
      const av_attr *it = a->u.array.items[i];
      if (!it || (it->kind != AV_ATTR_BOOL && it->kind != AV_ATTR_INT)) return false;
      out[i] = it->kind == AV_ATTR_BOOL ? it->u.b : it->u.i != 0;
    }
    *n = a->u.array.n;
    return true;
  }
  int64_t tmp[64];
  if (cap > 64 || !av_attr_ints_of(a, tmp, cap, n)) return false;
  for (size_t i = 0; i < *n; i++) out[i] = tmp[i] != 0;
  return true;
}

bool av_attr_get_bool(const av_op *op, const char *name, bool *v) {
  const av_attr *a = av_op_attr(op, name);
  if (!a) return false;
  if (a->kind == AV_ATTR_BOOL) {
    *v = a->u.b;
    return true;
  }
  if (a->kind == AV_ATTR_UNIT) {
    *v = true;
    return true;
  }
  int64_t i;
  if (!av_attr_get_int(op, name, &i)) return false;
  *v = i != 0;
  return true;
}

bool av_attr_get_enum(const av_op *op, const char *name, char *buf, size_t cap) {
  const av_attr *a = av_op_attr(op, name);
  if (!a || cap == 0) return false;
  if (a->kind != AV_ATTR_ENUM && a->kind != AV_ATTR_STRING && a->kind != AV_ATTR_OPAQUE)
    return false;
  const char *s = a->u.str.s;
  size_t len = a->u.str.len;
  /* `#stablehlo<comparison_direction LT>`: take the last identifier */
  size_t end = len;
  while (end > 0 && !isalnum((unsigned char)s[end - 1]) && s[end - 1] != '_') end--;
  size_t start = end;
  while (start > 0 && (isalnum((unsigned char)s[start - 1]) || s[start - 1] == '_')) start--;
  size_t n = end - start;
  if (n + 1 > cap) return false;
  memcpy(buf, s + start, n);
  buf[n] = '\0';
  return n > 0;
}

bool av_const_operand_ints(const av_value *v, int64_t *out, size_t cap, size_t *n) {
  if (!v->def || v->def->code != AV_OP_CONSTANT) return false;
  return av_attr_ints_of(av_op_attr(v->def, "value"), out, cap, n);
}

const char *av_attr_get_str(const av_op *op, const char *name) {
  const av_attr *a = av_op_attr(op, name);
  if (!a) return NULL;
  if (a->kind != AV_ATTR_STRING && a->kind != AV_ATTR_SYMBOL && a->kind != AV_ATTR_ENUM)
    return NULL;
  const char *s = a->u.str.s;
  return s[0] == '@' ? s + 1 : s;
}

const av_attr *av_op_dense_attr(const av_op *op) {
  const av_attr *a = av_op_attr(op, "value");
  for (uint32_t i = 0; !a && i < op->nattrs; i++)
    if (op->attrs[i].value && op->attrs[i].value->kind == AV_ATTR_DENSE) a = op->attrs[i].value;
  return a;
}

bool av_attr_dense_copy(const av_attr *a, av_dtype dt, int64_t n, void *dst) {
  size_t es = av_dtype_size(dt), bytes = (size_t)n * es;
  if (!a || a->kind != AV_ATTR_DENSE || n < 0 || es == 0) return false;
  if (a->type && a->type->kind == AV_TYPE_TENSOR && a->type->dtype != dt) return false;
  /* a splat holds one element; one element for many is a splat too */
  bool splat = a->u.dense.splat && !(n == 1 && a->u.dense.size == es);
  if (splat ? a->u.dense.size != es : a->u.dense.size != bytes) {
    if (!(a->u.dense.size == es && n != 1)) return false;
    splat = true;
  }
  if (splat)
    av_fill(dst, n, a->u.dense.data, es);
  else if (bytes)
    memcpy(dst, a->u.dense.data, bytes);
  return true;
}
