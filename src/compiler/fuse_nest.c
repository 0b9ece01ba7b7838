/* Reduction nests (issue #26, phase 2): a reduce over one axis of an expression built from
 * broadcasts (n-body's forces: sum over j of (p[j] - p[i]) * f(|p[j] - p[i]|)) becomes one
 * generated kernel that never writes the expression (runtime/steps_nest.c). Found on the IR
 * of a block before it is lowered: the reduce is the root, the ops it reads from that nothing
 * else reads are absorbed (they get no steps), and the values the expression starts from are
 * the nest's inputs.
 *
 * What qualifies (anything else is lowered as before):
 *  - the root: an f32 add-reduce of one operand X of rank 2 or 3 over one axis R that is not
 *    X's innermost (so the interpreter sums each output sequentially in double, in order of
 *    R: runtime/kernels/reduce.c, the order the kernel keeps); the other axes are V (the
 *    longer, vectorised) and K (at most AV_NEST_MAX_K, unrolled), or V alone;
 *  - inside: f32 elementwise ops, broadcast_in_dim, reshapes that only add or drop unit
 *    axes, splat constants, and f32 add-reduces over X's K axis where it is the innermost
 *    axis (summed as the interpreter does: (double)init + ((-0 + x0) + x1 ...));
 *  - inputs: f32 arrays read along at most two of V, R, K, never V and R together (that is
 *    a plain reduce of an array, which the reduce kernel does well), and at least one that
 *    lacks V or R (a broadcast: what makes writing X wasteful). */
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "compiler/lower_internal.h"

enum { NEST_MAX_NODES = 96, NEST_MAX_RANK = 8, AXIS_V = 0, AXIS_R = 1, AXIS_K = 2, NO_AXIS = -1 };

typedef struct nest_build {
  av_lower *c;
  const av_block *b;
  const uint32_t *uses;  /* per value id: uses by the block's live ops */
  av_cg_nest_node nodes[NEST_MAX_NODES];
  const av_value *val[NEST_MAX_NODES]; /* the value each node computes */
  int8_t map[NEST_MAX_NODES][NEST_MAX_RANK];
  uint32_t nnodes;
  const av_value *inputs[NEST_MAX_NODES];
  uint32_t ninputs;
  const av_op *members[NEST_MAX_NODES]; /* ops absorbed */
  uint32_t nmembers;
  const av_value *forced[NEST_MAX_NODES]; /* values that must be inputs (read elsewhere) */
  uint32_t nforced;
  int64_t extent[3];
  bool failed;
} nest_build;

static const av_type *tensor_f32(const av_value *v) {
  const av_type *t = v->type;
  if (!t || t->kind != AV_TYPE_TENSOR || t->dtype != AV_DT_F32 || !av_type_is_static(t) || t->rank > NEST_MAX_RANK)
    return NULL;
  return t;
}

/* The region of a reduce is a lone add of its two arguments. */
static bool add_body(const av_op *op) {
  if (op->nregions != 1 || op->regions[0].nblocks != 1) return false;
  const av_block *b = &op->regions[0].blocks[0];
  const av_op *a = b->first;
  if (!a || b->nargs != 2 || a->code != AV_OP_ADD || a->noperands != 2 || a->nresults != 1) return false;
  bool args = (a->operands[0] == &b->args[0] && a->operands[1] == &b->args[1]) ||
              (a->operands[0] == &b->args[1] && a->operands[1] == &b->args[0]);
  const av_op *ret = a->next;
  return args && ret && !ret->next && ret->noperands == 1 && ret->operands[0] == &a->results[0];
}

/* The one reduced dimension of a single-input f32 add-reduce, or -1. */
static int reduce_dim(const av_op *op) {
  if (op->code != AV_OP_REDUCE || op->noperands != 2 || op->nresults != 1 || !add_body(op)) return -1;
  int64_t dims[NEST_MAX_RANK];
  size_t n;
  if (!av_attr_get_ints(op, "dimensions", dims, NEST_MAX_RANK, &n) || n != 1) return -1;
  const av_type *t = tensor_f32(op->operands[0]);
  const av_type *it = op->operands[1]->type;
  if (!t || dims[0] < 0 || dims[0] >= t->rank || !it || it->kind != AV_TYPE_TENSOR || it->rank != 0 ||
      it->dtype != AV_DT_F32 || !tensor_f32(&op->results[0]))
    return -1;
  return (int)dims[0];
}

static bool forced(const nest_build *nb, const av_value *v) {
  for (uint32_t i = 0; i < nb->nforced; i++)
    if (nb->forced[i] == v) return true;
  return false;
}

