/* Slices moved toward what they read, so that a fused group computes only the part it needs
 * and no intermediate array is written whole to be read back in parts. An ODE right-hand side
 * is the usual case: it stacks its components into one array (a concatenate), and the next
 * Runge-Kutta stage adds a multiple of that array to the state and slices the components out
 * again. Rewritten in place, before lowering (each rule's function says when it applies):
 * - slice(concatenate(x0, ..., xn)) that is exactly one operand -> that operand;
 * - slice or reshape of a scalar's broadcast -> the scalar's broadcast of the new shape;
 * - slice(e(a, b)), e elementwise and read only by slices -> e(slice(a), slice(b));
 * - reshape(e(a, b)), e read only there -> e(reshape(a), reshape(b));
 *   reshape(reshape(x)) -> reshape(x);
 * - e(concatenate(a0, a1), concatenate(b0, b1)) -> concatenate(e(a0, b0), e(a1, b1)).
 * Each element is computed at most as often as before. Rounds repeat until nothing changes
 * (at most FOLD_SLICE_ROUNDS); values an earlier rewrite of the round made wait for the next
 * one, and ops left unread are removed. */
#include <stdlib.h>
#include <string.h>

#include "compiler/attrs.h"
#include "compiler/fold.h"
#include "runtime/kernels/elementwise.h"

enum {
  SLICE_MAX_RANK = 8,
  FOLD_SLICE_ROUNDS = 8,
  MAX_DEPTH = 64,
  MAX_PIECES = 8,    /* slices of one elementwise op, operands of one concatenate */
  MIN_PIECE = 1024,  /* elements of each operand of a concatenate that moves */
};

static const av_type *tensor_of(const av_value *v) {
  const av_type *t = v ? v->type : NULL;
  return t && t->kind == AV_TYPE_TENSOR && !t->quant && t->rank <= SLICE_MAX_RANK ? t : NULL;
}

/* The slice's box; false when its attributes are not what the verifier guarantees. */
static bool slice_box(const av_op *s, int r, int64_t *start, int64_t *limit, int64_t *stride) {
  size_t n;
  if (!av_attr_get_ints(s, "start_indices", start, SLICE_MAX_RANK, &n) || n != (size_t)r) return false;
  if (!av_attr_get_ints(s, "limit_indices", limit, SLICE_MAX_RANK, &n) || n != (size_t)r) return false;
  if (!av_op_attr(s, "strides")) {
    for (int i = 0; i < r; i++) stride[i] = 1;
  } else if (!av_attr_get_ints(s, "strides", stride, SLICE_MAX_RANK, &n) || n != (size_t)r) {
    return false;
  }
  return true;
}

/* Whether a box of `t` (start, limit, unit strides) is one contiguous run of its elements:
 * whole in every dimension after the first it cuts, and of extent 1 in every one before. Only
 * such pieces move: a strided one (the gates of an LSTM, cut along the last axis) is read
 * better from the whole array by the fused group that slices it. */
static bool contiguous_box(const av_type *t, const int64_t *start, const int64_t *limit) {
  int k = 0;
  while (k < t->rank && start[k] == 0 && limit[k] == t->dims[k]) k++;
  for (int j = 0; j < k; j++)
    if (t->dims[j] != 1) return k == t->rank; /* whole before the cut: only if nothing is cut */
  for (int j = k + 1; j < t->rank; j++)
    if (start[j] != 0 || limit[j] != t->dims[j]) return false;
  return true;
}

static bool is_slice(const av_op *op) {
  return op->code == AV_OP_SLICE && op->noperands == 1 && op->nresults == 1 && op->nregions == 0;
}

/* The pass's state: uses of every value that existed when the round began (by value id;
 * values made during the round are left for the next), kept current as ops are rewritten. */
typedef struct fold_ctx {
  av_module *m;
  uint32_t nids;
  int32_t *uses;        /* operand uses, nested regions included */
  int32_t *slice_uses;  /* of them, by slices */
  int64_t *slice_elems; /* the elements those slices take */
} fold_ctx;

static bool known(const fold_ctx *c, const av_value *v) { return v->id < c->nids; }

static void add_use(fold_ctx *c, const av_op *op, const av_value *v, int sign) {
  if (!known(c, v)) return;
  c->uses[v->id] += sign;
  const av_type *t = op->nresults ? tensor_of(&op->results[0]) : NULL;
  if (op->code == AV_OP_SLICE && op->noperands == 1 && t) {
    int64_t n = av_type_num_elements(t); /* unknown (dynamic, overflowing): more than any array */
    c->slice_uses[v->id] += sign;
    c->slice_elems[v->id] += sign * (n < 0 ? (int64_t)1 << 40 : n);
  }
}

