/* MLIR text reader: the pretty (custom assembly) forms of StableHLO/CHLO/func/check ops.
 *
 * Rather than one grammar per op, one loop reads the pieces these forms are made of —
 * operands, `keyword = value`, positional enums (`EQ`, `FLOAT`), positional attributes
 * (`dense<...>`, `@callee`, `"name"`, `<...>`), parenthesised groups (`(%x init: %c)`,
 * `(%iterArg = %0)`, `(%arg: type)`), `[...]` suffixes (slice, get_tuple_element), attribute
 * dictionaries, regions, and the trailing type signature — and then maps them to the op's
 * flat attribute names. Result types come from the signature; when it does not say
 * (`: tensor<f32>`, `: tensor<i1>, tensor<f32>`), the number of bound result names does. */
#include <string.h>

#include "frontend/mlir_text_internal.h"

typedef struct pretty {
  mt_opb *b;
  const av_attr *pos[4]; /* positional attributes */
  int npos;
  bool pos_typed; /* a positional dense<...> : type consumed the signature */
  mt_tok enums[4];
  int nenums;
  av_value **inits; /* reduce: (%x init: %c) */
  uint32_t ninits, capinits;
  mt_tok *rnames; /* pending region argument names/types: (%arg: T) */
  const av_type **rtypes;
  uint32_t nr, capr, capr2;
  mt_tok *iters; /* while: (%iterArg = %0) */
  uint32_t niters, capiters;
  mt_tok applies;
  bool has_applies;
  bool has_sig, sig_functional;
  const av_type **sig; /* plain list, or the results of a functional signature */
  uint32_t nsig, capsig;
} pretty;

static bool is_op(const mt_opb *b, const char *name) { return strcmp(b->name, name) == 0; }

static bool add_attr(mt_parser *p, mt_opb *b, const char *name, const av_attr *v) {
  return mt_add_attr(p, &b->attrs, &b->nattrs, &b->capattrs, name, v);
}

/* ------------------------------------------------------------ lookahead */

static bool at_result_list(mt_parser *p) {
  mt_lexer lx = p->lx;
  mt_tok t = p->tok;
  for (;;) {
    if (t.kind != MT_PERCENT) return false;
    t = mt_lex(&lx);
    if (t.kind == MT_COLON) {
      t = mt_lex(&lx);
      if (t.kind != MT_INT) return false;
      t = mt_lex(&lx);
    }
    if (t.kind == MT_EQUAL) return true;
    if (t.kind != MT_COMMA) return false;
    t = mt_lex(&lx);
  }
}

/* After `{`: a region (ops, block label) rather than an attribute dictionary? */
static bool at_region(mt_parser *p) {
  mt_lexer lx = p->lx;
  mt_tok t = mt_lex(&lx);
  if (t.kind == MT_PERCENT || t.kind == MT_CARET) return true;
  if (t.kind == MT_RBRACE) return false;
  mt_tok u = mt_lex(&lx);
  if (t.kind == MT_STRING) return u.kind == MT_LPAREN;
  if (t.kind == MT_IDENT) return u.kind != MT_EQUAL && u.kind != MT_COMMA && u.kind != MT_RBRACE;
  return false;
}

static bool starts_type(const mt_tok *t) {
  if (t->kind == MT_BANG || t->kind == MT_LPAREN) return true;
  if (t->kind != MT_IDENT) return false;
  return mt_tok_is(t, "tensor") || mt_tok_is(t, "tuple") || mt_tok_is(t, "complex") ||
         av_dtype_from_mlir_name(t->p, t->len) != AV_DT_INVALID || mt_tok_is(t, "index");
}

/* ------------------------------------------------------------ values */

static const av_attr *list_to_typed(mt_parser *p, const av_attr *a) {
  if (!a || a->kind != AV_ATTR_ARRAY) return a;
  size_t n = a->u.array.n;
  bool all_int = true, all_bool = n > 0;
  for (size_t i = 0; i < n; i++) {
    av_attr_kind k = a->u.array.items[i]->kind;
    all_int = all_int && k == AV_ATTR_INT;
    all_bool = all_bool && k == AV_ATTR_BOOL;
  }
  if (all_int) return mt_to_ints(p, a);
  if (all_bool) {
    bool *v = av_arena_calloc(&p->m->arena, n, sizeof *v);
    if (!v) return NULL;
    for (size_t i = 0; i < n; i++) v[i] = a->u.array.items[i]->u.b;
    return av_attr_bools(p->m, n, v);
  }
  return a;
}

