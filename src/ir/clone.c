/* Copying ops between modules (see clone.h). */
#include "ir/clone.h"

#include <stdlib.h>
#include <string.h>

/* Attributes and types nest; a source that nests deeper than any real program is refused. */
enum { CLONE_MAX_DEPTH = 64 };

void av_clone_init(av_clone *c, av_module *dst, av_diag *d) {
  memset(c, 0, sizeof *c);
  c->dst = dst;
  c->d = d;
}

void av_clone_free(av_clone *c) {
  free(c->map);
  c->map = NULL;
  c->nmap = 0;
}

static void *fail_oom(av_clone *c) {
  if (!c->failed) av_diag_set(c->d, AV_RESOURCE_EXHAUSTED, "out of memory copying IR");
  c->failed = true;
  return NULL;
}

bool av_clone_map(av_clone *c, const av_value *from, av_value *to) {
  if (from->id >= c->nmap) {
    uint32_t cap = c->nmap ? c->nmap : 256;
    while (cap <= from->id) {
      if (cap > UINT32_MAX / 2) return fail_oom(c), false;
      cap *= 2;
    }
    av_value **m = realloc(c->map, (size_t)cap * sizeof *m);
    if (!m) return fail_oom(c), false;
    memset(m + c->nmap, 0, (size_t)(cap - c->nmap) * sizeof *m);
    c->map = m;
    c->nmap = cap;
  }
  c->map[from->id] = to;
  return true;
}

av_value *av_clone_lookup(const av_clone *c, const av_value *v) {
  return v && v->id < c->nmap ? c->map[v->id] : NULL;
}

static const av_attr *clone_attr(av_clone *c, const av_attr *a, int depth);

static const av_type *clone_type(av_clone *c, const av_type *t, int depth) {
  if (!t) return NULL;
  if (depth > CLONE_MAX_DEPTH) {
    if (!c->failed) av_diag_set(c->d, AV_INVALID_ARGUMENT, "a type nested too deeply to copy");
    c->failed = true;
    return NULL;
  }
  av_module *m = c->dst;
  av_type *n = av_arena_memdup(&m->arena, t, sizeof *t);
  if (!n) return fail_oom(c);
  switch (t->kind) {
    case AV_TYPE_TENSOR:
      if (t->rank > 0 && !(n->dims = av_arena_memdup(&m->arena, t->dims, sizeof(int64_t) * (size_t)t->rank)))
        return fail_oom(c);
      if (t->encoding && !(n->encoding = clone_attr(c, t->encoding, depth + 1))) return NULL;
      if (t->quant) {
        av_quant *q = av_arena_memdup(&m->arena, t->quant, sizeof *t->quant);
        if (!q) return fail_oom(c);
        q->scales = av_arena_memdup(&m->arena, t->quant->scales, sizeof(double) * (t->quant->n ? t->quant->n : 1));
        q->zero_points = av_arena_memdup(&m->arena, t->quant->zero_points, sizeof(int64_t) * (t->quant->n ? t->quant->n : 1));
        if (!q->scales || !q->zero_points) return fail_oom(c);
        n->quant = q;
      }
      return n;
    case AV_TYPE_TUPLE:
    case AV_TYPE_FUNCTION: {
      const av_type **e = av_arena_calloc(&m->arena, (size_t)t->nelems + 1, sizeof *e);
      if (!e) return fail_oom(c);
      for (int i = 0; i < t->nelems; i++)
        if (!(e[i] = clone_type(c, t->elems[i], depth + 1))) return NULL;
      n->elems = e;
      return n;
    }
    case AV_TYPE_OTHER:
      if (t->text && !(n->text = av_arena_strdup(&m->arena, t->text))) return fail_oom(c);
      return n;
    case AV_TYPE_TOKEN:
      return n;
  }
  return n;
}

