/* The profiler (see profiler.h for how it works): run records, step names, commits, the flat
 * profile and PJRT profiling sessions' captures. The trace file is profiler_trace.c's. */
#include "runtime/profiler.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/codegen_abi.h"
#include "runtime/plan.h"
#include "runtime/profiler_internal.h"
#include "runtime/steps.h"
#include "util/clock.h"

enum {
  NAME_MAX_LEN = 512,      /* step names are cut there */
  FLAT_PROFILE_ROWS = 15,  /* steps the flat profile lists */
  MAX_CAPTURE = 1 << 20,   /* events one session keeps per client (64 MiB) */
};

/* ------------------------------------------------------------ names */

static uint64_t hash_str(const char *s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
  return h;
}

static bool index_grow(av_profiler *p) {
  uint32_t cap = p->index_cap ? p->index_cap * 2 : 64;
  uint32_t *ix = calloc(cap, sizeof *ix);
  if (!ix) return false;
  for (uint32_t i = 0; i < p->nnames; i++) {
    uint32_t h = (uint32_t)hash_str(p->names[i].name) & (cap - 1);
    while (ix[h]) h = (h + 1) & (cap - 1);
    ix[h] = i + 1;
  }
  free(p->index);
  p->index = ix;
  p->index_cap = cap;
  return true;
}

/* The id of step name `name` running `op` (steps of one name may run different ops: JAX
 * names a reduction's init constant after the reduction), or of a program name; added when
 * new. UINT32_MAX when out of memory. */
static uint32_t intern(av_profiler *p, const char *name, const char *op, bool program) {
  if (2 * (p->nnames + 1) > p->index_cap && !index_grow(p)) return UINT32_MAX;
  uint32_t h = (uint32_t)hash_str(name) & (p->index_cap - 1);
  for (; p->index[h]; h = (h + 1) & (p->index_cap - 1)) {
    prof_name *n = &p->names[p->index[h] - 1];
    if (n->program == program && strcmp(n->name, name) == 0 && strcmp(n->op, op ? op : "") == 0)
      return p->index[h] - 1;
  }
  if (p->nnames == p->names_cap) {
    uint32_t cap = p->names_cap ? p->names_cap * 2 : 64;
    prof_name *v = realloc(p->names, cap * sizeof *v);
    if (!v) return UINT32_MAX;
    p->names = v;
    p->names_cap = cap;
  }
  prof_name *n = &p->names[p->nnames];
  memset(n, 0, sizeof *n);
  n->name = strdup(name);
  n->op = strdup(op ? op : "");
  if (!n->name || !n->op) {
    free(n->name);
    free(n->op);
    return UINT32_MAX;
  }
  n->program = program;
  p->index[h] = ++p->nnames;
  return p->nnames - 1;
}

/* The name a location gives its op: the quoted text a NameLoc starts with, as JAX writes them
 * ("jit(f)/dot_general"(callsite(...))); 0 when the location has none. */
static size_t location_name(const char *loc, char *out, size_t cap) {
  size_t n = 0;
  if (!loc || loc[0] != '"') return 0;
  for (const char *c = loc + 1; *c && *c != '"' && n + 1 < cap; c++) {
    if (*c == '\\' && c[1]) c++;
    out[n++] = *c;
  }
  out[n] = '\0';
  return n;
}

/* "stablehlo.dot_general" -> "dot_general"; other names unchanged. */
static const char *short_op(const char *op) {
  if (!op) return "?";
  const char *dot = strchr(op, '.');
  return dot && strchr(op, '[') == NULL ? dot + 1 : op;
}

static void step_name(const av_step *s, char *buf, size_t cap) {
  char loc[NAME_MAX_LEN];
  size_t n = location_name(s->loc, loc, sizeof loc);
  if (s->opname && (strncmp(s->opname, "fused", 5) == 0 || strncmp(s->opname, "rows[", 5) == 0))
    snprintf(buf, cap, "%s%s%s", s->opname, n ? " " : "", n ? loc : "");
  else
    snprintf(buf, cap, "%s", n ? loc : short_op(s->opname));
}

/* ------------------------------------------------------------ lifetime */

