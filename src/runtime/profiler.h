/* The profiler: where the time of anvil's executions goes, step by step.
 *
 * How it works, end to end:
 *  1. Each PJRT client owns one av_profiler (nothing process-wide lives here). Every program
 *     loaded on the client holds a reference to it in its plan (plan->profiler), like the
 *     thread pool and the block cache.
 *  2. When a top-level execution starts, av_run_func asks av_prof_run_begin for a run record.
 *     It gets one only while the profiler is on: ANVIL_PROFILE names a trace file, or a PJRT
 *     profiling session (jax.profiler.trace) is capturing. Otherwise the record is NULL and the
 *     executor runs its plain step loop: profiling off costs one branch per block.
 *  3. With a record, the executor runs the entry function's steps in its profiled loop: it
 *     reads the monotonic clock around each step and appends {step, start, end} to the record
 *     (av_prof_step: no lock, no allocation once the record has grown). Steps inside loop
 *     bodies, called functions and reduction regions are part of their enclosing step; loop
 *     bodies and called functions also record their own steps, one level deeper.
 *  4. av_prof_run_end commits the record under the profiler's mutex. Each step is named after
 *     the program's location name for its op, as JAX writes them ("jit(f)/dot_general"), or
 *     after the op when there is none; fused elementwise groups list their ops
 *     ("fused[multiply,add,tanh] jit(f)/mul"). A name is worked out once per step and kept
 *     by the step's address until the plan is freed. The events then go
 *       - to the trace file: Chrome trace-event JSON (Perfetto, chrome://tracing), one "X"
 *         event per step with thread, device, bytes, flops and the op in `args`, plus one per
 *         execution. While running they are kept as compact records (spilled to a temporary
 *         file now and then); av_profiler_finish writes the JSON (profiler_trace.c);
 *       - into per-name totals, which av_profiler_finish prints as a flat profile;
 *       - into the capture of a running PJRT profiling session, which
 *         av_profiler_capture_encode turns into XPlanes (profiler_xplane.c).
 *
 * Thread safety: runs record into their own record; commits, session start/stop and finish
 * take the profiler's mutex. */
#ifndef ANVIL_RUNTIME_PROFILER_H
#define ANVIL_RUNTIME_PROFILER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "util/diag.h"
#include "util/proto_writer.h"

struct av_step;
typedef struct av_profiler av_profiler;

/* One executed step as the executor records it. */
typedef struct av_prof_event {
  const struct av_step *step;
  int64_t t0, t1; /* av_now_ns() before and after */
  int depth;      /* 0: a step of the entry function; n: a step of a loop body n loops deep */
} av_prof_event;

struct av_plan;
struct av_func_plan;

/* The record of one top-level execution (see 2-4 above). */
typedef struct av_prof_run {
  av_profiler *prof;
  const struct av_plan *plan;
  const struct av_func_plan *fn; /* the function whose steps are recorded */
  const char *program;
  int device;
  int tid;
  int64_t t0;
  av_prof_event *ev;
  uint32_t n, cap;
} av_prof_run;

/* A new profiler holding one reference. `trace_path`: the trace file to write (ANVIL_PROFILE),
 * or NULL / "" for none. NULL with `d` set when the file cannot be created. */
av_profiler *av_profiler_new(const char *trace_path, av_diag *d);
av_profiler *av_profiler_retain(av_profiler *p);
/* NULL is ignored. The last release frees everything (a trace file not yet finished gets
 * its closing bracket, without the flat profile). */
void av_profiler_release(av_profiler *p);
/* Ends the trace file and prints the flat profile (the steps with the most total time, with
 * counts and shares) to `out`, when a trace file was given. Runs after this are not written
 * to the file. Idempotent. */
void av_profiler_finish(av_profiler *p, FILE *out);

/* A record for one execution of `fn` (the entry function of `plan`) on `device`, or NULL when
 * the profiler is off (or NULL, or out of memory): the caller then runs unprofiled. */
av_prof_run *av_prof_run_begin(av_profiler *p, const struct av_plan *plan,
                               const struct av_func_plan *fn, int device);
/* Commits the record's events (see 4 above) and recycles it. */
void av_prof_run_end(av_prof_run *r);
bool av_prof_run_grow(av_prof_run *r);

static inline void av_prof_step(av_prof_run *r, const struct av_step *s, int64_t t0, int64_t t1,
                                int depth) {
  if (r->n == r->cap && !av_prof_run_grow(r)) return; /* out of memory: the event is lost */
  av_prof_event *e = &r->ev[r->n++];
  e->step = s;
  e->t0 = t0;
  e->t1 = t1;
  e->depth = depth;
}

/* The profiler remembers each recorded step's name by the step's address; a plan about to be
 * freed must be forgotten first (av_program_free does). */
void av_profiler_forget_plan(av_profiler *p, const struct av_plan *plan);

/* PJRT profiling sessions. Start clears the previous capture; stop ends it (events of runs
 * committed later are not kept). */
void av_profiler_capture_start(av_profiler *p);
void av_profiler_capture_stop(av_profiler *p);
/* Appends this profiler's capture to an XSpace being written (field `planes`): one XPlane per
 * device that ran, named "/device:CUSTOM:<n>" with n counting up from *plane_index, with an
 * "XLA Modules" line (executions) and an "XLA Ops" line (steps), times on the wall clock. */
void av_profiler_capture_encode(av_profiler *p, av_pbw *space, int *plane_index);

#endif
