/* Lowering of multi-device programs: sdy.manual_computation over real mesh axes (a step that
 * runs the region per device, runtime/spmd.c) and the per-device view of a program whose main
 * takes sharded arguments (runtime/spmd_program.c). */
#include "compiler/sharding_lower.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/lower_internal.h"
#include "runtime/kernels/elementwise.h"
#include "runtime/spmd.h"

static const char *attr_text(const av_attr *a) {
  if (a && (a->kind == AV_ATTR_OPAQUE || a->kind == AV_ATTR_STRING)) return a->u.str.s;
  return NULL;
}

/* Geometry of one value: global/local dims, each position's offsets and writer flag. */
static bool fill_value(av_spmd_value *v, const av_sharding *s, uint32_t mask, const av_mesh *mesh,
                       int npos, const av_slot_type *t, int64_t *offsets, bool *writer,
                       const int *pos_of, char *why, size_t whylen) {
  memset(v, 0, sizeof *v);
  v->npos = npos;
  v->offsets = offsets;
  v->writer = writer;
  if (t->token) {
    v->token = true;
    return true;
  }
  v->dtype = t->dtype;
  v->rank = t->rank;
  for (int k = 0; k < t->rank; k++) v->gdims[k] = t->dims[k];
  if (!av_sharding_local_dims(s, mask, t->rank, v->gdims, v->ldims)) {
    snprintf(why, whylen, "a dimension is not divisible by its number of shards (uneven "
             "sharding is not supported)");
    return false;
  }
  size_t es = av_dtype_size(t->dtype);
  size_t ln = 1;
  for (int k = 0; k < t->rank; k++) ln *= (size_t)v->ldims[k];
  v->gbytes = t->nbytes;
  v->lbytes = ln * es;
  v->replicated = true;
  for (int k = 0; k < t->rank; k++)
    if (v->ldims[k] != v->gdims[k]) v->replicated = false;
  uint32_t unred = s->mesh ? av_sharding_unreduced(s, mask) : 0;
  bool *adder = writer + npos, *zeroed = writer + 2 * npos;
  v->adder = adder;
  v->zeroed = zeroed;
  if (unred) {
    av_dtype dt = t->dtype;
    if (!av_ew_prepare(dt == AV_DT_PRED ? AV_OP_OR : AV_OP_ADD, dt, dt, AV_CMP_EQ, AV_CMP_DEFAULT,
                       &v->add)) {
      snprintf(why, whylen, "unreduced values of type %s are not supported", av_dtype_mlir_name(dt));
      return false;
    }
    v->unreduced = true;
    v->replicated = false;
  }
  for (int q = 0; q < npos; q++) {
    int64_t pos = pos_of ? pos_of[q] : q;
    av_sharding_offsets(s, mask, pos, v->ldims, offsets + (size_t)q * (size_t)(t->rank ? t->rank : 1));
    writer[q] = s->mesh ? av_sharding_is_first_holder(s, mask, pos) : q == 0;
    zeroed[q] = unred && !av_mesh_at_origin(s->mesh, unred, pos);
    /* one holder of each partial value adds it: first holder once unreduced axes count */
    adder[q] = unred && !writer[q] && av_sharding_is_first_holder(s, mask & ~unred, pos);
  }
  (void)mesh;
  return true;
}

