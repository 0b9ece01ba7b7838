/* Builds an av_loop_prog for a stablehlo.while (see runtime/loop_prog.h). Never reports
 * errors: a loop that does not qualify returns NULL and runs as steps, which handle (and
 * diagnose) everything. */
#include <stdlib.h>
#include <string.h>

#include "compiler/lower_internal.h"
#include "runtime/loop_prog.h"
#include "runtime/scalar_prog.h"

enum {
  MAX_INSTRS = 512, /* per list (invariant / condition / body) */
  MAX_VALUES = 2048,
  MAX_INLINE_DEPTH = 4,
  MAX_CONST_BYTES = 64 * 1024, /* constants a loop program copies for itself */
};

typedef struct vmap {
  const av_value *v;
  uint16_t reg;
} vmap;

typedef struct ilist {
  av_linstr v[MAX_INSTRS];
  uint32_t n;
} ilist;

typedef struct lbuild {
  av_lower *c;
  av_lreg regs[AV_LOOP_MAX_REGS];
  bool invariant[AV_LOOP_MAX_REGS];
  uint32_t nregs;
  vmap map[MAX_VALUES];
  uint32_t nmap;
  ilist pre, cond, body;
  ilist *cur; /* cond or body, for ops that are not invariant */
  size_t scratch;
  /* in-place updates: carried values allowed to have one (bit i), and the body op that
   * updates carried value i in place (-1: none), checked once the body is known */
  uint64_t inplace_ok;
  int inplace_at[64];
} lbuild;

/* Elements and element type of a value usable here: a scalar (rank 0, one element) or a
 * static array. Returns the element count, or -1. */
static int64_t value_elems(const av_value *v, av_dtype *dt) {
  const av_type *t = v->type;
  *dt = AV_DT_INVALID;
  if (!t || t->kind != AV_TYPE_TENSOR || !av_type_is_static(t)) return -1;
  int64_t e = av_type_num_elements(t);
  size_t es = av_dtype_size(t->dtype);
  if (e < 1 || e > ((int64_t)1 << 36) || es == 0 || es > 16) return -1; /* bytes never wrap */
  *dt = t->dtype;
  return e;
}

static int reg_of(const lbuild *b, const av_value *v) {
  for (uint32_t i = b->nmap; i-- > 0;)
    if (b->map[i].v == v) return b->map[i].reg;
  return -1;
}

static bool bind(lbuild *b, const av_value *v, int reg) {
  if (reg < 0 || b->nmap >= MAX_VALUES) return false;
  b->map[b->nmap++] = (vmap){v, (uint16_t)reg};
  return true;
}

static int new_reg(lbuild *b, av_lreg_kind kind, size_t bytes) {
  if (b->nregs >= AV_LOOP_MAX_REGS || bytes > UINT32_MAX) return -1;
  av_lreg *g = &b->regs[b->nregs];
  memset(g, 0, sizeof *g);
  g->kind = kind;
  g->bytes = (uint32_t)bytes;
  if (kind == AV_LR_SCRATCH) { /* carried buffers are laid out once their kind is known */
    g->offset = b->scratch;
    b->scratch += (bytes + 63) & ~(size_t)63;
    if (b->scratch > AV_LOOP_MAX_SCRATCH) return -1;
  }
  b->invariant[b->nregs] = kind == AV_LR_CONST || kind == AV_LR_SLOT || kind == AV_LR_CARRIED_IN;
  return (int)b->nregs++;
}

/* Register of an operand; a value from outside the loop becomes a captured register. */
static int operand(lbuild *b, const av_value *v) {
  int r = reg_of(b, v);
  if (r >= 0) return r;
  av_dtype dt;
  int64_t e = value_elems(v, &dt);
  int32_t slot = av_vslot(b->c, v);
  if (e < 0 || slot < 0 || av_stype(b->c, slot)->token) return -1;
  r = new_reg(b, AV_LR_SLOT, (size_t)e * av_dtype_size(dt));
  if (r < 0) return -1;
  b->regs[r].slot = slot;
  return bind(b, v, r) ? r : -1;
}

/* Appends an op writing a new scratch register for `result`: to the invariant list when all
 * its inputs (nin operands, and a slice's start indices) are invariant, else to the current
 * list. */
static bool emit(lbuild *b, av_linstr ins, int nin, const av_value *result, size_t bytes) {
  bool inv = true;
  for (int i = 0; i < nin; i++) inv = inv && b->invariant[ins.in[i]];
  if (ins.kind == AV_LI_SLICE || ins.kind == AV_LI_UPDATE)
    for (int k = 0; k < ins.ds->rank; k++) inv = inv && b->invariant[ins.idx[k]];
  for (int i = nin; i < 3; i++) ins.in[i] = ins.in[0];
  int r = new_reg(b, AV_LR_SCRATCH, bytes);
  if (r < 0) return false;
  b->invariant[r] = inv;
  ins.out = (uint16_t)r;
  ilist *l = inv ? &b->pre : b->cur;
  if (l->n >= MAX_INSTRS) return false;
  l->v[l->n++] = ins;
  return bind(b, result, r);
}

