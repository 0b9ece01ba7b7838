/* Lowering of while / if / case: their regions become nested block plans. */
#include <string.h>

#include "compiler/attrs.h"
#include "compiler/lower_internal.h"
#include "runtime/scalar_prog.h"

/* The block's arguments must match `types` one to one. */
static bool check_args(av_lower *c, const av_region *r, const char *what, uint32_t n,
                       av_value *const *vals) {
  if (r->nblocks != 1) return AV_UNSUPPORTED(c, "%s region with %u blocks", what, r->nblocks);
  const av_block *b = &r->blocks[0];
  if (b->nargs != n) return AV_INVALID(c, "%s region takes %u arguments, expected %u", what, b->nargs, n);
  for (uint32_t i = 0; i < n; i++)
    if (!av_type_equal(b->args[i].type, vals[i]->type))
      return AV_INVALID(c, "%s region argument %u type mismatch", what, i);
  return true;
}

/* The block's terminator must return values of the op's result types. */
static bool check_returns(av_lower *c, const av_region *r, const char *what, const av_op *op) {
  const av_op *term = r->blocks[0].last;
  if (!term) return AV_INVALID(c, "empty %s region", what);
  if (term->noperands != op->nresults)
    return AV_INVALID(c, "%s region returns %u values, expected %u", what, term->noperands, op->nresults);
  for (uint32_t i = 0; i < op->nresults; i++)
    if (!av_type_equal(term->operands[i]->type, op->results[i].type))
      return AV_INVALID(c, "%s region result %u type mismatch", what, i);
  return true;
}

/* Whether v is an operand of an op inside region r (at any depth). */
static bool read_inside(const av_region *r, const av_value *v) {
  for (uint32_t b = 0; b < r->nblocks; b++)
    for (const av_op *in = r->blocks[b].first; in; in = in->next) {
      for (uint32_t i = 0; i < in->noperands; i++)
        if (in->operands[i] == v) return true;
      for (uint32_t k = 0; k < in->nregions; k++)
        if (read_inside(&in->regions[k], v)) return true;
    }
  return false;
}

static bool lower_while(av_lower *c, const av_op *op) {
  if (op->nregions != 2) return AV_INVALID(c, "expected cond and body regions");
  if (op->nresults != op->noperands) return AV_INVALID(c, "operand and result counts differ");
  for (uint32_t i = 0; i < op->noperands; i++)
    if (!av_type_equal(op->operands[i]->type, op->results[i].type))
      return AV_INVALID(c, "operand %u and result %u types differ", i, i);
  if (!check_args(c, &op->regions[0], "cond", op->noperands, op->operands) ||
      !check_args(c, &op->regions[1], "body", op->noperands, op->operands) ||
      !check_returns(c, &op->regions[1], "body", op))
    return false;
  const av_op *cterm = op->regions[0].blocks[0].last;
  if (!cterm || cterm->noperands != 1 || !cterm->operands[0]->type ||
      cterm->operands[0]->type->kind != AV_TYPE_TENSOR ||
      cterm->operands[0]->type->dtype != AV_DT_PRED || cterm->operands[0]->type->rank != 0)
    return AV_INVALID(c, "cond must return a tensor<i1>");
  av_while_params *p = av_lower_alloc(c, sizeof *p);
  if (!p) return false;
  memset(p, 0, sizeof *p); /* arena memory is not zeroed: cond_prog/body_prog default NULL */
  for (uint32_t i = 0; i < op->noperands && i < 32; i++)
    if (read_inside(&op->regions[0], op->operands[i]) ||
        read_inside(&op->regions[1], op->operands[i]))
      p->captured |= 1u << i;
  p->cond = av_lower_region(c, &op->regions[0]);
  p->body = av_lower_region(c, &op->regions[1]);
  if (!p->cond || !p->body) return false;
  av_step *s = av_emit_op(c, av_step_while, p);
  if (!s) return false;
  size_t *nb = av_lower_alloc(c, (s->nin + 1) * sizeof *nb);
  if (!nb) return false;
  for (uint32_t i = 0; i < s->nin; i++) nb[i] = av_stype(c, s->in[i])->nbytes;
  p->nbytes = nb;
  if (s->nin == op->noperands) { /* no tuples: block arguments are the carried slots */
    p->cond_prog = av_build_scalar_prog(c, &op->regions[0]);
    if (p->cond_prog) p->body_prog = av_build_scalar_prog(c, &op->regions[1]);
    if (c->nerrors == 0) p->loop_prog = av_build_loop_prog(c, op);
  }
  return true;
}

