/* GSPMD-form programs rewritten into the Shardy form (see gspmd.h). */
#include "compiler/gspmd.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/attrs.h"
#include "compiler/sharding.h"

enum { GS_MAX_DIMS = AV_MESH_MAX_AXES, GS_MAX_FACTORS = 16 };

typedef enum { GS_REPLICATED, GS_MANUAL, GS_MAXIMAL, GS_TILED } gs_kind;

/* One HloSharding: a tile assignment (an array of devices of shape `tile`) whose last dimension
 * may replicate. */
typedef struct gs_sharding {
  gs_kind kind;
  int ntile;
  int64_t tile[GS_MAX_DIMS];
  bool last_replicate;
  int64_t ndev;
  int64_t *devices; /* [ndev] row-major over `tile`; malloc'd */
} gs_sharding;

typedef struct gs_cur {
  const char *s;
  const char *text;
  av_diag *d;
} gs_cur;

static void skip_ws(gs_cur *c) {
  while (isspace((unsigned char)*c->s)) c->s++;
}

static bool accept(gs_cur *c, const char *tok) {
  skip_ws(c);
  size_t n = strlen(tok);
  if (strncmp(c->s, tok, n) != 0) return false;
  c->s += n;
  return true;
}

static bool fail(gs_cur *c, av_code code, const char *what) {
  av_diag_set(c->d, code, "GSPMD sharding \"%.200s\": %s", c->text, what);
  return false;
}

static bool parse_int(gs_cur *c, int64_t *v) {
  skip_ws(c);
  if (!isdigit((unsigned char)*c->s)) return fail(c, AV_INVALID_ARGUMENT, "expected a number");
  int64_t x = 0;
  while (isdigit((unsigned char)*c->s)) {
    if (x > AV_MESH_MAX_DEVICES) return fail(c, AV_INVALID_ARGUMENT, "number too large");
    x = x * 10 + (*c->s++ - '0');
  }
  *v = x;
  return true;
}

/* "[" ints "]" (the '[' already consumed when `open` is false). */
static bool parse_list(gs_cur *c, int64_t *v, int cap, int *n) {
  *n = 0;
  if (accept(c, "]")) return true;
  do {
    if (*n >= cap) return fail(c, AV_UNIMPLEMENTED, "too many dimensions");
    if (!parse_int(c, &v[(*n)++])) return false;
  } while (accept(c, ","));
  return accept(c, "]") || fail(c, AV_INVALID_ARGUMENT, "expected ']'");
}

/* The devices of `<=[reshape]T(perm)`: iota(ndev) reshaped, transposed, flattened. */
static bool iota_devices(gs_cur *c, gs_sharding *g, const int64_t *reshape, int nr,
                         const int64_t *perm, int np) {
  int64_t prod = 1;
  for (int k = 0; k < nr; k++) prod *= reshape[k];
  if (prod != g->ndev) return fail(c, AV_INVALID_ARGUMENT, "iota size differs from the tile count");
  if (np && np != nr) return fail(c, AV_INVALID_ARGUMENT, "transpose rank differs");
  int64_t tdims[GS_MAX_DIMS], strides[GS_MAX_DIMS];
  for (int k = nr - 1, s = 1; k >= 0; k--) {
    strides[k] = s;
    s *= (int)reshape[k];
  }
  bool seen[GS_MAX_DIMS] = {false};
  for (int k = 0; k < nr; k++) {
    int64_t p = np ? perm[k] : k;
    if (p < 0 || p >= nr || seen[p]) return fail(c, AV_INVALID_ARGUMENT, "bad transpose");
    seen[p] = true;
    tdims[k] = reshape[p];
  }
  for (int64_t f = 0; f < g->ndev; f++) {
    int64_t rest = f, src = 0;
    for (int k = nr - 1; k >= 0; k--) {
      int64_t coord = rest % tdims[k];
      rest /= tdims[k];
      src += coord * strides[np ? perm[k] : k];
    }
    g->devices[f] = src;
  }
  return true;
}

