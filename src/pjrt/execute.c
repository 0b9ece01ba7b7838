/* PJRT_LoadedExecutable_Execute and the per-device workers that run executions.
 *
 * Execute validates everything, creates the output buffers (pending, with the program's
 * static output shapes) and one completion event per device, queues one job per device and
 * returns. Each device's worker runs its jobs in order: it waits for the inputs' ready
 * events, runs the program, then fulfils the outputs and the completion event (with the
 * error, if any, so failures reach whoever waits on an output). Devices run concurrently,
 * which multi-device programs with collectives need. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/program_module.h"
#include "pjrt/buffer_copy.h"
#include "pjrt/execute_context.h"
#include "pjrt/pjrt_internal.h"

/* The jobs of one multi-device execution. When one fails before its program has run to the
 * end, the others must not wait for it at a collective: it raises an abort of the program's
 * collectives (av_program_abort_devices), and every job of the group that finishes while the
 * group has failed waits for the rest before its device moves on, so that the abort, lowered
 * by the last one, never reaches that device's next execution. Devices see executions in the
 * same order (launch_mu), so the jobs waited for are never queued behind these. */
typedef struct av_job_group {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int remaining; /* jobs not finished */
  int refs;      /* jobs holding the group */
  bool failed;
} av_job_group;

struct av_job {
  av_job *next;
  av_job_group *group; /* shared by the jobs of a multi-device execution, or NULL */
  av_exec_core *core; /* retained */
  int device_index;   /* position in the device assignment */
  int mem_device;     /* the PJRT device's index (block accounting) */
  size_t num_inputs;
  PJRT_Buffer **inputs; /* retained */
  av_storage **donated;  /* [num_inputs]: storage taken from a donated input, or NULL */
  av_storage **pinned;   /* [num_inputs]: the storage an input had when the job was queued */
  bool *held;            /* [num_inputs]: a usage hold on an input not ready when queued */
  size_t num_outputs;
  PJRT_Buffer **outputs; /* retained */
  PJRT_Event *complete;  /* retained */
  /* The caller's PJRT_ExecuteOptions.context, held (its data lives while the job does), or
   * NULL; the job's copy of its user data (empty without one) */
  PJRT_ExecuteContext *context;
  av_user_data_list user_data;
};

/* This device failed where the others may wait for it: raise the abort (once per execution). */
static void job_group_fail(av_job *j) {
  av_job_group *g = j->group;
  if (!g) return;
  pthread_mutex_lock(&g->mu);
  bool first = !g->failed;
  g->failed = true;
  pthread_mutex_unlock(&g->mu);
  if (first) av_program_abort_devices(j->core->program, true);
}

/* The job is done (ran = it was published and has run): leave the group. */
static void job_group_leave(av_job *j, bool ran) {
  av_job_group *g = j->group;
  if (!g) return;
  pthread_mutex_lock(&g->mu);
  if (ran && --g->remaining == 0) {
    if (g->failed) av_program_abort_devices(j->core->program, false);
    pthread_cond_broadcast(&g->cv);
  }
  while (ran && g->failed && g->remaining > 0) pthread_cond_wait(&g->cv, &g->mu);
  bool last = --g->refs == 0;
  pthread_mutex_unlock(&g->mu);
  if (last) {
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    free(g);
  }
}

static void job_free(av_job *j) {
  for (size_t i = 0; i < j->num_inputs; i++) {
    if (j->held && j->held[i]) av_buffer_drop_hold(j->inputs[i]);
    av_buffer_release(j->inputs[i]);
    if (j->donated) av_storage_release(j->donated[i]);
    if (j->pinned) av_storage_release(j->pinned[i]);
  }
  free(j->donated);
  free(j->pinned);
  free(j->held);
  for (size_t i = 0; i < j->num_outputs; i++) av_buffer_release(j->outputs[i]);
  free(j->inputs);
  free(j->outputs);
  av_event_release(j->complete);
  av_execute_context_done(j->context, &j->user_data);
  av_exec_core_release(j->core);
  free(j);
}

static void job_fail(av_job *j, PJRT_Error *err) {
  for (size_t i = 0; i < j->num_outputs; i++) av_buffer_fulfill(j->outputs[i], NULL, av_error_copy(err));
  av_event_set(j->complete, err);
}

