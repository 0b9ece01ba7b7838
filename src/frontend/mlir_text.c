/* MLIR text reader: tokens/errors, SSA scopes, regions, generic ops, functions, modules,
 * aliases and locations. Pretty (custom assembly) op forms are in mlir_text_pretty.c,
 * types and attributes in mlir_text_attr.c. */
#include "frontend/mlir_text.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/mlir_text_internal.h"

/* ------------------------------------------------------------ basics */

bool mt_grow(mt_parser *p, void **arr, uint32_t *cap, uint32_t need, size_t elem) {
  if (need <= *cap) return true;
  uint32_t nc = *cap ? *cap : 4;
  while (nc < need) {
    if (nc > UINT32_MAX / 2) return mt_fail(p, "too many items");
    nc *= 2;
  }
  void *n = av_arena_calloc(&p->m->arena, nc, elem);
  if (!n) return mt_fail(p, "out of memory");
  if (*cap) memcpy(n, *arr, (size_t)*cap * elem);
  *arr = n;
  *cap = nc;
  return true;
}

bool mt_fail(mt_parser *p, const char *fmt, ...) {
  if (p->failed) return false;
  p->failed = true;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  /* every allocation failure here says "out of memory" */
  av_code code = strcmp(fmt, "out of memory") == 0 ? AV_RESOURCE_EXHAUSTED : AV_INVALID_ARGUMENT;
  int line, col;
  mt_lexer_line_col(&p->lx, p->tok.p, &line, &col);
  int shown = p->tok.len > 40 ? 40 : (int)p->tok.len;
  if (p->tok.kind == MT_EOF) {
    av_diag_set(p->d, code, "mlir text: %d:%d: %s (at end of input)", line, col, msg);
  } else {
    /* the token text may hold any bytes: show printable ones only */
    char near[48];
    for (int i = 0; i < shown; i++) {
      char c = p->tok.p[i];
      near[i] = (c >= 32 && c < 127) ? c : '?';
    }
    near[shown] = '\0';
    av_diag_set(p->d, code, "mlir text: %d:%d: %s (near '%s')", line, col, msg,
                near);
  }
  return false;
}

void mt_next(mt_parser *p) {
  p->tok = mt_lex(&p->lx);
  if (p->tok.kind == MT_ERROR) mt_fail(p, "invalid token");
}

mt_tok mt_peek(mt_parser *p) {
  mt_lexer copy = p->lx;
  return mt_lex(&copy);
}

bool mt_accept(mt_parser *p, mt_tok_kind k) {
  if (p->failed || p->tok.kind != k) return false;
  mt_next(p);
  return true;
}

static const char *tok_name(mt_tok_kind k) {
  switch (k) {
    case MT_LPAREN: return "(";
    case MT_RPAREN: return ")";
    case MT_LBRACKET: return "[";
    case MT_RBRACKET: return "]";
    case MT_LBRACE: return "{";
    case MT_RBRACE: return "}";
    case MT_LESS: return "<";
    case MT_GREATER: return ">";
    case MT_COMMA: return ",";
    case MT_COLON: return ":";
    case MT_EQUAL: return "=";
    case MT_ARROW: return "->";
    default: return "token";
  }
}

bool mt_expect(mt_parser *p, mt_tok_kind k, const char *what) {
  if (p->failed) return false;
  if (p->tok.kind != k) return mt_fail(p, "expected '%s' (%s)", tok_name(k), what);
  mt_next(p);
  return true;
}

bool mt_accept_word(mt_parser *p, const char *word) {
  if (p->failed || !mt_tok_is(&p->tok, word)) return false;
  mt_next(p);
  return true;
}

bool mt_enter(mt_parser *p) {
  if (p->failed) return false;
  if (p->depth >= MT_MAX_DEPTH) return mt_fail(p, "nesting too deep");
  p->depth++;
  return true;
}

void mt_leave(mt_parser *p) { p->depth--; }

char *mt_strndup(mt_parser *p, const char *s, size_t n) {
  char *r = av_arena_strndup(&p->m->arena, s, n);
  if (!r) mt_fail(p, "out of memory");
  return r;
}

/* ------------------------------------------------------------ SSA scopes */

static uint32_t hash_name(const char *s, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
  return h;
}

static bool rehash(mt_parser *p, int nb) {
  int *b = malloc(sizeof(int) * (size_t)nb);
  if (!b) return mt_fail(p, "out of memory");
  for (int i = 0; i < nb; i++) b[i] = -1;
  for (int i = 0; i < p->nents; i++) {
    mt_entry *e = &p->ents[i];
    uint32_t h = hash_name(e->name, e->len) & (uint32_t)(nb - 1);
    e->next = b[h];
    b[h] = i;
  }
  free(p->buckets);
  p->buckets = b;
  p->nbuckets = nb;
  return true;
}

static int scope_base(mt_parser *p) { return p->scope_base; }