/* The value of an integer scalar known while lowering: a constant, an integer convert of one,
 * a result of a `case` whose selector is known (its branch's returned value), or an argument
 * of a function being inlined whose call passes a known value. This is how a multi-platform
 * jax.export artifact selects its platform: main passes a constant platform index, through
 * `case` ops and calls, to the `case` of each platform-dependent op. */
enum { KNOWN_MAX_DEPTH = 32 };

static bool known_index(const av_lower *c, const av_value *v, int depth, int64_t *out) {
  if (!v || depth > KNOWN_MAX_DEPTH || !v->type || v->type->kind != AV_TYPE_TENSOR ||
      v->type->rank != 0 || !av_dtype_is_int(v->type->dtype))
    return false;
  const av_op *d = v->def;
  if (!d) {
    for (int i = c->inline_depth - 1; i >= 0; i--) {
      const av_func *fn = c->inline_stack[i];
      if (fn->body.nblocks != 1 || v->owner != &fn->body.blocks[0]) continue;
      const av_op *call = c->inline_calls[i];
      return v->index < call->noperands && known_index(c, call->operands[v->index], depth + 1, out);
    }
    return false;
  }
  switch (d->code) {
    case AV_OP_CONSTANT: {
      int64_t raw[2] = {0, 0}; /* room for any integer element */
      const av_attr *a = av_op_dense_attr(d);
      if (!a || !av_attr_dense_copy(a, v->type->dtype, 1, raw)) return false;
      *out = av_read_index(raw, v->type->dtype);
      return true;
    }
    case AV_OP_CONVERT:
      return d->noperands == 1 && known_index(c, d->operands[0], depth + 1, out);
    case AV_OP_CASE: {
      int64_t idx;
      if (d->noperands != 1 || d->nregions < 1 || !known_index(c, d->operands[0], depth + 1, &idx))
        return false;
      if (idx < 0 || idx >= (int64_t)d->nregions) idx = (int64_t)d->nregions - 1;
      const av_region *r = &d->regions[idx];
      const av_op *term = r->nblocks == 1 ? r->blocks[0].last : NULL;
      return term && v->index < term->noperands &&
             known_index(c, term->operands[v->index], depth + 1, out);
    }
    default:
      return false;
  }
}

static bool lower_branches(av_lower *c, const av_op *op, bool is_if) {
  if (op->noperands != 1) return AV_INVALID(c, "expected one operand");
  const av_slot_type *it = av_tensor_of(c, op->operands[0], "selector");
  if (!it) return false;
  if (it->rank != 0) return AV_INVALID(c, "selector must be a scalar");
  if (is_if ? it->dtype != AV_DT_PRED : !av_dtype_is_int(it->dtype))
    return AV_INVALID(c, "selector has the wrong element type");
  if (op->nregions < 1 || (is_if && op->nregions != 2)) return AV_INVALID(c, "bad regions");
  av_branch_params *p = av_lower_alloc(c, sizeof *p);
  const av_block_plan **br = av_lower_alloc(c, op->nregions * sizeof *br);
  if (!p || !br) return false;
  /* A `case` whose selector is known runs one branch: only it is lowered (the others may hold
   * what only another platform runs, e.g. a TPU custom call), as one branch that any index
   * selects. */
  int64_t known;
  if (!is_if && known_index(c, op->operands[0], 0, &known)) {
    if (known < 0 || known >= (int64_t)op->nregions) known = (int64_t)op->nregions - 1;
    const av_region *r = &op->regions[known];
    if (!check_args(c, r, "branch", 0, NULL) || !check_returns(c, r, "branch", op)) return false;
    br[0] = av_lower_region(c, r);
    if (!br[0]) return false;
    p->nbranches = 1;
    p->branches = br;
    p->index_dtype = it->dtype;
    p->is_if = false;
    return av_emit_op(c, av_step_branch, p) != NULL;
  }
  for (uint32_t r = 0; r < op->nregions; r++) {
    if (!check_args(c, &op->regions[r], "branch", 0, NULL) ||
        !check_returns(c, &op->regions[r], "branch", op))
      return false;
    br[r] = av_lower_region(c, &op->regions[r]);
    if (!br[r]) return false;
  }
  p->nbranches = op->nregions;
  p->branches = br;
  p->index_dtype = it->dtype;
  p->is_if = is_if;
  return av_emit_op(c, av_step_branch, p) != NULL;
}

