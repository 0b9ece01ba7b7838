/* Sharding rules per op family (Shardy's OpShardingRule registry, written from its
 * documented semantics). */
#include "compiler/spmd_rules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/attrs.h"
#include "compiler/custom_partitioner.h"
#include "runtime/ffi/ffi.h"
#include "runtime/kernels/elementwise.h"

enum { NULL_DIM = -1 };

static int type_rank(const av_type *t) { return t && t->kind == AV_TYPE_TENSOR ? t->rank : 0; }

static const int64_t *type_dims(const av_type *t) {
  static const int64_t none[1] = {0};
  return t && t->kind == AV_TYPE_TENSOR && t->dims ? t->dims : none;
}

static bool static_tensor(const av_type *t) {
  if (!t || t->kind != AV_TYPE_TENSOR) return false;
  for (int k = 0; k < t->rank; k++)
    if (t->dims[k] < 0) return false;
  return true;
}

void av_factor_rule_free(av_factor_rule *r) {
  if (!r) return;
  free(r->ops);
  free(r);
}

typedef struct builder {
  av_factor_rule *r;
  bool failed;
} builder;

static av_factor_rule *rule_new(uint32_t nops, uint32_t nres) {
  av_factor_rule *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->ops = calloc((size_t)nops + nres + 1, sizeof *r->ops);
  if (!r->ops) {
    free(r);
    return NULL;
  }
  r->res = r->ops + nops;
  r->nops = nops;
  r->nres = nres;
  return r;
}

static bool init_op(builder *b, const av_op *op) {
  b->failed = false;
  b->r = rule_new(op->noperands, op->nresults);
  if (!b->r) return false;
  for (uint32_t i = 0; i < op->noperands; i++) {
    const av_type *t = op->operands[i]->type;
    if (t && t->kind == AV_TYPE_TENSOR && !static_tensor(t)) b->failed = true;
    b->r->ops[i].rank = type_rank(t);
  }
  for (uint32_t i = 0; i < op->nresults; i++) {
    const av_type *t = op->results[i].type;
    if (t && t->kind == AV_TYPE_TENSOR && !static_tensor(t)) b->failed = true;
    if (t && t->kind == AV_TYPE_TUPLE) b->failed = true;
    b->r->res[i].rank = type_rank(t);
  }
  return true;
}

static int new_factor(builder *b, int64_t size, av_factor_kind kind, bool blocked) {
  av_factor_rule *r = b->r;
  if (r->nfactors >= AV_RULE_MAX_FACTORS) {
    b->failed = true;
    return -1;
  }
  int f = r->nfactors++;
  r->size[f] = size;
  r->kind[f] = (uint8_t)kind;
  r->blocked[f] = blocked;
  return f;
}

static void map_dim(builder *b, av_tensor_factors *t, int dim, int f, int64_t size, bool skip_unit) {
  if (dim == NULL_DIM || f < 0) return;
  if (dim < 0 || dim >= t->rank) {
    b->failed = true;
    return;
  }
  av_dim_factors *df = &t->dims[dim];
  if (skip_unit && size == 1 && df->n) return;
  if (df->n >= AV_RULE_MAX_DIM_FACTORS) {
    b->failed = true;
    return;
  }
  df->f[df->n++] = (uint8_t)f;
}

/* A factor on operand dims od[i] and result dims rd[i] (NULL_DIM: not in that tensor). */
static void add_factor(builder *b, const int *od, const int *rd, int64_t size, av_factor_kind kind,
                       bool blocked) {
  int f = new_factor(b, size, kind, blocked);
  for (uint32_t i = 0; i < b->r->nops; i++) map_dim(b, &b->r->ops[i], od ? od[i] : NULL_DIM, f, size, true);
  for (uint32_t i = 0; i < b->r->nres; i++) map_dim(b, &b->r->res[i], rd ? rd[i] : NULL_DIM, f, size, true);
}

/* A factor on dimension `dim` of every operand and result (rank-0 tensors skipped). */
static void add_factor_all(builder *b, int dim, int64_t size, av_factor_kind kind, bool blocked) {
  int f = new_factor(b, size, kind, blocked);
  for (uint32_t i = 0; i < b->r->nops; i++)
    if (b->r->ops[i].rank) map_dim(b, &b->r->ops[i], dim, f, size, false);
  for (uint32_t i = 0; i < b->r->nres; i++)
    if (b->r->res[i].rank) map_dim(b, &b->r->res[i], dim, f, size, false);
}

/* Same for operands only / results only. */
static void add_factor_side(builder *b, bool results, int dim, int64_t size, av_factor_kind kind) {
  int f = new_factor(b, size, kind, false);
  uint32_t n = results ? b->r->nres : b->r->nops;
  av_tensor_factors *ts = results ? b->r->res : b->r->ops;
  for (uint32_t i = 0; i < n; i++)
    if (ts[i].rank) map_dim(b, &ts[i], dim, f, size, false);
}

/* Two-tensor shorthand: operand 0 dim / result 0 dim. */
static void add_factor_1(builder *b, int od, int rd, int64_t size, av_factor_kind kind, bool blocked) {
  int ods[1] = {od}, rds[1] = {rd};
  int f = new_factor(b, size, kind, blocked);
  if (b->r->nops) map_dim(b, &b->r->ops[0], ods[0], f, size, true);
  if (b->r->nres) map_dim(b, &b->r->res[0], rds[0], f, size, true);
}

/* Dimensions left without a factor get one of size 1. */
static av_factor_rule *finish(builder *b) {
  av_factor_rule *r = b->r;
  for (uint32_t i = 0; !b->failed && i < r->nops + r->nres; i++) {
    av_tensor_factors *t = &r->ops[i];
    for (int k = 0; k < t->rank && !b->failed; k++)
      if (!t->dims[k].n) {
        int f = new_factor(b, 1, AV_FACTOR_PASS_THROUGH, false);
        if (f >= 0) t->dims[k].f[t->dims[k].n++] = (uint8_t)f;
      }
  }
  if (b->failed) {
    av_factor_rule_free(r);
    return NULL;
  }
  return r;
}

static void pointwise(builder *b, const av_type *t) {
  const int64_t *d = type_dims(t);
  for (int k = 0; k < type_rank(t); k++) add_factor_all(b, k, d[k], AV_FACTOR_PASS_THROUGH, false);
}