static bool parse_sharding(const char *text, gs_sharding *g, av_diag *d) {
  memset(g, 0, sizeof *g);
  gs_cur c = {text ? text : "", text ? text : "", d};
  if (!accept(&c, "{")) return fail(&c, AV_INVALID_ARGUMENT, "expected '{'");
  if (accept(&c, "replicated")) {
    g->kind = GS_REPLICATED;
  } else if (accept(&c, "manual")) {
    g->kind = GS_MANUAL;
  } else if (accept(&c, "maximal")) {
    g->kind = GS_MAXIMAL;
    return fail(&c, AV_UNIMPLEMENTED, "maximal (single-device) shardings are not supported");
  } else if (accept(&c, "devices=[")) {
    g->kind = GS_TILED;
    if (!parse_list(&c, g->tile, GS_MAX_DIMS, &g->ntile)) return false;
    g->ndev = 1;
    for (int k = 0; k < g->ntile; k++) {
      if (g->tile[k] < 1 || g->ndev * g->tile[k] > AV_MESH_MAX_DEVICES)
        return fail(&c, AV_INVALID_ARGUMENT, "bad tile assignment dimensions");
      g->ndev *= g->tile[k];
    }
    g->devices = calloc((size_t)g->ndev, sizeof *g->devices);
    if (!g->devices) return fail(&c, AV_RESOURCE_EXHAUSTED, "out of memory");
    if (accept(&c, "<=[")) {
      int64_t reshape[GS_MAX_DIMS], perm[GS_MAX_DIMS];
      int nr, np = 0;
      if (!parse_list(&c, reshape, GS_MAX_DIMS, &nr)) return false;
      if (accept(&c, "T(")) {
        do {
          if (np >= GS_MAX_DIMS) return fail(&c, AV_INVALID_ARGUMENT, "bad transpose");
          if (!parse_int(&c, &perm[np++])) return false;
        } while (accept(&c, ","));
        if (!accept(&c, ")")) return fail(&c, AV_INVALID_ARGUMENT, "expected ')'");
      }
      if (!iota_devices(&c, g, reshape, nr, perm, np)) return false;
    } else {
      for (int64_t f = 0; f < g->ndev; f++) {
        if (f && !accept(&c, ",")) return fail(&c, AV_INVALID_ARGUMENT, "too few devices");
        if (!parse_int(&c, &g->devices[f])) return false;
      }
    }
    bool *seen = calloc((size_t)g->ndev, sizeof *seen);
    if (!seen) return fail(&c, AV_RESOURCE_EXHAUSTED, "out of memory");
    bool perm_ok = true;
    for (int64_t f = 0; f < g->ndev && perm_ok; f++) {
      int64_t v = g->devices[f];
      perm_ok = v >= 0 && v < g->ndev && !seen[v];
      if (perm_ok) seen[v] = true;
    }
    free(seen);
    if (!perm_ok) return fail(&c, AV_UNIMPLEMENTED, "the devices are not 0..n-1 each once");
  } else {
    return fail(&c, AV_UNIMPLEMENTED, "unsupported kind of sharding");
  }
  for (;;) {
    if (accept(&c, "last_tile_dim_replicate")) {
      g->last_replicate = true;
    } else if (accept(&c, "last_tile_dims={")) {
      if (!accept(&c, "replicated") || !accept(&c, "}"))
        return fail(&c, AV_UNIMPLEMENTED, "partially manual shardings are not supported");
      g->last_replicate = true;
    } else if (accept(&c, "metadata={")) {
      for (int depth = 1; depth && *c.s; c.s++) depth += (*c.s == '{') - (*c.s == '}');
    } else {
      break;
    }
  }
  if (g->last_replicate && g->ntile < 1) return fail(&c, AV_INVALID_ARGUMENT, "no tile dims");
  if (!accept(&c, "}")) return fail(&c, AV_UNIMPLEMENTED, "unsupported sharding syntax");
  return true;
}

static void gs_free(gs_sharding *g) {
  free(g->devices);
  g->devices = NULL;
}

/* Number of tile dims that split the value (the rest replicates). */
static int split_dims(const gs_sharding *g) { return g->ntile - (g->last_replicate ? 1 : 0); }

/* ------------------------------------------------------------ text building */

typedef struct sbuf {
  char *s;
  size_t len, cap;
  bool failed;
} sbuf;

static void put(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(sbuf *b, const char *fmt, ...) {
  if (b->failed) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
      b->failed = true;
      return;
    }
    if (b->s && (size_t)n < b->cap - b->len) {
      b->len += (size_t)n;
      return;
    }
    size_t cap = b->cap ? b->cap : 128;
    while (cap - b->len <= (size_t)n) cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) {
      b->failed = true;
      return;
    }
    b->s = s;
    b->cap = cap;
  }
}

static const av_attr *opaque(av_module *m, sbuf *b, av_diag *d) {
  const av_attr *a = b->failed ? NULL : av_attr_string(m, AV_ATTR_OPAQUE, b->s, b->len);
  free(b->s);
  memset(b, 0, sizeof *b);
  if (!a) av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  return a;
}

/* `#sdy.sharding<mesh<...>, [...]>` of one value: an inline mesh with one axis per tile dim of
 * size > 1 (and device_ids unless they are in order). */
