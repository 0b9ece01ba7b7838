/* The execution plan: what the compiler produces and the executor runs.
 *
 * A plan is immutable once built (so one program can run on several threads at once); all
 * per-run state lives in an av_frame. Every SSA value of a function (tuples flattened into
 * their leaves) owns one slot of the function's frame; nested regions (while/if/case bodies,
 * reduce bodies...) share the slots of their enclosing function, so they can read captured
 * values directly. A step is a kernel entry point plus parameters decoded once at compile
 * time, the slots it reads and writes, and the slots whose last use it is (released right
 * after it ran, which is how storage gets freed and reused while the program runs). */
#ifndef ANVIL_RUNTIME_PLAN_H
#define ANVIL_RUNTIME_PLAN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ir/dtype.h"
#include "runtime/fp_env.h"
#include "runtime/host_callback.h"
#include "runtime/user_data.h"
#include "util/arena.h"
#include "util/diag.h"
#include "util/storage.h"

/* One slot: `data` points at the element bytes; `st` is the reference that keeps them alive,
 * or NULL when the bytes are borrowed for the duration of a scalar region call. */
typedef struct av_slot {
  void *data;
  av_storage *st;
} av_slot;

/* Static type of what a slot holds. */
typedef struct av_slot_type {
  av_dtype dtype;
  int rank;
  const int64_t *dims;
  int64_t nelems;
  size_t nbytes;
  bool token; /* tokens carry no data (st stays NULL) */
} av_slot_type;

struct av_plan;
struct av_func_plan;

typedef struct av_frame {
  av_slot *slots;
  const struct av_func_plan *fn;
  const struct av_plan *plan;
  struct av_thread_pool *pool; /* the plan's pool when the frame was made, or NULL */
  struct av_block_cache *cache; /* where large step outputs come from, or NULL (malloc) */
  /* The profiler's record of this execution while the entry function's steps run in the
   * profiled loop (runtime/profiler.h); NULL otherwise, and inside the steps themselves. */
  struct av_prof_run *prof;
  /* While a profiled step runs: the record, for the one kind of step that records its own
   * blocks' steps (a while loop's condition and body, so the profile breaks loops down), and
   * how deep in loops those steps are. */
  struct av_prof_run *prof_inner;
  int prof_depth;
  int device_index;
  int mem_device; /* the device whose block accounting large outputs count for (-1: none) */
  int depth; /* call nesting, bounded to stop runaway recursion */
  /* How many runs of this program share the cores now by construction (the devices of a
   * per-device program, or of a manual computation's per-device threads; 1 for a program run
   * once for all devices): BLAS calls get the pool's threads divided by it. A function of the
   * program only, so that results do not depend on what else runs (OpenBLAS's answers depend
   * on its thread count). */
  int blas_share;
  /* This execution's number (XLA FFI handlers' RunId): a new one for every top-level run
   * (process-wide counter), inherited by the functions it calls. */
  int64_t run_id;
  /* The caller's user data for this execution (runtime/user_data.h), or NULL; inherited by
   * every frame the execution makes. */
  const av_user_data_list *user_data;
} av_frame;

typedef struct av_step av_step;
typedef av_code (*av_step_fn)(const av_step *s, av_frame *f, av_diag *d);

struct av_step {
  av_step_fn run;
  const void *params;
  const int32_t *in;
  uint32_t nin;
  const int32_t *out;
  uint32_t nout;
  const int32_t *dead; /* released after the step ran */
  uint32_t ndead;
  uint32_t in_dies;    /* bit i: input i's slot is released after this step (first 32) */
  const char *opname;
  const char *loc;
  double flops, bytes; /* static cost of one run (compiler/cost.h), for the profiler */
};

/* A block turned into steps. Callers place owned references into `args` slots, run the
 * steps, take the `results`, then release `dead_at_exit`. */
typedef struct av_block_plan {
  const av_step *steps;
  uint32_t nsteps;
  const int32_t *args;
  uint32_t nargs;
  const int32_t *results;
  uint32_t nresults;
  const int32_t *dead_at_entry; /* arguments nobody reads */
  uint32_t ndead_entry;
  const int32_t *dead_at_exit; /* values whose last use is the terminator */
  uint32_t ndead_exit;
} av_block_plan;

typedef struct av_func_plan {
  const char *name;
  uint32_t nslots;
  const av_slot_type *types; /* per slot */
  av_block_plan body;
} av_func_plan;

