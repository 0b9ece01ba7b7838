/* MLIR text reader: types and attributes (the structured StableHLO attributes are flattened
 * into the flat VHLO property names; dense literals are in mlir_text_dense.c). */
#include <stdlib.h>
#include <string.h>

#include "ir/float_codec.h"
#include "frontend/mlir_text_internal.h"
#include "frontend/quant_text.h"

/* ------------------------------------------------------------------ types */

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* Element type spellings: i32, si8, ui16, f32, bf16, f8E4M3FN, ... (not complex). */
av_dtype mt_ident_dtype(const mt_tok *t) {
  if (t->kind != MT_IDENT) return AV_DT_INVALID;
  if (mt_tok_is(t, "index")) return AV_DT_S64; /* as the bytecode reader does */
  return av_dtype_from_mlir_name(t->p, t->len);
}

/* Token text is not NUL-terminated (it points into the input): bounded scans only. */
static bool all_digits(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!is_digit(s[i])) return false;
  return true;
}

static bool ident_is_other_scalar(const mt_tok *t) {
  /* Builtin scalar types anvil has no dtype for (kept as text). */
  return mt_tok_is(t, "index") || mt_tok_is(t, "none") || mt_tok_is(t, "tf32") ||
         (t->kind == MT_IDENT && t->len >= 2 && (t->p[0] == 'i' || t->p[0] == 'f') &&
          mt_ident_dtype(t) == AV_DT_INVALID && all_digits(t->p + 1, t->len - 1));
}

bool mt_at_type(mt_parser *p) {
  const mt_tok *t = &p->tok;
  if (t->kind == MT_BANG || t->kind == MT_LPAREN) return true;
  if (t->kind != MT_IDENT) return false;
  return mt_tok_is(t, "tensor") || mt_tok_is(t, "tuple") || mt_tok_is(t, "complex") ||
         mt_tok_is(t, "memref") || mt_tok_is(t, "vector") || mt_ident_dtype(t) != AV_DT_INVALID ||
         ident_is_other_scalar(t);
}

static av_type *new_type(mt_parser *p, av_type_kind k) {
  av_type *t = av_arena_alloc(&p->m->arena, sizeof *t);
  if (!t) {
    mt_fail(p, "out of memory");
    return NULL;
  }
  t->kind = k;
  return t;
}

static const av_type *other_type(mt_parser *p, const char *s, size_t n, av_dtype dt) {
  av_type *t = new_type(p, AV_TYPE_OTHER);
  if (!t) return NULL;
  t->text = mt_strndup(p, s, n);
  t->dtype = dt;
  return t->text ? t : NULL;
}

const av_type *mt_scalar_type(mt_parser *p, av_dtype dt) {
  if ((unsigned)dt >= AV_DT_COUNT) return NULL;
  if (!p->scalar[dt]) {
    /* like the bytecode reader: a bare element type is a rank-0 tensor type */
    p->scalar[dt] = av_type_tensor(p->m, dt, 0, NULL);
    if (!p->scalar[dt]) mt_fail(p, "out of memory");
  }
  return p->scalar[dt];
}

/* Skips a balanced bracketed region starting at `s` (which is one of <([{), honouring
 * strings and `->`. Returns the position after the closer or NULL. */
const char *mt_skip_balanced(const char *s, const char *e) {
  char stack[MT_MAX_DEPTH];
  int depth = 0;
  for (const char *q = s; q < e; q++) {
    char c = *q;
    if (c == '\0') return NULL; /* kept text must be a C string */
    if (c == '"') {
      for (q++; q < e && *q != '"'; q++) {
        if (*q == '\\') q++;
        if (q < e && *q == '\0') return NULL;
      }
      if (q >= e) return NULL;
      continue;
    }
    if (c == '-' && q + 1 < e && q[1] == '>') {
      q++;
      continue;
    }
    char want = 0;
    if (c == '<') want = '>';
    if (c == '(') want = ')';
    if (c == '[') want = ']';
    if (c == '{') want = '}';
    if (want) {
      if (depth >= MT_MAX_DEPTH) return NULL;
      stack[depth++] = want;
      continue;
    }
    if (c == '>' || c == ')' || c == ']' || c == '}') {
      if (depth == 0 || stack[depth - 1] != c) return NULL;
      if (--depth == 0) return q + 1;
    }
  }
  return NULL;
}

/* Consumes a balanced group that starts at the current token and returns its text span
 * (from `start`). */
static bool take_balanced(mt_parser *p, const char *start, size_t *len) {
  const char *end = mt_skip_balanced(p->tok.p, p->lx.end);
  if (!end) return mt_fail(p, "unbalanced brackets");
  *len = (size_t)(end - start);
  p->lx.pos = end;
  mt_next(p);
  return true;
}

