/* Shape and literal conversion for the HLO frontend. LiteralProto keeps each element type in
 * its own field (repeated varints/floats, or raw little-endian bytes); anvil storage wants
 * row-major elements of av_dtype_size bytes with sub-byte values normalised to the byte. */
#include "frontend/hlo_types.h"

#include <string.h>

#include "frontend/proto_wire.h"

enum { kMaxRank = 64 };

static const av_dtype kDtypes[] = {
    [1] = AV_DT_PRED,        [2] = AV_DT_S8,           [3] = AV_DT_S16,
    [4] = AV_DT_S32,         [5] = AV_DT_S64,          [6] = AV_DT_U8,
    [7] = AV_DT_U16,         [8] = AV_DT_U32,          [9] = AV_DT_U64,
    [10] = AV_DT_F16,        [11] = AV_DT_F32,         [12] = AV_DT_F64,
    [15] = AV_DT_C64,        [16] = AV_DT_BF16,        [18] = AV_DT_C128,
    [19] = AV_DT_F8E5M2,     [20] = AV_DT_F8E4M3FN,    [21] = AV_DT_S4,
    [22] = AV_DT_U4,         [23] = AV_DT_F8E4M3B11FNUZ, [24] = AV_DT_F8E5M2FNUZ,
    [25] = AV_DT_F8E4M3FNUZ, [26] = AV_DT_S2,          [27] = AV_DT_U2,
    [28] = AV_DT_F8E4M3,     [29] = AV_DT_F8E3M4,      [30] = AV_DT_S1,
    [31] = AV_DT_U1,         [32] = AV_DT_F4E2M1FN,    [33] = AV_DT_F8E8M0FNU,
};

av_dtype hlo_dtype(int pt) {
  if (pt < 0 || (size_t)pt >= sizeof kDtypes / sizeof kDtypes[0]) return AV_DT_INVALID;
  return kDtypes[pt];
}

int hlo_primitive_type(av_dtype dtype) {
  for (size_t pt = 1; dtype != AV_DT_INVALID && pt < sizeof kDtypes / sizeof kDtypes[0]; pt++)
    if (kDtypes[pt] == dtype) return (int)pt;
  return 0;
}

bool hlo_shape_is_tuple(const hlo_shape *s) { return s->element_type == HLO_PT_TUPLE; }

const av_type *hlo_leaf_type(av_module *m, const hlo_shape *s, const char **err) {
  if (s->element_type == HLO_PT_TOKEN) return av_type_token(m);
  av_dtype dt = hlo_dtype(s->element_type);
  if (dt == AV_DT_INVALID) {
    *err = s->element_type == HLO_PT_TUPLE ? "a tuple shape where an array was expected"
                                           : "unsupported or invalid element type";
    return NULL;
  }
  if (s->dims.n > kMaxRank) {
    *err = "rank too large";
    return NULL;
  }
  int64_t dims[kMaxRank];
  for (size_t i = 0; i < s->dims.n; i++) {
    if (s->dims.v[i] < 0) {
      *err = "negative dimension";
      return NULL;
    }
    /* Bounded-dynamic dimensions keep their size unknown in the IR. */
    dims[i] = (i < s->dynamic.n && s->dynamic.v[i]) ? AV_DYNAMIC_DIM : s->dims.v[i];
  }
  const av_type *t = av_type_tensor(m, dt, (int)s->dims.n, dims);
  if (!t) *err = "out of memory";
  return t;
}

size_t hlo_shape_leaf_count(const hlo_shape *s) {
  if (!hlo_shape_is_tuple(s)) return 1;
  size_t n = 0;
  for (size_t i = 0; i < s->ntuple; i++) n += hlo_shape_leaf_count(&s->tuple[i]);
  return n;
}