static const av_attr *value_sharding(av_module *m, const gs_sharding *g, int rank,
                                     const char *where, av_diag *d) {
  sbuf b = {0};
  if (g->kind == GS_REPLICATED) {
    put(&b, "#sdy.sharding<mesh<[]>, [");
    for (int k = 0; k < rank; k++) put(&b, "%s{}", k ? ", " : "");
    put(&b, "]>");
    return opaque(m, &b, d);
  }
  if (g->kind != GS_TILED) {
    av_diag_set(d, AV_UNIMPLEMENTED, "GSPMD: %s is manual outside a shard_map", where);
    return NULL;
  }
  if (split_dims(g) != rank) {
    av_diag_set(d, AV_INVALID_ARGUMENT, "GSPMD: the sharding of %s splits %d dims of a rank-%d value",
                where, split_dims(g), rank);
    return NULL;
  }
  put(&b, "#sdy.sharding<mesh<[");
  bool first = true;
  for (int k = 0; k < g->ntile; k++)
    if (g->tile[k] > 1) {
      put(&b, "%s\"g%d\"=%lld", first ? "" : ", ", k, (long long)g->tile[k]);
      first = false;
    }
  put(&b, "]");
  bool identity = true;
  for (int64_t f = 0; f < g->ndev; f++) identity = identity && g->devices[f] == f;
  if (!identity) {
    put(&b, ", device_ids=[");
    for (int64_t f = 0; f < g->ndev; f++) put(&b, "%s%lld", f ? ", " : "", (long long)g->devices[f]);
    put(&b, "]");
  }
  put(&b, ">, [");
  for (int k = 0; k < rank; k++)
    if (g->tile[k] > 1)
      put(&b, "%s{\"g%d\"}", k ? ", " : "", k);
    else
      put(&b, "%s{}", k ? ", " : "");
  put(&b, "]>");
  return opaque(m, &b, d);
}

/* A copy of dict `old` with `name` set to `value`. */
static const av_attr *dict_with(av_module *m, const av_attr *old, const char *name,
                                const av_attr *value) {
  size_t n = old && old->kind == AV_ATTR_DICT ? old->u.dict.n : 0;
  av_named_attr *items = calloc(n + 1, sizeof *items);
  if (!items) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strcmp(old->u.dict.items[i].name, name) != 0) items[k++] = old->u.dict.items[i];
  items[k++] = (av_named_attr){name, value};
  const av_attr *dict = av_attr_dict(m, k, items);
  free(items);
  return dict;
}

static const char *attr_str(const av_attr *a) {
  return a && (a->kind == AV_ATTR_STRING || a->kind == AV_ATTR_OPAQUE) ? a->u.str.s : NULL;
}

/* mhlo.sharding of main's arguments and results -> sdy.sharding. */
static av_code import_signature(av_module *m, av_func *f, av_diag *d) {
  int nin = f->type->ninputs, nout = f->type->nelems - f->type->ninputs;
  for (int i = 0; i < nin + nout; i++) {
    bool in = i < nin;
    int k = in ? i : i - nin;
    const av_attr **slot = in ? (f->arg_attrs ? &f->arg_attrs[k] : NULL)
                              : (f->res_attrs ? &f->res_attrs[k] : NULL);
    const char *text = slot ? attr_str(av_dict_get(*slot, "mhlo.sharding")) : NULL;
    if (!text || av_dict_get(*slot, "sdy.sharding")) continue;
    const av_type *t = f->type->elems[i];
    if (t->kind != AV_TYPE_TENSOR) continue;
    char where[64];
    snprintf(where, sizeof where, "%s %d of @%s", in ? "argument" : "result", k, f->name);
    gs_sharding g;
    if (!parse_sharding(text, &g, d)) {
      gs_free(&g);
      return av_diag_set(d, d->code, "  in the sharding of %s", where);
    }
    const av_attr *s = value_sharding(m, &g, t->rank, where, d);
    gs_free(&g);
    if (!s) return d->code;
    const av_attr *dict = dict_with(m, *slot, "sdy.sharding", s);
    if (!dict) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
    *slot = dict;
  }
  return AV_OK;
}

/* ------------------------------------------------------------- shard_map */

static bool is_custom_call(const av_op *op, const char *target) {
  if (!op || op->code != AV_OP_CUSTOM_CALL) return false;
  const char *t = av_attr_get_str(op, "call_target_name");
  return t && strcmp(t, target) == 0;
}

static void count_uses(const av_region *r, const av_value *v, int *n, av_op **user) {
  for (uint32_t b = 0; b < r->nblocks; b++)
    for (av_op *op = r->blocks[b].first; op; op = op->next) {
      for (uint32_t i = 0; i < op->noperands; i++)
        if (op->operands[i] == v) {
          (*n)++;
          *user = op;
        }
      for (uint32_t k = 0; k < op->nregions; k++) count_uses(&op->regions[k], v, n, user);
    }
}