static const av_type *parse_tensor_type(mt_parser *p) {
  const char *start = p->tok.p; /* at `tensor` */
  mt_next(p);
  if (p->tok.kind != MT_LESS) {
    mt_fail(p, "expected '<' after 'tensor'");
    return NULL;
  }
  /* Dimensions are scanned on characters: `2x?x0x3xf32` does not tokenize well. */
  const char *q = p->tok.p + 1, *e = p->lx.end;
  int64_t dims[64];
  int rank = 0;
  for (;;) {
    while (q < e && (*q == ' ' || *q == '\n' || *q == '\t' || *q == '\r')) q++;
    if (q >= e) break;
    int64_t d;
    const char *r = q;
    if (*r == '?') {
      d = AV_DYNAMIC_DIM;
      r++;
    } else if (is_digit(*r)) {
      d = 0;
      while (r < e && is_digit(*r)) {
        if (d > (INT64_MAX - 9) / 10) {
          mt_fail(p, "tensor dimension too large");
          return NULL;
        }
        d = d * 10 + (*r - '0');
        r++;
      }
    } else if (*r == '*') {
      /* unranked tensor<*xf32>: kept as text */
      const char *end = mt_skip_balanced(p->tok.p, e);
      if (!end) {
        mt_fail(p, "unbalanced tensor type");
        return NULL;
      }
      p->lx.pos = end;
      mt_next(p);
      return other_type(p, start, (size_t)(end - start), AV_DT_INVALID);
    } else {
      break;
    }
    if (r >= e || *r != 'x') break; /* a number not followed by x: element type like i32? */
    if (rank >= 64) {
      mt_fail(p, "tensor rank too large");
      return NULL;
    }
    dims[rank++] = d;
    q = r + 1;
  }
  p->lx.pos = q;
  mt_next(p);
  const mt_tok elem_tok = p->tok;
  av_dtype dt = AV_DT_INVALID;
  bool known = false;
  if (mt_tok_is(&elem_tok, "complex")) {
    mt_next(p);
    if (!mt_expect(p, MT_LESS, "'<' after complex")) return NULL;
    av_dtype inner = mt_ident_dtype(&p->tok);
    if (inner != AV_DT_F32 && inner != AV_DT_F64) {
      mt_fail(p, "unsupported complex element type");
      return NULL;
    }
    mt_next(p);
    if (!mt_expect(p, MT_GREATER, "'>' closing complex")) return NULL;
    dt = inner == AV_DT_F32 ? AV_DT_C64 : AV_DT_C128;
    known = true;
  } else if ((dt = mt_ident_dtype(&elem_tok)) != AV_DT_INVALID) {
    mt_next(p);
    known = true;
  } else if ((size_t)(e - elem_tok.p) > 15 && memcmp(elem_tok.p, "!quant.uniform<", 15) == 0) {
    av_quant qt;
    size_t used;
    const char *why = av_parse_quant_type(p->m, elem_tok.p, (size_t)(e - elem_tok.p), &dt, &qt, &used);
    if (why) {
      mt_fail(p, "%s", why);
      return NULL;
    }
    p->lx.pos = elem_tok.p + used;
    mt_next(p);
    if (!mt_expect(p, MT_GREATER, "'>' closing tensor type")) return NULL;
    const av_type *t = av_type_quantized(p->m, dt, rank, dims, &qt);
    if (!t) mt_fail(p, "out of memory");
    return t;
  }
  if (!known) {
    /* quantized or other element types: keep the whole tensor type as text */
    const char *end = mt_skip_balanced(start + 6, e);
    if (!end || end < p->tok.p) {
      mt_fail(p, "bad tensor type");
      return NULL;
    }
    p->lx.pos = end;
    mt_next(p);
    return other_type(p, start, (size_t)(end - start), AV_DT_INVALID);
  }
  const av_attr *enc = NULL;
  if (mt_accept(p, MT_COMMA)) {
    enc = mt_parse_attr(p);
    if (!enc) return NULL;
  }
  if (!mt_expect(p, MT_GREATER, "'>' closing tensor type")) return NULL;
  av_type *t = (av_type *)av_type_tensor(p->m, dt, rank, dims);
  if (!t) {
    mt_fail(p, "out of memory");
    return NULL;
  }
  t->encoding = enc;
  return t;
}