/* Same dims where sizes match, else a factor of `kind` (slice, pad, dynamic_slice). */
static void pointwise_mismatch(builder *b, const av_type *in, const av_type *out, av_factor_kind kind,
                               bool blocked) {
  const int64_t *di = type_dims(in), *dout = type_dims(out);
  for (int k = 0; k < type_rank(in) && k < type_rank(out); k++) {
    bool same = di[k] == dout[k];
    add_factor_all(b, k, di[k], same ? AV_FACTOR_PASS_THROUGH : kind, same ? false : blocked);
  }
}

static bool contains(const int64_t *v, size_t n, int64_t x) {
  for (size_t i = 0; i < n; i++)
    if (v[i] == x) return true;
  return false;
}

av_factor_rule *av_factor_rule_identity(const av_type *t, uint32_t nops, uint32_t nres) {
  builder b = {rule_new(nops, nres), false};
  if (!b.r) return NULL;
  for (uint32_t i = 0; i < nops + nres; i++) b.r->ops[i].rank = type_rank(t);
  if (!static_tensor(t)) b.failed = true;
  pointwise(&b, t);
  return finish(&b);
}

bool av_spmd_is_elementwise(const av_op *op) {
  switch (op->code) {
    case AV_OP_CONVERT: case AV_OP_SELECT: case AV_OP_CLAMP: case AV_OP_REDUCE_PRECISION:
    case AV_OP_SDY_SHARDING_CONSTRAINT: case AV_OP_SDY_RESHARD:
      return true;
    case AV_OP_BITCAST_CONVERT: {
      const av_type *a = op->noperands ? op->operands[0]->type : NULL;
      const av_type *r = op->nresults ? op->results[0].type : NULL;
      return a && r && type_rank(a) == type_rank(r);
    }
    default:
      return av_ew_arity(op->code) > 0;
  }
}

static bool pointwise_custom_call(const char *t) {
  static const char *const names[] = {
      "annotate_device_placement", "Cholesky", "CompactWyHelper", "InspectSharding",
      "InvertDiagBlocksLowerTriangular", "InvertDiagBlocksUpperTriangular", "LayoutConstraint",
      "mhlo.erf", "MoveToDevice", "MoveToHost", "X64SplitHigh", "X64SplitLow",
      "xla.megascale.provide_metadata", "_SPMDInternalOp_MultiPad", "_SPMDInternalOp_RotateRight",
      "_SPMDInternalOp_MultiRotate", "_SPMDInternalOp_MultiSlice", "_SPMDInternalOp_Wrap"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(t, names[i]) == 0) return true;
  return false;
}

static void rule_broadcast(builder *b, const av_op *op) {
  const av_type *in = op->operands[0]->type, *out = op->results[0].type;
  int64_t bd[AV_MAX_RANK];
  size_t nb = 0;
  if (!av_attr_get_ints(op, "broadcast_dimensions", bd, AV_MAX_RANK, &nb) || (int)nb != type_rank(in)) {
    b->failed = true;
    return;
  }
  int out_to_in[AV_MAX_RANK];
  for (int k = 0; k < type_rank(out); k++) out_to_in[k] = NULL_DIM;
  for (size_t i = 0; i < nb; i++) {
    if (bd[i] < 0 || bd[i] >= type_rank(out)) {
      b->failed = true;
      return;
    }
    out_to_in[bd[i]] = (int)i;
  }
  for (int k = 0; k < type_rank(out); k++) {
    int in_dim = out_to_in[k];
    if (in_dim != NULL_DIM && in->dims[in_dim] == 1 && out->dims[k] != 1) {
      add_factor_1(b, in_dim, NULL_DIM, 1, AV_FACTOR_PASS_THROUGH, false);
      in_dim = NULL_DIM;
    }
    add_factor_1(b, in_dim, k, out->dims[k], AV_FACTOR_PASS_THROUGH, false);
  }
}