/* A copy of `st` (an array of `b`'s type) with its bytes moved from layout `from` to `to`;
 * NULL when out of memory. */
static av_storage *relayout(const PJRT_Buffer *b, const av_storage *st, const int64_t *from,
                            const int64_t *to) {
  av_storage *out = av_storage_alloc_uninit(st->size ? st->size : 1);
  if (!out) return NULL;
  size_t elem = av_dtype_size(b->dtype);
  int64_t src_strides[AV_MAX_RANK], dst_strides[AV_MAX_RANK];
  av_layout_strides(elem, b->rank, b->dims, from, src_strides);
  av_layout_strides(elem, b->rank, b->dims, to, dst_strides);
  av_copy_strided(out->data, dst_strides, st->data, src_strides, b->dims, b->rank, elem);
  return out;
}

static void job_run(av_job *j) {
  size_t ni = j->num_inputs, no = j->num_outputs;
  av_tensor *in = calloc(ni ? ni : 1, sizeof *in);
  av_tensor *out = calloc(no ? no : 1, sizeof *out);
  bool *was_donated = calloc(ni ? ni : 1, sizeof *was_donated);
  PJRT_Error *err = NULL;
  if (!in || !out || !was_donated) err = av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory (execute)");
  for (size_t i = 0; !err && i < ni; i++) {
    PJRT_Buffer *b = j->inputs[i];
    if (j->donated[i]) { /* the only reference: the runtime may write into it */
      in[i].storage = j->donated[i];
      j->donated[i] = NULL;
      was_donated[i] = true;
    } else if (j->pinned[i]) {
      in[i].storage = j->pinned[i];
      j->pinned[i] = NULL;
    } else if (j->held[i]) {
      j->held[i] = false;
      err = av_buffer_acquire_held(b, &in[i].storage);
    } else { /* deleted before it was queued */
      err = av_buffer_acquire_storage(b, &in[i].storage);
    }
    if (err) {
      PJRT_Error *wrapped = av_error_new(av_error_code(err), "argument %zu: %s", i, av_error_message(err));
      av_error_free(err);
      err = wrapped;
      break;
    }
    in[i].dtype = b->dtype;
    in[i].rank = b->rank;
    memcpy(in[i].dims, b->dims, sizeof in[i].dims);
    /* programs compute on row-major arrays: a buffer kept in another layout is read through
     * a row-major copy (which, when donated, is the program's to write) */
    if (!av_layout_is_default(b->rank, b->minor_to_major)) {
      int64_t row_major[AV_MAX_RANK];
      for (int k = 0; k < b->rank; k++) row_major[k] = b->rank - 1 - k;
      av_storage *copy = relayout(b, in[i].storage, b->minor_to_major, row_major);
      if (!copy) {
        err = av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory re-laying out argument %zu", i);
        break;
      }
      av_storage_release(in[i].storage);
      in[i].storage = copy;
    }
  }
  if (!err) {
    av_diag d;
    av_diag_init(&d);
    int64_t start = av_now_ns(), waited = av_program_net_wait_ns(j->core->program);
    av_code rc = av_program_execute_on(j->core->program, j->device_index, j->mem_device, in,
                                       was_donated, &j->user_data, out, &d);
    for (size_t i = 0; i < ni; i++) /* the run took these references */
      if (was_donated[i]) in[i].storage = NULL;
    if (rc != AV_OK) {
      if (d.code == AV_OK) av_diag_set(&d, AV_INTERNAL, "execution failed without a message");
      err = av_error_from_diag(&d);
      if (d.code != AV_ABORTED) job_group_fail(j);
    }
    /* the run's own work: time spent waiting for other processes does not count (as on
     * XLA:CPU, a program that is mostly a cross-process collective runs on the caller's
     * thread, sparing the hand-over to the worker) */
    int64_t took = av_now_ns() - start - (av_program_net_wait_ns(j->core->program) - waited);
    atomic_store_explicit(&j->core->last_run_ns, took > 0 ? took : 1, memory_order_relaxed);
  } else {
    job_group_fail(j); /* the program never ran here: the other devices must not wait */
  }
  /* Check every output against the promised shape before publishing any. */
  for (size_t i = 0; !err && i < no; i++) {
    PJRT_Buffer *b = j->outputs[i];
    size_t nbytes = 0;
    bool same = out[i].storage && out[i].dtype == b->dtype && out[i].rank == b->rank &&
                av_shape_bytes(out[i].dtype, out[i].rank, out[i].dims, &nbytes) &&
                out[i].storage->size >= b->nbytes;
    for (int k = 0; same && k < b->rank; k++) same = out[i].dims[k] == b->dims[k];
    if (!same)
      err = av_error_new(AV_INTERNAL,
                         "anvil: output %zu of '%s' does not have the compiled type/shape", i,
                         j->core->name);
  }
  /* An output is a new buffer unless it reuses a donated input (as in XLA): a program that
   * returns an argument as it is gets a copy, so the caller's buffer stays its own. */
  for (size_t i = 0; !err && i < no; i++)
    for (size_t k = 0; k < ni; k++) {
      if (was_donated[k] || out[i].storage != in[k].storage) continue;
      av_storage *copy = av_storage_alloc_uninit(out[i].storage->size ? out[i].storage->size : 1);
      if (!copy) {
        err = av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory copying output %zu", i);
        break;
      }
      memcpy(copy->data, out[i].storage->data, out[i].storage->size);
      av_storage_release(out[i].storage);
      out[i].storage = copy;
      break;
    }
  /* results asked for in another layout than row-major are stored in it */
  for (size_t i = 0; !err && i < no; i++) {
    PJRT_Buffer *b = j->outputs[i];
    if (av_layout_is_default(b->rank, b->minor_to_major)) continue;
    int64_t row_major[AV_MAX_RANK];
    for (int k = 0; k < b->rank; k++) row_major[k] = b->rank - 1 - k;
    av_storage *moved = relayout(b, out[i].storage, row_major, b->minor_to_major);
    if (!moved) {
      err = av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory re-laying out output %zu", i);
      break;
    }
    av_storage_release(out[i].storage);
    out[i].storage = moved;
  }
  if (err) {
    job_fail(j, err);
    for (size_t i = 0; out && i < no; i++) av_storage_release(out[i].storage);
  } else {
    for (size_t i = 0; i < no; i++) av_buffer_fulfill(j->outputs[i], out[i].storage, NULL);
    av_event_set(j->complete, NULL);
  }
  for (size_t i = 0; in && i < ni; i++) av_storage_release(in[i].storage);
  free(was_donated);
  free(in);
  free(out);
}