static bool parse_type_list(mt_parser *p, const av_type ***out, int *n, mt_tok_kind close) {
  uint32_t cap = 0, cnt = 0;
  const av_type **v = NULL;
  if (p->tok.kind != close) {
    do {
      const av_type *t = mt_parse_type(p);
      if (!t) return false;
      if (!mt_grow(p, (void **)&v, &cap, cnt + 1, sizeof *v)) return false;
      v[cnt++] = t;
    } while (mt_accept(p, MT_COMMA));
  }
  if (!mt_expect(p, close, "closing bracket of type list")) return false;
  *out = v;
  *n = (int)cnt;
  return true;
}

static const av_type *parse_type_inner(mt_parser *p) {
  mt_tok t = p->tok;
  if (mt_tok_is(&t, "tensor")) return parse_tensor_type(p);
  if (mt_tok_is(&t, "tuple")) {
    mt_next(p);
    if (!mt_expect(p, MT_LESS, "'<' after tuple")) return NULL;
    const av_type **el;
    int n;
    if (!parse_type_list(p, &el, &n, MT_GREATER)) return NULL;
    const av_type *r = av_type_tuple(p->m, n, el);
    if (!r) mt_fail(p, "out of memory");
    return r;
  }
  if (t.kind == MT_LPAREN) {
    mt_next(p);
    const av_type **in;
    int nin;
    if (!parse_type_list(p, &in, &nin, MT_RPAREN)) return NULL;
    if (!mt_expect(p, MT_ARROW, "'->' in function type")) return NULL;
    const av_type **out;
    int nout;
    if (p->tok.kind == MT_LPAREN) {
      mt_next(p);
      if (!parse_type_list(p, &out, &nout, MT_RPAREN)) return NULL;
    } else {
      const av_type *one = mt_parse_type(p);
      if (!one) return NULL;
      out = &one;
      nout = 1;
      const av_type *r = av_type_function(p->m, nin, in, nout, out);
      if (!r) mt_fail(p, "out of memory");
      return r;
    }
    const av_type *r = av_type_function(p->m, nin, in, nout, out);
    if (!r) mt_fail(p, "out of memory");
    return r;
  }
  if (t.kind == MT_BANG) {
    if (t.len == 16 && memcmp(t.p, "!stablehlo.token", 16) == 0) {
      mt_next(p);
      return av_type_token(p->m);
    }
    const mt_alias *al = mt_find_alias(p, t.p, t.len);
    if (al && al->type) {
      mt_next(p);
      return al->type;
    }
    /* dialect type, maybe with a <...> body: keep as text */
    const char *start = t.p;
    size_t len = t.len;
    mt_next(p);
    if (p->tok.kind == MT_LESS && p->tok.p == start + len) {
      if (!take_balanced(p, start, &len)) return NULL;
    }
    return other_type(p, start, len, AV_DT_INVALID);
  }
  if (mt_tok_is(&t, "complex")) {
    mt_next(p);
    if (!mt_expect(p, MT_LESS, "'<' after complex")) return NULL;
    av_dtype inner = mt_ident_dtype(&p->tok);
    if (inner != AV_DT_F32 && inner != AV_DT_F64) {
      mt_fail(p, "unsupported complex element type");
      return NULL;
    }
    mt_next(p);
    if (!mt_expect(p, MT_GREATER, "'>' closing complex")) return NULL;
    return mt_scalar_type(p, inner == AV_DT_F32 ? AV_DT_C64 : AV_DT_C128);
  }
  av_dtype dt = mt_ident_dtype(&t);
  if (dt != AV_DT_INVALID) {
    mt_next(p);
    return mt_scalar_type(p, dt);
  }
  if (ident_is_other_scalar(&t)) {
    mt_next(p);
    return other_type(p, t.p, t.len, AV_DT_INVALID);
  }
  if (mt_tok_is(&t, "memref") || mt_tok_is(&t, "vector")) {
    mt_next(p);
    size_t len = 0;
    if (p->tok.kind != MT_LESS || !take_balanced(p, t.p, &len)) {
      mt_fail(p, "bad %.*s type", (int)t.len, t.p);
      return NULL;
    }
    return other_type(p, t.p, len, AV_DT_INVALID);
  }
  mt_fail(p, "expected a type");
  return NULL;
}

const av_type *mt_parse_type(mt_parser *p) {
  if (!mt_enter(p)) return NULL;
  const av_type *t = parse_type_inner(p);
  mt_leave(p);
  return t;
}

/* ------------------------------------------------------ structured attributes */

const av_attr *mt_int_attr(mt_parser *p, int64_t v, av_dtype dt) {
  const av_attr *a = av_attr_int(p->m, v, mt_scalar_type(p, dt));
  if (!a) mt_fail(p, "out of memory");
  return a;
}

