/* stablehlo.async_start(operands) ({region}) -> !stablehlo.future<T...> and
 * stablehlo.async_done(future) -> T...: the region's body moved in place of the pair. */
#include "compiler/async_inline.h"

#include <stdlib.h>
#include <string.h>

#include "compiler/attrs.h"

enum { ASYNC_MAX_DEPTH = 64 };

/* Every operand under rg that is `from` reads `to` instead. */
static void replace_uses(av_region *rg, const av_value *from, av_value *to, int depth) {
  if (depth > ASYNC_MAX_DEPTH) return;
  for (uint32_t b = 0; b < rg->nblocks; b++)
    for (av_op *op = rg->blocks[b].first; op; op = op->next) {
      for (uint32_t i = 0; i < op->noperands; i++)
        if (op->operands[i] == from) op->operands[i] = to;
      for (uint32_t r = 0; r < op->nregions; r++) replace_uses(&op->regions[r], from, to, depth + 1);
    }
}

/* Whether op consumes v, directly or in its regions. */
static bool reads(const av_op *op, const av_value *v, int depth) {
  if (depth > ASYNC_MAX_DEPTH) return true;
  for (uint32_t i = 0; i < op->noperands; i++)
    if (op->operands[i] == v) return true;
  for (uint32_t r = 0; r < op->nregions; r++)
    for (uint32_t b = 0; b < op->regions[r].nblocks; b++)
      for (const av_op *o = op->regions[r].blocks[b].first; o; o = o->next)
        if (reads(o, v, depth + 1)) return true;
  return false;
}

/* The async_dones of `start`'s future: all of its users (in its block, nested regions
 * included; SSA allows no others), each returning exactly the region's result types. False
 * when the future is read any other way. */
static bool only_done_users(const av_op *start, const av_op *term) {
  const av_value *future = &start->results[0];
  for (const av_op *op = start->next; op; op = op->next) {
    if (!reads(op, future, 0)) continue;
    if (op->code != AV_OP_ASYNC_DONE || op->noperands != 1 || op->nregions ||
        op->nresults != term->noperands)
      return false;
    for (uint32_t i = 0; i < op->nresults; i++)
      if (!av_type_equal(op->results[i].type, term->operands[i]->type)) return false;
  }
  return true;
}

/* Inlines one pair; false (nothing changed) when it does not have the expected form. */
static bool inline_start(av_region *fn_body, av_op *start) {
  if (start->nresults != 1 || start->nregions != 1 || start->regions[0].nblocks != 1) return false;
  const av_type *ft = start->results[0].type;
  if (!ft || ft->kind != AV_TYPE_OTHER) return false;
  av_block *inner = &start->regions[0].blocks[0];
  av_op *term = inner->last;
  if (!term || (term->code != AV_OP_RETURN && term->code != AV_OP_FUNC_RETURN) ||
      inner->nargs != start->noperands || !only_done_users(start, term))
    return false;
  for (uint32_t i = 0; i < inner->nargs; i++)
    if (!av_type_equal(inner->args[i].type, start->operands[i]->type)) return false;
  for (uint32_t i = 0; i < inner->nargs; i++)
    replace_uses(&start->regions[0], &inner->args[i], start->operands[i], 0);
  av_block *outer = start->parent;
  while (inner->first != term) {
    av_op *op = inner->first;
    av_block_remove(inner, op);
    av_block_insert_before(outer, start, op);
  }
  for (av_op *op = start->next, *next; op; op = next) {
    next = op->next;
    if (op->code != AV_OP_ASYNC_DONE || op->operands[0] != &start->results[0]) continue;
    for (uint32_t i = 0; i < op->nresults; i++)
      replace_uses(fn_body, &op->results[i], term->operands[i], 0);
    av_block_remove(outer, op);
  }
  av_block_remove(outer, start);
  return true;
}

typedef struct start_list {
  av_op **v;
  size_t n, cap;
} start_list;

/* The async_starts under rg, nested ones before the op holding them (they move out with the
 * body of their enclosing pair when that one is inlined). */
static bool collect(av_region *rg, start_list *l, int depth) {
  if (depth > ASYNC_MAX_DEPTH) return true;
  for (uint32_t b = 0; b < rg->nblocks; b++)
    for (av_op *op = rg->blocks[b].first; op; op = op->next) {
      for (uint32_t r = 0; r < op->nregions; r++)
        if (!collect(&op->regions[r], l, depth + 1)) return false;
      if (op->code != AV_OP_ASYNC_START) continue;
      if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        av_op **v = realloc(l->v, cap * sizeof *v);
        if (!v) return false;
        l->v = v;
        l->cap = cap;
      }
      l->v[l->n++] = op;
    }
  return true;
}

/* custom_call @control_dep(src, dst) with no results: an order between two values for XLA's
 * scheduler (jax.experimental.control_deps), possibly futures. Dropped: anvil runs a block's
 * steps in program order, and the values are untouched. */
static bool is_control_dep(const av_op *op) {
  const char *t = op->code == AV_OP_CUSTOM_CALL ? av_attr_get_str(op, "call_target_name") : NULL;
  return t && strcmp(t, "control_dep") == 0 && op->nresults == 0 && op->nregions == 0;
}

static void drop_control_deps(av_region *rg, int depth) {
  if (depth > ASYNC_MAX_DEPTH) return;
  for (uint32_t b = 0; b < rg->nblocks; b++)
    for (av_op *op = rg->blocks[b].first, *next; op; op = next) {
      next = op->next;
      for (uint32_t r = 0; r < op->nregions; r++) drop_control_deps(&op->regions[r], depth + 1);
      if (is_control_dep(op)) av_block_remove(&rg->blocks[b], op);
    }
}

void av_inline_async(av_module *m) {
  for (uint32_t f = 0; f < m->nfuncs; f++) {
    if (!m->funcs[f]) continue;
    drop_control_deps(&m->funcs[f]->body, 0);
    start_list l = {0};
    /* out of memory: the pairs stay, and the lowering reports them */
    if (collect(&m->funcs[f]->body, &l, 0))
      for (size_t i = 0; i < l.n; i++) inline_start(&m->funcs[f]->body, l.v[i]);
    free(l.v);
  }
}
