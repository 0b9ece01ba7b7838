/* sdy.manual_computation across devices: split, run the region per device in parallel,
 * assemble. */
#include "runtime/spmd.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/collectives.h"
#include "runtime/kernels/shape.h"
#include "runtime/thread_pool.h"

static void block_box(const av_spmd_value *v, int pos, bool to_local, av_box *b, int64_t *goff) {
  int64_t gs[AV_BOX_MAX_RANK], ls[AV_BOX_MAX_RANK];
  av_row_major_strides(v->rank, v->gdims, gs);
  av_row_major_strides(v->rank, v->ldims, ls);
  b->rank = v->rank;
  *goff = 0;
  for (int k = 0; k < v->rank; k++) {
    b->dims[k] = v->ldims[k];
    b->sstride[k] = to_local ? gs[k] : ls[k];
    b->dstride[k] = to_local ? ls[k] : gs[k];
    *goff += v->offsets[(size_t)pos * (size_t)v->rank + (size_t)k] * gs[k];
  }
}

static void slice_block(const av_spmd_value *v, int pos, const void *g, void *l);

void av_spmd_slice(const av_spmd_value *v, int pos, const void *g, void *l) {
  if (v->token || !v->lbytes) return;
  if (v->unreduced && v->zeroed && v->zeroed[pos]) {
    memset(l, 0, v->lbytes);
    return;
  }
  slice_block(v, pos, g, l);
}

static void slice_block(const av_spmd_value *v, int pos, const void *g, void *l) {
  if (v->replicated) {
    memcpy(l, g, v->lbytes);
    return;
  }
  av_box b;
  int64_t goff;
  block_box(v, pos, true, &b, &goff);
  size_t es = av_dtype_size(v->dtype);
  if (v->rank == 0) {
    memcpy(l, g, es);
    return;
  }
  av_box_copy(&b, (const char *)g + (size_t)goff * es, l, es);
}

void av_spmd_place(const av_spmd_value *v, int pos, const void *l, void *g) {
  if (v->token || !v->lbytes) return;
  if (v->replicated) {
    memcpy(g, l, v->lbytes);
    return;
  }
  av_box b;
  int64_t goff;
  block_box(v, pos, false, &b, &goff);
  size_t es = av_dtype_size(v->dtype);
  if (v->rank == 0) {
    memcpy(g, l, es);
    return;
  }
  av_box_copy(&b, l, (char *)g + (size_t)goff * es, es);
}

void av_spmd_accumulate(const av_spmd_value *v, int pos, const void *l, void *g, void *tmp) {
  if (v->token || !v->lbytes) return;
  slice_block(v, pos, g, tmp);
  const void *ops[AV_EW_MAX_IN] = {tmp, l, NULL};
  int64_t n = 1;
  for (int k = 0; k < v->rank; k++) n *= v->ldims[k];
  av_ew_run(&v->add, ops, tmp, n);
  av_spmd_place(v, pos, tmp, g);
}

bool av_spmd_assemble(const av_spmd_value *v, const void *const *locals, void *g) {
  if (v->token) return true;
  for (int q = 0; q < v->npos; q++)
    if (v->writer[q] && locals[q]) av_spmd_place(v, q, locals[q], g);
  if (!v->unreduced || !v->lbytes) return true;
  void *tmp = malloc(v->lbytes);
  if (!tmp) return false;
  for (int q = 0; q < v->npos; q++)
    if (v->adder[q] && locals[q]) av_spmd_accumulate(v, q, locals[q], g, tmp);
  free(tmp);
  return true;
}

typedef struct dev_run {
  atomic_int *failed; /* shared: the first failure raises the rendezvous abort */
  const av_spmd_manual_params *p;
  const av_frame *parent;
  int pos;
  av_slot *args, *res;
  av_code code;
  av_diag diag;
  pthread_t thread;
  bool started;
} dev_run;

