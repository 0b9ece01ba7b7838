/* Lowering of the ops whose kernels live in src/runtime/kernels/<family>.c: attributes are
 * decoded into the kernel's parameter struct once, region bodies become scalar functions
 * (with the `simple` fast-path opcode recognised here). Kernels re-check shapes cheaply. */
#include <stdlib.h>
#include <string.h>

#include "compiler/lower_internal.h"
#include "compiler/sort_key.h"
#include "runtime/kernels/conv_dnnl.h"
#include "runtime/steps_kernels.h"

static bool ints_or(av_lower *c, const av_op *op, const char *name, int64_t *out, int n,
                    int64_t dflt, bool required) {
  size_t got;
  if (!av_op_attr(op, name)) {
    if (required) return AV_INVALID(c, "missing %s", name);
    for (int i = 0; i < n; i++) out[i] = dflt;
    return true;
  }
  if (!av_attr_get_ints(op, name, out, AV_KMAX_RANK, &got) || got != (size_t)n)
    return AV_INVALID(c, "%s must have %d entries", name, n);
  return true;
}

static bool ints_any(av_lower *c, const av_op *op, const char *name, int64_t *out, int *n) {
  size_t got = 0;
  if (!av_op_attr(op, name)) {
    *n = 0;
    return true;
  }
  if (!av_attr_get_ints(op, name, out, AV_KMAX_RANK, &got))
    return AV_INVALID(c, "bad %s", name);
  *n = (int)got;
  return true;
}

static bool int_attr(av_lower *c, const av_op *op, const char *name, int64_t *v) {
  if (!av_attr_get_int(op, name, v)) return AV_INVALID(c, "missing %s", name);
  return true;
}

/* padding: [[lo, hi], ...] as a flat list of 2 * n */
static bool padding_attr(av_lower *c, const av_op *op, int n, int64_t *lo, int64_t *hi) {
  int64_t flat[2 * AV_KMAX_RANK];
  size_t got;
  if (!av_op_attr(op, "padding")) {
    for (int i = 0; i < n; i++) lo[i] = hi[i] = 0;
    return true;
  }
  if (!av_attr_get_ints(op, "padding", flat, 2 * AV_KMAX_RANK, &got) || got != (size_t)(2 * n))
    return AV_INVALID(c, "padding must have %d pairs", n);
  for (int i = 0; i < n; i++) {
    lo[i] = flat[2 * i];
    hi[i] = flat[2 * i + 1];
  }
  return true;
}

/* A region as a scalar function; `simple` when the body is one binary op or compare on its
 * two arguments, in order. */
static bool region_fn(av_lower *c, const av_op *op, uint32_t r, uint32_t nargs,
                      av_kernel_params *kp, av_scalar_fn *fn) {
  if (r >= op->nregions || op->regions[r].nblocks != 1)
    return AV_INVALID(c, "missing region %u", r);
  const av_block *b = &op->regions[r].blocks[0];
  if (b->nargs != nargs)
    return AV_INVALID(c, "region %u takes %u arguments, expected %u", r, b->nargs, nargs);
  for (uint32_t i = 0; i < nargs; i++)
    if (!b->args[i].type || b->args[i].type->kind != AV_TYPE_TENSOR || b->args[i].type->rank != 0)
      return AV_INVALID(c, "region %u arguments must be scalars", r);
  memset(fn, 0, sizeof *fn);
  fn->simple = AV_OP_UNKNOWN;
  const av_op *first = b->first;
  if (nargs == 2 && b->nops == 2 && first && first->next && first->noperands == 2 &&
      first->nresults == 1 && first->operands[0] == &b->args[0] &&
      first->operands[1] == &b->args[1] && first->next->noperands == 1 &&
      first->next->operands[0] == &first->results[0]) {
    switch (first->code) {
      case AV_OP_ADD: case AV_OP_MULTIPLY: case AV_OP_MAXIMUM: case AV_OP_MINIMUM:
      case AV_OP_AND: case AV_OP_OR: case AV_OP_XOR:
        fn->simple = first->code;
        break;
      case AV_OP_COMPARE: {
        char dir[16], ct[16];
        if (av_attr_get_enum(first, "comparison_direction", dir, sizeof dir)) {
          fn->simple = AV_OP_COMPARE;
          fn->direction = av_arena_strdup(c->a, dir);
          fn->compare_type = av_attr_get_enum(first, "compare_type", ct, sizeof ct)
                                 ? av_arena_strdup(c->a, ct)
                                 : NULL;
        }
        break;
      }
      default: break;
    }
  }
  const av_block_plan *bp = av_lower_region(c, &op->regions[r]);
  if (!bp) return false;
  kp->progs[kp->nregions] = av_build_scalar_prog(c, &op->regions[r]);
  kp->regions[kp->nregions++] = bp;
  return true;
}

static av_kernel_params *new_params(av_lower *c, av_kernel_kind kind) {
  av_kernel_params *p = av_lower_alloc(c, sizeof *p);
  if (p) p->kind = kind;
  return p;
}

static const av_slot_type *operand(av_lower *c, const av_op *op, uint32_t i) {
  if (i >= op->noperands) {
    AV_INVALID(c, "missing operand %u", i);
    return NULL;
  }
  return av_tensor_of(c, op->operands[i], "operand");
}

static bool all_tensors(av_lower *c, const av_op *op) {
  for (uint32_t i = 0; i < op->noperands; i++)
    if (!av_tensor_of(c, op->operands[i], "operand")) return false;
  for (uint32_t i = 0; i < op->nresults; i++)
    if (!av_tensor_of(c, &op->results[i], "result")) return false;
  return true;
}