static bool constant(lbuild *b, const av_op *op) {
  av_dtype dt;
  int64_t e = value_elems(&op->results[0], &dt);
  const av_attr *a = av_op_attr(op, "value");
  size_t bytes = (size_t)(e > 0 ? e : 0) * av_dtype_size(dt);
  /* the constant is materialised again for the program (the steps have their own copy, kept
   * if the loop does not qualify after all): only small ones */
  if (e < 0 || !a || bytes > MAX_CONST_BYTES) return false;
  av_storage *st = av_lower_const_storage(b->c, bytes);
  if (!st || !av_attr_dense_copy(a, dt, e, st->data)) return false;
  int r = new_reg(b, AV_LR_CONST, bytes);
  if (r < 0) return false;
  b->regs[r].data = st->data;
  return bind(b, &op->results[0], r);
}

/* broadcast_in_dim of a scalar (a fill), or one that copies nothing (every operand dim kept,
 * in order, the other result dims 1: the same elements, so the same register). */
static bool broadcast(lbuild *b, const av_op *op) {
  av_dtype it, rt;
  int64_t ie = value_elems(op->operands[0], &it), re = value_elems(&op->results[0], &rt);
  int in = operand(b, op->operands[0]);
  if (ie < 0 || re < 0 || in < 0 || it != rt) return false;
  const av_type *t = op->operands[0]->type, *u = op->results[0].type;
  if (t->rank == 0) {
    av_linstr ins = {.kind = AV_LI_FILL, .in = {(uint16_t)in}, .n = re,
                     .esize = (uint32_t)av_dtype_size(rt)};
    return emit(b, ins, 1, &op->results[0], (size_t)re * av_dtype_size(rt));
  }
  int64_t dims[AV_BOX_MAX_RANK];
  size_t nd = 0;
  if (!av_attr_get_ints(op, "broadcast_dimensions", dims, AV_BOX_MAX_RANK, &nd) || nd != (size_t)t->rank ||
      u->rank > AV_BOX_MAX_RANK)
    return false;
  bool in_order = ie == re;
  for (int i = 0; i < t->rank; i++) {
    if (dims[i] < 0 || dims[i] >= u->rank || (i && dims[i] <= dims[i - 1]) ||
        (t->dims[i] != 1 && t->dims[i] != u->dims[dims[i]]))
      return false;
    in_order = in_order && t->dims[i] == u->dims[dims[i]];
  }
  if (in_order) return bind(b, &op->results[0], in); /* the same elements in the same order */
  /* a vector or matrix repeated along other axes (an RNN's bias over the batch): a box copy,
   * once before the loop when the operand is invariant */
  av_box *box = av_arena_alloc(b->c->a, sizeof *box);
  if (!box) return false;
  int64_t istr[AV_BOX_MAX_RANK];
  av_row_major_strides(t->rank, t->dims, istr);
  box->rank = u->rank;
  for (int k = 0; k < u->rank; k++) {
    box->dims[k] = u->dims[k];
    box->sstride[k] = 0;
  }
  av_row_major_strides(u->rank, u->dims, box->dstride);
  for (int i = 0; i < t->rank; i++)
    if (t->dims[i] != 1) box->sstride[dims[i]] = istr[i];
  av_linstr ins = {.kind = AV_LI_BOX, .in = {(uint16_t)in}, .n = re, .esize = (uint32_t)av_dtype_size(rt),
                   .box = box};
  return emit(b, ins, 1, &op->results[0], (size_t)re * av_dtype_size(rt));
}

/* dynamic_slice, or dynamic_update_slice (in place when its operand is a carried value that
 * may be updated so: the checks that make that safe run once the body is known). */
/* An op that writes a copy of its operand in[0] with part replaced (UPDATE, SCATTER): on a
 * carried array in the body, the first such op updates the carried buffer in place (checked
 * later by unsafe_updates); otherwise a new register, as emit. */
static bool emit_update(lbuild *b, av_linstr ins, int nin, const av_value *result, size_t bytes) {
  uint16_t in = ins.in[0];
  const av_lreg *g = &b->regs[in];
  uint32_t j = g->carried;
  if (b->cur == &b->body && g->kind == AV_LR_CARRIED && j < 64 && (b->inplace_ok >> j & 1) &&
      b->inplace_at[j] < 0 && b->body.n < MAX_INSTRS) {
    ins.out = in; /* the carried buffer itself */
    b->inplace_at[j] = (int)b->body.n;
    b->body.v[b->body.n++] = ins;
    return bind(b, result, in);
  }
  return emit(b, ins, nin, result, bytes);
}

