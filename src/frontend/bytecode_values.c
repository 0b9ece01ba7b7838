/* Helpers shared by the dialect decoders: element/tensor type construction, dense element data
 * conversion (MLIR raw layout -> anvil storage), APInt/APFloat payloads, and a bounded text
 * renderer for attributes kept as text (locations, sdy attributes, unknown dialects). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "frontend/bytecode_internal.h"

const bc_type_slot *bc_elem_slot(bc_reader *r, av_dtype dt, const char *text) {
  bc_type_slot *s = av_arena_alloc(&r->m->arena, sizeof *s);
  if (!s) return NULL;
  if (dt != AV_DT_INVALID) {
    s->t = av_type_tensor(r->m, dt, 0, NULL);
  } else {
    s->t = bc_other_type(r, text, strlen(text));
  }
  s->elem = true;
  return s->t ? s : NULL;
}

const av_type *bc_other_type(bc_reader *r, const char *text, size_t len) {
  av_type *t = av_arena_alloc(&r->m->arena, sizeof *t);
  if (!t) return NULL;
  t->kind = AV_TYPE_OTHER;
  t->text = av_arena_strndup(&r->m->arena, text, len);
  return t->text ? t : NULL;
}

const av_type *bc_tensor_type(bc_reader *r, const bc_type_slot *elem, int rank,
                              const int64_t *dims, const av_attr *encoding) {
  if (elem->t->kind == AV_TYPE_TENSOR) {
    av_type *t = (av_type *)(elem->t->quant
                                 ? av_type_quantized(r->m, elem->t->dtype, rank, dims, elem->t->quant)
                                 : av_type_tensor(r->m, elem->t->dtype, rank, dims));
    if (t) t->encoding = encoding;
    return t;
  }
  /* Element type anvil has no dtype for (quantized, index-like extensions, none ...). */
  char buf[256];
  bc_text tx = {buf, 0, sizeof buf};
  bc_text_put(&tx, "tensor<", 7);
  for (int i = 0; i < rank; i++) {
    if (dims[i] < 0)
      bc_text_put(&tx, "?x", 2);
    else
      bc_text_printf(&tx, "%lldx", (long long)dims[i]);
  }
  const char *et = elem->t->text ? elem->t->text : "?";
  bc_text_printf(&tx, "%s>", et);
  av_type *t = (av_type *)bc_other_type(r, tx.buf, tx.len);
  if (!t) return NULL;
  t->dtype = elem->t->dtype;
  t->rank = rank;
  if (rank > 0) {
    int64_t *d = av_arena_memdup(&r->m->arena, dims, sizeof(int64_t) * (size_t)rank);
    if (!d) return NULL;
    t->dims = d;
  }
  t->encoding = encoding;
  return t;
}

/* ------------------------------------------------------------- numbers */

bool bc_read_apint(bc_reader *r, bc_cursor *c, unsigned width, uint64_t *bits) {
  if (width <= 8) {
    uint8_t b;
    if (!bc_read_u8(c, &b)) return bc_fail(r, c, "truncated integer");
    *bits = b;
  } else if (width <= 64) {
    int64_t v;
    if (!bc_read_svarint(c, &v)) return bc_fail(r, c, "truncated integer");
    memcpy(bits, &v, sizeof v);
  } else {
    uint64_t nwords;
    if (!bc_read_varint(c, &nwords) || nwords > bc_remaining(c))
      return bc_fail(r, c, "bad wide integer");
    *bits = 0;
    for (uint64_t i = 0; i < nwords; i++) {
      int64_t w;
      if (!bc_read_svarint(c, &w)) return bc_fail(r, c, "truncated wide integer");
      if (i == 0) memcpy(bits, &w, sizeof w); /* keeps the low 64 bits */
    }
    return true;
  }
  if (width < 64) *bits &= (UINT64_C(1) << width) - 1;
  return true;
}

unsigned bc_float_width(av_dtype dt) {
  switch (dt) {
    case AV_DT_F4E2M1FN: return 4;
    case AV_DT_F6E2M3FN:
    case AV_DT_F6E3M2FN: return 6;
    case AV_DT_BF16:
    case AV_DT_F16: return 16;
    case AV_DT_F32: return 32;
    case AV_DT_F64: return 64;
    default: return av_dtype_is_float(dt) ? 8 : 0;
  }
}

