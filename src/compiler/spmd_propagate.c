/* Shardy's propagation algorithm (see spmd_propagate.h): project tensor shardings onto factors,
 * find per factor the axes compatible across the op's tensors, resolve conflicts (aggressive
 * strategy), project back. Written from Shardy's documentation and source semantics. */
#include "compiler/spmd_propagate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/attrs.h"
#include "compiler/custom_partitioner.h"
#include "compiler/spmd_groups.h"
#include "compiler/spmd_rules.h"

static const char *attr_text(const av_attr *a) {
  if (a && (a->kind == AV_ATTR_OPAQUE || a->kind == AV_ATTR_STRING)) return a->u.str.s;
  return NULL;
}

/* ------------------------------------------------------------- axis refs */

typedef struct axes {
  uint8_t n;
  av_axis_ref a[AV_DIM_MAX_AXES];
} axes;

static int64_t next_pre(const av_axis_ref *r) { return (int64_t)r->pre * r->size; }
static bool ref_eq(const av_axis_ref *a, const av_axis_ref *b) {
  return a->axis == b->axis && a->pre == b->pre && a->size == b->size;
}
static bool ref_contains(const av_axis_ref *a, const av_axis_ref *b) {
  return a->axis == b->axis && a->pre <= b->pre && next_pre(a) >= next_pre(b);
}
static bool ref_prefix_of(const av_axis_ref *a, const av_axis_ref *b) {
  return ref_contains(b, a) && a->pre == b->pre;
}
static bool ref_can_coexist(const av_mesh *m, const av_axis_ref *a, const av_axis_ref *b) {
  if (a->axis != b->axis) return true;
  int64_t full = m->sizes[a->axis];
  if ((a->pre == 1 && a->size == full) || (b->pre == 1 && b->size == full)) return true;
  int64_t minp = a->pre < b->pre ? a->pre : b->pre, maxp = a->pre < b->pre ? b->pre : a->pre;
  int64_t an = next_pre(a), bn = next_pre(b);
  int64_t minn = an < bn ? an : bn, maxn = an < bn ? bn : an;
  if (minn > maxp) return minn % maxp == 0 && maxp % minp == 0 && maxn % minn == 0;
  return maxp % minn == 0;
}
/* The part of r before `other` starts (Shardy's getPrefixWithoutOverlap); false: none. */
static bool prefix_without_overlap(const av_mesh *m, av_axis_ref r, const av_axis_ref *other,
                                   av_axis_ref *out) {
  if (!ref_can_coexist(m, &r, other)) return false;
  if (!av_axis_refs_overlap(&r, other)) {
    *out = r;
    return true;
  }
  if (r.pre >= other->pre) return false;
  out->axis = r.axis;
  out->pre = r.pre;
  out->size = other->pre / r.pre;
  return true;
}
static bool prefix_without_overlap_list(const av_mesh *m, av_axis_ref r, const axes *l, av_axis_ref *out) {
  for (int i = 0; i < l->n; i++)
    if (!prefix_without_overlap(m, r, &l->a[i], &r)) return false;
  *out = r;
  return true;
}
/* Overlap with a set of whole axes (replicated/unreduced). */
static bool prefix_without_overlap_mask(av_axis_ref r, uint32_t mask, av_axis_ref *out) {
  if (mask >> r.axis & 1u) return false;
  *out = r;
  return true;
}

static void axes_push(axes *l, av_axis_ref r) {
  if (l->n < AV_DIM_MAX_AXES) l->a[l->n++] = r;
}

/* Appends r, merging it into the last ref when they are consecutive parts of one axis. */
static void axes_push_merge(const av_mesh *m, axes *l, av_axis_ref r) {
  if (l->n) {
    av_axis_ref *last = &l->a[l->n - 1];
    int64_t full = m->sizes[r.axis];
    bool whole_last = last->pre == 1 && last->size == full, whole_r = r.pre == 1 && r.size == full;
    if (last->axis == r.axis && !whole_last && !whole_r && next_pre(last) == r.pre) {
      last->size *= r.size;
      return;
    }
  }
  axes_push(l, r);
}

typedef enum { PFX_NOT, PFX_EQUAL, PFX_STRICT } pfx;

static pfx list_prefix_of(const axes *first, const axes *second) {
  if (!first->n && !second->n) return PFX_EQUAL;
  if (!first->n) return PFX_STRICT;
  if (first->n > second->n) return PFX_NOT;
  int min = first->n;
  for (int i = 0; i < min - 1; i++)
    if (!ref_eq(&first->a[i], &second->a[i])) return PFX_NOT;
  if (first->n == second->n && ref_eq(&first->a[min - 1], &second->a[min - 1])) return PFX_EQUAL;
  if (ref_prefix_of(&first->a[min - 1], &second->a[min - 1])) return PFX_STRICT;
  return PFX_NOT;
}
static bool strict_prefix(const axes *a, const axes *b) { return list_prefix_of(a, b) == PFX_STRICT; }

/* ------------------------------------------------------------- projection */

typedef struct fshard {
  axes ax, ovf;
  bool closed, minor, present;
} fshard;

typedef struct tproj {
  fshard *f; /* [nfactors] */
  uint32_t replicated, unreduced;
} tproj;

typedef struct proj {
  const av_factor_rule *rule;
  const av_mesh *mesh;
  uint32_t n; /* operands then results */
  tproj *t;
  fshard *store;
} proj;

static int64_t gcd64(int64_t a, int64_t b) {
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a < 0 ? -a : a;
}

/* Projects one tensor's sharding (NULL: none, every dimension open) onto its factors. */
static void build_tensor(proj *p, tproj *t, const av_tensor_factors *map, const av_sharding *s) {
  const av_mesh *m = p->mesh;
  for (int d = 0; d < map->rank; d++) {
    const av_dim_factors *df = &map->dims[d];
    int naxes = s && d < s->rank ? s->naxes[d] : 0;
    bool closed = s && d < s->rank ? !s->open[d] : false;
    int ai = 0;
    bool have = naxes > 0;
    av_axis_ref cur = have ? s->axes[d][0] : (av_axis_ref){0, 1, 1};
    bool overflow = false;
    for (int j = 0; j < df->n; j++) {
      int f = df->f[j];
      fshard *fs = &t->f[f];
      fs->present = true;
      fs->minor = j == df->n - 1;
      if (overflow) {
        fs->closed = true;
        break;
      }
      fs->closed = closed;
      int64_t remaining = p->rule->size[f];
      if (fs->minor) {
        while (have) {
          axes_push_merge(m, &fs->ax, cur);
          if (++ai < naxes) cur = s->axes[d][ai];
          else have = false;
        }
        break;
      }
      int64_t g = 1;
      while (have && (cur.size == 1 || (g = gcd64(remaining, cur.size)) > 1)) {
        av_axis_ref take = cur;
        if (cur.size > g && cur.size != 1) {
          take.size = (int32_t)g;
          cur.pre = (int32_t)(cur.pre * g);
          cur.size = (int32_t)(cur.size / g);
          remaining /= g;
        } else {
          remaining /= cur.size;
          if (++ai < naxes) cur = s->axes[d][ai];
          else have = false;
        }
        axes_push(&fs->ax, take);
      }
      if (remaining > 1 && have) {
        overflow = true;
        while (have) {
          axes_push_merge(m, &fs->ovf, cur);
          if (++ai < naxes) cur = s->axes[d][ai];
          else have = false;
        }
      }
    }
  }
  if (s) {
    t->replicated = s->replicated;
    t->unreduced = s->unreduced;
  }
}

static bool proj_build(proj *p, const av_factor_rule *r, const av_mesh *mesh,
                       const av_sharding *const *shs) {
  p->rule = r;
  p->mesh = mesh;
  p->n = r->nops + r->nres;
  p->t = calloc((size_t)p->n + 1, sizeof *p->t);
  p->store = calloc((size_t)p->n * (size_t)(r->nfactors ? r->nfactors : 1) + 1, sizeof *p->store);
  if (!p->t || !p->store) return false;
  for (uint32_t i = 0; i < p->n; i++) {
    p->t[i].f = p->store + (size_t)i * (size_t)(r->nfactors ? r->nfactors : 1);
    build_tensor(p, &p->t[i], &r->ops[i], shs[i]);
  }
  return true;
}