static bool slice_op(lbuild *b, const av_op *op, bool update) {
  uint32_t first = update ? 2 : 1;
  const av_type *ot = op->operands[0]->type;
  av_dtype dt, ut, rt;
  int64_t n = value_elems(op->operands[0], &dt);
  if (n < 0 || ot->rank < 1 || ot->rank > AV_LOOP_MAX_INDICES || op->nresults != 1 ||
      op->noperands != first + (uint32_t)ot->rank || value_elems(&op->results[0], &rt) < 0 ||
      rt != dt)
    return false;
  int r = ot->rank, in = operand(b, op->operands[0]);
  av_dyn_slice_params *p = av_arena_alloc(b->c->a, sizeof *p);
  if (in < 0 || !p) return false;
  memset(p, 0, sizeof *p);
  p->rank = r;
  p->esize = av_dtype_size(dt);
  av_row_major_strides(r, ot->dims, p->strides);
  const av_type *st = update ? op->operands[1]->type : op->results[0].type;
  if (!st || st->kind != AV_TYPE_TENSOR || st->rank != r) return false;
  if (update && (value_elems(op->operands[1], &ut) < 0 || ut != dt)) return false;
  if (!update) {
    int64_t sizes[AV_BOX_MAX_RANK];
    size_t ns = 0;
    if (!av_attr_get_ints(op, "slice_sizes", sizes, AV_BOX_MAX_RANK, &ns) || ns != (size_t)r) return false;
    for (int k = 0; k < r; k++)
      if (sizes[k] != st->dims[k]) return false;
  } else if (!av_type_equal(op->results[0].type, ot)) {
    return false;
  }
  av_linstr ins = {.kind = update ? AV_LI_UPDATE : AV_LI_SLICE, .ds = p,
                   .esize = (uint32_t)p->esize, .n = n};
  for (int k = 0; k < r; k++) {
    p->dims[k] = ot->dims[k];
    p->sizes[k] = st->dims[k];
    if (p->sizes[k] < 0 || p->sizes[k] > p->dims[k]) return false;
    const av_value *iv = op->operands[first + (uint32_t)k];
    av_dtype idt;
    int ir = operand(b, iv);
    if (ir < 0 || value_elems(iv, &idt) != 1 || iv->type->rank != 0 || !av_dtype_is_int(idt))
      return false;
    p->index_dtype[k] = idt;
    ins.idx[k] = (uint16_t)ir;
  }
  ins.in[0] = (uint16_t)in;
  if (!update)
    return emit(b, ins, 1, &op->results[0], (size_t)av_type_num_elements(st) * p->esize);
  int u = operand(b, op->operands[1]);
  if (u < 0) return false;
  ins.in[1] = (uint16_t)u;
  ins.in[2] = (uint16_t)in;
  return emit_update(b, ins, 2, &op->results[0], (size_t)n * p->esize);
}

/* The window of `want` sizes of a replacing scatter with a single index vector:
 * operand dims in inserted_window_dims have size 1, the others take the update's dims in
 * order (update_window_dims = every update dim); no batching dims. False otherwise. */
/* A list attribute that may be absent (then empty); false when present but unreadable. */
static bool ints_or_none(const av_op *op, const char *name, int64_t *out, size_t *n) {
  *n = 0;
  return !av_op_attr(op, name) || av_attr_get_ints(op, name, out, AV_BOX_MAX_RANK, n);
}

static bool scatter_window(const av_op *op, const av_type *ot, const av_type *ut, int64_t nidx,
                           av_lscatter *sc) {
  int64_t uw[AV_BOX_MAX_RANK], iw[AV_BOX_MAX_RANK], sd[AV_BOX_MAX_RANK], bd[AV_BOX_MAX_RANK], ivd;
  size_t nuw, niw, nsd, nb, nbi;
  if (!ints_or_none(op, "input_batching_dims", bd, &nb) || nb ||
      !ints_or_none(op, "scatter_indices_batching_dims", bd, &nbi) || nbi ||
      !ints_or_none(op, "update_window_dims", uw, &nuw) || !ints_or_none(op, "inserted_window_dims", iw, &niw) ||
      !av_attr_get_ints(op, "scatter_dims_to_operand_dims", sd, AV_BOX_MAX_RANK, &nsd) ||
      !av_attr_get_int(op, "index_vector_dim", &ivd) || ivd != 0 || (int64_t)nsd != nidx)
    return false;
  int r = ot->rank;
  if ((int)nuw != ut->rank || (int)(nuw + niw) != r) return false;
  for (size_t k = 0; k < nuw; k++)
    if (uw[k] != (int64_t)k) return false;
  bool inserted[AV_BOX_MAX_RANK] = {false};
  for (size_t k = 0; k < niw; k++) {
    if (iw[k] < 0 || iw[k] >= r || inserted[iw[k]]) return false;
    inserted[iw[k]] = true;
  }
  memset(sc, 0, sizeof *sc);
  for (int d = 0, u = 0; d < r; d++) {
    sc->ds.dims[d] = ot->dims[d];
    sc->ds.sizes[d] = inserted[d] ? 1 : ut->dims[u++];
    if (sc->ds.sizes[d] < 0 || sc->ds.sizes[d] > sc->ds.dims[d]) return false;
    sc->comp[d] = -1;
  }
  for (size_t j = 0; j < nsd; j++) {
    if (sd[j] < 0 || sd[j] >= r || sc->comp[sd[j]] >= 0) return false;
    sc->comp[sd[j]] = (int8_t)j;
  }
  sc->ds.rank = r;
  av_row_major_strides(r, ot->dims, sc->ds.strides);
  return true;
}

