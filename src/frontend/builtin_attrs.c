/* Builtin dialect attributes in MLIR bytecode (BuiltinDialectBytecode.td codes 0..23),
 * including locations (rendered to text: "file":line:col, names, call sites, fused). */
#include <stdio.h>
#include <string.h>

#include "frontend/bytecode_internal.h"

const av_attr *bc_read_attr_array(bc_reader *r, bc_cursor *c) {
  uint64_t n;
  if (!bc_read_varint(c, &n) || n > bc_remaining(c)) {
    bc_fail(r, c, "bad attribute list length");
    return NULL;
  }
  const av_attr **items = av_arena_calloc(&r->m->arena, (size_t)n + 1, sizeof *items);
  if (!items) return NULL;
  for (uint64_t i = 0; i < n; i++)
    if (!(items[i] = bc_read_attr(r, c))) return NULL;
  return av_attr_array(r->m, (size_t)n, items);
}

const av_attr *bc_read_attr_dict(bc_reader *r, bc_cursor *c) {
  uint64_t n;
  if (!bc_read_varint(c, &n) || n > bc_remaining(c) / 2) {
    bc_fail(r, c, "bad dictionary length");
    return NULL;
  }
  av_named_attr *items = av_arena_calloc(&r->m->arena, (size_t)n + 1, sizeof *items);
  if (!items) return NULL;
  for (uint64_t i = 0; i < n; i++) {
    const av_attr *name = bc_read_attr(r, c);
    if (!name) return NULL;
    if (name->kind != AV_ATTR_STRING) {
      bc_fail(r, c, "dictionary key is not a string");
      return NULL;
    }
    items[i].name = name->u.str.s;
    if (!(items[i].value = bc_read_attr(r, c))) return NULL;
  }
  return av_attr_dict(r->m, (size_t)n, items);
}

bool bc_read_typed_int(bc_reader *r, bc_cursor *c, av_dtype dt, int64_t *out) {
  int width = dt == AV_DT_INVALID ? 64 : av_dtype_bits(dt);
  if (!av_dtype_is_int(dt) && dt != AV_DT_PRED && dt != AV_DT_INVALID)
    return bc_fail(r, c, "integer attribute of non-integer type %s", av_dtype_mlir_name(dt));
  uint64_t bits;
  if (!bc_read_apint(r, c, (unsigned)width, &bits)) return false;
  if (width < 64 && av_dtype_is_signed_int(dt) && (bits >> (width - 1)) & 1)
    bits |= ~((UINT64_C(1) << width) - 1);
  memcpy(out, &bits, sizeof bits);
  return true;
}

const av_attr *bc_read_svarint_list(bc_reader *r, bc_cursor *c) {
  uint64_t n;
  if (!bc_read_varint(c, &n) || n > bc_remaining(c)) {
    bc_fail(r, c, "bad integer list length");
    return NULL;
  }
  int64_t *v = av_arena_calloc(&r->m->arena, (size_t)n + 1, sizeof *v);
  if (!v) return NULL;
  for (uint64_t i = 0; i < n; i++)
    if (!bc_read_svarint(c, &v[i])) {
      bc_fail(r, c, "truncated integer list");
      return NULL;
    }
  return av_attr_ints(r->m, (size_t)n, v);
}

/* ------------------------------------------------------------ locations */

static const av_attr *loc_text(bc_reader *r, bc_text *t) { return bc_opaque_from_text(r, t); }

static bool is_unknown_loc(const av_attr *a) {
  return a->kind == AV_ATTR_OPAQUE && strcmp(a->u.str.s, "unknown") == 0;
}