static bool lower_reduce(av_lower *c, const av_op *op, bool window) {
  if (op->noperands % 2 || op->noperands == 0 || op->nresults * 2 != op->noperands)
    return AV_INVALID(c, "expected N inputs, N init values and N results");
  uint32_t n = op->nresults;
  if (n > AV_KMAX_VARIADIC) return AV_UNSUPPORTED(c, "more than %d inputs", AV_KMAX_VARIADIC);
  if (!all_tensors(c, op)) return false;
  const av_slot_type *t0 = operand(c, op, 0);
  if (!t0) return false;
  for (uint32_t i = 0; i < n; i++) {
    const av_slot_type *ti = operand(c, op, i), *ii = operand(c, op, n + i);
    if (!ti || !ii) return false;
    if (ii->rank != 0) return AV_INVALID(c, "init values must be scalars");
    if (ti->rank != t0->rank) return AV_INVALID(c, "inputs differ in rank");
    for (int k = 0; k < t0->rank; k++)
      if (ti->dims[k] != t0->dims[k]) return AV_INVALID(c, "inputs differ in shape");
  }
  av_kernel_params *p = new_params(c, window ? AV_K_REDUCE_WINDOW : AV_K_REDUCE);
  if (!p) return false;
  if (!window) {
    av_reduce_params *r = &p->u.reduce;
    r->ninputs = (int)n;
    if (!ints_any(c, op, "dimensions", r->dims, &r->ndims)) return false;
    bool seen[AV_KMAX_RANK] = {0};
    for (int i = 0; i < r->ndims; i++) {
      if (r->dims[i] < 0 || r->dims[i] >= t0->rank || seen[r->dims[i]])
        return AV_INVALID(c, "bad dimensions");
      seen[r->dims[i]] = true;
    }
    for (uint32_t k = 0; k < n; k++) {
      const av_slot_type *rt = av_vtype(c, &op->results[k]);
      if (rt->rank != t0->rank - r->ndims) return AV_INVALID(c, "result %u rank mismatch", k);
      int j = 0;
      for (int a = 0; a < t0->rank; a++)
        if (!seen[a] && rt->dims[j++] != t0->dims[a]) return AV_INVALID(c, "result %u shape mismatch", k);
    }
    return region_fn(c, op, 0, 2 * n, p, &r->body) && av_emit_op(c, av_step_kernel, p);
  }
  av_reduce_window_params *w = &p->u.reduce_window;
  int rank = t0->rank;
  av_reduce_window_params_init(w, rank);
  w->ninputs = (int)n;
  if (!ints_or(c, op, "window_dimensions", w->window_dimensions, rank, 1, true) ||
      !ints_or(c, op, "window_strides", w->window_strides, rank, 1, false) ||
      !ints_or(c, op, "base_dilations", w->base_dilations, rank, 1, false) ||
      !ints_or(c, op, "window_dilations", w->window_dilations, rank, 1, false) ||
      !padding_attr(c, op, rank, w->padding_lo, w->padding_hi))
    return false;
  for (int k = 0; k < rank; k++) {
    if (w->window_dimensions[k] < 1 || w->window_strides[k] < 1 || w->base_dilations[k] < 1 ||
        w->window_dilations[k] < 1)
      return AV_INVALID(c, "window sizes, strides and dilations must be positive");
    if (w->window_dimensions[k] > INT32_MAX || w->window_strides[k] > INT32_MAX ||
        w->base_dilations[k] > INT32_MAX || w->window_dilations[k] > INT32_MAX ||
        w->padding_lo[k] > INT32_MAX || w->padding_lo[k] < -INT32_MAX ||
        w->padding_hi[k] > INT32_MAX || w->padding_hi[k] < -INT32_MAX || t0->dims[k] > INT32_MAX)
      return AV_INVALID(c, "window attributes out of range");
    int64_t padded = (t0->dims[k] - 1) * w->base_dilations[k] + 1 + w->padding_lo[k] + w->padding_hi[k];
    if (t0->dims[k] == 0) padded = w->padding_lo[k] + w->padding_hi[k];
    int64_t win = (w->window_dimensions[k] - 1) * w->window_dilations[k] + 1;
    int64_t expect = padded >= win ? (padded - win) / w->window_strides[k] + 1 : 0;
    for (uint32_t r = 0; r < n; r++) {
      const av_slot_type *rt = av_vtype(c, &op->results[r]);
      if (rt->rank != rank || rt->dims[k] != expect)
        return AV_INVALID(c, "result %u shape mismatch in dimension %d", r, k);
    }
  }
  return region_fn(c, op, 0, 2 * n, p, &w->body) && av_emit_op(c, av_step_kernel, p);
}

static bool lower_select_and_scatter(av_lower *c, const av_op *op) {
  if (op->noperands != 3 || op->nresults != 1) return AV_INVALID(c, "bad operands");
  if (!all_tensors(c, op)) return false;
  const av_slot_type *t0 = operand(c, op, 0);
  av_kernel_params *p = new_params(c, AV_K_SELECT_AND_SCATTER);
  if (!p || !t0) return false;
  av_select_and_scatter_params *s = &p->u.sas;
  int rank = t0->rank;
  av_select_and_scatter_params_init(s, rank);
  if (!ints_or(c, op, "window_dimensions", s->window_dimensions, rank, 1, false) ||
      !ints_or(c, op, "window_strides", s->window_strides, rank, 1, false) ||
      !padding_attr(c, op, rank, s->padding_lo, s->padding_hi))
    return false;
  return region_fn(c, op, 0, 2, p, &s->select) && region_fn(c, op, 1, 2, p, &s->scatter) &&
         av_emit_op(c, av_step_kernel, p);
}