static bool leaf_types(av_module *m, const hlo_shape *s, const av_type **types, size_t *k,
                       const char **err) {
  if (!hlo_shape_is_tuple(s)) {
    return (types[(*k)++] = hlo_leaf_type(m, s, err)) != NULL;
  }
  for (size_t i = 0; i < s->ntuple; i++)
    if (!leaf_types(m, &s->tuple[i], types, k, err)) return false;
  return true;
}

bool hlo_shape_leaf_types(av_module *m, const hlo_shape *s, const av_type **types,
                          const char **err) {
  size_t k = 0;
  return leaf_types(m, s, types, &k, err);
}

/* ---------------------------------------------------------------- literals */

/* The LiteralProto field holding elements of each primitive type, and how it is encoded. */
typedef enum lit_enc { ENC_VARINT, ENC_F32, ENC_F64, ENC_BYTES } lit_enc;

static bool literal_field(av_dtype dt, uint32_t *num, lit_enc *enc) {
  switch (dt) {
    case AV_DT_PRED: *num = 2; *enc = ENC_VARINT; return true;
    case AV_DT_U8: *num = 3; *enc = ENC_BYTES; return true;
    case AV_DT_S32: *num = 4; *enc = ENC_VARINT; return true;
    case AV_DT_S64: *num = 5; *enc = ENC_VARINT; return true;
    case AV_DT_U32: *num = 6; *enc = ENC_VARINT; return true;
    case AV_DT_U64: *num = 7; *enc = ENC_VARINT; return true;
    case AV_DT_F32: *num = 8; *enc = ENC_F32; return true;
    case AV_DT_F64: *num = 9; *enc = ENC_F64; return true;
    case AV_DT_F16: *num = 11; *enc = ENC_BYTES; return true;
    case AV_DT_C64: *num = 12; *enc = ENC_F32; return true;
    case AV_DT_BF16: *num = 13; *enc = ENC_BYTES; return true;
    case AV_DT_S8: *num = 15; *enc = ENC_BYTES; return true;
    case AV_DT_U16: *num = 16; *enc = ENC_BYTES; return true;
    case AV_DT_S16: *num = 17; *enc = ENC_BYTES; return true;
    case AV_DT_C128: *num = 18; *enc = ENC_F64; return true;
    case AV_DT_F8E5M2: *num = 19; *enc = ENC_BYTES; return true;
    case AV_DT_F8E4M3FN: *num = 20; *enc = ENC_BYTES; return true;
    case AV_DT_S4: *num = 21; *enc = ENC_BYTES; return true;
    case AV_DT_U4: *num = 22; *enc = ENC_BYTES; return true;
    case AV_DT_F8E4M3B11FNUZ: *num = 23; *enc = ENC_BYTES; return true;
    case AV_DT_F8E5M2FNUZ: *num = 24; *enc = ENC_BYTES; return true;
    case AV_DT_F8E4M3FNUZ: *num = 25; *enc = ENC_BYTES; return true;
    case AV_DT_S2: *num = 26; *enc = ENC_BYTES; return true;
    case AV_DT_U2: *num = 27; *enc = ENC_BYTES; return true;
    case AV_DT_F8E4M3: *num = 28; *enc = ENC_BYTES; return true;
    case AV_DT_F8E3M4: *num = 29; *enc = ENC_BYTES; return true;
    case AV_DT_S1: *num = 30; *enc = ENC_BYTES; return true;
    case AV_DT_U1: *num = 31; *enc = ENC_BYTES; return true;
    case AV_DT_F4E2M1FN: *num = 32; *enc = ENC_BYTES; return true;
    case AV_DT_F8E8M0FNU: *num = 33; *enc = ENC_BYTES; return true;
    default: return false;
  }
}

