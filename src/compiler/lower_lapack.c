/* stablehlo.custom_call @lapack_<t><routine>_ffi: JAX's CPU linear algebra (see
 * runtime/kernels/lapack.h). Collects the operand and result shapes with their layouts and
 * the backend_config dictionary; the kernel side checks and decodes them. */
#include <stdlib.h>
#include <string.h>

#include "compiler/lower_internal.h"
#include "runtime/kernels/lapack.h"

bool av_is_lapack_target(const char *target) {
  av_lapack_routine r;
  av_dtype t;
  return av_lapack_target(target, &r, &t);
}

/* Layout `i` of an operand_layouts/result_layouts array, or row-major when there is none. */
static bool read_layout(av_lower *c, const char *target, const av_attr *layouts, uint32_t i,
                        av_lapack_arg *a, const char *what) {
  size_t n = 0;
  if (layouts && layouts->kind == AV_ATTR_ARRAY && i < layouts->u.array.n) {
    if (!av_attr_ints_of(layouts->u.array.items[i], a->minor_to_major, AV_LAPACK_MAX_RANK, &n) ||
        n != (size_t)a->rank)
      return AV_INVALID(c, "@%s: %s %u: layout does not match its rank %d", target, what, i,
                        a->rank);
    return true;
  }
  if (layouts) return AV_INVALID(c, "@%s: %s_layouts has no entry %u", target, what, i);
  for (int j = 0; j < a->rank; j++) a->minor_to_major[j] = a->rank - 1 - j;
  return true;
}

static bool read_arg(av_lower *c, const char *target, const av_value *v, const av_attr *layouts,
                     uint32_t i, av_lapack_arg *a, const char *what) {
  const av_slot_type *t = av_tensor_of(c, v, what);
  if (!t) return false;
  if (t->rank > AV_LAPACK_MAX_RANK)
    return AV_UNSUPPORTED(c, "@%s: %s %u: rank %d", target, what, i, t->rank);
  a->dtype = t->dtype;
  a->rank = t->rank;
  for (int j = 0; j < t->rank; j++) a->dims[j] = t->dims[j];
  return read_layout(c, target, layouts, i, a, what);
}

bool av_lower_lapack(av_lower *c, const av_op *op, const char *target) {
  if (op->noperands > AV_LAPACK_MAX_ARGS || op->nresults > AV_LAPACK_MAX_ARGS)
    return AV_INVALID(c, "@%s: too many operands or results", target);
  av_lapack_call *call = av_lower_alloc(c, sizeof *call);
  if (!call) return false;
  call->nin = op->noperands;
  call->nout = op->nresults;
  const av_attr *ol = av_op_attr(op, "operand_layouts"), *rl = av_op_attr(op, "result_layouts");
  for (uint32_t i = 0; i < op->noperands; i++)
    if (!read_arg(c, target, op->operands[i], ol, i, &call->in[i], "operand")) return false;
  for (uint32_t k = 0; k < op->nresults; k++)
    if (!read_arg(c, target, &op->results[k], rl, k, &call->out[k], "result")) return false;
  /* api_version 4 keeps the attributes in a dictionary (mhlo.backend_config in JAX's
   * output; backend_config itself in StableHLO's typed form) */
  const av_attr *cfg = av_op_attr(op, "mhlo.backend_config");
  if (!cfg || cfg->kind != AV_ATTR_DICT) {
    const av_attr *alt = av_op_attr(op, "backend_config");
    cfg = alt && alt->kind == AV_ATTR_DICT ? alt : NULL;
  }
  char err[256];
  av_code code = av_lapack_prepare(target, cfg, call, err, sizeof err);
  if (code != AV_OK) return av_lower_fail(c, code, "@%s: %s", target, err);
  const char *lanes = getenv("ANVIL_BATCHED_EIGH");
  call->lanes_eigh = lanes && strcmp(lanes, "1") == 0;
  return av_emit_op(c, av_step_lapack, call) != NULL;
}