static void proj_free(proj *p) {
  free(p->t);
  free(p->store);
}

/* Back from factors to a dimension sharding (Shardy's createTensorShardingAttr). */
static void tensor_sharding(const proj *p, uint32_t ti, const av_sharding *old, av_sharding *out) {
  const av_tensor_factors *map = &p->rule->ops[ti];
  const tproj *t = &p->t[ti];
  av_sharding_replicated(out, map->rank);
  out->mesh = p->mesh;
  out->replicated = t->replicated;
  out->unreduced = t->unreduced;
  (void)old;
  for (int d = 0; d < map->rank; d++) {
    const av_dim_factors *df = &map->dims[d];
    bool closed = false;
    axes dim = {0};
    for (int j = 0; j < df->n; j++) {
      const fshard *fs = &t->f[df->f[j]];
      closed |= fs->closed;
      int64_t sharded = 1;
      for (int i = 0; i < fs->ax.n; i++) {
        sharded *= fs->ax.a[i].size;
        if (i == 0) axes_push_merge(p->mesh, &dim, fs->ax.a[i]);
        else axes_push(&dim, fs->ax.a[i]);
      }
      if (fs->ovf.n) {
        for (int i = 0; i < fs->ovf.n; i++) {
          if (i == 0) axes_push_merge(p->mesh, &dim, fs->ovf.a[i]);
          else axes_push(&dim, fs->ovf.a[i]);
        }
        break;
      }
      if (sharded < p->rule->size[df->f[j]]) break;
    }
    out->naxes[d] = dim.n;
    memcpy(out->axes[d], dim.a, sizeof dim.a);
    out->open[d] = !closed;
  }
}

bool av_spmd_project(const av_factor_rule *r, uint32_t t, const av_mesh *m, const av_sharding *s,
                     av_factor_axes *per_factor, bool *present) {
  fshard fs[AV_RULE_MAX_FACTORS];
  memset(fs, 0, sizeof fs);
  tproj tp = {fs, 0, 0};
  proj pj = {r, m, 0, NULL, NULL};
  build_tensor(&pj, &tp, &r->ops[t], s);
  bool ok = true;
  for (int f = 0; f < r->nfactors; f++) {
    per_factor[f].n = fs[f].ax.n;
    memcpy(per_factor[f].a, fs[f].ax.a, sizeof fs[f].ax.a);
    if (present) present[f] = fs[f].present;
    if (fs[f].ovf.n) ok = false;
  }
  return ok;
}

bool av_spmd_unproject(const av_factor_rule *r, uint32_t t, const av_mesh *m,
                       const av_factor_axes *per_factor, av_sharding *out) {
  const av_tensor_factors *map = &r->ops[t];
  av_sharding_replicated(out, map->rank);
  out->mesh = m;
  bool exact = true;
  for (int d = 0; d < map->rank; d++) {
    const av_dim_factors *df = &map->dims[d];
    axes dim = {0};
    bool stopped = false;
    for (int j = 0; j < df->n; j++) {
      const av_factor_axes *fa = &per_factor[df->f[j]];
      if (stopped) {
        if (fa->n) exact = false;
        continue;
      }
      int64_t sharded = 1;
      for (int i = 0; i < fa->n; i++) {
        sharded *= fa->a[i].size;
        if (dim.n >= AV_DIM_MAX_AXES) return false;
        if (i == 0) axes_push_merge(m, &dim, fa->a[i]);
        else axes_push(&dim, fa->a[i]);
      }
      if (sharded < r->size[df->f[j]]) stopped = true;
    }
    out->naxes[d] = dim.n;
    memcpy(out->axes[d], dim.a, sizeof dim.a);
  }
  return exact;
}

static bool sharding_same(const av_sharding *a, const av_sharding *b) {
  if (a->rank != b->rank || a->replicated != b->replicated || a->unreduced != b->unreduced) return false;
  for (int d = 0; d < a->rank; d++) {
    if (a->naxes[d] != b->naxes[d] || a->open[d] != b->open[d]) return false;
    for (int i = 0; i < a->naxes[d]; i++)
      if (!ref_eq(&a->axes[d][i], &b->axes[d][i])) return false;
  }
  return true;
}

static bool sharding_empty(const av_sharding *s) {
  for (int d = 0; d < s->rank; d++)
    if (s->naxes[d]) return false;
  return true;
}

/* ------------------------------------------------------ factor propagation */

typedef enum { DIR_NONE = 0, DIR_FORWARD = 1, DIR_BACKWARD = 2, DIR_BOTH = 3 } dir;

/* Longest compatible major axes of two lists (Shardy's getCompatibleMajorAxesInternal). */
static bool compatible_major(axes *res, const axes *newl, bool can_expand) {
  axes old = *res, out = {0};
  int i = 0, j = 0;
  while (i < old.n && j < newl->n) {
    av_axis_ref o = old.a[i++], n = newl->a[j++];
    if (o.axis != n.axis) {
      *res = out;
      return false;
    }
    if (o.pre == n.pre && o.size == n.size) {
      axes_push(&out, n);
      continue;
    }
    if (ref_prefix_of(&n, &o)) {
      if (j < newl->n) {
        axes_push(&out, n);
        *res = out;
        return false;
      }
      axes_push(&out, o);
    } else if (ref_prefix_of(&o, &n)) {
      if (!can_expand || i < old.n) {
        axes_push(&out, o);
        *res = out;
        return false;
      }
      axes_push(&out, n);
    } else {
      *res = out;
      return false;
    }
  }
  while (i < old.n) axes_push(&out, old.a[i++]);
  if (can_expand)
    while (j < newl->n) axes_push(&out, newl->a[j++]);
  *res = out;
  return can_expand;
}

static axes compatible_major_axes(const proj *p, int f, dir d) {
  axes res = {0};
  if (d == DIR_NONE) return res;
  uint32_t nops = p->rule->nops;
  bool can_expand = true;
  for (int pass = 0; pass < 2; pass++) {
    bool results = (d == DIR_BACKWARD) ? pass == 0 : pass == 1;
    if (pass == 1 && d != DIR_BOTH) can_expand = false;
    uint32_t lo = results ? nops : 0, hi = results ? p->n : nops;
    for (uint32_t t = lo; t < hi; t++)
      if (p->t[t].f[f].present) can_expand = compatible_major(&res, &p->t[t].f[f].ax, can_expand);
  }
  return res;
}

static bool across_factors(const proj *p, const tproj *t, int f, av_axis_ref r, av_axis_ref *out) {
  for (int g = 0; g < p->rule->nfactors; g++) {
    if (g == f || !t->f[g].present) continue;
    if (!prefix_without_overlap_list(p->mesh, r, &t->f[g].ovf, &r)) return false;
    if (!prefix_without_overlap_list(p->mesh, r, &t->f[g].ax, &r)) return false;
  }
  *out = r;
  return true;
}

static bool within_factor(const proj *p, const tproj *t, const fshard *fs, int64_t prev,
                          int64_t fsize, av_axis_ref r, av_axis_ref *out) {
  if (!prefix_without_overlap_mask(r, t->replicated, &r)) return false;
  if (!prefix_without_overlap_mask(r, t->unreduced, &r)) return false;
  for (int i = 0; i < fs->ax.n; i++)
    if (ref_contains(&fs->ax.a[i], &r)) {
      *out = r;
      return true;
    }
  if (!fs->closed && !fs->ovf.n) {
    if (fs->minor) {
      *out = r;
      return true;
    }
    if (fsize % prev == 0) {
      int64_t g = gcd64(fsize / prev, r.size);
      if (g == r.size) {
        *out = r;
        return true;
      }
      if (g != 1) {
        out->axis = r.axis;
        out->pre = r.pre;
        out->size = (int32_t)g;
        return true;
      }
    }
  }
  if (fs->ax.n && ref_prefix_of(&fs->ax.a[fs->ax.n - 1], &r)) {
    *out = fs->ax.a[fs->ax.n - 1];
    return true;
  }
  return false;
}