static void *dev_main(void *arg) {
  dev_run *r = arg;
  const av_spmd_manual_params *p = r->p;
  av_frame f;
  f.fn = r->parent->fn;
  f.plan = r->parent->plan;
  f.blas_share = r->parent->blas_share * p->npos; /* all positions run at once */
  f.pool = av_thread_pool_lane(r->parent->pool, p->npos, r->pos);
  f.cache = r->parent->cache;
  f.prof = f.prof_inner = NULL;
  f.prof_depth = 0; /* the device threads of a manual computation: one step of the caller's */
  av_fp_enter(f.plan->denormals); /* this thread only computes: no need to restore */
  f.device_index = p->device_index[r->pos];
  f.mem_device = -1;
  f.depth = r->parent->depth + 1;
  f.run_id = r->parent->run_id; /* one execution: the caller's run and user data */
  f.user_data = r->parent->user_data;
  f.slots = calloc(f.fn->nslots ? f.fn->nslots : 1, sizeof *f.slots);
  if (!f.slots) {
    for (uint32_t i = 0; i < p->nin; i++) av_slot_release(&r->args[i]);
    r->code = av_diag_set(&r->diag, AV_RESOURCE_EXHAUSTED, "out of memory (device frame)");
    return NULL;
  }
  r->code = av_run_block(p->block, &f, r->args, r->res, &r->diag);
  if (r->code != AV_OK && atomic_fetch_add(r->failed, 1) == 0)
    av_rendezvous_abort(f.plan->rv, true); /* the others must not wait for us */
  /* results must own their bytes before the frame goes */
  for (uint32_t k = 0; r->code == AV_OK && k < p->nout; k++)
    if (!r->res[k].st && r->res[k].data) {
      av_slot owned;
      r->code = av_slot_share(&r->res[k], p->outs[k].lbytes, &owned, &r->diag);
      r->res[k] = owned;
    }
  for (uint32_t i = 0; i < f.fn->nslots; i++) av_slot_release(&f.slots[i]);
  free(f.slots);
  return NULL;
}

/* Nested in an outer manual computation: this thread is one device; it runs the region on
 * its own block of every operand, and its results are the (replicated) results. */
static av_code run_nested(const av_step *s, av_frame *f, const av_spmd_manual_params *p,
                          av_diag *d) {
  int q = -1;
  for (int k = 0; k < p->npos && q < 0; k++)
    if (p->device_index[k] == f->device_index) q = k;
  if (q < 0)
    return av_diag_set(d, AV_INVALID_ARGUMENT,
                       "nested sdy.manual_computation: device %d is not in its mesh", f->device_index);
  av_slot *buf = calloc((size_t)p->nin + p->nout + 1, sizeof *buf);
  if (!buf) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  av_slot *args = buf, *res = buf + p->nin;
  av_code c = AV_OK;
  for (uint32_t i = 0; i < p->nin && c == AV_OK; i++) {
    const av_spmd_value *v = &p->ins[i];
    if (v->token) continue;
    av_storage *st = av_storage_alloc_cached(f->cache, v->lbytes ? v->lbytes : 1);
    if (!st) {
      c = av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory splitting operand %u", i);
      break;
    }
    av_spmd_slice(v, q, av_in(s, f, i), st->data);
    args[i].st = st;
    args[i].data = st->data;
  }
  if (c == AV_OK) c = av_run_block(p->block, f, args, res, d);
  else
    for (uint32_t i = 0; i < p->nin; i++) av_slot_release(&args[i]);
  for (uint32_t k = 0; c == AV_OK && k < p->nout; k++) {
    av_slot_release(&f->slots[s->out[k]]);
    f->slots[s->out[k]] = res[k];
    res[k] = (av_slot){0};
  }
  for (uint32_t k = 0; k < p->nout; k++) av_slot_release(&res[k]);
  free(buf);
  return c;
}