const av_attr *mt_to_ints(mt_parser *p, const av_attr *a) {
  if (!a || a->kind != AV_ATTR_ARRAY) return a;
  size_t n = a->u.array.n;
  int64_t *v = av_arena_calloc(&p->m->arena, n ? n : 1, sizeof *v);
  if (!v) return NULL;
  for (size_t i = 0; i < n; i++) {
    if (a->u.array.items[i]->kind != AV_ATTR_INT) return a;
    v[i] = a->u.array.items[i]->u.i;
  }
  return av_attr_ints(p->m, n, v);
}

typedef struct kv_list {
  av_named_attr *items;
  uint32_t n, cap;
} kv_list;

static bool kv_add(mt_parser *p, kv_list *l, const char *name, const av_attr *v) {
  if (!v) return false;
  if (!mt_grow(p, (void **)&l->items, &l->cap, l->n + 1, sizeof *l->items)) return false;
  l->items[l->n].name = name;
  l->items[l->n].value = v;
  l->n++;
  return true;
}

static const av_attr *kv_dict(mt_parser *p, kv_list *l) {
  const av_attr *a = av_attr_dict(p->m, l->n, l->items);
  if (!a) mt_fail(p, "out of memory");
  return a;
}

static bool kv_has(const kv_list *l, const char *name) {
  for (uint32_t i = 0; i < l->n; i++)
    if (strcmp(l->items[i].name, name) == 0) return true;
  return false;
}

/* `key = value, ...` up to '>' (current token is the first key). Field values that are
 * integer lists become INTS. `rename` maps printed names to flat names (pairs). */
static const av_attr *parse_struct_fields(mt_parser *p, const char *const *rename,
                                          const char *const *defaults_ints) {
  kv_list l = {0};
  while (p->tok.kind != MT_GREATER) {
    if (p->tok.kind != MT_IDENT) {
      mt_fail(p, "expected a field name");
      return NULL;
    }
    const mt_tok key = p->tok;
    mt_next(p);
    if (!mt_expect(p, MT_EQUAL, "'=' after field name")) return NULL;
    const av_attr *v = mt_to_ints(p, mt_parse_attr(p));
    if (!v) return NULL;
    const char *name = NULL;
    for (int i = 0; rename && rename[i]; i += 2)
      if (strlen(rename[i]) == key.len && memcmp(rename[i], key.p, key.len) == 0)
        name = rename[i + 1];
    if (!name) name = mt_strndup(p, key.p, key.len);
    if (!kv_add(p, &l, name, v)) return NULL;
    if (!mt_accept(p, MT_COMMA)) break;
  }
  if (!mt_expect(p, MT_GREATER, "'>' closing attribute")) return NULL;
  for (int i = 0; defaults_ints && defaults_ints[i]; i++) {
    if (kv_has(&l, defaults_ints[i])) continue;
    if (strcmp(defaults_ints[i], "index_vector_dim") == 0) {
      if (!kv_add(p, &l, defaults_ints[i], mt_int_attr(p, 0, AV_DT_S64))) return NULL;
    } else if (!kv_add(p, &l, defaults_ints[i], av_attr_ints(p->m, 0, NULL))) {
      return NULL;
    }
  }
  return kv_dict(p, &l);
}

static const char *const kGatherDefaults[] = {
    "offset_dims", "collapsed_slice_dims", "operand_batching_dims",
    "start_indices_batching_dims", "start_index_map", "index_vector_dim", NULL};
static const char *const kScatterDefaults[] = {
    "update_window_dims", "inserted_window_dims", "input_batching_dims",
    "scatter_indices_batching_dims", "scatter_dims_to_operand_dims", "index_vector_dim", NULL};
static const char *const kDotDefaults[] = {
    "lhs_batching_dimensions", "rhs_batching_dimensions", "lhs_contracting_dimensions",
    "rhs_contracting_dimensions", NULL};
static const char *const kChannelRename[] = {"handle", "channel_id", "type", "channel_type", NULL};