/* dot / dot_general dimension numbers of `op` (operand and result types given), checked
 * against the shapes; NULL when fine, else what is wrong. Reports nothing (loop programs
 * use it too). */
const char *av_dot_params_of(const av_op *op, const av_type *l, const av_type *r,
                             const av_type *res, av_dot_params *dp) {
  memset(dp, 0, sizeof *dp);
  /* f32 GEMMs on oneDNN, also in loop programs: a product gives the same bits whether its
   * loop runs as steps or as a loop program (and oneDNN's sgemm is the faster per core) */
  const char *onednn = getenv("ANVIL_ONEDNN");
  dp->dnnl_gemm = !onednn || strcmp(onednn, "0") != 0;
  if (op->code == AV_OP_DOT) {
    if (l->rank < 1 || l->rank > 2 || r->rank < 1 || r->rank > 2) return "dot takes vectors or matrices";
    dp->ncontract = 1;
    dp->lhs_contract[0] = l->rank - 1;
    dp->rhs_contract[0] = 0;
  } else {
    static const char *const names[4] = {"lhs_batching_dimensions", "rhs_batching_dimensions",
                                         "lhs_contracting_dimensions", "rhs_contracting_dimensions"};
    int64_t *lists[4] = {dp->lhs_batch, dp->rhs_batch, dp->lhs_contract, dp->rhs_contract};
    size_t got[4] = {0};
    for (int k = 0; k < 4; k++)
      if (av_op_attr(op, names[k]) && !av_attr_get_ints(op, names[k], lists[k], AV_KMAX_RANK, &got[k]))
        return "bad dimension numbers";
    if (got[0] != got[1] || got[2] != got[3]) return "lhs and rhs dimension lists differ in length";
    dp->nbatch = (int)got[0];
    dp->ncontract = (int)got[2];
  }
  /* result = batch dims, lhs free dims, rhs free dims */
  bool lused[AV_KMAX_RANK] = {0}, rused[AV_KMAX_RANK] = {0};
  int64_t want[AV_KMAX_RANK];
  int nw = 0;
  if (l->rank > AV_KMAX_RANK || r->rank > AV_KMAX_RANK) return "rank too large";
  for (int i = 0; i < dp->nbatch; i++) {
    int64_t a = dp->lhs_batch[i], b = dp->rhs_batch[i];
    if (a < 0 || a >= l->rank || b < 0 || b >= r->rank || lused[a] || rused[b] ||
        l->dims[a] != r->dims[b])
      return "bad batching dimensions";
    lused[a] = rused[b] = true;
    want[nw++] = l->dims[a];
  }
  for (int i = 0; i < dp->ncontract; i++) {
    int64_t a = dp->lhs_contract[i], b = dp->rhs_contract[i];
    if (a < 0 || a >= l->rank || b < 0 || b >= r->rank || lused[a] || rused[b] ||
        l->dims[a] != r->dims[b])
      return "bad contracting dimensions";
    lused[a] = rused[b] = true;
  }
  for (int a = 0; a < l->rank; a++)
    if (!lused[a]) want[nw++] = l->dims[a];
  for (int b = 0; b < r->rank; b++)
    if (!rused[b]) want[nw++] = r->dims[b];
  if (res->rank != nw) return "result rank mismatch";
  for (int i = 0; i < nw; i++)
    if (res->dims[i] != want[i]) return "result shape mismatch";
  return NULL;
}

static bool lower_dot(av_lower *c, const av_op *op) {
  if (op->noperands != 2 || op->nresults != 1) return AV_INVALID(c, "bad operands");
  if (!all_tensors(c, op)) return false;
  const av_slot_type *l = operand(c, op, 0), *r = operand(c, op, 1);
  av_kernel_params *p = new_params(c, AV_K_DOT);
  if (!p || !l || !r) return false;
  const char *why = av_dot_params_of(op, op->operands[0]->type, op->operands[1]->type,
                                     op->results[0].type, &p->u.dot);
  if (why) return AV_INVALID(c, "%s", why);
  return av_emit_op(c, av_step_kernel, p) != NULL;
}

