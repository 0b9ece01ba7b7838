/* The PJRT profiler extension: jax.profiler.trace() (and torch_xla's profiler) find it in the
 * PJRT_Api extension chain and run their profiling sessions through it; anvil's step events
 * then appear in the framework's trace beside its host events.
 *
 * A session (PLUGIN_Profiler) has no client: the framework starts it for the whole process.
 * So this file keeps the one piece of process-wide mutable state in anvil, guarded by
 * `registry_mu`: the profilers of the clients alive (each client's own av_profiler,
 * runtime/profiler.h) and the session that is capturing, if any. start turns on capturing in
 * every registered profiler; stop turns it off and encodes what each captured as XPlanes
 * into the session's XSpace; collect_data hands that XSpace over. One session captures at a
 * time (a second start fails with FAILED_PRECONDITION until the first stops). */
#include "pjrt/partitioner_extension.h"
#include "pjrt/profiler_extension.h"

#include <stdlib.h>
#include <string.h>

#include "pjrt/pjrt_internal.h"
#include "runtime/profiler.h"
#include "util/proto_writer.h"

struct PLUGIN_Profiler {
  av_pbw space;  /* the XSpace (its planes) being assembled */
  int next_plane; /* planes are numbered across the session's clients */
  bool started, stopped;
  uint8_t *data; /* the collected XSpace: kept until destroy (the caller reads it there) */
  size_t size;
};

static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static struct av_profiler **live;     /* clients' profilers (registry_mu) */
static size_t nlive, live_cap;
static PLUGIN_Profiler *capturing;    /* the session between start and stop, or NULL */
static int traced_clients;            /* clients created with ANVIL_PROFILE so far */

/* Stops one profiler's capture and keeps it in the capturing session (registry_mu held). */
static void harvest(struct av_profiler *p) {
  av_profiler_capture_stop(p);
  av_profiler_capture_encode(p, &capturing->space, &capturing->next_plane);
}

void av_profiler_registry_add(struct av_profiler *p) {
  if (!p) return;
  pthread_mutex_lock(&registry_mu);
  if (nlive == live_cap) {
    size_t cap = live_cap ? live_cap * 2 : 8;
    struct av_profiler **v = realloc(live, cap * sizeof *v);
    if (v) {
      live = v;
      live_cap = cap;
    }
  }
  if (nlive < live_cap) {
    live[nlive++] = p;
    if (capturing) av_profiler_capture_start(p);
  }
  pthread_mutex_unlock(&registry_mu);
}

void av_profiler_registry_remove(struct av_profiler *p) {
  pthread_mutex_lock(&registry_mu);
  for (size_t i = 0; i < nlive; i++) {
    if (live[i] != p) continue;
    if (capturing) harvest(p);
    live[i] = live[--nlive];
    break;
  }
  if (!nlive) { /* no client left: give the table back */
    free(live);
    live = NULL;
    live_cap = 0;
  }
  pthread_mutex_unlock(&registry_mu);
}

int av_profiler_next_trace_number(void) {
  pthread_mutex_lock(&registry_mu);
  int n = ++traced_clients;
  pthread_mutex_unlock(&registry_mu);
  return n;
}

/* ------------------------------------------------------------ the API */

/* Our errors are PJRT errors (pjrt/error.c) under the plugin profiler's name. */
static PLUGIN_Profiler_Error *fail(av_code code, const char *msg) {
  return (PLUGIN_Profiler_Error *)av_error_new(code, "%s", msg);
}

static void error_destroy(PLUGIN_Profiler_Error_Destroy_Args *args) {
  if (args && args->error) av_error_free((PJRT_Error *)args->error);
}

static void error_message(PLUGIN_Profiler_Error_Message_Args *args) {
  if (!args) return;
  const char *m = args->error ? av_error_message((const PJRT_Error *)args->error) : "";
  args->message = m;
  args->message_size = strlen(m);
}

static PLUGIN_Profiler_Error *error_get_code(PLUGIN_Profiler_Error_GetCode_Args *args) {
  if (!args) return fail(AV_INVALID_ARGUMENT, "PLUGIN_Profiler_Error_GetCode: args is NULL");
  args->code = (int)av_error_code((const PJRT_Error *)args->error);
  return NULL;
}