static bool is_plain_word(const mt_tok *t) {
  return t->kind == MT_IDENT && !mt_tok_is(t, "true") && !mt_tok_is(t, "false") &&
         !mt_tok_is(t, "dense") && !mt_tok_is(t, "array") && !mt_tok_is(t, "unit") &&
         !starts_type(t);
}

static const av_attr *enum_attr(mt_parser *p, const mt_tok *t) {
  const av_attr *a = av_attr_string(p->m, AV_ATTR_ENUM, t->p, t->len);
  if (!a) mt_fail(p, "out of memory");
  return a;
}

/* Value after `keyword =`: bare words are enums, integer lists become INTS. */
static const av_attr *pretty_value(mt_parser *p) {
  if (is_plain_word(&p->tok)) {
    const mt_tok t = p->tok;
    mt_next(p);
    return enum_attr(p, &t);
  }
  if (p->tok.kind != MT_LBRACKET) return mt_parse_attr(p);
  mt_next(p);
  const av_attr **items = NULL;
  uint32_t n = 0, cap = 0;
  if (p->tok.kind != MT_RBRACKET) {
    do {
      const av_attr *it;
      if (is_plain_word(&p->tok)) {
        const mt_tok t = p->tok;
        mt_next(p);
        it = enum_attr(p, &t);
      } else {
        it = mt_parse_attr(p);
      }
      if (!it || !mt_grow(p, (void **)&items, &cap, n + 1, sizeof *items)) return NULL;
      items[n++] = it;
    } while (mt_accept(p, MT_COMMA));
  }
  if (!mt_expect(p, MT_RBRACKET, "']' closing list")) return NULL;
  const av_attr *a = av_attr_array(p->m, n, items);
  if (!a) {
    mt_fail(p, "out of memory");
    return NULL;
  }
  return list_to_typed(p, a);
}

static const av_attr *typed_int(mt_parser *p, const av_attr *a) {
  if (!a) return NULL;
  if (a->kind != AV_ATTR_INT) {
    mt_fail(p, "expected an integer");
    return NULL;
  }
  return a->type ? a : mt_int_attr(p, a->u.i, AV_DT_S64);
}

static const av_attr *as_ints(mt_parser *p, const av_attr *a) {
  if (!a) return NULL;
  if (a->kind != AV_ATTR_INTS) {
    mt_fail(p, "expected a list of integers");
    return NULL;
  }
  return a;
}

typedef struct kw_map {
  const char *op, *kw, *attr;
  char conv; /* 'I' ints, 'i' int, 'e' enum, 'r' as parsed */
} kw_map;

static const kw_map kKeywords[] = {
    {"stablehlo.broadcast_in_dim", "dims", "broadcast_dimensions", 'I'},
    {"stablehlo.dynamic_broadcast_in_dim", "dims", "broadcast_dimensions", 'I'},
    {"stablehlo.broadcast", "sizes", "broadcast_sizes", 'I'},
    {"stablehlo.transpose", "dims", "permutation", 'I'},
    {"stablehlo.reverse", "dims", "dimensions", 'I'},
    {"stablehlo.reduce", "dimensions", "dimensions", 'I'},
    {"stablehlo.concatenate", "dim", "dimension", 'i'},
    {"stablehlo.iota", "dim", "iota_dimension", 'i'},
    {"stablehlo.dynamic_iota", "dim", "iota_dimension", 'i'},
    {"stablehlo.get_dimension_size", "dim", "dimension", 'i'},
    {"stablehlo.set_dimension_size", "dim", "dimension", 'i'},
    {"stablehlo.dynamic_slice", "sizes", "slice_sizes", 'I'},
    {"stablehlo.pad", "low", "edge_padding_low", 'I'},
    {"stablehlo.pad", "high", "edge_padding_high", 'I'},
    {"stablehlo.pad", "interior", "interior_padding", 'I'},
    {"stablehlo.fft", "type", "fft_type", 'e'},
    {"stablehlo.fft", "length", "fft_length", 'I'},
    {"stablehlo.rng_bit_generator", "algorithm", "rng_algorithm", 'e'},
    {"stablehlo.rng", "distribution", "rng_distribution", 'e'},
    {"stablehlo.dot_general", "precision", "precision_config", 'r'},
    {"stablehlo.dot", "precision", "precision_config", 'r'},
    {"stablehlo.convolution", "precision", "precision_config", 'r'},
    {"chlo.top_k", "k", "k", 'i'},
    {"stablehlo.einsum", "config", "einsum_config", 'r'},
    {"stablehlo.unary_einsum", "config", "einsum_config", 'r'},
    {NULL, NULL, NULL, 0},
};

