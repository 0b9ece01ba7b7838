/* A profiling session's capture as XPlanes (tensorflow.profiler.XPlane, tsl's xplane.proto),
 * the form a framework's profiler (jax.profiler.trace) merges into its XSpace and writes to
 * <dir>/plugins/profile/<run>/<host>.xplane.pb.
 *
 * Fields written (field numbers from xplane.proto):
 *   XSpace.planes = 1, warnings = 3 (events a full capture dropped)
 *   XPlane { id = 1, name = 2, lines = 3, event_metadata = 4 (map), stat_metadata = 5 (map) }
 *   XLine { id = 1, name = 2, timestamp_ns = 3 (wall clock), events = 4 }
 *   XEvent { metadata_id = 1, offset_ps = 2 (from the line's timestamp), duration_ps = 3,
 *            stats = 4 }
 *   XStat { metadata_id = 1, uint64_value = 3, int64_value = 4, str_value = 5 }
 *   XEventMetadata { id = 1, name = 2 }, XStatMetadata { id = 1, name = 2 }
 *   a map<int64, M> entry is a message { key = 1, value = 2 }.
 * One plane per device, named like other plugins' device planes ("/device:CUSTOM:<n>", a
 * prefix profiler tools export to their trace viewers), with the line names XLA's device
 * planes use: "XLA Modules" for executions, "XLA Ops" for steps. */
#include <stdlib.h>
#include <string.h>

#include "runtime/profiler_internal.h"

enum { STAT_FLOPS = 1, STAT_BYTES, STAT_OP, STAT_RUN, STAT_THREAD, STAT_COUNT };
static const char *const stat_names[STAT_COUNT] = {
    [STAT_FLOPS] = "flops", [STAT_BYTES] = "bytes_accessed", [STAT_OP] = "hlo_op",
    [STAT_RUN] = "run_id", [STAT_THREAD] = "thread_id"};

static int by_device_then_time(const void *a, const void *b) {
  const prof_rec *x = *(const prof_rec *const *)a, *y = *(const prof_rec *const *)b;
  if (x->device != y->device) return x->device < y->device ? -1 : 1;
  return (x->t0 > y->t0) - (x->t0 < y->t0);
}

static void stat_u64(av_pbw *w, uint32_t id, uint64_t v) {
  size_t m = av_pbw_begin(w, 4);
  av_pbw_varint(w, 1, id);
  av_pbw_varint(w, 3, v);
  av_pbw_end(w, m);
}

static void stat_str(av_pbw *w, uint32_t id, const char *s) {
  size_t m = av_pbw_begin(w, 4);
  av_pbw_varint(w, 1, id);
  av_pbw_string(w, 5, s);
  av_pbw_end(w, m);
}

static void write_event(av_pbw *w, const av_profiler *p, const prof_rec *e) {
  size_t m = av_pbw_begin(w, 4);
  av_pbw_varint(w, 1, (uint64_t)e->name + 1);
  int64_t off = e->t0 - p->capture_mono0;
  av_pbw_varint(w, 2, (uint64_t)(off > 0 ? off : 0) * 1000);
  av_pbw_varint(w, 3, (uint64_t)(e->t1 > e->t0 ? e->t1 - e->t0 : 0) * 1000);
  if (!e->execution) {
    stat_str(w, STAT_OP, p->names[e->name].op);
    if (e->flops > 0) stat_u64(w, STAT_FLOPS, (uint64_t)e->flops);
    if (e->bytes > 0) stat_u64(w, STAT_BYTES, (uint64_t)e->bytes);
  }
  stat_u64(w, STAT_RUN, e->run);
  stat_u64(w, STAT_THREAD, (uint64_t)e->tid);
  av_pbw_end(w, m);
}

/* Events [begin, end) of one device, all of one kind, as an XLine. */
static void write_line(av_pbw *w, const av_profiler *p, prof_rec *const *ev, size_t n,
                       bool executions, uint32_t id, const char *name) {
  size_t m = av_pbw_begin(w, 3);
  av_pbw_varint(w, 1, id);
  av_pbw_string(w, 2, name);
  av_pbw_varint(w, 3, (uint64_t)p->capture_wall0);
  for (size_t i = 0; i < n; i++)
    if (ev[i]->execution == executions) write_event(w, p, ev[i]);
  av_pbw_end(w, m);
}

static void write_plane(av_pbw *w, const av_profiler *p, prof_rec *const *ev, size_t n,
                        int plane_id, bool *used) {
  char name[48];
  snprintf(name, sizeof name, "/device:CUSTOM:%d", plane_id);
  size_t m = av_pbw_begin(w, 1);
  av_pbw_varint(w, 1, (uint64_t)plane_id);
  av_pbw_string(w, 2, name);
  write_line(w, p, ev, n, true, 1, "XLA Modules");
  write_line(w, p, ev, n, false, 2, "XLA Ops");
  memset(used, 0, p->nnames * sizeof *used);
  for (size_t i = 0; i < n; i++) used[ev[i]->name] = true;
  for (uint32_t k = 0; k < p->nnames; k++) {
    if (!used[k]) continue;
    size_t entry = av_pbw_begin(w, 4);
    av_pbw_varint(w, 1, (uint64_t)k + 1);
    size_t md = av_pbw_begin(w, 2);
    av_pbw_varint(w, 1, (uint64_t)k + 1);
    av_pbw_string(w, 2, p->names[k].name);
    av_pbw_end(w, md);
    av_pbw_end(w, entry);
  }
  for (uint32_t k = 1; k < STAT_COUNT; k++) {
    size_t entry = av_pbw_begin(w, 5);
    av_pbw_varint(w, 1, k);
    size_t md = av_pbw_begin(w, 2);
    av_pbw_varint(w, 1, k);
    av_pbw_string(w, 2, stat_names[k]);
    av_pbw_end(w, md);
    av_pbw_end(w, entry);
  }
  av_pbw_end(w, m);
}

void av_profiler_capture_encode(av_profiler *p, av_pbw *space, int *plane_index) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  prof_rec **ev = p->ncapture ? malloc(p->ncapture * sizeof *ev) : NULL;
  bool *used = p->nnames ? malloc(p->nnames * sizeof *used) : NULL;
  if (ev && used) {
    for (size_t i = 0; i < p->ncapture; i++) ev[i] = &p->capture[i];
    qsort(ev, p->ncapture, sizeof *ev, by_device_then_time);
    for (size_t b = 0, e; b < p->ncapture; b = e) {
      for (e = b + 1; e < p->ncapture && ev[e]->device == ev[b]->device;) e++;
      write_plane(space, p, ev + b, e - b, (*plane_index)++, used);
    }
  } else if (p->ncapture) {
    space->failed = true;
  }
  if (p->capture_dropped) { /* XSpace.warnings = 3 */
    char msg[96];
    snprintf(msg, sizeof msg, "anvil: %llu events not kept (the session's limit was reached)",
             (unsigned long long)p->capture_dropped);
    av_pbw_string(space, 3, msg);
  }
  free(ev);
  free(used);
  pthread_mutex_unlock(&p->mu);
}