/* False for nesting deeper than any real program's (a hostile one): nothing is rewritten. */
static bool count_region(fold_ctx *c, const av_region *rg, int depth) {
  for (uint32_t b = 0; b < rg->nblocks; b++)
    for (const av_op *op = rg->blocks[b].first; op; op = op->next) {
      for (uint32_t i = 0; i < op->noperands; i++) add_use(c, op, op->operands[i], 1);
      for (uint32_t i = 0; i < op->nregions; i++)
        if (depth >= MAX_DEPTH || !count_region(c, &op->regions[i], depth + 1)) return false;
    }
  return true;
}

static int32_t uses_of(const fold_ctx *c, const av_value *v) { return known(c, v) ? c->uses[v->id] : 1 << 20; }

/* Sets operand i of op to v, keeping the counts. */
static void set_operand(fold_ctx *c, av_op *op, uint32_t i, av_value *v) {
  add_use(c, op, op->operands[i], -1);
  op->operands[i] = v;
  add_use(c, op, v, 1);
}

/* Removes op, whose results nobody reads, releasing its operands. */
static void drop(fold_ctx *c, av_op *op) {
  for (uint32_t i = 0; i < op->noperands; i++) add_use(c, op, op->operands[i], -1);
  av_block_remove(op->parent, op);
}

/* op becomes `like` (opcode, name, attributes) over `ops`; counts move from its old operands */
static void become(fold_ctx *c, av_op *op, const av_op *like, av_value **ops, uint32_t n) {
  for (uint32_t i = 0; i < op->noperands; i++) add_use(c, op, op->operands[i], -1);
  op->code = like->code;
  op->name = like->name;
  op->attrs = like->attrs;
  op->nattrs = like->nattrs;
  op->operands = ops;
  op->noperands = n;
  for (uint32_t i = 0; i < n; i++) add_use(c, op, ops[i], 1);
}

static bool elementwise(const av_op *op) {
  if (op->nresults != 1 || op->nregions != 0 || op->noperands < 1) return false;
  return op->code == AV_OP_CONVERT || op->code == AV_OP_SELECT || op->code == AV_OP_CLAMP ||
         av_ew_arity(op->code) > 0;
}

static bool same_shape(const av_type *a, const av_type *b) {
  if (a->rank != b->rank) return false;
  for (int k = 0; k < a->rank; k++) /* (a scalar's dims may be NULL) */
    if (a->dims[k] != b->dims[k]) return false;
  return true;
}

/* Whether operand x of e is a scalar that stays as it is when e changes shape: select's
 * predicate and clamp's bounds may be scalars of an array op (no other elementwise operand
 * may; a scalar op's operands change shape with it). */
static bool kept_scalar(const av_op *e, const av_value *x) {
  return x->type->rank == 0 && e->results[0].type->rank > 0;
}

/* e's operands are tensors of e's shape, or scalars it keeps */
static bool plain_operands(const av_op *e) {
  const av_type *et = tensor_of(&e->results[0]);
  if (!et) return false;
  for (uint32_t j = 0; j < e->noperands; j++) {
    const av_type *t = tensor_of(e->operands[j]);
    if (!t || (!kept_scalar(e, e->operands[j]) && !same_shape(t, et))) return false;
  }
  return true;
}

/* A new op `name` of one result (dtype, the shape of `shape`) reading x, before `before`. */
static av_op *new_op_before(fold_ctx *c, av_op *before, const char *name, av_dtype dt,
                            const av_type *shape, av_value *x, uint32_t nattrs) {
  const av_type *rt = av_type_tensor(c->m, dt, shape->rank, shape->dims);
  av_op *op = rt ? av_op_new(c->m, name, 1, 1, &rt, nattrs, 0) : NULL;
  if (!op) return NULL;
  op->operands[0] = x;
  op->loc = before->loc;
  av_block_insert_before(before->parent, before, op);
  add_use(c, op, x, 1);
  return op;
}

/* e(per-operand copies of `like` (a slice or reshape) to the shape of s) replaces s, which
 * read e; scalar operands stay. False (nothing changed but unused new ops) when out of
 * memory. */