av_code av_step_spmd_manual(const av_step *s, av_frame *f, av_diag *d) {
  const av_spmd_manual_params *p = s->params;
  if (p->nested) return run_nested(s, f, p, d);
  int n = p->npos;
  int ndev = (f->plan->num_replicas > 0 ? f->plan->num_replicas : 1) *
             (f->plan->num_partitions > 0 ? f->plan->num_partitions : 1);
  if (n != ndev)
    return av_diag_set(d, AV_INVALID_ARGUMENT,
                       "sdy.manual_computation over a mesh of %d devices in a program compiled "
                       "for %d", n, ndev);
  atomic_int failed = 0;
  dev_run *runs = calloc((size_t)n, sizeof *runs);
  av_slot *slots = calloc((size_t)n * (p->nin + p->nout) + 1, sizeof *slots);
  av_code c = runs && slots ? AV_OK : av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  for (int q = 0; c == AV_OK && q < n; q++) {
    dev_run *r = &runs[q];
    r->failed = &failed;
    r->p = p;
    r->parent = f;
    r->pos = q;
    r->args = slots + (size_t)q * (p->nin + p->nout);
    r->res = r->args + p->nin;
    av_diag_init(&r->diag);
    for (uint32_t i = 0; i < p->nin; i++) {
      const av_spmd_value *v = &p->ins[i];
      if (v->token) continue;
      av_storage *st = av_storage_alloc_cached(f->cache, v->lbytes ? v->lbytes : 1);
      if (!st) {
        c = av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory splitting operand %u", i);
        break;
      }
      av_spmd_slice(v, q, av_in(s, f, i), st->data);
      r->args[i].st = st;
      r->args[i].data = st->data;
    }
  }
  if (c != AV_OK) {
    for (size_t i = 0; slots && i < (size_t)n * (p->nin + p->nout); i++) av_slot_release(&slots[i]);
    free(slots);
    free(runs);
    return c;
  }
  /* every device on its own thread: collectives in the region wait for each other */
  for (int q = 0; q < n; q++) {
    runs[q].started = pthread_create(&runs[q].thread, NULL, dev_main, &runs[q]) == 0;
    if (!runs[q].started) {
      if (atomic_fetch_add(&failed, 1) == 0) av_rendezvous_abort(f->plan->rv, true);
      for (uint32_t i = 0; i < p->nin; i++) av_slot_release(&runs[q].args[i]);
      runs[q].code = av_diag_set(&runs[q].diag, AV_RESOURCE_EXHAUSTED,
                                 "cannot start the thread of device %d", q);
    }
  }
  for (int q = 0; q < n; q++)
    if (runs[q].started) pthread_join(runs[q].thread, NULL);
  if (atomic_load(&failed)) av_rendezvous_abort(f->plan->rv, false);
  /* report the device that failed first, not those that gave up because of it */
  for (int q = 0; q < n && c == AV_OK; q++)
    if (runs[q].code != AV_OK && runs[q].code != AV_ABORTED)
      c = av_diag_set(d, runs[q].code, "%s\n  on device %d of sdy.manual_computation",
                      runs[q].diag.msg, p->device_index[q]);
  for (int q = 0; q < n && c == AV_OK; q++)
    if (runs[q].code != AV_OK)
      c = av_diag_set(d, runs[q].code, "%s\n  on device %d of sdy.manual_computation",
                      runs[q].diag.msg, p->device_index[q]);
  for (uint32_t k = 0; c == AV_OK && k < p->nout; k++) {
    const av_spmd_value *v = &p->outs[k];
    if (v->token) continue;
    c = av_step_alloc_out(s, f, k, d);
    const void **locals = c == AV_OK ? calloc((size_t)n, sizeof *locals) : NULL;
    if (c == AV_OK && !locals) c = av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
    for (int q = 0; c == AV_OK && q < n; q++) locals[q] = runs[q].res[k].data;
    if (c == AV_OK && !av_spmd_assemble(v, locals, av_out(s, f, k)))
      c = av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory assembling result %u", k);
    free(locals);
  }
  for (size_t i = 0; i < (size_t)n * (p->nin + p->nout); i++) av_slot_release(&slots[i]);
  free(slots);
  free(runs);
  return c;
}