/* One bracket of the conv dimension spec: returns batch/feature positions and spatial. */
static bool conv_dim_list(mt_parser *p, char a, char b, int64_t *pa, int64_t *pb,
                          int64_t *spatial, int *nspatial) {
  if (!mt_expect(p, MT_LBRACKET, "'[' in convolution dimensions")) return false;
  int64_t pos = 0;
  *pa = *pb = -1;
  int ns = 0;
  int64_t sp[64];
  for (int i = 0; i < 64; i++) sp[i] = -1;
  if (p->tok.kind != MT_RBRACKET) {
    do {
      if (p->tok.kind == MT_IDENT && p->tok.len == 1 && (p->tok.p[0] == a || p->tok.p[0] == b)) {
        if (p->tok.p[0] == a) *pa = pos;
        else *pb = pos;
      } else if (p->tok.kind == MT_INT) {
        uint64_t k;
        if (!mt_parse_u64(&p->tok, &k) || k >= 64) return mt_fail(p, "bad spatial dimension");
        sp[k] = pos;
        if ((int)k + 1 > ns) ns = (int)k + 1;
      } else {
        return mt_fail(p, "unexpected item in convolution dimensions");
      }
      mt_next(p);
      pos++;
      if (pos > 64) return mt_fail(p, "too many dimensions");
    } while (mt_accept(p, MT_COMMA));
  }
  if (!mt_expect(p, MT_RBRACKET, "']' in convolution dimensions")) return false;
  for (int i = 0; i < ns; i++)
    if (sp[i] < 0) return mt_fail(p, "missing spatial dimension %d", i);
  memcpy(spatial, sp, sizeof(int64_t) * (size_t)ns);
  *nspatial = ns;
  return true;
}

const av_attr *mt_parse_conv_dims(mt_parser *p) {
  int64_t ib, ifd, kif, kof, ob, of, is[64], ks[64], os[64];
  int nis, nks, nos;
  if (!conv_dim_list(p, 'b', 'f', &ib, &ifd, is, &nis)) return NULL;
  if (!mt_tok_is(&p->tok, "x")) {
    mt_fail(p, "expected 'x' in convolution dimensions");
    return NULL;
  }
  mt_next(p);
  if (!conv_dim_list(p, 'i', 'o', &kif, &kof, ks, &nks)) return NULL;
  if (!mt_expect(p, MT_ARROW, "'->' in convolution dimensions")) return NULL;
  if (!conv_dim_list(p, 'b', 'f', &ob, &of, os, &nos)) return NULL;
  kv_list l = {0};
  av_module *m = p->m;
  bool ok = kv_add(p, &l, "input_batch_dimension", mt_int_attr(p, ib, AV_DT_S64)) &&
            kv_add(p, &l, "input_feature_dimension", mt_int_attr(p, ifd, AV_DT_S64)) &&
            kv_add(p, &l, "input_spatial_dimensions", av_attr_ints(m, (size_t)nis, is)) &&
            kv_add(p, &l, "kernel_input_feature_dimension", mt_int_attr(p, kif, AV_DT_S64)) &&
            kv_add(p, &l, "kernel_output_feature_dimension", mt_int_attr(p, kof, AV_DT_S64)) &&
            kv_add(p, &l, "kernel_spatial_dimensions", av_attr_ints(m, (size_t)nks, ks)) &&
            kv_add(p, &l, "output_batch_dimension", mt_int_attr(p, ob, AV_DT_S64)) &&
            kv_add(p, &l, "output_feature_dimension", mt_int_attr(p, of, AV_DT_S64)) &&
            kv_add(p, &l, "output_spatial_dimensions", av_attr_ints(m, (size_t)nos, os));
  if (!ok) {
    if (!p->failed) mt_fail(p, "out of memory");
    return NULL;
  }
  return kv_dict(p, &l);
}

const av_attr *mt_parse_opaque_angle(mt_parser *p, const char *start) {
  size_t len = 0;
  if (!take_balanced(p, start, &len)) return NULL;
  const av_attr *a = av_attr_string(p->m, AV_ATTR_OPAQUE, start, len);
  if (!a) mt_fail(p, "out of memory");
  return a;
}

static bool tok_eq(const mt_tok *t, const char *s) {
  size_t n = strlen(s);
  return t->len == n && memcmp(t->p, s, n) == 0;
}