static bool distribute(fold_ctx *c, av_op *s, const av_op *e) {
  const av_type *st = s->results[0].type;
  av_value **ops = av_arena_calloc(&c->m->arena, e->noperands, sizeof *ops);
  if (!ops) return false;
  for (uint32_t j = 0; j < e->noperands; j++) {
    av_value *x = e->operands[j];
    if (kept_scalar(e, x)) {
      ops[j] = x;
      continue;
    }
    av_op *n = new_op_before(c, s, s->name, x->type->dtype, st, x, s->nattrs);
    if (!n) return false;
    if (s->nattrs) memcpy(n->attrs, s->attrs, sizeof *s->attrs * s->nattrs);
    ops[j] = &n->results[0];
  }
  become(c, s, e, ops, e->noperands);
  return true;
}

/* slice(concatenate(...)) -> the operand it is */
static bool from_concat(fold_ctx *c, av_op *s, const int64_t *start, const int64_t *limit,
                        const int64_t *stride) {
  const av_op *cc = s->operands[0]->def;
  const av_type *ct = tensor_of(s->operands[0]), *st = s->results[0].type;
  int64_t d;
  if (!cc || cc->code != AV_OP_CONCATENATE || !ct || !av_attr_get_int(cc, "dimension", &d) ||
      d < 0 || d >= ct->rank)
    return false;
  for (int k = 0; k < ct->rank; k++)
    if (stride[k] != 1 || (k != d && (start[k] != 0 || limit[k] != ct->dims[k]))) return false;
  int64_t off = 0;
  for (uint32_t i = 0; i < cc->noperands; i++) {
    const av_type *t = tensor_of(cc->operands[i]);
    if (!t || t->rank != ct->rank) return false;
    if (off == start[d] && off + t->dims[d] == limit[d]) {
      if (!av_type_equal(t, st)) return false;
      add_use(c, s, s->operands[0], -1);
      s->code = AV_OP_RESHAPE; /* to its own type: an alias */
      s->name = "stablehlo.reshape";
      s->nattrs = 0;
      s->operands[0] = cc->operands[i];
      add_use(c, s, s->operands[0], 1);
      return true;
    }
    off += t->dims[d];
  }
  return false;
}

/* slice or reshape of broadcast_in_dim(scalar) -> broadcast_in_dim(scalar) of its shape */
static bool from_scalar_broadcast(fold_ctx *c, av_op *s) {
  const av_op *b = s->operands[0]->def;
  const av_type *in = b && b->noperands == 1 ? tensor_of(b->operands[0]) : NULL;
  if (!b || b->code != AV_OP_BROADCAST_IN_DIM || !in || in->rank != 0) return false;
  av_value **ops = av_arena_calloc(&c->m->arena, 1, sizeof *ops);
  if (!ops) return false;
  ops[0] = b->operands[0];
  become(c, s, b, ops, 1);
  return true;
}

/* slice(e(a, b, ...)) -> e(slice(a), slice(b), ...) */
static bool slice_through_elementwise(fold_ctx *c, av_op *s, const int64_t *start, const int64_t *limit,
                                      const int64_t *stride) {
  av_op *e = s->operands[0]->def;
  const av_value *ev = s->operands[0];
  const av_type *et = tensor_of(ev);
  if (!e || !et || !elementwise(e) || e->parent != s->parent || !known(c, ev) || !plain_operands(e))
    return false;
  for (int k = 0; k < et->rank; k++)
    if (stride[k] != 1) return false;
  if (!contiguous_box(et, start, limit)) return false;
  int64_t ne = av_type_num_elements(et);
  if (c->uses[ev->id] != c->slice_uses[ev->id] || c->uses[ev->id] > MAX_PIECES || ne < 0 ||
      c->slice_elems[ev->id] > ne)
    return false;
  if (!distribute(c, s, e)) return false;
  if (c->uses[ev->id] == 0) drop(c, e);
  return true;
}

static bool fold_slice(fold_ctx *c, av_op *s) {
  const av_type *st = tensor_of(&s->results[0]), *xt = tensor_of(s->operands[0]);
  int64_t start[SLICE_MAX_RANK], limit[SLICE_MAX_RANK], stride[SLICE_MAX_RANK];
  if (!st || !xt || xt->rank != st->rank || !slice_box(s, st->rank, start, limit, stride)) return false;
  return from_concat(c, s, start, limit, stride) || from_scalar_broadcast(c, s) ||
         slice_through_elementwise(c, s, start, limit, stride);
}

/* reshape(e(a, b, ...)), e elementwise in the same block and read only here, is
 * e(reshape(a), reshape(b), ...); reshape(reshape(x)) is one reshape of x; a reshape of a
 * scalar's broadcast is the broadcast. (JAX squeezes every slice it takes: slice, then
 * reshape; the elementwise ops then meet the fused group they feed without a copy between.) */