static const av_attr *read_loc(bc_reader *r, bc_cursor *c, uint64_t code) {
  char buf[BC_MAX_LOC_TEXT];
  bc_text t = {buf, 0, sizeof buf};
  buf[0] = '\0';
  switch (code) {
    case 10: { /* CallSiteLoc: callee, caller */
      const av_attr *callee = bc_read_attr(r, c), *caller = callee ? bc_read_attr(r, c) : NULL;
      if (!caller) return NULL;
      bc_text_put(&t, "callsite(", 9);
      bc_text_attr(&t, callee);
      bc_text_put(&t, " at ", 4);
      bc_text_attr(&t, caller);
      bc_text_put(&t, ")", 1);
      return loc_text(r, &t);
    }
    case 11: { /* FileLineColLoc: filename (StringAttr), line, column */
      const av_attr *file = bc_read_attr(r, c);
      uint64_t line, col;
      if (!file) return NULL;
      if (!bc_read_varint(c, &line) || !bc_read_varint(c, &col)) {
        bc_fail(r, c, "truncated file location");
        return NULL;
      }
      bc_text_attr(&t, file);
      bc_text_printf(&t, ":%llu:%llu", (unsigned long long)line, (unsigned long long)col);
      return loc_text(r, &t);
    }
    case 12:
    case 13: { /* FusedLoc [with metadata] */
      const av_attr *locs = bc_read_attr_array(r, c);
      if (!locs) return NULL;
      const av_attr *meta = NULL;
      if (code == 13 && !(meta = bc_read_attr(r, c))) return NULL;
      bc_text_put(&t, "fused", 5);
      if (meta) {
        bc_text_put(&t, "<", 1);
        bc_text_attr(&t, meta);
        bc_text_put(&t, ">", 1);
      }
      bc_text_attr(&t, locs);
      return loc_text(r, &t);
    }
    case 14: { /* NameLoc: name, child */
      const av_attr *name = bc_read_attr(r, c), *child = name ? bc_read_attr(r, c) : NULL;
      if (!child) return NULL;
      bc_text_attr(&t, name);
      if (!is_unknown_loc(child)) {
        bc_text_put(&t, "(", 1);
        bc_text_attr(&t, child);
        bc_text_put(&t, ")", 1);
      }
      return loc_text(r, &t);
    }
    case 15: bc_text_put(&t, "unknown", 7); return loc_text(r, &t);
    case 22: { /* FileLineColRange: filename, list of 0..4 numbers */
      const av_attr *file = bc_read_attr(r, c);
      uint64_t n, v[4] = {0};
      if (!file) return NULL;
      if (!bc_read_varint(c, &n) || n > 4) {
        bc_fail(r, c, "bad file location range");
        return NULL;
      }
      for (uint64_t i = 0; i < n; i++)
        if (!bc_read_varint(c, &v[i])) {
          bc_fail(r, c, "truncated file location range");
          return NULL;
        }
      bc_text_attr(&t, file);
      if (n >= 1) bc_text_printf(&t, ":%llu", (unsigned long long)v[0]);
      if (n >= 2) bc_text_printf(&t, ":%llu", (unsigned long long)v[1]);
      if (n == 3) bc_text_printf(&t, " to :%llu", (unsigned long long)v[2]);
      if (n == 4) bc_text_printf(&t, " to %llu:%llu", (unsigned long long)v[2], (unsigned long long)v[3]);
      return loc_text(r, &t);
    }
  }
  return NULL;
}

/* --------------------------------------------------------------- others */

static bool skip_affine_expr(bc_reader *r, bc_cursor *c, int depth) {
  uint64_t kind, u;
  int64_t s;
  if (depth > BC_MAX_DEPTH || !bc_read_varint(c, &kind)) return bc_fail(r, c, "bad affine expression");
  if (kind <= 1) return bc_read_varint(c, &u) || bc_fail(r, c, "truncated affine expression");
  if (kind == 2) return bc_read_svarint(c, &s) || bc_fail(r, c, "truncated affine expression");
  if (kind > 7) return bc_fail(r, c, "unknown affine expression kind %llu", (unsigned long long)kind);
  return skip_affine_expr(r, c, depth + 1) && skip_affine_expr(r, c, depth + 1);
}

/* Width of an integer type anvil has no dtype for ("i128", "si96", "ui7"); 0 otherwise. */
static unsigned wide_int_width(const av_type *t) {
  if (!t || t->kind != AV_TYPE_OTHER || !t->text) return 0;
  const char *p = t->text;
  if (*p == 's' || *p == 'u') p++;
  if (*p++ != 'i' || *p < '0' || *p > '9') return 0;
  unsigned w = 0;
  while (*p >= '0' && *p <= '9' && w < 100000) w = w * 10 + (unsigned)(*p++ - '0');
  return *p == '\0' ? w : 0;
}

static const av_attr *opaque(bc_reader *r, const char *text) {
  bc_text t = {(char *)text, strlen(text), strlen(text) + 1};
  return bc_opaque_from_text(r, &t);
}