typedef enum { TRUNC_WITHIN, TRUNC_ACROSS } trunc_kind;

static void truncate_axes(const proj *p, axes *l, trunc_kind k, const tproj *t, int f) {
  int64_t prev = 1;
  const fshard *fs = &t->f[f];
  for (int i = 0; i < l->n; i++) {
    av_axis_ref nr;
    bool ok = k == TRUNC_WITHIN ? within_factor(p, t, fs, prev, p->rule->size[f], l->a[i], &nr)
                                : across_factors(p, t, f, l->a[i], &nr);
    if (!ok) {
      l->n = (uint8_t)i;
      return;
    }
    if (!ref_eq(&nr, &l->a[i])) {
      l->a[i] = nr;
      l->n = (uint8_t)(i + 1);
      return;
    }
    prev *= nr.size;
  }
}

static axes propagated_factor(const proj *p, const tproj *t, int f, const axes *per_factor) {
  axes none = {0};
  if (!t->f[f].present) return none;
  axes n = per_factor[f];
  truncate_axes(p, &n, TRUNC_WITHIN, t, f);
  if (!strict_prefix(&t->f[f].ax, &n)) return none;
  truncate_axes(p, &n, TRUNC_ACROSS, t, f);
  return n;
}

static bool expand(tproj *t, int f, const axes *n) {
  if (!t->f[f].present || !strict_prefix(&t->f[f].ax, n)) return false;
  t->f[f].ax = *n;
  return true;
}

/* The aggressive factor propagation of one op; sets updated[t] for changed tensors. */
static void aggressive(proj *p, const dir *dirs, bool elementwise, bool *updated) {
  int nf = p->rule->nfactors;
  axes per[AV_RULE_MAX_FACTORS];
  bool any = false;
  for (int f = 0; f < nf; f++) {
    per[f] = compatible_major_axes(p, f, dirs[f]);
    any |= per[f].n > 0;
  }
  if (!any) return;
  int64_t src_size[AV_RULE_MAX_FACTORS], src_index[AV_RULE_MAX_FACTORS], shard_size[AV_RULE_MAX_FACTORS];
  int order[AV_RULE_MAX_FACTORS];
  for (int f = 0; f < nf; f++) {
    src_size[f] = -1;
    src_index[f] = -1;
    shard_size[f] = 1;
    for (int i = 0; i < per[f].n; i++) shard_size[f] *= per[f].a[i].size;
    order[f] = f;
  }
  for (uint32_t t = 0; t < p->n; t++) {
    int64_t tsize = 1;
    for (int f = 0; f < nf; f++)
      if (p->t[t].f[f].present) tsize *= p->rule->size[f];
    for (int f = 0; f < nf; f++) {
      if (!p->t[t].f[f].present || !per[f].n) continue;
      if (list_prefix_of(&per[f], &p->t[t].f[f].ax) != PFX_NOT && tsize > src_size[f]) {
        src_size[f] = tsize;
        src_index[f] = t;
      }
    }
  }
  for (int i = 1; i < nf; i++) /* insertion sort by the heuristic's key */
    for (int j = i; j > 0; j--) {
      int a = order[j - 1], b = order[j];
      int64_t ka[4] = {-src_size[a], elementwise ? -shard_size[a] : 0, src_index[a], a};
      int64_t kb[4] = {-src_size[b], elementwise ? -shard_size[b] : 0, src_index[b], b};
      bool less = false;
      for (int k = 0; k < 4; k++)
        if (ka[k] != kb[k]) {
          less = kb[k] < ka[k];
          break;
        }
      if (!less) break;
      order[j - 1] = b;
      order[j] = a;
    }
  uint32_t nops = p->rule->nops;
  for (int side = 0; side < 2; side++) { /* results first, then operands */
    uint32_t lo = side == 0 ? nops : 0, hi = side == 0 ? p->n : nops;
    for (uint32_t t = lo; t < hi; t++) {
      for (int k = 0; k < nf; k++) {
        int f = order[k];
        axes n = propagated_factor(p, &p->t[t], f, per);
        if (!n.n) continue;
        if (side == 1 && elementwise)
          for (uint32_t r = nops; r < p->n; r++)
            if (p->t[r].f[f].present && strict_prefix(&p->t[r].f[f].ax, &n)) n = p->t[r].f[f].ax;
        if (expand(&p->t[t], f, &n)) updated[t] = true;
      }
    }
  }
}

/* ------------------------------------------------------------ the worklist */

/* ITEM_INFER: a custom-partitioned call without a sharding rule, whose partitioner infers its
 * results' shardings from its operands' (run_infer); it has no factor rule. */
typedef enum { ITEM_OP, ITEM_EDGE, ITEM_MANUAL_IN, ITEM_MANUAL_OUT, ITEM_INFER } item_kind;

typedef struct item {
  item_kind kind;
  const av_op *op;     /* the op, or the edge's owner op (while, case, barrier, manual) */
  uint32_t index;      /* edge: which result / operand */
  av_factor_rule *rule;
  /* edge: sources (operands of the identity rule) and targets (share one sharding) */
  const av_value **src;
  uint32_t nsrc;
  const av_value **tgt;
  uint32_t ntgt;
  const av_sharding *fixed; /* unused */
  /* manual computation edges: the in_sharding (ITEM_MANUAL_IN, the edge's owner, global
   * view), the manual axes, the body argument / returned value (local view) */
  av_sharding *owner_sh;
  uint32_t manual;
  const av_value *inner;
  const av_sharding **seen; /* ITEM_INFER: the operands' shardings its partitioner was last told */
} item;

typedef struct prop {
  av_module *m;
  av_spmd_shardings *s;
  const av_func *main;
  item *items;
  uint32_t nitems, cap;
  uint32_t *uses;       /* use count by value id */
  uint32_t **users;     /* items using a value (as operand or edge source), by value id */
  uint32_t *nusers, *capusers;
  uint32_t *definer;    /* item defining a value + 1 (0: none), by value id */
  uint32_t *stack;
  bool *queued;
  uint32_t nstack;
  int stage;
  av_diag *d;
  bool oom;
  bool infer_custom; /* see av_spmd_propagate */
  bool failed;       /* an error is in d */
} prop;

static const av_sharding *get_sh(const prop *p, const av_value *v) {
  return v && v->id < p->s->nvalues ? p->s->of[v->id] : NULL;
}

static bool set_sh(prop *p, const av_value *v, const av_sharding *sh) {
  if (!v || v->id >= p->s->nvalues) return false;
  av_sharding *c = av_arena_memdup(&p->s->arena, sh, sizeof *sh);
  if (!c) {
    p->oom = true;
    return false;
  }
  p->s->of[v->id] = c;
  return true;
}

static bool is_tensor(const av_value *v) {
  if (!v->type || v->type->kind != AV_TYPE_TENSOR) return false;
  for (int k = 0; k < v->type->rank; k++)
    if (v->type->dims[k] < 0) return false;
  return true;
}

static uint32_t add_item(prop *p, item it) {
  if (p->nitems == p->cap) {
    uint32_t cap = p->cap ? 2 * p->cap : 256;
    item *n = realloc(p->items, (size_t)cap * sizeof *n);
    if (!n) {
      p->oom = true;
      av_factor_rule_free(it.rule);
      free(it.src);
      return UINT32_MAX;
    }
    p->items = n;
    p->cap = cap;
  }
  p->items[p->nitems] = it;
  return p->nitems++;
}

