/* VHLO dialect attributes and types (VhloBytecode.cpp codes, StableHLO 0.9.0 .. 1.20.0),
 * converted to anvil's IR forms: enums become AV_ATTR_ENUM with the StableHLO spelling,
 * TensorV1 becomes DENSE, structured attrs become DICTs with flat field names. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "frontend/bytecode_internal.h"

static const bc_type_slot *slot_of(bc_reader *r, const av_type *t, bool elem) {
  if (!t) return NULL;
  bc_type_slot *s = av_arena_alloc(&r->m->arena, sizeof *s);
  if (!s) return NULL;
  s->t = t;
  s->elem = elem;
  return s;
}

/* ---------------------------------------------------------------- types */

/* Quantized element types (UniformQuantizedV1 / UniformQuantizedPerAxisV1): a rank-0 tensor of
 * the storage type carrying the quantization parameters. The storage integer is signless in
 * MLIR; bit 0 of the flags says whether it is signed. */
static const bc_type_slot *quantized(bc_reader *r, bc_cursor *c, bool per_axis) {
  uint64_t flags, qdim = 0, n = 1;
  av_dtype storage, expressed;
  av_quant q = {0};
  uint64_t scale_bits = 0;
  double *scales = NULL;
  int64_t *zps = NULL;
  if (!bc_read_varint(c, &flags) || !bc_read_elem_dtype(r, c, &storage, NULL) ||
      !bc_read_elem_dtype(r, c, &expressed, NULL))
    goto bad;
  if (!av_dtype_is_int(storage) || !av_dtype_is_float(expressed)) goto bad;
  if (!(flags & 1)) { /* unsigned storage: ui<bits> */
    char name[8];
    int len = snprintf(name, sizeof name, "ui%d", av_dtype_bits(storage));
    storage = av_dtype_from_mlir_name(name, (size_t)len);
    if (storage == AV_DT_INVALID) goto bad;
  }
  q.expressed = expressed;
  q.axis = -1;
  if (!per_axis) {
    scales = av_arena_alloc(&r->m->arena, sizeof *scales);
    zps = av_arena_alloc(&r->m->arena, sizeof *zps);
    if (!scales || !zps || !bc_read_apint(r, c, 64, &scale_bits) || !bc_read_svarint(c, &zps[0]) ||
        !bc_read_svarint(c, &q.storage_min) || !bc_read_svarint(c, &q.storage_max))
      goto bad;
    scales[0] = bc_float_from_bits(AV_DT_F64, scale_bits);
  } else {
    uint64_t nz;
    if (!bc_read_varint(c, &qdim) || qdim > 64 || !bc_read_svarint(c, &q.storage_min) ||
        !bc_read_svarint(c, &q.storage_max) || !bc_read_varint(c, &n) || n == 0 ||
        n > bc_remaining(c))
      goto bad;
    q.axis = (int32_t)qdim;
    scales = av_arena_calloc(&r->m->arena, n, sizeof *scales);
    zps = av_arena_calloc(&r->m->arena, n, sizeof *zps);
    if (!scales || !zps) goto bad;
    for (uint64_t i = 0; i < n; i++) {
      if (!bc_read_apint(r, c, 64, &scale_bits)) goto bad;
      scales[i] = bc_float_from_bits(AV_DT_F64, scale_bits);
    }
    if (!bc_read_varint(c, &nz) || nz != n) goto bad;
    for (uint64_t i = 0; i < n; i++)
      if (!bc_read_svarint(c, &zps[i])) goto bad;
  }
  q.n = (uint32_t)n;
  q.scales = scales;
  q.zero_points = zps;
  {
    int64_t lo, hi;
    if (!av_quant_storage_range(storage, &lo, &hi) || q.storage_min < lo || q.storage_max > hi ||
        q.storage_min > q.storage_max)
      goto bad;
    for (uint32_t i = 0; i < q.n; i++)
      if (!(scales[i] > 0) || scales[i] > 1e300) goto bad;
    const av_type *ty = av_type_quantized(r->m, storage, 0, NULL, &q);
    if (!ty) return NULL;
    return slot_of(r, ty, true);
  }
bad:
  bc_fail(r, c, "malformed VHLO quantized type");
  return NULL;
}