static bool lower_conv(av_lower *c, const av_op *op) {
  bool dyn = op->code == AV_OP_DYNAMIC_CONV;
  if (op->noperands != (dyn ? 3u : 2u) || op->nresults != 1) return AV_INVALID(c, "bad operands");
  if (!all_tensors(c, op)) return false;
  const av_slot_type *l = operand(c, op, 0), *k = operand(c, op, 1);
  av_kernel_params *p = new_params(c, AV_K_CONV);
  if (!p || !l || !k) return false;
  av_conv_params *cp = &p->u.conv;
  av_conv_params_init(cp);
  int ns = l->rank - 2;
  if (ns < 0 || k->rank != l->rank) return AV_INVALID(c, "bad operand ranks");
  cp->nspatial = ns;
  int n1 = -1, n2 = -1, n3 = -1;
  if (!int_attr(c, op, "input_batch_dimension", &cp->input_batch_dimension) ||
      !int_attr(c, op, "input_feature_dimension", &cp->input_feature_dimension) ||
      !ints_any(c, op, "input_spatial_dimensions", cp->input_spatial_dimensions, &n1) ||
      !int_attr(c, op, "kernel_input_feature_dimension", &cp->kernel_input_feature_dimension) ||
      !int_attr(c, op, "kernel_output_feature_dimension", &cp->kernel_output_feature_dimension) ||
      !ints_any(c, op, "kernel_spatial_dimensions", cp->kernel_spatial_dimensions, &n2) ||
      !int_attr(c, op, "output_batch_dimension", &cp->output_batch_dimension) ||
      !int_attr(c, op, "output_feature_dimension", &cp->output_feature_dimension) ||
      !ints_any(c, op, "output_spatial_dimensions", cp->output_spatial_dimensions, &n3))
    return false;
  if (n1 != ns || n2 != ns || n3 != ns) return AV_INVALID(c, "spatial dimension lists have the wrong length");
  if (!ints_or(c, op, "window_strides", cp->window_strides, ns, 1, false) ||
      !ints_or(c, op, "lhs_dilation", cp->lhs_dilation, ns, 1, false) ||
      !ints_or(c, op, "rhs_dilation", cp->rhs_dilation, ns, 1, false))
    return false;
  if (dyn) {
    int64_t flat[2 * AV_KMAX_RANK];
    size_t n;
    if (!av_const_operand_ints(op->operands[2], flat, 2 * AV_KMAX_RANK, &n))
      return AV_UNSUPPORTED(c, "padding that is not a constant");
    if (n != (size_t)(2 * ns)) return AV_INVALID(c, "padding must have %d pairs", ns);
    for (int i = 0; i < ns; i++) {
      cp->padding_lo[i] = flat[2 * i];
      cp->padding_hi[i] = flat[2 * i + 1];
    }
  } else if (!padding_attr(c, op, ns, cp->padding_lo, cp->padding_hi)) {
    return false;
  }
  if (av_op_attr(op, "window_reversal")) {
    size_t nr;
    if (!av_attr_get_bools(op, "window_reversal", cp->window_reversal, AV_KMAX_RANK, &nr) ||
        nr != (size_t)ns)
      return AV_INVALID(c, "bad window_reversal");
  }
  int64_t g = 1, bg = 1;
  av_attr_get_int(op, "feature_group_count", &g);
  av_attr_get_int(op, "batch_group_count", &bg);
  if (g < 1 || bg < 1) return AV_INVALID(c, "group counts must be positive");
  cp->feature_group_count = g;
  cp->batch_group_count = bg;
  /* output shape */
  const av_slot_type *rt = av_vtype(c, &op->results[0]);
  if (rt->rank != l->rank) return AV_INVALID(c, "result rank mismatch");
  int64_t *dims[3] = {cp->input_spatial_dimensions, cp->kernel_spatial_dimensions,
                      cp->output_spatial_dimensions};
  for (int i = 0; i < ns; i++)
    for (int j = 0; j < 3; j++)
      if (dims[j][i] < 0 || dims[j][i] >= l->rank) return AV_INVALID(c, "spatial dimension out of range");
  if (cp->input_batch_dimension < 0 || cp->input_batch_dimension >= l->rank ||
      cp->input_feature_dimension < 0 || cp->input_feature_dimension >= l->rank ||
      cp->kernel_input_feature_dimension < 0 || cp->kernel_input_feature_dimension >= l->rank ||
      cp->kernel_output_feature_dimension < 0 || cp->kernel_output_feature_dimension >= l->rank ||
      cp->output_batch_dimension < 0 || cp->output_batch_dimension >= l->rank ||
      cp->output_feature_dimension < 0 || cp->output_feature_dimension >= l->rank)
    return AV_INVALID(c, "dimension number out of range");
  for (int i = 0; i < ns; i++) {
    if (cp->window_strides[i] < 1 || cp->lhs_dilation[i] < 1 || cp->rhs_dilation[i] < 1)
      return AV_INVALID(c, "strides and dilations must be positive");
    if (cp->window_strides[i] > INT32_MAX || cp->lhs_dilation[i] > INT32_MAX ||
        cp->rhs_dilation[i] > INT32_MAX || cp->padding_lo[i] > INT32_MAX ||
        cp->padding_lo[i] < -INT32_MAX || cp->padding_hi[i] > INT32_MAX ||
        cp->padding_hi[i] < -INT32_MAX || l->dims[cp->input_spatial_dimensions[i]] > INT32_MAX ||
        k->dims[cp->kernel_spatial_dimensions[i]] > INT32_MAX)
      return AV_INVALID(c, "convolution attributes out of range");
    int64_t in = l->dims[cp->input_spatial_dimensions[i]];
    int64_t kw = k->dims[cp->kernel_spatial_dimensions[i]];
    int64_t padded = (in > 0 ? (in - 1) * cp->lhs_dilation[i] + 1 : 0) + cp->padding_lo[i] + cp->padding_hi[i];
    int64_t win = kw > 0 ? (kw - 1) * cp->rhs_dilation[i] + 1 : 0;
    int64_t o = padded >= win && win > 0 ? (padded - win) / cp->window_strides[i] + 1 : 0;
    if (rt->dims[cp->output_spatial_dimensions[i]] != o)
      return AV_INVALID(c, "result spatial dimension %d is %lld, expected %lld", i,
                        (long long)rt->dims[cp->output_spatial_dimensions[i]], (long long)o);
  }
  if (rt->dims[cp->output_feature_dimension] != k->dims[cp->kernel_output_feature_dimension] ||
      rt->dims[cp->output_batch_dimension] != l->dims[cp->input_batch_dimension] / bg)
    return AV_INVALID(c, "result batch/feature size mismatch");
  const char *onednn = getenv("ANVIL_ONEDNN");
  if (!onednn || strcmp(onednn, "0") != 0) {
    cp->dnnl = av_conv_dnnl_plan(cp, l->dtype, l->dims, k->dtype, k->dims, rt->dtype, rt->dims);
    if (cp->dnnl && !av_lower_own(c, cp->dnnl, av_conv_dnnl_free)) return false;
  }
  return av_emit_op(c, av_step_kernel, p) != NULL;
}