/* `window = {stride = [..], pad = [[l, h], ..], lhs_dilate = .., rhs_dilate = .., reverse = ..}` */
static bool conv_window(mt_parser *p, mt_opb *b) {
  const av_attr *d = mt_parse_attr(p);
  if (!d) return false;
  if (d->kind != AV_ATTR_DICT) return mt_fail(p, "expected a window dictionary");
  for (size_t i = 0; i < d->u.dict.n; i++) {
    const char *k = d->u.dict.items[i].name;
    const av_attr *v = list_to_typed(p, d->u.dict.items[i].value);
    if (!v) return false;
    const char *name = NULL;
    if (strcmp(k, "stride") == 0) name = "window_strides";
    if (strcmp(k, "lhs_dilate") == 0) name = "lhs_dilation";
    if (strcmp(k, "rhs_dilate") == 0) name = "rhs_dilation";
    if (name) {
      if (!as_ints(p, v) || !add_attr(p, b, name, v)) return false;
      continue;
    }
    if (strcmp(k, "reverse") == 0) {
      if (v->kind == AV_ATTR_INTS) {
        bool *bv = av_arena_calloc(&p->m->arena, v->u.ints.n + 1, sizeof *bv);
        if (!bv) return mt_fail(p, "out of memory");
        for (size_t j = 0; j < v->u.ints.n; j++) bv[j] = v->u.ints.v[j] != 0;
        v = av_attr_bools(p->m, v->u.ints.n, bv);
      }
      if (!v || v->kind != AV_ATTR_BOOLS) return mt_fail(p, "bad window reverse");
      if (!add_attr(p, b, "window_reversal", v)) return false;
      continue;
    }
    if (strcmp(k, "pad") == 0) {
      if (v->kind != AV_ATTR_ARRAY) return mt_fail(p, "bad window padding");
      size_t n = v->u.array.n;
      int64_t *vals = av_arena_calloc(&p->m->arena, 2 * n + 1, sizeof *vals);
      if (!vals) return mt_fail(p, "out of memory");
      for (size_t j = 0; j < n; j++) {
        const av_attr *pair = mt_to_ints(p, v->u.array.items[j]);
        if (!pair || pair->kind != AV_ATTR_INTS || pair->u.ints.n != 2)
          return mt_fail(p, "window padding entries must be [low, high]");
        vals[2 * j] = pair->u.ints.v[0];
        vals[2 * j + 1] = pair->u.ints.v[1];
      }
      int64_t dims[2] = {(int64_t)n, 2};
      const av_type *t = av_type_tensor(p->m, AV_DT_S64, 2, dims);
      const av_attr *a = t ? av_attr_dense(p->m, t, vals, 2 * n * sizeof *vals, false, true) : NULL;
      if (!a) return mt_fail(p, "out of memory");
      if (!add_attr(p, b, "padding", a)) return false;
      continue;
    }
    return mt_fail(p, "unknown window field '%s'", k);
  }
  return true;
}

/* `batching_dims = [0] x [0]` / `contracting_dims = [1] x [0]` */
static bool dims_pair(mt_parser *p, mt_opb *b, const char *lhs, const char *rhs) {
  const av_attr *l = as_ints(p, pretty_value(p));
  if (!l) return false;
  if (!mt_accept_word(p, "x")) return mt_fail(p, "expected 'x' between dimension lists");
  const av_attr *r = as_ints(p, pretty_value(p));
  return r && add_attr(p, b, lhs, l) && add_attr(p, b, rhs, r);
}

