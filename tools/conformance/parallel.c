/* The StableHLO interpreter's multi-process cases, run by anvil-conformance.
 *
 * In tests/interpret (all_reduce.mlir, all_gather.mlir ...), @main passes constants to
 *   %r:K = "interpreter.run_parallel"(%in...) {programs = [[@f, @f], [@f, @f]]}
 * which runs one process per entry of the grid (outer: replicas, inner: partitions); each
 * process takes as many of the inputs as @f has parameters, in order, and its results follow
 * one another in %r. @main then checks results with check.expect_*_const. anvil runs such a
 * case as what it models: @f compiled for R replicas x P partitions and executed on all R*P
 * devices at once (av_program_execute_devices), then each check is evaluated on its device's
 * result by the same check kernel a compiled check.expect_* uses. Grids whose processes run
 * different functions, and the other harness ops (print, probe), are not supported. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/attrs.h"
#include "compiler/program_module.h"
#include "conformance/parallel.h"
#include "frontend/load.h"
#include "runtime/steps.h"

enum { MAX_PROCS = 64, MAX_CHECKS = 256 };

typedef struct pcheck {
  av_check_params params;
  int proc, output;
} pcheck;

typedef struct pcase {
  int nrep, npart, nargs, nres;
  av_tensor *inputs; /* nprocs * nargs */
  pcheck checks[MAX_CHECKS];
  int nchecks;
} pcase;

static int say(char *reason, size_t cap, int result, const char *fmt, const char *arg) {
  snprintf(reason, cap, fmt, arg);
  return result;
}

/* Storage holding the value a dense attribute gives a tensor of type t. */
static av_storage *dense_storage(const av_attr *a, const av_type *t) {
  int64_t n = av_type_num_elements(t);
  size_t bytes = (size_t)(n > 0 ? n : 0) * av_dtype_size(t->dtype);
  av_storage *st = n < 0 ? NULL : av_storage_alloc(bytes ? bytes : 1);
  if (st && !av_attr_dense_copy(a, t->dtype, n, st->data)) {
    av_storage_release(st);
    st = NULL;
  }
  return st;
}

/* The single function every process of the grid runs, with the grid's shape. */
static const char *grid_function(const av_op *rp, int *nrep, int *npart) {
  const av_attr *g = av_op_attr(rp, "programs");
  if (!g || g->kind != AV_ATTR_ARRAY || g->u.array.n == 0) return NULL;
  const char *name = NULL;
  *nrep = (int)g->u.array.n;
  *npart = -1;
  for (size_t r = 0; r < g->u.array.n; r++) {
    const av_attr *row = g->u.array.items[r];
    if (!row || row->kind != AV_ATTR_ARRAY || row->u.array.n == 0) return NULL;
    if (*npart >= 0 && (size_t)*npart != row->u.array.n) return NULL;
    *npart = (int)row->u.array.n;
    for (size_t p = 0; p < row->u.array.n; p++) {
      const av_attr *s = row->u.array.items[p];
      if (!s || s->kind != AV_ATTR_SYMBOL) return NULL;
      if (name && strcmp(name, s->u.str.s) != 0) return "";
      name = s->u.str.s;
    }
  }
  return (int64_t)*nrep * *npart <= MAX_PROCS ? name : NULL;
}