static bool lower_gather(av_lower *c, const av_op *op) {
  bool dyn = op->code == AV_OP_DYNAMIC_GATHER;
  if (op->noperands != (dyn ? 3u : 2u) || op->nresults != 1) return AV_INVALID(c, "bad operands");
  if (!all_tensors(c, op)) return false;
  const av_slot_type *t0 = operand(c, op, 0);
  av_kernel_params *p = new_params(c, AV_K_GATHER);
  if (!p || !t0) return false;
  av_gather_params *g = &p->u.gather;
  int nss;
  if (!ints_any(c, op, "offset_dims", g->offset_dims, &g->n_offset_dims) ||
      !ints_any(c, op, "collapsed_slice_dims", g->collapsed_slice_dims, &g->n_collapsed_slice_dims) ||
      !ints_any(c, op, "operand_batching_dims", g->operand_batching_dims, &g->n_operand_batching_dims) ||
      !ints_any(c, op, "start_indices_batching_dims", g->start_indices_batching_dims,
                &g->n_start_indices_batching_dims) ||
      !ints_any(c, op, "start_index_map", g->start_index_map, &g->n_start_index_map) ||
      !int_attr(c, op, "index_vector_dim", &g->index_vector_dim))
    return false;
  if (dyn) {
    size_t n;
    if (!av_const_operand_ints(op->operands[2], g->slice_sizes, AV_KMAX_RANK, &n))
      return AV_UNSUPPORTED(c, "slice sizes that are not constants");
    nss = (int)n;
  } else if (!ints_any(c, op, "slice_sizes", g->slice_sizes, &nss)) {
    return false;
  }
  if (nss != t0->rank) return AV_INVALID(c, "slice_sizes must have one entry per operand dimension");
  av_attr_get_bool(op, "indices_are_sorted", &g->indices_are_sorted);
  const av_slot_type *ti = operand(c, op, 1), *tr = av_vtype(c, &op->results[0]);
  av_diag kd;
  av_diag_init(&kd);
  if (!ti || av_gather_check(g, t0->dtype, t0->rank, t0->dims, ti->dtype, ti->rank, ti->dims,
                             tr->rank, tr->dims, &kd) != AV_OK)
    return ti ? AV_INVALID(c, "%s", kd.msg) : false;
  return av_emit_op(c, av_step_kernel, p) != NULL;
}

bool av_scatter_returns_updates(const av_region *r, uint32_t n) {
  if (r->nblocks != 1) return false;
  const av_block *b = &r->blocks[0];
  const av_op *ret = b->first;
  if (b->nops != 1 || !ret || ret->code != AV_OP_RETURN || ret->noperands != n || b->nargs != 2 * n)
    return false;
  for (uint32_t k = 0; k < n; k++)
    if (ret->operands[k] != &b->args[n + k]) return false;
  return true;
}

static bool lower_scatter(av_lower *c, const av_op *op) {
  if (op->nresults < 1 || op->noperands != 2 * op->nresults + 1)
    return AV_INVALID(c, "expected N inputs, indices, N updates and N results");
  if (op->nresults > AV_KMAX_VARIADIC) return AV_UNSUPPORTED(c, "too many inputs");
  if (!all_tensors(c, op)) return false;
  av_kernel_params *p = new_params(c, AV_K_SCATTER);
  if (!p) return false;
  av_scatter_params *s = &p->u.scatter;
  s->ninputs = (int)op->nresults;
  for (uint32_t k = 0; k < op->nresults; k++) {
    const av_slot_type *it = av_vtype(c, op->operands[k]), *rt = av_vtype(c, &op->results[k]);
    if (it->dtype != rt->dtype || it->rank != rt->rank) return AV_INVALID(c, "result %u type mismatch", k);
    for (int i = 0; i < it->rank; i++)
      if (it->dims[i] != rt->dims[i]) return AV_INVALID(c, "result %u shape mismatch", k);
  }
  if (!ints_any(c, op, "update_window_dims", s->update_window_dims, &s->n_update_window_dims) ||
      !ints_any(c, op, "inserted_window_dims", s->inserted_window_dims, &s->n_inserted_window_dims) ||
      !ints_any(c, op, "input_batching_dims", s->input_batching_dims, &s->n_input_batching_dims) ||
      !ints_any(c, op, "scatter_indices_batching_dims", s->scatter_indices_batching_dims,
                &s->n_scatter_indices_batching_dims) ||
      !ints_any(c, op, "scatter_dims_to_operand_dims", s->scatter_dims_to_operand_dims,
                &s->n_scatter_dims_to_operand_dims) ||
      !int_attr(c, op, "index_vector_dim", &s->index_vector_dim))
    return false;
  av_attr_get_bool(op, "indices_are_sorted", &s->indices_are_sorted);
  av_attr_get_bool(op, "unique_indices", &s->unique_indices);
  av_view ins[AV_KMAX_VARIADIC], ups[AV_KMAX_VARIADIC];
  for (uint32_t k = 0; k < op->nresults; k++) {
    const av_slot_type *it = av_vtype(c, op->operands[k]);
    const av_slot_type *ut = av_vtype(c, op->operands[op->nresults + 1 + k]);
    ins[k] = (av_view){NULL, it->dtype, it->rank, it->dims};
    ups[k] = (av_view){NULL, ut->dtype, ut->rank, ut->dims};
  }
  const av_slot_type *st = av_vtype(c, op->operands[op->nresults]);
  av_view idx = {NULL, st->dtype, st->rank, st->dims};
  av_diag kd;
  av_diag_init(&kd);
  if (av_scatter_check(s, ins, &idx, ups, &kd) != AV_OK) return AV_INVALID(c, "%s", kd.msg);
  if (!region_fn(c, op, 0, 2 * op->nresults, p, &s->update)) return false;
  s->update_is_replace = av_scatter_returns_updates(&op->regions[0], op->nresults);
  return av_emit_op(c, av_step_kernel, p);
}