/* x.at[i].set(v) and x.at[i, j].set(row): a scatter of one window whose update computation
 * only returns the update (the pivots-to-permutation loop of an LU solve, an array filled
 * one entry per iteration), run as AV_LI_SCATTER. */
static bool scatter_op(lbuild *b, const av_op *op) {
  if (op->noperands != 3 || op->nresults != 1 || op->nregions != 1 ||
      !av_scatter_returns_updates(&op->regions[0], 1))
    return false;
  const av_type *ot = op->operands[0]->type, *it = op->operands[1]->type, *ut = op->operands[2]->type;
  av_dtype dt, idt, udt;
  int64_t n = value_elems(op->operands[0], &dt), nidx = value_elems(op->operands[1], &idt);
  if (n < 0 || nidx < 1 || ot->rank < 1 || ot->rank > AV_LOOP_MAX_INDICES || it->rank != 1 ||
      !av_dtype_is_int(idt) || value_elems(op->operands[2], &udt) < 0 || udt != dt ||
      !av_type_equal(op->results[0].type, ot))
    return false;
  av_lscatter *sc = av_arena_alloc(b->c->a, sizeof *sc);
  if (!sc || !scatter_window(op, ot, ut, nidx, sc)) return false;
  sc->index_dtype = idt;
  sc->ds.esize = av_dtype_size(dt);
  int in = operand(b, op->operands[0]), iv = operand(b, op->operands[1]), u = operand(b, op->operands[2]);
  if (in < 0 || iv < 0 || u < 0) return false;
  av_linstr ins = {.kind = AV_LI_SCATTER, .scatter = sc, .esize = (uint32_t)sc->ds.esize, .n = n,
                   .in = {(uint16_t)in, (uint16_t)u, (uint16_t)iv}};
  return emit_update(b, ins, 3, &op->results[0], (size_t)n * sc->ds.esize);
}

static bool elementwise(lbuild *b, const av_op *op) {
  int arity = av_ew_arity(op->code);
  if (arity < 1 || arity > 3 || op->noperands != (uint32_t)arity || op->nresults != 1) return false;
  av_dtype rt, t0 = AV_DT_PRED, ti;
  int64_t n = value_elems(&op->results[0], &rt);
  av_linstr ins = {.kind = AV_LI_EW, .n = n};
  for (int i = 0; i < arity; i++) {
    int r = operand(b, op->operands[i]);
    if (r < 0 || value_elems(op->operands[i], &ti) != n ||
        op->operands[i]->type->rank != op->results[0].type->rank)
      return false;
    if (i == 0) t0 = ti;
    if (ti != t0) return false;
    ins.in[i] = (uint16_t)r;
  }
  av_cmp_dir dir;
  av_cmp_type ct;
  if (n < 0 || !(ins.ew = av_ew_kernel_of(b->c, op, t0, rt, &dir, &ct))) return false;
  int fast = n == 1 && op->results[0].type->rank == 0 && arity == 2 ? av_scalar_fast_form(op->code, t0, ct) : -1;
  if (fast >= 0) {
    ins.kind = (uint8_t)(AV_LI_FAST_BASE + fast);
    ins.cmp_dir = (uint8_t)dir;
  }
  return emit(b, ins, arity, &op->results[0], (size_t)n * av_dtype_size(rt));
}

static bool convert(lbuild *b, const av_op *op) {
  av_dtype it, rt;
  int64_t n = value_elems(&op->results[0], &rt);
  int in = operand(b, op->operands[0]);
  if (n < 0 || in < 0 || value_elems(op->operands[0], &it) != n) return false;
  av_convert *cv = av_arena_alloc(b->c->a, sizeof *cv);
  if (!cv || !av_convert_prepare(it, rt, cv)) return false;
  av_linstr ins = {.kind = AV_LI_CONVERT, .in = {(uint16_t)in}, .n = n, .cv = cv};
  return emit(b, ins, 1, &op->results[0], (size_t)n * av_dtype_size(rt));
}

static bool select_op(lbuild *b, const av_op *op) {
  if (op->noperands != 3) return false;
  av_dtype pt, at, ct, rt;
  int64_t n = value_elems(&op->results[0], &rt);
  int64_t pn = value_elems(op->operands[0], &pt);
  int p = operand(b, op->operands[0]), x = operand(b, op->operands[1]), y = operand(b, op->operands[2]);
  if (n < 0 || pn < 0 || p < 0 || x < 0 || y < 0 || pt != AV_DT_PRED ||
      value_elems(op->operands[1], &at) != n || value_elems(op->operands[2], &ct) != n ||
      at != rt || ct != rt)
    return false;
  bool pred_scalar = op->operands[0]->type->rank == 0;
  if (!pred_scalar && pn != n) return false;
  av_linstr ins = {.kind = AV_LI_SELECT, .in = {(uint16_t)p, (uint16_t)x, (uint16_t)y}, .n = n,
                   .esize = (uint32_t)av_dtype_size(rt), .pred_scalar = pred_scalar};
  return emit(b, ins, 3, &op->results[0], (size_t)n * av_dtype_size(rt));
}