/* The only user of v in the function body, or NULL (none or several). */
static av_op *only_user(const av_func *f, const av_value *v) {
  int n = 0;
  av_op *user = NULL;
  count_uses(&f->body, v, &n, &user);
  return n == 1 ? user : NULL;
}

static void replace_uses(av_region *r, const av_value *old, av_value *new_value) {
  for (uint32_t b = 0; b < r->nblocks; b++)
    for (av_op *op = r->blocks[b].first; op; op = op->next) {
      for (uint32_t i = 0; i < op->noperands; i++)
        if (op->operands[i] == old) op->operands[i] = new_value;
      for (uint32_t k = 0; k < op->nregions; k++) replace_uses(&op->regions[k], old, new_value);
    }
}

/* A mesh to express a manual computation's shardings: prime factors of the device count in
 * some order, all axes manual. */
typedef struct gs_mesh {
  int naxes;
  int64_t sizes[GS_MAX_FACTORS];
} gs_mesh;

/* How value sharding g lies on `mesh`: dims[k] lists the mesh axes (major to minor) splitting
 * dimension k. Tries every order of the axes; true when one reproduces g's device array. */
typedef struct gs_placement {
  int naxes[GS_MAX_DIMS];
  int axes[GS_MAX_DIMS][GS_MAX_FACTORS];
} gs_placement;

static bool placement_matches(const gs_mesh *mesh, const gs_sharding *g, const int *order,
                              gs_placement *p) {
  int ngroups = g->ntile, at = 0;
  memset(p, 0, sizeof *p);
  for (int k = 0; k < ngroups; k++) {
    int64_t prod = 1;
    while (prod < g->tile[k] && at < mesh->naxes) {
      prod *= mesh->sizes[order[at]];
      p->axes[k][p->naxes[k]++] = order[at++];
    }
    if (prod != g->tile[k]) return false;
  }
  if (at != mesh->naxes) return false; /* axes left over: g covers fewer devices */
  /* Device of each tile position: mesh coordinates from the groups, row-major over the mesh. */
  for (int64_t f = 0; f < g->ndev; f++) {
    int64_t rest = f, coord[GS_MAX_FACTORS] = {0};
    for (int k = ngroups - 1; k >= 0; k--) {
      int64_t t = rest % g->tile[k];
      rest /= g->tile[k];
      for (int j = p->naxes[k] - 1; j >= 0; j--) {
        int a = p->axes[k][j];
        coord[a] = t % mesh->sizes[a];
        t /= mesh->sizes[a];
      }
    }
    int64_t pos = 0;
    for (int a = 0; a < mesh->naxes; a++) pos = pos * mesh->sizes[a] + coord[a];
    if (pos != g->devices[f]) return false;
  }
  return true;
}

static bool next_permutation(int *v, int n) {
  int i = n - 2;
  while (i >= 0 && v[i] >= v[i + 1]) i--;
  if (i < 0) return false;
  int j = n - 1;
  while (v[j] <= v[i]) j--;
  int t = v[i];
  v[i] = v[j];
  v[j] = t;
  for (int a = i + 1, b = n - 1; a < b; a++, b--) {
    t = v[a];
    v[a] = v[b];
    v[b] = t;
  }
  return true;
}

static bool place(const gs_mesh *mesh, const gs_sharding *g, gs_placement *p) {
  if (g->kind == GS_REPLICATED) {
    memset(p, 0, sizeof *p);
    return true;
  }
  int order[GS_MAX_FACTORS];
  for (int a = 0; a < mesh->naxes; a++) order[a] = a;
  do {
    if (placement_matches(mesh, g, order, p)) return true;
  } while (next_permutation(order, mesh->naxes));
  return false;
}

/* Candidate meshes: the distinct orders of the prime factors of n, one after another. */
static int prime_factors(int64_t n, int64_t *f) {
  int k = 0;
  for (int64_t p = 2; n > 1 && k < GS_MAX_FACTORS; p++)
    while (n % p == 0 && k < GS_MAX_FACTORS) {
      f[k++] = p;
      n /= p;
    }
  return n == 1 ? k : -1;
}

typedef struct shard_map {
  av_op *call;
  int nin, nout;
  av_op **full_to_shard, **in_sharding; /* [nin] */
  av_op **out_sharding, **shard_to_full; /* [nout] */
  gs_sharding *shardings; /* [nin + nout] */
} shard_map;

static void shard_map_free(shard_map *s) {
  for (int i = 0; s->shardings && i < s->nin + s->nout; i++) gs_free(&s->shardings[i]);
  free(s->shardings);
  free(s->full_to_shard);
  free(s->in_sharding);
  free(s->out_sharding);
  free(s->shard_to_full);
  memset(s, 0, sizeof *s);
}

