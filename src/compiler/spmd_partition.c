/* The partitioner's driver (see spmd_partition.h): main's arguments take their local types,
 * its ops are rewritten one by one in order, manual computations are inlined, and the
 * returned values are resharded to main's result shardings. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/attrs.h"
#include "compiler/custom_partitioner.h"
#include "compiler/spmd_part_internal.h"

void av_spmd_report_free(av_spmd_report *r) {
  if (!r) return;
  free(r->why_not);
  for (int i = 0; i < r->nfallbacks; i++) free(r->fallbacks[i]);
  free(r->fallbacks);
  memset(r, 0, sizeof *r);
}

bool av_part_fail(av_part *P, av_code code, const char *fmt, ...) {
  if (!P->failed) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    av_diag_set(P->d, code, "%s (at %s)", buf, P->loc ? P->loc : "unknown");
  }
  P->failed = true;
  return false;
}

void av_part_note_fallback(av_part *P, const av_op *op, const char *why) {
  if (!P->rep) return;
  size_t n = strlen(op->name) + strlen(op->loc) + strlen(why) + 16;
  char *s = malloc(n);
  char **l = realloc(P->rep->fallbacks, (size_t)(P->rep->nfallbacks + 1) * sizeof *l);
  if (!s || !l) {
    free(s);
    if (l) P->rep->fallbacks = l;
    return;
  }
  snprintf(s, n, "%s at %s: %s", op->name, op->loc, why);
  P->rep->fallbacks = l;
  P->rep->fallbacks[P->rep->nfallbacks++] = s;
}

bool av_part_set(av_part *P, const av_value *orig, av_value *local, const av_sharding *sh) {
  if (!local) return false;
  if (orig->id >= P->nval) return true; /* a value the partitioner made: never looked up */
  P->val[orig->id] = local;
  P->sh[orig->id] = sh && sh->mesh ? sh : NULL;
  return true;
}

av_value *av_part_get(av_part *P, const av_value *orig, const av_sharding **sh) {
  if (orig->id < P->nval && P->val[orig->id]) {
    *sh = P->sh[orig->id];
    return P->val[orig->id];
  }
  *sh = NULL;
  return (av_value *)orig;
}

const av_sharding *av_part_keep(av_part *P, const av_sharding *s) {
  if (!s || !s->mesh) return NULL;
  av_sharding *c = av_arena_memdup(P->arena, s, sizeof *s);
  if (!c) av_part_fail(P, AV_RESOURCE_EXHAUSTED, "out of memory");
  return c;
}

const av_sharding *av_part_replicated(av_part *P, int rank) {
  (void)P;
  (void)rank;
  return NULL;
}