/* Writes value `v` (raw bits / integer) as element slot `i` of `out` for dtype `dt`. */
static void store_scalar(uint8_t *out, size_t i, av_dtype dt, uint64_t v) {
  size_t sz = av_dtype_size(dt);
  int bits = av_dtype_bits(dt);
  if (sz == 1 && bits < 8) {
    uint8_t b = (uint8_t)(v & ((1u << bits) - 1));
    if (av_dtype_is_signed_int(dt) && (b >> (bits - 1)) & 1) b |= (uint8_t)(0xffu << bits);
    if (dt == AV_DT_PRED) b = v != 0;
    out[i] = b;
    return;
  }
  for (size_t k = 0; k < sz && k < 8; k++) out[i * sz + k] = (uint8_t)(v >> (8 * k));
}

/* Element count of a tensor leaf shape, or -1 on overflow / dynamic. */
static int64_t shape_elements(const av_type *t) { return av_type_num_elements(t); }

/* Reorders `data` (elements of `esz` bytes laid out in the minor_to_major order of `m2m`)
 * into row-major order. */
static bool to_row_major(uint8_t *dst, const uint8_t *src, const av_type *t, size_t esz,
                         const hlo_ints *m2m, const char **err) {
  int rank = t->rank;
  if ((int64_t)m2m->n != rank) {
    *err = "literal layout has the wrong rank";
    return false;
  }
  bool seen[kMaxRank] = {false};
  for (int i = 0; i < rank; i++) {
    int64_t d = m2m->v[i];
    if (d < 0 || d >= rank || seen[d]) {
      *err = "literal layout is not a permutation";
      return false;
    }
    seen[d] = true;
  }
  int64_t n = av_type_num_elements(t);
  int64_t idx[kMaxRank] = {0};
  for (int64_t p = 0; p < n; p++) {
    int64_t off = 0;
    for (int d = 0; d < rank; d++) off = off * t->dims[d] + idx[d];
    memcpy(dst + (size_t)off * esz, src + (size_t)p * esz, esz);
    /* Advance the multi-index in physical order: minor_to_major[0] varies fastest. */
    for (int i = 0; i < rank; i++) {
      int64_t d = m2m->v[i];
      if (++idx[d] < t->dims[d]) break;
      idx[d] = 0;
    }
  }
  return true;
}

static bool layout_is_row_major(const hlo_ints *m2m) {
  for (size_t i = 0; i < m2m->n; i++)
    if (m2m->v[i] != (int64_t)(m2m->n - 1 - i)) return false;
  return true;
}