/* Reads @main into `pc` and makes @f the module's entry; RESULT_PASS when it can run. */
static int prepare(av_module *m, pcase *pc, char *reason, size_t cap) {
  av_func *main_fn = av_module_find_func(m, "main");
  if (!main_fn || main_fn->body.nblocks != 1) return say(reason, cap, AV_CONF_FAIL, "%s", "no @main");
  const av_block *b = &main_fn->body.blocks[0];
  const av_op *rp = NULL;
  for (const av_op *op = b->first; op; op = op->next) {
    if (strcmp(op->name, "interpreter.run_parallel") == 0) {
      if (rp) return say(reason, cap, AV_CONF_SKIP, "%s", "several interpreter.run_parallel");
      rp = op;
    } else if (op->code != AV_OP_CONSTANT && op->code != AV_OP_FUNC_RETURN &&
               op->code != AV_OP_RETURN && strncmp(op->name, "check.", 6) != 0) {
      return say(reason, cap, AV_CONF_SKIP, "interpreter harness op %s", op->name);
    }
  }
  if (!rp) return say(reason, cap, AV_CONF_SKIP, "%s", "interpreter.run_parallel outside @main");
  const char *fname = grid_function(rp, &pc->nrep, &pc->npart);
  if (!fname) return say(reason, cap, AV_CONF_FAIL, "%s", "bad run_parallel programs");
  if (!*fname)
    return say(reason, cap, AV_CONF_SKIP, "%s", "interpreter.run_parallel with different programs");
  if (av_op_attr(rp, "infeed"))
    return say(reason, cap, AV_CONF_SKIP, "%s", "interpreter.run_parallel with infeed");
  av_func *f = av_module_find_func(m, fname);
  if (!f || !f->type) return say(reason, cap, AV_CONF_FAIL, "unknown program @%s", fname);
  int nprocs = pc->nrep * pc->npart;
  pc->nargs = f->type->ninputs;
  pc->nres = f->type->nelems - f->type->ninputs;
  if ((int64_t)rp->noperands != (int64_t)nprocs * pc->nargs ||
      (int64_t)rp->nresults != (int64_t)nprocs * pc->nres)
    return say(reason, cap, AV_CONF_FAIL, "%s", "run_parallel operand/result counts do not fit the grid");
  pc->inputs = calloc((size_t)rp->noperands + 1, sizeof *pc->inputs);
  if (!pc->inputs) return say(reason, cap, AV_CONF_FAIL, "%s", "out of memory");
  for (uint32_t i = 0; i < rp->noperands; i++) {
    const av_value *v = rp->operands[i];
    av_tensor *t = &pc->inputs[i];
    if (!v->def || v->def->code != AV_OP_CONSTANT || !v->type || v->type->kind != AV_TYPE_TENSOR ||
        v->type->rank > AV_MAX_RANK)
      return say(reason, cap, AV_CONF_SKIP, "%s", "run_parallel input that is not a constant");
    t->storage = dense_storage(av_op_dense_attr(v->def), v->type);
    if (!t->storage) return say(reason, cap, AV_CONF_FAIL, "%s", "bad constant input");
    t->dtype = v->type->dtype;
    t->rank = v->type->rank;
    for (int k = 0; k < t->rank; k++) t->dims[k] = v->type->dims[k];
  }
  for (const av_op *op = b->first; op; op = op->next) {
    av_check_kind kind;
    bool with_const = false;
    if (strncmp(op->name, "check.", 6) != 0) continue;
    if (!av_check_kind_of(op->name, &kind, &with_const) || !with_const || op->noperands != 1 ||
        pc->nchecks >= MAX_CHECKS)
      return say(reason, cap, AV_CONF_SKIP, "check %s in a run_parallel case", op->name);
    const av_value *v = op->operands[0];
    if (v->def != rp) return say(reason, cap, AV_CONF_SKIP, "%s", "check of a value computed in @main");
    pcheck *c = &pc->checks[pc->nchecks++];
    c->params.kind = kind;
    c->params.tolerance = 1e-3;
    const av_attr *tol = av_op_attr(op, "tolerance");
    if (tol && tol->kind == AV_ATTR_FLOAT) c->params.tolerance = tol->u.f;
    c->params.expected = dense_storage(av_op_dense_attr(op), v->type);
    if (!c->params.expected) return say(reason, cap, AV_CONF_FAIL, "%s", "bad expected value");
    c->proc = (int)v->index / pc->nres;
    c->output = (int)v->index % pc->nres;
  }
  /* @f becomes the entry; @main (with the harness ops) is no longer reached */
  main_fn->name = "anvil_harness_main";
  main_fn->is_public = false;
  f->name = "main";
  f->is_public = true;
  return AV_CONF_PASS;
}