bool av_lower_spmd_manual(av_lower *c, const av_op *op, bool *handled) {
  *handled = false;
  const char *in_t = attr_text(av_op_attr(op, "in_shardings"));
  const char *out_t = attr_text(av_op_attr(op, "out_shardings"));
  const char *axes_t = attr_text(av_op_attr(op, "manual_axes"));
  if (!in_t || !out_t || !axes_t || op->nregions != 1 || op->regions[0].nblocks != 1) return false;
  av_mesh_table t;
  av_mesh_table_init(&t);
  av_diag local;
  av_diag_init(&local);
  bool ok = false;
  uint32_t nin = op->noperands, nout = op->nresults;
  av_sharding *sh = calloc((size_t)nin + nout + 1, sizeof *sh);
  int *ranks = calloc((size_t)nin + nout + 1, sizeof *ranks);
  if (!sh || !ranks) {
    free(sh);
    free(ranks);
    return av_lower_fail(c, AV_RESOURCE_EXHAUSTED, "out of memory");
  }
  for (uint32_t i = 0; i < nin; i++) ranks[i] = op->operands[i]->type ? op->operands[i]->type->rank : 0;
  for (uint32_t i = 0; i < nout; i++) ranks[nin + i] = op->results[i].type ? op->results[i].type->rank : 0;
  if (av_mesh_table_load(&t, c->m, &local) != AV_OK ||
      av_sharding_per_value_parse(in_t, (int)nin, ranks, &t, sh, &local) != AV_OK ||
      av_sharding_per_value_parse(out_t, (int)nout, ranks + nin, &t, sh + nin, &local) != AV_OK) {
    *handled = true;
    av_lower_fail(c, local.code, "%s", local.msg);
    goto done;
  }
  const av_mesh *mesh = NULL;
  for (uint32_t i = 0; i < nin + nout && !mesh; i++) mesh = sh[i].mesh;
  if (!mesh && t.n > 0) mesh = t.meshes[0];
  uint32_t mask = 0;
  if (!mesh || av_manual_axes_parse(axes_t, mesh, &mask, &local) != AV_OK) {
    if (local.code != AV_OK) {
      *handled = true;
      av_lower_fail(c, local.code, "%s", local.msg);
    }
    goto done;
  }
  int64_t nmanual = 1;
  for (int a = 0; a < mesh->naxes; a++)
    if (mask >> a & 1u) nmanual *= mesh->sizes[a];
  if (nmanual <= 1) goto done; /* one device: the region runs as it is */
  *handled = true;
  for (uint32_t i = 0; i < nin + nout; i++)
    if (sh[i].mesh && sh[i].mesh != mesh && (sh[i].mesh->naxes != mesh->naxes ||
                                             sh[i].mesh->ndevices != mesh->ndevices)) {
      AV_UNSUPPORTED(c, "manual computation over several meshes");
      goto done;
    }
  const av_block *b = &op->regions[0].blocks[0];
  const av_op *term = b->last;
  if (b->nargs != nin || !term || term->noperands != nout) {
    AV_INVALID(c, "region arguments/results differ from the operands/results");
    goto done;
  }
  if (mesh->ndevices > AV_SPMD_MAX_DEVICES) {
    AV_UNSUPPORTED(c, "manual computation over %lld devices (at most %d)", (long long)mesh->ndevices,
                   AV_SPMD_MAX_DEVICES);
    goto done;
  }
  int npos = (int)mesh->ndevices;
  av_spmd_manual_params *p = av_lower_alloc(c, sizeof *p);
  av_spmd_value *vals = av_lower_alloc(c, ((size_t)nin + nout + 1) * sizeof *vals);
  int *devidx = av_lower_alloc(c, (size_t)npos * sizeof *devidx);
  if (!p || !vals || !devidx) goto done;
  for (int q = 0; q < npos; q++) devidx[q] = (int)av_mesh_device_id(mesh, q);
  for (uint32_t i = 0; i < nin + nout; i++) {
    const av_value *gv = i < nin ? op->operands[i] : &op->results[i - nin];
    const av_value *lv = i < nin ? &b->args[i] : term->operands[i - nin];
    const av_slot_type *st = av_vtype(c, gv);
    if (!st && i < nin) {
      AV_UNSUPPORTED(c, "manual computation operand %u is not a tensor", i);
      goto done;
    }
    av_slot_type rt;
    if (!st) { /* results get their slots when the op's results are assigned */
      if (!av_slot_type_of(c, gv->type, &rt)) {
        AV_UNSUPPORTED(c, "manual computation result %u is not a tensor", i - nin);
        goto done;
      }
      st = &rt;
    }
    int rank = st->rank ? st->rank : 1;
    int64_t *offs = av_lower_alloc(c, (size_t)npos * (size_t)rank * sizeof *offs);
    bool *wr = av_lower_alloc(c, 3 * (size_t)npos * sizeof *wr); /* writer, adder, zeroed */
    if (!offs || !wr) goto done;
    char why[160];
    if (!fill_value(&vals[i], &sh[i], mask, mesh, npos, st, offs, wr, NULL, why, sizeof why)) {
      AV_UNSUPPORTED(c, "manual computation %s %u: %s", i < nin ? "operand" : "result",
                     i < nin ? i : i - nin, why);
      goto done;
    }
    const av_type *lt = lv->type;
    bool same = st->token || (lt && lt->kind == AV_TYPE_TENSOR && lt->rank == st->rank);
    for (int k = 0; same && !st->token && k < st->rank; k++) same = lt->dims[k] == vals[i].ldims[k];
    if (!same) {
      AV_INVALID(c, "manual computation %s %u: the region's type does not match the sharding",
                 i < nin ? "operand" : "result", i < nin ? i : i - nin);
      goto done;
    }
  }
  /* Nested in another manual computation with results replicated over the inner axes: this
   * device's results are its own (device-dependent values such as partition_id stay right).
   * Otherwise every device assembles the results from a full run over the mesh. */
  p->nested = c->per_device;
  for (uint32_t k = 0; p->nested && k < nout; k++)
    if (!vals[nin + k].token && !vals[nin + k].replicated) p->nested = false;
  p->npos = npos;
  p->device_index = devidx;
  p->nin = nin;
  p->nout = nout;
  p->ins = vals;
  p->outs = vals + nin;
  bool saved_per_device = c->per_device;
  c->per_device = true; /* the region runs on each device's own thread */
  p->block = av_lower_region(c, &op->regions[0]);
  c->per_device = saved_per_device;
  if (!p->block) goto done;
  ok = av_emit_op(c, av_step_spmd_manual, p) != NULL;
done:
  free(sh);
  free(ranks);
  av_mesh_table_free(&t);
  return ok;
}

