/* Builtin dialect types in MLIR bytecode (BuiltinDialectBytecode.td codes), plus types that
 * came as text (the textual fallback, e.g. "f8E4M3FN" from writers older than the f8 codes). */
#include <stdio.h>
#include <string.h>

#include "frontend/quant_text.h"
#include "frontend/bytecode_internal.h"

static const bc_type_slot *slot_of(bc_reader *r, const av_type *t, bool elem) {
  if (!t) return NULL;
  bc_type_slot *s = av_arena_alloc(&r->m->arena, sizeof *s);
  if (!s) return NULL;
  s->t = t;
  s->elem = elem;
  return s;
}

static av_dtype int_dtype(uint64_t width, unsigned signedness) {
  bool is_unsigned = signedness == 2;
  switch (width) {
    case 1: return signedness == 0 ? AV_DT_PRED : (is_unsigned ? AV_DT_U1 : AV_DT_S1);
    case 2: return is_unsigned ? AV_DT_U2 : AV_DT_S2;
    case 4: return is_unsigned ? AV_DT_U4 : AV_DT_S4;
    case 8: return is_unsigned ? AV_DT_U8 : AV_DT_S8;
    case 16: return is_unsigned ? AV_DT_U16 : AV_DT_S16;
    case 32: return is_unsigned ? AV_DT_U32 : AV_DT_S32;
    case 64: return is_unsigned ? AV_DT_U64 : AV_DT_S64;
    default: return AV_DT_INVALID;
  }
}

/* Reads `list<svarint>` tensor dimensions (INT64_MIN marks a dynamic dimension). */
static bool read_shape(bc_reader *r, bc_cursor *c, int *rank, int64_t **dims) {
  uint64_t n;
  if (!bc_read_varint(c, &n) || n > bc_remaining(c) || n > 1024)
    return bc_fail(r, c, "bad tensor rank");
  *rank = (int)n;
  *dims = av_arena_calloc(&r->m->arena, (size_t)n + 1, sizeof(int64_t));
  if (!*dims) return bc_fail(r, NULL, "out of memory");
  for (uint64_t i = 0; i < n; i++) {
    int64_t d;
    if (!bc_read_svarint(c, &d)) return bc_fail(r, c, "truncated tensor shape");
    if (d == INT64_MIN) d = AV_DYNAMIC_DIM;
    else if (d < 0) return bc_fail(r, c, "negative tensor dimension %lld", (long long)d);
    (*dims)[i] = d;
  }
  return true;
}

bool bc_read_shaped(bc_reader *r, bc_cursor *c, const av_attr *encoding, const av_type **out) {
  int rank = 0;
  int64_t *dims = NULL;
  if (!read_shape(r, c, &rank, &dims)) return false;
  const bc_type_slot *elem = bc_read_type(r, c);
  if (!elem) return false;
  if (!elem->elem) return bc_fail(r, c, "tensor element type is not a scalar type");
  *out = bc_tensor_type(r, elem, rank, dims, encoding);
  return *out != NULL;
}

static const av_type **read_type_list(bc_reader *r, bc_cursor *c, int *n) {
  uint64_t cnt;
  if (!bc_read_varint(c, &cnt) || cnt > bc_remaining(c)) {
    bc_fail(r, c, "bad type list length");
    return NULL;
  }
  const av_type **v = av_arena_calloc(&r->m->arena, (size_t)cnt + 1, sizeof *v);
  if (!v) return NULL;
  for (uint64_t i = 0; i < cnt; i++) {
    const bc_type_slot *s = bc_read_type(r, c);
    if (!s) return NULL;
    v[i] = s->t;
  }
  *n = (int)cnt;
  return v;
}

/* Function and tuple types, shared with VHLO (same field layout). */
const bc_type_slot *bc_read_function_type(bc_reader *r, bc_cursor *c) {
  int nin, nout;
  const av_type **in = read_type_list(r, c, &nin);
  if (!in) return NULL;
  const av_type **out = read_type_list(r, c, &nout);
  if (!out) return NULL;
  return slot_of(r, av_type_function(r->m, nin, in, nout, out), false);
}

const bc_type_slot *bc_read_tuple_type(bc_reader *r, bc_cursor *c) {
  int n;
  const av_type **el = read_type_list(r, c, &n);
  if (!el) return NULL;
  return slot_of(r, av_type_tuple(r->m, n, el), false);
}

static const bc_type_slot *other(bc_reader *r, const char *text) {
  return slot_of(r, bc_other_type(r, text, strlen(text)), false);
}