static bool literal_leaf(av_module *m, av_arena *scratch, const hlo_shape *shape,
                         hlo_bytes lit, const av_attr **out, const char **err) {
  const av_type *t = hlo_leaf_type(m, shape, err);
  if (!t) return false;
  if (t->kind != AV_TYPE_TENSOR) {
    *err = "constant of token type";
    return false;
  }
  int64_t n = shape_elements(t);
  if (n < 0) {
    *err = "constant with a dynamic or overflowing shape";
    return false;
  }
  av_dtype dt = t->dtype;
  size_t esz = av_dtype_size(dt);
  uint32_t num;
  lit_enc enc;
  if (!literal_field(dt, &num, &enc)) {
    *err = "literal element type not supported";
    return false;
  }
  /* Components per element: complex numbers are stored as (re, im) pairs. */
  size_t comps = av_dtype_is_complex(dt) ? 2 : 1;
  if ((uint64_t)n > SIZE_MAX / esz / 2) {
    *err = "literal too large";
    return false;
  }
  size_t total = (size_t)n * comps; /* scalar values expected in the field */
  size_t size = (size_t)n * esz;
  /* Each value takes at least this many input bytes: reject short literals before
   * allocating room for a huge declared shape. */
  size_t min_bytes = enc == ENC_BYTES ? size : enc == ENC_VARINT ? total
                     : enc == ENC_F32 ? total * 4 : total * 8;
  if (min_bytes > lit.n) {
    *err = "literal has fewer values than its shape";
    return false;
  }
  uint8_t *data = av_arena_alloc(scratch, size ? size : 1);
  if (!data) {
    *err = "out of memory";
    return false;
  }
  size_t got = 0;
  hlo_ints m2m = {0};
  bool has_layout = false;
  av_pb_cursor c;
  av_pb_field f;
  int r;
  av_pb_init(&c, lit.p, lit.n);
  while ((r = av_pb_next(&c, &f, err)) == 1) {
    if (f.num == 1 && f.wire == AV_PB_LEN) {
      hlo_shape ls;
      if (!hlo_proto_decode_shape(f.data, f.len, scratch, &ls, 0, err)) return false;
      if (ls.has_layout && ls.minor_to_major.n) {
        m2m = ls.minor_to_major;
        has_layout = true;
      }
      continue;
    }
    if (f.num != num) continue;
    if (enc == ENC_BYTES) {
      if (f.wire != AV_PB_LEN || f.len % esz || f.len > size - got * esz) {
        *err = "literal byte data does not match its shape";
        return false;
      }
      if (esz == 1) {
        for (size_t i = 0; i < f.len; i++) store_scalar(data, got + i, dt, f.data[i]);
      } else {
        memcpy(data + got * esz, f.data, f.len); /* little-endian raw elements */
      }
      got += f.len / esz;
      continue;
    }
    av_pb_wire elem = enc == ENC_VARINT ? AV_PB_VARINT : enc == ENC_F32 ? AV_PB_I32 : AV_PB_I64;
    av_pb_scalars it;
    uint64_t v;
    int s;
    if (!av_pb_scalars_begin(&it, &f, elem, err)) return false;
    while ((s = av_pb_scalars_next(&it, &v, err)) == 1) {
      if (got >= total) {
        *err = "literal has more values than its shape";
        return false;
      }
      size_t csz = esz / comps;
      for (size_t k = 0; k < csz; k++) data[got * csz + k] = (uint8_t)(v >> (8 * k));
      if (comps == 1 && esz == 1) store_scalar(data, got, dt, v);
      got++;
    }
    if (s < 0) return false;
  }
  if (r < 0) return false;
  size_t want = enc == ENC_BYTES ? (size_t)n : total;
  if (got != want) {
    *err = "literal has fewer values than its shape";
    return false;
  }
  if (has_layout && !layout_is_row_major(&m2m) && n > 1) {
    uint8_t *row = av_arena_alloc(scratch, size);
    if (!row) {
      *err = "out of memory";
      return false;
    }
    if (!to_row_major(row, data, t, esz, &m2m, err)) return false;
    data = row;
  }
  *out = av_attr_dense(m, t, data, size, false, false);
  if (!*out) *err = "out of memory";
  return *out != NULL;
}

static bool literal_tree(av_module *m, av_arena *scratch, const hlo_shape *shape, hlo_bytes lit,
                         const av_attr **out, size_t *k, int depth, const char **err) {
  if (!hlo_shape_is_tuple(shape)) return literal_leaf(m, scratch, shape, lit, &out[(*k)++], err);
  if (depth > 16) {
    *err = "tuple literal nested too deeply";
    return false;
  }
  size_t i = 0;
  av_pb_cursor c;
  av_pb_field f;
  int r;
  av_pb_init(&c, lit.p, lit.n);
  while ((r = av_pb_next(&c, &f, err)) == 1) {
    if (f.num != 10) continue;
    if (f.wire != AV_PB_LEN || i >= shape->ntuple) {
      *err = "tuple literal does not match its shape";
      return false;
    }
    if (!literal_tree(m, scratch, &shape->tuple[i], (hlo_bytes){f.data, f.len}, out, k,
                      depth + 1, err))
      return false;
    i++;
  }
  if (r < 0) return false;
  if (i != shape->ntuple) {
    *err = "tuple literal has the wrong number of elements";
    return false;
  }
  return true;
}

bool hlo_literal_leaves(av_module *m, av_arena *scratch, const hlo_shape *shape, hlo_bytes lit,
                        const av_attr **out, const char **err) {
  size_t k = 0;
  return literal_tree(m, scratch, shape, lit, out, &k, 0, err);
}