static const av_attr *dense_array(bc_reader *r, bc_cursor *c) {
  av_dtype dt;
  const bc_type_slot *es;
  uint64_t n;
  const uint8_t *raw;
  size_t size;
  if (!bc_read_elem_dtype(r, c, &dt, &es)) return NULL;
  if (!bc_read_varint(c, &n) || !bc_read_blob(c, &raw, &size)) {
    bc_fail(r, c, "truncated dense array");
    return NULL;
  }
  size_t w = av_dtype_size(dt);
  if (w == 0 || n > size || size != n * w) {
    bc_fail(r, c, "dense array of %llu elements has %zu bytes", (unsigned long long)n, size);
    return NULL;
  }
  if (dt == AV_DT_S64) {
    int64_t *v = av_arena_calloc(&r->m->arena, (size_t)n + 1, sizeof *v);
    if (!v) return NULL;
    if (n) memcpy(v, raw, size);
    return av_attr_ints(r->m, (size_t)n, v);
  }
  if (dt == AV_DT_PRED) {
    bool *v = av_arena_calloc(&r->m->arena, (size_t)n + 1, sizeof *v);
    if (!v) return NULL;
    for (uint64_t i = 0; i < n; i++) v[i] = raw[i] != 0;
    return av_attr_bools(r->m, (size_t)n, v);
  }
  int64_t dim = (int64_t)n;
  const av_type *t = bc_tensor_type(r, es, 1, &dim, NULL);
  return t ? bc_make_dense(r, c, t, raw, size) : NULL;
}