/* Whether `call` is the body call of a GSPMD shard_map; fills s. */
static bool match_shard_map(const av_func *f, av_op *call, shard_map *s) {
  memset(s, 0, sizeof *s);
  if (call->code != AV_OP_FUNC_CALL && call->code != AV_OP_CALL) return false;
  if (call->noperands == 0 && call->nresults == 0) return false;
  s->call = call;
  s->nin = (int)call->noperands;
  s->nout = (int)call->nresults;
  s->full_to_shard = calloc((size_t)s->nin + 1, sizeof(av_op *));
  s->in_sharding = calloc((size_t)s->nin + 1, sizeof(av_op *));
  s->out_sharding = calloc((size_t)s->nout + 1, sizeof(av_op *));
  s->shard_to_full = calloc((size_t)s->nout + 1, sizeof(av_op *));
  if (!s->full_to_shard || !s->in_sharding || !s->out_sharding || !s->shard_to_full) return false;
  for (int i = 0; i < s->nin; i++) {
    av_op *fts = call->operands[i]->def;
    if (!is_custom_call(fts, "SPMDFullToShardShape") || fts->noperands != 1) return false;
    av_op *sh = fts->operands[0]->def;
    if (!is_custom_call(sh, "Sharding") || sh->noperands != 1) return false;
    s->full_to_shard[i] = fts;
    s->in_sharding[i] = sh;
  }
  for (int i = 0; i < s->nout; i++) {
    av_op *sh = only_user(f, &call->results[i]);
    if (!is_custom_call(sh, "Sharding") || sh->nresults != 1) return false;
    av_op *stf = only_user(f, &sh->results[0]);
    if (!is_custom_call(stf, "SPMDShardToFullShape") || stf->nresults != 1) return false;
    s->out_sharding[i] = sh;
    s->shard_to_full[i] = stf;
  }
  return s->nin + s->nout > 0;
}

