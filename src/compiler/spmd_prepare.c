/* Preparing a multi-device module for propagation, as Shardy's import does: every func.call
 * reachable from main is inlined (each call site may shard its copy differently) and every
 * constant expression (constants, iota, and broadcasts, reshapes, slices and elementwise ops
 * of them) and every broadcast of a scalar gets one copy per user. sdy.sharding_group ops are
 * not users there: each copy joins the groups its original was in. */
#include <stdlib.h>
#include <string.h>

#include "compiler/spmd_propagate.h"
#include "compiler/attrs.h"
#include "compiler/spmd_rules.h"

enum { MAX_INLINE_DEPTH = 32, MAX_INLINED_OPS = 1 << 20 };

typedef struct vmap {
  av_value **to; /* by value id */
  uint32_t n;
} vmap;

static bool vmap_grow(vmap *v, uint32_t n) {
  if (n <= v->n) return true;
  uint32_t cap = v->n ? v->n : 1024;
  while (cap < n) cap *= 2;
  av_value **to = realloc(v->to, (size_t)cap * sizeof *to);
  if (!to) return false;
  memset(to + v->n, 0, (size_t)(cap - v->n) * sizeof *to);
  v->to = to;
  v->n = cap;
  return true;
}

static av_value *vmap_get(const vmap *v, av_value *x) {
  for (int guard = 0; x && x->id < v->n && v->to[x->id] && guard < 1 << 20; guard++) x = v->to[x->id];
  return x;
}

static bool vmap_set(vmap *v, const av_value *from, av_value *to) {
  if (!vmap_grow(v, from->id + 1)) return false;
  v->to[from->id] = to;
  return true;
}

/* A deep copy of `op` (regions included) whose operands go through `map`; values the copy
 * defines are added to `map`. Inserted before `before` in `b`. */
static av_op *clone_op(av_module *m, const av_op *op, vmap *map, av_block *b, av_op *before);

static bool clone_region(av_module *m, const av_region *from, av_region *to, vmap *map) {
  for (uint32_t k = 0; k < from->nblocks; k++) {
    const av_block *fb = &from->blocks[k];
    const av_type **types = calloc((size_t)fb->nargs + 1, sizeof *types);
    if (!types) return false;
    for (uint32_t i = 0; i < fb->nargs; i++) types[i] = fb->args[i].type;
    av_block *nb = av_region_add_block(m, to, fb->nargs, types);
    free(types);
    if (!nb) return false;
    for (uint32_t i = 0; i < fb->nargs; i++)
      if (!vmap_set(map, &fb->args[i], &nb->args[i])) return false;
    for (const av_op *o = fb->first; o; o = o->next)
      if (!clone_op(m, o, map, nb, NULL)) return false;
  }
  return true;
}

static av_op *clone_op(av_module *m, const av_op *op, vmap *map, av_block *b, av_op *before) {
  const av_type **rt = calloc((size_t)op->nresults + 1, sizeof *rt);
  if (!rt) return NULL;
  for (uint32_t i = 0; i < op->nresults; i++) rt[i] = op->results[i].type;
  av_op *n = av_op_new(m, op->name, op->noperands, op->nresults, rt, op->nattrs, op->nregions);
  free(rt);
  if (!n) return NULL;
  n->code = op->code;
  n->loc = op->loc;
  for (uint32_t i = 0; i < op->noperands; i++) n->operands[i] = vmap_get(map, op->operands[i]);
  for (uint32_t i = 0; i < op->nattrs; i++) n->attrs[i] = op->attrs[i];
  for (uint32_t i = 0; i < op->nresults; i++)
    if (!vmap_set(map, &op->results[i], &n->results[i])) return NULL;
  for (uint32_t r = 0; r < op->nregions; r++)
    if (!clone_region(m, &op->regions[r], &n->regions[r], map)) return NULL;
  av_block_insert_before(b, before, n);
  return n;
}