const av_attr *bc_builtin_attr(bc_reader *r, bc_cursor *c) {
  uint64_t code, idx;
  if (!bc_read_varint(c, &code)) {
    bc_fail(r, c, "truncated builtin attribute");
    return NULL;
  }
  av_module *m = r->m;
  switch (code) {
    case 0: return bc_read_attr_array(r, c);
    case 1: return bc_read_attr_dict(r, c);
    case 2:
    case 3: { /* StringAttr [with type] */
      bc_str s;
      if (!bc_read_varint(c, &idx) || !bc_string(r, idx, &s)) break;
      if (code == 3 && !bc_read_type(r, c)) return NULL;
      return av_attr_string(m, AV_ATTR_STRING, s.s, s.len);
    }
    case 4: { /* FlatSymbolRefAttr */
      const av_attr *s = bc_read_attr(r, c);
      if (!s) return NULL;
      if (s->kind != AV_ATTR_STRING) break;
      return av_attr_string(m, AV_ATTR_SYMBOL, s->u.str.s, s->u.str.len);
    }
    case 5: { /* SymbolRefAttr: root + nested references, kept as "root::@a::@b" */
      const av_attr *root = bc_read_attr(r, c), *nested = root ? bc_read_attr_array(r, c) : NULL;
      if (!nested || root->kind != AV_ATTR_STRING) break;
      char buf[512];
      bc_text t = {buf, 0, sizeof buf};
      bc_text_put(&t, root->u.str.s, root->u.str.len);
      for (size_t i = 0; i < nested->u.array.n; i++) {
        bc_text_put(&t, "::", 2);
        bc_text_attr(&t, nested->u.array.items[i]);
      }
      return av_attr_string(m, AV_ATTR_SYMBOL, buf, t.len);
    }
    case 6: {
      const bc_type_slot *t = bc_read_type(r, c);
      return t ? av_attr_type(m, t->t) : NULL;
    }
    case 7: return av_attr_unit(m);
    case 8: { /* IntegerAttr */
      av_dtype dt;
      const bc_type_slot *ts = bc_read_type(r, c);
      if (!ts) return NULL;
      dt = ts->elem ? ts->t->dtype : AV_DT_INVALID;
      int64_t v;
      unsigned wide = wide_int_width(ts->t);
      if (wide) { /* e.g. i128: the value keeps its low 64 bits */
        uint64_t bits;
        if (!bc_read_apint(r, c, wide, &bits)) return NULL;
        if (wide < 64 && ts->t->text[0] != 'u' && ((bits >> (wide - 1)) & 1))
          bits |= ~((UINT64_C(1) << wide) - 1); /* sign-extend signless/signed */
        memcpy(&v, &bits, sizeof v);
        return av_attr_int(m, v, ts->t);
      }
      if (!bc_read_typed_int(r, c, dt, &v)) return NULL;
      if (dt == AV_DT_PRED) return av_attr_bool(m, v != 0);
      return av_attr_int(m, v, ts->t);
    }
    case 9: { /* FloatAttr */
      const bc_type_slot *ts = bc_read_type(r, c);
      if (!ts) return NULL;
      av_dtype dt = ts->elem ? ts->t->dtype : AV_DT_INVALID;
      unsigned w = bc_float_width(dt);
      uint64_t bits;
      if (w == 0) { /* f80/f128/tf32: keep the bits' existence, not the value */
        if (!bc_read_apint(r, c, ts->t->text && strcmp(ts->t->text, "tf32") == 0 ? 19 : 128, &bits))
          return NULL;
        return opaque(r, "<float of unsupported type>");
      }
      if (!bc_read_apint(r, c, w, &bits)) return NULL;
      return av_attr_float(m, bc_float_from_bits(dt, bits), ts->t);
    }
    case 10: case 11: case 12: case 13: case 14: case 15: case 22:
      return read_loc(r, c, code);
    case 16: { /* DenseResourceElementsAttr: type, resource handle */
      const bc_type_slot *ts = bc_read_type(r, c);
      if (!ts) return NULL;
      if (!bc_read_varint(c, &idx) || idx >= r->nresources) {
        bc_fail(r, c, "dense_resource refers to unknown resource handle");
        return NULL;
      }
      const bc_resource *res = &r->resources[idx];
      if (!res->data) return opaque(r, "dense_resource<__elided__>");
      return bc_make_dense(r, c, ts->t, res->data, res->size);
    }
    case 17: return dense_array(r, c);
    case 18: { /* DenseIntOrFPElementsAttr: type, raw data blob */
      const bc_type_slot *ts = bc_read_type(r, c);
      const uint8_t *raw;
      size_t size;
      if (!ts) return NULL;
      if (!bc_read_blob(c, &raw, &size)) break;
      return bc_make_dense(r, c, ts->t, raw, size);
    }
    case 19: { /* DenseStringElementsAttr -> array of strings */
      const bc_type_slot *ts = bc_read_type(r, c);
      uint64_t splat;
      if (!ts || !bc_read_varint(c, &splat)) break;
      int64_t n = splat ? 1 : bc_num_elements(ts->t);
      if (n < 0 || (uint64_t)n > bc_remaining(c)) break;
      const av_attr **items = av_arena_calloc(&m->arena, (size_t)n + 1, sizeof *items);
      if (!items) return NULL;
      for (int64_t i = 0; i < n; i++) {
        bc_str s;
        if (!bc_read_varint(c, &idx) || !bc_string(r, idx, &s)) return NULL;
        if (!(items[i] = av_attr_string(m, AV_ATTR_STRING, s.s, s.len))) return NULL;
      }
      return av_attr_array(m, (size_t)n, items);
    }
    case 20: /* SparseElementsAttr: type, indices, values */
      if (!bc_read_type(r, c) || !bc_read_attr(r, c) || !bc_read_attr(r, c)) return NULL;
      return opaque(r, "sparse<...>");
    case 21: return bc_read_attr(r, c); /* DistinctAttr: the referenced attribute */
    case 23: { /* AffineMapAttr */
      uint64_t nd, ns, nr;
      if (!bc_read_varint(c, &nd) || !bc_read_varint(c, &ns) || !bc_read_varint(c, &nr) ||
          nr > bc_remaining(c))
        break;
      for (uint64_t i = 0; i < nr; i++)
        if (!skip_affine_expr(r, c, 0)) return NULL;
      return opaque(r, "affine_map<...>");
    }
    default:
      bc_fail(r, c, "unknown builtin attribute code %llu", (unsigned long long)code);
      return NULL;
  }
  bc_fail(r, c, "malformed builtin attribute (code %llu)", (unsigned long long)code);
  return NULL;
}

/* Attributes stored as text (sdy attributes of old writers, unknown dialects, affine maps...).
 * A few simple builtin spellings are recognised; the rest is kept verbatim as OPAQUE. */
const av_attr *bc_textual_attr(bc_reader *r, const char *s, size_t len) {
  if (len == 4 && memcmp(s, "true", 4) == 0) return av_attr_bool(r->m, true);
  if (len == 5 && memcmp(s, "false", 5) == 0) return av_attr_bool(r->m, false);
  if (len == 4 && memcmp(s, "unit", 4) == 0) return av_attr_unit(r->m);
  const av_attr *a = av_attr_string(r->m, AV_ATTR_OPAQUE, s, len);
  if (!a) bc_fail(r, NULL, "out of memory");
  return a;
}