static bool lower_sort(av_lower *c, const av_op *op) {
  if (op->noperands < 1 || op->nresults != op->noperands) return AV_INVALID(c, "bad operands");
  if (op->noperands > AV_KMAX_VARIADIC) return AV_UNSUPPORTED(c, "too many inputs");
  if (!all_tensors(c, op)) return false;
  const av_slot_type *t0 = operand(c, op, 0);
  av_kernel_params *p = new_params(c, AV_K_SORT);
  if (!p || !t0) return false;
  av_sort_params *s = &p->u.sort;
  s->ninputs = (int)op->noperands;
  for (uint32_t k = 0; k < op->noperands; k++) {
    const av_slot_type *it = av_vtype(c, op->operands[k]), *rt = av_vtype(c, &op->results[k]);
    if (it->dtype != rt->dtype || it->rank != t0->rank || rt->rank != t0->rank)
      return AV_INVALID(c, "operand %u type mismatch", k);
    for (int i = 0; i < t0->rank; i++)
      if (it->dims[i] != t0->dims[i] || rt->dims[i] != t0->dims[i]) return AV_INVALID(c, "operand %u shape mismatch", k);
  }
  s->dimension = -1;
  av_attr_get_int(op, "dimension", &s->dimension);
  if (s->dimension < -t0->rank || s->dimension >= t0->rank) return AV_INVALID(c, "bad dimension");
  av_attr_get_bool(op, "is_stable", &s->is_stable);
  if (!region_fn(c, op, 0, 2 * op->noperands, p, &s->comparator)) return false;
  av_sort_key_analyze(&op->regions[0], s->ninputs, &s->key, s->more, &s->nmore);
  return av_emit_op(c, av_step_kernel, p);
}

static bool lower_fft(av_lower *c, const av_op *op) {
  if (op->noperands != 1 || op->nresults != 1) return AV_INVALID(c, "bad operands");
  if (!all_tensors(c, op)) return false;
  av_kernel_params *p = new_params(c, AV_K_FFT);
  if (!p) return false;
  char t[16];
  if (!av_attr_get_enum(op, "fft_type", t, sizeof t)) return AV_INVALID(c, "missing fft_type");
  av_fft_params *f = &p->u.fft;
  if (strcmp(t, "FFT") == 0) f->type = AV_FFT_FFT;
  else if (strcmp(t, "IFFT") == 0) f->type = AV_FFT_IFFT;
  else if (strcmp(t, "RFFT") == 0) f->type = AV_FFT_RFFT;
  else if (strcmp(t, "IRFFT") == 0) f->type = AV_FFT_IRFFT;
  else return AV_INVALID(c, "bad fft_type %s", t);
  int64_t len[AV_KMAX_RANK];
  size_t n;
  if (!av_attr_get_ints(op, "fft_length", len, AV_KMAX_RANK, &n) || n < 1 || n > 3)
    return AV_INVALID(c, "fft_length must have 1 to 3 entries");
  f->nlengths = (int)n;
  for (size_t i = 0; i < n; i++) f->fft_length[i] = len[i];
  const av_slot_type *it = operand(c, op, 0), *rt = av_tensor_of(c, &op->results[0], "result");
  if (!it || !rt) return false;
  av_view iv = {NULL, it->dtype, it->rank, it->dims}, rv = {NULL, rt->dtype, rt->rank, rt->dims};
  char err[160];
  av_code code = av_fft_plan_build(f, &iv, &rv, c->a, err, sizeof err, &f->plan);
  if (code != AV_OK) return av_lower_fail(c, code, "%s", err);
  return av_emit_op(c, av_step_kernel, p) != NULL;
}

static bool lower_linalg(av_lower *c, const av_op *op) {
  if (!all_tensors(c, op) || op->nresults != 1) return op->nresults == 1 ? false : AV_INVALID(c, "bad results");
  if (op->code == AV_OP_CHOLESKY) {
    if (op->noperands != 1) return AV_INVALID(c, "bad operands");
    av_kernel_params *p = new_params(c, AV_K_CHOLESKY);
    if (!p) return false;
    av_attr_get_bool(op, "lower", &p->u.cholesky.lower);
    return av_emit_op(c, av_step_kernel, p) != NULL;
  }
  if (op->noperands != 2) return AV_INVALID(c, "bad operands");
  av_kernel_params *p = new_params(c, AV_K_TRIANGULAR_SOLVE);
  if (!p) return false;
  av_triangular_solve_params *t = &p->u.tsolve;
  av_attr_get_bool(op, "left_side", &t->left_side);
  av_attr_get_bool(op, "lower", &t->lower);
  av_attr_get_bool(op, "unit_diagonal", &t->unit_diagonal);
  char tr[24];
  t->transpose_a = AV_TRANSPOSE_NO_TRANSPOSE;
  if (av_attr_get_enum(op, "transpose_a", tr, sizeof tr)) {
    if (strcmp(tr, "TRANSPOSE") == 0) t->transpose_a = AV_TRANSPOSE_TRANSPOSE;
    else if (strcmp(tr, "ADJOINT") == 0) t->transpose_a = AV_TRANSPOSE_ADJOINT;
    else if (strcmp(tr, "NO_TRANSPOSE") != 0) return AV_INVALID(c, "bad transpose_a %s", tr);
  }
  return av_emit_op(c, av_step_kernel, p) != NULL;
}