/* dot / dot_general through the dot kernel (its own checks and BLAS or small-product paths). */
static bool dot_op(lbuild *b, const av_op *op) {
  if (op->noperands != 2 || op->nresults != 1) return false;
  const av_value *vals[3] = {op->operands[0], op->operands[1], &op->results[0]};
  av_ldot *t = av_arena_alloc(b->c->a, sizeof *t);
  av_dot_params *dp = av_arena_alloc(b->c->a, sizeof *dp);
  if (!t || !dp) return false;
  int64_t n[3];
  for (int k = 0; k < 3; k++) {
    n[k] = value_elems(vals[k], &t->dtype[k]);
    if (n[k] < 0) return false;
    t->rank[k] = vals[k]->type->rank;
    /* a scalar's type has no dims array (NULL): the copy is never empty, and reads rank dims */
    int64_t *dims = av_arena_alloc(b->c->a, sizeof(int64_t) * (size_t)(t->rank[k] + 1));
    if (!dims) return false;
    if (t->rank[k]) memcpy(dims, vals[k]->type->dims, sizeof(int64_t) * (size_t)t->rank[k]);
    t->dims[k] = dims;
  }
  if (av_dot_params_of(op, vals[0]->type, vals[1]->type, vals[2]->type, dp)) return false;
  t->p = dp;
  int l = operand(b, vals[0]), r = operand(b, vals[1]);
  if (l < 0 || r < 0) return false;
  av_linstr ins = {.kind = AV_LI_DOT, .in = {(uint16_t)l, (uint16_t)r}, .dot = t};
  return emit(b, ins, 2, vals[2], (size_t)n[2] * av_dtype_size(t->dtype[2]));
}

static const av_op *walk_block(lbuild *b, const av_block *blk, int depth);

/* func.call / stablehlo.call of a one-block function: its body, inlined. */
static bool call(lbuild *b, const av_op *op, int depth) {
  const char *name = av_attr_get_str(op, "callee");
  const av_func *fn = name ? av_module_find_func(b->c->m, name) : NULL;
  if (!fn || depth >= MAX_INLINE_DEPTH || fn->body.nblocks != 1) return false;
  const av_block *blk = &fn->body.blocks[0];
  if (blk->nargs != op->noperands) return false;
  for (uint32_t i = 0; i < op->noperands; i++)
    if (!bind(b, &blk->args[i], operand(b, op->operands[i]))) return false;
  const av_op *term = walk_block(b, blk, depth + 1);
  if (!term || term->noperands != op->nresults) return false;
  for (uint32_t i = 0; i < op->nresults; i++)
    if (!bind(b, &op->results[i], reg_of(b, term->operands[i]))) return false;
  return true;
}

/* Emits the ops of `blk` (arguments already bound); returns its terminator, or NULL. */
static const av_op *walk_block(lbuild *b, const av_block *blk, int depth) {
  for (const av_op *op = blk->first; op; op = op->next) {
    if (op->code == AV_OP_RETURN || op->code == AV_OP_FUNC_RETURN) {
      for (uint32_t i = 0; i < op->noperands; i++)
        if (operand(b, op->operands[i]) < 0) return NULL;
      return op->next ? NULL : op;
    }
    if (op->code == AV_OP_SCATTER) {
      if (!scatter_op(b, op)) return NULL;
      continue;
    }
    if (op->nregions) return NULL;
    bool ok;
    switch (op->code) {
      case AV_OP_CONSTANT: ok = op->nresults == 1 && constant(b, op); break;
      case AV_OP_BROADCAST_IN_DIM: ok = op->noperands == 1 && broadcast(b, op); break;
      case AV_OP_RESHAPE: {
        av_dtype it, rt;
        int in = op->noperands == 1 ? operand(b, op->operands[0]) : -1;
        ok = in >= 0 && value_elems(op->operands[0], &it) >= 0 &&
             value_elems(&op->results[0], &rt) >= 0 && it == rt &&
             av_type_num_elements(op->operands[0]->type) == av_type_num_elements(op->results[0].type) &&
             bind(b, &op->results[0], in);
        break;
      }
      case AV_OP_CONVERT: ok = op->noperands == 1 && convert(b, op); break;
      case AV_OP_SELECT: ok = select_op(b, op); break;
      case AV_OP_DYNAMIC_SLICE: ok = slice_op(b, op, false); break;
      case AV_OP_DYNAMIC_UPDATE_SLICE: ok = slice_op(b, op, true); break;
      case AV_OP_DOT: case AV_OP_DOT_GENERAL: ok = dot_op(b, op); break;
      case AV_OP_FUNC_CALL: case AV_OP_CALL: ok = call(b, op, depth); break;
      default: ok = elementwise(b, op); break;
    }
    if (!ok) return NULL;
  }
  return NULL;
}

