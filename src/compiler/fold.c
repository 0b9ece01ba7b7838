/* Rewrites before lowering that spare the program a materialised intermediate.
 *
 * A pad folds into the reduce_window that reads it: reduce_window(pad(x, v, lo, hi, interior),
 * init) with v the init value is reduce_window(x, init) with padding lo (+ its own) and base
 * dilation interior + 1, since the window reads the init value at padding and at dilation
 * holes exactly where the pad put v. JAX writes the gradient of sum and average pooling this
 * way (the cotangent padded with interior zeros, then summed over stride-1 windows): the
 * padded array, 4x the cotangent for 2x2 pooling, is never materialised then. The pad stays
 * for its other users; with none left, the lowering drops it as dead code.
 *
 * A transpose of a matrix product folds into the product: transpose(dot_general(a, b)) with
 * no batch dimensions and permutation [1, 0] is dot_general(b, a) with the operands' roles
 * swapped (JAX writes every weight gradient x^T g of a dense layer as the transpose of
 * g^T x). The GEMM writes the result in the wanted order instead of a second pass copying
 * it. Only when the product has no other use (it would be computed twice). */
#include "compiler/fold.h"

#include <string.h>

#include "compiler/attrs.h"
#include "ir/dtype.h"

enum { FOLD_MAX_RANK = 8 };

/* The value v stands for when it is a scalar broadcast or reshaped to a scalar. */
static const av_value *scalar_source(const av_value *v) {
  for (int hops = 0; hops < 4 && v && v->def; hops++) {
    const av_op *d = v->def;
    if ((d->code != AV_OP_BROADCAST_IN_DIM && d->code != AV_OP_RESHAPE) || d->noperands != 1)
      break;
    const av_type *a = d->operands[0]->type, *b = v->type;
    if (!a || !b || a->kind != AV_TYPE_TENSOR || b->kind != AV_TYPE_TENSOR || a->rank != 0 ||
        b->rank != 0 || a->dtype != b->dtype || a->quant || b->quant)
      break;
    v = d->operands[0];
  }
  return v;
}

static bool all_ones(const int64_t *v, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (v[i] != 1) return false;
  return true;
}

/* Puts `value` under `name` in attrs (n entries, room for one more): replaced or added. */
static void put_attr(av_named_attr *attrs, uint32_t *n, const char *name, const av_attr *value) {
  for (uint32_t i = 0; i < *n; i++)
    if (strcmp(attrs[i].name, name) == 0) {
      attrs[i].value = value;
      return;
    }
  attrs[(*n)++] = (av_named_attr){name, value};
}

static void fold_pad(av_module *m, av_op *rw) {
  if (rw->noperands != 2 || rw->nresults != 1 || rw->nregions != 1) return;
  const av_value *x = rw->operands[0];
  av_op *pad = x->def;
  if (!pad || pad->code != AV_OP_PAD || pad->noperands != 2 || pad->nresults != 1) return;
  const av_type *pt = x->type, *it = pad->operands[0]->type;
  if (!pt || !it || pt->kind != AV_TYPE_TENSOR || it->kind != AV_TYPE_TENSOR || pt->quant ||
      it->quant || pt->rank != it->rank || pt->dtype != it->dtype || pt->rank < 1 ||
      pt->rank > FOLD_MAX_RANK)
    return;
  if (scalar_source(pad->operands[1]) != scalar_source(rw->operands[1])) return;
  size_t r = (size_t)pt->rank, n;
  int64_t lo[FOLD_MAX_RANK], hi[FOLD_MAX_RANK], in[FOLD_MAX_RANK];
  if (!av_attr_get_ints(pad, "edge_padding_low", lo, r, &n) || n != r ||
      !av_attr_get_ints(pad, "edge_padding_high", hi, r, &n) || n != r ||
      !av_attr_get_ints(pad, "interior_padding", in, r, &n) || n != r)
    return;
  int64_t bdil[FOLD_MAX_RANK], wpad[2 * FOLD_MAX_RANK];
  if (av_op_attr(rw, "base_dilations") &&
      (!av_attr_get_ints(rw, "base_dilations", bdil, r, &n) || n != r || !all_ones(bdil, r)))
    return;
  if (!av_op_attr(rw, "padding")) {
    memset(wpad, 0, sizeof wpad);
  } else if (!av_attr_get_ints(rw, "padding", wpad, 2 * r, &n) || n != 2 * r) {
    return;
  }
  /* only growing pads (a negative one crops); amounts the lowering accepts stay in range */
  for (size_t k = 0; k < r; k++) {
    if (lo[k] < 0 || hi[k] < 0 || in[k] < 0 || lo[k] > INT32_MAX / 4 || hi[k] > INT32_MAX / 4 ||
        in[k] > INT32_MAX / 4 || wpad[2 * k] < -INT32_MAX / 4 || wpad[2 * k] > INT32_MAX / 4 ||
        wpad[2 * k + 1] < -INT32_MAX / 4 || wpad[2 * k + 1] > INT32_MAX / 4)
      return;
    bdil[k] = in[k] + 1;
    wpad[2 * k] += lo[k];
    wpad[2 * k + 1] += hi[k];
  }
  /* dense i64 tensors, as StableHLO writes them (dumps print the folded program) */
  int64_t bdims[1] = {(int64_t)r}, pdims[2] = {(int64_t)r, 2};
  const av_type *bt = av_type_tensor(m, AV_DT_S64, 1, bdims), *ptt = av_type_tensor(m, AV_DT_S64, 2, pdims);
  const av_attr *b = bt ? av_attr_dense(m, bt, bdil, sizeof *bdil * r, false, false) : NULL;
  const av_attr *p = ptt ? av_attr_dense(m, ptt, wpad, sizeof *wpad * 2 * r, false, false) : NULL;
  av_named_attr *attrs = av_arena_calloc(&m->arena, rw->nattrs + 2, sizeof *attrs);
  if (!b || !p || !attrs) return; /* out of memory: the op stays as it was */
  uint32_t nattrs = rw->nattrs;
  if (nattrs) memcpy(attrs, rw->attrs, sizeof *attrs * nattrs);
  put_attr(attrs, &nattrs, "base_dilations", b);
  put_attr(attrs, &nattrs, "padding", p);
  rw->attrs = attrs;
  rw->nattrs = nattrs;
  rw->operands[0] = pad->operands[0];
}