static bool keyword(mt_parser *p, pretty *pr) {
  mt_opb *b = pr->b;
  const mt_tok kw = p->tok;
  mt_next(p);
  if (!mt_expect(p, MT_EQUAL, "'=' after keyword")) return false;
  if (is_op(b, "sdy.manual_computation")) {
    /* spelled as the bytecode reader keeps them */
    if (mt_tok_is(&kw, "in_shardings") || mt_tok_is(&kw, "out_shardings"))
      return add_attr(p, b, mt_tok_is(&kw, "in_shardings") ? "in_shardings" : "out_shardings",
                      mt_parse_opaque_wrapped(p, "#sdy.sharding_per_value<", ">"));
    if (mt_tok_is(&kw, "manual_axes"))
      return add_attr(p, b, "manual_axes", mt_parse_opaque_wrapped(p, "#sdy<manual_axes", ">"));
  }
  if (mt_tok_is(&kw, "dim_numbers")) return add_attr(p, b, "dimension_numbers", mt_parse_conv_dims(p));
  if (mt_tok_is(&kw, "window")) return conv_window(p, b);
  if (mt_tok_is(&kw, "batching_dims"))
    return dims_pair(p, b, "lhs_batching_dimensions", "rhs_batching_dimensions");
  if (mt_tok_is(&kw, "contracting_dims"))
    return dims_pair(p, b, "lhs_contracting_dimensions", "rhs_contracting_dimensions");
  if (mt_tok_is(&kw, "algorithm") && p->tok.kind == MT_LESS)
    return add_attr(p, b, "algorithm", mt_parse_struct_angle(p));
  if (mt_tok_is(&kw, "format") && is_op(b, "stablehlo.reduce_precision")) {
    /* e5m10 */
    const mt_tok t = p->tok;
    int64_t e = 0, m = 0;
    size_t i = 1;
    bool ok = t.kind == MT_IDENT && t.len >= 4 && t.p[0] == 'e';
    while (ok && i < t.len && t.p[i] >= '0' && t.p[i] <= '9' && e < 100000) e = e * 10 + (t.p[i++] - '0');
    ok = ok && i > 1 && i < t.len && t.p[i] == 'm';
    size_t j = ++i;
    while (ok && i < t.len && t.p[i] >= '0' && t.p[i] <= '9' && m < 100000) m = m * 10 + (t.p[i++] - '0');
    ok = ok && i == t.len && i > j;
    if (!ok) return mt_fail(p, "expected a format like e5m10");
    mt_next(p);
    return add_attr(p, b, "exponent_bits", mt_int_attr(p, e, AV_DT_S32)) &&
           add_attr(p, b, "mantissa_bits", mt_int_attr(p, m, AV_DT_S32));
  }
  const char *name = NULL;
  char conv = 'r';
  for (const kw_map *k = kKeywords; k->op; k++) {
    if (is_op(b, k->op) && mt_tok_is(&kw, k->kw)) {
      name = k->attr;
      conv = k->conv;
      break;
    }
  }
  if (!name) name = mt_strndup(p, kw.p, kw.len);
  if (!name) return false;
  const av_attr *v = pretty_value(p);
  if (!v) return false;
  switch (conv) {
    case 'I': v = as_ints(p, v); break;
    case 'i': v = typed_int(p, v); break;
    case 'e':
      if (v->kind != AV_ATTR_ENUM) v = (mt_fail(p, "expected an enum value"), NULL);
      break;
    default: break;
  }
  return v && add_attr(p, b, name, v);
}

/* ------------------------------------------------------------ groups */

static bool region_arg(mt_parser *p, pretty *pr) {
  if (!mt_grow(p, (void **)&pr->rnames, &pr->capr, pr->nr + 1, sizeof *pr->rnames) ||
      !mt_grow(p, (void **)&pr->rtypes, &pr->capr2, pr->nr + 1, sizeof *pr->rtypes))
    return false;
  pr->rnames[pr->nr] = p->tok;
  mt_next(p);
  if (!mt_expect(p, MT_COLON, "':' after region argument")) return false;
  pr->rtypes[pr->nr] = mt_parse_type(p);
  if (!pr->rtypes[pr->nr]) return false;
  const char *loc;
  if (!mt_parse_opt_loc(p, &loc)) return false;
  pr->nr++;
  return true;
}