static bool reads(const av_linstr *s, uint16_t r) {
  if (s->in[0] == r || s->in[1] == r || s->in[2] == r) return true;
  if (s->kind == AV_LI_SLICE || s->kind == AV_LI_UPDATE)
    for (int k = 0; k < s->ds->rank; k++)
      if (s->idx[k] == r) return true;
  return false;
}

/* Carried values whose in-place update is unsafe (bit i): the body must return the updated
 * array at the same position and nowhere else, and read the carried register no more after
 * the update (a read there could mean the old value; the check cannot tell, so it refuses). */
static uint64_t unsafe_updates(const lbuild *b, const uint16_t *carried, const uint16_t *results,
                               uint32_t nc) {
  uint64_t bad = 0;
  for (uint32_t j = 0; j < nc; j++) {
    int at = b->inplace_at[j];
    if (at < 0) continue;
    bool ok = results[j] == carried[j];
    for (uint32_t k = 0; k < nc && ok; k++) ok = k == j || results[k] != carried[j];
    for (uint32_t i = (uint32_t)at + 1; i < b->body.n && ok; i++) ok = !reads(&b->body.v[i], carried[j]);
    if (!ok) bad |= 1ull << j;
  }
  return bad;
}

/* Places the carried buffers once their kinds are known; false when they do not fit. */
static bool layout_carried(lbuild *b, const uint16_t *carried, uint32_t nc) {
  size_t own = 0;
  for (uint32_t i = 0; i < nc; i++) {
    av_lreg *g = &b->regs[carried[i]];
    size_t room = ((size_t)g->bytes + 63) & ~(size_t)63;
    if (g->kind == AV_LR_CARRIED_IN) continue;
    if (g->kind == AV_LR_CARRIED_OWN) { /* in its own storage, not in the scratch block */
      own += room;
      continue;
    }
    g->offset = b->scratch;
    b->scratch += 2 * room;
  }
  return own <= AV_LOOP_MAX_STATE && b->scratch <= AV_LOOP_MAX_SCRATCH;
}

static bool writes_between(const ilist *l, uint32_t from, uint32_t to, uint16_t r) {
  for (uint32_t m = from; m < to; m++)
    if (l->v[m].out == r) return true;
  return false;
}

/* The inline pair class (AV_LPAIR_*) of an inline scalar op and its index there, or -1 */
static int pair_class(uint8_t kind, uint8_t *op) {
  if (kind < AV_LI_FAST_BASE || kind >= AV_LI_PAIR_BASE) return -1;
  int f = kind - AV_LI_FAST_BASE;
  static const struct { int first, last, cls; } forms[] = {
      {AV_SF_ADD_F32, AV_SF_DIV_F32, AV_LPAIR_F32}, {AV_SF_ADD_F64, AV_SF_DIV_F64, AV_LPAIR_F64},
      {AV_SF_ADD_I32, AV_SF_MUL_I32, AV_LPAIR_I32}, {AV_SF_ADD_I64, AV_SF_MUL_I64, AV_LPAIR_I64}};
  for (unsigned q = 0; q < sizeof forms / sizeof *forms; q++)
    if (f >= forms[q].first && f <= forms[q].last) {
      *op = (uint8_t)(f - forms[q].first);
      return forms[q].cls;
    }
  return -1;
}

/* Fuses a binary +, -, *, / of the body whose result only one other such op of the same
 * type reads into that op (runtime/kernels/elementwise_pair.c): one loop instead of two, the
 * intermediate never stored; two inline scalar ops become one AV_LI_PAIR_BASE instruction.
 * `keep` lists registers read after the iteration (results, the condition). (Invariant ops
 * run once; their registers are read by every list.) */