/* ------------------------------------------------- main that wraps one manual computation */

/* Whether main's own sdy.sharding attributes (where present) agree with the in/out shardings
 * of the manual computation it wraps: then each device can run the region on the shards the
 * PJRT layer hands it. Otherwise (e.g. a replicated argument that the computation splits)
 * the program must run as a whole so that the arguments are resharded. */
bool av_manual_entry_shardings_match(const av_module *m, const av_func *fn, const av_op *mc) {
  uint32_t nin = mc->noperands, nout = mc->nresults;
  const char *in_t = attr_text(av_op_attr(mc, "in_shardings"));
  const char *out_t = attr_text(av_op_attr(mc, "out_shardings"));
  if (!in_t || !out_t) return true; /* lowering reports the problem */
  av_mesh_table t;
  av_mesh_table_init(&t);
  av_diag ignored;
  av_diag_init(&ignored);
  av_sharding *sh = calloc((size_t)nin + nout + 1, sizeof *sh);
  int *ranks = calloc((size_t)nin + nout + 1, sizeof *ranks);
  bool match = true;
  if (!sh || !ranks) goto done;
  for (uint32_t i = 0; i < nin; i++) ranks[i] = mc->operands[i]->type ? mc->operands[i]->type->rank : 0;
  for (uint32_t i = 0; i < nout; i++) ranks[nin + i] = mc->results[i].type ? mc->results[i].type->rank : 0;
  if (av_mesh_table_load(&t, m, &ignored) != AV_OK ||
      av_sharding_per_value_parse(in_t, (int)nin, ranks, &t, sh, &ignored) != AV_OK ||
      av_sharding_per_value_parse(out_t, (int)nout, ranks + nin, &t, sh + nin, &ignored) != AV_OK)
    goto done;
  for (uint32_t i = 0; i < nin + nout && match; i++) {
    bool is_in = i < nin;
    uint32_t k = is_in ? i : i - nin;
    const av_attr *dict = is_in ? (fn->arg_attrs ? fn->arg_attrs[k] : NULL)
                                : (fn->res_attrs ? fn->res_attrs[k] : NULL);
    const char *text = attr_text(av_dict_get(dict, "sdy.sharding"));
    if (!text) continue; /* propagation gives it the computation's sharding */
    av_sharding own;
    if (av_sharding_parse(text, ranks[i], &t, &own, &ignored) != AV_OK) continue;
    match = av_sharding_equal(&own, &sh[i]);
  }
done:
  free(sh);
  free(ranks);
  av_mesh_table_free(&t);
  return match;
}

/* ------------------------------------------------- whole sharded programs */

/* The main that only wraps one manual computation (the plan runs its region per device). */
static const av_op *wrapped_manual(const av_func *ef) {
  if (!ef || ef->body.nblocks != 1) return NULL;
  const av_op *mc = ef->body.blocks[0].first;
  return mc && mc->code == AV_OP_SDY_MANUAL_COMPUTATION ? mc : NULL;
}