static void add_user(prop *p, const av_value *v, uint32_t it) {
  if (!v || v->id >= p->s->nvalues) return;
  uint32_t id = v->id;
  for (uint32_t i = 0; i < p->nusers[id]; i++)
    if (p->users[id][i] == it) return;
  if (p->nusers[id] == p->capusers[id]) {
    uint32_t cap = p->capusers[id] ? 2 * p->capusers[id] : 2;
    uint32_t *n = realloc(p->users[id], (size_t)cap * sizeof *n);
    if (!n) {
      p->oom = true;
      return;
    }
    p->users[id] = n;
    p->capusers[id] = cap;
  }
  p->users[id][p->nusers[id]++] = it;
}

static void set_definer(prop *p, const av_value *v, uint32_t it) {
  if (v && v->id < p->s->nvalues && it != UINT32_MAX) p->definer[v->id] = it + 1;
}

/* An edge item over sources/targets (arrays taken over). */
static void add_edge(prop *p, const av_op *owner, uint32_t index, const av_value **src, uint32_t nsrc,
                     const av_value **tgt, uint32_t ntgt, const av_sharding *fixed) {
  const av_value *typed = ntgt ? tgt[0] : (nsrc ? src[0] : NULL);
  if (!typed || !is_tensor(typed)) {
    free(src);
    return;
  }
  item it = {ITEM_EDGE, owner, index, av_factor_rule_identity(typed->type, nsrc, 1), src, nsrc, tgt, ntgt, fixed, NULL, 0, NULL, NULL};
  if (!it.rule) {
    free(src);
    return;
  }
  uint32_t k = add_item(p, it);
  if (k == UINT32_MAX) return;
  for (uint32_t i = 0; i < nsrc; i++) add_user(p, src[i], k);
  for (uint32_t i = 0; i < ntgt; i++) set_definer(p, tgt[i], k);
}

static const av_value **vlist(prop *p, uint32_t n) {
  const av_value **l = calloc((size_t)n * 2 + 2, sizeof *l);
  if (!l) p->oom = true;
  return l;
}

static void collect_region(prop *p, const av_region *r);
static void local_view(const av_sharding *g, uint32_t manual, av_sharding *out);

static const av_op *terminator(const av_region *r) {
  return r->nblocks == 1 ? r->blocks[0].last : NULL;
}

/* The manual computation's data-flow edges: operand i -> in_sharding i (body argument i in
 * local view) and body result i -> result i. Inside, the body propagates over the free axes. */
static void collect_manual(prop *p, const av_op *op) {
  if (op->nregions != 1 || op->regions[0].nblocks != 1) return;
  const av_block *body = &op->regions[0].blocks[0];
  const av_op *ret = body->last;
  const char *in_t = attr_text(av_op_attr(op, "in_shardings"));
  const char *ax_t = attr_text(av_op_attr(op, "manual_axes"));
  if (!in_t || !ax_t || body->nargs != op->noperands || !ret || ret->noperands != op->nresults) return;
  av_sharding *sh = av_arena_calloc(&p->s->arena, op->noperands + 1, sizeof *sh);
  int *ranks = calloc(op->noperands + 1, sizeof *ranks);
  if (!sh || !ranks) {
    free(ranks);
    p->oom = true;
    return;
  }
  av_diag ignored;
  av_diag_init(&ignored);
  for (uint32_t i = 0; i < op->noperands; i++) ranks[i] = is_tensor(op->operands[i]) ? op->operands[i]->type->rank : 0;
  bool ok = av_sharding_per_value_parse(in_t, (int)op->noperands, ranks, &p->s->meshes, sh, &ignored) == AV_OK;
  free(ranks);
  const av_mesh *mesh = NULL;
  for (uint32_t i = 0; ok && i < op->noperands && !mesh; i++) mesh = sh[i].mesh;
  uint32_t mask = 0;
  if (!ok || !mesh || av_manual_axes_parse(ax_t, mesh, &mask, &ignored) != AV_OK) return;
  for (uint32_t i = 0; i < op->noperands; i++) {
    if (!sh[i].mesh || !is_tensor(op->operands[i])) continue;
    av_sharding loc;
    local_view(&sh[i], mask, &loc);
    if (!sharding_empty(&loc)) set_sh(p, &body->args[i], &loc);
    const av_value **l = vlist(p, 1);
    if (!l) return;
    l[0] = op->operands[i];
    item it = {ITEM_MANUAL_IN, op, i, av_factor_rule_identity(op->operands[i]->type, 2, 1), l, 1, NULL, 0, NULL, &sh[i], mask, &body->args[i], NULL};
    if (!it.rule) {
      free(l);
      continue;
    }
    uint32_t k = add_item(p, it);
    if (k == UINT32_MAX) return;
    add_user(p, op->operands[i], k);
    set_definer(p, &body->args[i], k);
  }
  collect_region(p, &op->regions[0]);
  for (uint32_t i = 0; i < op->nresults; i++) {
    if (!is_tensor(&op->results[i])) continue;
    const av_value **l = vlist(p, 1);
    if (!l) return;
    l[0] = ret->operands[i];
    item it = {ITEM_MANUAL_OUT, op, i, av_factor_rule_identity(op->results[i].type, 1, 1), l, 1, NULL, 0, NULL, NULL, mask, ret->operands[i], NULL};
    if (!it.rule) {
      free(l);
      continue;
    }
    uint32_t k = add_item(p, it);
    if (k == UINT32_MAX) return;
    add_user(p, ret->operands[i], k);
    set_definer(p, &op->results[i], k);
  }
}

/* A custom-partitioned call whose sdy.sharding_rule gave no rule: the reason is the error
 * (or memory ran out). False when the call has no rule. */
static bool custom_rule_failed(prop *p, const av_op *op) {
  const av_attr *rule = av_op_attr(op, "sdy.sharding_rule");
  if (!rule || (rule->kind != AV_ATTR_OPAQUE && rule->kind != AV_ATTR_STRING)) return false;
  char why[200];
  av_factor_rule *again = av_factor_rule_from_sdy(op, rule->u.str.s, why, sizeof why);
  if (again) { /* it reads: the first attempt ran out of memory */
    av_factor_rule_free(again);
    p->oom = true;
  } else {
    av_diag_set(p->d, AV_INVALID_ARGUMENT, "%s at %s: its sdy.sharding_rule: %s", op->name, op->loc, why);
    p->failed = true;
  }
  return true;
}

static void collect_op(prop *p, const av_op *op) {
  switch (op->code) {
    case AV_OP_WHILE: {
      if (op->nregions != 2) return;
      collect_region(p, &op->regions[0]);
      collect_region(p, &op->regions[1]);
      const av_op *ret = terminator(&op->regions[1]);
      for (uint32_t i = 0; i < op->nresults && i < op->noperands; i++) {
        const av_value **l = vlist(p, 3);
        if (!l) return;
        const av_value **tgt = l + 2;
        l[0] = op->operands[i];
        uint32_t ns = 1;
        if (ret && i < ret->noperands) l[ns++] = ret->operands[i];
        tgt[0] = &op->results[i];
        uint32_t nt = 1;
        if (op->regions[1].nblocks == 1 && i < op->regions[1].blocks[0].nargs) tgt[nt++] = &op->regions[1].blocks[0].args[i];
        if (op->regions[0].nblocks == 1 && i < op->regions[0].blocks[0].nargs) tgt[nt++] = &op->regions[0].blocks[0].args[i];
        add_edge(p, op, i, l, ns, tgt, nt, NULL);
      }
      return;
    }
    case AV_OP_CASE: case AV_OP_IF: {
      for (uint32_t q = 0; q < op->nregions; q++) collect_region(p, &op->regions[q]);
      for (uint32_t i = 0; i < op->nresults; i++) {
        const av_value **l = vlist(p, op->nregions + 1);
        if (!l) return;
        uint32_t ns = 0;
        for (uint32_t q = 0; q < op->nregions; q++) {
          const av_op *ret = terminator(&op->regions[q]);
          if (ret && i < ret->noperands) l[ns++] = ret->operands[i];
        }
        const av_value **tgt = l + op->nregions + 1;
        tgt[0] = &op->results[i];
        add_edge(p, op, i, l, ns, tgt, 1, NULL);
      }
      return;
    }
    case AV_OP_OPTIMIZATION_BARRIER: {
      for (uint32_t i = 0; i < op->nresults && i < op->noperands; i++) {
        const av_value **l = vlist(p, 1);
        if (!l) return;
        l[0] = op->operands[i];
        l[2] = &op->results[i];
        add_edge(p, op, i, l, 1, l + 2, 1, NULL);
      }
      return;
    }
    case AV_OP_SDY_MANUAL_COMPUTATION:
      collect_manual(p, op);
      return;
    case AV_OP_SDY_SHARDING_GROUP: /* collect_groups */
      return;
    default:
      break;
  }
  av_factor_rule *r = av_factor_rule_of(op);
  item_kind kind = ITEM_OP;
  if (!r) { /* a custom-partitioned call: its rule did not read, or it has none */
    if (!av_custom_partitioner_of(op) || custom_rule_failed(p, op) || !p->infer_custom) return;
    kind = ITEM_INFER;
  }
  item it = {kind, op, 0, r, NULL, 0, NULL, 0, NULL, NULL, 0, NULL, NULL};
  uint32_t k = add_item(p, it);
  if (k == UINT32_MAX) return;
  for (uint32_t i = 0; i < op->noperands; i++) add_user(p, op->operands[i], k);
  for (uint32_t i = 0; i < op->nresults; i++) set_definer(p, &op->results[i], k);
}