static int64_t gcd64(int64_t a, int64_t b) {
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

static void rule_reshape(builder *b, const av_type *in, const av_type *out) {
  int in_rank = in->rank, out_rank = out->rank, id = 0, od = 0;
  if (av_type_num_elements(in) == 0) {
    b->failed = true;
    return;
  }
  int64_t pin = 1, pout = 1, fin = 1, fout = 1;
  int guard = 0;
  while ((id < in_rank || od < out_rank) && guard++ < 4 * (AV_RULE_MAX_FACTORS + AV_MAX_RANK)) {
    if (id < in_rank && in->dims[id] == 1) {
      add_factor_1(b, id++, NULL_DIM, 1, AV_FACTOR_PASS_THROUGH, false);
      continue;
    }
    if (od < out_rank && out->dims[od] == 1) {
      add_factor_1(b, NULL_DIM, od++, 1, AV_FACTOR_PASS_THROUGH, false);
      continue;
    }
    if (id < in_rank && pin == fin) pin *= in->dims[id];
    if (od < out_rank && pout == fout) pout *= out->dims[od];
    int64_t next_in = pin / fin, next_out = pout / fout, g = gcd64(next_in, next_out);
    if (fin == fout) {
      if (g > 1) {
        add_factor_1(b, id, od, g, AV_FACTOR_PASS_THROUGH, false);
        fin *= g;
        fout *= g;
      } else {
        if (next_in <= 1 || next_out <= 1) {
          b->failed = true;
          return;
        }
        add_factor_1(b, id, NULL_DIM, next_in, AV_FACTOR_PASS_THROUGH, false);
        fin *= next_in;
        add_factor_1(b, NULL_DIM, od, next_out, AV_FACTOR_PASS_THROUGH, false);
        fout *= next_out;
      }
    } else {
      bool in_behind = fin < fout;
      int64_t next = in_behind ? next_in : next_out;
      int64_t small = in_behind ? fin : fout, large = in_behind ? fout : fin;
      if (large % small == 0 && next % (large / small) == 0) next = large / small;
      else if (next > g) next = next / g;
      if (in_behind) {
        add_factor_1(b, id, NULL_DIM, next, AV_FACTOR_PASS_THROUGH, false);
        fin *= next;
      } else {
        add_factor_1(b, NULL_DIM, od, next, AV_FACTOR_PASS_THROUGH, false);
        fout *= next;
      }
    }
    if (id < in_rank && pin == fin) id++;
    if (od < out_rank && pout == fout) od++;
    if (b->failed) return;
  }
  if (id < in_rank || od < out_rank) b->failed = true;
}

static void rule_dot_general(builder *b, const av_op *op) {
  const av_type *lt = op->operands[0]->type, *rt = op->operands[1]->type;
  int64_t lb[AV_MAX_RANK], rb[AV_MAX_RANK], lc[AV_MAX_RANK], rc[AV_MAX_RANK];
  size_t nlb = 0, nrb = 0, nlc = 0, nrc = 0;
  if (op->code == AV_OP_DOT) {
    bool lm = lt->rank == 2, rm = rt->rank == 2;
    if (lm) { int od[2] = {0, NULL_DIM}, rd[1] = {0}; add_factor(b, od, rd, lt->dims[0], AV_FACTOR_PASS_THROUGH, false); }
    if (rm) { int od[2] = {NULL_DIM, 1}, rd[1] = {lm ? 1 : 0}; add_factor(b, od, rd, rt->dims[1], AV_FACTOR_PASS_THROUGH, false); }
    int od[2] = {lm ? 1 : 0, 0};
    add_factor(b, od, NULL, rt->dims[0], AV_FACTOR_REDUCTION, false);
    return;
  }
  av_attr_get_ints(op, "lhs_batching_dimensions", lb, AV_MAX_RANK, &nlb);
  av_attr_get_ints(op, "rhs_batching_dimensions", rb, AV_MAX_RANK, &nrb);
  av_attr_get_ints(op, "lhs_contracting_dimensions", lc, AV_MAX_RANK, &nlc);
  av_attr_get_ints(op, "rhs_contracting_dimensions", rc, AV_MAX_RANK, &nrc);
  if (nlb != nrb || nlc != nrc) {
    b->failed = true;
    return;
  }
  int out = 0;
  for (size_t i = 0; i < nlb; i++) {
    int od[2] = {(int)lb[i], (int)rb[i]}, rd[1] = {out++};
    add_factor(b, od, rd, lt->dims[lb[i]], AV_FACTOR_PASS_THROUGH, false);
  }
  for (int k = 0; k < lt->rank; k++)
    if (!contains(lc, nlc, k) && !contains(lb, nlb, k)) {
      int od[2] = {k, NULL_DIM}, rd[1] = {out++};
      add_factor(b, od, rd, lt->dims[k], AV_FACTOR_PASS_THROUGH, false);
    }
  for (int k = 0; k < rt->rank; k++)
    if (!contains(rc, nrc, k) && !contains(rb, nrb, k)) {
      int od[2] = {NULL_DIM, k}, rd[1] = {out++};
      add_factor(b, od, rd, rt->dims[k], AV_FACTOR_PASS_THROUGH, false);
    }
  for (size_t i = 0; i < nlc; i++) {
    int od[2] = {(int)lc[i], (int)rc[i]};
    add_factor(b, od, NULL, lt->dims[lc[i]], AV_FACTOR_REDUCTION, false);
  }
}

static void rule_reduce(builder *b, const av_op *op) {
  uint32_t n = op->nresults;
  if (op->noperands != 2 * n || n == 0 || n > 64) {
    b->failed = true;
    return;
  }
  const av_type *in = op->operands[0]->type;
  int64_t dims[AV_MAX_RANK];
  size_t nd = 0;
  av_attr_get_ints(op, "dimensions", dims, AV_MAX_RANK, &nd);
  int od[130], rd[65], out = 0;
  for (int k = 0; k < in->rank; k++) {
    for (uint32_t i = 0; i < 2 * n; i++) od[i] = i < n ? k : NULL_DIM;
    bool reduced = contains(dims, nd, k);
    for (uint32_t i = 0; i < n; i++) rd[i] = reduced ? NULL_DIM : out;
    if (!reduced) out++;
    add_factor(b, od, rd, in->dims[k], reduced ? AV_FACTOR_REDUCTION : AV_FACTOR_PASS_THROUGH, false);
  }
}

static void rule_transpose(builder *b, const av_op *op) {
  const av_type *in = op->operands[0]->type;
  int64_t perm[AV_MAX_RANK];
  size_t n = 0;
  if (!av_attr_get_ints(op, "permutation", perm, AV_MAX_RANK, &n) || (int)n != in->rank) {
    b->failed = true;
    return;
  }
  for (size_t k = 0; k < n; k++) {
    if (perm[k] < 0 || perm[k] >= in->rank) {
      b->failed = true;
      return;
    }
    add_factor_1(b, (int)perm[k], (int)k, in->dims[perm[k]], AV_FACTOR_PASS_THROUGH, false);
  }
}

/* The operand under a slice (the concat-of-slices pattern). */
static const av_value *before_slice(const av_value *v) {
  return v->def && v->def->code == AV_OP_SLICE ? v->def->operands[0] : v;
}

static void rule_concatenate(builder *b, const av_op *op) {
  int64_t dim = 0;
  av_attr_get_int(op, "dimension", &dim);
  const av_type *t = op->results[0].type;
  av_factor_kind kind = AV_FACTOR_NEED_REPLICATION;
  bool all_slices = true, same = true, any_slice = false;
  const av_value *base = op->noperands ? before_slice(op->operands[0]) : NULL;
  for (uint32_t i = 0; i < op->noperands; i++) {
    bool sl = op->operands[i]->def && op->operands[i]->def->code == AV_OP_SLICE;
    all_slices &= sl;
    any_slice |= sl;
    same &= before_slice(op->operands[i]) == base;
  }
  if (all_slices || (same && any_slice)) kind = AV_FACTOR_PERMUTATION;
  for (int k = 0; k < t->rank; k++)
    add_factor_all(b, k, t->dims[k], k == dim ? kind : AV_FACTOR_PASS_THROUGH, false);
}

/* Convolution: batch, spatial (number of windows / window size), input and output features. */
static void rule_convolution(builder *b, const av_op *op) {
  const av_type *lt = op->operands[0]->type, *rt = op->operands[1]->type, *ot = op->results[0].type;
  int64_t ib, ifd, kif, kof, ob, of, is[AV_MAX_RANK], ks[AV_MAX_RANK], os[AV_MAX_RANK];
  size_t n1 = 0, n2 = 0, n3 = 0;
  if (!av_attr_get_int(op, "input_batch_dimension", &ib) ||
      !av_attr_get_int(op, "input_feature_dimension", &ifd) ||
      !av_attr_get_int(op, "kernel_input_feature_dimension", &kif) ||
      !av_attr_get_int(op, "kernel_output_feature_dimension", &kof) ||
      !av_attr_get_int(op, "output_batch_dimension", &ob) ||
      !av_attr_get_int(op, "output_feature_dimension", &of) ||
      !av_attr_get_ints(op, "input_spatial_dimensions", is, AV_MAX_RANK, &n1) ||
      !av_attr_get_ints(op, "kernel_spatial_dimensions", ks, AV_MAX_RANK, &n2) ||
      !av_attr_get_ints(op, "output_spatial_dimensions", os, AV_MAX_RANK, &n3) || n1 != n2 || n1 != n3) {
    b->failed = true;
    return;
  }
  int64_t fg = 1, bg = 1;
  av_attr_get_int(op, "feature_group_count", &fg);
  av_attr_get_int(op, "batch_group_count", &bg);
  if (fg < 1 || bg < 1) {
    b->failed = true;
    return;
  }
  if (bg > 1) {
    int od[2] = {(int)ib, (int)kof}, rd[1] = {(int)of};
    add_factor(b, od, rd, bg, AV_FACTOR_PASS_THROUGH, false);
  }
  {
    int od[2] = {(int)ib, NULL_DIM}, rd[1] = {(int)ob};
    add_factor(b, od, rd, ot->dims[ob], AV_FACTOR_PASS_THROUGH, false);
  }
  for (size_t i = 0; i < n1; i++) {
    int64_t windows = ot->dims[os[i]], wsize = rt->dims[ks[i]], remaining = lt->dims[is[i]];
    for (int pass = 0; pass < 2; pass++) {
      bool contracting = (windows >= wsize) == (pass == 1);
      int64_t fsize = contracting ? wsize : windows;
      if (fsize > remaining) fsize = remaining;
      if (fsize <= 1) continue;
      int od[2] = {(int)is[i], contracting ? (int)ks[i] : NULL_DIM};
      int rd[1] = {contracting ? NULL_DIM : (int)os[i]};
      add_factor(b, od, rd, fsize, contracting ? AV_FACTOR_REDUCTION : AV_FACTOR_PERMUTATION, false);
      remaining /= fsize;
    }
  }
  if (fg > 1) {
    int od[2] = {(int)ifd, (int)kof}, rd[1] = {(int)of};
    add_factor(b, od, rd, fg, AV_FACTOR_PASS_THROUGH, false);
  }
  {
    int od[2] = {(int)ifd, (int)kif};
    add_factor(b, od, NULL, rt->dims[kif], AV_FACTOR_REDUCTION, false);
  }
  int64_t ofs = ot->dims[of] / (bg * fg);
  if (ofs > 1) {
    int od[2] = {NULL_DIM, (int)kof}, rd[1] = {(int)of};
    add_factor(b, od, rd, ofs, AV_FACTOR_PASS_THROUGH, false);
  }
}

/* Gather and scatter share the factor structure of input, indices and slices. */
typedef void (*gs_add_fn)(builder *b, const av_op *op, int in_dim, int idx_dim, int sl_dim,
                          int64_t size, av_factor_kind kind, bool blocked);

static void gather_add(builder *b, const av_op *op, int in_dim, int idx_dim, int sl_dim, int64_t size,
                       av_factor_kind kind, bool blocked) {
  (void)op;
  int od[2] = {in_dim, idx_dim}, rd[1] = {sl_dim};
  add_factor(b, od, rd, size, kind, blocked);
}

static void scatter_add(builder *b, const av_op *op, int in_dim, int idx_dim, int sl_dim, int64_t size,
                        av_factor_kind kind, bool blocked) {
  uint32_t n = op->nresults;
  int od[131], rd[65];
  if (n > 64) {
    b->failed = true;
    return;
  }
  for (uint32_t i = 0; i < n; i++) {
    od[i] = in_dim;
    od[n + 1 + i] = sl_dim;
    rd[i] = in_dim;
  }
  od[n] = idx_dim;
  add_factor(b, od, rd, size, kind, blocked);
}

/* Whether a scatter's update computation is one of add/mul/max/min/or/and on its two
 * arguments (a reduction the partitioner can finish with an all-reduce). */
static bool scatter_reduces(const av_op *op) {
  if (op->nregions != 1 || op->regions[0].nblocks != 1) return false;
  const av_block *blk = &op->regions[0].blocks[0];
  const av_op *f = blk->first;
  if (!f || !f->next || f->next->next || blk->nargs != 2) return false;
  switch (f->code) {
    case AV_OP_ADD: case AV_OP_MULTIPLY: case AV_OP_MAXIMUM: case AV_OP_MINIMUM:
    case AV_OP_OR: case AV_OP_AND:
      return f->noperands == 2;
    default:
      return false;
  }
}

static void rule_gather_scatter(builder *b, const av_op *op, bool scatter) {
  const av_type *in, *sl, *idx;
  const char *offset_name, *collapsed_name, *in_batch_name, *idx_batch_name;
  if (scatter) {
    uint32_t n = op->nresults;
    if (op->noperands != 2 * n + 1) {
      b->failed = true;
      return;
    }
    in = op->operands[0]->type;
    idx = op->operands[n]->type;
    sl = op->operands[n + 1]->type;
    offset_name = "update_window_dims";
    collapsed_name = "inserted_window_dims";
    in_batch_name = "input_batching_dims";
    idx_batch_name = "scatter_indices_batching_dims";
  } else {
    in = op->operands[0]->type;
    idx = op->operands[1]->type;
    sl = op->results[0].type;
    offset_name = "offset_dims";
    collapsed_name = "collapsed_slice_dims";
    in_batch_name = "operand_batching_dims";
    idx_batch_name = "start_indices_batching_dims";
  }
  gs_add_fn add = scatter ? scatter_add : gather_add;
  int64_t offs[AV_MAX_RANK], coll[AV_MAX_RANK], inb[AV_MAX_RANK], idxb[AV_MAX_RANK], ivd = 0;
  size_t noffs = 0, ncoll = 0, ninb = 0, nidxb = 0;
  av_attr_get_ints(op, offset_name, offs, AV_MAX_RANK, &noffs);
  av_attr_get_ints(op, collapsed_name, coll, AV_MAX_RANK, &ncoll);
  av_attr_get_ints(op, in_batch_name, inb, AV_MAX_RANK, &ninb);
  av_attr_get_ints(op, idx_batch_name, idxb, AV_MAX_RANK, &nidxb);
  if (!av_attr_get_int(op, "index_vector_dim", &ivd) || ninb != nidxb) {
    b->failed = true;
    return;
  }
  bool reduces = scatter && scatter_reduces(op);
  int in_dim = 0, batch_pos = 0;
  for (int s = 0; s < sl->rank && !b->failed; s++) {
    if (contains(offs, noffs, s)) {
      while (contains(coll, ncoll, in_dim) || contains(inb, ninb, in_dim)) in_dim++;
      if (in_dim >= in->rank) {
        b->failed = true;
        return;
      }
      int64_t isz = in->dims[in_dim], ssz = sl->dims[s];
      if (isz == ssz) {
        add(b, op, in_dim, NULL_DIM, s, isz, AV_FACTOR_PASS_THROUGH, false);
      } else if (scatter) {
        add(b, op, in_dim, NULL_DIM, NULL_DIM, isz, AV_FACTOR_NEED_REPLICATION, false);
        add(b, op, NULL_DIM, NULL_DIM, s, ssz, AV_FACTOR_NEED_REPLICATION, false);
      } else if (ssz == 1) {
        add(b, op, in_dim, NULL_DIM, NULL_DIM, isz, AV_FACTOR_REDUCTION, false);
        add(b, op, NULL_DIM, NULL_DIM, s, ssz, AV_FACTOR_NEED_REPLICATION, false);
      } else {
        add(b, op, in_dim, NULL_DIM, s, isz, AV_FACTOR_NEED_REPLICATION, true);
      }
      in_dim++;
    } else {
      int idx_dim = batch_pos < ivd ? batch_pos : batch_pos + 1;
      if (idx_dim >= idx->rank) {
        b->failed = true;
        return;
      }
      int in_batch = NULL_DIM;
      for (size_t i = 0; i < nidxb; i++)
        if (idxb[i] == idx_dim) in_batch = (int)inb[i];
      av_factor_kind kind = AV_FACTOR_PASS_THROUGH;
      if (scatter && in_batch == NULL_DIM) kind = reduces ? AV_FACTOR_REDUCTION : AV_FACTOR_NEED_REPLICATION;
      add(b, op, in_batch, idx_dim, s, sl->dims[s], kind, false);
      batch_pos++;
    }
  }
  for (size_t i = 0; i < ncoll && !b->failed; i++) {
    if (coll[i] < 0 || coll[i] >= in->rank) {
      b->failed = true;
      return;
    }
    int64_t sz = in->dims[coll[i]];
    av_factor_kind kind = scatter ? AV_FACTOR_PASS_THROUGH
                                  : (sz == 1 ? AV_FACTOR_NEED_REPLICATION : AV_FACTOR_REDUCTION);
    add(b, op, (int)coll[i], NULL_DIM, NULL_DIM, sz, kind, false);
  }
  if (ivd < idx->rank)
    add(b, op, NULL_DIM, (int)ivd, NULL_DIM, idx->dims[ivd], AV_FACTOR_NEED_REPLICATION, false);
}

static void rule_sort(builder *b, const av_op *op) {
  const av_type *t = op->operands[0]->type;
  int64_t dim = 0;
  av_attr_get_int(op, "dimension", &dim);
  if (dim < 0) dim += t->rank;
  bool blocked = true;
  for (int k = 0; k < t->rank; k++)
    if (k != dim && t->dims[k] != 1) blocked = false;
  for (int k = 0; k < t->rank; k++)
    add_factor_all(b, k, t->dims[k], k == dim ? AV_FACTOR_NEED_REPLICATION : AV_FACTOR_PASS_THROUGH,
                   k == dim && blocked);
}

static void rule_dynamic_update_slice(builder *b, const av_op *op) {
  const av_type *ot = op->operands[0]->type, *ut = op->operands[1]->type;
  uint32_t n = op->noperands;
  int od[AV_MAX_RANK + 3];
  if (n > AV_MAX_RANK + 2) {
    b->failed = true;
    return;
  }
  for (int k = 0; k < ot->rank; k++) {
    for (uint32_t i = 0; i < n; i++) od[i] = NULL_DIM;
    if (ot->dims[k] == ut->dims[k]) {
      od[0] = od[1] = k;
      int rd[1] = {k};
      add_factor(b, od, rd, ot->dims[k], AV_FACTOR_PASS_THROUGH, false);
    } else {
      /* a dimension the update covers in part: the local form writes at the global start
       * index, so a device holding another block of it would write its own block there; it
       * stays whole (the operand is gathered for the update, as for dynamic_slice) */
      od[0] = k;
      int rd[1] = {k};
      add_factor(b, od, rd, ot->dims[k], AV_FACTOR_NEED_REPLICATION, false);
      od[0] = NULL_DIM;
      od[1] = k;
      add_factor(b, od, NULL, ut->dims[k], AV_FACTOR_NEED_REPLICATION, false);
    }
  }
}

static void rule_reduce_window(builder *b, const av_op *op) {
  const av_type *t = op->results[0].type;
  int64_t win[AV_MAX_RANK], str[AV_MAX_RANK], pad[2 * AV_MAX_RANK];
  size_t nw = 0, ns = 0, np = 0;
  av_attr_get_ints(op, "window_dimensions", win, AV_MAX_RANK, &nw);
  av_attr_get_ints(op, "window_strides", str, AV_MAX_RANK, &ns);
  av_attr_get_ints(op, "padding", pad, 2 * AV_MAX_RANK, &np);
  for (int k = 0; k < t->rank; k++) {
    bool pass = (nw == 0 || win[k] == 1) && (ns == 0 || str[k] == 1) &&
                (np == 0 || (pad[2 * k] == 0 && pad[2 * k + 1] == 0));
    add_factor_all(b, k, t->dims[k], pass ? AV_FACTOR_PASS_THROUGH : AV_FACTOR_PERMUTATION, false);
  }
}

/* The leading batch dimensions of a custom call registered batch-partitionable
 * (jax.ffi.register_ffi_target_as_batch_partitionable), from its frontend attribute
 * num_batch_dims (a decimal string, as XLA reads it); 0 when it has none. */
static int64_t num_batch_dims(const av_op *op) {
  const av_attr *fa = av_op_attr(op, "mhlo.frontend_attributes");
  const av_attr *nb = fa && fa->kind == AV_ATTR_DICT ? av_dict_get(fa, "num_batch_dims") : NULL;
  if (!nb) return 0;
  if (nb->kind == AV_ATTR_INT) return nb->u.i;
  if (nb->kind != AV_ATTR_STRING) return 0;
  int64_t k = 0;
  for (const char *p = nb->u.str.s; *p; p++) {
    if (*p < '0' || *p > '9' || k > AV_MAX_RANK) return 0;
    k = k * 10 + (*p - '0');
  }
  return k;
}

/* As XLA's batch partitioner: the first k dimensions of every operand and result are one
 * factor each (they must agree in size), every other dimension must be replicated. false
 * when the call does not fit (it then runs on gathered operands). */
static bool rule_batch_partitionable(builder *b, const av_op *op) {
  int64_t k = num_batch_dims(op);
  uint32_t n = op->noperands + op->nresults;
  if (k <= 0 || n > 64) return false;
  const av_type *first = NULL;
  for (uint32_t i = 0; i < n; i++) {
    const av_type *t = i < op->noperands ? op->operands[i]->type : op->results[i - op->noperands].type;
    if (t && t->kind == AV_TYPE_TOKEN) continue;
    if (!t || t->kind != AV_TYPE_TENSOR || t->rank < k) return false;
    if (!first) first = t;
    for (int64_t d = 0; d < k; d++)
      if (t->dims[d] != first->dims[d]) return false;
  }
  if (!first) return false;
  for (int64_t d = 0; d < k; d++)
    add_factor_all(b, (int)d, first->dims[d], AV_FACTOR_PASS_THROUGH, false);
  int od[64], rd[64];
  for (uint32_t i = 0; i < n; i++) {
    const av_type *t = i < op->noperands ? op->operands[i]->type : op->results[i - op->noperands].type;
    for (int d = (int)k; t && t->kind == AV_TYPE_TENSOR && d < t->rank; d++) {
      for (uint32_t j = 0; j < 64; j++) od[j] = rd[j] = NULL_DIM;
      if (i < op->noperands) od[i] = d;
      else rd[i - op->noperands] = d;
      add_factor(b, od, rd, t->dims[d], AV_FACTOR_NEED_REPLICATION, false);
    }
  }
  return !b->failed;
}

/* ---- sdy.sharding_rule: #sdy.op_sharding_rule<([i, j], [j, k])->([i, k]) {i=8, j=4, k=2}
 * reduction={j} need_replication={...} permutation={...} blocked_propagation={...}, custom>.
 * A dimension lists its factors major to minor without separators ([ij] is i then j);
 * factors are named i..z, then z_1, z_2, ... */

typedef struct rule_text {
  const char *s;
  char *why;
  size_t cap;
  bool failed;
} rule_text;

static bool rt_fail(rule_text *t, const char *what) {
  if (!t->failed) snprintf(t->why, t->cap, "%s near \"%.24s\"", what, t->s);
  t->failed = true;
  return false;
}

static void rt_ws(rule_text *t) {
  while (*t->s == ' ' || *t->s == '\n' || *t->s == '\t') t->s++;
}

static bool rt_accept(rule_text *t, const char *tok) {
  rt_ws(t);
  size_t n = strlen(tok);
  if (strncmp(t->s, tok, n) != 0) return false;
  t->s += n;
  return true;
}

static bool rt_expect(rule_text *t, const char *tok) {
  if (rt_accept(t, tok)) return true;
  char what[32];
  snprintf(what, sizeof what, "expected '%s'", tok);
  return rt_fail(t, what);
}

/* One factor name at t->s (no whitespace skipped): its index, or -1 when none is there. */
static int rt_factor(rule_text *t) {
  char c = *t->s;
  if (c < 'i' || c > 'z') return -1;
  t->s++;
  if (c != 'z' || t->s[0] != '_' || t->s[1] < '0' || t->s[1] > '9') return c - 'i';
  t->s++;
  int64_t n = 0;
  while (*t->s >= '0' && *t->s <= '9' && n < AV_RULE_MAX_FACTORS) n = n * 10 + (*t->s++ - '0');
  return n >= 1 && n < AV_RULE_MAX_FACTORS ? (int)(17 + n) : (rt_fail(t, "factor index out of range"), -1);
}

/* `[dims, ...]` for tensor `tf`. */
static bool rt_mapping(rule_text *t, av_tensor_factors *tf, int *max_factor) {
  if (!rt_expect(t, "[")) return false;
  int dim = 0;
  if (!rt_accept(t, "]")) {
    do {
      rt_ws(t);
      if (dim >= tf->rank) return rt_fail(t, "more dimensions than the tensor has");
      av_dim_factors *df = &tf->dims[dim++];
      int f;
      while ((f = rt_factor(t)) >= 0) {
        if (f >= AV_RULE_MAX_FACTORS) return rt_fail(t, "too many factors");
        if (df->n >= AV_RULE_MAX_DIM_FACTORS) return rt_fail(t, "too many factors in one dimension");
        df->f[df->n++] = (uint8_t)f;
        if (f > *max_factor) *max_factor = f;
      }
      if (t->failed) return false;
      if (!df->n) return rt_fail(t, "a dimension without factors");
    } while (rt_accept(t, ","));
    if (!rt_expect(t, "]")) return false;
  }
  return dim == tf->rank || rt_fail(t, "fewer dimensions than the tensor has");
}

static bool rt_mappings(rule_text *t, av_tensor_factors *tfs, uint32_t n, int *max_factor) {
  if (!rt_expect(t, "(")) return false;
  uint32_t i = 0;
  if (!rt_accept(t, ")")) {
    do {
      if (i >= n) return rt_fail(t, "more tensors than the op has");
      if (!rt_mapping(t, &tfs[i++], max_factor)) return false;
    } while (rt_accept(t, ","));
    if (!rt_expect(t, ")")) return false;
  }
  return i == n || rt_fail(t, "fewer tensors than the op has");
}

/* `{f, g}` after a keyword: marks each factor. */
static bool rt_factor_set(rule_text *t, av_factor_rule *r, int kind, bool blocked) {
  if (!rt_expect(t, "{")) return false;
  if (rt_accept(t, "}")) return true;
  do {
    rt_ws(t);
    int f = rt_factor(t);
    if (f < 0 || f >= r->nfactors) return rt_fail(t, "an unknown factor");
    if (blocked) r->blocked[f] = true;
    else r->kind[f] = (uint8_t)kind;
  } while (rt_accept(t, ","));
  return rt_expect(t, "}");
}

av_factor_rule *av_factor_rule_from_sdy(const av_op *op, const char *text, char *why, size_t cap) {
  builder b;
  rule_text t = {text ? text : "", why, cap, false};
  if (cap) why[0] = '\0';
  if (!init_op(&b, op)) return (void)snprintf(why, cap, "out of memory"), NULL;
  if (b.failed) rt_fail(&t, "tensors of dynamic shape");
  int max_factor = -1;
  int64_t sizes[AV_RULE_MAX_FACTORS];
  bool sized[AV_RULE_MAX_FACTORS] = {false};
  rt_accept(&t, "#sdy.");
  if (!t.failed && rt_expect(&t, "op_sharding_rule<") && rt_mappings(&t, b.r->ops, b.r->nops, &max_factor) &&
      rt_expect(&t, "->") && rt_mappings(&t, b.r->res, b.r->nres, &max_factor)) {
    b.r->nfactors = max_factor + 1;
    if (rt_accept(&t, "{") && !rt_accept(&t, "}")) {
      do {
        rt_ws(&t);
        int f = rt_factor(&t);
        if (f < 0 || f > max_factor) {
          rt_fail(&t, "a size for an unknown factor");
          break;
        }
        int64_t v = 0;
        if (!rt_expect(&t, "=")) break;
        rt_ws(&t);
        if (*t.s < '0' || *t.s > '9') {
          rt_fail(&t, "expected a factor size");
          break;
        }
        while (*t.s >= '0' && *t.s <= '9' && v < ((int64_t)1 << 48)) v = v * 10 + (*t.s++ - '0');
        sizes[f] = v;
        sized[f] = v >= 1;
      } while (rt_accept(&t, ","));
      if (!t.failed) rt_expect(&t, "}");
    }
    static const char *const kinds[] = {"reduction=", "need_replication=", "permutation=", "blocked_propagation="};
    static const int kind_of[] = {AV_FACTOR_REDUCTION, AV_FACTOR_NEED_REPLICATION, AV_FACTOR_PERMUTATION, 0};
    for (bool more = !t.failed; more && !t.failed;) {
      more = false;
      rt_accept(&t, ",");
      for (int k = 0; k < 4 && !more; k++)
        if (rt_accept(&t, kinds[k])) {
          rt_factor_set(&t, b.r, kind_of[k], k == 3);
          more = true;
        }
    }
    if (!t.failed) {
      rt_accept(&t, "custom");
      rt_expect(&t, ">");
    }
  }
  uint64_t used = 0;
  for (uint32_t i = 0; i < b.r->nops + b.r->nres; i++)
    for (int k = 0; k < b.r->ops[i].rank; k++)
      for (int q = 0; q < b.r->ops[i].dims[k].n; q++) used |= (uint64_t)1 << b.r->ops[i].dims[k].f[q];
  for (int f = 0; !t.failed && f < b.r->nfactors; f++) {
    if (sized[f]) b.r->size[f] = sizes[f];
    else if (used >> f & 1u) rt_fail(&t, "a factor without a size");
    else b.r->size[f] = 1; /* named by no tensor */
  }
  /* every dimension is the product of its factors, and no tensor names a factor twice */
  for (uint32_t i = 0; !t.failed && i < b.r->nops + b.r->nres; i++) {
    const av_tensor_factors *tf = &b.r->ops[i];
    const av_type *ty = i < b.r->nops ? op->operands[i]->type : op->results[i - b.r->nops].type;
    uint64_t seen = 0;
    for (int k = 0; k < tf->rank && !t.failed; k++) {
      int64_t prod = 1;
      for (int q = 0; q < tf->dims[k].n; q++) {
        int f = tf->dims[k].f[q];
        if (seen >> f & 1u) rt_fail(&t, "a factor used twice by one tensor");
        seen |= (uint64_t)1 << f;
        prod = prod > INT64_MAX / b.r->size[f] ? -1 : prod * b.r->size[f];
      }
      if (!t.failed && prod != type_dims(ty)[k]) rt_fail(&t, "a dimension whose size is not the product of its factors");
    }
  }
  if (t.failed) {
    av_factor_rule_free(b.r);
    return NULL;
  }
  return b.r;
}

/* triangular_solve(a[..., m, m], b[..., m, n] or [..., n, m] when !left_side): each matrix of
 * the batch is solved alone, so the batch dims pass through (a batch-sharded solve needs no
 * collective, as on XLA); the matrix dims are whole. */
static void rule_triangular_solve(builder *b, const av_op *op) {
  const av_type *rt = op->results[0].type;
  int r = rt->rank;
  if (op->noperands != 2 || r < 2 || op->operands[0]->type->rank != r) {
    b->failed = true;
    return;
  }
  bool left = false;
  av_attr_get_bool(op, "left_side", &left);
  int mdim = left ? r - 2 : r - 1, ndim = left ? r - 1 : r - 2;
  for (int k = 0; k < r - 2; k++) add_factor_all(b, k, rt->dims[k], AV_FACTOR_PASS_THROUGH, false);
  int64_t m = rt->dims[mdim], n = rt->dims[ndim];
  int rows[2] = {r - 2, mdim}, rows_res[1] = {mdim};
  int cols[2] = {r - 1, NULL_DIM};
  int other[2] = {NULL_DIM, ndim}, other_res[1] = {ndim};
  add_factor(b, rows, rows_res, m, AV_FACTOR_NEED_REPLICATION, false);
  add_factor(b, cols, NULL, m, AV_FACTOR_NEED_REPLICATION, false);
  add_factor(b, other, other_res, n, AV_FACTOR_NEED_REPLICATION, false);
}

static void rule_custom_call(builder *b, const av_op *op, bool *none) {
  const char *t = av_attr_get_str(op, "call_target_name");
  if (!t || !op->nresults) {
    *none = true;
    return;
  }
  if (pointwise_custom_call(t)) {
    pointwise(b, op->results[0].type);
    return;
  }
  if (av_ffi_is_batch_partitionable(t) && rule_batch_partitionable(b, op)) return;
  *none = true;
}

av_factor_rule *av_factor_rule_of(const av_op *op) {
  builder b;
  bool none = false;
  if (op->nresults == 0) return NULL;
  switch (op->code) {
    case AV_OP_CONSTANT: case AV_OP_IOTA: case AV_OP_WHILE: case AV_OP_CASE: case AV_OP_IF:
    case AV_OP_FUNC_CALL: case AV_OP_CALL: case AV_OP_SDY_MANUAL_COMPUTATION:
    case AV_OP_SDY_RESHARD: case AV_OP_OPTIMIZATION_BARRIER: case AV_OP_PARTITION_ID:
    case AV_OP_REPLICA_ID: case AV_OP_AFTER_ALL: case AV_OP_CREATE_TOKEN:
    case AV_OP_GET_TUPLE_ELEMENT: case AV_OP_TUPLE: case AV_OP_INFEED: case AV_OP_OUTFEED:
    case AV_OP_SEND: case AV_OP_RECV: case AV_OP_RNG: case AV_OP_ALL_GATHER: case AV_OP_ALL_TO_ALL:
    case AV_OP_REDUCE_SCATTER: case AV_OP_ALL_REDUCE: case AV_OP_COLLECTIVE_PERMUTE:
    case AV_OP_COLLECTIVE_BROADCAST:
      return NULL;
    default:
      break;
  }
  const av_attr *sdy_rule = op->code == AV_OP_CUSTOM_CALL ? av_op_attr(op, "sdy.sharding_rule") : NULL;
  if (sdy_rule && (sdy_rule->kind == AV_ATTR_OPAQUE || sdy_rule->kind == AV_ATTR_STRING) && av_custom_partitioner_of(op)) {
    char why[160];
    return av_factor_rule_from_sdy(op, sdy_rule->u.str.s, why, sizeof why);
  }
  if (!init_op(&b, op)) return NULL;
  const av_type *rt = op->results[0].type;
  if (!rt || rt->kind != AV_TYPE_TENSOR) b.failed = true;
  if (b.failed) {
    av_factor_rule_free(b.r);
    return NULL;
  }
  if (av_spmd_is_elementwise(op)) {
    pointwise(&b, rt);
    return finish(&b);
  }
  switch (op->code) {
    case AV_OP_BROADCAST_IN_DIM: rule_broadcast(&b, op); break;
    case AV_OP_RESHAPE: rule_reshape(&b, op->operands[0]->type, rt); break;
    case AV_OP_TRANSPOSE: rule_transpose(&b, op); break;
    case AV_OP_DOT: case AV_OP_DOT_GENERAL: rule_dot_general(&b, op); break;
    case AV_OP_REDUCE: rule_reduce(&b, op); break;
    case AV_OP_CONCATENATE: rule_concatenate(&b, op); break;
    case AV_OP_CONVOLUTION: rule_convolution(&b, op); break;
    case AV_OP_GATHER: rule_gather_scatter(&b, op, false); break;
    case AV_OP_SCATTER: rule_gather_scatter(&b, op, true); break;
    case AV_OP_SORT: rule_sort(&b, op); break;
    case AV_OP_SLICE: pointwise_mismatch(&b, op->operands[0]->type, rt, AV_FACTOR_PERMUTATION, false); break;
    case AV_OP_PAD: pointwise_mismatch(&b, op->operands[0]->type, rt, AV_FACTOR_PERMUTATION, false); break;
    case AV_OP_DYNAMIC_SLICE:
      pointwise_mismatch(&b, op->operands[0]->type, rt, AV_FACTOR_NEED_REPLICATION, true);
      break;
    case AV_OP_DYNAMIC_UPDATE_SLICE: rule_dynamic_update_slice(&b, op); break;
    case AV_OP_REVERSE: {
      int64_t dims[AV_MAX_RANK];
      size_t nd = 0;
      av_attr_get_ints(op, "dimensions", dims, AV_MAX_RANK, &nd);
      for (int k = 0; k < rt->rank; k++)
        add_factor_all(&b, k, rt->dims[k], contains(dims, nd, k) ? AV_FACTOR_PERMUTATION : AV_FACTOR_PASS_THROUGH, false);
      break;
    }
    case AV_OP_REDUCE_WINDOW: rule_reduce_window(&b, op); break;
    case AV_OP_CHOLESKY: {
      for (int k = 0; k < rt->rank; k++)
        add_factor_all(&b, k, rt->dims[k], k < rt->rank - 2 ? AV_FACTOR_PASS_THROUGH : AV_FACTOR_NEED_REPLICATION, false);
      break;
    }
    case AV_OP_TRIANGULAR_SOLVE: rule_triangular_solve(&b, op); break;
    case AV_OP_CUSTOM_CALL: rule_custom_call(&b, op, &none); break;
    case AV_OP_BITCAST_CONVERT: {
      const av_type *in = op->operands[0]->type;
      const av_type *small = in->rank < rt->rank ? in : rt;
      for (int k = 0; k < small->rank; k++) add_factor_1(&b, k, k, small->dims[k], AV_FACTOR_PASS_THROUGH, false);
      if (in->rank < rt->rank) add_factor_1(&b, NULL_DIM, rt->rank - 1, rt->dims[rt->rank - 1], AV_FACTOR_NEED_REPLICATION, false);
      else add_factor_1(&b, in->rank - 1, NULL_DIM, in->dims[in->rank - 1], AV_FACTOR_NEED_REPLICATION, false);
      break;
    }
    case AV_OP_FFT: {
      int64_t len[AV_MAX_RANK];
      size_t nl = 0;
      av_attr_get_ints(op, "fft_length", len, AV_MAX_RANK, &nl);
      const av_type *in = op->operands[0]->type;
      for (int k = 0; k < in->rank; k++) {
        if (k < in->rank - (int)nl) add_factor_all(&b, k, in->dims[k], AV_FACTOR_PASS_THROUGH, false);
        else add_factor_all(&b, k, in->dims[k], AV_FACTOR_NEED_REPLICATION,
                            k == in->rank - 1 && in->dims[k] != rt->dims[k]);
      }
      break;
    }
    default: none = true; break;
  }
  (void)add_factor_side;
  if (none) {
    av_factor_rule_free(b.r);
    return NULL;
  }
  return finish(&b);
}