static uint32_t add_node(nest_build *nb, av_cg_nest_node n, const av_value *v, const int8_t *map, int rank) {
  if (nb->nnodes == NEST_MAX_NODES) {
    nb->failed = true;
    return 0;
  }
  uint32_t i = nb->nnodes++;
  nb->nodes[i] = n;
  nb->val[i] = v;
  memset(nb->map[i], NO_AXIS, sizeof nb->map[i]);
  if (map) memcpy(nb->map[i], map, (size_t)rank);
  return i;
}

static bool member(nest_build *nb, const av_op *op) {
  for (uint32_t i = 0; i < nb->nmembers; i++)
    if (nb->members[i] == op) return true;
  if (nb->nmembers == NEST_MAX_NODES) return false;
  nb->members[nb->nmembers++] = op;
  return true;
}

static uint32_t visit(nest_build *nb, const av_value *v, const int8_t *map);
static uint32_t visit_op(nest_build *nb, const av_value *v, const av_op *op, const av_type *t, const int8_t *map);

/* v as an input of the nest, read along the axes of `map` at its row-major strides */
static uint32_t leaf(nest_build *nb, const av_value *v, const int8_t *map) {
  const av_type *t = tensor_f32(v);
  if (!t) {
    nb->failed = true;
    return 0;
  }
  int64_t stride[3] = {0, 0, 0}, s = 1;
  for (int d = t->rank; d-- > 0;) {
    if (t->dims[d] != 1) {
      if (map[d] == NO_AXIS || stride[map[d]] != 0 || t->dims[d] != nb->extent[map[d]]) {
        nb->failed = true;
        return 0;
      }
      stride[map[d]] = s;
    }
    s *= t->dims[d];
  }
  if (s > INT32_MAX) nb->failed = true;
  uint32_t input = 0;
  while (input < nb->ninputs && nb->inputs[input] != v) input++;
  if (input == nb->ninputs) nb->inputs[nb->ninputs++] = v;
  av_cg_nest_node n = {AV_NEST_LEAF, 0, AV_DT_F32, input, stride[0], stride[1], stride[2], 0, NULL, {0}};
  for (int a = 0; a < 3; a++)
    if (stride[a]) n.axes |= (uint8_t)(1u << a);
  return add_node(nb, n, v, map, t->rank);
}

/* The node computing value v, whose dimensions run along `map` (a nest axis or NO_AXIS per
 * dimension). */
static uint32_t visit(nest_build *nb, const av_value *v, const int8_t *map) {
  const av_type *t = tensor_f32(v);
  if (!t || nb->failed) {
    nb->failed = true;
    return 0;
  }
  for (uint32_t i = 0; i < nb->nnodes; i++) /* a value reached again along the same axes */
    if (nb->val[i] == v && !memcmp(nb->map[i], map, (size_t)t->rank)) return i;
  const av_op *op = v->def;
  if (!op || op->parent != nb->b || forced(nb, v) || op->nresults != 1) return leaf(nb, v, map);
  /* computed inside when everything it needs can be; else read as an input */
  uint32_t n0 = nb->nnodes, i0 = nb->ninputs, m0 = nb->nmembers;
  uint32_t got = visit_op(nb, v, op, t, map);
  if (!nb->failed) return got;
  nb->failed = false;
  nb->nnodes = n0;
  nb->ninputs = i0;
  nb->nmembers = m0;
  return leaf(nb, v, map);
}