/* `( ... )` before the signature. */
static bool paren_group(mt_parser *p, pretty *pr) {
  mt_opb *b = pr->b;
  mt_next(p);
  if (mt_accept(p, MT_RPAREN)) return true;
  do {
    if (p->tok.kind == MT_PERCENT) {
      mt_tok nx = mt_peek(p);
      if (nx.kind == MT_COLON) {
        if (!region_arg(p, pr)) return false;
      } else if (nx.kind == MT_EQUAL) {
        if (!mt_grow(p, (void **)&pr->iters, &pr->capiters, pr->niters + 1, sizeof *pr->iters))
          return false;
        pr->iters[pr->niters++] = p->tok;
        mt_next(p);
        mt_next(p); /* = */
        if (!mt_opb_operand(p, b, mt_parse_operand(p))) return false;
      } else {
        if (!mt_opb_operand(p, b, mt_parse_operand(p))) return false;
        if (mt_accept_word(p, "init")) {
          if (!mt_expect(p, MT_COLON, "':' after init")) return false;
          av_value *v = mt_parse_operand(p);
          if (!v) return false;
          if (!mt_grow(p, (void **)&pr->inits, &pr->capinits, pr->ninits + 1, sizeof *pr->inits))
            return false;
          pr->inits[pr->ninits++] = v;
        }
      }
    } else if (p->tok.kind == MT_IDENT && mt_peek(p).kind == MT_EQUAL) {
      if (!keyword(p, pr)) return false;
    } else {
      return mt_fail(p, "unexpected item in parentheses");
    }
  } while (mt_accept(p, MT_COMMA));
  return mt_expect(p, MT_RPAREN, "')'");
}

/* `%x[0]` (get_tuple_element) or `%x [0:2, 1:4:2]` (slice). */
static bool bracket_suffix(mt_parser *p, mt_opb *b) {
  mt_next(p);
  int64_t *st = NULL, *li = NULL, *sd = NULL;
  uint32_t n = 0, c1 = 0, c2 = 0, c3 = 0;
  bool is_slice = false;
  if (p->tok.kind != MT_RBRACKET) {
    do {
      if (!mt_grow(p, (void **)&st, &c1, n + 1, sizeof *st) ||
          !mt_grow(p, (void **)&li, &c2, n + 1, sizeof *li) ||
          !mt_grow(p, (void **)&sd, &c3, n + 1, sizeof *sd))
        return false;
      if (!mt_parse_int(p, &st[n])) return false;
      li[n] = 0;
      sd[n] = 1;
      if (mt_accept(p, MT_COLON)) {
        is_slice = true;
        if (!mt_parse_int(p, &li[n])) return false;
        if (mt_accept(p, MT_COLON) && !mt_parse_int(p, &sd[n])) return false;
      }
      n++;
    } while (mt_accept(p, MT_COMMA));
  }
  if (!mt_expect(p, MT_RBRACKET, "']'")) return false;
  if (is_slice || n != 1) {
    return add_attr(p, b, "start_indices", av_attr_ints(p->m, n, st)) &&
           add_attr(p, b, "limit_indices", av_attr_ints(p->m, n, li)) &&
           add_attr(p, b, "strides", av_attr_ints(p->m, n, sd));
  }
  return add_attr(p, b, "index", mt_int_attr(p, st[0], AV_DT_S32));
}

static bool paren_type_list(mt_parser *p, pretty *pr) {
  mt_next(p); /* ( */
  if (p->tok.kind != MT_RPAREN) {
    do {
      const av_type *t = mt_parse_type(p);
      if (!t || !mt_grow(p, (void **)&pr->sig, &pr->capsig, pr->nsig + 1, sizeof *pr->sig))
        return false;
      pr->sig[pr->nsig++] = t;
    } while (mt_accept(p, MT_COMMA));
  }
  return mt_expect(p, MT_RPAREN, "')' after types");
}

