/* Fewer and cheaper all-reduces in a partitioned program (see all_reduce_opt.h).
 *
 * A data-parallel training step all-reduces every parameter's gradient: one meeting of the
 * devices per parameter, each a wake-up of the threads that wait for the others, and on a
 * loaded machine a chance for one device to wait out the other's time slice. One all-reduce
 * of every gradient meets once. XLA's all-reduce combiner does the same; here it is a
 * rewrite of one block: the combined op goes after every op its operands need, the ops
 * that read its results after it, everything else keeps its order.
 *
 * JAX writes a dense layer's weight gradient as transpose(g^T x); partitioned over the
 * batch it becomes transpose(all_reduce(g^T x)), a second pass over the reduced array that
 * the single-device program folds into the product. Moving the transpose above the
 * all-reduce lets that fold happen here too. */
#include "compiler/all_reduce_opt.h"

#include <stdlib.h>
#include <string.h>

#include "compiler/attrs.h"
#include "compiler/lower_internal.h"
#include "ir/attr_util.h"

enum {
  MAX_CANDIDATES = 4096, /* all-reduces looked at per block (more are left alone) */
  MAX_GROUP = 256,       /* operands of one combined all-reduce */
  MAX_GROUP_BYTES = 256 << 20, /* and their bytes (a combined op holds them all at once) */
};

static bool is_terminator(const av_op *op) {
  return op->code == AV_OP_FUNC_RETURN || op->code == AV_OP_RETURN;
}

static bool static_tensor(const av_type *t) {
  return t && t->kind == AV_TYPE_TENSOR && !t->quant && av_type_is_static(t);
}

/* The binary op of a single-op reduction body (op(arg0, arg1) then return), or NULL. */
static const av_op *reduction_op(const av_op *ar) {
  if (ar->nregions != 1 || ar->regions[0].nblocks != 1) return NULL;
  const av_block *b = &ar->regions[0].blocks[0];
  const av_op *f = b->first, *ret = f ? f->next : NULL;
  if (b->nargs != 2 || b->nops != 2 || !f || !ret || f->noperands != 2 || f->nresults != 1 ||
      f->nregions != 0 || f->operands[0] != &b->args[0] || f->operands[1] != &b->args[1] ||
      !is_terminator(ret) || ret->noperands != 1 || ret->operands[0] != &f->results[0])
    return NULL;
  return f;
}

/* An all-reduce of one array with attributes this pass knows. */
static bool simple_all_reduce(const av_op *op) {
  if (op->code != AV_OP_ALL_REDUCE || op->noperands != 1 || op->nresults != 1 ||
      !static_tensor(op->operands[0]->type) || !av_type_equal(op->operands[0]->type, op->results[0].type) ||
      !reduction_op(op))
    return false;
  for (uint32_t i = 0; i < op->nattrs; i++) {
    const char *n = op->attrs[i].name;
    if (strcmp(n, "replica_groups") != 0 && strcmp(n, "channel_id") != 0 &&
        strcmp(n, "channel_handle") != 0 && strcmp(n, "use_global_device_ids") != 0)
      return false;
  }
  return true;
}

/* ------------------------------------------------------ transpose above all-reduce */

/* transpose(all_reduce(x)) -> all_reduce(transpose(x)): the two ops trade places (each keeps
 * its value ids: the transpose's result, read by the rest, is now the all-reduce's). */
static void raise_transpose(const av_region *body, av_op *tr) {
  if (tr->noperands != 1 || tr->nresults != 1 || tr->nregions != 0) return;
  av_op *ar = tr->operands[0]->def;
  if (!ar || ar->parent != tr->parent || !simple_all_reduce(ar) ||
      !static_tensor(tr->results[0].type) || av_region_count_uses(body, &ar->results[0], 2) != 1)
    return;
  const char *name = ar->name, *loc = ar->loc;
  av_named_attr *attrs = ar->attrs;
  uint32_t nattrs = ar->nattrs;
  av_region *regions = ar->regions;
  uint32_t nregions = ar->nregions;

  ar->code = AV_OP_TRANSPOSE; /* reads x, gives the transposed shape */
  ar->name = tr->name;
  ar->loc = tr->loc;
  ar->attrs = tr->attrs;
  ar->nattrs = tr->nattrs;
  ar->regions = tr->regions;
  ar->nregions = 0;
  ar->results[0].type = tr->results[0].type;

  tr->code = AV_OP_ALL_REDUCE; /* reduces the transposed array */
  tr->name = name;
  tr->loc = loc;
  tr->attrs = attrs;
  tr->nattrs = nattrs;
  tr->regions = regions;
  tr->nregions = nregions;
  tr->operands[0] = &ar->results[0];
}

/* ------------------------------------------------------------ combining */

