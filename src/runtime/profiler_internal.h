/* The profiler's state, shared by its three files: profiler.c (recording, names, the flat
 * profile, sessions), profiler_trace.c (the trace file) and profiler_xplane.c (a session's
 * capture as XPlanes). Everything below `mu` is guarded by it. */
#ifndef ANVIL_RUNTIME_PROFILER_INTERNAL_H
#define ANVIL_RUNTIME_PROFILER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "runtime/profiler.h"

enum { PROF_SPARE_RUNS = 8 }; /* run records kept for reuse */

/* A step name (or a program name, for executions) with its totals. */
typedef struct prof_name {
  char *name;
  char *op; /* the op the step runs ("stablehlo.dot_general"); "" for programs */
  const char *codegen; /* generated code's ISA ("avx512", a static string), or NULL */
  bool program;
  bool inner; /* a step of a loop body (its time is also its loop's) */
  uint64_t count;
  int64_t total_ns;
} prof_name;

/* One committed event: a step, or a whole execution (then `name` is the program's). */
typedef struct prof_rec {
  uint32_t name, program; /* name ids */
  bool execution;
  int32_t device, tid;
  int32_t depth; /* steps: loops deep (0: a step of the entry function) */
  uint32_t steps; /* executions: steps recorded */
  uint64_t run;   /* the profiler's count of executions, 1 for the first */
  int64_t t0, t1; /* monotonic ns */
  double flops, bytes;
} prof_rec;

/* Step -> name id for one function that ran: ids[i] is 1 + the name id of its step i (0: not
 * worked out yet). */
typedef struct prof_fn {
  const void *plan, *fn, *steps;
  uint32_t nsteps;
  uint32_t program; /* the program's name id */
  uint32_t *ids;
} prof_fn;

struct av_profiler {
  atomic_int refs;
  atomic_bool on; /* a trace file is open or a session is capturing: runs get records */
  pthread_mutex_t mu;
  int64_t origin_ns; /* monotonic time the trace file's timestamps count from */
  int pid;
  uint64_t runs; /* executions committed */
  /* names, interned: index is an open-addressing table of name id + 1 (0: empty) */
  prof_name *names;
  uint32_t nnames, names_cap;
  uint32_t *index;
  uint32_t index_cap;
  prof_fn *fns;
  uint32_t nfns, fns_cap;
  /* trace file (ANVIL_PROFILE; profiler_trace.c) */
  char *trace_path;
  FILE *trace; /* NULL when there is none, or once finished */
  FILE *spill; /* records written out while running, turned into JSON by finish */
  prof_rec *pending;
  size_t npending;
  /* capture of the current (or last) PJRT profiling session */
  bool capturing;
  int64_t capture_mono0, capture_wall0; /* both clocks at the session's start */
  prof_rec *capture;
  size_t ncapture, capture_cap;
  uint64_t capture_dropped;
  /* run records kept for reuse */
  av_prof_run *spare[PROF_SPARE_RUNS];
  int nspare;
};

/* profiler_trace.c, called with mu held (open: while the profiler is made). */
bool prof_trace_open(av_profiler *p, const char *path, av_diag *d);
void prof_trace_add(av_profiler *p, const prof_rec *r);
/* Writes the JSON and closes the file; false when writing failed. */
bool prof_trace_close(av_profiler *p);
void prof_trace_free(av_profiler *p);

#endif