/* Profilers writing a trace file, finished at process exit when nobody finished them before:
 * PyTorch/XLA never destroys its client, so without this its ANVIL_PROFILE file stayed
 * empty. The list holds no references: a released profiler leaves it. */
enum { MAX_LIVE_TRACES = 64 };
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static av_profiler *live[MAX_LIVE_TRACES];
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

static void finish_at_exit(void) {
  pthread_mutex_lock(&live_mu);
  for (int i = 0; i < MAX_LIVE_TRACES; i++)
    if (live[i]) av_profiler_finish(live[i], stderr);
  pthread_mutex_unlock(&live_mu);
}

static void register_exit(void) { atexit(finish_at_exit); }

static void track(av_profiler *p, bool add) {
  pthread_once(&exit_once, register_exit);
  pthread_mutex_lock(&live_mu);
  for (int i = 0; i < MAX_LIVE_TRACES; i++)
    if (add ? !live[i] : live[i] == p) {
      live[i] = add ? p : NULL;
      break;
    }
  pthread_mutex_unlock(&live_mu);
}

av_profiler *av_profiler_new(const char *trace_path, av_diag *d) {
  av_profiler *p = calloc(1, sizeof *p);
  if (!p) {
    av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory (profiler)");
    return NULL;
  }
  atomic_init(&p->refs, 1);
  atomic_init(&p->on, false);
  pthread_mutex_init(&p->mu, NULL);
  p->origin_ns = av_now_ns();
  p->pid = (int)getpid();
  if (trace_path && *trace_path) {
    if (!prof_trace_open(p, trace_path, d)) {
      av_profiler_release(p);
      return NULL;
    }
    atomic_store(&p->on, true);
    track(p, true);
  }
  return p;
}

av_profiler *av_profiler_retain(av_profiler *p) {
  if (p) atomic_fetch_add(&p->refs, 1);
  return p;
}

void av_profiler_release(av_profiler *p) {
  if (!p || atomic_fetch_sub(&p->refs, 1) != 1) return;
  track(p, false);
  prof_trace_close(p);
  prof_trace_free(p);
  for (uint32_t i = 0; i < p->nnames; i++) {
    free(p->names[i].name);
    free(p->names[i].op);
  }
  for (uint32_t i = 0; i < p->nfns; i++) free(p->fns[i].ids);
  for (int i = 0; i < p->nspare; i++) {
    free(p->spare[i]->ev);
    free(p->spare[i]);
  }
  free(p->fns);
  free(p->names);
  free(p->index);
  free(p->capture);
  pthread_mutex_destroy(&p->mu);
  free(p);
}

static int by_total_desc(const void *a, const void *b) {
  const prof_name *x = *(prof_name *const *)a, *y = *(prof_name *const *)b;
  return (x->total_ns < y->total_ns) - (x->total_ns > y->total_ns);
}

static void print_flat_profile(av_profiler *p, FILE *out, bool written) {
  uint64_t steps = 0;
  int64_t total = 0;
  uint32_t nsteps = 0, ninner = 0;
  for (uint32_t i = 0; i < p->nnames; i++)
    if (!p->names[i].program) {
      if (!p->names[i].inner) { /* steps of bodies and calls are part of their enclosing step's time */
        steps += p->names[i].count;
        total += p->names[i].total_ns;
      }
      nsteps++;
      ninner += p->names[i].inner;
    }
  fprintf(out, "anvil profile: %llu executions, %llu steps, %.3f ms in steps; trace in %s%s\n",
          (unsigned long long)p->runs, (unsigned long long)steps, (double)total / 1e6,
          p->trace_path, written ? "" : " (writing it FAILED)");
  if (!nsteps) return;
  const prof_name **rows = malloc(nsteps * sizeof *rows);
  if (!rows) return;
  uint32_t k = 0;
  for (uint32_t i = 0; i < p->nnames; i++)
    if (!p->names[i].program) rows[k++] = &p->names[i];
  qsort(rows, nsteps, sizeof *rows, by_total_desc);
  fprintf(out, "  %6s %10s %8s %10s  %s\n", "share", "total ms", "count", "mean us", "step");
  if (ninner)
    fprintf(out, "  (\"inside:\" a step of a loop body or a called function, totals over its runs; its "
                 "time is also its enclosing step's)\n");
  for (uint32_t i = 0; i < nsteps && i < FLAT_PROFILE_ROWS; i++) {
    const prof_name *n = rows[i];
    /* the op in brackets when the name does not end with it */
    const char *op = short_op(n->op), *tail = strrchr(n->name, '/');
    bool show_op = *op && !strchr(op, '[') && strcmp(tail ? tail + 1 : n->name, op) != 0;
    fprintf(out, "  %5.1f%% %10.3f %8llu %10.2f  %s%s%s%s%s\n",
            total ? 100.0 * (double)n->total_ns / (double)total : 0.0, (double)n->total_ns / 1e6,
            (unsigned long long)n->count,
            n->count ? (double)n->total_ns / 1e3 / (double)n->count : 0.0, n->inner ? "inside: " : "",
            n->name, show_op ? " [" : "", show_op ? op : "", show_op ? "]" : "");
  }
  if (nsteps > FLAT_PROFILE_ROWS)
    fprintf(out, "  (%u more steps in the trace)\n", nsteps - FLAT_PROFILE_ROWS);
  free(rows);
}