/* Generic small float: `e` exponent bits, `m` mantissa bits, `bias`; specials handled by caller. */
static double minifloat(uint64_t bits, int e, int m, int bias) {
  int sign = (int)((bits >> (e + m)) & 1);
  int exp = (int)((bits >> m) & ((1u << e) - 1));
  double man = (double)(bits & ((1u << m) - 1));
  double v = exp == 0 ? ldexp(man, 1 - bias - m) : ldexp(1.0 + man / (double)(1u << m), exp - bias);
  return sign ? -v : v;
}

double bc_float_from_bits(av_dtype dt, uint64_t bits) {
  switch (dt) {
    case AV_DT_F64: {
      double d;
      memcpy(&d, &bits, sizeof d);
      return d;
    }
    case AV_DT_F32: {
      uint32_t u = (uint32_t)bits;
      float f;
      memcpy(&f, &u, sizeof f);
      return f;
    }
    case AV_DT_BF16: {
      uint32_t u = (uint32_t)(bits & 0xFFFF) << 16;
      float f;
      memcpy(&f, &u, sizeof f);
      return f;
    }
    case AV_DT_F16:
      if (((bits >> 10) & 0x1F) == 0x1F)
        return (bits & 0x3FF) ? NAN : ((bits & 0x8000) ? -INFINITY : INFINITY);
      return minifloat(bits, 5, 10, 15);
    case AV_DT_F8E5M2:
      if (((bits >> 2) & 0x1F) == 0x1F)
        return (bits & 3) ? NAN : ((bits & 0x80) ? -INFINITY : INFINITY);
      return minifloat(bits, 5, 2, 15);
    case AV_DT_F8E4M3:
      if (((bits >> 3) & 0xF) == 0xF)
        return (bits & 7) ? NAN : ((bits & 0x80) ? -INFINITY : INFINITY);
      return minifloat(bits, 4, 3, 7);
    case AV_DT_F8E3M4:
      if (((bits >> 4) & 0x7) == 0x7)
        return (bits & 15) ? NAN : ((bits & 0x80) ? -INFINITY : INFINITY);
      return minifloat(bits, 3, 4, 3);
    case AV_DT_F8E4M3FN:
      if ((bits & 0x7F) == 0x7F) return NAN;
      return minifloat(bits, 4, 3, 7);
    case AV_DT_F8E4M3FNUZ:
      if ((bits & 0xFF) == 0x80) return NAN;
      return minifloat(bits, 4, 3, 8);
    case AV_DT_F8E5M2FNUZ:
      if ((bits & 0xFF) == 0x80) return NAN;
      return minifloat(bits, 5, 2, 16);
    case AV_DT_F8E4M3B11FNUZ:
      if ((bits & 0xFF) == 0x80) return NAN;
      return minifloat(bits, 4, 3, 11);
    case AV_DT_F8E8M0FNU:
      if ((bits & 0xFF) == 0xFF) return NAN;
      return ldexp(1.0, (int)(bits & 0xFF) - 127);
    case AV_DT_F4E2M1FN: return minifloat(bits, 2, 1, 1);
    case AV_DT_F6E2M3FN: return minifloat(bits, 2, 3, 1);
    case AV_DT_F6E3M2FN: return minifloat(bits, 3, 2, 3);
    default: return 0.0;
  }
}

/* ------------------------------------------------------------- dense data */

int64_t bc_num_elements(const av_type *t) {
  if (!t || (t->kind != AV_TYPE_TENSOR && t->kind != AV_TYPE_OTHER)) return -1;
  if (t->rank > 0 && !t->dims) return -1;
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) {
    int64_t dim = t->dims[i];
    if (dim < 0 || (dim != 0 && n > INT64_MAX / dim)) return -1;
    n *= dim;
  }
  return n;
}

/* Keeps the meaningful low bits of a sub-byte element and sign-extends signed integers. */
static uint8_t normalize_subbyte(av_dtype dt, uint8_t b) {
  int bits = av_dtype_bits(dt);
  if (bits >= 8 || bits <= 0) return b;
  uint8_t mask = (uint8_t)((1u << bits) - 1);
  b &= mask;
  if (av_dtype_is_signed_int(dt) && (b & (1u << (bits - 1)))) b |= (uint8_t)~mask;
  return b;
}