/* Each sharding group becomes an identity edge over its values (no target), collected before
 * every other item so that it runs first: the values start from the sharding any of them
 * states (Shardy syncs groups before propagating), and every later update of one reaches the
 * others. */
static av_code collect_groups(prop *p) {
  av_sharding_group *g;
  uint32_t n;
  av_code c = av_sharding_groups_collect(p->main, p->s->nvalues, &g, &n, p->d);
  for (uint32_t k = 0; c == AV_OK && k < n; k++) {
    if (!is_tensor(g[k].members[0])) continue;
    add_edge(p, g[k].op, 0, g[k].members, g[k].n, NULL, 0, NULL);
    g[k].members = NULL; /* add_edge took it */
  }
  av_sharding_groups_free(g, n);
  return c;
}

static void collect_region(prop *p, const av_region *r) {
  for (uint32_t b = 0; b < r->nblocks; b++)
    for (const av_op *op = r->blocks[b].first; op; op = op->next) collect_op(p, op);
}

static void count_uses(prop *p, const av_region *r) {
  for (uint32_t b = 0; b < r->nblocks; b++)
    for (const av_op *op = r->blocks[b].first; op; op = op->next) {
      /* a sharding group is no use (Shardy's import takes the ops out) */
      for (uint32_t i = 0; i < op->noperands && op->code != AV_OP_SDY_SHARDING_GROUP; i++)
        if (op->operands[i]->id < p->s->nvalues) p->uses[op->operands[i]->id]++;
      for (uint32_t q = 0; q < op->nregions; q++) count_uses(p, &op->regions[q]);
    }
}

/* --------------------------------------------------------- one propagation */

static dir dir_union(dir a, dir b) { return (dir)(a | b); }

static bool multi_use_operand(const prop *p, const item *it) {
  if (it->kind != ITEM_OP) return false; /* the edge's owner value has the edge as only user */
  for (uint32_t i = 0; i < it->op->noperands; i++) {
    const av_value *v = it->op->operands[i];
    if (!is_tensor(v) || v->type->rank == 0) continue;
    if (v->id < p->s->nvalues && p->uses[v->id] > 1) return true;
  }
  return false;
}

static dir stage_dir(const prop *p, const item *it, int stage, int f) {
  const av_op *op = it->op;
  bool edge = it->kind != ITEM_OP;
  bool bcast = !edge && op->code == AV_OP_BROADCAST_IN_DIM;
  switch (stage) {
    case 0: case 1: {
      bool pass = edge || av_spmd_is_elementwise(op) || op->code == AV_OP_RESHAPE ||
                  op->code == AV_OP_TRANSPOSE;
      bool fwd = !edge && (op->code == AV_OP_DYNAMIC_SLICE || op->code == AV_OP_DYNAMIC_UPDATE_SLICE);
      if (!pass && !fwd) return DIR_NONE;
      if (stage == 0 && multi_use_operand(p, it)) return DIR_NONE;
      return fwd ? DIR_FORWARD : DIR_BOTH;
    }
    case 2:
      if (!edge && it->rule->kind[f] != AV_FACTOR_PASS_THROUGH) return DIR_NONE;
      return bcast ? DIR_BACKWARD : DIR_BOTH;
    case 3:
      return bcast ? DIR_BACKWARD : DIR_BOTH;
    default:
      return DIR_BOTH;
  }
}

static dir direction(const prop *p, const item *it, int f) {
  if (it->rule->blocked[f]) return DIR_NONE;
  dir d = DIR_NONE;
  for (int s = 0; s <= p->stage; s++) d = dir_union(d, stage_dir(p, it, s, f));
  return d;
}

static bool same_mesh(const av_mesh *a, const av_mesh *b) {
  if (a == b) return true;
  if (!a || !b || a->naxes != b->naxes || a->ndevices != b->ndevices) return false;
  for (int k = 0; k < a->naxes; k++)
    if (a->sizes[k] != b->sizes[k] || strcmp(a->names[k], b->names[k]) != 0) return false;
  for (int64_t q = 0; q < a->ndevices; q++)
    if (av_mesh_device_id(a, q) != av_mesh_device_id(b, q)) return false;
  return true;
}

static void push(prop *p, uint32_t it) {
  if (it >= p->nitems || p->queued[it]) return;
  p->queued[it] = true;
  p->stack[p->nstack++] = it;
}

static void notify_value(prop *p, const av_value *v, uint32_t self) {
  if (!v || v->id >= p->s->nvalues) return;
  uint32_t def = p->definer[v->id];
  if (def && def - 1 != self) push(p, def - 1);
  for (uint32_t i = 0; i < p->nusers[v->id]; i++)
    if (p->users[v->id][i] != self) push(p, p->users[v->id][i]);
}

/* A manual computation's value in local view (manual axes dropped) and back in global view
 * (the owner's manual axes first in every dimension). */
static void local_view(const av_sharding *g, uint32_t manual, av_sharding *out) {
  *out = *g;
  for (int d = 0; d < g->rank; d++) {
    int n = 0;
    for (int i = 0; i < g->naxes[d]; i++)
      if (!(manual >> g->axes[d][i].axis & 1u)) out->axes[d][n++] = g->axes[d][i];
    out->naxes[d] = (uint8_t)n;
  }
  out->unreduced &= ~manual;
  out->replicated &= ~manual;
}

static void global_view(const av_sharding *local, const av_sharding *owner, uint32_t manual,
                        av_sharding *out) {
  *out = *local;
  out->mesh = owner->mesh;
  for (int d = 0; d < local->rank && d < owner->rank; d++) {
    int n = 0;
    for (int i = 0; i < owner->naxes[d]; i++)
      if (manual >> owner->axes[d][i].axis & 1u) out->axes[d][n++] = owner->axes[d][i];
    for (int i = 0; i < local->naxes[d] && n < AV_DIM_MAX_AXES; i++) out->axes[d][n++] = local->axes[d][i];
    out->naxes[d] = (uint8_t)n;
  }
}