static av_code encode_protos(const av_sharding *sh, uint32_t n, char ***protos, size_t **sizes,
                             av_diag *d) {
  *protos = calloc((size_t)n + 1, sizeof **protos);
  *sizes = calloc((size_t)n + 1, sizeof **sizes);
  if (!*protos || !*sizes) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  for (uint32_t i = 0; i < n; i++) {
    size_t need = av_sharding_to_op_sharding(&sh[i], NULL, 0);
    if (need == (size_t)-1) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
    (*protos)[i] = malloc(need + 1);
    if (!(*protos)[i]) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
    (*sizes)[i] = av_sharding_to_op_sharding(&sh[i], (uint8_t *)(*protos)[i], need);
    if ((*sizes)[i] != need) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  }
  return AV_OK;
}

/* Geometry of main's values for every device index 0..ndev-1. */
static av_code build_values(const av_sharding *sh, const av_func_plan *e, const int32_t *slots,
                            uint32_t n, int ndev, av_spmd_value **out, const char *what,
                            av_diag *d) {
  av_spmd_value *vals = calloc((size_t)n + 1, sizeof *vals);
  *out = vals;
  int *pos_of = calloc((size_t)ndev, sizeof *pos_of);
  if (!vals || !pos_of) {
    free(pos_of);
    return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  }
  av_code c = AV_OK;
  for (uint32_t i = 0; i < n && c == AV_OK; i++) {
    const av_slot_type *t = &e->types[slots[i]];
    const av_mesh *mesh = sh[i].mesh;
    if (mesh && mesh->ndevices != ndev && !av_sharding_is_replicated(&sh[i])) {
      c = av_diag_set(d, AV_UNIMPLEMENTED, "%s %u: sharded over a mesh of %lld devices, but the "
                      "program runs on %d", what, i, (long long)mesh->ndevices, ndev);
      break;
    }
    for (int q = 0; q < ndev; q++) {
      int64_t p = mesh && mesh->ndevices == ndev ? av_mesh_position(mesh, q) : 0;
      pos_of[q] = (int)(p < 0 ? 0 : p);
    }
    int rank = t->rank ? t->rank : 1;
    int64_t *offs = calloc((size_t)ndev * (size_t)rank, sizeof *offs);
    bool *wr = calloc(3 * (size_t)ndev, sizeof *wr); /* writer, adder, zeroed */
    vals[i].offsets = offs;
    vals[i].writer = wr;
    if (!offs || !wr) {
      c = av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
      break;
    }
    char why[160];
    av_sharding rep;
    av_sharding_replicated(&rep, t->rank);
    const av_sharding *s = mesh && mesh->ndevices == ndev ? &sh[i] : &rep;
    if (!fill_value(&vals[i], s, ~0u, mesh, ndev, t, offs, wr, pos_of, why, sizeof why))
      c = av_diag_set(d, AV_UNIMPLEMENTED, "%s %u: %s", what, i, why);
  }
  free(pos_of);
  return c;
}

/* main's argument/result shardings as propagated (replicated where there are none) */
static void propagated_shardings(const av_spmd_shardings *ps, uint32_t nin, uint32_t nout,
                                 const av_func_plan *e, av_sharding *sh) {
  for (uint32_t i = 0; i < nin + nout; i++) {
    bool is_in = i < nin;
    uint32_t k = is_in ? i : i - nin;
    const av_slot_type *st = &e->types[is_in ? e->body.args[k] : e->body.results[k]];
    av_sharding_replicated(&sh[i], st->token ? 0 : st->rank);
    if (!ps || st->token) continue;
    const av_sharding *src = is_in ? (k < ps->nargs ? &ps->args[k] : NULL) : (k < ps->nres ? &ps->res[k] : NULL);
    if (src && src->mesh && src->rank == st->rank) sh[i] = *src;
  }
}

/* Whether ops of `r` (outside manual computations, through called functions) give each device
 * its own value: ids and collectives. Such a program means something per device, so it is
 * never run once for all of them. */
static bool region_is_per_device(const av_module *m, const av_region *r, int depth) {
  if (depth > 8) return true; /* deep call chains: stay on the safe side */
  for (uint32_t b = 0; b < r->nblocks; b++)
    for (const av_op *op = r->blocks[b].first; op; op = op->next) {
      switch (op->code) {
        case AV_OP_PARTITION_ID: case AV_OP_REPLICA_ID: case AV_OP_ALL_GATHER:
        case AV_OP_ALL_REDUCE: case AV_OP_ALL_TO_ALL: case AV_OP_COLLECTIVE_BROADCAST:
        case AV_OP_COLLECTIVE_PERMUTE: case AV_OP_COLLECTIVE_REDUCE: case AV_OP_REDUCE_SCATTER:
          return true;
        case AV_OP_SDY_MANUAL_COMPUTATION: continue; /* runs per device anyway */
        case AV_OP_FUNC_CALL: case AV_OP_CALL: {
          const char *callee = av_attr_get_str(op, "callee");
          const av_func *fn = callee ? av_module_find_func(m, callee) : NULL;
          if (fn && region_is_per_device(m, &fn->body, depth + 1)) return true;
          break;
        }
        default: break;
      }
      for (uint32_t k = 0; k < op->nregions; k++)
        if (region_is_per_device(m, &op->regions[k], depth + 1)) return true;
    }
  return false;
}

