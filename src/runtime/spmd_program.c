/* A sharded program run once for all its devices (see spmd.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/net.h"
#include "runtime/spmd.h"

void av_spmd_program_free(av_spmd_program *sp) {
  if (!sp) return;
  for (uint32_t i = 0; sp->in_proto && i < sp->nin; i++) free(sp->in_proto[i]);
  for (uint32_t i = 0; sp->out_proto && i < sp->nout; i++) free(sp->out_proto[i]);
  free(sp->in_proto);
  free(sp->out_proto);
  free(sp->in_proto_size);
  free(sp->out_proto_size);
  for (uint32_t i = 0; sp->ins && i < sp->nin; i++) {
    free((void *)sp->ins[i].offsets);
    free((void *)sp->ins[i].writer);
  }
  for (uint32_t i = 0; sp->outs && i < sp->nout; i++) {
    free((void *)sp->outs[i].offsets);
    free((void *)sp->outs[i].writer);
  }
  free(sp->ins);
  free(sp->outs);
  free(sp->in_lists);
  free(sp->out_lists);
  pthread_cond_destroy(&sp->cv);
  pthread_mutex_destroy(&sp->mu);
  free(sp);
}

static bool tensor_matches(const av_tensor *t, const av_spmd_value *v) {
  if (!t->storage || t->dtype != v->dtype || t->rank != v->rank || t->storage->size < v->lbytes)
    return false;
  for (int k = 0; k < v->rank; k++)
    if (t->dims[k] != v->ldims[k]) return false;
  return true;
}

av_code av_spmd_run_all(av_spmd_program *sp, const av_plan *plan, const av_tensor *const *inputs,
                        av_tensor *const *outputs, const av_user_data_list *user_data,
                        av_diag *d) {
  const av_func_plan *e = plan->entry;
  uint32_t nin = sp->nin, nout = sp->nout;
  if (e->body.nargs != nin || e->body.nresults != nout)
    return av_diag_set(d, AV_INTERNAL, "sharded program signature differs from its plan");
  av_slot *buf = calloc((size_t)nin + nout + 1, sizeof *buf);
  if (!buf) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  av_slot *args = buf, *res = buf + nin;
  av_code c = AV_OK;
  /* several processes: only our devices' inputs are here (the others' are NULL) */
  const av_plan_net *pn = atomic_load_explicit(&plan->net, memory_order_acquire);
  bool spans = pn && pn->global_run && pn->nlocal < sp->ndev && pn->ndev == sp->ndev;
  int first = 0;
  while (first < sp->ndev && !inputs[first]) first++;
  if (first == sp->ndev) c = av_diag_set(d, AV_INTERNAL, "sharded program run without devices");
  for (uint32_t i = 0; i < nin && c == AV_OK; i++) {
    const av_spmd_value *v = &sp->ins[i];
    if (v->token) continue;
    for (int dev = 0; dev < sp->ndev && c == AV_OK; dev++)
      if (inputs[dev] && !tensor_matches(&inputs[dev][i], v))
        c = av_diag_set(d, AV_INVALID_ARGUMENT,
                        "input %u of device %d does not match the program's per-device parameter "
                        "(%s, rank %d)", i, dev, av_dtype_mlir_name(v->dtype), v->rank);
  }
  const void **shards = NULL; /* [ndev * nin] every device's shard of each exchanged input */
  char *gathered = NULL;
  if (c == AV_OK && spans) {
    shards = calloc((size_t)sp->ndev * nin + 1, sizeof *shards);
    c = shards ? av_spmd_gather_shards(sp, pn, inputs, shards, &gathered, d)
               : av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  }
  /* global arguments from every device's shard */
  for (uint32_t i = 0; i < nin && c == AV_OK; i++) {
    const av_spmd_value *v = &sp->ins[i];
    if (v->token) continue;
    if (v->replicated) { /* every device holds it all: use the first device's copy */
      args[i].st = av_storage_retain(inputs[first][i].storage);
      args[i].data = args[i].st->data;
      continue;
    }
    av_storage *st = av_storage_alloc_cached(plan->cache, v->gbytes ? v->gbytes : 1);
    if (!st) {
      c = av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory assembling input %u", i);
      break;
    }
    const void **locals = calloc((size_t)sp->ndev, sizeof *locals);
    for (int dev = 0; locals && dev < sp->ndev; dev++)
      locals[dev] = shards ? shards[(size_t)dev * nin + i] : inputs[dev][i].storage->data;
    bool assembled = locals && av_spmd_assemble(v, locals, st->data);
    free(locals);
    if (!assembled) {
      av_storage_release(st);
      c = av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory assembling input %u", i);
      break;
    }
    args[i].st = st;
    args[i].data = st->data;
  }
  free(shards);
  free(gathered);
  if (c != AV_OK) {
    for (uint32_t i = 0; i < nin; i++) av_slot_release(&args[i]);
    free(buf);
    return c;
  }
  c = av_run_func(plan, e, 0, -1, 0, user_data, args, res, d);
  /* every device's block of every result (this process's devices) */
  for (int dev = 0; dev < sp->ndev; dev++)
    for (uint32_t k = 0; outputs[dev] && k < nout; k++) memset(&outputs[dev][k], 0, sizeof outputs[dev][k]);
  for (uint32_t k = 0; k < nout && c == AV_OK; k++) {
    const av_spmd_value *v = &sp->outs[k];
    for (int dev = 0; dev < sp->ndev && c == AV_OK; dev++) {
      if (!outputs[dev]) continue;
      av_tensor *o = &outputs[dev][k];
      o->dtype = v->token ? AV_DT_PRED : v->dtype;
      o->rank = v->rank;
      memcpy(o->dims, v->ldims, sizeof o->dims);
      if (v->token || !res[k].st) {
        o->storage = av_storage_alloc(1);
      } else if (v->replicated) {
        o->storage = av_storage_retain(res[k].st);
      } else {
        o->storage = av_storage_alloc_cached(plan->cache, v->lbytes ? v->lbytes : 1);
        if (o->storage) av_spmd_slice(v, dev, res[k].data, o->storage->data);
      }
      if (!o->storage) c = av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory slicing output %u", k);
    }
  }
  if (c != AV_OK)
    for (int dev = 0; dev < sp->ndev; dev++)
      for (uint32_t k = 0; outputs[dev] && k < nout; k++) {
        av_storage_release(outputs[dev][k].storage);
        outputs[dev][k].storage = NULL;
      }
  for (uint32_t k = 0; k < nout; k++) av_slot_release(&res[k]);
  free(buf);
  return c;
}