static const av_attr *clone_attr(av_clone *c, const av_attr *a, int depth) {
  if (!a) return NULL;
  if (depth > CLONE_MAX_DEPTH) {
    if (!c->failed) av_diag_set(c->d, AV_INVALID_ARGUMENT, "an attribute nested too deeply to copy");
    c->failed = true;
    return NULL;
  }
  av_module *m = c->dst;
  av_attr *n = av_arena_memdup(&m->arena, a, sizeof *a);
  if (!n) return fail_oom(c);
  if (a->type && !(n->type = clone_type(c, a->type, depth + 1))) return NULL;
  switch (a->kind) {
    case AV_ATTR_STRING: case AV_ATTR_SYMBOL: case AV_ATTR_ENUM: case AV_ATTR_OPAQUE:
      if (!(n->u.str.s = av_arena_strndup(&m->arena, a->u.str.s ? a->u.str.s : "", a->u.str.s ? a->u.str.len : 0)))
        return fail_oom(c);
      break;
    case AV_ATTR_ARRAY: {
      const av_attr **items = av_arena_calloc(&m->arena, a->u.array.n + 1, sizeof *items);
      if (!items) return fail_oom(c);
      for (size_t i = 0; i < a->u.array.n; i++)
        if (!(items[i] = clone_attr(c, a->u.array.items[i], depth + 1))) return NULL;
      n->u.array.items = items;
      break;
    }
    case AV_ATTR_DICT: {
      av_named_attr *items = av_arena_calloc(&m->arena, a->u.dict.n + 1, sizeof *items);
      if (!items) return fail_oom(c);
      for (size_t i = 0; i < a->u.dict.n; i++) {
        items[i].name = av_arena_strdup(&m->arena, a->u.dict.items[i].name ? a->u.dict.items[i].name : "");
        items[i].value = clone_attr(c, a->u.dict.items[i].value, depth + 1);
        if (!items[i].name) return fail_oom(c);
        if (c->failed) return NULL;
      }
      n->u.dict.items = items;
      break;
    }
    case AV_ATTR_DENSE: /* copied: the source's data may be borrowed from a buffer freed after */
      if (a->u.dense.size && !(n->u.dense.data = av_arena_memdup(&m->arena, a->u.dense.data, a->u.dense.size)))
        return fail_oom(c);
      break;
    case AV_ATTR_INTS:
      if (!(n->u.ints.v = av_arena_memdup(&m->arena, a->u.ints.v, sizeof(int64_t) * (a->u.ints.n ? a->u.ints.n : 1))))
        return fail_oom(c);
      break;
    case AV_ATTR_BOOLS:
      if (!(n->u.bools.v = av_arena_memdup(&m->arena, a->u.bools.v, sizeof(bool) * (a->u.bools.n ? a->u.bools.n : 1))))
        return fail_oom(c);
      break;
    default: break; /* UNIT, BOOL, INT, FLOAT, TYPE: the copy and its type are all */
  }
  return n;
}

const av_type *av_clone_type(av_clone *c, const av_type *t) { return clone_type(c, t, 0); }
const av_attr *av_clone_attr(av_clone *c, const av_attr *a) { return clone_attr(c, a, 0); }

static bool clone_region(av_clone *c, const av_region *from, av_region *to, int depth);

static av_op *clone_op(av_clone *c, const av_op *op, av_block *b, av_op *before, int depth) {
  if (depth > CLONE_MAX_DEPTH) {
    if (!c->failed) av_diag_set(c->d, AV_INVALID_ARGUMENT, "regions nested too deeply to copy");
    c->failed = true;
    return NULL;
  }
  const av_type **rt = calloc((size_t)op->nresults + 1, sizeof *rt);
  if (!rt) return fail_oom(c);
  for (uint32_t i = 0; i < op->nresults && !c->failed; i++) rt[i] = clone_type(c, op->results[i].type, 0);
  av_op *n = c->failed ? NULL : av_op_new(c->dst, op->name, op->noperands, op->nresults, rt, op->nattrs, op->nregions);
  free(rt);
  if (!n) return c->failed ? NULL : fail_oom(c);
  n->code = op->code;
  if (!(n->loc = av_arena_strdup(&c->dst->arena, op->loc ? op->loc : "unknown"))) return fail_oom(c);
  for (uint32_t i = 0; i < op->noperands; i++) {
    n->operands[i] = av_clone_lookup(c, op->operands[i]);
    if (!n->operands[i]) {
      if (!c->failed)
        av_diag_set(c->d, AV_INVALID_ARGUMENT, "%s at %s: operand %u is defined outside what is copied", op->name,
                    op->loc, i);
      c->failed = true;
      return NULL;
    }
  }
  for (uint32_t i = 0; i < op->nattrs; i++) {
    n->attrs[i].name = av_arena_strdup(&c->dst->arena, op->attrs[i].name ? op->attrs[i].name : "");
    n->attrs[i].value = clone_attr(c, op->attrs[i].value, 0);
    if (!n->attrs[i].name) return fail_oom(c);
    if (c->failed) return NULL;
  }
  for (uint32_t i = 0; i < op->nresults; i++)
    if (!av_clone_map(c, &op->results[i], &n->results[i])) return NULL;
  for (uint32_t r = 0; r < op->nregions; r++)
    if (!clone_region(c, &op->regions[r], &n->regions[r], depth + 1)) return NULL;
  av_block_insert_before(b, before, n);
  return n;
}

static bool clone_region(av_clone *c, const av_region *from, av_region *to, int depth) {
  for (uint32_t k = 0; k < from->nblocks; k++) {
    const av_block *fb = &from->blocks[k];
    const av_type **types = calloc((size_t)fb->nargs + 1, sizeof *types);
    if (!types) return fail_oom(c), false;
    for (uint32_t i = 0; i < fb->nargs && !c->failed; i++) types[i] = clone_type(c, fb->args[i].type, 0);
    av_block *nb = c->failed ? NULL : av_region_add_block(c->dst, to, fb->nargs, types);
    free(types);
    if (!nb) return c->failed ? false : (fail_oom(c), false);
    for (uint32_t i = 0; i < fb->nargs; i++)
      if (!av_clone_map(c, &fb->args[i], &nb->args[i])) return false;
    for (const av_op *o = fb->first; o; o = o->next)
      if (!clone_op(c, o, nb, NULL, depth)) return false;
  }
  return true;
}

av_op *av_clone_op(av_clone *c, const av_op *op, av_block *b, av_op *before) {
  return c->failed ? NULL : clone_op(c, op, b, before, 0);
}