void av_profiler_finish(av_profiler *p, FILE *out) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  if (p->trace) {
    bool written = prof_trace_close(p);
    if (out) print_flat_profile(p, out, written);
    atomic_store(&p->on, p->capturing);
  }
  pthread_mutex_unlock(&p->mu);
}

/* ------------------------------------------------------------ runs */

/* The OS id of the calling thread, asked once per thread (a system call costs more than a
 * small execution's whole profile): a thread-private cache, not shared state. */
static int thread_id(void) {
  static _Thread_local int tid;
  if (!tid) tid = (int)syscall(SYS_gettid);
  return tid;
}

av_prof_run *av_prof_run_begin(av_profiler *p, const av_plan *plan, const av_func_plan *fn,
                               int device) {
  if (!p || !atomic_load_explicit(&p->on, memory_order_relaxed)) return NULL;
  av_prof_run *r = NULL;
  pthread_mutex_lock(&p->mu);
  if (p->nspare) r = p->spare[--p->nspare];
  pthread_mutex_unlock(&p->mu);
  if (!r && !(r = calloc(1, sizeof *r))) return NULL;
  r->prof = p;
  r->plan = plan;
  r->fn = fn;
  r->program = plan->name && *plan->name ? plan->name : "program";
  r->device = device;
  r->tid = thread_id();
  r->n = 0;
  r->t0 = av_now_ns();
  return r;
}

bool av_prof_run_grow(av_prof_run *r) {
  uint32_t cap = r->cap ? r->cap * 2 : 256;
  if (cap < r->cap) return false;
  av_prof_event *ev = realloc(r->ev, (size_t)cap * sizeof *ev);
  if (!ev) return false;
  r->ev = ev;
  r->cap = cap;
  return true;
}

static void capture(av_profiler *p, const prof_rec *rec) {
  if (p->ncapture == p->capture_cap) {
    size_t cap = p->capture_cap ? p->capture_cap * 2 : 1024;
    prof_rec *v = cap <= MAX_CAPTURE ? realloc(p->capture, cap * sizeof *v) : NULL;
    if (!v) {
      p->capture_dropped++;
      return;
    }
    p->capture = v;
    p->capture_cap = cap;
  }
  p->capture[p->ncapture++] = *rec;
}

/* The names of fn's steps, known so far (mu held); NULL when out of memory. */
static prof_fn *fn_names(av_profiler *p, const av_prof_run *r) {
  for (uint32_t i = 0; i < p->nfns; i++)
    if (p->fns[i].fn == r->fn) return &p->fns[i];
  if (p->nfns == p->fns_cap) {
    uint32_t cap = p->fns_cap ? p->fns_cap * 2 : 8;
    prof_fn *v = realloc(p->fns, cap * sizeof *v);
    if (!v) return NULL;
    p->fns = v;
    p->fns_cap = cap;
  }
  prof_fn *f = &p->fns[p->nfns];
  f->plan = r->plan;
  f->fn = r->fn;
  f->steps = r->fn->body.steps;
  f->nsteps = r->fn->body.nsteps;
  f->program = intern(p, r->program, "", true);
  f->ids = f->program != UINT32_MAX ? calloc(f->nsteps + 1, sizeof *f->ids) : NULL;
  if (!f->ids) return NULL;
  p->nfns++;
  return f;
}