static int lookup_entry(mt_parser *p, const char *name, size_t len) {
  if (!p->nbuckets) return -1;
  uint32_t h = hash_name(name, len) & (uint32_t)(p->nbuckets - 1);
  for (int i = p->buckets[h]; i >= 0; i = p->ents[i].next)
    if (p->ents[i].len == len && memcmp(p->ents[i].name, name, len) == 0) return i;
  return -1;
}

bool mt_bind(mt_parser *p, const char *name, size_t len, av_value *vals, uint32_t count) {
  int prev = lookup_entry(p, name, len);
  if (prev >= 0 && prev >= scope_base(p))
    return mt_fail(p, "redefinition of %.*s", (int)(len > 64 ? 64 : len), name);
  if (p->nents == p->capents) {
    int nc = p->capents ? p->capents * 2 : 256;
    mt_entry *n = realloc(p->ents, sizeof *n * (size_t)nc);
    if (!n) return mt_fail(p, "out of memory");
    p->ents = n;
    p->capents = nc;
  }
  if (p->nents >= p->nbuckets * 2 && !rehash(p, p->nbuckets ? p->nbuckets * 4 : 1024)) return false;
  mt_entry *e = &p->ents[p->nents];
  e->name = name;
  e->len = len;
  e->vals = vals;
  e->count = count;
  uint32_t h = hash_name(name, len) & (uint32_t)(p->nbuckets - 1);
  e->next = p->buckets[h];
  p->buckets[h] = p->nents++;
  return true;
}

/* Scopes: entries at index >= scope_base belong to the innermost region; entering a region
 * returns the previous base, leaving it pops the region's entries and restores the base. */
int mt_scope_mark(mt_parser *p) {
  int old = p->scope_base;
  p->scope_base = p->nents;
  return old;
}

void mt_scope_pop(mt_parser *p, int old_base) {
  while (p->nents > p->scope_base) {
    mt_entry *e = &p->ents[p->nents - 1];
    uint32_t h = hash_name(e->name, e->len) & (uint32_t)(p->nbuckets - 1);
    p->buckets[h] = e->next; /* LIFO: the entry is its bucket's head */
    p->nents--;
  }
  p->scope_base = old_base;
}

av_value *mt_parse_operand(mt_parser *p) {
  if (p->tok.kind != MT_PERCENT) {
    mt_fail(p, "expected an SSA value");
    return NULL;
  }
  const mt_tok t = p->tok;
  mt_next(p);
  uint64_t index = 0;
  bool has_index = false;
  if (p->tok.kind == MT_HASH && p->tok.p == t.p + t.len) {
    has_index = true;
    for (size_t i = 1; i < p->tok.len; i++) {
      char c = p->tok.p[i];
      if (c < '0' || c > '9' || index > 1000000000) {
        mt_fail(p, "bad result number");
        return NULL;
      }
      index = index * 10 + (uint64_t)(c - '0');
    }
    mt_next(p);
  }
  int i = lookup_entry(p, t.p, t.len);
  if (i < 0) {
    p->tok = t;
    mt_fail(p, "use of undefined value %.*s", (int)(t.len > 64 ? 64 : t.len), t.p);
    return NULL;
  }
  mt_entry *e = &p->ents[i];
  (void)has_index;
  if (index >= e->count) {
    p->tok = t;
    mt_fail(p, "result number %llu out of range for %.*s", (unsigned long long)index,
            (int)(t.len > 64 ? 64 : t.len), t.p);
    return NULL;
  }
  return &e->vals[index];
}

/* ------------------------------------------------------------ op builder */

bool mt_opb_operand(mt_parser *p, mt_opb *b, av_value *v) {
  if (!v) return false;
  if (!mt_grow(p, (void **)&b->operands, &b->capoperands, b->noperands + 1, sizeof *b->operands))
    return false;
  b->operands[b->noperands++] = v;
  return true;
}

bool mt_opb_rtype(mt_parser *p, mt_opb *b, const av_type *t) {
  if (!t) return false;
  if (!mt_grow(p, (void **)&b->rtypes, &b->caprtypes, b->nrtypes + 1, sizeof *b->rtypes))
    return false;
  b->rtypes[b->nrtypes++] = t;
  return true;
}

av_region *mt_opb_region(mt_parser *p, mt_opb *b) {
  if (!mt_grow(p, (void **)&b->regions, &b->capregions, b->nregions + 1, sizeof *b->regions))
    return NULL;
  av_region *r = &b->regions[b->nregions++];
  memset(r, 0, sizeof *r);
  return r;
}

void mt_move_region(av_region *dst, const av_region *src) {
  *dst = *src;
  for (uint32_t i = 0; i < dst->nblocks; i++) dst->blocks[i].parent = dst;
}

/* ------------------------------------------------------------ locations */