const bc_type_slot *bc_builtin_type(bc_reader *r, bc_cursor *c) {
  uint64_t code;
  if (!bc_read_varint(c, &code)) {
    bc_fail(r, c, "truncated builtin type");
    return NULL;
  }
  /* Codes 21..32 are the newer float types (tf32, f8*, f4, f6, f8E8M0FNU). */
  static const av_dtype kFloatCodes[] = {
      AV_DT_INVALID /* tf32 */, AV_DT_F8E5M2, AV_DT_F8E4M3, AV_DT_F8E4M3FN, AV_DT_F8E5M2FNUZ,
      AV_DT_F8E4M3FNUZ, AV_DT_F8E4M3B11FNUZ, AV_DT_F8E3M4, AV_DT_F4E2M1FN, AV_DT_F6E2M3FN,
      AV_DT_F6E3M2FN, AV_DT_F8E8M0FNU};
  switch (code) {
    case 0: { /* IntegerType */
      uint64_t v;
      if (!bc_read_varint(c, &v)) break;
      av_dtype dt = int_dtype(v >> 2, (unsigned)(v & 3));
      if (dt == AV_DT_INVALID) {
        char buf[48];
        snprintf(buf, sizeof buf, "%si%llu", (v & 3) == 1 ? "s" : (v & 3) == 2 ? "u" : "",
                 (unsigned long long)(v >> 2));
        return bc_elem_slot(r, AV_DT_INVALID, buf);
      }
      return bc_elem_slot(r, dt, NULL);
    }
    case 1: return bc_elem_slot(r, AV_DT_S64, NULL); /* index */
    case 2: return bc_read_function_type(r, c);
    case 3: return bc_elem_slot(r, AV_DT_BF16, NULL);
    case 4: return bc_elem_slot(r, AV_DT_F16, NULL);
    case 5: return bc_elem_slot(r, AV_DT_F32, NULL);
    case 6: return bc_elem_slot(r, AV_DT_F64, NULL);
    case 7: return bc_elem_slot(r, AV_DT_INVALID, "f80");
    case 8: return bc_elem_slot(r, AV_DT_INVALID, "f128");
    case 9: { /* ComplexType */
      av_dtype dt;
      if (!bc_read_elem_dtype(r, c, &dt, NULL)) return NULL;
      if (dt == AV_DT_F32) return bc_elem_slot(r, AV_DT_C64, NULL);
      if (dt == AV_DT_F64) return bc_elem_slot(r, AV_DT_C128, NULL);
      return bc_elem_slot(r, AV_DT_INVALID, "complex<?>");
    }
    case 10:
    case 11: { /* MemRefType: [memory space], shape, element, layout */
      if (code == 11 && !bc_read_attr(r, c)) return NULL;
      const av_type *t;
      if (!bc_read_shaped(r, c, NULL, &t) || !bc_read_attr(r, c)) return NULL;
      return other(r, "memref<...>");
    }
    case 12: return bc_elem_slot(r, AV_DT_INVALID, "none");
    case 13:
    case 14: { /* RankedTensorType [with encoding] */
      const av_attr *enc = NULL;
      if (code == 14 && !(enc = bc_read_attr(r, c))) return NULL;
      const av_type *t;
      if (!bc_read_shaped(r, c, enc, &t)) return NULL;
      return slot_of(r, t, false);
    }
    case 15: return bc_read_tuple_type(r, c);
    case 16:
    case 17: /* UnrankedMemRefType [with memory space] */
      if (code == 17 && !bc_read_attr(r, c)) return NULL;
      if (!bc_read_type(r, c)) return NULL;
      return other(r, "memref<*x?>");
    case 18: /* UnrankedTensorType */
      if (!bc_read_type(r, c)) return NULL;
      return other(r, "tensor<*x?>");
    case 19:
    case 20: { /* VectorType [scalable] */
      if (code == 20) {
        uint64_t n;
        const uint8_t *flags;
        if (!bc_read_varint(c, &n) || n > bc_remaining(c) || !bc_read_bytes(c, (size_t)n, &flags))
          break;
      }
      const av_type *t;
      if (!bc_read_shaped(r, c, NULL, &t)) return NULL;
      return other(r, "vector<...>");
    }
    default:
      if (code >= 21 && code <= 32) {
        av_dtype dt = kFloatCodes[code - 21];
        return bc_elem_slot(r, dt, dt == AV_DT_INVALID ? "tf32" : NULL);
      }
      bc_fail(r, c, "unknown builtin type code %llu", (unsigned long long)code);
      return NULL;
  }
  bc_fail(r, c, "truncated builtin type (code %llu)", (unsigned long long)code);
  return NULL;
}

/* Textual types: element type spellings are understood, everything else is kept as text. */
const bc_type_slot *bc_textual_type(bc_reader *r, const char *s, size_t len) {
  av_dtype dt = av_dtype_from_mlir_name(s, len);
  if (dt != AV_DT_INVALID) return bc_elem_slot(r, dt, NULL);
  static const char *const kElemWords[] = {"tf32", "index", "none", "f80", "f128"};
  for (size_t i = 0; i < sizeof kElemWords / sizeof kElemWords[0]; i++)
    if (strlen(kElemWords[i]) == len && memcmp(kElemWords[i], s, len) == 0)
      return bc_elem_slot(r, strcmp(kElemWords[i], "index") == 0 ? AV_DT_S64 : AV_DT_INVALID,
                          kElemWords[i]);
  if (len >= 16 && memcmp(s, "!stablehlo.token", 16) == 0) return slot_of(r, av_type_token(r->m), false);
  av_quant q;
  av_dtype storage;
  size_t used;
  if (!av_parse_quant_type(r->m, s, len, &storage, &q, &used) && used == len) {
    const av_type *t = av_type_quantized(r->m, storage, 0, NULL, &q);
    return t ? slot_of(r, t, true) : NULL;
  }
  /* Unknown dialect types used as elements (e.g. other !quant types) are marked as elements so
   * that tensors of them can still be built (as AV_TYPE_OTHER). */
  bool elem = len > 0 && s[0] == '!';
  return slot_of(r, bc_other_type(r, s, len), elem);
}
