/* Partitioning a custom call with a registered custom partitioner (jax.experimental.
 * custom_partitioning's @CustomSPMDPartitioning), as XLA's partitioner does it: the
 * partition callback is told the shapes and propagated shardings of the operands and
 * results, and answers with the shardings it wants for them and a per-device program. The
 * operands are resharded to those shardings, and the program's main is inlined in place of
 * the call: its collectives are per-device code over the program's device ids (like a
 * shard_map body). The results hold the shards of the returned result shardings and are then
 * resharded to their propagated ones. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/custom_partitioner.h"
#include "compiler/spmd_part_internal.h"
#include "frontend/load.h"
#include "ir/clone.h"
#include "ir/printer.h"

/* A type mismatch between main of the returned module and the call's shards. */
static bool type_mismatch(av_part *P, const char *who, const char *what, uint32_t i, const av_type *got,
                          const av_type *want) {
  char *g = av_type_print(got), *w = av_type_print(want);
  av_part_fail(P, AV_INVALID_ARGUMENT, "%s: main's %s %u is %s, the shard of the call's %s %u is %s", who, what, i,
               g ? g : "?", what, i, w ? w : "?");
  free(g);
  free(w);
  return false;
}

/* The values of main of `sub` (its arguments bound to `args`) copied before P->before;
 * main's returned values in `out`. */
static bool inline_main(av_part *P, av_op *op, av_module *sub, av_value *const *args, const av_type *const *want_res,
                        av_value **out) {
  const char *who = "the module its custom partitioner returned";
  av_func *main_fn = av_module_entry(sub);
  if (!main_fn || main_fn->body.nblocks != 1 || !main_fn->body.blocks[0].last)
    return av_part_fail(P, AV_INVALID_ARGUMENT, "%s has no main function of one block", who);
  const av_block *body = &main_fn->body.blocks[0];
  const av_op *ret = body->last;
  if (body->nargs != op->noperands || ret->noperands != op->nresults)
    return av_part_fail(P, AV_INVALID_ARGUMENT, "%s: main takes %u arguments and returns %u values, the call has %u operands and %u results",
                        who, body->nargs, ret->noperands, op->noperands, op->nresults);
  for (uint32_t i = 0; i < body->nargs; i++)
    if (!av_type_equal(body->args[i].type, args[i]->type))
      return type_mismatch(P, who, "argument", i, body->args[i].type, args[i]->type);
  for (uint32_t i = 0; i < ret->noperands; i++)
    if (!av_type_equal(ret->operands[i]->type, want_res[i]))
      return type_mismatch(P, who, "result", i, ret->operands[i]->type, want_res[i]);
  av_clone c;
  av_clone_init(&c, P->m, P->d);
  for (uint32_t i = 0; i < body->nargs; i++) av_clone_map(&c, &body->args[i], args[i]);
  for (const av_op *o = body->first; o && o != ret && !c.failed; o = o->next) {
    if (o->code == AV_OP_SDY_MANUAL_COMPUTATION || o->code == AV_OP_FUNC_CALL || o->code == AV_OP_CALL) {
      av_clone_free(&c);
      return av_part_fail(P, AV_UNIMPLEMENTED, "%s: %s in its main", who, o->name);
    }
    av_clone_op(&c, o, P->b, P->before);
  }
  for (uint32_t i = 0; i < ret->noperands && !c.failed; i++)
    if (!(out[i] = av_clone_lookup(&c, ret->operands[i])))
      return av_clone_free(&c), av_part_fail(P, AV_INVALID_ARGUMENT, "%s: main returns a value it does not define", who);
  bool ok = !c.failed;
  av_clone_free(&c);
  if (!ok) P->failed = true;
  return ok;
}

bool av_part_custom(av_part *P, av_op *op) {
  av_cp_callbacks *cb = av_custom_partitioner_of(op);
  if (!cb) return false;
  uint32_t nin = op->noperands, nres = op->nresults;
  const av_type **types = calloc((size_t)nin + 1, sizeof *types);
  const av_type **rtypes = calloc((size_t)nres + 1, sizeof *rtypes);
  const av_sharding **sh = calloc((size_t)nin + nres + 1, sizeof *sh);
  av_sharding *buf = calloc((size_t)nin + nres + 1, sizeof *buf);
  av_value **vals = calloc((size_t)nin + nres + 1, sizeof *vals);
  av_module *sub = NULL;
  av_cp_partition_result res = {0};
  if (!types || !rtypes || !sh || !buf || !vals) {
    av_part_fail(P, AV_RESOURCE_EXHAUSTED, "out of memory");
    goto done;
  }
  for (uint32_t i = 0; i < nin; i++) {
    const av_value *o = op->operands[i];
    types[i] = o->id < P->nval && P->gtype[o->id] ? P->gtype[o->id] : o->type;
    sh[i] = av_part_target(P, o, &buf[i]);
  }
  for (uint32_t i = 0; i < nres; i++) sh[nin + i] = av_part_target(P, &op->results[i], &buf[nin + i]);
  if (av_cp_call_partition(cb, op, types, sh, sh + nin, P->mesh, &res, P->d) != AV_OK) {
    P->failed = true;
    goto done;
  }
  /* the operands as the partitioner wants them */
  for (uint32_t i = 0; i < nin && !P->failed; i++) {
    const av_sharding *want = res.args[i].mesh ? av_part_keep(P, &res.args[i]) : NULL;
    if (!av_part_local_type(P, types[i], want)) {
      av_part_fail(P, AV_UNIMPLEMENTED, "the sharding its custom partitioner wants for operand %u does not divide it evenly", i);
      break;
    }
    vals[i] = av_part_operand(P, op->operands[i], want);
  }
  for (uint32_t i = 0; i < nres && !P->failed; i++) {
    rtypes[i] = av_part_local_type(P, op->results[i].type, &res.results[i]);
    if (!rtypes[i]) av_part_fail(P, AV_UNIMPLEMENTED, "the sharding its custom partitioner gives result %u does not divide it evenly", i);
  }
  if (P->failed) goto done;
  av_diag ld;
  av_diag_init(&ld);
  sub = av_load_module("mlir", 4, res.module, res.module_size, &ld);
  if (sub && av_spmd_prepare(sub, &ld) != AV_OK) { /* calls inlined, as XLA's CallInliner does */
    av_module_free(sub);
    sub = NULL;
  }
  if (!sub) {
    av_part_fail(P, ld.code ? ld.code : AV_INVALID_ARGUMENT, "the module its custom partitioner returned: %s", ld.msg);
    goto done;
  }
  if (!inline_main(P, op, sub, vals, rtypes, vals + nin)) goto done;
  for (uint32_t i = 0; i < nres && !P->failed; i++)
    av_part_set(P, &op->results[i], vals[nin + i], res.results[i].mesh ? av_part_keep(P, &res.results[i]) : NULL);
  if (!P->failed) {
    av_part_settle_results(P, op);
    av_block_remove(P->b, op);
    if (P->rep) P->rep->ncustom++;
  }
done:
  av_module_free(sub);
  av_cp_partition_result_free(&res);
  free(types);
  free(rtypes);
  free(sh);
  free(buf);
  free(vals);
  return true;
}