static bool lower_rng_bit_generator(av_lower *c, const av_op *op) {
  if (op->noperands != 1 || op->nresults != 2) return AV_INVALID(c, "bad operands");
  if (!all_tensors(c, op)) return false;
  av_kernel_params *p = new_params(c, AV_K_RNG_BIT_GENERATOR);
  if (!p) return false;
  char a[24];
  p->u.rbg.algorithm = AV_RNG_ALGORITHM_DEFAULT;
  if (av_attr_get_enum(op, "rng_algorithm", a, sizeof a)) {
    if (strcmp(a, "THREE_FRY") == 0) p->u.rbg.algorithm = AV_RNG_ALGORITHM_THREE_FRY;
    else if (strcmp(a, "PHILOX") == 0) p->u.rbg.algorithm = AV_RNG_ALGORITHM_PHILOX;
    else if (strcmp(a, "DEFAULT") != 0) return AV_INVALID(c, "bad rng_algorithm %s", a);
  }
  return av_emit_op(c, av_step_kernel, p) != NULL;
}

static bool lower_map(av_lower *c, const av_op *op) {
  if (op->noperands < 1 || op->nresults != 1) return AV_INVALID(c, "bad operands");
  if (!all_tensors(c, op)) return false;
  const av_slot_type *rt = av_vtype(c, &op->results[0]);
  for (uint32_t i = 0; i < op->noperands; i++) {
    const av_slot_type *t = av_vtype(c, op->operands[i]);
    if (t->rank != rt->rank) return AV_INVALID(c, "operand %u shape differs from the result", i);
    for (int k = 0; k < t->rank; k++)
      if (t->dims[k] != rt->dims[k]) return AV_INVALID(c, "operand %u shape differs from the result", i);
  }
  int64_t dims[AV_KMAX_RANK];
  int nd;
  if (!ints_any(c, op, "dimensions", dims, &nd)) return false;
  if (nd != rt->rank) return AV_UNSUPPORTED(c, "map over a subset of dimensions");
  for (int k = 0; k < nd; k++)
    if (dims[k] != k) return AV_UNSUPPORTED(c, "map with permuted dimensions");
  av_kernel_params *p = new_params(c, AV_K_MAP);
  if (!p) return false;
  return region_fn(c, op, 0, op->noperands, p, &p->u.map) && av_emit_op(c, av_step_kernel, p);
}

/* stablehlo.rng (a, b[, shape]): no state is kept between runs, so every run draws the same
 * numbers (XLA only promises "implementation-defined"). */
static bool lower_rng(av_lower *c, const av_op *op) {
  if (op->noperands < 2 || op->noperands > 3 || op->nresults != 1) return AV_INVALID(c, "bad operands");
  if (!all_tensors(c, op)) return false;
  av_kernel_params *p = new_params(c, AV_K_RNG);
  if (!p) return false;
  char dist[24];
  if (!av_attr_get_enum(op, "rng_distribution", dist, sizeof dist)) return AV_INVALID(c, "missing rng_distribution");
  if (strcmp(dist, "UNIFORM") == 0) p->u.rng.distribution = AV_RNG_UNIFORM;
  else if (strcmp(dist, "NORMAL") == 0) p->u.rng.distribution = AV_RNG_NORMAL;
  else return AV_INVALID(c, "bad rng_distribution %s", dist);
  p->u.rng.state = NULL;
  return av_emit_op(c, av_step_kernel, p) != NULL;
}

static bool lower_top_k(av_lower *c, const av_op *op) {
  if (op->noperands != 1 || op->nresults != 2) return AV_INVALID(c, "bad operands");
  if (!all_tensors(c, op)) return false;
  av_kernel_params *p = new_params(c, AV_K_TOP_K);
  if (!p) return false;
  if (!int_attr(c, op, "k", &p->u.top_k)) return false;
  const av_slot_type *t = av_vtype(c, op->operands[0]);
  if (t->rank < 1 || p->u.top_k < 0 || p->u.top_k > t->dims[t->rank - 1])
    return AV_INVALID(c, "k out of range");
  return av_emit_op(c, av_step_kernel, p) != NULL;
}

/* stablehlo.composite "chlo.top_k" (what lax.top_k emits): its decomposition is a stable
 * TOTALORDER-GT sort of (x, iota) along the last dimension sliced to k, exactly the top_k
 * kernel's order, which selects in O(n log k) instead of sorting the row. Other dtypes, or
 * i64 indices, keep the decomposition (*handled = false). */
static bool lower_top_k_composite(av_lower *c, const av_op *op, bool *handled) {
  *handled = false;
  const char *name = av_attr_get_str(op, "name");
  const av_attr *ca = av_op_attr(op, "composite_attributes");
  const av_attr *ka = ca && ca->kind == AV_ATTR_DICT ? av_dict_get(ca, "k") : NULL;
  if (!name || strcmp(name, "chlo.top_k") != 0 || !ka || ka->kind != AV_ATTR_INT ||
      op->noperands != 1 || op->nresults != 2)
    return false;
  const av_type *in = op->operands[0]->type, *vals = op->results[0].type, *idx = op->results[1].type;
  if (!in || !vals || !idx || in->kind != AV_TYPE_TENSOR || vals->kind != AV_TYPE_TENSOR ||
      idx->kind != AV_TYPE_TENSOR || idx->dtype != AV_DT_S32 || vals->dtype != in->dtype ||
      in->rank < 1 || !av_type_is_static(in))
    return false;
  av_dtype t = in->dtype;
  bool ok_dtype = t == AV_DT_F32 || t == AV_DT_F64 || t == AV_DT_BF16 || t == AV_DT_F16 ||
                  ((av_dtype_is_int(t) && av_dtype_bits(t) >= 8));
  int64_t k = ka->u.i;
  if (!ok_dtype || k < 0 || k > in->dims[in->rank - 1]) return false;
  *handled = true;
  if (!all_tensors(c, op)) return false;
  av_kernel_params *p = new_params(c, AV_K_TOP_K);
  if (!p) return false;
  p->u.top_k = k;
  return av_emit_op(c, av_step_kernel, p) != NULL;
}