static PLUGIN_Profiler_Error *create(PLUGIN_Profiler_Create_Args *args) {
  if (!args) return fail(AV_INVALID_ARGUMENT, "PLUGIN_Profiler_Create: args is NULL");
  PLUGIN_Profiler *s = calloc(1, sizeof *s);
  if (!s) return fail(AV_RESOURCE_EXHAUSTED, "PLUGIN_Profiler_Create: out of memory");
  av_pbw_init(&s->space);
  args->profiler = s; /* the ProfileOptions in args->options change nothing here */
  return NULL;
}

static PLUGIN_Profiler_Error *stop_locked(PLUGIN_Profiler *s) {
  if (capturing != s) return NULL; /* never started, or already stopped */
  for (size_t i = 0; i < nlive; i++) harvest(live[i]);
  capturing = NULL;
  s->stopped = true;
  return NULL;
}

static PLUGIN_Profiler_Error *destroy(PLUGIN_Profiler_Destroy_Args *args) {
  if (!args || !args->profiler) return NULL;
  PLUGIN_Profiler *s = args->profiler;
  pthread_mutex_lock(&registry_mu);
  stop_locked(s);
  pthread_mutex_unlock(&registry_mu);
  av_pbw_free(&s->space);
  free(s->data);
  free(s);
  return NULL;
}

static PLUGIN_Profiler_Error *start(PLUGIN_Profiler_Start_Args *args) {
  if (!args || !args->profiler) return fail(AV_INVALID_ARGUMENT, "PLUGIN_Profiler_Start: no profiler");
  PLUGIN_Profiler *s = args->profiler;
  pthread_mutex_lock(&registry_mu);
  PLUGIN_Profiler_Error *err = NULL;
  if (capturing && capturing != s) {
    err = fail(AV_FAILED_PRECONDITION,
               "PLUGIN_Profiler_Start: another anvil profiling session is running");
  } else if (!capturing) {
    capturing = s;
    s->started = true;
    for (size_t i = 0; i < nlive; i++) av_profiler_capture_start(live[i]);
  }
  pthread_mutex_unlock(&registry_mu);
  return err;
}

static PLUGIN_Profiler_Error *stop(PLUGIN_Profiler_Stop_Args *args) {
  if (!args || !args->profiler) return fail(AV_INVALID_ARGUMENT, "PLUGIN_Profiler_Stop: no profiler");
  pthread_mutex_lock(&registry_mu);
  PLUGIN_Profiler_Error *err = stop_locked(args->profiler);
  pthread_mutex_unlock(&registry_mu);
  return err;
}

static PLUGIN_Profiler_Error *collect_data(PLUGIN_Profiler_CollectData_Args *args) {
  if (!args || !args->profiler)
    return fail(AV_INVALID_ARGUMENT, "PLUGIN_Profiler_CollectData: no profiler");
  PLUGIN_Profiler *s = args->profiler;
  pthread_mutex_lock(&registry_mu);
  stop_locked(s); /* collecting a running session stops it first */
  pthread_mutex_unlock(&registry_mu);
  if (s->space.failed)
    return fail(AV_RESOURCE_EXHAUSTED, "PLUGIN_Profiler_CollectData: out of memory");
  if (!s->data && s->space.len) s->data = av_pbw_take(&s->space, &s->size);
  /* A caller's own buffer (the documented second call) gets a copy; otherwise it is pointed
   * at ours, which is what jaxlib reads. */
  if (args->buffer && args->buffer != s->data) {
    if (s->size) memcpy(args->buffer, s->data, s->size);
  } else {
    args->buffer = s->data;
  }
  args->buffer_size_in_bytes = s->size;
  return NULL;
}

static const PLUGIN_Profiler_Api profiler_api = {
    .struct_size = sizeof(PLUGIN_Profiler_Api),
    .priv = NULL,
    .error_destroy = error_destroy,
    .error_message = error_message,
    .error_get_code = error_get_code,
    .create = create,
    .destroy = destroy,
    .start = start,
    .stop = stop,
    .collect_data = collect_data,
};

const PJRT_Profiler_Extension av_profiler_ext = {
    .base = {.struct_size = sizeof(PJRT_Profiler_Extension),
             .type = PJRT_Extension_Type_Profiler,
             .next = (PJRT_Extension_Base *)&av_partitioner_ext.base},
    .profiler_api = &profiler_api,
    .traceme_context_id = 0,
};