static void run_manual(prop *p, uint32_t k) {
  item *it = &p->items[k];
  bool in = it->kind == ITEM_MANUAL_IN;
  const av_value *outer = in ? it->src[0] : &it->op->results[it->index];
  av_sharding owner_now, inner_global;
  const av_sharding *owner = in ? it->owner_sh : get_sh(p, outer);
  const av_sharding *inner_sh = get_sh(p, it->inner);
  const av_sharding *outer_sh = in ? get_sh(p, outer) : NULL;
  if (!owner || !owner->mesh || owner->mesh->ndevices <= 1) return;
  owner_now = *owner;
  const av_sharding *shs[3];
  uint32_t n = 0;
  if (in) shs[n++] = outer_sh;
  if (inner_sh) global_view(inner_sh, &owner_now, it->manual, &inner_global);
  shs[n++] = inner_sh ? &inner_global : NULL;
  shs[n++] = &owner_now;
  av_factor_rule *r = av_factor_rule_identity(outer->type, n - 1, 1);
  proj pj = {0};
  if (!r || !proj_build(&pj, r, owner->mesh, shs)) {
    av_factor_rule_free(r);
    proj_free(&pj);
    p->oom = true;
    return;
  }
  dir dirs[AV_RULE_MAX_FACTORS];
  for (int f = 0; f < r->nfactors; f++) dirs[f] = direction(p, it, f);
  bool updated[3] = {false, false, false};
  aggressive(&pj, dirs, false, updated);
  for (uint32_t i = 0; i < n; i++) {
    if (!updated[i]) continue;
    av_sharding ns;
    tensor_sharding(&pj, i, shs[i], &ns);
    if ((!shs[i] && sharding_empty(&ns)) || (shs[i] && sharding_same(&ns, shs[i]))) continue;
    if (i == n - 1) { /* the owner */
      if (in) *it->owner_sh = ns;
      else {
        set_sh(p, outer, &ns);
        notify_value(p, outer, k);
      }
      av_sharding loc;
      local_view(&ns, it->manual, &loc);
      const av_sharding *cur = get_sh(p, it->inner);
      if (in && (!cur || !sharding_same(cur, &loc))) {
        set_sh(p, it->inner, &loc);
        notify_value(p, it->inner, k);
      }
    } else if (in && i == 0) {
      set_sh(p, outer, &ns);
      notify_value(p, outer, k);
    } else {
      av_sharding loc;
      local_view(&ns, it->manual, &loc);
      set_sh(p, it->inner, &loc);
      notify_value(p, it->inner, k);
    }
  }
  proj_free(&pj);
  av_factor_rule_free(r);
}

/* A custom-partitioned call without a sharding rule (a GSPMD-form program): its partitioner's
 * infer_sharding_from_operands is told the operands' shardings and gives the results', as
 * XLA's GSPMD propagation asks it; asked again only when the operands' shardings change. */
static void run_infer(prop *p, uint32_t k) {
  item *it = &p->items[k];
  const av_op *op = it->op;
  uint32_t n = op->noperands;
  if (!it->seen && !(it->seen = calloc((size_t)n + 1, sizeof *it->seen))) {
    p->oom = true;
    return;
  }
  const av_mesh *mesh = NULL;
  bool changed = false;
  for (uint32_t i = 0; i < n; i++) {
    const av_sharding *s = is_tensor(op->operands[i]) ? get_sh(p, op->operands[i]) : NULL;
    changed |= s != it->seen[i];
    it->seen[i] = s;
    if (!mesh && s && s->mesh && s->mesh->ndevices > 1) mesh = s->mesh;
  }
  if (!mesh || !changed) return;
  av_sharding *res = calloc((size_t)op->nresults + 1, sizeof *res);
  if (!res) {
    p->oom = true;
    return;
  }
  bool has = false;
  if (av_cp_call_infer(av_custom_partitioner_of(op), op, it->seen, &has, res, p->d) != AV_OK) p->failed = true;
  for (uint32_t i = 0; has && !p->failed && i < op->nresults; i++) {
    const av_value *r = &op->results[i];
    const av_sharding *cur = get_sh(p, r);
    if (!is_tensor(r) || (!cur && sharding_empty(&res[i])) || (cur && sharding_same(cur, &res[i]))) continue;
    if (!res[i].mesh) res[i].mesh = mesh; /* replicated, and closed */
    set_sh(p, r, &res[i]);
    notify_value(p, r, k);
  }
  free(res);
}

/* Propagates through one item; pushes the items its changes affect. */
static void run_item(prop *p, uint32_t k) {
  if (p->items[k].kind == ITEM_MANUAL_IN || p->items[k].kind == ITEM_MANUAL_OUT) {
    run_manual(p, k);
    return;
  }
  if (p->items[k].kind == ITEM_INFER) {
    run_infer(p, k);
    return;
  }
  item *it = &p->items[k];
  const av_factor_rule *r = it->rule;
  uint32_t n = r->nops + r->nres;
  const av_sharding **shs = calloc((size_t)n + 1, sizeof *shs);
  const av_value **vals = calloc((size_t)n + 1, sizeof *vals);
  bool *updated = calloc((size_t)n + 1, sizeof *updated);
  proj pj = {0};
  if (!shs || !vals || !updated) {
    p->oom = true;
    goto done;
  }
  if (it->kind == ITEM_OP) {
    for (uint32_t i = 0; i < r->nops; i++) vals[i] = it->op->operands[i];
    for (uint32_t i = 0; i < r->nres; i++) vals[r->nops + i] = &it->op->results[i];
    for (uint32_t i = 0; i < n; i++) shs[i] = is_tensor(vals[i]) ? get_sh(p, vals[i]) : NULL;
  } else {
    for (uint32_t i = 0; i < it->nsrc; i++) {
      vals[i] = it->src[i];
      shs[i] = get_sh(p, it->src[i]);
    }
    vals[n - 1] = it->ntgt ? it->tgt[0] : NULL;
    shs[n - 1] = it->fixed ? it->fixed : (it->ntgt ? get_sh(p, it->tgt[0]) : NULL);
  }
  const av_mesh *mesh = NULL;
  for (uint32_t i = 0; i < n; i++) {
    /* shardings on an empty (one-device) mesh shard nothing: they go with any mesh */
    if (!shs[i] || !shs[i]->mesh || shs[i]->mesh->ndevices <= 1) continue;
    if (!mesh) mesh = shs[i]->mesh;
    else if (!same_mesh(mesh, shs[i]->mesh)) goto done;
  }
  if (!mesh || mesh->ndevices <= 1) goto done;
  if (!proj_build(&pj, r, mesh, shs)) {
    p->oom = true;
    goto done;
  }
  dir dirs[AV_RULE_MAX_FACTORS];
  for (int f = 0; f < r->nfactors; f++) dirs[f] = direction(p, it, f);
  bool ew = it->kind == ITEM_OP && av_spmd_is_elementwise(it->op);
  aggressive(&pj, dirs, ew, updated);
  for (uint32_t i = 0; i < n; i++) {
    if (!updated[i]) continue;
    if (it->kind == ITEM_EDGE && i == n - 1 && it->fixed) continue;
    av_sharding ns;
    tensor_sharding(&pj, i, shs[i], &ns);
    if ((!shs[i] && sharding_empty(&ns)) || (shs[i] && sharding_same(&ns, shs[i]))) continue;
    if (it->kind == ITEM_EDGE && i == n - 1) {
      for (uint32_t t = 0; t < it->ntgt; t++) {
        set_sh(p, it->tgt[t], &ns);
        notify_value(p, it->tgt[t], k);
      }
    } else if (vals[i]) {
      set_sh(p, vals[i], &ns);
      notify_value(p, vals[i], k);
    }
  }
done:
  proj_free(&pj);
  free(shs);
  free(vals);
  free(updated);
}