static bool fold_reshape(fold_ctx *c, av_op *s) {
  av_op *e = s->operands[0]->def;
  const av_value *ev = s->operands[0];
  if (!tensor_of(&s->results[0]) || !e || !tensor_of(ev)) return false;
  if (e->code == AV_OP_RESHAPE && e->noperands == 1 && tensor_of(e->operands[0])) {
    set_operand(c, s, 0, e->operands[0]);
    if (uses_of(c, ev) == 0) drop(c, e);
    return true;
  }
  if (from_scalar_broadcast(c, s)) return true;
  if (!elementwise(e) || e->parent != s->parent || uses_of(c, ev) != 1 || !plain_operands(e))
    return false;
  if (!distribute(c, s, e)) return false;
  drop(c, e);
  return true;
}

/* e(concatenate(a0..an), concatenate(b0..bn), ...), e elementwise, each concatenate read only
 * by e and all split the same way along the same dimension, is concatenate(e(a0, b0, ...),
 * ...): the concatenated arrays are never written (their pieces are read where they are).
 * Scalars stay; another operand x is read as slices of x, one per piece. */
static bool concat_through_elementwise(fold_ctx *c, av_op *e) {
  const av_type *et = tensor_of(&e->results[0]);
  if (!et || !elementwise(e) || et->rank < 1 || !plain_operands(e)) return false;
  const av_op *split = NULL; /* the first concatenate */
  int64_t d = -1;
  for (uint32_t j = 0; j < e->noperands; j++) {
    const av_op *cc = e->operands[j]->def;
    if (!cc || cc->code != AV_OP_CONCATENATE || cc->nresults != 1) continue;
    int64_t cd;
    if (!av_attr_get_int(cc, "dimension", &cd) || cd < 0 || cd >= et->rank ||
        uses_of(c, e->operands[j]) != 1)
      return false; /* read elsewhere too (or twice by e): it is written anyway */
    if (!split) {
      split = cc;
      d = cd;
      continue;
    }
    if (cd != d || cc->noperands != split->noperands) return false;
    for (uint32_t p = 0; p < cc->noperands; p++) {
      const av_type *a = tensor_of(cc->operands[p]), *b = tensor_of(split->operands[p]);
      if (!a || !b || a->rank != b->rank || a->dims[d] != b->dims[d]) return false;
    }
  }
  if (!split || split->noperands < 2 || split->noperands > MAX_PIECES) return false;
  for (int k = 0; k < d; k++) /* each piece one contiguous run of the result */
    if (et->dims[k] != 1) return false;
  uint32_t np = split->noperands;
  for (uint32_t p = 0; p < np; p++) /* a few large pieces, not many small steps */
    if (!tensor_of(split->operands[p]) || av_type_num_elements(split->operands[p]->type) < MIN_PIECE)
      return false;
  av_value **pieces = av_arena_calloc(&c->m->arena, np, sizeof *pieces);
  if (!pieces) return false;
  int64_t off = 0;
  for (uint32_t p = 0; p < np; p++) {
    const av_type *pt = tensor_of(split->operands[p]);
    const av_type *rt = pt ? av_type_tensor(c->m, et->dtype, pt->rank, pt->dims) : NULL;
    av_op *pe = rt ? av_op_new(c->m, e->name, e->noperands, 1, &rt, 0, 0) : NULL;
    if (!pe) return false; /* out of memory: pieces made so far are unused and harmless */
    pe->code = e->code;
    pe->attrs = e->attrs;
    pe->nattrs = e->nattrs;
    pe->loc = e->loc;
    for (uint32_t j = 0; j < e->noperands; j++) {
      av_value *x = e->operands[j];
      const av_op *cc = x->def;
      if (kept_scalar(e, x)) {
        pe->operands[j] = x;
      } else if (cc && cc->code == AV_OP_CONCATENATE) {
        pe->operands[j] = cc->operands[p];
      } else { /* the piece's slice of x */
        int64_t start[SLICE_MAX_RANK] = {0}, limit[SLICE_MAX_RANK], one[SLICE_MAX_RANK];
        for (int k = 0; k < pt->rank; k++) limit[k] = pt->dims[k], one[k] = 1;
        start[d] = off;
        limit[d] = off + pt->dims[d];
        int64_t rd[1] = {pt->rank};
        const av_type *it = av_type_tensor(c->m, AV_DT_S64, 1, rd);
        size_t bytes = sizeof *start * (size_t)pt->rank;
        const av_attr *a0 = it ? av_attr_dense(c->m, it, start, bytes, false, false) : NULL;
        const av_attr *a1 = it ? av_attr_dense(c->m, it, limit, bytes, false, false) : NULL;
        const av_attr *a2 = it ? av_attr_dense(c->m, it, one, bytes, false, false) : NULL;
        av_op *sl = a0 && a1 && a2 ? new_op_before(c, e, "stablehlo.slice", x->type->dtype, pt, x, 3) : NULL;
        if (!sl) return false;
        sl->attrs[0] = (av_named_attr){"start_indices", a0};
        sl->attrs[1] = (av_named_attr){"limit_indices", a1};
        sl->attrs[2] = (av_named_attr){"strides", a2};
        pe->operands[j] = &sl->results[0];
      }
      add_use(c, pe, pe->operands[j], 1);
    }
    av_block_insert_before(e->parent, e, pe);
    pieces[p] = &pe->results[0];
    off += pt->dims[d];
  }
  av_op *dead[MAX_PIECES];
  uint32_t nd = 0;
  for (uint32_t j = 0; j < e->noperands; j++) {
    av_op *cc = e->operands[j]->def;
    if (cc && cc->code == AV_OP_CONCATENATE && nd < MAX_PIECES) dead[nd++] = cc;
  }
  become(c, e, split, pieces, np);
  for (uint32_t k = 0; k < nd; k++)
    if (uses_of(c, &dead[k]->results[0]) == 0) drop(c, dead[k]);
  return true;
}