void av_spmd_abort(av_spmd_program *sp, bool on) {
  pthread_mutex_lock(&sp->mu);
  sp->aborted += on ? 1 : -1;
  pthread_cond_broadcast(&sp->cv);
  pthread_mutex_unlock(&sp->mu);
}

av_code av_spmd_execute_device(av_spmd_program *sp, const av_plan *plan, int device_index,
                               const av_tensor *inputs, av_tensor *outputs,
                               const av_user_data_list *user_data, av_diag *d) {
  if (device_index < 0 || device_index >= sp->ndev)
    return av_diag_set(d, AV_INVALID_ARGUMENT, "device index %d outside the program's %d devices",
                       device_index, sp->ndev);
  /* in a job of several processes only this process's devices come here */
  const av_plan_net *pn = atomic_load_explicit(&plan->net, memory_order_acquire);
  int expected = pn && pn->global_run && pn->ndev == sp->ndev ? pn->nlocal : sp->ndev;
  int64_t timeout_ms = pn ? pn->net->timeout_ms + 1000 : av_plan_collective_timeout_ms(plan);
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += (time_t)(timeout_ms / 1000);
  deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
  if (deadline.tv_nsec >= 1000000000L) {
    deadline.tv_sec++;
    deadline.tv_nsec -= 1000000000L;
  }
  int rc = 0;
  pthread_mutex_lock(&sp->mu);
  /* our seat may still be taken by a round that has not finished */
  while (rc != ETIMEDOUT && !sp->aborted && sp->in_lists[device_index])
    rc = pthread_cond_timedwait(&sp->cv, &sp->mu, &deadline);
  if (sp->aborted) { /* a device of this round failed before it came: it never will */
    pthread_mutex_unlock(&sp->mu);
    return av_diag_set(d, AV_ABORTED, "sharded program: abandoned because another device failed");
  }
  if (rc == ETIMEDOUT) {
    pthread_mutex_unlock(&sp->mu);
    return av_diag_set(d, AV_DEADLINE_EXCEEDED, "sharded program: device %d is already running it",
                       device_index);
  }
  sp->in_lists[device_index] = inputs;
  sp->out_lists[device_index] = outputs;
  uint64_t gen = sp->gen;
  if (++sp->arrived == expected) {
    /* last to arrive: run for everyone (the others wait, holding no lock) */
    pthread_mutex_unlock(&sp->mu);
    av_diag_init(&sp->diag);
    av_code c = av_spmd_run_all(sp, plan, sp->in_lists, sp->out_lists, user_data, &sp->diag);
    pthread_mutex_lock(&sp->mu);
    sp->result = c;
    sp->arrived = 0;
    memset(sp->in_lists, 0, (size_t)sp->ndev * sizeof *sp->in_lists);
    memset(sp->out_lists, 0, (size_t)sp->ndev * sizeof *sp->out_lists);
    sp->gen++;
    pthread_cond_broadcast(&sp->cv);
  } else {
    while (rc != ETIMEDOUT && !sp->aborted && sp->gen == gen)
      rc = pthread_cond_timedwait(&sp->cv, &sp->mu, &deadline);
    if (sp->gen == gen) {
      sp->in_lists[device_index] = NULL;
      sp->out_lists[device_index] = NULL;
      sp->arrived--;
      int missing = expected - sp->arrived - 1;
      bool aborted = sp->aborted;
      pthread_mutex_unlock(&sp->mu);
      if (aborted)
        return av_diag_set(d, AV_ABORTED,
                           "sharded program: abandoned because another device failed");
      return av_diag_set(d, AV_DEADLINE_EXCEEDED,
                         "sharded program: timed out after %.3g s waiting for %d more of its %d "
                         "devices (every device of the assignment must execute it)",
                         (double)timeout_ms / 1000.0, missing, expected);
    }
  }
  av_code c = sp->result;
  if (c != AV_OK) av_diag_set(d, c, "%s", sp->diag.msg);
  pthread_mutex_unlock(&sp->mu);
  return c;
}