static int64_t gcd64(int64_t a, int64_t b) {
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* Mesh axis `a` of `from` as refs of `to` (both meshes enumerate the same devices in the
 * same order: one is a reshape of the other's device array); false when its coordinate is
 * not a product of parts of `to`'s axes. */
static bool axis_on_mesh(const av_mesh *from, const av_mesh *to, int a, av_axis_ref *out, int *n) {
  int64_t f[AV_MESH_MAX_AXES], t[AV_MESH_MAX_AXES], used[AV_MESH_MAX_AXES];
  for (int i = 0; i < from->naxes; i++) f[i] = from->sizes[i];
  for (int j = 0; j < to->naxes; j++) {
    t[j] = to->sizes[j];
    used[j] = 1;
  }
  int i = 0, j = 0;
  *n = 0;
  while (i < from->naxes && i <= a) {
    if (f[i] == 1) {
      i++;
      continue;
    }
    if (j >= to->naxes) return false;
    if (t[j] == 1) {
      j++;
      continue;
    }
    int64_t piece;
    if (t[j] % f[i] == 0) piece = f[i];
    else if (f[i] % t[j] == 0) piece = t[j];
    else return false;
    if (i == a) {
      if (*n >= AV_DIM_MAX_AXES) return false;
      out[(*n)++] = (av_axis_ref){(int16_t)j, (int32_t)used[j], (int32_t)piece};
    }
    used[j] *= piece;
    f[i] /= piece;
    t[j] /= piece;
  }
  return true;
}

static bool same_devices(const av_mesh *a, const av_mesh *b) {
  if (a->ndevices != b->ndevices) return false;
  for (int64_t p = 0; p < a->ndevices; p++)
    if (av_mesh_device_id(a, p) != av_mesh_device_id(b, p)) return false;
  return true;
}

/* `s` expressed on the partitioner's mesh (NULL with P->failed when it cannot be: the
 * program then runs as one global program). */
const av_sharding *av_part_on_mesh(av_part *P, const av_sharding *s, av_sharding *buf) {
  if (!s || !s->mesh || s->mesh == P->mesh) return s;
  const av_mesh *from = s->mesh, *to = P->mesh;
  bool same = from->naxes == to->naxes && same_devices(from, to);
  for (int a = 0; same && a < from->naxes; a++) same = from->sizes[a] == to->sizes[a];
  if (same) {
    *buf = *s;
    buf->mesh = to;
    return buf;
  }
  if (av_sharding_is_replicated(s)) return NULL;
  if (!same_devices(from, to)) {
    av_part_fail(P, AV_UNIMPLEMENTED, "shardings over two meshes whose devices differ in order");
    return NULL;
  }
  av_sharding_replicated(buf, s->rank);
  buf->mesh = to;
  for (int k = 0; k < s->rank; k++) {
    for (int r = 0; r < s->naxes[k]; r++) {
      const av_axis_ref *ref = &s->axes[k][r];
      av_axis_ref pieces[AV_DIM_MAX_AXES];
      int np;
      if (!axis_on_mesh(from, to, ref->axis, pieces, &np)) {
        av_part_fail(P, AV_UNIMPLEMENTED, "a sharding over mesh axis \"%s\" that is no product of the program's mesh axes",
                     from->names[ref->axis]);
        return NULL;
      }
      /* the digits [pre, pre * size) of the axis, major first, out of its pieces */
      int64_t lo = ref->pre, hi = (int64_t)ref->pre * ref->size, c = 1;
      for (int q = 0; q < np; q++) {
        int64_t p0 = c, p1 = c * pieces[q].size;
        c = p1;
        int64_t a0 = lo > p0 ? lo : p0, a1 = hi < p1 ? hi : p1;
        if (a0 >= a1) continue;
        av_axis_ref part = pieces[q];
        part.pre = (int32_t)(pieces[q].pre * (a0 / p0));
        part.size = (int32_t)(a1 / a0);
        if (buf->naxes[k] >= AV_DIM_MAX_AXES) {
          av_part_fail(P, AV_UNIMPLEMENTED, "a sharding over too many mesh axes");
          return NULL;
        }
        buf->axes[k][buf->naxes[k]++] = part;
      }
    }
    buf->open[k] = s->open[k];
  }
  for (int a = 0; a < from->naxes; a++) {
    if (!((s->unreduced | s->replicated) >> a & 1u) || from->sizes[a] == 1) continue;
    av_axis_ref pieces[AV_DIM_MAX_AXES];
    int np;
    bool whole = axis_on_mesh(from, to, a, pieces, &np);
    for (int q = 0; whole && q < np; q++) whole = pieces[q].pre == 1 && pieces[q].size == to->sizes[pieces[q].axis];
    if (!whole && (s->unreduced >> a & 1u)) {
      av_part_fail(P, AV_UNIMPLEMENTED, "unreduced over mesh axis \"%s\", part of a program mesh axis", from->names[a]);
      return NULL;
    }
    for (int q = 0; whole && q < np; q++) {
      if (s->unreduced >> a & 1u) buf->unreduced |= 1u << pieces[q].axis;
      else buf->replicated |= 1u << pieces[q].axis;
    }
  }
  return buf;
}

const av_sharding *av_part_target(av_part *P, const av_value *v, av_sharding *buf) {
  const av_sharding *s0 = v->id < P->S->nvalues ? P->S->of[v->id] : NULL;
  const av_type *t = v->id < P->nval && P->gtype[v->id] ? P->gtype[v->id] : v->type;
  if (!s0 || !s0->mesh || !t || t->kind != AV_TYPE_TENSOR || s0->rank != t->rank) return NULL;
  if (s0->mesh->ndevices != P->mesh->ndevices) return NULL;
  av_sharding conv;
  const av_sharding *s = av_part_on_mesh(P, s0, &conv);
  if (!s) return NULL;
  *buf = *s;
  buf->mesh = P->mesh;
  for (int k = 0; k < t->rank; k++) { /* what divides evenly, as for main's arguments */
    int64_t dim = t->dims[k], remaining = dim;
    int n = 0;
    for (int i = 0; i < buf->naxes[k]; i++) {
      av_axis_ref r = buf->axes[k][i];
      int64_t g = gcd64(r.size, remaining);
      if (g == r.size) {
        buf->axes[k][n++] = r;
        remaining /= g;
        continue;
      }
      if (g > 1) {
        r.size = (int32_t)g;
        buf->axes[k][n++] = r;
      }
      break;
    }
    buf->naxes[k] = (uint8_t)n;
    buf->open[k] = false;
  }
  return av_sharding_is_replicated(buf) ? NULL : buf;
}

/* ------------------------------------------------------------------ ops */

static void remap_region_operands(av_part *P, av_region *r, bool replicate);

/* Operands of ops inside `r` that refer to values outside: their local value, gathered when
 * `replicate` (the op runs on whole values). */
static void remap_region_operands(av_part *P, av_region *r, bool replicate) {
  for (uint32_t k = 0; k < r->nblocks; k++)
    for (av_op *op = r->blocks[k].first; op; op = op->next) {
      for (uint32_t i = 0; i < op->noperands; i++) {
        av_value *o = op->operands[i];
        if (o->id >= P->nval || !P->val[o->id]) continue; /* defined inside */
        op->operands[i] = replicate ? av_part_operand(P, o, NULL) : P->val[o->id];
        if (!op->operands[i]) return;
      }
      for (uint32_t q = 0; q < op->nregions; q++) remap_region_operands(P, &op->regions[q], replicate);
    }
}

/* The op's results, now at `local` shardings, moved to their propagated shardings (after
 * `after`, the op itself unless it was wrapped). */
static void settle_results_after(av_part *P, av_op *op, av_op *after) {
  av_op *saved = P->before;
  P->before = after->next;
  for (uint32_t i = 0; i < op->nresults && !P->failed; i++) {
    const av_value *r = &op->results[i];
    if (!r->type || r->type->kind != AV_TYPE_TENSOR) continue;
    av_sharding buf;
    const av_sharding *t = av_part_target(P, r, &buf);
    const av_sharding *cur;
    av_value *v = av_part_get(P, r, &cur);
    if (!t && !cur) continue;
    if (t && cur && av_sharding_equal(t, cur)) continue;
    av_value *n = av_reshard(P, v, P->gtype[r->id], cur, t);
    av_part_set(P, r, n, av_part_keep(P, t));
  }
  P->before = saved;
}

void av_part_settle_results(av_part *P, av_op *op) { settle_results_after(P, op, op); }

static bool has_sharded_operand(av_part *P, const av_op *op) {
  for (uint32_t i = 0; i < op->noperands; i++) {
    const av_sharding *sh;
    av_part_get(P, op->operands[i], &sh);
    if (sh) return true;
  }
  return false;
}

/* An op without a partitioning rule: gathered operands, run on whole values. */
static void fallback(av_part *P, av_op *op, const char *why) {
  bool costly = has_sharded_operand(P, op);
  for (uint32_t i = 0; i < op->noperands && !P->failed; i++) {
    av_value *o = op->operands[i];
    if (!o->type || o->type->kind != AV_TYPE_TENSOR) {
      const av_sharding *ignored;
      op->operands[i] = av_part_get(P, o, &ignored);
      continue;
    }
    op->operands[i] = av_part_operand(P, o, NULL);
  }
  for (uint32_t q = 0; q < op->nregions && !P->failed; q++) remap_region_operands(P, &op->regions[q], true);
  for (uint32_t i = 0; i < op->nresults; i++) {
    av_sharding buf;
    costly |= av_part_target(P, &op->results[i], &buf) != NULL;
    av_part_set(P, &op->results[i], &op->results[i], NULL);
  }
  if (costly) av_part_note_fallback(P, op, why);
  av_part_settle_results(P, op);
}

/* The manual-axes part of a manual computation's in/out sharding (the view its body has). */
static void manual_part(const av_sharding *s, uint32_t mask, av_sharding *out) {
  *out = *s;
  for (int d = 0; d < s->rank; d++) {
    int n = 0;
    for (int i = 0; i < s->naxes[d]; i++)
      if (mask >> s->axes[d][i].axis & 1u) out->axes[d][n++] = s->axes[d][i];
    out->naxes[d] = (uint8_t)n;
  }
  out->unreduced &= mask;
  out->replicated = 0;
}

static void process_op(av_part *P, av_op *op, int depth);

/* sdy.manual_computation: its body already is per-device code; it is moved in place of the
 * op, on operands resharded to the manual part of the in_shardings. `depth` > 0 inside
 * another manual body, where values are whole over the axes not (yet) manual. */
static void inline_manual(av_part *P, av_op *mc, int depth) {
  const char *in_t = av_attr_get_str(mc, "in_shardings");
  const av_attr *ia = av_op_attr(mc, "in_shardings"), *oa = av_op_attr(mc, "out_shardings"),
                *ma = av_op_attr(mc, "manual_axes");
  in_t = ia && (ia->kind == AV_ATTR_OPAQUE || ia->kind == AV_ATTR_STRING) ? ia->u.str.s : NULL;
  const char *out_t = oa && (oa->kind == AV_ATTR_OPAQUE || oa->kind == AV_ATTR_STRING) ? oa->u.str.s : NULL;
  const char *ax_t = ma && (ma->kind == AV_ATTR_OPAQUE || ma->kind == AV_ATTR_STRING) ? ma->u.str.s : NULL;
  if (mc->nregions != 1 || mc->regions[0].nblocks != 1 || !in_t || !out_t || !ax_t) {
    av_part_fail(P, AV_INVALID_ARGUMENT, "malformed sdy.manual_computation");
    return;
  }
  av_block *body = &mc->regions[0].blocks[0];
  av_op *ret = body->last;
  uint32_t nin = mc->noperands, nout = mc->nresults;
  if (body->nargs != nin || !ret || ret->noperands != nout) {
    av_part_fail(P, AV_INVALID_ARGUMENT, "sdy.manual_computation: region arguments/results differ from its operands/results");
    return;
  }
  av_sharding *sh = av_arena_calloc(P->arena, (size_t)nin + nout + 1, sizeof *sh);
  int *ranks = calloc((size_t)nin + nout + 1, sizeof *ranks);
  av_mesh_table *t = (av_mesh_table *)&P->S->meshes;
  if (!sh || !ranks) {
    free(ranks);
    av_part_fail(P, AV_RESOURCE_EXHAUSTED, "out of memory");
    return;
  }
  for (uint32_t i = 0; i < nin; i++) ranks[i] = mc->operands[i]->type && mc->operands[i]->type->kind == AV_TYPE_TENSOR ? mc->operands[i]->type->rank : 0;
  for (uint32_t i = 0; i < nout; i++) ranks[nin + i] = mc->results[i].type && mc->results[i].type->kind == AV_TYPE_TENSOR ? mc->results[i].type->rank : 0;
  av_diag local;
  av_diag_init(&local);
  uint32_t mask = 0;
  bool ok = av_sharding_per_value_parse(in_t, (int)nin, ranks, t, sh, &local) == AV_OK &&
            av_sharding_per_value_parse(out_t, (int)nout, ranks + nin, t, sh + nin, &local) == AV_OK;
  free(ranks);
  if (!ok) {
    av_part_fail(P, local.code ? local.code : AV_INVALID_ARGUMENT, "%s", local.msg);
    return;
  }
  for (uint32_t i = 0; i < nin + nout; i++)
    if (sh[i].mesh && sh[i].mesh != P->mesh && sh[i].mesh->ndevices != P->mesh->ndevices) {
      av_part_fail(P, AV_UNIMPLEMENTED, "manual computation over a mesh of %lld devices in a program on %d",
                   (long long)sh[i].mesh->ndevices, P->ndev);
      return;
    }
  /* another mesh of the same devices: its manual axes and shardings on the program's mesh */
  const av_mesh *mc_mesh = NULL;
  for (uint32_t i = 0; i < nin + nout && !mc_mesh; i++) mc_mesh = sh[i].mesh;
  if (!mc_mesh || mc_mesh == P->mesh || mc_mesh->ndevices <= 1) {
    if (av_manual_axes_parse(ax_t, P->mesh, &mask, &local) != AV_OK) {
      av_part_fail(P, local.code ? local.code : AV_INVALID_ARGUMENT, "%s", local.msg);
      return;
    }
  } else {
    uint32_t m2 = 0;
    if (av_manual_axes_parse(ax_t, mc_mesh, &m2, &local) != AV_OK) {
      av_part_fail(P, local.code ? local.code : AV_INVALID_ARGUMENT, "%s", local.msg);
      return;
    }
    for (uint32_t i = 0; i < nin + nout && !P->failed; i++) {
      av_sharding conv;
      const av_sharding *c = av_part_on_mesh(P, &sh[i], &conv);
      if (c && c != &sh[i]) sh[i] = *c;
      else if (!c && sh[i].mesh) av_sharding_replicated(&sh[i], sh[i].rank);
    }
    for (int a = 0; a < mc_mesh->naxes && !P->failed; a++) {
      if (!(m2 >> a & 1u) || mc_mesh->sizes[a] == 1) continue;
      av_axis_ref pieces[AV_DIM_MAX_AXES];
      int np;
      bool whole = axis_on_mesh(mc_mesh, P->mesh, a, pieces, &np);
      for (int q = 0; whole && q < np; q++) whole = pieces[q].pre == 1 && pieces[q].size == P->mesh->sizes[pieces[q].axis];
      if (!whole) {
        av_part_fail(P, AV_UNIMPLEMENTED, "manual axis \"%s\" is part of a mesh axis of the program", mc_mesh->names[a]);
        return;
      }
      for (int q = 0; q < np; q++) mask |= 1u << pieces[q].axis;
    }
    if (P->failed) return;
  }
  /* operands: their manual part; the body arguments stand for them */
  for (uint32_t i = 0; i < nin && !P->failed; i++) {
    av_value *o = mc->operands[i];
    if (!o->type || o->type->kind != AV_TYPE_TENSOR) {
      const av_sharding *ignored;
      av_part_set(P, &body->args[i], av_part_get(P, o, &ignored), NULL);
      continue;
    }
    av_sharding part;
    manual_part(&sh[i], mask, &part);
    part.mesh = P->mesh;
    av_value *v = av_part_operand(P, o, av_sharding_is_replicated(&part) ? NULL : &part);
    if (v && body->args[i].type && v->type && !av_type_equal(v->type, body->args[i].type)) {
      av_part_fail(P, AV_INVALID_ARGUMENT, "manual computation operand %u: the region's type does not match the sharding", i);
      return;
    }
    av_part_set(P, &body->args[i], v, NULL);
  }
  /* the body's ops, moved before the op, one by one */
  while (!P->failed && body->first && body->first != ret) {
    av_op *o = body->first;
    av_block_remove(body, o);
    av_block_insert_before(P->b, mc, o);
    process_op(P, o, depth + 1);
  }
  P->before = mc;
  P->loc = mc->loc;
  for (uint32_t k = 0; k < nout && !P->failed; k++) {
    const av_sharding *ignored;
    av_value *v = av_part_get(P, ret->operands[k], &ignored);
    av_value *res = &mc->results[k];
    if (!res->type || res->type->kind != AV_TYPE_TENSOR) {
      av_part_set(P, res, v, NULL);
      continue;
    }
    av_sharding part;
    manual_part(&sh[nin + k], mask, &part);
    part.mesh = P->mesh;
    const av_sharding *ps = av_sharding_is_replicated(&part) ? NULL : av_part_keep(P, &part);
    if (depth > 0) { /* the enclosing body sees whole values */
      v = av_reshard(P, v, res->type, ps, NULL);
      av_part_set(P, res, v, NULL);
    } else {
      av_part_set(P, res, v, ps);
    }
  }
  P->before = mc->next; /* what follows goes where the op was */
  av_block_remove(P->b, mc);
  if (depth == 0 && !P->failed) {
    /* the results' propagated shardings */
    for (uint32_t k = 0; k < nout && !P->failed; k++) {
      const av_value *r = &mc->results[k];
      if (!r->type || r->type->kind != AV_TYPE_TENSOR) continue;
      av_sharding buf;
      const av_sharding *tg = av_part_target(P, r, &buf), *cur;
      av_value *v = av_part_get(P, r, &cur);
      if ((!tg && !cur) || (tg && cur && av_sharding_equal(tg, cur))) continue;
      av_part_set(P, r, av_reshard(P, v, P->gtype[r->id], cur, tg), av_part_keep(P, tg));
    }
  }
}

/* An op of a manual body (depth > 0): per-device code, kept as it is on its operands' local
 * values; nested manual computations are inlined, sharding constraints dropped. */
static void process_body_op(av_part *P, av_op *op, int depth) {
  if (av_custom_partitioner_of(op)) {
    av_part_fail(P, AV_UNIMPLEMENTED, "%s inside a manual computation over part of the mesh's axes: a custom-partitioned call there is not supported",
                 op->name);
    return;
  }
  if (op->code == AV_OP_SDY_MANUAL_COMPUTATION) {
    inline_manual(P, op, depth);
    return;
  }
  if (op->code == AV_OP_SDY_SHARDING_GROUP) { /* propagation has used it */
    av_block_remove(P->b, op);
    return;
  }
  if ((op->code == AV_OP_SDY_SHARDING_CONSTRAINT || op->code == AV_OP_SDY_RESHARD) && op->noperands == 1) {
    const av_sharding *ignored;
    av_part_set(P, &op->results[0], av_part_get(P, op->operands[0], &ignored), NULL);
    av_block_remove(P->b, op);
    return;
  }
  for (uint32_t i = 0; i < op->noperands; i++) {
    const av_sharding *ignored;
    op->operands[i] = av_part_get(P, op->operands[i], &ignored);
  }
  for (uint32_t q = 0; q < op->nregions; q++) remap_region_operands(P, &op->regions[q], false);
  for (uint32_t i = 0; i < op->nresults; i++) av_part_set(P, &op->results[i], &op->results[i], NULL);
}

/* The ops of a nested block (while/case bodies) partitioned like main's, then its terminator's
 * operands resharded to `want[i]` (NULL: replicated). */
static void process_block(av_part *P, av_block *b, const av_sharding *const *want) {
  av_block *saved_b = P->b;
  av_op *saved_before = P->before;
  P->b = b;
  av_op *term = b->last;
  for (av_op *op = b->first; op && op != term && !P->failed;) {
    av_op *next = op->next;
    process_op(P, op, 0);
    op = next;
  }
  if (term && !P->failed) {
    P->before = term;
    P->loc = term->loc;
    for (uint32_t i = 0; i < term->noperands && !P->failed; i++) {
      const av_value *o = term->operands[i];
      const av_type *g = o->id < P->nval && P->gtype[o->id] ? P->gtype[o->id] : o->type;
      if (!g || g->kind != AV_TYPE_TENSOR) {
        const av_sharding *ignored;
        term->operands[i] = av_part_get(P, o, &ignored);
        continue;
      }
      term->operands[i] = av_part_operand(P, o, want ? want[i] : NULL);
    }
  }
  P->b = saved_b;
  P->before = saved_before;
}

/* while: every carried value keeps one sharding (operand, block arguments, body result and
 * op result are one data-flow edge): its propagated one. The body and the condition are
 * partitioned like main; the loop runs on local shards. */
static bool same_dims_sharding(const av_sharding *a, const av_sharding *b, int rank) {
  for (int k = 0; k < rank; k++) {
    int na = a ? a->naxes[k] : 0, nb = b ? b->naxes[k] : 0;
    if (na != nb) return false;
    for (int j = 0; j < na; j++)
      if (a->axes[k][j].axis != b->axes[k][j].axis || a->axes[k][j].pre != b->axes[k][j].pre ||
          a->axes[k][j].size != b->axes[k][j].size)
        return false;
  }
  return true;
}

/* A loop carry whose initial value and whose value from the body are both unreduced along
 * some axes (partial sums a loop accumulates per device and reduces once after it: gradients
 * summed over microbatches) stays unreduced through the loop. Propagation gives the while's
 * results no unreduced axes (no constraint names them there); carried as reduced, each trip
 * would all-reduce it, where XLA reduces once after the loop. */
static void keep_unreduced_carry(av_part *P, const av_op *op, uint32_t i, const av_sharding **want) {
  const av_op *ret = op->regions[1].blocks[0].last;
  const av_type *t = op->results[i].type;
  if (!ret || ret->noperands != op->noperands || !t || t->kind != AV_TYPE_TENSOR) return;
  av_sharding b_init, b_ret;
  const av_sharding *si = av_part_target(P, op->operands[i], &b_init);
  const av_sharding *sr = av_part_target(P, ret->operands[i], &b_ret);
  uint32_t u = si && sr ? si->unreduced & sr->unreduced : 0;
  if (!u || (*want && ((*want)->unreduced & u) == u)) return;
  if (!same_dims_sharding(si, *want, t->rank) || !same_dims_sharding(sr, *want, t->rank)) return;
  av_sharding c = *si;
  c.unreduced = (*want ? (*want)->unreduced : 0) | u;
  *want = av_part_keep(P, &c);
}

static bool partition_while(av_part *P, av_op *op) {
  uint32_t n = op->noperands;
  if (op->nregions != 2 || op->nresults != n) return false;
  for (int q = 0; q < 2; q++)
    if (op->regions[q].nblocks != 1 || op->regions[q].blocks[0].nargs != n || !op->regions[q].blocks[0].last)
      return false;
  const av_sharding **want = calloc((size_t)n + 1, sizeof *want);
  av_sharding *buf = calloc((size_t)n + 1, sizeof *buf);
  if (!want || !buf) {
    free(want);
    free(buf);
    return av_part_fail(P, AV_RESOURCE_EXHAUSTED, "out of memory");
  }
  for (uint32_t i = 0; i < n; i++) {
    const av_value *r = &op->results[i];
    if (r->type && r->type->kind == AV_TYPE_TUPLE) {
      free(want);
      free(buf);
      return false;
    }
    want[i] = r->type && r->type->kind == AV_TYPE_TENSOR ? av_part_keep(P, av_part_target(P, r, &buf[i])) : NULL;
    keep_unreduced_carry(P, op, i, &want[i]);
  }
  for (uint32_t i = 0; i < n && !P->failed; i++) {
    av_value *o = op->operands[i];
    if (!o->type || o->type->kind != AV_TYPE_TENSOR) {
      const av_sharding *ignored;
      op->operands[i] = av_part_get(P, o, &ignored);
    } else {
      op->operands[i] = av_part_operand(P, o, want[i]);
    }
    for (int q = 0; q < 2; q++) {
      av_value *a = &op->regions[q].blocks[0].args[i];
      if (a->type && a->type->kind == AV_TYPE_TENSOR) a->type = av_part_local_type(P, a->type, want[i]);
      av_part_set(P, a, a, want[i]);
    }
  }
  if (!P->failed) process_block(P, &op->regions[0].blocks[0], NULL);
  if (!P->failed) process_block(P, &op->regions[1].blocks[0], want);
  for (uint32_t i = 0; i < n && !P->failed; i++) {
    av_value *r = &op->results[i];
    if (r->type && r->type->kind == AV_TYPE_TENSOR) r->type = av_part_local_type(P, r->type, want[i]);
    av_part_set(P, r, r, want[i]);
  }
  free(want);
  free(buf);
  return !P->failed;
}

/* case/if: the branches partitioned like main, their results on the op's propagated
 * result shardings; the branch index is replicated. */
static bool partition_case(av_part *P, av_op *op) {
  uint32_t n = op->nresults;
  for (uint32_t q = 0; q < op->nregions; q++)
    if (op->regions[q].nblocks != 1 || op->regions[q].blocks[0].nargs != 0 || !op->regions[q].blocks[0].last ||
        op->regions[q].blocks[0].last->noperands != n)
      return false;
  const av_sharding **want = calloc((size_t)n + 1, sizeof *want);
  av_sharding *buf = calloc((size_t)n + 1, sizeof *buf);
  if (!want || !buf) {
    free(want);
    free(buf);
    return av_part_fail(P, AV_RESOURCE_EXHAUSTED, "out of memory");
  }
  bool ok = true;
  for (uint32_t i = 0; i < n && ok; i++) {
    const av_value *r = &op->results[i];
    ok = !r->type || r->type->kind != AV_TYPE_TUPLE;
    if (ok) want[i] = r->type && r->type->kind == AV_TYPE_TENSOR ? av_part_keep(P, av_part_target(P, r, &buf[i])) : NULL;
  }
  for (uint32_t i = 0; ok && i < op->noperands && !P->failed; i++) op->operands[i] = av_part_operand(P, op->operands[i], NULL);
  for (uint32_t q = 0; ok && q < op->nregions && !P->failed; q++) process_block(P, &op->regions[q].blocks[0], want);
  for (uint32_t i = 0; ok && i < n && !P->failed; i++) {
    av_value *r = &op->results[i];
    if (r->type && r->type->kind == AV_TYPE_TENSOR) r->type = av_part_local_type(P, r->type, want[i]);
    av_part_set(P, r, r, want[i]);
  }
  free(want);
  free(buf);
  return ok && !P->failed;
}

/* The device an op with a maximal sharding (sdy.sharding on a one-device mesh with its
 * device_ids, e.g. a host callback JAX pins to one device) runs on, or -1. */
static int maximal_device(av_part *P, const av_op *op) {
  const av_attr *a = av_op_attr(op, "sdy.sharding");
  const char *t = a && (a->kind == AV_ATTR_OPAQUE || a->kind == AV_ATTR_STRING) ? a->u.str.s : NULL;
  if (!t) return -1;
  /* an op without results (a host callback returning nothing) still names one value */
  uint32_t nvalues = op->nresults ? op->nresults : 1;
  int *ranks = calloc(nvalues + 1, sizeof *ranks);
  av_sharding *sh = calloc(nvalues + 1, sizeof *sh);
  av_diag ignored;
  av_diag_init(&ignored);
  int dev = -1;
  for (uint32_t i = 0; ranks && i < op->nresults; i++)
    ranks[i] = op->results[i].type && op->results[i].type->kind == AV_TYPE_TENSOR ? op->results[i].type->rank : 0;
  if (ranks && sh &&
      av_sharding_per_value_parse(t, (int)nvalues, ranks, (av_mesh_table *)&P->S->meshes, sh, &ignored) == AV_OK &&
      sh[0].mesh && sh[0].mesh->ndevices == 1 && sh[0].mesh->device_ids)
    dev = (int)sh[0].mesh->device_ids[0];
  free(ranks);
  free(sh);
  return dev >= 0 && dev < P->ndev ? dev : -1;
}

/* An op pinned to device `dev`: it runs there only (inside an if on the partition id, on
 * whole operands); its tensor results reach the other devices by collective_broadcast. */
static bool maximal_op(av_part *P, av_op *op, int dev) {
  for (uint32_t i = 0; i < op->nresults; i++)
    if (op->results[i].type && op->results[i].type->kind == AV_TYPE_TUPLE) return false;
  for (uint32_t i = 0; i < op->noperands && !P->failed; i++) {
    av_value *o = op->operands[i];
    const av_sharding *ignored;
    op->operands[i] = o->type && o->type->kind == AV_TYPE_TENSOR ? av_part_operand(P, o, NULL) : av_part_get(P, o, &ignored);
  }
  for (uint32_t q = 0; q < op->nregions && !P->failed; q++) remap_region_operands(P, &op->regions[q], true);
  if (P->failed) return false;
  av_value *k = av_emit_i32_scalar(P, dev);
  av_named_attr eq = {"comparison_direction", av_attr_string(P->m, AV_ATTR_ENUM, "EQ", 2)};
  av_value *cops[2] = {P->pid, k};
  av_value *pred = k ? av_emit_op1(P, "stablehlo.compare", 2, cops, av_type_tensor(P->m, AV_DT_PRED, 0, NULL), 1, &eq) : NULL;
  av_op *iff = pred ? av_op_new(P->m, "stablehlo.if", 1, op->nresults, NULL, 0, 2) : NULL;
  if (!iff) return av_part_fail(P, AV_RESOURCE_EXHAUSTED, "out of memory");
  for (uint32_t i = 0; i < op->nresults; i++) iff->results[i].type = op->results[i].type;
  iff->operands[0] = pred;
  iff->loc = op->loc;
  av_block *yes = av_region_add_block(P->m, &iff->regions[0], 0, NULL);
  av_block *no = av_region_add_block(P->m, &iff->regions[1], 0, NULL);
  av_op *r1 = av_op_new(P->m, "stablehlo.return", op->nresults, 0, NULL, 0, 0);
  av_op *r2 = av_op_new(P->m, "stablehlo.return", op->nresults, 0, NULL, 0, 0);
  if (!yes || !no || !r1 || !r2) return av_part_fail(P, AV_RESOURCE_EXHAUSTED, "out of memory");
  av_block_insert_before(P->b, op, iff);
  av_block_remove(P->b, op);
  av_block_append(yes, op);
  for (uint32_t i = 0; i < op->nresults; i++) r1->operands[i] = &op->results[i];
  r1->loc = r2->loc = op->loc;
  av_block_append(yes, r1);
  /* elsewhere: zeros, and tokens from nothing */
  av_block *saved_b = P->b;
  P->b = no;
  P->before = NULL;
  for (uint32_t i = 0; i < op->nresults && !P->failed; i++) {
    const av_type *t = op->results[i].type;
    if (t && t->kind == AV_TYPE_TENSOR) {
      av_value *z0 = av_emit_i32_scalar(P, 0);
      av_value *zs = z0 ? av_emit_op1(P, "stablehlo.convert", 1, &z0, av_type_tensor(P->m, t->dtype, 0, NULL), 0, NULL) : NULL;
      av_named_attr bd = {"broadcast_dimensions", av_attr_ints(P->m, 0, NULL)};
      r2->operands[i] = zs ? av_emit_op1(P, "stablehlo.broadcast_in_dim", 1, &zs, t, 1, &bd) : NULL;
    } else {
      r2->operands[i] = av_emit_op1(P, "stablehlo.after_all", 0, NULL, t, 0, NULL);
    }
  }
  av_block_append(no, r2);
  P->b = saved_b;
  P->before = iff->next;
  /* results: from the pinned device to every device */
  int64_t *groups = calloc((size_t)P->ndev + 1, sizeof *groups);
  if (!groups) return av_part_fail(P, AV_RESOURCE_EXHAUSTED, "out of memory");
  groups[0] = dev;
  for (int q = 0, n = 1; q < P->ndev; q++)
    if (q != dev) groups[n++] = q;
  for (uint32_t i = 0; i < op->nresults && !P->failed; i++) {
    av_value *r = &iff->results[i];
    if (!r->type || r->type->kind != AV_TYPE_TENSOR) {
      av_part_set(P, &op->results[i], r, NULL);
      continue;
    }
    av_named_attr attrs[2] = {{"replica_groups", NULL}, {"channel_id", av_attr_int(P->m, 1, av_type_tensor(P->m, AV_DT_S64, 0, NULL))}};
    int64_t dims[2] = {1, P->ndev};
    const av_type *gt = av_type_tensor(P->m, AV_DT_S64, 2, dims);
    attrs[0].value = gt ? av_attr_dense(P->m, gt, groups, (size_t)P->ndev * 8, false, false) : NULL;
    av_value *b = attrs[0].value && attrs[1].value ? av_emit_op1(P, "stablehlo.collective_broadcast", 1, &r, r->type, 2, attrs) : NULL;
    if (b) {
      P->loc = op->loc;
      av_part_name_loc(P, b->def, "collective-broadcast");
    }
    if (b && P->rep) P->rep->ncollectives++;
    av_part_set(P, &op->results[i], b, NULL);
  }
  free(groups);
  /* after the broadcasts */
  av_op *last = P->before ? P->before->prev : P->b->last;
  settle_results_after(P, op, last ? last : iff);
  P->before = iff->next;
  return !P->failed;
}

/* A host callback JAX asks to run on every device's shards (jax.debug.print(...,
 * partitioned=True), lowered by the anvil package to @anvil_partitioned_host_callback): its
 * operands stay as each device holds them, and each device calls back with its own. */
static bool partitioned_callback(av_part *P, av_op *op) {
  const char *t = op->code == AV_OP_CUSTOM_CALL ? av_attr_get_str(op, "call_target_name") : NULL;
  if (!t || strcmp(t, "anvil_partitioned_host_callback") != 0) return false;
  for (uint32_t i = 0; i < op->noperands; i++) {
    const av_sharding *ignored;
    op->operands[i] = av_part_get(P, op->operands[i], &ignored);
  }
  for (uint32_t i = 0; i < op->nresults; i++) av_part_set(P, &op->results[i], &op->results[i], NULL);
  av_part_settle_results(P, op);
  return true;
}

static void process_op(av_part *P, av_op *op, int depth) {
  P->before = op;
  P->loc = op->loc;
  if (depth > 0) {
    process_body_op(P, op, depth);
    return;
  }
  if (partitioned_callback(P, op) || av_part_custom(P, op)) return;
  switch (op->code) {
    case AV_OP_SDY_MANUAL_COMPUTATION:
      inline_manual(P, op, 0);
      return;
    case AV_OP_SDY_SHARDING_GROUP: /* propagation has used it */
      av_block_remove(P->b, op);
      return;
    case AV_OP_SDY_SHARDING_CONSTRAINT:
    case AV_OP_SDY_RESHARD: {
      if (op->noperands != 1 || op->nresults != 1) break;
      av_sharding buf;
      const av_sharding *t = av_part_target(P, &op->results[0], &buf);
      av_value *v = av_part_operand(P, op->operands[0], t);
      av_part_set(P, &op->results[0], v, av_part_keep(P, t));
      av_block_remove(P->b, op);
      return;
    }
    case AV_OP_CONSTANT:
      if (av_part_constant(P, op)) return;
      break;
    case AV_OP_WHILE:
      if (partition_while(P, op)) return;
      if (P->failed) return;
      break;
    case AV_OP_CASE: case AV_OP_IF:
      if (partition_case(P, op)) return;
      if (P->failed) return;
      break;
    case AV_OP_IOTA:
      if (av_part_iota(P, op)) return;
      break;
    default: {
      int dev = maximal_device(P, op);
      if (dev >= 0) {
        if (!maximal_op(P, op, dev) && !P->failed) fallback(P, op, "maximal sharding on a tuple");
        return;
      }
      if (av_part_local_op(P, op)) {
        av_part_settle_results(P, op);
        return;
      }
      if (P->failed) return;
      break;
    }
  }
  fallback(P, op, "no partitioning rule: runs on gathered operands");
}

/* ------------------------------------------------------------------ entry */

static bool is_tensor_type(const av_type *t) { return t && t->kind == AV_TYPE_TENSOR; }

static void snapshot_types(av_part *P, const av_region *r) {
  for (uint32_t b = 0; b < r->nblocks; b++) {
    for (uint32_t i = 0; i < r->blocks[b].nargs; i++) {
      const av_value *v = &r->blocks[b].args[i];
      if (v->id < P->nval) P->gtype[v->id] = v->type;
    }
    for (const av_op *op = r->blocks[b].first; op; op = op->next) {
      for (uint32_t i = 0; i < op->nresults; i++)
        if (op->results[i].id < P->nval) P->gtype[op->results[i].id] = op->results[i].type;
      for (uint32_t q = 0; q < op->nregions; q++) snapshot_types(P, &op->regions[q]);
    }
  }
}

/* main's sdy.sharding attributes describe the global program: once main is the per-device
 * program they are kept as anvil.global_sharding (a dumped program read back must not be
 * partitioned a second time). */
static const av_attr *rename_sharding(av_module *m, const av_attr *dict) {
  if (!dict || dict->kind != AV_ATTR_DICT || !av_dict_get(dict, "sdy.sharding")) return dict;
  size_t n = dict->u.dict.n;
  av_named_attr *items = av_arena_calloc(&m->arena, n + 1, sizeof *items);
  if (!items) return dict;
  for (size_t i = 0; i < n; i++) {
    items[i] = dict->u.dict.items[i];
    if (strcmp(items[i].name, "sdy.sharding") == 0) items[i].name = "anvil.global_sharding";
  }
  const av_attr *r = av_attr_dict(m, n, items);
  return r ? r : dict;
}

static bool not_partitioned(av_spmd_report *rep, const char *why) {
  free(rep->why_not);
  rep->why_not = strdup(why);
  return false;
}

static const av_op *custom_partitioned_call(const av_region *r, int depth) {
  for (uint32_t b = 0; b < r->nblocks && depth < 64; b++)
    for (const av_op *op = r->blocks[b].first; op; op = op->next) {
      if (av_custom_partitioner_of(op)) return op;
      for (uint32_t q = 0; q < op->nregions; q++) {
        const av_op *in = custom_partitioned_call(&op->regions[q], depth + 1);
        if (in) return in;
      }
    }
  return NULL;
}

static av_code partition_main(av_module *m, const av_spmd_shardings *s, int num_replicas,
                              int num_partitions, av_spmd_report *rep, av_diag *d);

av_code av_spmd_partition(av_module *m, const av_spmd_shardings *s, int num_replicas,
                          int num_partitions, av_spmd_report *rep, av_diag *d) {
  av_code c = partition_main(m, s, num_replicas, num_partitions, rep, d);
  const av_func *ef = av_module_entry(m);
  const av_op *cp = c == AV_OK && rep->why_not && ef ? custom_partitioned_call(&ef->body, 0) : NULL;
  if (cp) { /* its partitioner writes per-device code: there is no global program to run */
    c = av_diag_set(d, AV_UNIMPLEMENTED, "%s @%s at %s: a custom-partitioned call needs the program partitioned, which anvil cannot do here: %s",
                    cp->name, av_attr_get_str(cp, "call_target_name"), cp->loc, rep->why_not);
    av_spmd_report_free(rep);
  }
  return c;
}

static av_code partition_main(av_module *m, const av_spmd_shardings *s, int num_replicas,
                              int num_partitions, av_spmd_report *rep, av_diag *d) {
  memset(rep, 0, sizeof *rep);
  av_func *ef = av_module_entry(m);
  if (num_partitions <= 1 || !ef) return AV_OK;
  if (!s->mesh) return not_partitioned(rep, "no value is sharded"), AV_OK;
  if (num_replicas != 1) return not_partitioned(rep, "several replicas"), AV_OK;
  if (s->mesh->ndevices != num_partitions) {
    char why[160];
    snprintf(why, sizeof why, "the mesh has %lld devices, the program runs on %d",
             (long long)s->mesh->ndevices, num_partitions);
    return not_partitioned(rep, why), AV_OK;
  }
  if (ef->body.nblocks != 1 || !ef->body.blocks[0].last) return not_partitioned(rep, "main has no single block"), AV_OK;
  av_block *body = &ef->body.blocks[0];
  av_op *ret = body->last;
  if ((uint32_t)ef->type->ninputs != body->nargs || (uint32_t)(ef->type->nelems - ef->type->ninputs) != ret->noperands)
    return not_partitioned(rep, "main's signature differs from its body"), AV_OK;
  for (uint32_t i = 0; i < body->nargs; i++)
    if (body->args[i].type && body->args[i].type->kind == AV_TYPE_TUPLE) return not_partitioned(rep, "tuple arguments"), AV_OK;
  for (uint32_t i = 0; i < ret->noperands; i++)
    if (ret->operands[i]->type && ret->operands[i]->type->kind == AV_TYPE_TUPLE) return not_partitioned(rep, "tuple results"), AV_OK;
  /* every other mesh of as many devices must be a reshape of the program's one */
  for (int i = 0; i < s->meshes.n; i++) {
    const av_mesh *o = s->meshes.meshes[i];
    if (o == s->mesh || o->ndevices != s->mesh->ndevices || o->ndevices <= 1) continue;
    bool ok = same_devices(o, s->mesh);
    for (int a = 0; ok && a < o->naxes; a++) {
      av_axis_ref pieces[AV_DIM_MAX_AXES];
      int np;
      ok = axis_on_mesh(o, s->mesh, a, pieces, &np);
    }
    if (!ok) return not_partitioned(rep, "shardings over meshes that are not reshapes of one another"), AV_OK;
  }
  /* main's arguments/results must divide evenly (propagation made them so) */
  for (uint32_t i = 0; i < body->nargs && i < s->nargs; i++) {
    int64_t l[AV_MAX_RANK];
    if (is_tensor_type(body->args[i].type) && s->args[i].mesh && !av_part_local_dims(body->args[i].type, &s->args[i], l))
      return not_partitioned(rep, "an argument's sharding does not divide it"), AV_OK;
  }
  av_arena arena;
  av_arena_init(&arena);
  av_part P = {0};
  P.m = m;
  P.S = s;
  P.mesh = s->mesh;
  P.ndev = num_partitions;
  P.b = body;
  P.rep = rep;
  P.d = d;
  P.arena = &arena;
  P.nval = m->next_value_id;
  P.val = calloc((size_t)P.nval + 1, sizeof *P.val);
  P.sh = calloc((size_t)P.nval + 1, sizeof *P.sh);
  P.gtype = calloc((size_t)P.nval + 1, sizeof *P.gtype);
  if (!P.val || !P.sh || !P.gtype) {
    free(P.val);
    free(P.sh);
    free(P.gtype);
    av_arena_free(&arena);
    return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  }
  snapshot_types(&P, &ef->body);
  /* this device's partition id, once, first */
  P.before = body->first;
  P.loc = ef->loc;
  const av_type *u32 = av_type_tensor(m, AV_DT_U32, 0, NULL);
  av_value *pid = av_emit_op1(&P, "stablehlo.partition_id", 0, NULL, u32, 0, NULL);
  P.pid = pid ? av_emit_op1(&P, "stablehlo.convert", 1, &pid, av_type_tensor(m, AV_DT_S32, 0, NULL), 0, NULL) : NULL;
  /* arguments: their shards */
  const av_type **in_types = calloc((size_t)body->nargs + 1, sizeof *in_types);
  const av_type **out_types = calloc((size_t)ret->noperands + 1, sizeof *out_types);
  if (!in_types || !out_types) av_part_fail(&P, AV_RESOURCE_EXHAUSTED, "out of memory");
  for (uint32_t i = 0; i < body->nargs && !P.failed; i++) {
    av_value *a = &body->args[i];
    av_sharding abuf;
    const av_sharding *as = i < s->nargs && s->args[i].mesh ? av_part_on_mesh(&P, &s->args[i], &abuf) : NULL;
    as = as ? av_part_keep(&P, as) : NULL;
    if (is_tensor_type(a->type) && as) {
      const av_type *lt = av_part_local_type(&P, a->type, as);
      if (!lt) av_part_fail(&P, AV_INTERNAL, "argument %u: sharding does not divide it", i);
      a->type = lt;
    }
    in_types[i] = a->type;
    av_part_set(&P, a, a, as);
  }
  /* the ops, in order (what they add goes before them) */
  for (av_op *op = P.pid ? P.pid->def->next : body->first; op && op != ret && !P.failed;) {
    av_op *next = op->next;
    process_op(&P, op, 0);
    op = next;
  }
  /* results: main's result shardings */
  P.before = ret;
  P.loc = ret->loc;
  for (uint32_t k = 0; k < ret->noperands && !P.failed; k++) {
    av_value *o = ret->operands[k];
    if (!is_tensor_type(P.gtype[o->id] ? P.gtype[o->id] : o->type)) {
      const av_sharding *ignored;
      ret->operands[k] = av_part_get(&P, o, &ignored);
    } else {
      av_sharding rbuf;
      const av_sharding *rs = k < s->nres && s->res[k].mesh && !av_sharding_is_replicated(&s->res[k])
                                  ? av_part_on_mesh(&P, &s->res[k], &rbuf) : NULL;
      ret->operands[k] = av_part_operand(&P, o, rs);
    }
    if (ret->operands[k]) out_types[k] = ret->operands[k]->type;
  }
  if (!P.failed) {
    const av_type *ft = av_type_function(m, (int)body->nargs, in_types, (int)ret->noperands, out_types);
    if (!ft) av_part_fail(&P, AV_RESOURCE_EXHAUSTED, "out of memory");
    else ef->type = ft;
    for (uint32_t i = 0; ef->arg_attrs && i < body->nargs; i++) ef->arg_attrs[i] = rename_sharding(m, ef->arg_attrs[i]);
    for (uint32_t i = 0; ef->res_attrs && i < ret->noperands; i++) ef->res_attrs[i] = rename_sharding(m, ef->res_attrs[i]);
  }
  free(in_types);
  free(out_types);
  free(P.val);
  free(P.sh);
  free(P.gtype);
  av_arena_free(&arena);
  if (P.failed) return d->code ? d->code : AV_INTERNAL;
  rep->partitioned = true;
  return AV_OK;
}