static void *worker_main(void *arg) {
  av_worker *w = arg;
  for (;;) {
    pthread_mutex_lock(&w->mu);
    while (!w->head && !w->stop) pthread_cond_wait(&w->cv, &w->mu);
    av_job *j = w->head;
    if (j) {
      w->head = j->next;
      if (!w->head) w->tail = NULL;
    }
    pthread_mutex_unlock(&w->mu);
    if (!j) break; /* stop requested and the queue is drained */
    job_run(j);
    job_group_leave(j, true);
    job_free(j);
  }
  return NULL;
}

PJRT_Error *av_worker_start(PJRT_Device *d) {
  av_worker *w = &d->worker;
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
  if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    return av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: cannot start the worker of device %d",
                        d->index);
  }
  w->started = true;
  return NULL;
}

/* Finishes the queued jobs, then joins the thread. */
void av_worker_stop(PJRT_Device *d) {
  av_worker *w = &d->worker;
  if (!w->started) return;
  pthread_mutex_lock(&w->mu);
  w->stop = true;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
  pthread_join(w->thread, NULL);
  pthread_cond_destroy(&w->cv);
  pthread_mutex_destroy(&w->mu);
  w->started = false;
}

static void worker_push(av_worker *w, av_job *j) {
  pthread_mutex_lock(&w->mu);
  j->next = NULL;
  if (w->tail)
    w->tail->next = j;
  else
    w->head = j;
  w->tail = j;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

/* ------------------------------------------------------------ arguments */

static void type_str(char *buf, size_t n, av_dtype dt, int rank, const int64_t *dims) {
  size_t len = (size_t)snprintf(buf, n, "%s[", av_dtype_mlir_name(dt));
  for (int k = 0; k < rank && len < n; k++)
    len += (size_t)snprintf(buf + len, n - len, "%s%lld", k ? "," : "", (long long)dims[k]);
  if (len < n) snprintf(buf + len, n - len, "]");
}

/* The argument must have the type the program was compiled for (per-device shapes). */
static PJRT_Error *check_argument_type(const av_exec_core *core, const PJRT_Buffer *b, size_t i,
                                       size_t d, const char *fn) {
  av_dtype dt = AV_DT_INVALID;
  int rank;
  const int64_t *dims;
  if (!av_program_input_type(core->program, (int)i, &dt, &rank, &dims) || dt == AV_DT_INVALID)
    return NULL; /* unknown (e.g. a token): the runtime checks */
  bool same = b->dtype == dt && b->rank == rank;
  for (int k = 0; same && k < rank; k++) same = dims && b->dims[k] == dims[k];
  if (same) return NULL;
  char want[160], got[160];
  type_str(want, sizeof want, dt, rank, dims);
  type_str(got, sizeof got, b->dtype, b->rank, b->dims);
  return av_error_new(AV_INVALID_ARGUMENT, "%s: argument %zu of device %zu of '%s' must be %s, got %s",
                      fn, i, d, core->name, want, got);
}

/* ---------------------------------------------------------------- donation */

/* Inputs the program lets an output reuse, minus those the caller forbids. */
static bool *donatable_inputs(const av_exec_core *core, size_t na, const PJRT_ExecuteOptions *o) {
  bool *d = calloc(na ? na : 1, sizeof *d);
  if (!d) return NULL;
  for (int j = 0; j < core->num_outputs; j++) {
    int a = av_program_output_alias(core->program, j);
    if (a >= 0 && (size_t)a < na) d[a] = true;
  }
  if (o && o->non_donatable_input_indices)
    for (size_t k = 0; k < o->num_non_donatable_input_indices; k++) {
      int64_t i = o->non_donatable_input_indices[k];
      if (i >= 0 && (size_t)i < na) d[i] = false;
    }
  return d;
}

/* Donation hands the execution the input's storage and invalidates the buffer (as PJRT
 * specifies; JAX then sees the array as deleted). When the storage is not ours alone to give
 * (zero-copy host memory, or shared with another buffer) the execution gets a private copy,
 * so the buffer is still invalidated and the runtime may write into what it gets. Donation is
 * skipped (the input is then only read) when the buffer is not ready yet, externally
 * referenced, or passed twice. The runtime sees donated storage with a reference count of 1. */
static av_storage *try_donate(PJRT_Buffer *b, PJRT_Buffer *const *const *lists, size_t nd,
                              size_t na) {
  int uses = 0;
  for (size_t d = 0; d < nd; d++)
    for (size_t i = 0; i < na; i++) uses += lists[d][i] == b;
  if (uses != 1) return NULL;
  av_storage *st = NULL;
  pthread_mutex_lock(&b->mu);
  if (!b->deleted && b->storage && b->external_refs == 0) {
    if (b->storage->owned && atomic_load(&b->storage->refcount) == 1 && b->usage_holds == 0) {
      st = av_buffer_take_storage_locked(b);
    } else if ((st = av_storage_alloc_uninit(b->storage->size)) != NULL) {
      if (b->storage->size) memcpy(st->data, b->storage->data, b->storage->size);
      /* executions queued earlier with a usage hold keep reading the original */
      if (b->usage_holds == 0) av_storage_release(av_buffer_take_storage_locked(b));
    }
    if (st) b->deleted = true;
  }
  pthread_mutex_unlock(&b->mu);
  return st;
}

/* Short single-device executions whose inputs are all there run on the caller's thread:
 * handing them to the worker costs two thread switches per call, and waking an idle CPU
 * takes 60-120 us on a VM (a 77 us lax.scan took 130-200 us through the worker). Short
 * means: the last run took under AV_INLINE_MAX_NS, or, before the first run, the program
 * touches at most AV_INLINE_MAX_BYTES. Longer runs go to the worker, so the caller can
 * dispatch its next work meanwhile. Only when the device's queue is empty, so nothing
 * queued earlier is overtaken. */
enum { AV_INLINE_MAX_BYTES = 256 * 1024 };
#define AV_INLINE_MAX_NS 1000000 /* 1 ms */

static bool run_inline_ok(const av_job *j, av_worker *w) {
  size_t bytes = 0;
  for (size_t i = 0; i < j->num_outputs; i++) bytes += j->outputs[i]->nbytes;
  for (size_t i = 0; i < j->num_inputs; i++) {
    if (j->donated[i]) continue; /* taken already: its bytes are ours */
    if (!j->pinned[i]) return false; /* not ready when queued */
    bytes += j->inputs[i]->nbytes;
  }
  int64_t last = atomic_load_explicit(&j->core->last_run_ns, memory_order_relaxed);
  if (last > 0 ? last > AV_INLINE_MAX_NS : bytes > AV_INLINE_MAX_BYTES) return false;
  pthread_mutex_lock(&w->mu);
  bool idle = w->head == NULL;
  pthread_mutex_unlock(&w->mu);
  return idle;
}

/* Whether the calling thread is one of the client's device workers: it then runs a host
 * callback (JAX code inside it executing here), and the run that called back holds that worker
 * and, for a sharded program, the other devices' workers too, waiting for it. */
static bool on_a_worker_thread(const PJRT_Client *c) {
  pthread_t self = pthread_self();
  for (size_t i = 0; i < c->num_devices; i++) {
    const av_worker *w = &c->devices[i].worker;
    if (w->started && pthread_equal(self, w->thread)) return true;
  }
  return false;
}

/* ------------------------------------------------------------ entry point */

PJRT_Error *av_PJRT_LoadedExecutable_Execute(PJRT_LoadedExecutable_Execute_Args *args) {
  AV_ARGS(args, PJRT_LoadedExecutable_Execute_Args);
  const char *fn = "PJRT_LoadedExecutable_Execute";
  PJRT_LoadedExecutable *le = args->executable;
  AV_REQUIRE(le, AV_INVALID_ARGUMENT, "%s: executable is NULL", fn);
  pthread_mutex_lock(&le->mu);
  bool deleted = le->deleted;
  pthread_mutex_unlock(&le->mu);
  AV_REQUIRE(!deleted, AV_FAILED_PRECONDITION, "%s: the executable has been deleted", fn);
  if (args->options) AV_ARGS(args->options, PJRT_ExecuteOptions);
  /* user data for the FFI handlers the program calls (a caller of API 0.64 or later) */
  PJRT_ExecuteContext *context = NULL;
  if (args->options && AV_HAS(args->options, PJRT_ExecuteOptions, context))
    context = args->options->context;
  if (context) {
    PJRT_Error *bad = av_execute_context_check(context, fn);
    if (bad) return bad;
  }
  av_exec_core *core = le->core;
  size_t nd = args->num_devices, na = args->num_args, no = (size_t)core->num_outputs;
  int expected_inputs = av_program_num_inputs(core->program);

  /* Which devices run: all of this process's devices of the assignment, or execute_device
   * alone: for a single-device (portable) executable any device, for a multi-device one its
   * own part (what the framework's ExecuteSharded asks for; collectives then wait, up to their
   * timeout, for the other devices' parts, which other calls must run). */
  PJRT_Device *single = args->execute_device;
  int single_position = 0;
  if (single) {
    AV_REQUIRE(nd == 1, AV_INVALID_ARGUMENT, "%s: execute_device is set but num_devices is %zu",
               fn, nd);
    PJRT_Device *own = av_client_device(le->client, single);
    AV_REQUIRE(own, AV_INVALID_ARGUMENT, "%s: execute_device does not belong to this client", fn);
    if (le->num_devices > 1) {
      single_position = -1;
      for (size_t k = 0; k < le->num_addressable; k++)
        if (le->addressable[k] == single) single_position = le->addressable_position[k];
      AV_REQUIRE(single_position >= 0, AV_INVALID_ARGUMENT,
                 "%s: '%s' runs on %zu devices, execute_device %d is not one of them", fn,
                 core->name, le->num_devices, single->desc.id);
    }
  } else {
    AV_REQUIRE(nd == le->num_addressable, AV_INVALID_ARGUMENT,
               "%s: '%s' runs on %zu devices but num_devices is %zu%s", fn, core->name,
               le->num_addressable, nd,
               le->num_addressable < le->num_devices ? " (it runs on this process's devices only)"
                                                     : "");
  }
  AV_REQUIRE(expected_inputs < 0 || na == (size_t)expected_inputs, AV_INVALID_ARGUMENT,
             "%s: '%s' takes %d arguments, got %zu", fn, core->name, expected_inputs, na);
  AV_REQUIRE(args->argument_lists || na == 0 || nd == 0, AV_INVALID_ARGUMENT,
             "%s: argument_lists is NULL", fn);
  AV_REQUIRE(args->output_lists || nd == 0, AV_INVALID_ARGUMENT, "%s: output_lists is NULL", fn);
  for (size_t d = 0; d < nd; d++) {
    AV_REQUIRE(args->argument_lists == NULL || na == 0 || args->argument_lists[d],
               AV_INVALID_ARGUMENT, "%s: argument_lists[%zu] is NULL", fn, d);
    AV_REQUIRE(args->output_lists[d] || no == 0, AV_INVALID_ARGUMENT,
               "%s: output_lists[%zu] is NULL", fn, d);
    for (size_t i = 0; i < na; i++) {
      PJRT_Buffer *b = args->argument_lists[d][i];
      AV_REQUIRE(b, AV_INVALID_ARGUMENT, "%s: argument %zu of device %zu is NULL", fn, i, d);
      AV_REQUIRE(b->client == le->client, AV_INVALID_ARGUMENT,
                 "%s: argument %zu of device %zu belongs to another client", fn, i, d);
      pthread_mutex_lock(&b->mu);
      bool gone = b->deleted;
      pthread_mutex_unlock(&b->mu);
      AV_REQUIRE(!gone, AV_INVALID_ARGUMENT,
                 "%s: argument %zu of device %zu has been deleted (or donated)", fn, i, d);
      PJRT_Error *mismatch = check_argument_type(core, b, i, d, fn);
      if (mismatch) return mismatch;
    }
  }

  /* Build every job first; publish nothing until all allocations succeeded. */
  av_job **jobs = calloc(nd ? nd : 1, sizeof *jobs);
  bool *donate = donatable_inputs(core, na, args->options);
  PJRT_Error *err = jobs && donate ? NULL : av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory (execute)");
  /* A donated buffer passed a second time would be read after the execution took it (as in
   * XLA, an error rather than a silent copy). */
  for (size_t d = 0; !err && d < nd; d++)
    for (size_t i = 0; !err && i < na; i++)
      for (size_t k = 0; donate[i] && !err && k < na; k++)
        if (k != i && args->argument_lists[d][k] == args->argument_lists[d][i])
          err = av_error_new(AV_INVALID_ARGUMENT,
                             "%s: argument %zu of device %zu of '%s' is donated but the same "
                             "buffer is also argument %zu (a buffer can be donated only once)",
                             fn, i, d, core->name, k);
  av_job_group *group = NULL;
  if (!err && nd > 1) {
    group = calloc(1, sizeof *group);
    if (!group) {
      err = av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory (execute)");
    } else {
      pthread_mutex_init(&group->mu, NULL);
      pthread_cond_init(&group->cv, NULL);
    }
  }
  for (size_t d = 0; !err && d < nd; d++) {
    av_job *j = calloc(1, sizeof *j);
    jobs[d] = j;
    if (j && group) {
      j->group = group;
      group->refs++;
      group->remaining++;
    }
    if (!j || !(j->inputs = calloc(na ? na : 1, sizeof *j->inputs)) ||
        !(j->donated = calloc(na ? na : 1, sizeof *j->donated)) ||
        !(j->pinned = calloc(na ? na : 1, sizeof *j->pinned)) ||
        !(j->held = calloc(na ? na : 1, sizeof *j->held)) ||
        !(j->outputs = calloc(no ? no : 1, sizeof *j->outputs)) || !(j->complete = av_event_create())) {
      err = av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory (execute)");
      break;
    }
    j->core = av_exec_core_retain(core);
    if (context && (err = av_execute_context_use(context, &j->user_data)) != NULL) break;
    j->context = context;
    /* portable runs are device 0 of 1 */
    j->device_index = single ? single_position : le->addressable_position[d];
    PJRT_Device *dev = single ? single : le->addressable[d];
    j->mem_device = dev->index;
    for (size_t i = 0; i < na; i++) {
      j->inputs[i] = av_buffer_retain(args->argument_lists[d][i]);
      j->num_inputs = i + 1;
    }
    size_t dim_off = 0;
    for (size_t i = 0; i < no; i++) {
      /* a token is held as one pred byte but reads as TOKEN (JAX refuses to convert it) */
      bool token = core->output_types[i] == PJRT_Buffer_Type_TOKEN;
      PJRT_Buffer *b = av_buffer_new_pending(
          dev, (av_memory *)dev->memories[core->output_memory_kind_ids[i]],
          token ? AV_DT_PRED : av_dtype_from_pjrt(core->output_types[i]),
          (int)core->output_ranks[i], core->output_dims_flat + dim_off);
      dim_off += core->output_ranks[i];
      if (!b) {
        err = av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: cannot create output %zu of '%s'", i,
                           core->name);
        break;
      }
      if (token) b->type = PJRT_Buffer_Type_TOKEN;
      if (core->output_custom_layout[i]) /* made in the layout the result asks for */
        memcpy(b->minor_to_major, core->output_m2m[i], sizeof b->minor_to_major);
      j->outputs[i] = b;
      j->num_outputs = i + 1;
    }
  }
  if (err) {
    bool group_held = false; /* the last job holding it frees it */
    for (size_t d = 0; jobs && d < nd; d++)
      if (jobs[d]) {
        group_held = group_held || jobs[d]->group;
        job_group_leave(jobs[d], false);
        job_free(jobs[d]);
      }
    if (group && !group_held) {
      pthread_cond_destroy(&group->cv);
      pthread_mutex_destroy(&group->mu);
      free(group);
    }
    free(jobs);
    free(donate);
    return err;
  }
  /* A program that calls back into the host finishes before Execute returns, and its failure
   * is Execute's error, as on XLA:CPU: a callback's exception reaches the caller at the call,
   * and no runtime token the framework keeps for ordered effects holds it to raise again at
   * every later effects barrier (and at exit). */
  bool sync = nd == 1 && av_program_calls_host(core->program);
  PJRT_Event *sync_done = NULL;
  bool nested = on_a_worker_thread(le->client);
  pthread_mutex_lock(&le->client->launch_mu);
  av_job *inline_job = NULL;
  for (size_t d = 0; d < nd; d++) {
    av_job *j = jobs[d];
    for (size_t i = 0; i < na; i++) {
      if (donate[i]) j->donated[i] = try_donate(j->inputs[i], args->argument_lists, nd, na);
      if (!j->donated[i]) j->pinned[i] = av_buffer_pin_for_execution(j->inputs[i], &j->held[i]);
    }
    for (size_t i = 0; i < no; i++) args->output_lists[d][i] = av_buffer_retain(j->outputs[i]);
    if (args->device_complete_events) args->device_complete_events[d] = av_event_retain(j->complete);
    if (sync) sync_done = av_event_retain(j->complete);
    PJRT_Device *dev = single ? single : le->addressable[d];
    /* A run started from inside a run (a host callback that runs JAX code) must not wait
     * behind the run that waits for it: it runs on the calling thread. One part of a
     * multi-device executable never does otherwise: its collectives wait for the other parts,
     * which the caller must be free to launch (found by fuzz_pjrt: Execute blocked 120 s). */
    if (nd == 1 && (nested || (le->num_devices == 1 && run_inline_ok(j, &dev->worker))))
      inline_job = j;
    else
      worker_push(&dev->worker, j);
  }
  pthread_mutex_unlock(&le->client->launch_mu);
  free(jobs);
  free(donate);
  if (inline_job) {
    job_run(inline_job);
    job_free(inline_job);
  }
  if (sync_done) {
    PJRT_Error *failed = av_event_wait(sync_done);
    av_event_release(sync_done);
    if (failed) { /* nothing is handed out: the caller gets the error instead */
      for (size_t i = 0; i < no; i++) {
        av_buffer_release(args->output_lists[0][i]);
        args->output_lists[0][i] = NULL;
      }
      if (args->device_complete_events) {
        av_event_release(args->device_complete_events[0]);
        args->device_complete_events[0] = NULL;
      }
      return failed;
    }
  }
  return NULL;
}