/* XLA's built-in QR custom calls (see runtime/kernels/householder.h). @Qr gives (a, taus):
 * as two results, or, in artifacts converted from HLO (JAX 2023, `xla_shape` attribute), as
 * one tuple<a, taus> result, HLO's form of a multi-output custom call; tuples are flattened
 * into consecutive slots, so both forms lower to the same step. */
static bool is_qr_tuple_result(const av_op *op) {
  const av_type *t = op->nresults == 1 ? op->results[0].type : NULL;
  return t && t->kind == AV_TYPE_TUPLE && t->nelems == 2 && t->elems[0]->kind == AV_TYPE_TENSOR &&
         t->elems[1]->kind == AV_TYPE_TENSOR;
}

bool av_lower_qr_custom_call(av_lower *c, const av_op *op, const char *target) {
  bool qr = strcmp(target, "Qr") == 0;
  bool results_ok = qr ? op->nresults == 2 || is_qr_tuple_result(op) : op->nresults == 1;
  if (op->noperands != (qr ? 1u : 2u) || !results_ok)
    return AV_INVALID(c, "bad operands for @%s", target);
  if (is_qr_tuple_result(op) ? !av_tensor_of(c, op->operands[0], "operand") : !all_tensors(c, op))
    return false;
  av_kernel_params *p = new_params(c, qr ? AV_K_QR : AV_K_HOUSEHOLDER_PRODUCT);
  if (!p) return false;
  const av_slot_type *t = av_vtype(c, op->operands[0]);
  if (t->dtype != AV_DT_F32 && t->dtype != AV_DT_F64)
    return AV_UNSUPPORTED(c, "@%s on %s", target, av_dtype_mlir_name(t->dtype));
  return av_emit_op(c, av_step_kernel, p) != NULL;
}

static bool lower_batch_norm(av_lower *c, const av_op *op) {
  av_batch_norm_kind kind = op->code == AV_OP_BATCH_NORM_INFERENCE ? AV_BN_INFERENCE
                            : op->code == AV_OP_BATCH_NORM_TRAINING ? AV_BN_TRAINING : AV_BN_GRAD;
  uint32_t nin = kind == AV_BN_TRAINING ? 3 : 5, nout = kind == AV_BN_INFERENCE ? 1 : 3;
  if (op->noperands != nin || op->nresults != nout) return AV_INVALID(c, "bad operands");
  if (!all_tensors(c, op)) return false;
  av_kernel_params *p = new_params(c, AV_K_BATCH_NORM);
  if (!p) return false;
  p->u.batch_norm.kind = kind;
  const av_attr *eps = av_op_attr(op, "epsilon");
  if (!eps || eps->kind != AV_ATTR_FLOAT || !(eps->u.f >= 0)) return AV_INVALID(c, "bad epsilon");
  p->u.batch_norm.epsilon = eps->u.f;
  if (!int_attr(c, op, "feature_index", &p->u.batch_norm.feature_index)) return false;
  const av_slot_type *x = av_vtype(c, op->operands[0]);
  int64_t f = p->u.batch_norm.feature_index;
  if (f < 0 || f >= x->rank) return AV_INVALID(c, "feature_index out of range");
  if (x->dtype != AV_DT_F32 && x->dtype != AV_DT_F64)
    return AV_UNSUPPORTED(c, "batch norm on %s", av_dtype_mlir_name(x->dtype));
  for (uint32_t i = 0; i < nout; i++) {
    const av_slot_type *t = av_vtype(c, &op->results[i]);
    bool vec = i > 0;
    if (t->dtype != x->dtype || (vec ? (t->rank != 1 || t->dims[0] != x->dims[f]) : t->nelems != x->nelems || t->rank != x->rank))
      return AV_INVALID(c, "result %u type mismatch", i);
  }
  return av_emit_op(c, av_step_kernel, p) != NULL;
}

bool av_lower_kernel_op(av_lower *c, const av_op *op, bool *handled) {
  *handled = true;
  switch (op->code) {
    case AV_OP_REDUCE: return lower_reduce(c, op, false);
    case AV_OP_REDUCE_WINDOW: return lower_reduce(c, op, true);
    case AV_OP_SELECT_AND_SCATTER: return lower_select_and_scatter(c, op);
    case AV_OP_DOT: case AV_OP_DOT_GENERAL: return lower_dot(c, op);
    case AV_OP_CONVOLUTION: case AV_OP_DYNAMIC_CONV: return lower_conv(c, op);
    case AV_OP_GATHER: case AV_OP_DYNAMIC_GATHER: return lower_gather(c, op);
    case AV_OP_SCATTER: return lower_scatter(c, op);
    case AV_OP_SORT: return lower_sort(c, op);
    case AV_OP_FFT: return lower_fft(c, op);
    case AV_OP_CHOLESKY: case AV_OP_TRIANGULAR_SOLVE: return lower_linalg(c, op);
    case AV_OP_RNG_BIT_GENERATOR: return lower_rng_bit_generator(c, op);
    case AV_OP_MAP: return lower_map(c, op);
    case AV_OP_CHLO_TOP_K: return lower_top_k(c, op);
    case AV_OP_COMPOSITE: return lower_top_k_composite(c, op, handled);
    case AV_OP_RNG: return lower_rng(c, op);
    case AV_OP_BATCH_NORM_INFERENCE: case AV_OP_BATCH_NORM_TRAINING: case AV_OP_BATCH_NORM_GRAD:
      return lower_batch_norm(c, op);
    default:
      *handled = false;
      return false;
  }
}