static bool signature(mt_parser *p, pretty *pr) {
  mt_next(p); /* : */
  pr->has_sig = true;
  for (;;) {
    const av_type *t = mt_parse_type(p);
    if (!t) return false;
    if (t->kind == AV_TYPE_FUNCTION && pr->nsig == 0) {
      pr->sig_functional = true;
      for (int i = t->ninputs; i < t->nelems; i++) {
        if (!mt_grow(p, (void **)&pr->sig, &pr->capsig, pr->nsig + 1, sizeof *pr->sig)) return false;
        pr->sig[pr->nsig++] = t->elems[i];
      }
      return true;
    }
    if (!mt_grow(p, (void **)&pr->sig, &pr->capsig, pr->nsig + 1, sizeof *pr->sig)) return false;
    pr->sig[pr->nsig++] = t;
    if (p->tok.kind == MT_COMMA) {
      mt_tok nx = mt_peek(p);
      if (starts_type(&nx)) {
        mt_next(p);
        continue;
      }
    }
    break;
  }
  if (mt_accept(p, MT_ARROW)) {
    /* `T -> R` / `T1, T2 -> (R1, R2)`: the list so far were operand types */
    pr->sig_functional = true;
    pr->nsig = 0;
    if (p->tok.kind == MT_LPAREN) return paren_type_list(p, pr);
    const av_type *t = mt_parse_type(p);
    if (!t || !mt_grow(p, (void **)&pr->sig, &pr->capsig, 1, sizeof *pr->sig)) return false;
    pr->sig[pr->nsig++] = t;
  }
  return true;
}

/* `reducer(%a: T, %b: T) (%c: T, %d: T) { ... }`: pairs (lhs_i, rhs_i); block arguments are
 * all lhs then all rhs. */
static bool reducer(mt_parser *p, pretty *pr) {
  pr->nr = 0;
  while (p->tok.kind == MT_LPAREN) {
    mt_next(p);
    for (int k = 0; k < 2; k++) {
      if (p->tok.kind != MT_PERCENT) return mt_fail(p, "expected a reducer argument");
      if (!region_arg(p, pr)) return false;
      if (k == 0 && !mt_expect(p, MT_COMMA, "',' between reducer arguments")) return false;
    }
    if (!mt_expect(p, MT_RPAREN, "')' after reducer arguments")) return false;
  }
  uint32_t n = pr->nr / 2;
  mt_tok *names = av_arena_calloc(&p->m->arena, pr->nr + 1, sizeof *names);
  const av_type **types = av_arena_calloc(&p->m->arena, pr->nr + 1, sizeof *types);
  if (!names || !types) return mt_fail(p, "out of memory");
  for (uint32_t i = 0; i < n; i++) {
    names[i] = pr->rnames[2 * i];
    types[i] = pr->rtypes[2 * i];
    names[n + i] = pr->rnames[2 * i + 1];
    types[n + i] = pr->rtypes[2 * i + 1];
  }
  pr->nr = 0;
  av_region *r = mt_opb_region(p, pr->b);
  return r && mt_parse_region(p, r, true, 2 * n, names, types);
}

/* `applies stablehlo.add`: the reducer body is that one op on (lhs..., rhs...). */
static bool applies_region(mt_parser *p, pretty *pr) {
  uint32_t n = pr->ninits;
  if (n == 0) return mt_fail(p, "'applies' needs init values");
  const av_type **types = av_arena_calloc(&p->m->arena, 2 * n, sizeof *types);
  if (!types) return mt_fail(p, "out of memory");
  for (uint32_t i = 0; i < n; i++) {
    const av_type *t = pr->inits[i]->type;
    if (t && t->kind == AV_TYPE_TENSOR) t = av_type_tensor(p->m, t->dtype, 0, NULL);
    types[i] = types[n + i] = t;
  }
  av_region *r = mt_opb_region(p, pr->b);
  if (!r) return false;
  av_block *blk = av_region_add_block(p->m, r, 2 * n, types);
  char *name = mt_strndup(p, pr->applies.p, pr->applies.len);
  if (!blk || !name) return mt_fail(p, "out of memory");
  av_op *body = av_op_new(p->m, name, 2 * n, n, types, 0, 0);
  av_op *ret = av_op_new(p->m, "stablehlo.return", n, 0, NULL, 0, 0);
  if (!body || !ret) return mt_fail(p, "out of memory");
  for (uint32_t i = 0; i < 2 * n; i++) body->operands[i] = &blk->args[i];
  for (uint32_t i = 0; i < n; i++) ret->operands[i] = &body->results[i];
  av_block_append(blk, body);
  av_block_append(blk, ret);
  return true;
}

static bool while_region(mt_parser *p, pretty *pr) {
  if (pr->niters != pr->nsig || pr->sig_functional)
    return mt_fail(p, "while: %u loop values but %u types", pr->niters, pr->nsig);
  av_region *r = mt_opb_region(p, pr->b);
  return r && mt_parse_region(p, r, true, pr->niters, pr->iters, pr->sig);
}