typedef struct av_plan {
  av_arena arena;
  const av_func_plan *entry;
  av_storage **consts; /* pre-materialised constants, released with the plan */
  uint32_t nconsts;
  uint32_t consts_cap;
  int num_replicas, num_partitions; /* set by the program once options are known */
  int blas_share; /* av_frame.blas_share of a top-level run (0 = 1) */
  struct av_rendezvous *rv;         /* collectives' meeting point (mutex-guarded); or NULL */
  int ncollectives;
  bool manual_entry; /* the entry is the region of main's only sdy.manual_computation */
  /* The thread pool kernels split large loops over (a reference, set once when the program
   * is first loaded onto a client; NULL: everything runs on the executing thread). */
  _Atomic(struct av_thread_pool *) pool;
  /* The client's cache of large blocks (a reference, set like `pool`; NULL: malloc). */
  _Atomic(struct av_block_cache *) cache;
  av_host_callback_fn host_callback; /* the client's dispatcher, set before the first run */
  bool calls_host;                   /* some step calls host_callback or a user's custom-call
                                      * handler (runtime/ffi/): runs finish before Execute
                                      * returns, with their error as Execute's */
  /* LAPACK/BLAS routines replacing the linked ones (kernels/lapack_fns.h; the client's table,
   * copied into the plan's arena when the program is loaded), or NULL */
  const struct av_lapack_fns *lapack;
  /* Where the devices of the assignment live when they span processes (runtime/net.h; set
   * once, when the program is first loaded onto a multi-process client; NULL otherwise). */
  _Atomic(struct av_plan_net *) net;
  av_denormals denormals; /* how executions treat subnormals (the client's mode; set like
                           * host_callback; default flush, as XLA:CPU) */
  /* The client's profiler (a reference, set like `pool`; NULL: never profiled) and the
   * program's name its events carry. */
  _Atomic(struct av_profiler *) profiler;
  const char *name;
  /* Nanoseconds all runs spent in cross-process collectives (mostly waiting for the network
   * and the other processes): the PJRT layer leaves them out when it judges a run short. */
  _Atomic int64_t net_wait_ns;
  /* How long an in-process collective (or a sharded program's rendezvous) waits for the other
   * devices of its group, in ms: the client's collective timeout, set like `pool`; 0: the
   * default, AV_COLLECTIVE_TIMEOUT_DEFAULT_S. */
  _Atomic int64_t collective_timeout_ms;
} av_plan;

enum { AV_COLLECTIVE_TIMEOUT_DEFAULT_S = 120 };

static inline int64_t av_plan_collective_timeout_ms(const av_plan *p) {
  int64_t ms = atomic_load_explicit(&((av_plan *)p)->collective_timeout_ms, memory_order_relaxed);
  return ms > 0 ? ms : (int64_t)AV_COLLECTIVE_TIMEOUT_DEFAULT_S * 1000;
}

/* Region bodies that kernels call per element (reduce, sort, scatter...). */
typedef struct av_region_params {
  const av_block_plan *block;
  int simple;               /* av_opcode of a one-op body, or 0 */
  const char *direction;    /* simple == compare */
  const char *compare_type; /* simple == compare */
} av_region_params;

enum { AV_MAX_CALL_DEPTH = 64 };

/* ---- executor (runtime/executor.c) */

/* Runs a function in a fresh frame: consumes the `args` references, fills `results` with
 * owned references. A top-level run (depth 0) of a program whose devices run at once
 * computes on its device's lane of the plan's pool (thread_pool.h). `user_data` (NULL: none)
 * is the execution's, for custom-call handlers. */
av_code av_run_func(const av_plan *plan, const av_func_plan *fn, int device_index, int mem_device, int depth,
                    const av_user_data_list *user_data, av_slot *args, av_slot *results,
                    av_diag *d);
/* The same for a function called from frame `caller`: the callee inherits its pool, BLAS
 * share, run id and user data. */
av_code av_run_callee(const av_frame *caller, const av_func_plan *fn, av_slot *args,
                      av_slot *results, av_diag *d);
/* Runs a block inside frame `f` (see av_block_plan for the protocol): consumes `args`, fills
 * `results` with owned references (or borrowed ones when the value was borrowed). */
av_code av_run_block(const av_block_plan *b, av_frame *f, av_slot *args, av_slot *results,
                     av_diag *d);

void av_slot_release(av_slot *s);
/* A new owned reference to what `s` holds (a copy when `s` is borrowed); `nbytes` is the
 * size of the value, needed for that copy. */
av_code av_slot_share(const av_slot *s, size_t nbytes, av_slot *out, av_diag *d);

/* Whether `s` holds the only reference to storage of its own of exactly `nbytes` bytes, so
 * its bytes may be rewritten in place. */
bool av_slot_is_private(const av_slot *s, size_t nbytes);
/* Makes `s` private: its storage taken over when av_slot_is_private, else a copy of its
 * bytes replaces its reference (loops that rewrite carried values in place). */
av_code av_slot_make_private(av_slot *s, size_t nbytes, av_diag *d);

/* Output k of step s gets fresh uninitialised storage of its type's size. */
av_code av_step_alloc_out(const av_step *s, av_frame *f, uint32_t k, av_diag *d);
/* Same, but takes over input `in_index`'s storage when nobody else can see it (the input
 * dies at this step, holds the only reference, and has the same size): in-place kernels. */
av_code av_step_alloc_out_reuse(const av_step *s, av_frame *f, uint32_t k, uint32_t in_index,
                                av_diag *d);

static inline void *av_in(const av_step *s, const av_frame *f, uint32_t i) {
  return f->slots[s->in[i]].data;
}
static inline void *av_out(const av_step *s, const av_frame *f, uint32_t k) {
  return f->slots[s->out[k]].data;
}
static inline const av_slot_type *av_in_type(const av_step *s, const av_frame *f, uint32_t i) {
  return &f->fn->types[s->in[i]];
}
static inline const av_slot_type *av_out_type(const av_step *s, const av_frame *f, uint32_t k) {
  return &f->fn->types[s->out[k]];
}

#endif