static bool same_groups(const av_attr *a, const av_attr *b) {
  if (!a || !b) return a == b;
  if (a->kind != b->kind) return false;
  if (a->kind == AV_ATTR_DENSE && !av_type_equal(a->type, b->type)) return false;
  int64_t na = av_attr_i64s_count(a), nb = av_attr_i64s_count(b);
  if (na < 0 || na != nb || na > (1 << 20)) return false;
  if (na == 0) return true;
  int64_t *va = malloc((size_t)na * 2 * sizeof *va);
  if (!va) return false;
  size_t ga = 0, gb = 0;
  bool same = av_attr_as_i64s(a, va, (size_t)na, &ga) && av_attr_as_i64s(b, va + na, (size_t)na, &gb) &&
              ga == gb && memcmp(va, va + na, ga * sizeof *va) == 0;
  free(va);
  return same;
}

static bool has_channel(const av_op *op) {
  int64_t ch = 0;
  if (!av_attr_get_int(op, "channel_id", &ch) && av_op_attr(op, "channel_handle") &&
      !av_attr_get_int(op, "channel_handle", &ch))
    ch = 1;
  return ch > 0;
}

/* Whether b can join a's all-reduce: the same devices meet, the same reduction. */
static bool compatible(const av_op *a, const av_op *b) {
  bool ga = false, gb = false;
  av_attr_get_bool(a, "use_global_device_ids", &ga);
  av_attr_get_bool(b, "use_global_device_ids", &gb);
  const av_op *fa = reduction_op(a), *fb = reduction_op(b);
  return a->operands[0]->type->dtype == b->operands[0]->type->dtype && fa->code == fb->code &&
         strcmp(fa->name, fb->name) == 0 && av_type_equal(fa->results[0].type, fb->results[0].type) &&
         ga == gb && has_channel(a) == has_channel(b) &&
         same_groups(av_op_attr(a, "replica_groups"), av_op_attr(b, "replica_groups"));
}

/* Whether op reads (directly or inside its regions) a value marked in `taint`. */
static bool reads_tainted(const av_op *op, const bool *taint, uint32_t nids, int depth) {
  if (depth > 64) return true;
  for (uint32_t i = 0; i < op->noperands; i++)
    if (op->operands[i] && op->operands[i]->id < nids && taint[op->operands[i]->id]) return true;
  for (uint32_t r = 0; r < op->nregions; r++)
    for (uint32_t b = 0; b < op->regions[r].nblocks; b++)
      for (const av_op *in = op->regions[r].blocks[b].first; in; in = in->next)
        if (reads_tainted(in, taint, nids, depth + 1)) return true;
  return false;
}

static void replace_uses(av_op *op, const av_value *from, av_value *to, int depth) {
  if (depth > 64) return;
  for (uint32_t i = 0; i < op->noperands; i++)
    if (op->operands[i] == from) op->operands[i] = to;
  for (uint32_t r = 0; r < op->nregions; r++)
    for (uint32_t b = 0; b < op->regions[r].nblocks; b++)
      for (av_op *in = op->regions[r].blocks[b].first; in; in = in->next)
        replace_uses(in, from, to, depth + 1);
}

/* Ops whose order relative to each other must stay (host callbacks, I/O, calls, rng). */
static bool ordered(const av_op *op) { return av_op_has_side_effects(op); }

typedef struct group {
  av_op *members[MAX_GROUP];
  int n;
  av_op **dependents; /* ops reading (transitively) a member's result, in block order */
  int ndependents;
} group;

/* Gathers leader's group: later compatible all-reduces that do not read (through other ops)
 * a member's result, and every op that does (the dependents). */
static void gather_group(av_op *leader, const bool *candidate_done, av_op **cands, int ncands,
                         bool *taint, uint32_t nids, group *g) {
  memset(taint, 0, nids);
  g->n = 0;
  g->ndependents = 0;
  g->members[g->n++] = leader;
  taint[leader->results[0].id] = true;
  size_t bytes = 0;
  int64_t ne = av_type_num_elements(leader->operands[0]->type);
  bytes += (size_t)ne * av_dtype_size(leader->operands[0]->type->dtype);
  for (av_op *op = leader->next; op; op = op->next) {
    bool reads = reads_tainted(op, taint, nids, 0);
    if (!reads && !is_terminator(op) && op->code == AV_OP_ALL_REDUCE && g->n < MAX_GROUP) {
      int k = 0;
      while (k < ncands && cands[k] != op) k++;
      if (k < ncands && !candidate_done[k] && compatible(leader, op)) {
        int64_t e = av_type_num_elements(op->operands[0]->type);
        size_t b = (size_t)e * av_dtype_size(op->operands[0]->type->dtype);
        if (bytes + b <= (size_t)MAX_GROUP_BYTES) {
          bytes += b;
          g->members[g->n++] = op;
          taint[op->results[0].id] = true;
          continue;
        }
      }
    }
    if (reads) {
      for (uint32_t r = 0; r < op->nresults; r++)
        if (op->results[r].id < nids) taint[op->results[r].id] = true;
      g->dependents[g->ndependents++] = op;
    }
  }
}

/* Where op stands in g: a member (1), a dependent (2), neither (0). Members and dependents
 * are in block order, so the cursors walk them once along the block. */
static int classify(const group *g, const av_op *op, int *mi, int *di) {
  if (*mi < g->n && g->members[*mi] == op) return ++*mi, 1;
  if (*di < g->ndependents && g->dependents[*di] == op) return ++*di, 2;
  return 0;
}