/* The name id of step s (mu held), UINT32_MAX when out of memory. */
static uint32_t step_id(av_profiler *p, prof_fn *f, const av_step *s) {
  size_t i = (size_t)(s - (const av_step *)f->steps);
  if (i < f->nsteps && f->ids[i]) return f->ids[i] - 1;
  char name[NAME_MAX_LEN];
  step_name(s, name, sizeof name);
  uint32_t id = intern(p, name, s->opname, false);
  if (id == UINT32_MAX) return id;
  /* generated code: named like the fused group it runs, its ISA in the trace's args */
  if (s->run == av_step_fused && ((const av_fused_params *)s->params)->gen)
    p->names[id].codegen = ((const av_fused_params *)s->params)->gen->isa;
  else if (s->run == av_step_nest && ((const av_nest_params *)s->params)->gen)
    p->names[id].codegen = ((const av_nest_params *)s->params)->gen->isa;
  if (i < f->nsteps) f->ids[i] = id + 1;
  return id;
}

void av_profiler_forget_plan(av_profiler *p, const av_plan *plan) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  for (uint32_t i = 0; i < p->nfns;) {
    if (p->fns[i].plan == plan) {
      free(p->fns[i].ids);
      p->fns[i] = p->fns[--p->nfns];
    } else {
      i++;
    }
  }
  pthread_mutex_unlock(&p->mu);
}

void av_prof_run_end(av_prof_run *r) {
  if (!r) return;
  av_profiler *p = r->prof;
  int64_t end = av_now_ns();
  pthread_mutex_lock(&p->mu);
  bool keep = p->capturing && r->t0 >= p->capture_mono0, trace = p->trace != NULL;
  prof_fn *fn = fn_names(p, r);
  if (fn) {
    prof_rec rec = {.program = fn->program, .device = r->device, .tid = r->tid, .run = ++p->runs};
    for (uint32_t i = 0; i < r->n; i++) {
      const av_prof_event *e = &r->ev[i];
      const av_step *s = e->step;
      uint32_t id = step_id(p, fn, s);
      if (id == UINT32_MAX) continue;
      prof_name *n = &p->names[id];
      n->count++;
      n->total_ns += e->t1 - e->t0;
      n->inner = n->inner || e->depth > 0;
      rec.depth = e->depth;
      rec.name = id;
      rec.t0 = e->t0;
      rec.t1 = e->t1;
      rec.flops = s->flops;
      rec.bytes = s->bytes;
      if (trace) prof_trace_add(p, &rec);
      if (keep) capture(p, &rec);
    }
    p->names[fn->program].count++;
    p->names[fn->program].total_ns += end - r->t0;
    rec.name = fn->program;
    rec.execution = true;
    rec.depth = 0;
    rec.steps = r->n;
    rec.t0 = r->t0;
    rec.t1 = end;
    rec.flops = rec.bytes = 0;
    if (trace) prof_trace_add(p, &rec);
    if (keep) capture(p, &rec);
  }
  if (p->nspare < PROF_SPARE_RUNS) {
    p->spare[p->nspare++] = r;
    r = NULL;
  }
  pthread_mutex_unlock(&p->mu);
  if (r) {
    free(r->ev);
    free(r);
  }
}

/* ------------------------------------------------------------ sessions */

void av_profiler_capture_start(av_profiler *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  p->ncapture = 0;
  p->capture_dropped = 0;
  p->capture_mono0 = av_now_ns();
  p->capture_wall0 = av_wall_ns();
  p->capturing = true;
  atomic_store(&p->on, true);
  pthread_mutex_unlock(&p->mu);
}

void av_profiler_capture_stop(av_profiler *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  p->capturing = false;
  atomic_store(&p->on, p->trace != NULL);
  pthread_mutex_unlock(&p->mu);
}