const bc_type_slot *bc_vhlo_type(bc_reader *r, bc_cursor *c) {
  uint64_t code;
  if (!bc_read_varint(c, &code)) {
    bc_fail(r, c, "truncated VHLO type");
    return NULL;
  }
  /* Simple element types by code; AV_DT_INVALID marks codes handled below. */
  static const av_dtype kElem[43] = {
      [0] = AV_DT_PRED,         [2] = AV_DT_BF16,          [3] = AV_DT_F16,
      [4] = AV_DT_F32,          [5] = AV_DT_F64,           [6] = AV_DT_F8E4M3FN,
      [7] = AV_DT_F8E5M2,       [9] = AV_DT_S64, /* index */
      [10] = AV_DT_S4,          [11] = AV_DT_S8,           [12] = AV_DT_S16,
      [13] = AV_DT_S32,         [14] = AV_DT_S64,          [15] = AV_DT_U4,
      [16] = AV_DT_U8,          [17] = AV_DT_U16,          [18] = AV_DT_U32,
      [19] = AV_DT_U64,         [27] = AV_DT_F8E4M3FNUZ,   [28] = AV_DT_F8E5M2FNUZ,
      [29] = AV_DT_F8E4M3B11FNUZ, [31] = AV_DT_S2,         [32] = AV_DT_U2,
      [35] = AV_DT_F8E4M3,      [36] = AV_DT_F8E3M4,       [37] = AV_DT_F4E2M1FN,
      [38] = AV_DT_F6E2M3FN,    [39] = AV_DT_F6E3M2FN,     [40] = AV_DT_F8E8M0FNU,
  };
  if (code < 43 && kElem[code] != AV_DT_INVALID) return bc_elem_slot(r, kElem[code], NULL);
  switch (code) {
    case 1: { /* ComplexV1 */
      av_dtype dt;
      if (!bc_read_elem_dtype(r, c, &dt, NULL)) return NULL;
      if (dt == AV_DT_F32) return bc_elem_slot(r, AV_DT_C64, NULL);
      if (dt == AV_DT_F64) return bc_elem_slot(r, AV_DT_C128, NULL);
      bc_fail(r, c, "complex of %s is not supported", av_dtype_mlir_name(dt));
      return NULL;
    }
    case 8: return bc_read_function_type(r, c);
    case 20:
    case 21: { /* RankedTensorV1 [with encoding] */
      const av_attr *enc = NULL;
      if (code == 21 && !(enc = bc_read_attr(r, c))) return NULL;
      const av_type *t;
      if (!bc_read_shaped(r, c, enc, &t)) return NULL;
      return slot_of(r, t, false);
    }
    case 22: return slot_of(r, av_type_token(r->m), false);
    case 23: return bc_read_tuple_type(r, c);
    case 24: return quantized(r, c, false);
    case 25: /* UnrankedTensorV1 */
      if (!bc_read_type(r, c)) return NULL;
      return slot_of(r, bc_other_type(r, "tensor<*>", 9), false);
    case 26: return slot_of(r, bc_other_type(r, "!shape.witness", 14), false);
    case 30: return quantized(r, c, true);
    case 33: return bc_elem_slot(r, AV_DT_INVALID, "none");
    case 34: return bc_elem_slot(r, AV_DT_INVALID, "tf32");
    case 41: { /* RankedBufferV1 (memref) */
      const av_type *t;
      if (!bc_read_shaped(r, c, NULL, &t)) return NULL;
      return slot_of(r, bc_other_type(r, "memref<...>", 11), false);
    }
    case 42: { /* FutureV1: list of types */
      const bc_type_slot *tu = bc_read_tuple_type(r, c);
      if (!tu) return NULL;
      av_type *t = (av_type *)bc_other_type(r, "!stablehlo.future", 17);
      if (!t) return NULL;
      t->nelems = tu->t->nelems;
      t->elems = tu->t->elems;
      return slot_of(r, t, false);
    }
    default:
      bc_fail(r, c, "unknown VHLO type code %llu", (unsigned long long)code);
      return NULL;
  }
}

/* ----------------------------------------------------------- attributes */