static uint32_t visit_op(nest_build *nb, const av_value *v, const av_op *op, const av_type *t, const int8_t *map) {
  int8_t sub[NEST_MAX_RANK];
  switch (op->code) {
    case AV_OP_CONSTANT: {
      const av_attr *a = av_op_attr(op, "value");
      if (!a || a->kind != AV_ATTR_DENSE || !a->u.dense.splat || a->u.dense.size < 4) return leaf(nb, v, map);
      uint32_t bits;
      memcpy(&bits, a->u.dense.data, 4);
      if (!member(nb, op)) break;
      return add_node(nb, (av_cg_nest_node){AV_NEST_CONST, 0, AV_DT_F32, 0, 0, 0, 0, bits, NULL, {0}}, v, map, t->rank);
    }
    case AV_OP_BROADCAST_IN_DIM: {
      const av_type *it = tensor_f32(op->operands[0]);
      int64_t bd[NEST_MAX_RANK];
      size_t n;
      if (!it || !av_attr_get_ints(op, "broadcast_dimensions", bd, NEST_MAX_RANK, &n) || n != (size_t)it->rank)
        return leaf(nb, v, map);
      for (int d = 0; d < it->rank; d++) {
        if (bd[d] < 0 || bd[d] >= t->rank) return leaf(nb, v, map);
        sub[d] = it->dims[d] == t->dims[bd[d]] ? map[bd[d]] : it->dims[d] == 1 ? NO_AXIS : -2;
        if (sub[d] == -2) return leaf(nb, v, map);
      }
      if (!member(nb, op)) break;
      return visit(nb, op->operands[0], sub);
    }
    case AV_OP_RESHAPE: { /* only unit dimensions added or dropped: the same axes in order */
      const av_type *it = tensor_f32(op->operands[0]);
      if (!it) return leaf(nb, v, map);
      int r = 0;
      for (int d = 0; d < it->rank; d++) {
        if (it->dims[d] == 1) {
          sub[d] = NO_AXIS;
          continue;
        }
        while (r < t->rank && t->dims[r] == 1) r++;
        if (r == t->rank || t->dims[r] != it->dims[d]) return leaf(nb, v, map);
        sub[d] = map[r++];
      }
      while (r < t->rank && t->dims[r] == 1) r++;
      if (r != t->rank || !member(nb, op)) return leaf(nb, v, map);
      return visit(nb, op->operands[0], sub);
    }
    case AV_OP_REDUCE: { /* over K, K innermost: the inner sum */
      int rd = reduce_dim(op);
      const av_type *it = rd >= 0 ? tensor_f32(op->operands[0]) : NULL;
      if (!it || rd != it->rank - 1 || it->dims[rd] != nb->extent[AXIS_K] || it->rank - 1 != t->rank) return leaf(nb, v, map);
      for (int d = 0; d < t->rank; d++)
        if (map[d] == AXIS_K) return leaf(nb, v, map);
      memcpy(sub, map, (size_t)t->rank);
      sub[rd] = AXIS_K;
      if (!member(nb, op)) break;
      uint32_t x = visit(nb, op->operands[0], sub);
      int8_t none[NEST_MAX_RANK];
      memset(none, NO_AXIS, sizeof none);
      uint32_t init = visit(nb, op->operands[1], none);
      if (nb->failed) return 0;
      av_cg_nest_node n = {AV_NEST_SUM_K, (uint8_t)(nb->nodes[x].axes & ~(1u << AXIS_K)), AV_DT_F32, 0, 0, 0, 0, 0, NULL, {x, init}};
      return add_node(nb, n, v, map, t->rank);
    }
    default: break;
  }
  int arity = av_ew_arity(op->code);
  if (arity <= 0 || (uint32_t)arity != op->noperands || op->code == AV_OP_COMPARE) return leaf(nb, v, map);
  for (int q = 0; q < arity; q++) {
    const av_type *qt = tensor_f32(op->operands[q]);
    if (!qt || qt->rank != t->rank) return leaf(nb, v, map);
  }
  av_cmp_dir dir;
  av_cmp_type ct;
  const av_ew_kernel *k = av_ew_kernel_of(nb->c, op, AV_DT_F32, AV_DT_F32, &dir, &ct);
  if (!k || !member(nb, op)) return leaf(nb, v, map);
  av_cg_nest_node n = {AV_NEST_OP, 0, AV_DT_F32, 0, 0, 0, 0, 0, k, {0}};
  for (int q = 0; q < arity && !nb->failed; q++) {
    n.in[q] = visit(nb, op->operands[q], map);
    n.axes |= nb->nodes[n.in[q]].axes;
  }
  return nb->failed ? 0 : add_node(nb, n, v, map, t->rank);
}