bool mt_parse_opt_loc(mt_parser *p, const char **loc) {
  if (!mt_tok_is(&p->tok, "loc")) return true;
  mt_tok t = mt_peek(p);
  if (t.kind != MT_LPAREN) return true;
  mt_next(p);
  const char *open = p->tok.p;
  /* find the matching ')' on characters (strings may hold parentheses) */
  const char *q = open, *e = p->lx.end;
  int depth = 0;
  for (; q < e; q++) {
    if (*q == '\0') return mt_fail(p, "NUL character in loc(...)");
    if (*q == '"') {
      for (q++; q < e && *q != '"'; q++) {
        if (*q == '\\') q++;
        if (q < e && *q == '\0') return mt_fail(p, "NUL character in loc(...)");
      }
      if (q >= e) break;
      continue;
    }
    if (*q == '(' || *q == '[') depth++;
    if (*q == ')' || *q == ']') {
      if (--depth == 0) break;
    }
  }
  if (q >= e) return mt_fail(p, "unterminated loc(...)");
  *loc = mt_strndup(p, open + 1, (size_t)(q - open - 1));
  p->lx.pos = q + 1;
  mt_next(p);
  return *loc != NULL;
}

typedef struct sbuf {
  char *s;
  size_t n, cap;
  bool full;
} sbuf;

enum { LOC_MAX = 1024 };

static void sb_put(sbuf *b, const char *s, size_t n) {
  if (b->n + n > b->cap) {
    n = b->cap - b->n;
    b->full = true;
  }
  memcpy(b->s + b->n, s, n);
  b->n += n;
}

static uint32_t hash_name(const char *s, size_t n);

static int map_get(const mt_map *mp, const char *k, size_t n) {
  if (!mp->cap) return -1;
  for (uint32_t i = hash_name(k, n) & (mp->cap - 1);; i = (i + 1) & (mp->cap - 1)) {
    const mt_slot *sl = &mp->slots[i];
    if (!sl->key) return -1;
    if (sl->len == n && memcmp(sl->key, k, n) == 0) return sl->val;
  }
}

static bool map_put(mt_parser *p, mt_map *mp, const char *k, size_t n, int val) {
  if ((mp->n + 1) * 2 > mp->cap) {
    uint32_t nc = mp->cap ? mp->cap * 2 : 64;
    mt_slot *ns = calloc(nc, sizeof *ns);
    if (!ns) return mt_fail(p, "out of memory");
    for (uint32_t i = 0; i < mp->cap; i++) {
      const mt_slot *sl = &mp->slots[i];
      if (!sl->key) continue;
      uint32_t j = hash_name(sl->key, sl->len) & (nc - 1);
      while (ns[j].key) j = (j + 1) & (nc - 1);
      ns[j] = *sl;
    }
    free(mp->slots);
    mp->slots = ns;
    mp->cap = nc;
  }
  uint32_t i = hash_name(k, n) & (mp->cap - 1);
  while (mp->slots[i].key && !(mp->slots[i].len == n && memcmp(mp->slots[i].key, k, n) == 0))
    i = (i + 1) & (mp->cap - 1);
  if (!mp->slots[i].key) mp->n++;
  mp->slots[i].key = k;
  mp->slots[i].len = n;
  mp->slots[i].val = val;
  return true;
}

const mt_alias *mt_find_alias(mt_parser *p, const char *name, size_t len) {
  int i = map_get(&p->alias_map, name, len);
  return i >= 0 ? &p->aliases[i] : NULL;
}

static const mt_alias *find_alias(mt_parser *p, const char *name, size_t len) {
  return mt_find_alias(p, name, len);
}

static void resolve_into(mt_parser *p, const char *s, sbuf *b, int depth) {
  size_t n = strlen(s);
  for (size_t i = 0; i < n && !b->full;) {
    if (s[i] == '"') {
      size_t j = i + 1;
      while (j < n && s[j] != '"') j += (s[j] == '\\') ? 2 : 1;
      if (j > n) j = n;
      size_t end = j < n ? j + 1 : n;
      sb_put(b, s + i, end - i);
      i = end;
      continue;
    }
    if (s[i] == '#') {
      size_t j = i + 1;
      while (j < n && (s[j] == '_' || s[j] == '.' || s[j] == '$' || s[j] == '-' ||
                       (s[j] >= '0' && s[j] <= '9') || (s[j] >= 'a' && s[j] <= 'z') ||
                       (s[j] >= 'A' && s[j] <= 'Z')))
        j++;
      const mt_alias *a = find_alias(p, s + i, j - i);
      if (a && a->loc && depth < 8) {
        resolve_into(p, a->loc, b, depth + 1);
      } else {
        sb_put(b, s + i, j - i);
      }
      i = j;
      continue;
    }
    sb_put(b, s + i, 1);
    i++;
  }
}

/* True if `s` has a '#' outside string literals (an alias reference). */
static bool has_alias_ref(const char *s) {
  for (; *s; s++) {
    if (*s == '"') {
      for (s++; *s && *s != '"'; s++)
        if (*s == '\\' && s[1]) s++;
      if (!*s) return false;
      continue;
    }
    if (*s == '#') return true;
  }
  return false;
}