/* "lhs_X" <-> "rhs_X" */
static const char *swap_side(const char *name) {
  static const char *const pairs[][2] = {
      {"lhs_batching_dimensions", "rhs_batching_dimensions"},
      {"lhs_contracting_dimensions", "rhs_contracting_dimensions"},
      {"lhs_precision_type", "rhs_precision_type"},
      {"lhs_component_count", "rhs_component_count"},
  };
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
    if (strcmp(name, pairs[i][0]) == 0) return pairs[i][1];
    if (strcmp(name, pairs[i][1]) == 0) return pairs[i][0];
  }
  return name;
}

static void fold_transpose_dot(av_module *m, const av_region *fn_body, av_op *tr) {
  if (tr->noperands != 1 || tr->nresults != 1 || tr->nregions != 0) return;
  const av_value *x = tr->operands[0];
  av_op *dot = x->def;
  if (!dot || dot->code != AV_OP_DOT_GENERAL || dot->noperands != 2 || dot->nresults != 1 ||
      dot->nregions != 0)
    return;
  const av_type *rt = x->type, *a = dot->operands[0]->type, *b = dot->operands[1]->type;
  if (!rt || !a || !b || rt->kind != AV_TYPE_TENSOR || a->kind != AV_TYPE_TENSOR ||
      b->kind != AV_TYPE_TENSOR || rt->rank != 2 || rt->quant || a->quant || b->quant)
    return;
  int64_t perm[2], batch[1];
  size_t n;
  if (!av_attr_get_ints(tr, "permutation", perm, 2, &n) || n != 2 || perm[0] != 1 || perm[1] != 0)
    return;
  for (uint32_t i = 0; i < dot->nattrs; i++) { /* no batch dimensions; every attribute known */
    const char *nm = dot->attrs[i].name;
    if (strcmp(nm, "lhs_batching_dimensions") == 0 || strcmp(nm, "rhs_batching_dimensions") == 0) {
      if (!av_attr_get_ints(dot, nm, batch, 1, &n) || n != 0) return;
    } else if (strcmp(nm, "precision_config") == 0) {
      const av_attr *pc = dot->attrs[i].value;
      if (pc && (pc->kind != AV_ATTR_ARRAY || (pc->u.array.n != 0 && pc->u.array.n != 2))) return;
    } else if (swap_side(nm) == nm && strcmp(nm, "accumulation_type") != 0 &&
               strcmp(nm, "allow_imprecise_accumulation") != 0 &&
               strcmp(nm, "num_primitive_operations") != 0) {
      return; /* an attribute this rewrite does not know how to carry over */
    }
  }
  if (av_region_count_uses(fn_body, x, 2) != 1) return;
  av_value **ops = av_arena_calloc(&m->arena, 2, sizeof *ops);
  av_named_attr *attrs = av_arena_calloc(&m->arena, dot->nattrs + 1, sizeof *attrs);
  if (!ops || !attrs) return;
  for (uint32_t i = 0; i < dot->nattrs; i++) {
    attrs[i] = (av_named_attr){swap_side(dot->attrs[i].name), dot->attrs[i].value};
    const av_attr *pc = dot->attrs[i].value;
    if (strcmp(attrs[i].name, "precision_config") == 0 && pc && pc->u.array.n == 2) {
      const av_attr *items[2] = {pc->u.array.items[1], pc->u.array.items[0]};
      attrs[i].value = av_attr_array(m, 2, items);
      if (!attrs[i].value) return;
    }
  }
  ops[0] = dot->operands[1];
  ops[1] = dot->operands[0];
  /* the transpose becomes the swapped product; the original product is left unused */
  tr->code = AV_OP_DOT_GENERAL;
  tr->name = dot->name;
  tr->operands = ops;
  tr->noperands = 2;
  tr->attrs = attrs;
  tr->nattrs = dot->nattrs;
}