/* ------------------------------------------------------------ finishing */

static const av_attr *symbol_as_string(mt_parser *p, const av_attr *a) {
  if (a->kind != AV_ATTR_SYMBOL) return a;
  const av_attr *s = av_attr_string(p->m, AV_ATTR_STRING, a->u.str.s, a->u.str.len);
  if (!s) mt_fail(p, "out of memory");
  return s;
}

static bool assign_positionals(mt_parser *p, pretty *pr) {
  mt_opb *b = pr->b;
  for (int i = 0; i < pr->npos; i++) {
    const av_attr *a = pr->pos[i];
    const char *name = "value";
    if (is_op(b, "stablehlo.custom_call")) {
      name = "call_target_name";
      a = symbol_as_string(p, a);
    } else if (is_op(b, "func.call") || is_op(b, "stablehlo.call")) {
      name = "callee";
    } else if (is_op(b, "stablehlo.composite")) {
      name = "name";
    } else if (strncmp(b->name, "sdy.", 4) == 0) {
      if (a->kind == AV_ATTR_SYMBOL) {
        name = "sym_name";
        a = symbol_as_string(p, a);
      } else {
        name = "sharding";
      }
    }
    if (!a || !add_attr(p, b, name, a)) return false;
  }
  if (pr->nenums) {
    if (!is_op(b, "stablehlo.compare") && !is_op(b, "chlo.broadcast_compare")) {
      p->tok = pr->enums[0];
      return mt_fail(p, "unexpected word in %s", b->name);
    }
    if (!add_attr(p, b, "comparison_direction", enum_attr(p, &pr->enums[0]))) return false;
    if (pr->nenums > 1 && !add_attr(p, b, "compare_type", enum_attr(p, &pr->enums[1])))
      return false;
  }
  return true;
}

static bool result_types(mt_parser *p, pretty *pr, uint32_t nnamed) {
  mt_opb *b = pr->b;
  if (pr->sig_functional) {
    for (uint32_t i = 0; i < pr->nsig; i++)
      if (!mt_opb_rtype(p, b, pr->sig[i])) return false;
    return true;
  }
  if (nnamed == 0) return true;
  if (pr->has_sig && pr->nsig) {
    for (uint32_t i = 0; i < nnamed; i++) {
      const av_type *t;
      if (nnamed <= pr->nsig) t = pr->sig[pr->nsig - nnamed + i];
      else if (pr->nsig == 1 && nnamed <= b->noperands) t = pr->sig[0]; /* one type for all */
      else {
        p->tok = b->name_tok;
        return mt_fail(p, "%s: %u results but %u types", b->name, nnamed, pr->nsig);
      }
      if (!mt_opb_rtype(p, b, t)) return false;
    }
    return true;
  }
  if (pr->pos_typed && nnamed == 1) return mt_opb_rtype(p, b, pr->pos[pr->npos - 1]->type);
  p->tok = b->name_tok;
  return mt_fail(p, "cannot tell the result types of %s", b->name);
}