static const char *resolve_loc(mt_parser *p, const char *loc) {
  if (!loc || !has_alias_ref(loc)) return loc;
  char buf[LOC_MAX];
  sbuf b = {buf, 0, sizeof buf, false};
  resolve_into(p, loc, &b, 0);
  if (b.full) return loc; /* too long once expanded: keep the references */
  char *r = av_arena_strndup(&p->m->arena, buf, b.n);
  return r ? r : loc;
}

static void resolve_region_locs(mt_parser *p, av_region *r, int depth);

static void resolve_op_locs(mt_parser *p, av_op *op, int depth) {
  op->loc = resolve_loc(p, op->loc);
  if (strcmp(op->loc, "unknown") == 0) op->loc = "unknown";
  for (uint32_t i = 0; i < op->nregions; i++) resolve_region_locs(p, &op->regions[i], depth + 1);
}

static void resolve_region_locs(mt_parser *p, av_region *r, int depth) {
  if (depth > MT_MAX_DEPTH) return;
  for (uint32_t b = 0; b < r->nblocks; b++)
    for (av_op *op = r->blocks[b].first; op; op = op->next) resolve_op_locs(p, op, depth);
}

/* ------------------------------------------------------------ regions */

static bool parse_ops_until_block_end(mt_parser *p, av_block *b) {
  while (!p->failed && p->tok.kind != MT_RBRACE && p->tok.kind != MT_CARET) {
    if (p->tok.kind == MT_EOF) return mt_fail(p, "missing '}' at end of region");
    if (!mt_parse_op(p, b, NULL)) return false;
  }
  return !p->failed;
}

/* `^label(%a: T loc(...), ...):` */
static bool parse_block_label(mt_parser *p, av_region *r) {
  mt_next(p); /* ^label */
  uint32_t cap = 0, n = 0, tcap = 0;
  mt_tok *names = NULL;
  const av_type **types = NULL;
  if (mt_accept(p, MT_LPAREN)) {
    if (p->tok.kind != MT_RPAREN) {
      do {
        if (p->tok.kind != MT_PERCENT) return mt_fail(p, "expected a block argument");
        if (!mt_grow(p, (void **)&names, &cap, n + 1, sizeof *names)) return false;
        if (!mt_grow(p, (void **)&types, &tcap, n + 1, sizeof *types)) return false;
        names[n] = p->tok;
        mt_next(p);
        if (!mt_expect(p, MT_COLON, "':' after block argument")) return false;
        types[n] = mt_parse_type(p);
        if (!types[n]) return false;
        const char *loc;
        if (!mt_parse_opt_loc(p, &loc)) return false;
        n++;
      } while (mt_accept(p, MT_COMMA));
    }
    if (!mt_expect(p, MT_RPAREN, "')' after block arguments")) return false;
  }
  if (!mt_expect(p, MT_COLON, "':' after block label")) return false;
  /* StableHLO regions have one block; the bound also keeps av_region_add_block's copying of
   * the block array (quadratic) small on hostile input */
  if (r->nblocks >= 256) return mt_fail(p, "too many blocks in one region");
  av_block *b = av_region_add_block(p->m, r, n, types);
  if (!b) return mt_fail(p, "out of memory");
  for (uint32_t i = 0; i < n; i++)
    if (!mt_bind(p, names[i].p, names[i].len, &b->args[i], 1)) return false;
  return parse_ops_until_block_end(p, &r->blocks[r->nblocks - 1]);
}

bool mt_parse_region(mt_parser *p, av_region *r, bool implicit_entry, uint32_t nargs,
                     const mt_tok *names, const av_type *const *types) {
  if (!mt_expect(p, MT_LBRACE, "'{' starting a region")) return false;
  if (!mt_enter(p)) return false;
  int old = mt_scope_mark(p);
  bool ok = true;
  if (p->tok.kind == MT_RBRACE) {
    if (nargs) {
      av_block *b = av_region_add_block(p->m, r, nargs, types);
      if (!b) ok = mt_fail(p, "out of memory");
    }
  } else if (implicit_entry || p->tok.kind != MT_CARET) {
    av_block *b = av_region_add_block(p->m, r, nargs, types);
    if (!b) {
      ok = mt_fail(p, "out of memory");
    } else {
      for (uint32_t i = 0; ok && i < nargs; i++)
        ok = mt_bind(p, names[i].p, names[i].len, &b->args[i], 1);
      ok = ok && parse_ops_until_block_end(p, b);
    }
  }
  while (ok && p->tok.kind == MT_CARET) ok = parse_block_label(p, r);
  mt_scope_pop(p, old);
  mt_leave(p);
  return ok && mt_expect(p, MT_RBRACE, "'}' ending a region");
}

/* ------------------------------------------------------------ ops */

/* An op name is `dialect.op` (MLIR has no unqualified op outside the func shorthands
 * `return` and `call`): a word like `hello` is not an op, so prose is not a program. Its
 * characters are printable ASCII without quotes or backslashes: a quoted name holding an
 * escaped NUL or control byte would not survive printing (the IR keeps names as C strings). */