/* #stablehlo<kind VALUE>, #stablehlo.gather<...>, #alias, other #dialect<...> (opaque). */
static const av_attr *parse_hash_attr(mt_parser *p) {
  const mt_tok t = p->tok;
  mt_next(p);
  bool angle = p->tok.kind == MT_LESS && p->tok.p == t.p + t.len;
  if (!angle) {
    const mt_alias *al = mt_find_alias(p, t.p, t.len);
    if (al && al->attr) return al->attr;
    mt_fail(p, "unknown attribute alias %.*s", (int)t.len, t.p);
    return NULL;
  }
  if (tok_eq(&t, "#stablehlo") || tok_eq(&t, "#chlo") || tok_eq(&t, "#mhlo")) {
    /* enum: #stablehlo<comparison_direction EQ> */
    mt_tok save_tok = p->tok;
    const char *save_pos = p->lx.pos;
    mt_next(p);
    if (p->tok.kind == MT_IDENT) {
      mt_next(p);
      if (p->tok.kind == MT_IDENT) {
        const mt_tok v = p->tok;
        mt_next(p);
        if (mt_accept(p, MT_GREATER)) {
          const av_attr *a = av_attr_string(p->m, AV_ATTR_ENUM, v.p, v.len);
          if (!a) mt_fail(p, "out of memory");
          return a;
        }
      }
    }
    p->tok = save_tok;
    p->lx.pos = save_pos;
    return mt_parse_opaque_angle(p, t.p);
  }
  const char *const *defaults = NULL;
  const char *const *rename = NULL;
  bool structured = true;
  if (tok_eq(&t, "#stablehlo.gather")) {
    defaults = kGatherDefaults;
  } else if (tok_eq(&t, "#stablehlo.scatter")) {
    defaults = kScatterDefaults;
  } else if (tok_eq(&t, "#stablehlo.dot")) {
    defaults = kDotDefaults;
  } else if (tok_eq(&t, "#stablehlo.channel_handle")) {
    rename = kChannelRename;
  } else if (tok_eq(&t, "#stablehlo.dot_algorithm") ||
             tok_eq(&t, "#stablehlo.output_operand_alias") ||
             tok_eq(&t, "#stablehlo.result_accuracy")) {
  } else if (tok_eq(&t, "#stablehlo.result_accuracy_mode")) {
    mt_next(p); /* < */
    if (p->tok.kind != MT_IDENT) {
      mt_fail(p, "expected a mode name");
      return NULL;
    }
    const mt_tok v = p->tok;
    mt_next(p);
    if (!mt_expect(p, MT_GREATER, "'>' closing result_accuracy_mode")) return NULL;
    const av_attr *a = av_attr_string(p->m, AV_ATTR_ENUM, v.p, v.len);
    if (!a) mt_fail(p, "out of memory");
    return a;
  } else if (tok_eq(&t, "#stablehlo.type_extensions")) {
    /* bounds = [16, ?] -> INTS with AV_DYNAMIC_DIM for '?', like the bytecode reader */
    mt_next(p); /* < */
    if (!mt_accept_word(p, "bounds") || !mt_expect(p, MT_EQUAL, "'=' after bounds") ||
        !mt_expect(p, MT_LBRACKET, "'[' of bounds"))
      return NULL;
    int64_t *v = NULL;
    uint32_t n = 0, cap = 0;
    if (p->tok.kind != MT_RBRACKET) {
      do {
        if (!mt_grow(p, (void **)&v, &cap, n + 1, sizeof *v)) return NULL;
        if (mt_accept(p, MT_QUESTION)) {
          v[n++] = AV_DYNAMIC_DIM;
        } else if (!mt_parse_int(p, &v[n++])) {
          return NULL;
        }
      } while (mt_accept(p, MT_COMMA));
    }
    if (!mt_expect(p, MT_RBRACKET, "']' of bounds") ||
        !mt_expect(p, MT_GREATER, "'>' closing type_extensions"))
      return NULL;
    const av_attr *a = av_attr_ints(p->m, n, v);
    if (!a) mt_fail(p, "out of memory");
    return a;
  } else if (tok_eq(&t, "#stablehlo.conv")) {
    mt_next(p); /* < */
    const av_attr *a;
    if (mt_accept_word(p, "raw")) {
      a = parse_struct_fields(p, NULL, NULL);
    } else {
      a = mt_parse_conv_dims(p);
      if (a && !mt_expect(p, MT_GREATER, "'>' closing #stablehlo.conv")) return NULL;
    }
    return a;
  } else {
    structured = false;
  }
  if (!structured) return mt_parse_opaque_angle(p, t.p);
  mt_next(p); /* < */
  return parse_struct_fields(p, rename, defaults);
}

static bool attr_name_is_structured(const char *name) {
  return strcmp(name, "dot_dimension_numbers") == 0 || strcmp(name, "dimension_numbers") == 0 ||
         strcmp(name, "scatter_dimension_numbers") == 0 || strcmp(name, "channel_handle") == 0 ||
         strcmp(name, "algorithm") == 0;
}

bool mt_add_attr(mt_parser *p, av_named_attr **attrs, uint32_t *n, uint32_t *cap,
                 const char *name, const av_attr *value) {
  if (!value) return false;
  if (value->kind == AV_ATTR_DICT && attr_name_is_structured(name)) {
    for (size_t i = 0; i < value->u.dict.n; i++)
      if (!mt_add_attr(p, attrs, n, cap, value->u.dict.items[i].name,
                       value->u.dict.items[i].value))
        return false;
    return true;
  }
  if (!mt_grow(p, (void **)attrs, cap, *n + 1, sizeof **attrs)) return false;
  (*attrs)[*n].name = name;
  (*attrs)[*n].value = value;
  (*n)++;
  return true;
}