static const av_attr *enum_attr(bc_reader *r, bc_cursor *c, const char *what,
                                const char *const *names, size_t n) {
  uint64_t v;
  if (!bc_read_varint(c, &v)) {
    bc_fail(r, c, "truncated %s", what);
    return NULL;
  }
  if (v >= n || !names[v]) {
    bc_fail(r, c, "invalid %s value %llu", what, (unsigned long long)v);
    return NULL;
  }
  return av_attr_string(r->m, AV_ATTR_ENUM, names[v], strlen(names[v]));
}

#define ENUM(what, ...)                                                   \
  do {                                                                    \
    static const char *const names[] = {__VA_ARGS__};                    \
    return enum_attr(r, c, what, names, sizeof names / sizeof names[0]); \
  } while (0)

static const av_attr *make_dict(bc_reader *r, size_t n, const char *const *names,
                                const av_attr *const *values) {
  av_named_attr items[8];
  size_t k = 0;
  for (size_t i = 0; i < n && k < 8; i++)
    if (values[i]) {
      items[k].name = names[i];
      items[k].value = values[i];
      k++;
    }
  return av_attr_dict(r->m, k, items);
}

static const av_attr *read_f64(bc_reader *r, bc_cursor *c) {
  uint64_t bits;
  if (!bc_read_apint(r, c, 64, &bits)) return NULL;
  return av_attr_float(r->m, bc_float_from_bits(AV_DT_F64, bits), NULL);
}

static const av_attr *read_sv(bc_reader *r, bc_cursor *c) {
  int64_t v;
  if (!bc_read_svarint(c, &v)) {
    bc_fail(r, c, "truncated integer");
    return NULL;
  }
  return av_attr_int(r->m, v, NULL);
}