const av_attr *bc_make_dense(bc_reader *r, const bc_cursor *c, const av_type *type,
                             const uint8_t *raw, size_t size) {
  /* Tensors of quantized elements are AV_TYPE_OTHER carrying rank, dims and the storage dtype;
   * their data is laid out like the storage type's. */
  if (!type || (type->kind != AV_TYPE_TENSOR &&
                !(type->kind == AV_TYPE_OTHER && type->dtype != AV_DT_INVALID))) {
    bc_fail(r, c, "dense elements need a ranked tensor type of a known element type");
    return NULL;
  }
  int64_t n = bc_num_elements(type);
  if (n < 0) {
    bc_fail(r, c, "dense elements of a dynamically shaped tensor");
    return NULL;
  }
  size_t es = av_dtype_size(type->dtype);
  if (es == 0) {
    bc_fail(r, c, "dense elements of unsupported element type");
    return NULL;
  }
  bool splat = false;
  size_t count;
  uint8_t *out;
  if (type->dtype == AV_DT_PRED) {
    size_t packed = (size_t)((uint64_t)n / 8 + ((uint64_t)n % 8 != 0));
    if (size == 1 && raw[0] == 0xFF) {
      splat = n != 1;
      count = 1;
    } else if (size == packed && size != (size_t)n) {
      out = av_arena_alloc(&r->m->arena, (size_t)n);
      if (!out) goto oom;
      for (int64_t i = 0; i < n; i++) out[i] = (raw[i / 8] >> (i % 8)) & 1;
      return av_attr_dense(r->m, type, out, (size_t)n, false, true);
    } else if (size == (size_t)n) {
      count = (size_t)n;
    } else if (size == 1) {
      splat = true;
      count = 1;
    } else {
      bc_fail(r, c, "dense i1 data has %zu bytes for %lld elements", size, (long long)n);
      return NULL;
    }
    out = av_arena_alloc(&r->m->arena, count);
    if (!out) goto oom;
    for (size_t i = 0; i < count; i++) out[i] = raw[i] != 0;
    return av_attr_dense(r->m, type, out, count, splat, true);
  }
  if ((uint64_t)n > SIZE_MAX / es) {
    bc_fail(r, c, "dense elements too large");
    return NULL;
  }
  size_t full = (size_t)n * es;
  if (size == full) {
    count = (size_t)n;
  } else if (size == es && n != 1) { /* one value for many (or for none): a splat */
    splat = true;
    count = 1;
  } else {
    bc_fail(r, c, "dense data has %zu bytes, %s tensor of %lld elements needs %zu", size,
            av_dtype_mlir_name(type->dtype), (long long)n, full);
    return NULL;
  }
  size_t bytes = count * es;
  out = av_arena_alloc(&r->m->arena, bytes);
  if (!out) goto oom;
  if (bytes) memcpy(out, raw, bytes);
  if (av_dtype_bits(type->dtype) < 8)
    for (size_t i = 0; i < bytes; i++) out[i] = normalize_subbyte(type->dtype, out[i]);
  return av_attr_dense(r->m, type, out, bytes, splat, true);
oom:
  av_diag_set(r->d, AV_RESOURCE_EXHAUSTED, "MLIR bytecode: out of memory for dense elements");
  return NULL;
}

/* ---------------------------------------------------------------- text */

void bc_text_put(bc_text *t, const char *s, size_t n) {
  if (!t->buf || t->cap == 0) return;
  size_t room = t->cap - 1 - t->len;
  if (n > room) n = room;
  memcpy(t->buf + t->len, s, n);
  t->len += n;
  t->buf[t->len] = '\0';
}