/* Identity propagation between the value main returns and main's result sharding. */
static void func_results(prop *p) {
  const av_op *ret = p->main->body.nblocks == 1 ? p->main->body.blocks[0].last : NULL;
  if (!ret) return;
  for (uint32_t k = 0; k < ret->noperands && k < p->s->nres; k++) {
    const av_value *v = ret->operands[k];
    if (!is_tensor(v)) continue;
    av_sharding *fr = &p->s->res[k];
    const av_sharding *shs[2] = {get_sh(p, v), fr->mesh ? fr : NULL};
    bool m0 = shs[0] && shs[0]->mesh && shs[0]->mesh->ndevices > 1;
    bool m1 = shs[1] && shs[1]->mesh->ndevices > 1;
    const av_mesh *mesh = m0 ? shs[0]->mesh : m1 ? shs[1]->mesh : NULL;
    if (!mesh) continue;
    if (m0 && m1 && !same_mesh(shs[0]->mesh, shs[1]->mesh)) continue;
    av_factor_rule *r = av_factor_rule_identity(v->type, 1, 1);
    proj pj = {0};
    if (!r || !proj_build(&pj, r, mesh, shs)) {
      av_factor_rule_free(r);
      proj_free(&pj);
      p->oom = true;
      return;
    }
    dir dirs[AV_RULE_MAX_FACTORS];
    for (int f = 0; f < r->nfactors; f++) dirs[f] = DIR_BOTH;
    bool updated[2] = {false, false};
    aggressive(&pj, dirs, false, updated);
    for (int i = 0; i < 2; i++) {
      if (!updated[i]) continue;
      av_sharding ns;
      tensor_sharding(&pj, (uint32_t)i, shs[i], &ns);
      if ((!shs[i] && sharding_empty(&ns)) || (shs[i] && sharding_same(&ns, shs[i]))) continue;
      if (i == 0) set_sh(p, v, &ns);
      else *fr = ns;
    }
    proj_free(&pj);
    av_factor_rule_free(r);
  }
}

/* ---------------------------------------------------------- initial state */

av_sharding *av_spmd_parse_sharding(av_spmd_shardings *s, const char *text, int rank, av_diag *d) {
  av_sharding *sh = av_arena_calloc(&s->arena, 1, sizeof *sh);
  if (!sh) {
    av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
    return NULL;
  }
  if (av_sharding_parse(text, rank, &s->meshes, sh, d) != AV_OK) return NULL;
  /* axes of size 1 shard nothing (Shardy's import removes them) */
  for (int k = 0; sh->mesh && k < rank; k++) {
    int n = 0;
    for (int i = 0; i < sh->naxes[k]; i++)
      if (sh->axes[k][i].size > 1) sh->axes[k][n++] = sh->axes[k][i];
    sh->naxes[k] = (uint8_t)n;
  }
  for (int a = 0; sh->mesh && a < sh->mesh->naxes; a++)
    if (sh->mesh->sizes[a] == 1) {
      sh->replicated &= ~(1u << a);
      sh->unreduced &= ~(1u << a);
    }
  return sh;
}

static bool fully_closed(const av_sharding *s) {
  for (int k = 0; k < s->rank; k++)
    if (s->open[k]) return false;
  return true;
}

/* Shardy's ApplyShardingConstraints: a constraint's (closed) sharding goes to its input when
 * the input has none and no other constraint asks for something else. */
static void apply_constraints(prop *p, const av_region *r) {
  for (uint32_t b = 0; b < r->nblocks; b++)
    for (const av_op *op = r->blocks[b].first; op; op = op->next) {
      if (op->code == AV_OP_WHILE || op->code == AV_OP_CASE || op->code == AV_OP_IF)
        for (uint32_t q = 0; q < op->nregions; q++) apply_constraints(p, &op->regions[q]);
      if (op->code != AV_OP_SDY_SHARDING_CONSTRAINT || op->noperands != 1) continue;
      const av_sharding *sh = get_sh(p, &op->results[0]);
      const av_value *in = op->operands[0];
      if (!sh || !is_tensor(in) || get_sh(p, in) || !fully_closed(sh)) continue;
      /* inputs that are data-flow targets (block arguments, while/case results) keep theirs */
      bool flow_target = in->def ? (in->def->code == AV_OP_WHILE || in->def->code == AV_OP_CASE ||
                                    in->def->code == AV_OP_IF ||
                                    in->def->code == AV_OP_OPTIMIZATION_BARRIER)
                                 : in->owner != &p->main->body.blocks[0];
      if (flow_target) continue;
      bool other = false;
      for (uint32_t i = 0; i < p->nusers[in->id] && !other; i++) {
        const item *u = &p->items[p->nusers[in->id] ? p->users[in->id][i] : 0];
        if (u->kind == ITEM_OP && u->op != op && u->op->code == AV_OP_SDY_SHARDING_CONSTRAINT) {
          const av_sharding *o = get_sh(p, &u->op->results[0]);
          other = !o || !sharding_same(o, sh);
        }
        if (u->kind == ITEM_MANUAL_IN && u->owner_sh) other = !sharding_same(u->owner_sh, sh);
      }
      if (!other) set_sh(p, in, sh);
    }
}

static av_code init_values(prop *p, const av_region *r) {
  for (uint32_t b = 0; b < r->nblocks; b++)
    for (const av_op *op = r->blocks[b].first; op; op = op->next) {
      if (op->code == AV_OP_SDY_SHARDING_CONSTRAINT || op->code == AV_OP_SDY_RESHARD) {
        const char *t = attr_text(av_op_attr(op, "sharding"));
        if (t && op->nresults == 1 && is_tensor(&op->results[0])) {
          av_sharding *sh = av_spmd_parse_sharding(p->s, t, op->results[0].type->rank, p->d);
          if (!sh) return av_diag_set(p->d, p->d->code ? p->d->code : AV_INVALID_ARGUMENT, "  in %s at %s", op->name, op->loc);
          p->s->of[op->results[0].id] = sh;
        }
      }
      if (op->code == AV_OP_SDY_MANUAL_COMPUTATION) {
        const char *t = attr_text(av_op_attr(op, "out_shardings"));
        int *ranks = calloc(op->nresults + 1, sizeof *ranks);
        av_sharding *sh = av_arena_calloc(&p->s->arena, op->nresults + 1, sizeof *sh);
        if (!ranks || !sh) {
          free(ranks);
          return av_diag_set(p->d, AV_RESOURCE_EXHAUSTED, "out of memory");
        }
        for (uint32_t i = 0; i < op->nresults; i++) ranks[i] = is_tensor(&op->results[i]) ? op->results[i].type->rank : 0;
        av_diag ignored;
        av_diag_init(&ignored);
        if (t && av_sharding_per_value_parse(t, (int)op->nresults, ranks, &p->s->meshes, sh, &ignored) == AV_OK)
          for (uint32_t i = 0; i < op->nresults; i++)
            if (sh[i].mesh && is_tensor(&op->results[i])) p->s->of[op->results[i].id] = &sh[i];
        free(ranks);
      }
      for (uint32_t q = 0; q < op->nregions; q++) {
        av_code c = init_values(p, &op->regions[q]);
        if (c != AV_OK) return c;
      }
    }
  return AV_OK;
}

/* Shardy's UpdateNonDivisibleInputOutputShardings, RemoveSubAxesInInputOutputShardings and
 * CloseShardings for one of main's arguments/results. */
static void finish_io(av_sharding *s, const av_type *t) {
  if (!s->mesh || !t || t->kind != AV_TYPE_TENSOR) return;
  for (int k = 0; k < s->rank && k < t->rank; k++) {
    int64_t dim = t->dims[k], sharded = 1;
    for (int i = 0; i < s->naxes[k]; i++) sharded *= s->axes[k][i].size;
    if (dim >= 0 && sharded > 0 && dim % sharded != 0) {
      int64_t remaining = dim;
      int n = 0;
      for (int i = 0; i < s->naxes[k]; i++) {
        av_axis_ref r = s->axes[k][i];
        int64_t g = gcd64(r.size, remaining);
        if (g == 1) break;
        if (g == r.size) {
          s->axes[k][n++] = r;
          remaining /= g;
        } else {
          r.size = (int32_t)g;
          s->axes[k][n++] = r;
          break;
        }
      }
      s->naxes[k] = (uint8_t)n;
    }
    if (s->open[k]) {
      int n = 0;
      for (int i = 0; i < s->naxes[k]; i++) {
        const av_axis_ref *r = &s->axes[k][i];
        if (!(r->pre == 1 && r->size == s->mesh->sizes[r->axis])) break;
        n++;
      }
      s->naxes[k] = (uint8_t)n;
    }
    s->open[k] = false;
  }
}