/* Rewrites every operand in `r` (and nested regions) through `map`. */
static void remap_region(av_region *r, const vmap *map) {
  for (uint32_t k = 0; k < r->nblocks; k++)
    for (av_op *op = r->blocks[k].first; op; op = op->next) {
      for (uint32_t i = 0; i < op->noperands; i++) op->operands[i] = vmap_get(map, op->operands[i]);
      for (uint32_t q = 0; q < op->nregions; q++) remap_region(&op->regions[q], map);
    }
}

/* ------------------------------------------------------------------ inlining */

typedef struct inliner {
  av_module *m;
  vmap map;
  uint64_t ops;
  av_diag *d;
} inliner;

static av_code inline_call(inliner *in, av_block *b, av_op *call) {
  const char *callee = av_attr_get_str(call, "callee");
  av_func *fn = callee ? av_module_find_func(in->m, callee) : NULL;
  if (!fn || fn->body.nblocks != 1)
    return av_diag_set(in->d, AV_INVALID_ARGUMENT, "call of an unknown function @%s", callee ? callee : "?");
  const av_block *body = &fn->body.blocks[0];
  if (body->nargs != call->noperands || !body->last || body->last->noperands != call->nresults)
    return av_diag_set(in->d, AV_INVALID_ARGUMENT, "call of @%s: argument or result counts differ", callee);
  for (uint32_t i = 0; i < body->nargs; i++)
    if (!vmap_set(&in->map, &body->args[i], vmap_get(&in->map, call->operands[i])))
      return av_diag_set(in->d, AV_RESOURCE_EXHAUSTED, "out of memory");
  for (const av_op *o = body->first; o && o != body->last; o = o->next) {
    if (++in->ops > MAX_INLINED_OPS)
      return av_diag_set(in->d, AV_UNIMPLEMENTED, "program too large once calls are inlined");
    if (!clone_op(in->m, o, &in->map, b, call)) return av_diag_set(in->d, AV_RESOURCE_EXHAUSTED, "out of memory");
  }
  for (uint32_t i = 0; i < call->nresults; i++)
    if (!vmap_set(&in->map, &call->results[i], vmap_get(&in->map, body->last->operands[i])))
      return av_diag_set(in->d, AV_RESOURCE_EXHAUSTED, "out of memory");
  /* the callee's own values must not stay mapped: a second call maps them afresh */
  av_block_remove(b, call);
  return AV_OK;
}

/* One level of calls: every call in `r` (and nested regions) replaced by its callee's ops. */
static av_code inline_pass(inliner *in, av_region *r, bool *changed) {
  for (uint32_t k = 0; k < r->nblocks; k++) {
    av_block *b = &r->blocks[k];
    for (av_op *op = b->first; op;) {
      av_op *next = op->next;
      if (op->code == AV_OP_FUNC_CALL || op->code == AV_OP_CALL) {
        av_code c = inline_call(in, b, op);
        if (c != AV_OK) return c;
        *changed = true;
      } else {
        for (uint32_t q = 0; q < op->nregions; q++) {
          av_code c = inline_pass(in, &op->regions[q], changed);
          if (c != AV_OK) return c;
        }
      }
      op = next;
    }
  }
  return AV_OK;
}

static av_code inline_all(inliner *in, av_region *r) {
  for (int depth = 0;; depth++) {
    bool changed = false;
    av_code c = inline_pass(in, r, &changed);
    if (c != AV_OK) return c;
    remap_region(r, &in->map);
    if (!changed) return AV_OK;
    if (depth >= MAX_INLINE_DEPTH)
      return av_diag_set(in->d, AV_UNIMPLEMENTED, "calls nested deeper than %d", MAX_INLINE_DEPTH);
  }
}

/* --------------------------------------------------------- constant splitting */

static bool is_scalar(const av_value *v) {
  return !v->type || v->type->kind != AV_TYPE_TENSOR || v->type->rank == 0;
}