bool mt_is_op_name(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f || s[i] == '"' || s[i] == '\\')
      return false;
  const char *dot = memchr(s, '.', n);
  return dot && dot > s && (size_t)(dot - s) + 1 < n && s[n - 1] != '.';
}

static bool parse_generic_op(mt_parser *p, mt_opb *b) {
  const mt_tok nt = p->tok;
  char *name = av_arena_alloc(&p->m->arena, nt.len + 1);
  if (!name) return mt_fail(p, "out of memory");
  size_t n = mt_string_decode(&nt, name);
  name[n] = '\0';
  if (!mt_is_op_name(name, n)) return mt_fail(p, "expected an operation name \"dialect.name\"");
  b->name = name;
  mt_next(p);
  if (!mt_expect(p, MT_LPAREN, "'(' before operands")) return false;
  if (p->tok.kind != MT_RPAREN) {
    do {
      if (!mt_opb_operand(p, b, mt_parse_operand(p))) return false;
    } while (mt_accept(p, MT_COMMA));
  }
  if (!mt_expect(p, MT_RPAREN, "')' after operands")) return false;
  if (p->tok.kind == MT_LBRACKET) return mt_fail(p, "block successors are not supported");
  if (p->tok.kind == MT_LESS) {
    mt_next(p);
    if (!mt_parse_attr_dict(p, &b->attrs, &b->nattrs, &b->capattrs)) return false;
    if (!mt_expect(p, MT_GREATER, "'>' closing properties")) return false;
  }
  if (mt_accept(p, MT_LPAREN)) {
    do {
      av_region *r = mt_opb_region(p, b);
      if (!r || !mt_parse_region(p, r, false, 0, NULL, NULL)) return false;
    } while (mt_accept(p, MT_COMMA));
    if (!mt_expect(p, MT_RPAREN, "')' after regions")) return false;
  }
  if (p->tok.kind == MT_LBRACE && !mt_parse_attr_dict(p, &b->attrs, &b->nattrs, &b->capattrs))
    return false;
  if (!mt_expect(p, MT_COLON, "':' before the op's function type")) return false;
  const av_type *ft = mt_parse_type(p);
  if (!ft) return false;
  if (ft->kind != AV_TYPE_FUNCTION) return mt_fail(p, "generic op needs a function type");
  if ((uint32_t)ft->ninputs != b->noperands)
    return mt_fail(p, "op has %u operands but its type lists %d", b->noperands, ft->ninputs);
  for (int i = ft->ninputs; i < ft->nelems; i++)
    if (!mt_opb_rtype(p, b, ft->elems[i])) return false;
  return true;
}

typedef struct result_name {
  mt_tok tok;
  uint32_t count;
} result_name;

bool mt_parse_op(mt_parser *p, av_block *block, av_op **out) {
  if (!mt_enter(p)) return false;
  const mt_tok start = p->tok;
  result_name *names = NULL;
  uint32_t nnames = 0, capnames = 0, nnamed = 0;
  bool ok = true;
  if (p->tok.kind == MT_PERCENT) {
    do {
      if (p->tok.kind != MT_PERCENT) {
        ok = mt_fail(p, "expected a result name");
        break;
      }
      if (!mt_grow(p, (void **)&names, &capnames, nnames + 1, sizeof *names)) {
        ok = false;
        break;
      }
      names[nnames].tok = p->tok;
      names[nnames].count = 1;
      mt_next(p);
      if (mt_accept(p, MT_COLON)) {
        int64_t c;
        if (!mt_parse_int(p, &c)) {
          ok = false;
          break;
        }
        if (c < 1 || c > (1 << 20)) {
          ok = mt_fail(p, "bad result count");
          break;
        }
        names[nnames].count = (uint32_t)c;
      }
      nnamed += names[nnames].count;
      if (nnamed > (1u << 20)) {
        ok = mt_fail(p, "too many results");
        break;
      }
      nnames++;
    } while (mt_accept(p, MT_COMMA));
    ok = ok && mt_expect(p, MT_EQUAL, "'=' after result names");
  }
  mt_opb b = {0};
  if (ok) {
    if (p->tok.kind == MT_STRING) {
      ok = parse_generic_op(p, &b);
    } else if (p->tok.kind == MT_IDENT) {
      const mt_tok nt = p->tok;
      if (mt_tok_is(&nt, "return")) {
        b.name = "func.return";
      } else if (mt_tok_is(&nt, "call")) {
        b.name = "func.call";
      } else if (!mt_is_op_name(nt.p, nt.len)) {
        ok = mt_fail(p, "expected an operation (dialect.name)");
      } else {
        b.name = mt_strndup(p, nt.p, nt.len);
      }
      b.name_tok = nt;
      if (ok) mt_next(p);
      ok = ok && b.name && mt_parse_pretty_op(p, &b, nnamed);
    } else {
      ok = mt_fail(p, "expected an operation");
    }
  }
  const char *loc = NULL;
  ok = ok && mt_parse_opt_loc(p, &loc);
  av_op *op = NULL;
  if (ok) {
    op = av_op_new(p->m, b.name, b.noperands, b.nrtypes, b.rtypes, b.nattrs, b.nregions);
    if (!op) ok = mt_fail(p, "out of memory");
  }
  if (ok) {
    for (uint32_t i = 0; i < b.noperands; i++) op->operands[i] = b.operands[i];
    for (uint32_t i = 0; i < b.nattrs; i++) {
      op->attrs[i] = b.attrs[i];
      /* StableHLO unit attributes (use_global_device_ids, has_dynamic_root...) are booleans
       * in VHLO: present means true */
      if (op->code != AV_OP_UNKNOWN && b.attrs[i].value->kind == AV_ATTR_UNIT) {
        op->attrs[i].value = av_attr_bool(p->m, true);
        if (!op->attrs[i].value) ok = mt_fail(p, "out of memory");
      }
    }
    for (uint32_t i = 0; i < b.nregions; i++) mt_move_region(&op->regions[i], &b.regions[i]);
    if (loc) op->loc = loc;
    if (nnames && nnamed != op->nresults) {
      mt_tok save = p->tok;
      p->tok = start;
      ok = mt_fail(p, "operation defines %u results but %u names are bound", op->nresults,
                   nnamed);
      p->tok = save;
    }
    uint32_t at = 0;
    mt_tok save = p->tok;
    for (uint32_t i = 0; ok && i < nnames; i++) {
      p->tok = names[i].tok; /* errors point at the name */
      ok = mt_bind(p, names[i].tok.p, names[i].tok.len, &op->results[at], names[i].count);
      at += names[i].count;
    }
    if (ok) p->tok = save;
  }
  if (ok) {
    av_block_append(block, op);
    if (out) *out = op;
  }
  mt_leave(p);
  return ok;
}