static av_code rewrite_shard_map(av_module *m, av_func *f, av_block *b, shard_map *s, int id,
                                 av_diag *d) {
  int n = s->nin + s->nout;
  s->shardings = calloc((size_t)n + 1, sizeof *s->shardings);
  if (!s->shardings) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  int64_t ndev = 0;
  for (int i = 0; i < n; i++) {
    const av_op *src = i < s->nin ? s->in_sharding[i] : s->shard_to_full[i - s->nin];
    if (!parse_sharding(attr_str(av_op_attr(src, "mhlo.sharding")), &s->shardings[i], d))
      return av_diag_set(d, d->code, "  in a shard_map of @%s (at %s)", f->name, s->call->loc);
    const gs_sharding *g = &s->shardings[i];
    if (g->kind != GS_TILED && g->kind != GS_REPLICATED)
      return av_diag_set(d, AV_UNIMPLEMENTED, "GSPMD shard_map of @%s: a manual sharding at its "
                         "boundary (at %s)", f->name, s->call->loc);
    const av_type *t = i < s->nin ? s->in_sharding[i]->operands[0]->type
                                  : s->shard_to_full[i - s->nin]->results[0].type;
    if (g->kind == GS_TILED && (!t || t->kind != AV_TYPE_TENSOR || split_dims(g) != t->rank))
      return av_diag_set(d, AV_INVALID_ARGUMENT, "GSPMD shard_map of @%s: a sharding does not "
                         "match its value's rank (at %s)", f->name, s->call->loc);
    if (g->kind == GS_TILED) {
      if (ndev && g->ndev != ndev)
        return av_diag_set(d, AV_UNIMPLEMENTED, "GSPMD shard_map of @%s over shardings of %lld "
                           "and %lld devices", f->name, (long long)ndev, (long long)g->ndev);
      ndev = g->ndev;
    }
  }
  if (ndev <= 1)
    return av_diag_set(d, AV_UNIMPLEMENTED, "GSPMD shard_map of @%s without a split value (at %s)",
                       f->name, s->call->loc);
  int64_t factors[GS_MAX_FACTORS];
  int nf = prime_factors(ndev, factors);
  if (nf < 0 || nf > 6) /* the search below tries nf! orders of nf! meshes */
    return av_diag_set(d, AV_UNIMPLEMENTED, "GSPMD shard_map over %lld devices", (long long)ndev);
  /* Try the orders of the factors (sorted, then each next permutation) as meshes. */
  gs_mesh mesh = {.naxes = nf};
  gs_placement *pl = calloc((size_t)n + 1, sizeof *pl);
  if (!pl) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  int idx[GS_MAX_FACTORS];
  for (int a = 0; a < nf; a++) idx[a] = (int)factors[a];
  bool found = false;
  do {
    for (int a = 0; a < nf; a++) mesh.sizes[a] = idx[a];
    found = true;
    for (int i = 0; i < n && found; i++) found = place(&mesh, &s->shardings[i], &pl[i]);
  } while (!found && next_permutation(idx, nf));
  if (!found) {
    free(pl);
    return av_diag_set(d, AV_UNIMPLEMENTED, "GSPMD shard_map of @%s: its shardings fit no mesh "
                       "of %lld devices (at %s)", f->name, (long long)ndev, s->call->loc);
  }
  /* The mesh op. */
  char mesh_name[32];
  snprintf(mesh_name, sizeof mesh_name, "gspmd_mesh_%d", id);
  sbuf t = {0};
  put(&t, "#sdy.mesh<[");
  for (int a = 0; a < nf; a++) put(&t, "%s\"m%d\"=%lld", a ? ", " : "", a, (long long)mesh.sizes[a]);
  put(&t, "]>");
  const av_attr *mesh_attr = opaque(m, &t, d);
  av_op *mesh_op = av_op_new(m, "sdy.mesh", 0, 0, NULL, 2, 0);
  av_op **extra = av_arena_calloc(&m->arena, (size_t)m->nextra_ops + 2, sizeof *extra);
  if (!mesh_attr || !mesh_op || !extra) {
    free(pl);
    return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  }
  mesh_op->attrs[0] = (av_named_attr){"sym_name", av_attr_string(m, AV_ATTR_STRING, mesh_name,
                                                                strlen(mesh_name))};
  mesh_op->attrs[1] = (av_named_attr){"mesh", mesh_attr};
  if (m->nextra_ops) memcpy(extra, m->extra_ops, m->nextra_ops * sizeof *extra);
  extra[m->nextra_ops] = mesh_op;
  m->extra_ops = extra;
  m->nextra_ops++;
  /* in_shardings / out_shardings / manual_axes. */
  const av_attr *per_value[2];
  for (int side = 0; side < 2; side++) {
    put(&t, "#sdy.sharding_per_value<[");
    int lo = side ? s->nin : 0, hi = side ? n : s->nin;
    for (int i = lo; i < hi; i++) {
      const av_type *ty = i < s->nin ? s->in_sharding[i]->operands[0]->type
                                     : s->shard_to_full[i - s->nin]->results[0].type;
      int rank = ty && ty->kind == AV_TYPE_TENSOR ? ty->rank : 0;
      put(&t, "%s<@%s, [", i > lo ? ", " : "", mesh_name);
      for (int k = 0; k < rank; k++) {
        put(&t, "%s{", k ? ", " : "");
        int na = s->shardings[i].kind == GS_TILED ? pl[i].naxes[k] : 0;
        for (int j = 0; j < na; j++) put(&t, "%s\"m%d\"", j ? ", " : "", pl[i].axes[k][j]);
        put(&t, "}");
      }
      put(&t, "]>");
    }
    put(&t, "]>");
    per_value[side] = opaque(m, &t, d);
  }
  free(pl);
  put(&t, "#sdy<manual_axes{");
  for (int a = 0; a < nf; a++) put(&t, "%s\"m%d\"", a ? ", " : "", a);
  put(&t, "}>");
  const av_attr *axes = opaque(m, &t, d);
  if (!per_value[0] || !per_value[1] || !axes) return d->code;

  /* sdy.manual_computation(globals) { ^bb(locals): call; sdy.return } */
  const av_type **res_types = calloc((size_t)s->nout + 1, sizeof *res_types);
  const av_type **arg_types = calloc((size_t)s->nin + 1, sizeof *arg_types);
  if (!res_types || !arg_types) {
    free(res_types);
    free(arg_types);
    return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  }
  for (int i = 0; i < s->nout; i++) res_types[i] = s->shard_to_full[i]->results[0].type;
  for (int i = 0; i < s->nin; i++) arg_types[i] = s->full_to_shard[i]->results[0].type;
  av_op *mc = av_op_new(m, "sdy.manual_computation", (uint32_t)s->nin, (uint32_t)s->nout,
                        res_types, 3, 1);
  av_block *body = mc ? av_region_add_block(m, &mc->regions[0], (uint32_t)s->nin, arg_types) : NULL;
  const av_type **call_types = calloc((size_t)s->nout + 1, sizeof *call_types);
  for (int i = 0; call_types && i < s->nout; i++) call_types[i] = s->call->results[i].type;
  av_op *inner = body && call_types ? av_op_new(m, s->call->name, (uint32_t)s->nin,
                                                (uint32_t)s->nout, call_types, s->call->nattrs, 0)
                                    : NULL;
  av_op *ret = inner ? av_op_new(m, "sdy.return", (uint32_t)s->nout, 0, NULL, 0, 0) : NULL;
  free(res_types);
  free(arg_types);
  free(call_types);
  if (!ret) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  mc->loc = inner->loc = ret->loc = s->call->loc;
  mc->attrs[0] = (av_named_attr){"in_shardings", per_value[0]};
  mc->attrs[1] = (av_named_attr){"out_shardings", per_value[1]};
  mc->attrs[2] = (av_named_attr){"manual_axes", axes};
  for (uint32_t k = 0; k < s->call->nattrs; k++) inner->attrs[k] = s->call->attrs[k];
  for (int i = 0; i < s->nin; i++) {
    mc->operands[i] = s->in_sharding[i]->operands[0];
    inner->operands[i] = &body->args[i];
  }
  for (int i = 0; i < s->nout; i++) ret->operands[i] = &inner->results[i];
  av_block_append(body, inner);
  av_block_append(body, ret);
  av_block_insert_before(b, s->call, mc);
  for (int i = 0; i < s->nout; i++) replace_uses(&f->body, &s->shard_to_full[i]->results[0],
                                                 &mc->results[i]);
  /* The chain is dead now; an input @Sharding may still have other users. */
  for (int i = 0; i < s->nout; i++) {
    av_block_remove(s->shard_to_full[i]->parent, s->shard_to_full[i]);
    av_block_remove(s->out_sharding[i]->parent, s->out_sharding[i]);
  }
  av_block_remove(b, s->call);
  for (int i = 0; i < s->nin; i++) {
    av_op *fts = s->full_to_shard[i], *sh = s->in_sharding[i];
    if (fts->parent) av_block_remove(fts->parent, fts);
    s->full_to_shard[i] = NULL;
    int uses = 0;
    av_op *user = NULL;
    count_uses(&f->body, &sh->results[0], &uses, &user);
    if (uses == 0 && sh->parent) av_block_remove(sh->parent, sh);
  }
  return AV_OK;
}