static bool constant_preserving(const av_op *op) {
  switch (op->code) {
    case AV_OP_BROADCAST_IN_DIM: case AV_OP_RESHAPE: case AV_OP_SLICE:
      return true;
    default:
      return av_spmd_is_elementwise(op) && op->code != AV_OP_SDY_SHARDING_CONSTRAINT &&
             op->code != AV_OP_SDY_RESHARD;
  }
}

typedef struct splitter {
  av_module *m;
  uint8_t *kind; /* by op result id of the op's first result: 1 constant expr, 2 scalar expansion */
  uint32_t nkind;
  av_op **order; /* constant / scalar-expansion ops in the order found */
  uint32_t norder, cap;
  av_op **groups; /* main's sdy.sharding_group ops */
  uint32_t ngroups, capgroups;
  av_diag *d;
} splitter;

static bool is_group(const av_op *op) {
  return op->code == AV_OP_SDY_SHARDING_GROUP && op->noperands == 1;
}

static bool list_groups(splitter *s, const av_region *r) {
  for (uint32_t k = 0; k < r->nblocks; k++)
    for (av_op *op = r->blocks[k].first; op; op = op->next) {
      if (is_group(op)) {
        if (s->ngroups == s->capgroups) {
          uint32_t cap = s->capgroups ? 2 * s->capgroups : 16;
          av_op **g = realloc(s->groups, (size_t)cap * sizeof *g);
          if (!g) return false;
          s->groups = g;
          s->capgroups = cap;
        }
        s->groups[s->ngroups++] = op;
      }
      for (uint32_t q = 0; q < op->nregions; q++)
        if (!list_groups(s, &op->regions[q])) return false;
    }
  return true;
}

static uint8_t kind_of(const splitter *s, const av_op *op) {
  if (!op || !op->nresults) return 0;
  uint32_t id = op->results[0].id;
  return id < s->nkind ? s->kind[id] : 0;
}

static bool mark(splitter *s, av_op *op, uint8_t k) {
  uint32_t id = op->results[0].id;
  if (id >= s->nkind) {
    uint32_t cap = s->nkind ? s->nkind : 1024;
    while (cap <= id) cap *= 2;
    uint8_t *n = realloc(s->kind, cap);
    if (!n) return false;
    memset(n + s->nkind, 0, cap - s->nkind);
    s->kind = n;
    s->nkind = cap;
  }
  s->kind[id] = k;
  if (s->norder == s->cap) {
    uint32_t cap = s->cap ? 2 * s->cap : 64;
    av_op **o = realloc(s->order, (size_t)cap * sizeof *o);
    if (!o) return false;
    s->order = o;
    s->cap = cap;
  }
  s->order[s->norder++] = op;
  return true;
}

/* A fresh copy of the constant sub-computation defining `v` (scalars are shared). */
static av_value *clone_sub(splitter *s, av_value *v, vmap *map) {
  if (is_scalar(v) || !v->def) return v;
  av_value *done = vmap_get(map, v);
  if (done != v) return done;
  av_op *op = v->def;
  for (uint32_t i = 0; i < op->noperands; i++) {
    av_value *o = op->operands[i];
    if (o->def && kind_of(s, o->def)) clone_sub(s, o, map);
  }
  av_op *n = clone_op(s->m, op, map, op->parent, op);
  if (!n) return NULL;
  /* the copy joins its original's sharding groups (the group ops go right after it) */
  for (uint32_t g = 0; g < s->ngroups; g++)
    if (s->groups[g]->operands[0]->def == op && !clone_op(s->m, s->groups[g], map, op->parent, op))
      return NULL;
  return &n->results[v->index];
}

static av_code split_block(splitter *s, av_block *b);