void av_spmd_shardings_free(av_spmd_shardings *s) {
  if (!s) return;
  av_mesh_table_free(&s->meshes);
  av_arena_free(&s->arena);
  free(s->of);
  memset(s, 0, sizeof *s);
}

static void prop_free(prop *p) {
  for (uint32_t i = 0; i < p->nitems; i++) {
    av_factor_rule_free(p->items[i].rule);
    free(p->items[i].src);
    free(p->items[i].seen);
  }
  free(p->items);
  for (uint32_t i = 0; p->users && i < p->s->nvalues; i++) free(p->users[i]);
  free(p->users);
  free(p->nusers);
  free(p->capusers);
  free(p->uses);
  free(p->definer);
  free(p->stack);
  free(p->queued);
}

av_code av_spmd_propagate(av_module *m, bool infer_custom, av_spmd_shardings *out, av_diag *d) {
  memset(out, 0, sizeof *out);
  av_arena_init(&out->arena);
  av_mesh_table_init(&out->meshes);
  av_code c = av_spmd_prepare(m, d);
  if (c != AV_OK) return c;
  const av_func *ef = av_module_entry(m);
  if (!ef || ef->body.nblocks != 1) return AV_OK;
  c = av_mesh_table_load(&out->meshes, m, d);
  if (c != AV_OK) return c;
  uint32_t nv = m->next_value_id;
  out->nvalues = nv;
  out->of = calloc((size_t)nv + 1, sizeof *out->of);
  const av_block *body = &ef->body.blocks[0];
  out->nargs = body->nargs;
  out->nres = body->last ? body->last->noperands : 0;
  out->args = av_arena_calloc(&out->arena, out->nargs + 1, sizeof *out->args);
  out->res = av_arena_calloc(&out->arena, out->nres + 1, sizeof *out->res);
  prop p = {0};
  p.m = m;
  p.s = out;
  p.main = ef;
  p.d = d;
  p.infer_custom = infer_custom;
  p.uses = calloc((size_t)nv + 1, sizeof *p.uses);
  p.users = calloc((size_t)nv + 1, sizeof *p.users);
  p.nusers = calloc((size_t)nv + 1, sizeof *p.nusers);
  p.capusers = calloc((size_t)nv + 1, sizeof *p.capusers);
  p.definer = calloc((size_t)nv + 1, sizeof *p.definer);
  if (!out->of || !out->args || !out->res || !p.uses || !p.users || !p.nusers || !p.capusers || !p.definer) {
    prop_free(&p);
    return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  }
  /* main's stated shardings */
  for (uint32_t i = 0; i < out->nargs + out->nres && c == AV_OK; i++) {
    bool is_arg = i < out->nargs;
    uint32_t k = is_arg ? i : i - out->nargs;
    const av_value *v = is_arg ? &body->args[k] : body->last->operands[k];
    int rank = is_tensor(v) ? v->type->rank : 0;
    av_sharding *dst = is_arg ? &out->args[k] : &out->res[k];
    av_sharding_replicated(dst, rank);
    const av_attr *dict = is_arg ? (ef->arg_attrs ? ef->arg_attrs[k] : NULL) : (ef->res_attrs ? ef->res_attrs[k] : NULL);
    const char *t = attr_text(av_dict_get(dict, "sdy.sharding"));
    if (!t || !is_tensor(v)) continue;
    av_sharding *sh = av_spmd_parse_sharding(out, t, rank, d);
    if (!sh) {
      c = av_diag_set(d, d->code ? d->code : AV_INVALID_ARGUMENT, "  in the sharding of %s %u of @%s",
                      is_arg ? "argument" : "result", k, ef->name);
      break;
    }
    if (is_arg) out->of[v->id] = sh;
    else *dst = *sh;
  }
  if (c == AV_OK) c = init_values(&p, &ef->body);
  if (c == AV_OK) {
    for (int i = 0; i < out->meshes.n && !out->mesh; i++)
      if (out->meshes.meshes[i]->ndevices > 1) out->mesh = out->meshes.meshes[i];
    count_uses(&p, &ef->body);
    c = collect_groups(&p);
    collect_region(&p, &ef->body);
    p.stack = calloc((size_t)p.nitems + 1, sizeof *p.stack);
    p.queued = calloc((size_t)p.nitems + 1, sizeof *p.queued);
    if (c == AV_OK && p.failed) c = d->code ? d->code : AV_INTERNAL;
    else if (c == AV_OK && (p.oom || !p.stack || !p.queued)) c = av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  }
  if (c == AV_OK && out->mesh) {
    apply_constraints(&p, &ef->body);
    for (p.stage = 0; p.stage < 5 && !p.oom && !p.failed; p.stage++) {
      func_results(&p);
      p.nstack = 0;
      for (uint32_t i = p.nitems; i-- > 0;) { /* the first item on top */
        p.queued[i] = true;
        p.stack[p.nstack++] = i;
      }
      uint64_t guard = 0;
      while (p.nstack && !p.oom && !p.failed && guard++ < 64ull * (p.nitems + 16)) {
        uint32_t k = p.stack[--p.nstack];
        p.queued[k] = false;
        run_item(&p, k);
      }
      func_results(&p);
    }
    if (p.failed) c = d->code ? d->code : AV_INTERNAL;
    else if (p.oom) c = av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory (sharding propagation)");
  }
  if (c == AV_OK) {
    for (uint32_t k = 0; k < out->nargs; k++) {
      const av_sharding *sh = out->of[body->args[k].id];
      if (sh) out->args[k] = *sh;
      finish_io(&out->args[k], body->args[k].type);
    }
    for (uint32_t k = 0; k < out->nres; k++) finish_io(&out->res[k], body->last->operands[k]->type);
  }
  prop_free(&p);
  return c;
}

static void print_region(FILE *f, const av_spmd_shardings *s, const av_region *r, int depth) {
  char buf[512];
  for (uint32_t b = 0; b < r->nblocks; b++) {
    for (uint32_t i = 0; i < r->blocks[b].nargs; i++) {
      const av_value *v = &r->blocks[b].args[i];
      const av_sharding *sh = v->id < s->nvalues ? s->of[v->id] : NULL;
      if (!sh) continue;
      av_sharding_format(sh, buf, sizeof buf);
      fprintf(f, "%*sarg %u: %s\n", 2 * depth, "", i, buf);
    }
    for (const av_op *op = r->blocks[b].first; op; op = op->next) {
      for (uint32_t i = 0; i < op->nresults; i++) {
        const av_value *v = &op->results[i];
        const av_sharding *sh = v->id < s->nvalues ? s->of[v->id] : NULL;
        if (!sh) continue;
        av_sharding_format(sh, buf, sizeof buf);
        fprintf(f, "%*s%s#%u (%s): %s\n", 2 * depth, "", op->name, i, op->loc, buf);
      }
      for (uint32_t q = 0; q < op->nregions; q++) print_region(f, s, &op->regions[q], depth + 1);
    }
  }
}

void av_spmd_shardings_print(FILE *f, const av_module *m, const av_spmd_shardings *s) {
  const av_func *ef = av_module_entry(m);
  char buf[512];
  if (!ef || !s->of) {
    fprintf(f, "no shardings\n");
    return;
  }
  for (uint32_t k = 0; k < s->nargs; k++) {
    av_sharding_format(&s->args[k], buf, sizeof buf);
    fprintf(f, "argument %u: %s\n", k, buf);
  }
  print_region(f, s, &ef->body, 1);
  for (uint32_t k = 0; k < s->nres; k++) {
    av_sharding_format(&s->res[k], buf, sizeof buf);
    fprintf(f, "result %u: %s\n", k, buf);
  }
}