/* ------------------------------------------------------------ functions */

/* Like av_func_new, but the function list grows by doubling here (av_func_new copies the
 * whole list per function, quadratic for inputs with many functions). */
static av_func *new_func(mt_parser *p, const char *name, const av_type *ft) {
  av_arena *a = &p->m->arena;
  av_func *f = av_arena_alloc(a, sizeof *f);
  if (!f) {
    mt_fail(p, "out of memory");
    return NULL;
  }
  f->name = name;
  f->type = ft;
  f->loc = "unknown";
  int nin = ft->ninputs, nout = ft->nelems - ft->ninputs;
  f->arg_attrs = av_arena_calloc(a, (size_t)nin + 1, sizeof *f->arg_attrs);
  f->res_attrs = av_arena_calloc(a, (size_t)nout + 1, sizeof *f->res_attrs);
  if (!f->arg_attrs || !f->res_attrs ||
      !mt_grow(p, (void **)&p->funcs, &p->capfuncs, p->nfuncs + 1, sizeof *p->funcs)) {
    mt_fail(p, "out of memory");
    return NULL;
  }
  if (!map_put(p, &p->func_map, name, strlen(name), (int)p->nfuncs)) return NULL;
  p->funcs[p->nfuncs++] = f;
  return f;
}

static bool parse_func(mt_parser *p) {
  mt_next(p); /* func.func */
  bool is_public = true;
  if (mt_accept_word(p, "private")) is_public = false;
  else if (mt_accept_word(p, "public") || mt_accept_word(p, "nested")) is_public = true;
  if (p->tok.kind != MT_AT) return mt_fail(p, "expected @name of function");
  const mt_tok nt = p->tok;
  char *name = av_arena_alloc(&p->m->arena, nt.len + 1);
  if (!name) return mt_fail(p, "out of memory");
  if (nt.len > 1 && nt.p[1] == '"') {
    name[mt_string_decode(&nt, name)] = '\0';
  } else {
    memcpy(name, nt.p + 1, nt.len - 1);
    name[nt.len - 1] = '\0';
  }
  mt_next(p);
  if (!mt_expect(p, MT_LPAREN, "'(' before function arguments")) return false;
  uint32_t nin = 0, capin = 0, capn = 0, capa = 0;
  const av_type **in = NULL;
  mt_tok *argnames = NULL;
  const av_attr **argattrs = NULL;
  bool named = p->tok.kind == MT_PERCENT;
  if (p->tok.kind != MT_RPAREN) {
    do {
      if (!mt_grow(p, (void **)&in, &capin, nin + 1, sizeof *in) ||
          !mt_grow(p, (void **)&argnames, &capn, nin + 1, sizeof *argnames) ||
          !mt_grow(p, (void **)&argattrs, &capa, nin + 1, sizeof *argattrs))
        return false;
      if (named) {
        if (p->tok.kind != MT_PERCENT) return mt_fail(p, "expected a named argument");
        argnames[nin] = p->tok;
        mt_next(p);
        if (!mt_expect(p, MT_COLON, "':' after argument name")) return false;
      }
      in[nin] = mt_parse_type(p);
      if (!in[nin]) return false;
      argattrs[nin] = NULL;
      if (p->tok.kind == MT_LBRACE) {
        av_named_attr *items = NULL;
        uint32_t n = 0, cap = 0;
        if (!mt_parse_attr_dict(p, &items, &n, &cap)) return false;
        argattrs[nin] = av_attr_dict(p->m, n, items);
      }
      const char *loc;
      if (!mt_parse_opt_loc(p, &loc)) return false;
      nin++;
    } while (mt_accept(p, MT_COMMA));
  }
  if (!mt_expect(p, MT_RPAREN, "')' after function arguments")) return false;
  uint32_t nout = 0, capout = 0, capra = 0;
  const av_type **outs = NULL;
  const av_attr **resattrs = NULL;
  if (mt_accept(p, MT_ARROW)) {
    bool paren = mt_accept(p, MT_LPAREN);
    if (!paren || p->tok.kind != MT_RPAREN) {
      do {
        if (!mt_grow(p, (void **)&outs, &capout, nout + 1, sizeof *outs) ||
            !mt_grow(p, (void **)&resattrs, &capra, nout + 1, sizeof *resattrs))
          return false;
        outs[nout] = mt_parse_type(p);
        if (!outs[nout]) return false;
        resattrs[nout] = NULL;
        if (paren && p->tok.kind == MT_LBRACE) {
          av_named_attr *items = NULL;
          uint32_t n = 0, cap = 0;
          if (!mt_parse_attr_dict(p, &items, &n, &cap)) return false;
          resattrs[nout] = av_attr_dict(p->m, n, items);
        }
        const char *loc;
        if (paren && !mt_parse_opt_loc(p, &loc)) return false;
        nout++;
      } while (paren && mt_accept(p, MT_COMMA));
    }
    if (paren && !mt_expect(p, MT_RPAREN, "')' after function results")) return false;
  }
  const av_attr *fattrs = NULL;
  if (mt_accept_word(p, "attributes")) {
    av_named_attr *items = NULL;
    uint32_t n = 0, cap = 0;
    if (!mt_parse_attr_dict(p, &items, &n, &cap)) return false;
    fattrs = av_attr_dict(p->m, n, items);
    if (!fattrs) return mt_fail(p, "out of memory");
  }
  const av_type *ft = av_type_function(p->m, (int)nin, in, (int)nout, outs);
  if (!ft) return mt_fail(p, "out of memory");
  if (map_get(&p->func_map, name, strlen(name)) >= 0)
    return mt_fail(p, "redefinition of function @%s", name);
  av_func *f = new_func(p, name, ft);
  if (!f) return false;
  f->is_public = is_public;
  f->attrs = fattrs;
  for (uint32_t i = 0; i < nin; i++) f->arg_attrs[i] = argattrs[i];
  for (uint32_t i = 0; i < nout; i++) f->res_attrs[i] = resattrs[i];
  if (p->tok.kind == MT_LBRACE) {
    if (!named && nin) return mt_fail(p, "function with a body needs named arguments");
    if (!mt_parse_region(p, &f->body, true, nin, argnames, in)) return false;
  }
  const char *loc = NULL;
  if (!mt_parse_opt_loc(p, &loc)) return false;
  if (loc) f->loc = loc;
  return true;
}