void bc_text_printf(bc_text *t, const char *fmt, ...) {
  char tmp[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n > 0) bc_text_put(t, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

static void put_quoted(bc_text *t, const char *s, size_t len) {
  bc_text_put(t, "\"", 1);
  for (size_t i = 0; i < len && t->len + 1 < t->cap; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch == '"' || ch == '\\')
      bc_text_printf(t, "\\%c", ch);
    else if (ch < 0x20 || ch >= 0x7F)
      bc_text_printf(t, "\\%02X", ch);
    else
      bc_text_put(t, (const char *)&ch, 1);
  }
  bc_text_put(t, "\"", 1);
}

static void put_type(bc_text *t, const av_type *ty) {
  if (!ty) {
    bc_text_put(t, "?", 1);
    return;
  }
  switch (ty->kind) {
    case AV_TYPE_TENSOR:
      bc_text_put(t, "tensor<", 7);
      for (int i = 0; i < ty->rank; i++) {
        if (ty->dims[i] < 0)
          bc_text_put(t, "?x", 2);
        else
          bc_text_printf(t, "%lldx", (long long)ty->dims[i]);
      }
      bc_text_printf(t, "%s>", av_dtype_mlir_name(ty->dtype));
      break;
    case AV_TYPE_TOKEN: bc_text_put(t, "!stablehlo.token", 16); break;
    case AV_TYPE_OTHER: bc_text_printf(t, "%s", ty->text ? ty->text : "?"); break;
    case AV_TYPE_TUPLE:
    case AV_TYPE_FUNCTION:
      bc_text_put(t, ty->kind == AV_TYPE_TUPLE ? "tuple<" : "(", ty->kind == AV_TYPE_TUPLE ? 6 : 1);
      for (int i = 0; i < ty->nelems; i++) {
        if (ty->kind == AV_TYPE_FUNCTION && i == ty->ninputs)
          bc_text_put(t, ") -> (", 6);
        else if (i)
          bc_text_put(t, ", ", 2);
        put_type(t, ty->elems[i]);
      }
      if (ty->kind == AV_TYPE_FUNCTION && ty->nelems == ty->ninputs) bc_text_put(t, ") -> (", 6);
      bc_text_put(t, ty->kind == AV_TYPE_TUPLE ? ">" : ")", 1);
      break;
  }
}

void bc_text_attr(bc_text *t, const av_attr *a) {
  if (!a) {
    bc_text_put(t, "<<null>>", 8);
    return;
  }
  if (t->len + 1 >= t->cap) return;
  switch (a->kind) {
    case AV_ATTR_UNIT: bc_text_put(t, "unit", 4); break;
    case AV_ATTR_BOOL: bc_text_printf(t, "%s", a->u.b ? "true" : "false"); break;
    case AV_ATTR_INT: bc_text_printf(t, "%lld", (long long)a->u.i); break;
    case AV_ATTR_FLOAT: bc_text_printf(t, "%.17g", a->u.f); break;
    case AV_ATTR_STRING: put_quoted(t, a->u.str.s, a->u.str.len); break;
    case AV_ATTR_SYMBOL: bc_text_put(t, "@", 1); bc_text_put(t, a->u.str.s, a->u.str.len); break;
    case AV_ATTR_ENUM:
    case AV_ATTR_OPAQUE: bc_text_put(t, a->u.str.s, a->u.str.len); break;
    case AV_ATTR_TYPE: put_type(t, a->type); break;
    case AV_ATTR_ARRAY:
      bc_text_put(t, "[", 1);
      for (size_t i = 0; i < a->u.array.n && t->len + 1 < t->cap; i++) {
        if (i) bc_text_put(t, ", ", 2);
        bc_text_attr(t, a->u.array.items[i]);
      }
      bc_text_put(t, "]", 1);
      break;
    case AV_ATTR_DICT:
      bc_text_put(t, "{", 1);
      for (size_t i = 0; i < a->u.dict.n && t->len + 1 < t->cap; i++) {
        if (i) bc_text_put(t, ", ", 2);
        bc_text_printf(t, "%s = ", a->u.dict.items[i].name);
        bc_text_attr(t, a->u.dict.items[i].value);
      }
      bc_text_put(t, "}", 1);
      break;
    case AV_ATTR_INTS:
      bc_text_put(t, "array<i64", 9);
      for (size_t i = 0; i < a->u.ints.n && t->len + 1 < t->cap; i++)
        bc_text_printf(t, "%s%lld", i ? ", " : ": ", (long long)a->u.ints.v[i]);
      bc_text_put(t, ">", 1);
      break;
    case AV_ATTR_BOOLS:
      bc_text_put(t, "array<i1", 8);
      for (size_t i = 0; i < a->u.bools.n && t->len + 1 < t->cap; i++)
        bc_text_printf(t, "%s%s", i ? ", " : ": ", a->u.bools.v[i] ? "true" : "false");
      bc_text_put(t, ">", 1);
      break;
    case AV_ATTR_DENSE:
      bc_text_put(t, "dense<...> : ", 13);
      put_type(t, a->type);
      break;
  }
}

const av_attr *bc_opaque_from_text(bc_reader *r, const bc_text *t) {
  /* Rendered text can outgrow the input (shared sub-attributes are printed in full at every
   * use), so its total is capped; past the cap texts are replaced by a marker. */
  const char *s = t->buf ? t->buf : "";
  size_t len = t->len;
  if (len > r->text_budget) {
    s = "<text elided>";
    len = strlen(s);
  } else {
    r->text_budget -= len;
  }
  const av_attr *a = av_attr_string(r->m, AV_ATTR_OPAQUE, s, len);
  if (!a) av_diag_set(r->d, AV_RESOURCE_EXHAUSTED, "MLIR bytecode: out of memory");
  return a;
}