static av_code import_shard_maps(av_module *m, av_func *f, av_region *r, int *count,
                                 av_diag *d) {
  for (uint32_t bi = 0; bi < r->nblocks; bi++) {
    av_block *b = &r->blocks[bi];
    for (av_op *op = b->first; op;) {
      for (uint32_t k = 0; k < op->nregions; k++) {
        av_code c = import_shard_maps(m, f, &op->regions[k], count, d);
        if (c != AV_OK) return c;
      }
      shard_map s;
      bool match = match_shard_map(f, op, &s);
      av_code c = match ? rewrite_shard_map(m, f, b, &s, (*count)++, d) : AV_OK;
      shard_map_free(&s);
      if (c != AV_OK) return c;
      /* A rewrite removed ops around this one: start the block over (the call is gone). */
      op = match ? b->first : op->next;
    }
  }
  return AV_OK;
}

/* ------------------------------ constraints and shard_as / shard_like (annotations) */

/* jax.experimental.shard_alike without Shardy marks each value of the pair with an identity
 * custom_call @Sharding {mhlo.sharding = "{unknown shard_as N}"} (or shard_like N); each call
 * becomes Shardy's sharding group N on its operand (spmd_groups.c), and its users read the
 * operand. The number, or -1. */
static int64_t shard_group_id(const char *text) {
  if (!text) return -1;
  gs_cur c = {text, text, NULL};
  if (!accept(&c, "{") || !accept(&c, "unknown")) return -1;
  if (!accept(&c, "shard_as") && !accept(&c, "shard_like")) return -1;
  skip_ws(&c);
  int64_t id = 0;
  int digits = 0;
  while (isdigit((unsigned char)*c.s) && digits < 12) id = id * 10 + (*c.s++ - '0'), digits++;
  if (!digits) return -1;
  if (accept(&c, "metadata={"))
    for (int depth = 1; depth && *c.s; c.s++) depth += (*c.s == '{') - (*c.s == '}');
  return accept(&c, "}") ? id : -1;
}

/* with_sharding_constraint: custom_call @Sharding(x) {mhlo.sharding = S} (tiled or replicated;
 * what a shard_map chain did not take) becomes sdy.sharding_constraint(x) with S's sharding on
 * its own inline mesh, as main's arguments get theirs. Other kinds stay identities. */