/* Inlined calls nest at most this deep (deeper ones, and recursion, stay real calls), and a
 * program inlines at most this many ops in all (a callee called from many places is copied
 * once per place). */
enum { INLINE_MAX_DEPTH = sizeof(((av_lower *)0)->inline_stack) / sizeof(void *),
       INLINE_MAX_OPS = 1 << 20 };

/* Whether call `op` of `fn`, made at inline depth `depth`, can be inlined: a one-block body
 * that returns what the call expects, not recursive, not too deep. */
static bool inlinable(const av_lower *c, const av_op *op, const av_func *fn, int depth) {
  if (!fn || fn->body.nblocks != 1 || depth >= INLINE_MAX_DEPTH) return false;
  /* recursion stays a real call: a block being lowered must not be lowered again inside
   * itself (its values' slots and liveness are in use) */
  if (fn == c->lowering_fn) return false;
  for (int i = 0; i < c->inline_depth && i < depth; i++)
    if (c->inline_stack[i] == fn) return false;
  const av_block *b = &fn->body.blocks[0];
  const av_op *term = b->last;
  if (b->nargs != op->noperands || !term || term->noperands != op->nresults ||
      (term->code != AV_OP_FUNC_RETURN && term->code != AV_OP_RETURN))
    return false;
  for (uint32_t i = 0; i < b->nargs; i++)
    if (!av_type_equal(b->args[i].type, op->operands[i]->type)) return false;
  for (uint32_t i = 0; i < op->nresults; i++)
    if (!av_type_equal(term->operands[i]->type, op->results[i].type)) return false;
  return true;
}

/* A callee body whose steps can join the caller's: tensors in and out, no effects, and no
 * nested regions but reduction bodies (which read only their own arguments); calls inside it
 * must be spliceable in turn (JAX nests jit-ed functions: jax.random.normal calls _normal,
 * _normal_real, _uniform and threefry2x32, whose elementwise chains then fuse as one). JAX's
 * jnp.where, tril, softmax and log_softmax are such calls too. The ops of nested callees
 * looked at count against `budget` (the program's inlining budget), so that a hostile module
 * of calls fanning out at every level costs little. */
static bool spliceable(const av_lower *c, const av_op *call, const av_func *fn, int depth, uint32_t *budget) {
  for (uint32_t i = 0; i < call->noperands; i++)
    if (!call->operands[i]->type || call->operands[i]->type->kind != AV_TYPE_TENSOR) return false;
  for (uint32_t i = 0; i < call->nresults; i++)
    if (!call->results[i].type || call->results[i].type->kind != AV_TYPE_TENSOR) return false;
  const av_block *b = &fn->body.blocks[0];
  for (const av_op *op = b->first; op; op = op->next) {
    if (op == b->last) break;
    if (depth > c->inline_depth) {
      if (*budget == 0) return false;
      --*budget;
    }
    if (op->code == AV_OP_FUNC_CALL || op->code == AV_OP_CALL) {
      const char *name = av_attr_get_str(op, "callee");
      const av_func *inner = name ? av_module_find_func(c->m, name) : NULL;
      if (!inlinable(c, op, inner, depth + 1) || !spliceable(c, op, inner, depth + 1, budget)) return false;
      continue;
    }
    if (av_op_has_side_effects(op) || (op->nregions > 0 && op->code != AV_OP_REDUCE)) return false;
  }
  return true;
}

static bool in_slots(const int32_t *v, uint32_t n, int32_t x) {
  for (uint32_t i = 0; i < n; i++)
    if (v[i] == x) return true;
  return false;
}

/* Lowers the callee's body straight into the caller's steps: its arguments are the
 * operands' slots, its results become the call's (or are shared into them by an alias step
 * when a result is an argument or returned twice), and what it releases at its end is
 * released by its last step. */
