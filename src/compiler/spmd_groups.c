/* Collecting and merging sdy.sharding_group ops: see spmd_groups.h. */
#include "compiler/spmd_groups.h"

#include <stdlib.h>
#include <string.h>

#include "compiler/attrs.h"

typedef struct entry {
  int64_t id;             /* the op's group_id */
  uint32_t set;           /* index of the group id among the distinct ones */
  const av_value *v;
  const av_op *op, *scope; /* scope: the enclosing sdy.manual_computation, or NULL */
} entry;

typedef struct collector {
  entry *e;
  uint32_t n, cap;
  uint32_t nvalues;
  av_diag *d;
} collector;

static av_code walk(collector *c, const av_region *r, const av_op *scope, int depth) {
  if (depth > 256) return av_diag_set(c->d, AV_INVALID_ARGUMENT, "regions nested too deeply");
  for (uint32_t b = 0; b < r->nblocks; b++)
    for (const av_op *op = r->blocks[b].first; op; op = op->next) {
      if (op->code == AV_OP_SDY_SHARDING_GROUP) {
        int64_t id;
        if (op->noperands != 1 || !av_attr_get_int(op, "group_id", &id) || op->operands[0]->id >= c->nvalues)
          return av_diag_set(c->d, AV_INVALID_ARGUMENT, "malformed sdy.sharding_group at %s", op->loc);
        if (c->n == c->cap) {
          uint32_t cap = c->cap ? 2 * c->cap : 16;
          entry *e = realloc(c->e, (size_t)cap * sizeof *e);
          if (!e) return av_diag_set(c->d, AV_RESOURCE_EXHAUSTED, "out of memory");
          c->e = e;
          c->cap = cap;
        }
        c->e[c->n++] = (entry){id, 0, op->operands[0], op, scope};
      }
      const av_op *inner = op->code == AV_OP_SDY_MANUAL_COMPUTATION ? op : scope;
      for (uint32_t q = 0; q < op->nregions; q++) {
        av_code k = walk(c, &op->regions[q], inner, depth + 1);
        if (k != AV_OK) return k;
      }
    }
  return AV_OK;
}

static bool same_shape(const av_type *a, const av_type *b) {
  if (!a || !b || a->kind != AV_TYPE_TENSOR || b->kind != AV_TYPE_TENSOR || a->rank != b->rank) return false;
  for (int k = 0; k < a->rank; k++)
    if (a->dims[k] != b->dims[k]) return false;
  return true;
}

static int by_id(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return (a > b) - (a < b);
}

static uint32_t find(uint32_t *parent, uint32_t i) {
  while (parent[i] != i) i = parent[i] = parent[parent[i]];
  return i;
}

av_code av_sharding_groups_collect(const av_func *f, uint32_t nvalues, av_sharding_group **out,
                                   uint32_t *nout, av_diag *d) {
  *out = NULL;
  *nout = 0;
  collector c = {NULL, 0, 0, nvalues, d};
  av_code code = walk(&c, &f->body, NULL, 0);
  if (code != AV_OK || c.n == 0) {
    free(c.e);
    return code;
  }
  int64_t *ids = malloc((size_t)c.n * sizeof *ids);
  uint32_t *parent = malloc((size_t)c.n * sizeof *parent);
  uint32_t *first_of_value = calloc((size_t)nvalues + 1, sizeof *first_of_value); /* set + 1 */
  uint32_t *seen = calloc((size_t)nvalues + 1, sizeof *seen);                     /* root + 1 */
  uint32_t *group_of = calloc((size_t)c.n, sizeof *group_of); /* by root: index into g + 1 */
  av_sharding_group *g = calloc((size_t)c.n, sizeof *g);
  uint32_t nids = 0, ng = 0;
  if (!ids || !parent || !first_of_value || !seen || !group_of || !g) {
    code = av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
    goto done;
  }
  for (uint32_t i = 0; i < c.n; i++) ids[i] = c.e[i].id;
  qsort(ids, c.n, sizeof *ids, by_id);
  for (uint32_t i = 0; i < c.n; i++)
    if (i == 0 || ids[i] != ids[nids - 1]) ids[nids++] = ids[i];
  for (uint32_t i = 0; i < nids; i++) parent[i] = i;
  for (uint32_t i = 0; i < c.n; i++) {
    entry *e = &c.e[i];
    const int64_t *at = bsearch(&e->id, ids, nids, sizeof *ids, by_id);
    e->set = (uint32_t)(at - ids);
    /* one shape and one manual computation per group id, as Shardy's import checks */
    for (uint32_t j = 0; j < i; j++) {
      if (c.e[j].set != e->set) continue;
      if (c.e[j].scope != e->scope) {
        code = av_diag_set(d, AV_INVALID_ARGUMENT,
                           "sdy.sharding_group %lld: its values cross an sdy.manual_computation's boundary (at %s)",
                           (long long)e->id, e->op->loc);
        goto done;
      }
      if (!same_shape(c.e[j].v->type, e->v->type)) {
        code = av_diag_set(d, AV_INVALID_ARGUMENT, "sdy.sharding_group %lld: its values differ in shape (at %s)",
                           (long long)e->id, e->op->loc);
        goto done;
      }
      break;
    }
    /* a value in two groups makes them one */
    uint32_t *f0 = &first_of_value[e->v->id];
    if (!*f0) *f0 = e->set + 1;
    else parent[find(parent, e->set)] = find(parent, *f0 - 1);
  }
  for (uint32_t i = 0; i < c.n; i++) {
    uint32_t root = find(parent, c.e[i].set);
    if (seen[c.e[i].v->id] == root + 1) continue; /* the same value twice */
    seen[c.e[i].v->id] = root + 1;
    if (!group_of[root]) {
      g[ng].members = calloc((size_t)c.n + 1, sizeof *g[ng].members);
      if (!g[ng].members) {
        code = av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
        goto done;
      }
      g[ng].op = c.e[i].op;
      group_of[root] = ++ng;
    }
    av_sharding_group *to = &g[group_of[root] - 1];
    to->members[to->n++] = c.e[i].v;
  }
  /* a group of one value asks nothing */
  uint32_t kept = 0;
  for (uint32_t k = 0; k < ng; k++) {
    if (g[k].n >= 2) g[kept++] = g[k];
    else free(g[k].members);
  }
  ng = kept;
done:
  if (code != AV_OK) {
    av_sharding_groups_free(g, ng);
    g = NULL;
    ng = 0;
  }
  free(c.e);
  free(ids);
  free(parent);
  free(first_of_value);
  free(seen);
  free(group_of);
  *out = g;
  *nout = ng;
  return code;
}

void av_sharding_groups_free(av_sharding_group *g, uint32_t n) {
  for (uint32_t k = 0; g && k < n; k++) free(g[k].members);
  free(g);
}