static av_code split_op(splitter *s, av_op *op) {
  if (is_group(op)) return AV_OK; /* not a user: see clone_sub */
  bool all_const = op->noperands > 0 || op->code == AV_OP_CONSTANT || op->code == AV_OP_IOTA;
  if (op->nresults == 1 && (op->code == AV_OP_CONSTANT || op->code == AV_OP_IOTA)) {
    return mark(s, op, 1) ? AV_OK : av_diag_set(s->d, AV_RESOURCE_EXHAUSTED, "out of memory");
  }
  if (op->nresults == 1 && op->nregions == 0 && constant_preserving(op)) {
    for (uint32_t i = 0; i < op->noperands && all_const; i++)
      all_const = op->operands[i]->def && kind_of(s, op->operands[i]->def) == 1;
    if (all_const) return mark(s, op, 1) ? AV_OK : av_diag_set(s->d, AV_RESOURCE_EXHAUSTED, "out of memory");
  }
  if (op->code == AV_OP_BROADCAST_IN_DIM && op->noperands == 1 && is_scalar(op->operands[0]) &&
      op->nresults == 1)
    return mark(s, op, 2) ? AV_OK : av_diag_set(s->d, AV_RESOURCE_EXHAUSTED, "out of memory");
  for (uint32_t i = 0; i < op->noperands; i++) {
    av_value *v = op->operands[i];
    if (is_scalar(v) || !v->def || !kind_of(s, v->def)) continue;
    vmap map = {0};
    av_value *c = clone_sub(s, v, &map);
    free(map.to);
    if (!c) return av_diag_set(s->d, AV_RESOURCE_EXHAUSTED, "out of memory");
    op->operands[i] = c;
  }
  /* regions of control flow hold ops of their own; reduce/sort bodies only scalars */
  for (uint32_t q = 0; q < op->nregions; q++)
    for (uint32_t k = 0; k < op->regions[q].nblocks; k++) {
      av_code c = split_block(s, &op->regions[q].blocks[k]);
      if (c != AV_OK) return c;
    }
  return AV_OK;
}

static av_code split_block(splitter *s, av_block *b) {
  for (av_op *op = b->first; op; op = op->next) {
    av_code c = split_op(s, op);
    if (c != AV_OK) return c;
  }
  return AV_OK;
}

static void count_uses(const av_region *r, uint32_t *uses, uint32_t n) {
  for (uint32_t k = 0; k < r->nblocks; k++)
    for (const av_op *op = r->blocks[k].first; op; op = op->next) {
      for (uint32_t i = 0; i < op->noperands && !is_group(op); i++)
        if (op->operands[i]->id < n) uses[op->operands[i]->id]++;
      for (uint32_t q = 0; q < op->nregions; q++) count_uses(&op->regions[q], uses, n);
    }
}

av_code av_spmd_prepare(av_module *m, av_diag *d) {
  av_func *ef = av_module_entry(m);
  if (!ef) return AV_OK;
  inliner in = {m, {0}, 0, d};
  av_code c = inline_all(&in, &ef->body);
  free(in.map.to);
  if (c != AV_OK) return c;
  splitter s = {m, NULL, 0, NULL, 0, 0, NULL, 0, 0, d};
  if (!list_groups(&s, &ef->body)) c = av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  if (c == AV_OK && ef->body.nblocks == 1) c = split_block(&s, &ef->body.blocks[0]);
  if (c == AV_OK && s.norder) { /* drop the originals nobody uses any more */
    uint32_t n = m->next_value_id;
    uint32_t *uses = calloc((size_t)n + 1, sizeof *uses);
    if (!uses) c = av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
    else {
      count_uses(&ef->body, uses, n);
      for (uint32_t k = s.norder; k-- > 0;) {
        av_op *op = s.order[k];
        if (!op->parent || uses[op->results[0].id]) continue;
        for (uint32_t i = 0; i < op->noperands; i++)
          if (op->operands[i]->id < n && uses[op->operands[i]->id]) uses[op->operands[i]->id]--;
        for (uint32_t g = 0; g < s.ngroups; g++) /* its groups go with it */
          if (s.groups[g]->parent && s.groups[g]->operands[0]->def == op) av_block_remove(s.groups[g]->parent, s.groups[g]);
        av_block_remove(op->parent, op);
      }
      free(uses);
    }
  }
  free(s.kind);
  free(s.order);
  free(s.groups);
  return c;
}