static bool fuse_pairs(lbuild *b, ilist *l, const uint16_t *keep, uint32_t nkeep) {
  for (uint32_t i = 0; i < l->n;) {
    const av_linstr *s = &l->v[i];
    bool kept = false;
    for (uint32_t k = 0; k < nkeep; k++) kept = kept || keep[k] == s->out;
    int reader = -1, nreaders = 0;
    for (uint32_t m = i + 1; m < l->n; m++)
      if (reads(&l->v[m], s->out)) {
        reader = (int)m;
        nreaders++;
      }
    av_linstr *t = nreaders == 1 ? &l->v[reader] : NULL;
    bool left = t && t->in[0] == s->out;
    uint8_t op1 = 0, op2 = 0;
    int cls = t && !kept && t->in[0] != t->in[1] ? pair_class(s->kind, &op1) : -1;
    if (cls >= 0 && pair_class(t->kind, &op2) == cls && !writes_between(l, i + 1, (uint32_t)reader, s->in[0]) &&
        !writes_between(l, i + 1, (uint32_t)reader, s->in[1])) { /* two inline scalar ops */
      uint16_t other = left ? t->in[1] : t->in[0];
      *t = (av_linstr){.kind = (uint8_t)(AV_LI_PAIR_BASE + cls), .op1 = op1, .op2 = op2, .pair_left = left,
                       .in = {s->in[0], s->in[1], other}, .out = t->out, .n = 1};
      memmove(&l->v[i], &l->v[i + 1], (l->n - i - 1) * sizeof *s);
      l->n--;
      continue;
    }
    av_ew_fn fn = t && !kept && s->kind == AV_LI_EW && t->kind == AV_LI_EW && t->n == s->n &&
                          t->in[0] != t->in[1]
                      ? av_ew_pair_fn(s->ew, t->ew, left) : NULL;
    if (!fn || writes_between(l, i + 1, (uint32_t)reader, s->in[0]) ||
        writes_between(l, i + 1, (uint32_t)reader, s->in[1])) {
      i++;
      continue;
    }
    av_ew_kernel *k = av_arena_alloc(b->c->a, sizeof *k);
    if (!k) return false;
    memset(k, 0, sizeof *k); /* op AV_OP_UNKNOWN: a pair is not half of another */
    k->nin = 3;
    k->fn = fn;
    uint16_t other = left ? t->in[1] : t->in[0];
    t->ew = k;
    t->in[0] = s->in[0];
    t->in[1] = s->in[1];
    t->in[2] = other;
    memmove(&l->v[i], &l->v[i + 1], (l->n - i - 1) * sizeof *s);
    l->n--;
  }
  return true;
}

/* Index of the body instruction writing register `r`, or -1. */
static int writer(const lbuild *b, uint16_t r) {
  for (uint32_t i = 0; i < b->body.n; i++)
    if (b->body.v[i].out == r) return (int)i;
  return -1;
}

/* The counted-loop form of runtime/loop_prog.h, if the loop has it: the condition is one
 * signed `i < limit` / `i <= limit` on a carried scalar i (copied between iterations, not
 * updated in place) with an invariant limit, and the body returns `i + step` (step
 * invariant) as the next i. When no other instruction and no other result reads i or
 * i + step, the increment moves to the end of the body, where the counted run leaves it out. */
static av_lcount *counted(lbuild *b, const uint16_t *carried, const uint16_t *results, uint32_t nc,
                          int cond_reg) {
  if (b->cond.n != 1) return NULL;
  const av_linstr *cmp = &b->cond.v[0];
  bool s32 = cmp->kind == AV_LI_FAST_BASE + AV_SF_CMP_S32, s64 = cmp->kind == AV_LI_FAST_BASE + AV_SF_CMP_S64;
  uint16_t i = cmp->in[0], limit = cmp->in[1];
  if (!(s32 || s64) || cmp->out != cond_reg || (cmp->cmp_dir != AV_CMP_LT && cmp->cmp_dir != AV_CMP_LE) ||
      b->regs[i].kind != AV_LR_CARRIED || !b->invariant[limit])
    return NULL;
  uint32_t j = b->regs[i].carried;
  if (j >= nc || carried[j] != i) return NULL;
  int at = writer(b, results[j]);
  if (at < 0) return NULL;
  const av_linstr *inc = &b->body.v[at];
  uint16_t step = inc->in[0] == i ? inc->in[1] : inc->in[0];
  if (inc->kind != AV_LI_FAST_BASE + (s32 ? AV_SF_ADD_I32 : AV_SF_ADD_I64) ||
      (inc->in[0] != i && inc->in[1] != i) || !b->invariant[step])
    return NULL;
  av_lcount *k = av_arena_alloc(b->c->a, sizeof *k);
  if (!k) return NULL;
  *k = (av_lcount){.carried = (uint16_t)j, .limit = limit, .step = step,
                   .dtype = s32 ? AV_DT_S32 : AV_DT_S64,
                   .inclusive = cmp->cmp_dir == AV_CMP_LE};
  bool alone = true;
  for (uint32_t m = 0; m < b->body.n && alone; m++)
    alone = (int)m == at || (!reads(&b->body.v[m], i) && !reads(&b->body.v[m], results[j]));
  for (uint32_t m = 0; m < nc && alone; m++)
    alone = m == j || (results[m] != i && results[m] != results[j]);
  if (alone) { /* nothing after it reads what it writes, and nothing writes what it reads */
    av_linstr t = b->body.v[at];
    memmove(&b->body.v[at], &b->body.v[at + 1], (b->body.n - (uint32_t)at - 1) * sizeof t);
    b->body.v[b->body.n - 1] = t;
    k->drop_increment = true;
  }
  return k;
}

static void *arena_copy(av_lower *c, const void *src, size_t bytes) {
  return av_arena_memdup(c->a, src, bytes ? bytes : 1);
}

/* One attempt with in-place updates allowed for the carried values in `inplace_ok`; on a
 * refusal because some of them are unsafe, *bad says which. */
