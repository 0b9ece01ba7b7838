#include "compiler/cost.h"

#include <string.h>

#include "ir/attr_util.h"

enum { AV_MAX_COST_DIMS = 64 };

static double elements(const av_type *t) {
  int64_t n = av_type_num_elements(t);
  return n > 0 ? (double)n : 0.0;
}

static double bytes_of(const av_type *t) {
  if (!t || t->kind != AV_TYPE_TENSOR) return 0.0;
  return elements(t) * (double)av_dtype_size(t->dtype);
}

static bool is_transcendental(av_opcode c) {
  switch (c) {
    case AV_OP_EXPONENTIAL: case AV_OP_EXPONENTIAL_MINUS_ONE: case AV_OP_LOG:
    case AV_OP_LOG_PLUS_ONE: case AV_OP_LOGISTIC: case AV_OP_TANH: case AV_OP_SINE:
    case AV_OP_COSINE: case AV_OP_TAN: case AV_OP_ATAN2: case AV_OP_POWER: case AV_OP_SQRT:
    case AV_OP_RSQRT: case AV_OP_CBRT: case AV_OP_CHLO_ERF: case AV_OP_CHLO_ERFC:
    case AV_OP_CHLO_ERF_INV: case AV_OP_CHLO_LGAMMA: case AV_OP_CHLO_DIGAMMA:
      return true;
    default:
      return false;
  }
}

/* Ops that do arithmetic on every result element (one flop each). */
static bool is_elementwise_arith(av_opcode c) {
  switch (c) {
    case AV_OP_ADD: case AV_OP_SUBTRACT: case AV_OP_MULTIPLY: case AV_OP_DIVIDE:
    case AV_OP_REMAINDER: case AV_OP_MAXIMUM: case AV_OP_MINIMUM: case AV_OP_NEGATE:
    case AV_OP_ABS: case AV_OP_COMPARE: case AV_OP_SELECT: case AV_OP_CLAMP: case AV_OP_SIGN:
    case AV_OP_FLOOR: case AV_OP_CEIL: case AV_OP_ROUND_NEAREST_AFZ:
    case AV_OP_ROUND_NEAREST_EVEN: case AV_OP_AND: case AV_OP_OR: case AV_OP_XOR:
    case AV_OP_NOT:
      return true;
    default:
      return false;
  }
}

/* 2 * (result elements) * (contracted elements) for dot_general. */
static double dot_flops(const av_op *op) {
  if (op->noperands < 1 || op->nresults < 1) return 0.0;
  const av_type *lhs = op->operands[0]->type;
  const av_attr *contract = av_op_attr(op, "lhs_contracting_dimensions");
  double k = 1.0;
  int64_t dims[AV_MAX_COST_DIMS];
  size_t n = 0;
  if (contract && av_attr_as_i64s(contract, dims, AV_MAX_COST_DIMS, &n)) {
    for (size_t i = 0; i < n; i++)
      if (lhs && lhs->kind == AV_TYPE_TENSOR && dims[i] >= 0 && dims[i] < lhs->rank)
        k *= (double)lhs->dims[dims[i]];
  }
  return 2.0 * elements(op->results[0].type) * k;
}

/* 2 * (result elements) * (kernel elements per output feature) for convolution. */
static double conv_flops(const av_op *op) {
  if (op->noperands < 2 || op->nresults < 1) return 0.0;
  const av_type *rhs = op->operands[1]->type;
  const av_attr *out_feature = av_op_attr(op, "kernel_output_feature_dimension");
  double kernel = elements(rhs);
  if (out_feature && out_feature->kind == AV_ATTR_INT && rhs && rhs->kind == AV_TYPE_TENSOR &&
      out_feature->u.i >= 0 && out_feature->u.i < rhs->rank && rhs->dims[out_feature->u.i] > 0)
    kernel /= (double)rhs->dims[out_feature->u.i];
  return 2.0 * elements(op->results[0].type) * kernel;
}

static void add_region(const av_module *m, const av_region *r, av_cost *c, int depth);

av_cost av_op_cost(const av_op *op) {
  av_cost c;
  memset(&c, 0, sizeof c);
  if (op->code == AV_OP_FUNC_RETURN || op->code == AV_OP_RETURN || op->code == AV_OP_SDY_RETURN)
    return c; /* terminators move nothing */
  double out_elems = op->nresults ? elements(op->results[0].type) : 0.0;
  for (uint32_t i = 0; i < op->noperands; i++) c.bytes_accessed += bytes_of(op->operands[i]->type);
  for (uint32_t i = 0; i < op->nresults; i++) c.bytes_accessed += bytes_of(op->results[i].type);
  if (op->code == AV_OP_DOT_GENERAL) {
    c.flops += dot_flops(op);
  } else if (op->code == AV_OP_CONVOLUTION) {
    c.flops += conv_flops(op);
  } else if (op->code == AV_OP_REDUCE || op->code == AV_OP_REDUCE_WINDOW) {
    for (uint32_t i = 0; i < op->noperands / 2; i++) c.flops += elements(op->operands[i]->type);
  } else if (is_transcendental(op->code)) {
    c.transcendentals += out_elems;
  } else if (is_elementwise_arith(op->code)) {
    c.flops += out_elems;
  }
  return c;
}

static void add_op(const av_module *m, const av_op *op, av_cost *c, int depth) {
  av_cost own = av_op_cost(op);
  c->flops += own.flops;
  c->transcendentals += own.transcendentals;
  c->bytes_accessed += own.bytes_accessed;
  /* Region bodies of reduce/sort/scatter are already counted per element above; control flow
   * (while/if/case) and calls contribute their bodies once. */
  if (op->code == AV_OP_WHILE || op->code == AV_OP_IF || op->code == AV_OP_CASE ||
      op->code == AV_OP_SDY_MANUAL_COMPUTATION || op->code == AV_OP_COMPOSITE) {
    for (uint32_t i = 0; i < op->nregions; i++) add_region(m, &op->regions[i], c, depth + 1);
  }
  if (op->code == AV_OP_FUNC_CALL && depth < 64) {
    const av_attr *callee = av_op_attr(op, "callee");
    if (callee && (callee->kind == AV_ATTR_SYMBOL || callee->kind == AV_ATTR_STRING)) {
      const av_func *f = av_module_find_func(m, callee->u.str.s);
      if (f) add_region(m, &f->body, c, depth + 1);
    }
  }
}

static void add_region(const av_module *m, const av_region *r, av_cost *c, int depth) {
  if (depth > 64) return; /* hostile nesting: the estimate stays finite */
  for (uint32_t b = 0; b < r->nblocks; b++)
    for (const av_op *op = r->blocks[b].first; op; op = op->next) add_op(m, op, c, depth);
}

av_cost av_module_cost(const av_module *m) {
  av_cost c;
  memset(&c, 0, sizeof c);
  const av_func *entry = m ? av_module_entry(m) : NULL;
  if (entry) add_region(m, &entry->body, &c, 0);
  return c;
}