/* Replaces g's members by one all-reduce placed right after the last op defining one of
 * their operands; dependents before that point move after it, the rest keeps its order.
 * 1: done; 0: left alone (ordered ops would change order); -1: out of memory. */
static int combine(av_module *m, av_block *b, group *g) {
  /* the last op defining a member's operand */
  uint32_t last_def = 0, idx = 0;
  bool any_def = false;
  for (const av_op *op = b->first; op; op = op->next, idx++)
    for (int i = 0; i < g->n; i++)
      if (g->members[i]->operands[0]->def == op) {
        last_def = idx;
        any_def = true;
      }
  /* a dependent ordered op before that point must not move behind an ordered op there */
  bool dependent_ordered = false;
  int mi = 0, di = 0;
  idx = 0;
  for (const av_op *op = b->first; op && any_def && idx <= last_def; op = op->next, idx++) {
    int k = classify(g, op, &mi, &di);
    if (k == 2 && ordered(op)) dependent_ordered = true;
    if (k == 0 && ordered(op) && dependent_ordered) return 0;
  }

  const av_type **types = av_arena_calloc(&m->arena, (size_t)g->n, sizeof *types);
  av_op **order = malloc(((size_t)b->nops + 2) * sizeof *order);
  if (!types || !order) {
    free(order);
    return -1;
  }
  for (int i = 0; i < g->n; i++) types[i] = g->members[i]->results[0].type;
  av_op *first = g->members[0];
  av_op *c = av_op_new(m, first->name, (uint32_t)g->n, (uint32_t)g->n, types, first->nattrs, 1);
  if (!c) {
    free(order);
    return -1;
  }
  for (int i = 0; i < g->n; i++) c->operands[i] = g->members[i]->operands[0];
  memcpy(c->attrs, first->attrs, first->nattrs * sizeof *c->attrs);
  c->regions[0] = first->regions[0];
  for (uint32_t k = 0; k < c->regions[0].nblocks; k++) c->regions[0].blocks[k].parent = &c->regions[0];
  c->loc = first->loc;
  for (int d = 0; d < g->ndependents; d++)
    for (int i = 0; i < g->n; i++) replace_uses(g->dependents[d], &g->members[i]->results[0], &c->results[i], 0);

  /* the new order: the others up to the last operand definition, the combined op, then
   * every other op (dependents included) in block order */
  uint32_t n = 0;
  mi = di = 0;
  idx = 0;
  if (!any_def) order[n++] = c;
  for (av_op *op = b->first; op; op = op->next, idx++) {
    if (classify(g, op, &mi, &di) == 0 && (any_def && idx <= last_def)) order[n++] = op;
    if (any_def && idx == last_def) order[n++] = c;
  }
  mi = di = 0;
  idx = 0;
  for (av_op *op = b->first; op; op = op->next, idx++) {
    int k = classify(g, op, &mi, &di);
    if (k == 2 || (k == 0 && !(any_def && idx <= last_def))) order[n++] = op;
  }
  b->first = b->last = NULL;
  b->nops = 0;
  for (uint32_t i = 0; i < n; i++) av_block_append(b, order[i]);
  free(order);
  return 1;
}

static int combine_block(av_module *m, av_block *b) {
  av_op **cands = calloc(MAX_CANDIDATES, sizeof *cands);
  bool *done = calloc(MAX_CANDIDATES, sizeof *done);
  bool *taint = NULL;
  group *g = calloc(1, sizeof *g);
  /* the block never grows: a combine removes its members and adds one op */
  av_op **deps = calloc((size_t)b->nops + 1, sizeof *deps);
  int merged = 0;
  if (!cands || !done || !g || !deps) goto out;
  g->dependents = deps;
  int ncands = 0;
  for (av_op *op = b->first; op && ncands < MAX_CANDIDATES; op = op->next)
    if (simple_all_reduce(op)) cands[ncands++] = op;
  for (int i = 0; i < ncands; i++) {
    if (done[i]) continue;
    done[i] = true;
    /* every value so far, the combined ops' results included */
    uint32_t nids = m->next_value_id;
    bool *grown = realloc(taint, (size_t)nids + 1);
    if (!grown) break;
    taint = grown;
    gather_group(cands[i], done, cands, ncands, taint, nids, g);
    if (g->n < 2) continue;
    int r = combine(m, b, g);
    if (r < 0) break;
    if (r == 0) continue;
    for (int k = 0; k < ncands; k++)
      for (int j = 1; j < g->n; j++)
        if (cands[k] == g->members[j]) done[k] = true;
    merged += g->n - 1;
  }
out:
  free(cands);
  free(done);
  free(taint);
  free(g);
  free(deps);
  return merged;
}

int av_optimize_all_reduces(av_module *m) {
  av_func *f = av_module_entry(m);
  if (!f || f->body.nblocks != 1) return 0;
  av_block *b = &f->body.blocks[0];
  for (av_op *op = b->first; op; op = op->next)
    if (op->code == AV_OP_TRANSPOSE) raise_transpose(&f->body, op);
  return combine_block(m, b);
}