static av_code import_constraint(av_module *m, av_func *f, av_block *b, av_op *op, av_diag *d) {
  const char *text = attr_str(av_op_attr(op, "mhlo.sharding"));
  const av_type *t = op->results[0].type;
  if (!text || op->noperands != 1 || op->nresults != 1 || !t || t->kind != AV_TYPE_TENSOR ||
      !av_type_equal(op->operands[0]->type, t))
    return AV_OK;
  gs_sharding g;
  av_diag ignored;
  av_diag_init(&ignored);
  bool ok = parse_sharding(text, &g, &ignored) && (g.kind == GS_TILED || g.kind == GS_REPLICATED) &&
            (g.kind == GS_REPLICATED || split_dims(&g) == t->rank);
  const av_attr *sh = ok ? value_sharding(m, &g, t->rank, "a sharding constraint", d) : NULL;
  gs_free(&g);
  if (!ok) return AV_OK; /* manual, maximal...: left as the identity it is on one device */
  if (!sh) return d->code;
  av_op *c = av_op_new(m, "sdy.sharding_constraint", 1, 1, &t, 1, 0);
  if (!c) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  c->operands[0] = op->operands[0];
  c->attrs[0] = (av_named_attr){"sharding", sh};
  c->loc = op->loc;
  av_block_insert_before(b, op, c);
  replace_uses(&f->body, &op->results[0], &c->results[0]);
  av_block_remove(b, op);
  return AV_OK;
}

static av_code import_annotations(av_module *m, av_func *f, av_region *r, int depth, av_diag *d) {
  if (depth > 64) return AV_OK;
  for (uint32_t bi = 0; bi < r->nblocks; bi++) {
    av_block *b = &r->blocks[bi];
    for (av_op *op = b->first; op;) {
      av_op *next = op->next;
      for (uint32_t k = 0; k < op->nregions; k++) {
        av_code c = import_annotations(m, f, &op->regions[k], depth + 1, d);
        if (c != AV_OK) return c;
      }
      int64_t id = is_custom_call(op, "Sharding") && op->noperands == 1 && op->nresults == 1 &&
                           av_type_equal(op->operands[0]->type, op->results[0].type)
                       ? shard_group_id(attr_str(av_op_attr(op, "mhlo.sharding")))
                       : -1;
      if (id < 0 && is_custom_call(op, "Sharding")) {
        av_code c = import_constraint(m, f, b, op, d);
        if (c != AV_OK) return c;
      } else if (id >= 0) {
        av_op *g = av_op_new(m, "sdy.sharding_group", 1, 0, NULL, 1, 0);
        const av_attr *a = g ? av_attr_int(m, id, NULL) : NULL;
        if (!a) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
        g->operands[0] = op->operands[0];
        g->attrs[0] = (av_named_attr){"group_id", a};
        g->loc = op->loc;
        av_block_insert_before(b, op, g);
        replace_uses(&f->body, &op->results[0], op->operands[0]);
        av_block_remove(b, op);
      }
      op = next;
    }
  }
  return AV_OK;
}

/* Whether anything in the module is in GSPMD form. */
static bool region_has_gspmd(const av_region *r) {
  for (uint32_t b = 0; b < r->nblocks; b++)
    for (const av_op *op = r->blocks[b].first; op; op = op->next) {
      if (is_custom_call(op, "SPMDFullToShardShape") ||
          (is_custom_call(op, "Sharding") && av_op_attr(op, "mhlo.sharding")))
        return true;
      for (uint32_t k = 0; k < op->nregions; k++)
        if (region_has_gspmd(&op->regions[k])) return true;
    }
  return false;
}

static bool signature_has_gspmd(const av_func *f) {
  int nin = f->type->ninputs, nout = f->type->nelems - f->type->ninputs;
  for (int i = 0; i < nin; i++)
    if (f->arg_attrs && av_dict_get(f->arg_attrs[i], "mhlo.sharding")) return true;
  for (int i = 0; i < nout; i++)
    if (f->res_attrs && av_dict_get(f->res_attrs[i], "mhlo.sharding")) return true;
  return false;
}

av_code av_gspmd_import(av_module *m, int num_partitions, av_diag *d) {
  if (num_partitions <= 1) return AV_OK;
  av_func *entry = av_module_entry(m);
  if (!entry) return AV_OK;
  bool body = false;
  for (uint32_t i = 0; i < m->nfuncs && !body; i++) body = region_has_gspmd(&m->funcs[i]->body);
  if (!body && !signature_has_gspmd(entry)) return AV_OK;
  av_code c = import_signature(m, entry, d);
  int count = 0;
  for (uint32_t i = 0; c == AV_OK && body && i < m->nfuncs; i++)
    c = import_shard_maps(m, m->funcs[i], &m->funcs[i]->body, &count, d);
  for (uint32_t i = 0; c == AV_OK && i < m->nfuncs; i++)
    c = import_annotations(m, m->funcs[i], &m->funcs[i]->body, 0, d);
  return c;
}