bool mt_parse_pretty_op(mt_parser *p, mt_opb *b, uint32_t nnamed) {
  pretty pr;
  memset(&pr, 0, sizeof pr);
  pr.b = b;
  for (;;) {
    if (p->failed) return false;
    const mt_tok t = p->tok;
    if (pr.has_sig) {
      if (mt_tok_is(&t, "cond") || mt_tok_is(&t, "do")) {
        mt_next(p);
        if (!while_region(p, &pr)) return false;
        continue;
      }
      if (mt_tok_is(&t, "reducer")) {
        mt_next(p);
        if (!reducer(p, &pr)) return false;
        continue;
      }
      if (t.kind == MT_LBRACE && !at_region(p)) { /* `dense<...> : T {attrs}` */
        if (!mt_parse_attr_dict(p, &b->attrs, &b->nattrs, &b->capattrs)) return false;
        continue;
      }
      break;
    }
    bool stop = false;
    switch (t.kind) {
      case MT_PERCENT:
        if (at_result_list(p)) {
          stop = true;
          break;
        }
        if (!mt_opb_operand(p, b, mt_parse_operand(p))) return false;
        if (p->tok.kind == MT_LBRACKET && !bracket_suffix(p, b)) return false;
        break;
      case MT_COMMA:
        mt_next(p);
        break;
      case MT_LPAREN:
        if (!paren_group(p, &pr)) return false;
        break;
      case MT_LBRACE:
        if (pr.nr || at_region(p)) {
          av_region *r = mt_opb_region(p, b);
          if (!r || !mt_parse_region(p, r, pr.nr > 0, pr.nr, pr.rnames, pr.rtypes)) return false;
          pr.nr = 0;
        } else if (!mt_parse_attr_dict(p, &b->attrs, &b->nattrs, &b->capattrs)) {
          return false;
        }
        break;
      case MT_COLON:
        if (!signature(p, &pr)) return false;
        break;
      case MT_AT:
      case MT_STRING:
      case MT_LESS: {
        if (pr.npos >= 4) return mt_fail(p, "too many positional attributes");
        bool sdy = strncmp(b->name, "sdy.", 4) == 0;
        const av_attr *a = t.kind == MT_LESS && sdy ? mt_parse_opaque_wrapped(p, "#sdy.sharding", "")
                                                    : mt_parse_attr(p);
        if (!a) return false;
        pr.pos[pr.npos++] = a;
        if (t.kind == MT_AT && p->tok.kind == MT_EQUAL) { /* sdy.mesh @name = <...> */
          mt_next(p);
          const av_attr *v = p->tok.kind == MT_LESS ? mt_parse_opaque_wrapped(p, "#sdy.mesh", "")
                                                    : mt_parse_attr(p);
          if (!v || !add_attr(p, b, "mesh", v)) return false;
        }
        break;
      }
      case MT_IDENT: {
        mt_tok nx = mt_peek(p);
        if (mt_tok_is(&t, "loc") && nx.kind == MT_LPAREN) {
          stop = true;
        } else if (nx.kind == MT_EQUAL) {
          if (!keyword(p, &pr)) return false;
        } else if (mt_tok_is(&t, "applies")) {
          mt_next(p);
          if (p->tok.kind != MT_IDENT || !mt_is_op_name(p->tok.p, p->tok.len))
            return mt_fail(p, "expected an op name \"dialect.name\" after 'applies'");
          pr.applies = p->tok;
          pr.has_applies = true;
          mt_next(p);
        } else if (mt_tok_is(&t, "across")) {
          mt_next(p);
        } else if (mt_tok_is(&t, "reducer")) {
          mt_next(p);
          if (!reducer(p, &pr)) return false;
        } else if (mt_tok_is(&t, "dense") || mt_tok_is(&t, "array") || mt_tok_is(&t, "true") ||
                   mt_tok_is(&t, "false")) {
          if (pr.npos >= 4) return mt_fail(p, "too many positional attributes");
          const av_attr *a = mt_parse_attr(p);
          if (!a) return false;
          pr.pos[pr.npos++] = a;
          if (mt_tok_is(&t, "dense") && a->type) pr.pos_typed = pr.has_sig = true;
        } else if (t.p[0] >= 'A' && t.p[0] <= 'Z') {
          if (pr.nenums >= 4) return mt_fail(p, "too many enum words");
          pr.enums[pr.nenums++] = t;
          mt_next(p);
        } else {
          stop = true;
        }
        break;
      }
      default:
        stop = true;
        break;
    }
    if (stop) break;
  }
  if (p->failed) return false;
  for (uint32_t i = 0; i < pr.ninits; i++)
    if (!mt_opb_operand(p, b, pr.inits[i])) return false;
  if (pr.has_applies && !applies_region(p, &pr)) return false;
  if (pr.nr) return mt_fail(p, "region arguments without a region");
  if (!assign_positionals(p, &pr)) return false;
  if (is_op(b, "stablehlo.dot_general")) {
    /* the pretty form omits empty batching dimensions; the flat form always has them */
    bool has = false;
    for (uint32_t i = 0; i < b->nattrs; i++)
      has = has || strcmp(b->attrs[i].name, "lhs_batching_dimensions") == 0;
    if (!has && (!add_attr(p, b, "lhs_batching_dimensions", av_attr_ints(p->m, 0, NULL)) ||
                 !add_attr(p, b, "rhs_batching_dimensions", av_attr_ints(p->m, 0, NULL))))
      return false;
  }
  return result_types(p, &pr, nnamed);
}