static const av_loop_prog *build(av_lower *c, const av_op *op, uint64_t inplace_ok, uint64_t *bad) {
  uint32_t nc = op->noperands;
  const av_block *cb = &op->regions[0].blocks[0], *bb = &op->regions[1].blocks[0];
  const av_op *ret = bb->last;
  lbuild *b = malloc(sizeof *b); /* large: every table is filled before it is read */
  if (!b || !ret || ret->noperands != nc) {
    free(b);
    return NULL;
  }
  b->c = c;
  b->nregs = b->nmap = 0;
  b->pre.n = b->cond.n = b->body.n = 0;
  b->scratch = 0;
  b->inplace_ok = inplace_ok;
  for (int i = 0; i < 64; i++) b->inplace_at[i] = -1;
  *bad = 0;
  av_loop_prog *p = NULL;
  uint16_t carried[64], results[64];
  bool swap[64];
  for (uint32_t i = 0; i < nc; i++) {
    av_dtype dt;
    int64_t e = value_elems(&op->results[i], &dt);
    /* a value the body returns unchanged is read where it came in, never copied */
    av_lreg_kind kind = ret->operands[i] == &bb->args[i] ? AV_LR_CARRIED_IN : AV_LR_CARRIED;
    int r = e < 0 ? -1 : new_reg(b, kind, (size_t)e * av_dtype_size(dt));
    if (r < 0 || !bind(b, &cb->args[i], r) || !bind(b, &bb->args[i], r)) goto done;
    b->regs[r].carried = i;
    carried[i] = (uint16_t)r;
  }
  b->cur = &b->cond;
  const av_op *cterm = walk_block(b, cb, 0);
  if (!cterm || cterm->noperands != 1) goto done;
  int cond_reg = reg_of(b, cterm->operands[0]);
  av_dtype pt;
  if (cond_reg < 0 || value_elems(cterm->operands[0], &pt) != 1 || pt != AV_DT_PRED ||
      cterm->operands[0]->type->rank != 0)
    goto done;
  b->cur = &b->body;
  uint32_t body_first_reg = b->nregs;
  const av_op *bterm = walk_block(b, bb, 0);
  if (!bterm || bterm->noperands != nc) goto done;
  for (uint32_t i = 0; i < nc; i++) results[i] = (uint16_t)reg_of(b, bterm->operands[i]);
  *bad = unsafe_updates(b, carried, results, nc);
  if (*bad) goto done;
  for (uint32_t i = 0; i < nc; i++)
    if (b->inplace_at[i] >= 0) b->regs[carried[i]].kind = AV_LR_CARRIED_OWN;
  if (!layout_carried(b, carried, nc)) goto done;
  for (uint32_t i = 0; i < nc; i++) {
    uint16_t r = results[i];
    /* swapping needs a register the body itself writes every iteration, for one value */
    swap[i] = r >= body_first_reg && b->regs[r].kind == AV_LR_SCRATCH && !b->invariant[r];
    for (uint32_t j = 0; j < nc && swap[i]; j++)
      if (j != i && results[j] == r) swap[i] = false;
  }
  uint16_t keep[65];
  memcpy(keep, results, nc * sizeof *keep);
  keep[nc] = (uint16_t)cond_reg;
  if (!fuse_pairs(b, &b->body, keep, nc + 1)) goto done;
  p = av_arena_alloc(c->a, sizeof *p);
  if (!p) goto done;
  p->count = counted(b, carried, results, nc, cond_reg);
  p->nregs = b->nregs;
  p->regs = arena_copy(c, b->regs, b->nregs * sizeof *b->regs);
  p->pre = arena_copy(c, b->pre.v, b->pre.n * sizeof *b->pre.v);
  p->npre = b->pre.n;
  p->cond = arena_copy(c, b->cond.v, b->cond.n * sizeof *b->cond.v);
  p->ncond = b->cond.n;
  p->body = arena_copy(c, b->body.v, b->body.n * sizeof *b->body.v);
  p->nbody = b->body.n;
  p->ncarried = nc;
  p->carried_reg = arena_copy(c, carried, nc * sizeof *carried);
  p->result_reg = arena_copy(c, results, nc * sizeof *results);
  p->swap = arena_copy(c, swap, nc * sizeof *swap);
  p->cond_reg = (uint16_t)cond_reg;
  p->scratch_bytes = b->scratch;
  if (!p->regs || !p->pre || !p->cond || !p->body || !p->carried_reg || !p->result_reg || !p->swap)
    p = NULL;
done:
  free(b);
  return p;
}

const av_loop_prog *av_build_loop_prog(av_lower *c, const av_op *op) {
  uint32_t nc = op->noperands;
  if (op->nregions != 2 || op->regions[0].nblocks != 1 || op->regions[1].nblocks != 1 ||
      nc == 0 || nc > 64 || op->regions[0].blocks[0].nargs != nc ||
      op->regions[1].blocks[0].nargs != nc)
    return NULL;
  uint64_t bad = 0;
  const av_loop_prog *p = build(c, op, ~(uint64_t)0, &bad);
  if (!p && bad) p = build(c, op, ~bad, &bad); /* again, copying where in place is unsafe */
  return p;
}