/* One check on one device's output, through the check kernel (a one-slot frame). */
static bool run_check(const pcheck *c, const av_tensor *t, char *reason, size_t cap) {
  av_slot slot = {t->storage->data, t->storage};
  av_slot_type type = {.dtype = t->dtype, .rank = t->rank, .dims = t->dims, .nelems = 1};
  for (int k = 0; k < t->rank; k++) type.nelems *= t->dims[k];
  type.nbytes = (size_t)type.nelems * av_dtype_size(t->dtype);
  if (type.nbytes != c->params.expected->size) {
    snprintf(reason, cap, "process %d output %d: shape differs from the expected value", c->proc,
             c->output);
    return false;
  }
  av_func_plan fn = {.name = "check", .nslots = 1, .types = &type};
  av_frame f = {.slots = &slot, .fn = &fn};
  int32_t in0 = 0;
  av_step s = {.run = av_step_check, .params = &c->params, .in = &in0, .nin = 1};
  av_diag d;
  av_diag_init(&d);
  if (av_step_check(&s, &f, &d) == AV_OK) return true;
  snprintf(reason, cap, "run: process %d output %d: %.300s", c->proc, c->output, d.msg);
  return false;
}

int av_conf_run_parallel(const char *text, size_t len, av_denormals mode, char *reason,
                         size_t cap) {
  if (!strstr(text, "interpreter.run_parallel")) return AV_CONF_NOT_PARALLEL;
  av_diag d;
  av_diag_init(&d);
  av_module *m = av_load_module("mlir", 4, text, len, &d);
  if (!m) return say(reason, cap, AV_CONF_FAIL, "load: %.380s", d.msg);
  pcase pc;
  memset(&pc, 0, sizeof pc);
  int result = prepare(m, &pc, reason, cap);
  av_program *p = NULL;
  int nprocs = pc.nrep * pc.npart;
  av_tensor *outs = NULL;
  if (result == AV_CONF_PASS) {
    av_compile_options o = {.num_replicas = pc.nrep, .num_partitions = pc.npart};
    p = av_program_from_module(m, &o, &d); /* owns the module from here on */
    m = NULL;
    if (p) av_program_set_denormals(p, mode);
    if (!p && strstr(d.msg, "interpreter."))
      result = say(reason, cap, AV_CONF_SKIP, "%s", "StableHLO interpreter harness ops (interpreter.*)");
    else if (!p)
      result = say(reason, cap, AV_CONF_FAIL, "compile: %.380s", d.msg);
  }
  if (result == AV_CONF_PASS) {
    outs = calloc((size_t)nprocs * (size_t)pc.nres + 1, sizeof *outs);
    const av_tensor *ins[MAX_PROCS];
    av_tensor *outv[MAX_PROCS];
    for (int k = 0; k < nprocs; k++) {
      ins[k] = pc.inputs + (size_t)k * (size_t)pc.nargs;
      outv[k] = outs ? outs + (size_t)k * (size_t)pc.nres : NULL;
    }
    if (!outs)
      result = say(reason, cap, AV_CONF_FAIL, "%s", "out of memory");
    else if (av_program_execute_devices(p, nprocs, ins, outv, &d) != AV_OK)
      result = say(reason, cap, AV_CONF_FAIL, "run: %.380s", d.msg);
    for (int i = 0; result == AV_CONF_PASS && i < pc.nchecks; i++) {
      const pcheck *c = &pc.checks[i];
      if (!run_check(c, &outs[(size_t)c->proc * (size_t)pc.nres + (size_t)c->output], reason, cap))
        result = AV_CONF_FAIL;
    }
    for (int i = 0; outs && i < nprocs * pc.nres; i++) av_storage_release(outs[i].storage);
  }
  free(outs);
  av_program_free(p);
  if (m) av_module_free(m);
  for (int i = 0; pc.inputs && i < nprocs * pc.nargs; i++) av_storage_release(pc.inputs[i].storage);
  free(pc.inputs);
  for (int i = 0; i < pc.nchecks; i++) av_storage_release(pc.checks[i].params.expected);
  return result;
}