/* ------------------------------------------------------------ module */

static bool parse_alias_def(mt_parser *p) {
  const mt_tok nt = p->tok;
  mt_next(p);
  if (!mt_expect(p, MT_EQUAL, "'=' in alias definition")) return false;
  if (p->naliases == p->capaliases) {
    int nc = p->capaliases ? p->capaliases * 2 : 64;
    mt_alias *n = realloc(p->aliases, sizeof *n * (size_t)nc);
    if (!n) return mt_fail(p, "out of memory");
    p->aliases = n;
    p->capaliases = nc;
  }
  if (map_get(&p->alias_map, nt.p, nt.len) >= 0)
    return mt_fail(p, "redefinition of alias %.*s", (int)(nt.len > 64 ? 64 : nt.len), nt.p);
  mt_alias a = {nt.p, nt.len, NULL, NULL, NULL};
  if (nt.kind == MT_BANG) {
    a.type = mt_parse_type(p);
    if (!a.type) return false;
  } else if (mt_tok_is(&p->tok, "loc") && mt_peek(p).kind == MT_LPAREN) {
    if (!mt_parse_opt_loc(p, &a.loc)) return false;
  } else {
    a.attr = mt_parse_attr(p);
    if (!a.attr) return false;
  }
  if (!map_put(p, &p->alias_map, nt.p, nt.len, p->naliases)) return false;
  p->aliases[p->naliases++] = a;
  return true;
}