av_code av_spmd_program_build(const av_module *m, const av_plan *plan, int num_replicas,
                              int num_partitions, const av_spmd_shardings *ps, bool partitioned,
                              av_spmd_program **out, av_diag *d) {
  *out = NULL;
  int ndev = num_replicas * num_partitions;
  const av_func *ef = av_module_entry(m);
  const av_func_plan *e = plan->entry;
  if (ndev <= 1 || !ef || !e) return AV_OK;
  if (ndev > AV_SPMD_MAX_DEVICES)
    return av_diag_set(d, AV_UNIMPLEMENTED, "%d devices (at most %d)", ndev, AV_SPMD_MAX_DEVICES);
  uint32_t nin = e->body.nargs, nout = e->body.nresults;
  const av_op *mc = plan->manual_entry ? wrapped_manual(ef) : NULL;
  /* one run for all partitions: a global-view program (shardings say where each device's
   * block lies); a program of ids and collectives runs per device, as XLA runs it */
  bool run_global = !partitioned && !plan->manual_entry && num_replicas == 1 &&
                    !region_is_per_device(m, &ef->body, 0);
  /* tuples flattened into several leaves: keep the per-device path */
  if ((uint32_t)ef->type->ninputs != nin || (uint32_t)(ef->type->nelems - ef->type->ninputs) != nout)
    return AV_OK;
  av_spmd_program *sp = calloc(1, sizeof *sp);
  if (!sp) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  pthread_mutex_init(&sp->mu, NULL);
  pthread_cond_init(&sp->cv, NULL);
  sp->ndev = ndev;
  sp->nin = nin;
  sp->nout = nout;
  sp->run_global = run_global;
  av_mesh_table t;
  av_mesh_table_init(&t);
  av_sharding *sh = calloc((size_t)nin + nout + 1, sizeof *sh);
  int *ranks = calloc((size_t)nin + nout + 1, sizeof *ranks);
  sp->in_lists = calloc((size_t)ndev, sizeof *sp->in_lists);
  sp->out_lists = calloc((size_t)ndev, sizeof *sp->out_lists);
  av_code c = sh && ranks && sp->in_lists && sp->out_lists
                  ? av_mesh_table_load(&t, m, d)
                  : av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  if (c == AV_OK && mc && mc->noperands == nin && mc->nresults == nout) {
    for (uint32_t i = 0; i < nin; i++) ranks[i] = mc->operands[i]->type ? mc->operands[i]->type->rank : 0;
    for (uint32_t i = 0; i < nout; i++) ranks[nin + i] = mc->results[i].type ? mc->results[i].type->rank : 0;
    const char *in_t = attr_text(av_op_attr(mc, "in_shardings"));
    const char *out_t = attr_text(av_op_attr(mc, "out_shardings"));
    if (in_t && out_t) {
      c = av_sharding_per_value_parse(in_t, (int)nin, ranks, &t, sh, d);
      if (c == AV_OK) c = av_sharding_per_value_parse(out_t, (int)nout, ranks + nin, &t, sh + nin, d);
    }
  } else if (c == AV_OK) {
    propagated_shardings(ps, nin, nout, e, sh);
  }
  if (c == AV_OK) c = encode_protos(sh, nin, &sp->in_proto, &sp->in_proto_size, d);
  if (c == AV_OK) c = encode_protos(sh + nin, nout, &sp->out_proto, &sp->out_proto_size, d);
  if (c == AV_OK && run_global) {
    c = build_values(sh, e, e->body.args, nin, ndev, &sp->ins, "argument", d);
    if (c == AV_OK) c = build_values(sh + nin, e, e->body.results, nout, ndev, &sp->outs, "result", d);
  }
  free(sh);
  free(ranks);
  av_mesh_table_free(&t);
  if (c != AV_OK) {
    av_spmd_program_free(sp);
    return c;
  }
  *out = sp;
  return AV_OK;
}