static bool splice_call(av_lower *c, const av_op *op, const av_func *fn) {
  const av_block *b = &fn->body.blocks[0];
  int32_t *args = av_lower_alloc(c, sizeof *args * (op->noperands + 1));
  if (!args) return false;
  for (uint32_t i = 0; i < op->noperands; i++) {
    args[i] = av_vslot(c, op->operands[i]);
    if (args[i] < 0) return av_lower_fail(c, AV_INTERNAL, "operand %u has no slot", i);
  }
  const av_op *call = c->op;
  c->splice_block = b;
  c->splice_args = args;
  c->inline_calls[c->inline_depth] = op;
  c->inline_stack[c->inline_depth++] = fn;
  const av_block_plan *bp = av_lower_region(c, &fn->body);
  c->inline_depth--;
  c->splice_block = NULL;
  c->op = call;
  if (!bp) return false;
  for (uint32_t i = 0; i < bp->nsteps; i++) {
    av_step *s = av_emit(c, NULL, NULL, 0, 0);
    if (!s) return false;
    *s = bp->steps[i];
    s->in_dies = 0;
  }
  /* results: by leaf; a result value takes the callee's slots unless they are the caller's
   * (an argument returned) or an earlier result's */
  const av_op *term = b->last;
  uint32_t nalias = 0;
  int32_t *from = av_lower_alloc(c, sizeof *from * (bp->nresults + 1));
  int32_t *to = av_lower_alloc(c, sizeof *to * (bp->nresults + 1));
  if (!from || !to) return false;
  for (uint32_t r = 0; r < op->nresults; r++) {
    const av_value *tv = term->operands[r];
    int32_t src = av_vslot(c, tv), dst = av_vslot(c, &op->results[r]);
    bool alias = src < 0 || in_slots(args, op->noperands, src);
    for (uint32_t q = 0; q < r && !alias; q++) alias = term->operands[q] == tv;
    if (src < 0 || dst < 0) return av_lower_fail(c, AV_INTERNAL, "result %u has no slot", r);
    if (alias) {
      from[nalias] = src;
      to[nalias++] = dst;
    } else {
      c->slot_of[op->results[r].id] = src;
    }
  }
  /* what the body released at its end, minus the slots that now are the call's results */
  uint32_t ndead = 0;
  int32_t *dead = av_lower_alloc(c, sizeof *dead * (bp->ndead_exit + 1));
  if (!dead) return false;
  for (uint32_t i = 0; i < bp->ndead_exit; i++) {
    int32_t d = bp->dead_at_exit[i];
    bool result = false;
    for (uint32_t r = 0; r < op->nresults && !result; r++) result = av_vslot(c, &op->results[r]) == d;
    if (!result && !in_slots(args, op->noperands, d)) dead[ndead++] = d;
  }
  if (nalias || ndead || !bp->nsteps) { /* a step to share results and hold the releases */
    av_step *s = av_emit(c, av_step_alias, NULL, nalias, nalias);
    if (!s) return false;
    memcpy((int32_t *)s->in, from, sizeof *from * nalias);
    memcpy((int32_t *)s->out, to, sizeof *to * nalias);
    s->dead = dead;
    s->ndead = ndead;
  }
  c->spliced = true;
  return true;
}

bool av_lower_inline_call(av_lower *c, const av_op *op, const av_func *fn, bool *inlined) {
  *inlined = false;
  if (!inlinable(c, op, fn, c->inline_depth)) return true;
  const av_block *b = &fn->body.blocks[0];
  if (c->inlined_ops + b->nops > INLINE_MAX_OPS) return true;
  c->inlined_ops += b->nops;
  uint32_t budget = (uint32_t)(INLINE_MAX_OPS - c->inlined_ops), before = budget;
  bool splice = spliceable(c, op, fn, c->inline_depth, &budget);
  c->inlined_ops += before - budget;
  if (splice) {
    bool ok = splice_call(c, op, fn);
    *inlined = ok;
    return ok;
  }
  av_region_step_params *p = av_lower_alloc(c, sizeof *p);
  if (!p) return false;
  p->isolated = true; /* a function body sees only its arguments */
  c->inline_calls[c->inline_depth] = op;
  c->inline_stack[c->inline_depth++] = fn;
  p->block = av_lower_region(c, &fn->body);
  c->inline_depth--;
  if (!p->block) return false;
  *inlined = true;
  return av_emit_op(c, av_step_region, p) != NULL;
}

bool av_lower_control_op(av_lower *c, const av_op *op, bool *handled) {
  *handled = true;
  switch (op->code) {
    case AV_OP_WHILE: return lower_while(c, op);
    case AV_OP_IF: return lower_branches(c, op, true);
    case AV_OP_CASE: return lower_branches(c, op, false);
    default:
      *handled = false;
      return false;
  }
}