static bool parse_top_items(mt_parser *p, av_block *extra, bool in_module) {
  while (!p->failed) {
    mt_tok t = p->tok;
    if (t.kind == MT_EOF) {
      if (in_module) return mt_fail(p, "missing '}' at end of module");
      return true;
    }
    if (in_module && t.kind == MT_RBRACE) return true;
    if ((t.kind == MT_HASH || t.kind == MT_BANG) && mt_peek(p).kind == MT_EQUAL) {
      if (!parse_alias_def(p)) return false;
    } else if (t.kind == MT_FILE_META_BEGIN) {
      /* {-# dialect_resources: ... #-}: resources are not supported; skip the block */
      const char *q = p->lx.pos;
      const char *end = NULL;
      for (; q + 3 <= p->lx.end; q++)
        if (q[0] == '#' && q[1] == '-' && q[2] == '}') {
          end = q + 3;
          break;
        }
      if (!end) return mt_fail(p, "unterminated {-# ... #-} block");
      p->lx.pos = end;
      mt_next(p);
    } else if (mt_tok_is(&t, "module")) {
      if (in_module) return mt_fail(p, "nested modules are not supported");
      if (p->nfuncs || extra->nops) return mt_fail(p, "module after top-level operations");
      if (p->saw_module) return mt_fail(p, "a second module (one program per input)");
      p->saw_module = true;
      mt_next(p);
      if (p->tok.kind == MT_AT) {
        char *nm = av_arena_alloc(&p->m->arena, p->tok.len + 1);
        if (!nm) return mt_fail(p, "out of memory");
        if (p->tok.len > 1 && p->tok.p[1] == '"') {
          nm[mt_string_decode(&p->tok, nm)] = '\0';
        } else {
          memcpy(nm, p->tok.p + 1, p->tok.len - 1);
          nm[p->tok.len - 1] = '\0';
        }
        p->m->name = nm;
        mt_next(p);
      }
      if (mt_accept_word(p, "attributes")) {
        av_named_attr *items = NULL;
        uint32_t n = 0, cap = 0;
        if (!mt_parse_attr_dict(p, &items, &n, &cap)) return false;
        p->m->attrs = av_attr_dict(p->m, n, items);
        if (!p->m->attrs) return mt_fail(p, "out of memory");
      }
      if (!mt_expect(p, MT_LBRACE, "'{' starting module body")) return false;
      if (!parse_top_items(p, extra, true)) return false;
      if (!mt_expect(p, MT_RBRACE, "'}' ending module body")) return false;
      const char *loc;
      if (!mt_parse_opt_loc(p, &loc)) return false;
    } else if (mt_tok_is(&t, "func.func")) {
      if (!parse_func(p)) return false;
    } else if ((t.kind == MT_IDENT && !mt_is_op_name(t.p, t.len)) ||
               (t.kind != MT_IDENT && t.kind != MT_STRING && t.kind != MT_PERCENT)) {
      return mt_fail(p, "not a program: expected 'module', 'func.func' or an operation");
    } else {
      if (!mt_parse_op(p, extra, NULL)) return false;
    }
  }
  return false;
}

av_module *av_load_mlir_text(const char *text, size_t len, av_diag *d) {
  av_module *m = av_module_new();
  if (!m) {
    av_diag_set(d, AV_RESOURCE_EXHAUSTED, "mlir text: out of memory");
    return NULL;
  }
  mt_parser p;
  memset(&p, 0, sizeof p);
  p.m = m;
  p.d = d;
  mt_lexer_init(&p.lx, text ? text : "", text ? len : 0);
  av_block *extra = av_arena_alloc(&m->arena, sizeof *extra);
  bool ok = extra != NULL;
  if (ok) {
    mt_next(&p);
    const mt_tok first = p.tok;
    ok = parse_top_items(&p, extra, false) && !p.failed;
    /* Like MLIR, an input with no tokens at all (empty, or comments only) is an empty module;
     * anything else must define a module or a function to be a program. */
    if (ok && first.kind != MT_EOF && !p.saw_module && p.nfuncs == 0) {
      p.tok = first; /* the error points at where a program should have started */
      ok = mt_fail(&p, "not a program: expected 'module' or 'func.func'");
    }
  }
  if (ok) {
    m->funcs = p.funcs;
    m->nfuncs = p.nfuncs;
  }
  if (ok && extra->nops) {
    m->extra_ops = av_arena_calloc(&m->arena, extra->nops, sizeof *m->extra_ops);
    if (!m->extra_ops) ok = mt_fail(&p, "out of memory");
    uint32_t i = 0;
    for (av_op *op = extra->first; ok && op; op = op->next) m->extra_ops[i++] = op;
    m->nextra_ops = i;
  }
  if (ok) {
    for (uint32_t i = 0; i < m->nextra_ops; i++) resolve_op_locs(&p, m->extra_ops[i], 0);
    for (uint32_t i = 0; i < m->nfuncs; i++) {
      m->funcs[i]->loc = resolve_loc(&p, m->funcs[i]->loc);
      resolve_region_locs(&p, &m->funcs[i]->body, 0);
    }
  }
  if (!ok && !p.failed) av_diag_set(d, AV_RESOURCE_EXHAUSTED, "mlir text: out of memory");
  free(p.ents);
  free(p.buckets);
  free(p.aliases);
  free(p.alias_map.slots);
  free(p.func_map.slots);
  if (!ok) {
    av_module_free(m);
    return NULL;
  }
  return m;
}