bool mt_parse_attr_dict(mt_parser *p, av_named_attr **attrs, uint32_t *n, uint32_t *cap) {
  if (!mt_expect(p, MT_LBRACE, "'{'")) return false;
  if (!mt_enter(p)) return false;
  bool ok = true;
  while (p->tok.kind != MT_RBRACE) {
    const mt_tok key = p->tok;
    char *name;
    if (key.kind == MT_IDENT) {
      name = mt_strndup(p, key.p, key.len);
    } else if (key.kind == MT_STRING) {
      name = av_arena_alloc(&p->m->arena, key.len + 1);
      if (name) name[mt_string_decode(&key, name)] = '\0';
    } else {
      ok = mt_fail(p, "expected an attribute name");
      break;
    }
    if (!name) {
      ok = mt_fail(p, "out of memory");
      break;
    }
    mt_next(p);
    const av_attr *v;
    if (mt_accept(p, MT_EQUAL)) {
      v = mt_parse_attr(p);
    } else {
      v = av_attr_unit(p->m);
    }
    if (!v || !mt_add_attr(p, attrs, n, cap, name, v)) {
      ok = false;
      break;
    }
    if (!mt_accept(p, MT_COMMA)) break;
  }
  mt_leave(p);
  return ok && mt_expect(p, MT_RBRACE, "'}' closing attribute dictionary");
}

/* Number literal with optional `: type`. */
static const av_attr *parse_number_attr(mt_parser *p) {
  bool neg = mt_accept(p, MT_MINUS);
  const mt_tok t = p->tok;
  if (t.kind != MT_INT && t.kind != MT_FLOAT) {
    mt_fail(p, "expected a number");
    return NULL;
  }
  mt_next(p);
  const av_type *type = NULL;
  if (p->tok.kind == MT_COLON) {
    /* `1 : i64` (but not `%x, 1 : ...` in pretty forms: only a scalar type qualifies) */
    mt_tok save = p->tok;
    const char *save_pos = p->lx.pos;
    mt_next(p);
    if (mt_at_type(p) && p->tok.kind != MT_LPAREN && !mt_tok_is(&p->tok, "tensor") &&
        !mt_tok_is(&p->tok, "tuple")) {
      type = mt_parse_type(p);
      if (!type) return NULL;
    } else {
      p->tok = save;
      p->lx.pos = save_pos;
    }
  }
  av_dtype dt = type ? type->dtype : AV_DT_INVALID;
  bool float_type = av_dtype_is_float(dt);
  if (t.kind == MT_FLOAT && type && !float_type) {
    mt_fail(p, "float literal with a non-float type");
    return NULL;
  }
  if (t.kind == MT_FLOAT || float_type) {
    double v;
    if (t.kind == MT_INT && mt_is_hex_tok(&t) && float_type) {
      uint64_t bits;
      if (neg || !mt_parse_u64(&t, &bits)) {
        mt_fail(p, "bad hexadecimal float");
        return NULL;
      }
      v = av_float_decode(bits, dt);
    } else if (!mt_tok_to_double(p, &t, neg, &v, NULL, NULL)) {
      return NULL;
    }
    if (float_type && dt != AV_DT_F64) v = av_float_decode(av_float_encode(v, dt), dt); /* the value of its type */
    const av_attr *a = av_attr_float(p->m, v, type);
    if (!a) mt_fail(p, "out of memory");
    return a;
  }
  uint64_t u;
  if (!mt_parse_u64(&t, &u)) {
    mt_fail(p, "integer literal out of range");
    return NULL;
  }
  int64_t v;
  if (neg) {
    if (u > (uint64_t)INT64_MAX + 1) {
      mt_fail(p, "integer literal out of range");
      return NULL;
    }
    v = (int64_t)(0 - u);
  } else {
    v = (int64_t)u; /* ui64 values above INT64_MAX wrap; the bits are kept */
  }
  if (dt == AV_DT_PRED) {
    const av_attr *a = av_attr_bool(p->m, v != 0);
    if (!a) mt_fail(p, "out of memory");
    return a;
  }
  const av_attr *a = av_attr_int(p->m, v, type);
  if (!a) mt_fail(p, "out of memory");
  return a;
}