typedef struct per_dev {
  av_spmd_device_fn fn;
  void *ctx;
  int dev;
  const av_tensor *in;
  av_tensor *out;
  av_code code;
  av_diag diag;
  pthread_t thread;
  bool started;
} per_dev;

static void *per_dev_main(void *arg) {
  per_dev *r = arg;
  r->code = r->fn(r->ctx, r->dev, r->in, r->out, &r->diag);
  return NULL;
}

av_code av_spmd_run_per_device(av_spmd_device_fn fn, void *ctx, int ndev, int nout,
                               const av_tensor *const *inputs, av_tensor *const *outputs,
                               av_diag *d) {
  per_dev *runs = calloc((size_t)ndev + 1, sizeof *runs);
  if (!runs) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  for (int q = 0; q < ndev; q++) {
    runs[q] = (per_dev){.fn = fn, .ctx = ctx, .dev = q, .in = inputs[q], .out = outputs[q]};
    av_diag_init(&runs[q].diag);
    runs[q].started = pthread_create(&runs[q].thread, NULL, per_dev_main, &runs[q]) == 0;
    if (!runs[q].started)
      runs[q].code = av_diag_set(&runs[q].diag, AV_RESOURCE_EXHAUSTED, "cannot start a thread");
  }
  av_code c = AV_OK;
  for (int q = 0; q < ndev; q++)
    if (runs[q].started) pthread_join(runs[q].thread, NULL);
  /* the device that failed first, not those that gave up because of it */
  for (int pass = 0; pass < 2 && c == AV_OK; pass++)
    for (int q = 0; q < ndev && c == AV_OK; q++)
      if (runs[q].code != AV_OK && (pass == 1 || runs[q].code != AV_ABORTED))
        c = av_diag_set(d, runs[q].code, "%s\n  on device %d", runs[q].diag.msg, q);
  if (c != AV_OK) /* all or nothing */
    for (int q = 0; q < ndev; q++)
      if (runs[q].code == AV_OK)
        for (int k = 0; k < nout; k++) {
          av_storage_release(outputs[q][k].storage);
          outputs[q][k].storage = NULL;
        }
  free(runs);
  return c;
}