/* dims[0..n) -> perm[dims[i]]: a dimension list of transpose(x) as x's dimensions */
static void through(const int64_t *perm, const int64_t *dims, size_t n, int64_t *out) {
  for (size_t i = 0; i < n; i++) out[i] = perm[dims[i]];
}

static bool identity_order(const int64_t *order, int rank) {
  for (int i = 0; i < rank; i++)
    if (order[i] != i) return false;
  return true;
}

/* dot_general(transpose(x), y) (or with y transposed) reads x itself when the transposed
 * operand has no other use and x's layout is one the product reads in place (as is, or as a
 * transposed matrix per batch: kernels/dot.c): the dimension numbers of that side are
 * renamed through the permutation. Attention's k^T (a (0, 1, 3, 2) transpose) then costs no
 * copy. The free dimensions must keep their order (they are the result's). */
static void fold_dot_operand_transpose(av_module *m, const av_region *fn_body, av_op *dot, int side) {
  if (dot->noperands != 2 || dot->nresults != 1 || dot->nregions != 0) return;
  const av_value *x = dot->operands[side];
  av_op *tr = x->def;
  if (!tr || tr->code != AV_OP_TRANSPOSE || tr->noperands != 1 || tr->nresults != 1) return;
  const av_type *t = x->type, *src = tr->operands[0]->type;
  const av_type *ot = dot->operands[1 - side]->type;
  if (!t || !src || !ot || t->kind != AV_TYPE_TENSOR || src->kind != AV_TYPE_TENSOR ||
      ot->kind != AV_TYPE_TENSOR || t->quant || src->quant || t->rank < 2 ||
      t->rank > FOLD_MAX_RANK || src->rank != t->rank || ot->rank > FOLD_MAX_RANK)
    return;
  const char *bname = side ? "rhs_batching_dimensions" : "lhs_batching_dimensions";
  const char *cname = side ? "rhs_contracting_dimensions" : "lhs_contracting_dimensions";
  const char *obname = side ? "lhs_batching_dimensions" : "rhs_batching_dimensions";
  const char *ocname = side ? "lhs_contracting_dimensions" : "rhs_contracting_dimensions";
  int64_t perm[FOLD_MAX_RANK], batch[FOLD_MAX_RANK], con[FOLD_MAX_RANK], obatch[FOLD_MAX_RANK],
      ocon[FOLD_MAX_RANK];
  size_t np, nb = 0, nc, nob = 0, noc;
  int rank = t->rank;
  if (!av_attr_get_ints(tr, "permutation", perm, FOLD_MAX_RANK, &np) || np != (size_t)rank) return;
  if (av_op_attr(dot, bname) && !av_attr_get_ints(dot, bname, batch, FOLD_MAX_RANK, &nb)) return;
  if (av_op_attr(dot, obname) && !av_attr_get_ints(dot, obname, obatch, FOLD_MAX_RANK, &nob)) return;
  if (!av_attr_get_ints(dot, cname, con, FOLD_MAX_RANK, &nc) ||
      !av_attr_get_ints(dot, ocname, ocon, FOLD_MAX_RANK, &noc) || nb != nob || nc != noc)
    return;
  bool used[FOLD_MAX_RANK] = {0};
  for (size_t i = 0; i < (size_t)rank; i++) {
    if (perm[i] < 0 || perm[i] >= rank || used[perm[i]]) return;
    used[perm[i]] = true;
  }
  bool special[FOLD_MAX_RANK] = {0};
  for (size_t i = 0; i < nb; i++) {
    if (batch[i] < 0 || batch[i] >= rank || special[batch[i]]) return;
    special[batch[i]] = true;
  }
  for (size_t i = 0; i < nc; i++) {
    if (con[i] < 0 || con[i] >= rank || special[con[i]]) return;
    special[con[i]] = true;
  }
  /* the operand's free dims (ascending) must stay ascending in x */
  int64_t free_x[FOLD_MAX_RANK];
  size_t nf = 0;
  int64_t mine = 1, other = 1, k = 1;
  for (int i = 0; i < rank; i++)
    if (!special[i]) {
      free_x[nf] = perm[i];
      if (nf > 0 && free_x[nf] < free_x[nf - 1]) return;
      nf++;
      mine *= t->dims[i];
    }
  for (size_t i = 0; i < nc; i++) k *= t->dims[con[i]];
  bool ospecial[FOLD_MAX_RANK] = {0};
  for (size_t i = 0; i < nob; i++)
    if (obatch[i] >= 0 && obatch[i] < ot->rank) ospecial[obatch[i]] = true;
  for (size_t i = 0; i < noc; i++)
    if (ocon[i] >= 0 && ocon[i] < ot->rank) ospecial[ocon[i]] = true;
  for (int i = 0; i < ot->rank; i++)
    if (!ospecial[i]) other *= ot->dims[i];
  int64_t nbatch_x[FOLD_MAX_RANK], ncon_x[FOLD_MAX_RANK];
  through(perm, batch, nb, nbatch_x);
  through(perm, con, nc, ncon_x);
  /* x's order as the product reads it: batch, then lhs free + contract (rhs contract + free) */
  int64_t order[FOLD_MAX_RANK], swapped[FOLD_MAX_RANK];
  size_t w = 0;
  for (size_t i = 0; i < nb; i++) order[w++] = nbatch_x[i];
  const int64_t *g1 = side ? ncon_x : free_x, *g2 = side ? free_x : ncon_x;
  size_t n1 = side ? nc : nf, n2 = side ? nf : nc;
  memcpy(swapped, order, sizeof *order * w);
  for (size_t i = 0; i < n1; i++) order[w + i] = g1[i];
  for (size_t i = 0; i < n2; i++) order[w + n1 + i] = g2[i];
  for (size_t i = 0; i < n2; i++) swapped[w + i] = g2[i];
  for (size_t i = 0; i < n1; i++) swapped[w + n2 + i] = g1[i];
  bool gemm = (double)mine * (double)other * (double)k > 65536.0;
  if (!identity_order(order, rank) && !(gemm && identity_order(swapped, rank))) return;
  if (av_region_count_uses(fn_body, x, 2) != 1) return;
  int64_t bd[1] = {(int64_t)nb}, cd[1] = {(int64_t)nc};
  const av_type *bt = av_type_tensor(m, AV_DT_S64, 1, bd), *ct = av_type_tensor(m, AV_DT_S64, 1, cd);
  const av_attr *ba = bt ? av_attr_dense(m, bt, nbatch_x, sizeof *nbatch_x * nb, false, false) : NULL;
  const av_attr *ca = ct ? av_attr_dense(m, ct, ncon_x, sizeof *ncon_x * nc, false, false) : NULL;
  av_named_attr *attrs = av_arena_calloc(&m->arena, dot->nattrs + 2, sizeof *attrs);
  av_value **ops = av_arena_calloc(&m->arena, 2, sizeof *ops);
  if (!ba || !ca || !attrs || !ops) return; /* out of memory: the op stays as it was */
  uint32_t nattrs = dot->nattrs;
  if (nattrs) memcpy(attrs, dot->attrs, sizeof *attrs * nattrs);
  put_attr(attrs, &nattrs, bname, ba);
  put_attr(attrs, &nattrs, cname, ca);
  ops[0] = dot->operands[0];
  ops[1] = dot->operands[1];
  ops[side] = tr->operands[0];
  dot->operands = ops;
  dot->attrs = attrs;
  dot->nattrs = nattrs;
}

static void fold_region(av_module *m, const av_region *fn_body, av_region *rg, int depth) {
  if (depth > 64) return; /* hostile nesting: leave the rest alone */
  for (uint32_t b = 0; b < rg->nblocks; b++)
    for (av_op *op = rg->blocks[b].first; op; op = op->next) {
      if (op->code == AV_OP_REDUCE_WINDOW) fold_pad(m, op);
      if (op->code == AV_OP_TRANSPOSE) fold_transpose_dot(m, fn_body, op);
      if (op->code == AV_OP_DOT_GENERAL) {
        fold_dot_operand_transpose(m, fn_body, op, 0);
        fold_dot_operand_transpose(m, fn_body, op, 1);
      }
      for (uint32_t i = 0; i < op->nregions; i++) fold_region(m, fn_body, &op->regions[i], depth + 1);
    }
}

void av_fold_module(av_module *m) {
  for (uint32_t f = 0; f < m->nfuncs; f++)
    if (m->funcs[f]) fold_region(m, &m->funcs[f]->body, &m->funcs[f]->body, 0);
  av_fold_slices(m);
}