static const av_attr *parse_attr_inner(mt_parser *p) {
  mt_tok t = p->tok;
  av_module *m = p->m;
  const av_attr *a = NULL;
  switch (t.kind) {
    case MT_INT:
    case MT_FLOAT:
    case MT_MINUS:
      return parse_number_attr(p);
    case MT_STRING: {
      char *buf = av_arena_alloc(&m->arena, t.len + 1);
      if (!buf) break;
      size_t n = mt_string_decode(&t, buf);
      mt_next(p);
      a = av_attr_string(m, AV_ATTR_STRING, buf, n);
      break;
    }
    case MT_AT: {
      /* @sym or @"sym", optionally nested @a::@b (kept as one string) */
      const char *start = t.p;
      size_t len = t.len;
      mt_next(p);
      char *buf = av_arena_alloc(&m->arena, len + 1);
      if (!buf) break;
      size_t n;
      if (len > 1 && start[1] == '"') {
        n = mt_string_decode(&t, buf);
      } else {
        n = len - 1;
        memcpy(buf, start + 1, n);
      }
      a = av_attr_string(m, AV_ATTR_SYMBOL, buf, n);
      break;
    }
    case MT_LBRACKET: {
      mt_next(p);
      uint32_t cap = 0, n = 0;
      const av_attr **items = NULL;
      if (p->tok.kind != MT_RBRACKET) {
        do {
          const av_attr *it = mt_parse_attr(p);
          if (!it) return NULL;
          if (!mt_grow(p, (void **)&items, &cap, n + 1, sizeof *items)) return NULL;
          items[n++] = it;
        } while (mt_accept(p, MT_COMMA));
      }
      if (!mt_expect(p, MT_RBRACKET, "']' closing array")) return NULL;
      a = av_attr_array(m, n, items);
      break;
    }
    case MT_LBRACE: {
      uint32_t cap = 0, n = 0;
      av_named_attr *items = NULL;
      if (!mt_parse_attr_dict(p, &items, &n, &cap)) return NULL;
      a = av_attr_dict(m, n, items);
      break;
    }
    case MT_HASH:
      return parse_hash_attr(p);
    case MT_LESS:
      return mt_parse_opaque_angle(p, t.p);
    case MT_IDENT:
      if (mt_tok_is(&t, "true") || mt_tok_is(&t, "false")) {
        mt_next(p);
        a = av_attr_bool(m, t.p[0] == 't');
        break;
      }
      if (mt_tok_is(&t, "unit")) {
        mt_next(p);
        a = av_attr_unit(m);
        break;
      }
      if (mt_tok_is(&t, "dense")) return mt_parse_dense(p);
      if (mt_tok_is(&t, "array")) return mt_parse_dense_array(p);
      if (mt_tok_is(&t, "dense_resource") || mt_tok_is(&t, "affine_map") ||
          mt_tok_is(&t, "sparse") || mt_tok_is(&t, "distinct") || mt_tok_is(&t, "strided")) {
        mt_next(p);
        if (p->tok.kind == MT_LBRACKET) { /* distinct[0]<...> */
          mt_next(p);
          if (p->tok.kind == MT_INT) mt_next(p);
          if (!mt_expect(p, MT_RBRACKET, "']'")) return NULL;
        }
        if (p->tok.kind != MT_LESS) {
          mt_fail(p, "expected '<'");
          return NULL;
        }
        return mt_parse_opaque_angle(p, t.p);
      }
      /* fallthrough: a type */
      /* FALLTHROUGH */
    case MT_BANG:
    case MT_LPAREN:
      if (mt_at_type(p)) {
        const av_type *ty = mt_parse_type(p);
        if (!ty) return NULL;
        a = av_attr_type(m, ty);
        break;
      }
      mt_fail(p, "expected an attribute value");
      return NULL;
    default:
      mt_fail(p, "expected an attribute value");
      return NULL;
  }
  if (!a && !p->failed) mt_fail(p, "out of memory");
  return a;
}

const av_attr *mt_parse_attr(mt_parser *p) {
  if (!mt_enter(p)) return NULL;
  const av_attr *a = parse_attr_inner(p);
  mt_leave(p);
  return p->failed ? NULL : a;
}

const av_attr *mt_parse_struct_angle(mt_parser *p) {
  if (!mt_expect(p, MT_LESS, "'<' starting a structured attribute")) return NULL;
  return parse_struct_fields(p, NULL, NULL);
}

const av_attr *mt_parse_opaque_wrapped(mt_parser *p, const char *prefix, const char *suffix) {
  const char *start = p->tok.p;
  size_t len = 0;
  if (!take_balanced(p, start, &len)) return NULL;
  size_t np = strlen(prefix), ns = strlen(suffix);
  char *buf = av_arena_alloc(&p->m->arena, np + len + ns + 1);
  if (!buf) {
    mt_fail(p, "out of memory");
    return NULL;
  }
  memcpy(buf, prefix, np);
  memcpy(buf + np, start, len);
  memcpy(buf + np + len, suffix, ns);
  const av_attr *a = av_attr_string(p->m, AV_ATTR_OPAQUE, buf, np + len + ns);
  if (!a) mt_fail(p, "out of memory");
  return a;
}