const av_attr *bc_vhlo_attr(bc_reader *r, bc_cursor *c) {
  uint64_t code, idx;
  if (!bc_read_varint(c, &code)) {
    bc_fail(r, c, "truncated VHLO attribute");
    return NULL;
  }
  av_module *m = r->m;
  switch (code) {
    case 1: return bc_read_attr_array(r, c);
    case 2: {
      uint64_t v;
      if (!bc_read_varint(c, &v) || v > 1) break;
      return av_attr_bool(m, v != 0);
    }
    case 3: ENUM("comparison direction", "EQ", "NE", "GE", "GT", "LE", "LT");
    case 4: ENUM("comparison type", "NOTYPE", "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED");
    case 5: { /* CustomCallApiVersion: StableHLO keeps it as an i32 integer */
      uint64_t v;
      if (!bc_read_varint(c, &v) || v > 4) break;
      return av_attr_int(m, (int64_t)v, NULL);
    }
    case 6: return bc_read_attr_dict(r, c);
    case 7: ENUM("FFT type", "FFT", "IFFT", "RFFT", "IRFFT");
    case 8: { /* FloatV1 */
      const bc_type_slot *ts = bc_read_type(r, c);
      if (!ts) return NULL;
      if (!ts->elem) break;
      av_dtype dt = ts->t->dtype;
      unsigned w = bc_float_width(dt);
      uint64_t bits;
      if (w == 0) {
        if (ts->t->text && strcmp(ts->t->text, "tf32") == 0) {
          if (!bc_read_apint(r, c, 19, &bits)) return NULL;
          uint32_t u = (uint32_t)bits << 13; /* tf32 = f32 with 10 mantissa bits */
          float f;
          memcpy(&f, &u, sizeof f);
          return av_attr_float(m, f, ts->t);
        }
        break;
      }
      if (!bc_read_apint(r, c, w, &bits)) return NULL;
      return av_attr_float(m, bc_float_from_bits(dt, bits), ts->t);
    }
    case 9: { /* IntegerV1 */
      const bc_type_slot *ts = bc_read_type(r, c);
      if (!ts) return NULL;
      if (!ts->elem) break;
      int64_t v;
      if (!bc_read_typed_int(r, c, ts->t->dtype, &v)) return NULL;
      return av_attr_int(m, v, ts->t);
    }
    case 10: { /* OutputOperandAliasV1 */
      static const char *const names[] = {"output_tuple_indices", "operand_index",
                                          "operand_tuple_indices"};
      const av_attr *v[3];
      if (!(v[0] = bc_read_svarint_list(r, c)) || !(v[1] = read_sv(r, c)) ||
          !(v[2] = bc_read_svarint_list(r, c)))
        return NULL;
      return make_dict(r, 3, names, v);
    }
    case 11: ENUM("precision", "DEFAULT", "HIGH", "HIGHEST");
    case 12: ENUM("RNG algorithm", "DEFAULT", "THREE_FRY", "PHILOX");
    case 13: ENUM("RNG distribution", NULL, "UNIFORM", "NORMAL");
    case 14: {
      bc_str s;
      if (!bc_read_varint(c, &idx) || !bc_string(r, idx, &s)) break;
      return av_attr_string(m, AV_ATTR_STRING, s.s, s.len);
    }
    case 15: { /* TensorV1: type, raw data */
      const bc_type_slot *ts = bc_read_type(r, c);
      const uint8_t *raw;
      size_t size;
      if (!ts) return NULL;
      if (!bc_read_blob(c, &raw, &size)) break;
      return bc_make_dense(r, c, ts->t, raw, size);
    }
    case 16: ENUM("transpose", "TRANSPOSE_INVALID", "NO_TRANSPOSE", "TRANSPOSE", "ADJOINT");
    case 17: {
      const bc_type_slot *ts = bc_read_type(r, c);
      return ts ? av_attr_type(m, ts->t) : NULL;
    }
    case 18: { /* TypeExtensionsV1: bounds (dynamic = INT64_MIN -> -1) */
      const av_attr *b = bc_read_svarint_list(r, c);
      if (!b) return NULL;
      for (size_t i = 0; i < b->u.ints.n; i++)
        if (b->u.ints.v[i] == INT64_MIN) ((int64_t *)b->u.ints.v)[i] = AV_DYNAMIC_DIM;
      return b;
    }
    case 19: ENUM("result accuracy mode", "DEFAULT", "HIGHEST", "TOLERANCE");
    case 20: { /* ResultAccuracyV1 */
      static const char *const names[] = {"atol", "rtol", "ulps", "mode"};
      const av_attr *v[4];
      if (!(v[0] = read_f64(r, c)) || !(v[1] = read_f64(r, c)) || !(v[2] = read_sv(r, c)) ||
          !(v[3] = bc_read_attr(r, c)))
        return NULL;
      return make_dict(r, 4, names, v);
    }
    case 21: { /* SubAxisInfoV1 */
      static const char *const names[] = {"pre_size", "size"};
      const av_attr *v[2];
      if (!(v[0] = read_sv(r, c)) || !(v[1] = read_sv(r, c))) return NULL;
      return make_dict(r, 2, names, v);
    }
    case 22: { /* AxisRefV1 */
      static const char *const names[] = {"name", "sub_axis_info"};
      const av_attr *v[2] = {NULL, NULL};
      uint64_t has_sub;
      if (!(v[0] = bc_read_attr(r, c))) return NULL;
      if (!bc_read_varint(c, &has_sub)) break;
      if (has_sub && !(v[1] = bc_read_attr(r, c))) return NULL;
      return make_dict(r, 2, names, v);
    }
    case 23: { /* ReplicaGroupMeshAxesV1 */
      static const char *const names[] = {"mesh", "axes"};
      const av_attr *v[2];
      if (!(v[0] = bc_read_attr(r, c)) || !(v[1] = bc_read_attr(r, c))) return NULL;
      return make_dict(r, 2, names, v);
    }
    case 24: { /* MeshAxisV1 */
      static const char *const names[] = {"name", "size"};
      const av_attr *v[2];
      if (!(v[0] = bc_read_attr(r, c)) || !(v[1] = read_sv(r, c))) return NULL;
      return make_dict(r, 2, names, v);
    }
    case 25: { /* MeshV1 */
      static const char *const names[] = {"axes", "device_ids"};
      const av_attr *v[2] = {NULL, NULL};
      bool present;
      if (!(v[0] = bc_read_attr(r, c))) return NULL;
      if (!bc_read_varint_flag(c, &idx, &present)) break;
      if (present && !(v[1] = bc_attr(r, idx))) return NULL;
      return make_dict(r, 2, names, v);
    }
    default:
      bc_fail(r, c, "unknown VHLO attribute code %llu", (unsigned long long)code);
      return NULL;
  }
  bc_fail(r, c, "malformed VHLO attribute (code %llu)", (unsigned long long)code);
  return NULL;
}