/* The nest of reduce `root`, or false. */
static bool build(nest_build *nb, const av_op *root, av_nest_params *p) {
  int rd = reduce_dim(root);
  const av_type *xt = rd >= 0 ? tensor_f32(root->operands[0]) : NULL;
  if (!xt || (xt->rank != 2 && xt->rank != 3) || rd == xt->rank - 1) return false;
  int8_t map[NEST_MAX_RANK];
  int kd = -1, vd = -1;
  for (int d = 0; d < xt->rank; d++) {
    if (d == rd) continue;
    if (xt->rank == 2) vd = d;
    else if (d == xt->rank - 1 && xt->dims[d] <= AV_NEST_MAX_K) kd = d;
    else vd = vd < 0 ? d : vd;
  }
  if (xt->rank == 3 && kd < 0) { /* the innermost is long: V, and the other short K */
    vd = xt->rank - 1;
    kd = rd == 0 ? 1 : 0;
    if (xt->dims[kd] > AV_NEST_MAX_K) return false;
  }
  if (vd < 0) return false;
  for (int d = 0; d < xt->rank; d++) map[d] = d == rd ? AXIS_R : d == vd ? AXIS_V : AXIS_K;
  nb->extent[AXIS_V] = xt->dims[vd];
  nb->extent[AXIS_R] = xt->dims[rd];
  nb->extent[AXIS_K] = kd >= 0 ? xt->dims[kd] : 1;
  if (nb->extent[AXIS_V] * nb->extent[AXIS_K] > INT32_MAX / 16 || nb->extent[AXIS_R] < 2) return false;
  /* the result: the kept dimensions in order */
  p->nv = nb->extent[AXIS_V];
  p->nr = nb->extent[AXIS_R];
  p->nk = nb->extent[AXIS_K];
  p->out_vstride = kd > vd ? p->nk : 1;
  p->out_kstride = kd < 0 ? 0 : kd > vd ? 1 : p->nv;
  for (int round = 0; round < 4; round++) {
    nb->nnodes = nb->ninputs = nb->nmembers = 0;
    nb->failed = false;
    uint32_t x = visit(nb, root->operands[0], map);
    int8_t none[NEST_MAX_RANK];
    memset(none, NO_AXIS, sizeof none);
    uint32_t init = visit(nb, root->operands[1], none);
    if (nb->failed || !(nb->nodes[x].axes & (1u << AXIS_R))) return false;
    /* every value an absorbed op makes must be read by absorbed ops (or the root) only */
    bool again = false;
    for (uint32_t m = 0; m < nb->nmembers && !again; m++) {
      const av_value *r = &nb->members[m]->results[0];
      uint32_t inside = r == root->operands[0] || r == root->operands[1];
      for (uint32_t q = 0; q < nb->nmembers; q++)
        for (uint32_t o = 0; o < nb->members[q]->noperands; o++) inside += nb->members[q]->operands[o] == r;
      if (nb->uses[r->id] > inside) {
        if (nb->nforced == NEST_MAX_NODES) return false;
        nb->forced[nb->nforced++] = r;
        again = true;
      }
    }
    if (again) continue;
    /* worth it: some input is a broadcast, none is a full V x R array */
    bool bcast = false;
    for (uint32_t i = 0; i < nb->nnodes; i++) {
      if (nb->nodes[i].kind != AV_NEST_LEAF) continue;
      uint8_t a = nb->nodes[i].axes;
      if ((a & 1u << AXIS_V) && (a & 1u << AXIS_R)) return false;
      bcast = bcast || !(a & 1u << AXIS_V) || !(a & 1u << AXIS_R);
    }
    if (!bcast || nb->ninputs == 0) return false;
    av_cg_nest_desc d = {p->nv, p->nr, p->nk, nb->nodes, nb->nnodes, x, init, root->loc};
    av_cg_nest_kernel *k = av_codegen_nest(av_lower_code(nb->c), &d);
    if (!k) return false;
    if (!av_lower_own(nb->c, k, av_codegen_free)) return false;
    p->gen = k;
    return true;
  }
  return false;
}

static void count_uses(av_lower *c, const av_op *op, uint32_t *uses) {
  for (uint32_t i = 0; i < op->noperands; i++)
    if (op->operands[i]->id < c->nvalues) uses[op->operands[i]->id]++;
  for (uint32_t r = 0; r < op->nregions; r++)
    for (uint32_t b = 0; b < op->regions[r].nblocks; b++)
      for (const av_op *in = op->regions[r].blocks[b].first; in; in = in->next) count_uses(c, in, uses);
}

uint32_t av_find_nests(av_lower *c, const av_block *b, const av_op *const *ops, uint32_t n, uint8_t *live,
                       av_nest *out, uint32_t cap) {
  if (!av_codegen_enabled()) return 0;
  bool any = false;
  for (uint32_t i = 0; i < n && !any; i++) any = live[i] && reduce_dim(ops[i]) >= 0;
  if (!any) return 0;
  uint32_t *uses = calloc((size_t)c->nvalues + 1, sizeof *uses);
  nest_build *nb = calloc(1, sizeof *nb);
  uint32_t found = 0;
  if (uses && nb) {
    for (uint32_t i = 0; i < n; i++)
      if (live[i]) count_uses(c, ops[i], uses);
    for (uint32_t i = 0; i < n && found < cap; i++) {
      if (!live[i] || reduce_dim(ops[i]) < 0) continue;
      memset(nb, 0, sizeof *nb);
      nb->c = c;
      nb->b = b;
      nb->uses = uses;
      av_nest_params *p = av_lower_alloc(c, sizeof *p);
      if (!p || !build(nb, ops[i], p)) continue;
      const av_value **in = av_lower_alloc(c, sizeof *in * (nb->ninputs + 1));
      if (!in) continue;
      memcpy(in, nb->inputs, sizeof *in * nb->ninputs);
      out[found++] = (av_nest){i, p, in, nb->ninputs};
      for (uint32_t m = 0; m < nb->nmembers; m++) /* absorbed: no steps of their own */
        for (uint32_t j = 0; j < n; j++)
          if (ops[j] == nb->members[m]) live[j] = 0;
    }
  }
  free(uses);
  free(nb);
  return found;
}