static bool fold_block_ops(fold_ctx *c, av_region *rg, int depth) {
  if (depth > MAX_DEPTH) return false;
  bool changed = false;
  for (uint32_t b = 0; b < rg->nblocks; b++)
    for (av_op *op = rg->blocks[b].first, *next; op; op = next) {
      next = op->next;
      if (is_slice(op))
        changed |= fold_slice(c, op);
      else if (op->code == AV_OP_RESHAPE && op->noperands == 1 && op->nresults == 1 && op->nregions == 0)
        changed |= fold_reshape(c, op);
      else if (elementwise(op))
        changed |= concat_through_elementwise(c, op);
      for (uint32_t i = 0; i < op->nregions; i++) changed |= fold_block_ops(c, &op->regions[i], depth + 1);
    }
  return changed;
}

/* Removes the ops this pass may leave unread (slices, reshapes, concatenates, scalar
 * broadcasts, elementwise ops), last first so that chains go in one sweep. */
static void drop_unread(fold_ctx *c, av_region *rg, int depth) {
  if (depth > MAX_DEPTH) return;
  for (uint32_t b = 0; b < rg->nblocks; b++)
    for (av_op *op = rg->blocks[b].last, *prev; op; op = prev) {
      prev = op->prev;
      for (uint32_t i = 0; i < op->nregions; i++) drop_unread(c, &op->regions[i], depth + 1);
      bool pure = op->nregions == 0 && op->nresults == 1 &&
                  (op->code == AV_OP_SLICE || op->code == AV_OP_RESHAPE ||
                   op->code == AV_OP_CONCATENATE || op->code == AV_OP_BROADCAST_IN_DIM || elementwise(op));
      if (pure && uses_of(c, &op->results[0]) == 0) drop(c, op);
    }
}

void av_fold_slices(av_module *m) {
  for (int round = 0; round < FOLD_SLICE_ROUNDS; round++) {
    fold_ctx c = {m, m->next_value_id, NULL, NULL, NULL};
    c.uses = calloc(c.nids + 1, sizeof *c.uses);
    c.slice_uses = calloc(c.nids + 1, sizeof *c.slice_uses);
    c.slice_elems = calloc(c.nids + 1, sizeof *c.slice_elems);
    bool ok = c.uses && c.slice_uses && c.slice_elems, changed = false;
    for (uint32_t f = 0; ok && f < m->nfuncs; f++) /* values belong to one function each */
      if (m->funcs[f]) ok = count_region(&c, &m->funcs[f]->body, 0);
    for (uint32_t f = 0; ok && f < m->nfuncs; f++)
      if (m->funcs[f]) changed |= fold_block_ops(&c, &m->funcs[f]->body, 0);
    for (uint32_t f = 0; ok && changed && f < m->nfuncs; f++)
      if (m->funcs[f]) drop_unread(&c, &m->funcs[f]->body, 0);
    free(c.uses);
    free(c.slice_uses);
    free(c.slice_elems);
    if (!changed) return;
  }
}
