/* The fork-join pool behind av_parallel_for (see thread_pool.h).
 *
 * One loop at a time: the caller that wins `busy` publishes the loop (a new generation),
 * wakes the workers, takes chunks itself from an atomic counter, then closes the loop and
 * waits until every worker that joined it has left. Workers join only while the loop is
 * open, so a late worker never touches the next loop's counter with the previous loop's
 * function. Idle workers spin briefly before sleeping: kernel steps come back to back.
 * Between loops, workers also run detached tasks (av_thread_pool_schedule), first come first
 * served. */
#include "runtime/thread_pool.h"
#include "runtime/blas_cores.h"

#include <cblas.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() ((void)0)
#endif

enum {
  SPIN_WORKER = 1000, /* pause iterations an idle worker polls before sleeping (~10-50 us) */
  HOT_SPIN_US = 1000, /* ... and how long while an execution runs (av_thread_pool_hot) */
  HOT_YIELDED_US = 50, /* a sched_yield this long gave the core away: sleep instead */
  SPIN_CALLER = 4000, /* ... and the caller before sleeping on the last chunks */
  CHUNKS_PER_THREAD = 4,
};

typedef struct pool_task {
  void (*fn)(void *);
  void *data;
  struct pool_task *next;
} pool_task;

/* Set on the pool's own worker threads (av_thread_pool_schedule runs their tasks inline). */
static _Thread_local bool tl_pool_worker;

/* The lanes of one share count (av_thread_pool_lane). */
typedef struct lane_set {
  int share;
  av_thread_pool **lanes; /* [share], made one by one on first use */
  struct lane_set *next;
} lane_set;

struct av_thread_pool {
  int nthreads; /* counting the caller */
  int root_threads; /* the client's pool's nthreads (BLAS thread counts derive from it) */
  av_denormals denormals; /* the workers' floating-point mode */
  int blas_max; /* OpenBLAS's own thread count when the pool was made */
  atomic_int refs;
  atomic_bool busy;

  pthread_mutex_t mu;
  pthread_cond_t wake, left;
  pthread_t *workers;
  int nworkers;
  bool started, stop; /* under mu */
  bool open;          /* under mu: workers may join the current loop */

  /* the current loop: written under mu while no worker is inside it */
  av_parallel_fn fn;
  void *ctx;
  int64_t n, chunk, nchunks;
  atomic_llong next;  /* next chunk to take */
  atomic_uint gen;    /* bumped for every loop published */
  atomic_int active;  /* workers inside the current loop */
  atomic_int hot;     /* executions running on the pool (av_thread_pool_hot) */
  atomic_int ntasks;  /* detached tasks queued (mirrors `tasks` for the polling workers) */

  pool_task *tasks, *tasks_tail; /* under mu: scheduled, not started */

  pthread_mutex_t lanes_mu; /* guards lane_sets */
  lane_set *lane_sets;
};

bool av_parse_num_threads(const char *s, int *out) {
  if (!s || !*s) return false;
  char *end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || v < 1 || v > AV_MAX_THREADS) return false;
  *out = (int)v;
  return true;
}

int av_default_num_threads(void) {
  int n = 0;
  if (av_parse_num_threads(getenv("ANVIL_NUM_THREADS"), &n)) return n;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
  if (n < 1) n = 1;
  return n > AV_MAX_THREADS ? AV_MAX_THREADS : n;
}

static void run_chunks(av_thread_pool *p, av_parallel_fn fn, void *ctx, int64_t n, int64_t chunk,
                       int64_t nchunks) {
  for (;;) {
    int64_t c = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
    if (c >= nchunks) return;
    int64_t b = c * chunk, e = b + chunk < n ? b + chunk : n;
    fn(ctx, b, e);
  }
}

static int64_t now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

/* An idle worker's polling for a new loop or task before it sleeps: SPIN_WORKER pauses, then
 * while an execution runs on the pool, up to HOT_SPIN_US more. */
static void poll_for_work(av_thread_pool *p, unsigned seen) {
  int64_t deadline = 0;
  for (int i = 0;; i++) {
    if (atomic_load_explicit(&p->gen, memory_order_acquire) != seen ||
        atomic_load_explicit(&p->ntasks, memory_order_relaxed) > 0)
      return;
    if (i >= SPIN_WORKER) {
      if (atomic_load_explicit(&p->hot, memory_order_relaxed) <= 0) return;
      if (i % 64 == 0) { /* the clock now and then: a pause takes 10-150 cycles by CPU */
        int64_t now = now_us();
        if (!deadline) deadline = now + HOT_SPIN_US;
        else if (now > deadline) return;
        /* Offers the core to any other runnable thread; with none, this returns at once.
         * Taking longer means one ran (more threads than cores: processes of one job on one
         * host, or other programs): polling then only takes cores from them, so sleep. */
        sched_yield();
        if (now_us() - now > HOT_YIELDED_US) return;
      }
    }
    cpu_relax();
  }
}

void av_thread_pool_hot(av_thread_pool *p, bool running) {
  if (p) atomic_fetch_add_explicit(&p->hot, running ? 1 : -1, memory_order_relaxed);
}

static void *worker_main(void *arg) {
  av_thread_pool *p = arg;
  unsigned seen = 0;
  tl_pool_worker = true;
  av_fp_enter(p->denormals); /* for the thread's life */
  for (;;) {
    poll_for_work(p, seen);
    pthread_mutex_lock(&p->mu);
    while (atomic_load_explicit(&p->gen, memory_order_relaxed) == seen && !p->stop && !p->tasks)
      pthread_cond_wait(&p->wake, &p->mu);
    if (p->tasks) { /* a detached task: run it, then look again */
      pool_task *t = p->tasks;
      atomic_fetch_sub_explicit(&p->ntasks, 1, memory_order_relaxed);
      p->tasks = t->next;
      if (!p->tasks) p->tasks_tail = NULL;
      pthread_mutex_unlock(&p->mu);
      t->fn(t->data);
      free(t);
      continue;
    }
    if (p->stop) {
      pthread_mutex_unlock(&p->mu);
      return NULL;
    }
    seen = atomic_load_explicit(&p->gen, memory_order_relaxed);
    if (!p->open) { /* came too late: that loop is finished */
      pthread_mutex_unlock(&p->mu);
      continue;
    }
    atomic_fetch_add_explicit(&p->active, 1, memory_order_relaxed);
    av_parallel_fn fn = p->fn;
    void *ctx = p->ctx;
    int64_t n = p->n, chunk = p->chunk, nchunks = p->nchunks;
    pthread_mutex_unlock(&p->mu);
    run_chunks(p, fn, ctx, n, chunk, nchunks);
    if (atomic_fetch_sub_explicit(&p->active, 1, memory_order_acq_rel) == 1) {
      pthread_mutex_lock(&p->mu);
      pthread_cond_signal(&p->left);
      pthread_mutex_unlock(&p->mu);
    }
  }
}

av_thread_pool *av_thread_pool_create(int nthreads) {
  if (nthreads < 1) nthreads = 1;
  if (nthreads > AV_MAX_THREADS) nthreads = AV_MAX_THREADS;
  av_thread_pool *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->nthreads = nthreads;
  p->root_threads = nthreads;
  av_blas_choose_kernels(); /* before any BLAS call (and it links blas_cores.c in) */
  p->blas_max = openblas_get_num_threads();
  if (p->blas_max < 1) p->blas_max = 1;
  atomic_init(&p->refs, 1);
  atomic_init(&p->busy, false);
  atomic_init(&p->next, 0);
  atomic_init(&p->gen, 0);
  atomic_init(&p->active, 0);
  atomic_init(&p->hot, 0);
  atomic_init(&p->ntasks, 0);
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->wake, NULL);
  pthread_cond_init(&p->left, NULL);
  pthread_mutex_init(&p->lanes_mu, NULL);
  return p;
}

av_thread_pool *av_thread_pool_retain(av_thread_pool *p) {
  if (p) atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
  return p;
}

void av_thread_pool_release(av_thread_pool *p) {
  if (!p || atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) != 1) return;
  pthread_mutex_lock(&p->mu);
  p->stop = true;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < p->nworkers; i++) pthread_join(p->workers[i], NULL);
  free(p->workers);
  for (pool_task *t = p->tasks, *next; t; t = next) { /* only without workers */
    next = t->next;
    t->fn(t->data);
    free(t);
  }
  for (lane_set *ls = p->lane_sets, *next; ls; ls = next) {
    next = ls->next;
    for (int i = 0; i < ls->share; i++) av_thread_pool_release(ls->lanes[i]);
    free(ls->lanes);
    free(ls);
  }
  pthread_mutex_destroy(&p->lanes_mu);
  pthread_cond_destroy(&p->left);
  pthread_cond_destroy(&p->wake);
  pthread_mutex_destroy(&p->mu);
  free(p);
}

int av_thread_pool_size(const av_thread_pool *p) { return p ? p->nthreads : 1; }

av_thread_pool *av_thread_pool_lane(av_thread_pool *p, int share, int index) {
  if (!p || share <= 1) return p;
  if (share > AV_MAX_THREADS * 4) share = AV_MAX_THREADS * 4; /* bounds the lane arrays */
  index = ((index % share) + share) % share;
  av_thread_pool *lane = NULL;
  pthread_mutex_lock(&p->lanes_mu);
  lane_set *ls = p->lane_sets;
  while (ls && ls->share != share) ls = ls->next;
  if (!ls && (ls = calloc(1, sizeof *ls)) != NULL) {
    ls->lanes = calloc((size_t)share, sizeof *ls->lanes);
    if (!ls->lanes) {
      free(ls);
      ls = NULL;
    } else {
      ls->share = share;
      ls->next = p->lane_sets;
      p->lane_sets = ls;
    }
  }
  if (ls && !ls->lanes[index]) {
    int n = p->nthreads / share;
    ls->lanes[index] = av_thread_pool_create(n < 1 ? 1 : n);
    if (ls->lanes[index]) {
      ls->lanes[index]->root_threads = p->root_threads;
      ls->lanes[index]->blas_max = p->blas_max;
      ls->lanes[index]->denormals = p->denormals;
    }
  }
  if (ls) lane = ls->lanes[index];
  pthread_mutex_unlock(&p->lanes_mu);
  return lane;
}

/* Under mu: starts the workers on first use. Fewer (or none) when threads cannot be made. */
static void start_workers(av_thread_pool *p) {
  p->started = true;
  p->workers = calloc((size_t)p->nthreads - 1, sizeof *p->workers);
  if (!p->workers) return;
  for (int i = 0; i < p->nthreads - 1; i++) {
    if (pthread_create(&p->workers[i], NULL, worker_main, p) != 0) break;
    p->nworkers++;
  }
}

void av_parallel_for(av_thread_pool *p, int64_t n, int64_t grain, int64_t min_items,
                     av_parallel_fn fn, void *ctx) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  if (min_items < grain) min_items = grain;
  bool expected = false;
  if (!p || p->nthreads < 2 || n < 2 * min_items ||
      !atomic_compare_exchange_strong_explicit(&p->busy, &expected, true, memory_order_acquire,
                                               memory_order_relaxed)) {
    fn(ctx, 0, n);
    return;
  }
  /* chunks: a multiple of grain, no smaller than min_items, about CHUNKS_PER_THREAD each */
  int64_t want = (int64_t)p->nthreads * CHUNKS_PER_THREAD;
  int64_t chunk = (n + want - 1) / want;
  if (chunk < min_items) chunk = min_items;
  chunk = (chunk + grain - 1) / grain * grain;
  int64_t nchunks = (n + chunk - 1) / chunk;

  pthread_mutex_lock(&p->mu);
  if (!p->started) start_workers(p);
  bool alone = p->nworkers == 0;
  if (!alone) {
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    p->chunk = chunk;
    p->nchunks = nchunks;
    atomic_store_explicit(&p->next, 0, memory_order_relaxed);
    p->open = true;
    atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
    pthread_cond_broadcast(&p->wake);
  }
  pthread_mutex_unlock(&p->mu);
  if (alone) {
    atomic_store_explicit(&p->busy, false, memory_order_release);
    fn(ctx, 0, n);
    return;
  }

  run_chunks(p, fn, ctx, n, chunk, nchunks);

  /* Every chunk is taken; close the loop and wait for the workers still inside it. */
  pthread_mutex_lock(&p->mu);
  p->open = false;
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < SPIN_CALLER; i++) {
    if (atomic_load_explicit(&p->active, memory_order_acquire) == 0) break;
    cpu_relax();
  }
  pthread_mutex_lock(&p->mu);
  while (atomic_load_explicit(&p->active, memory_order_acquire) != 0)
    pthread_cond_wait(&p->left, &p->mu);
  pthread_mutex_unlock(&p->mu);
  atomic_store_explicit(&p->busy, false, memory_order_release);
}

void av_thread_pool_set_denormals(av_thread_pool *p, av_denormals mode) {
  if (p) p->denormals = mode;
}

/* OpenBLAS's (pthreads build) thread server: stops its workers / starts them again. Weak, so
 * that another BLAS library simply leaves its threads as they are. */
extern int blas_thread_shutdown_(void) __attribute__((weak));
extern int blas_thread_init(void) __attribute__((weak));

/* Process-wide, like OpenBLAS's threads themselves: written once under blas_once. */
static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static atomic_bool blas_threads_flush;

static void restart_blas_threads(void) {
  if (!blas_thread_shutdown_ || !blas_thread_init) return;
  uint32_t saved = av_fp_enter(AV_DENORMALS_FLUSH);
  blas_thread_shutdown_();
  blas_thread_init(); /* the new threads inherit this thread's MXCSR */
  av_fp_leave(saved);
  atomic_store(&blas_threads_flush, true);
}

void av_fp_blas_threads_flush(void) { pthread_once(&blas_once, restart_blas_threads); }

void av_thread_pool_prepare_blas(av_thread_pool *p, int share) {
  if (!p) return;
  if (share < 1) share = 1;
  int want = p->root_threads / share;
  if (want > p->blas_max) want = p->blas_max;
  /* BLAS threads that flush denormals must not compute for an exact-IEEE client */
  if (p->denormals == AV_DENORMALS_IEEE && atomic_load(&blas_threads_flush)) want = 1;
  if (want < 1) want = 1;
  /* OpenBLAS's count is process-wide; it only changes the split of the calls that start
   * after it, so concurrent devices at worst use a stale value for one call. */
  if (openblas_get_num_threads() != want) openblas_set_num_threads(want);
}

void av_thread_pool_schedule(av_thread_pool *p, void (*task)(void *), void *data) {
  pool_task *t = p && !tl_pool_worker ? malloc(sizeof *t) : NULL;
  bool queued = false;
  if (t) {
    t->fn = task;
    t->data = data;
    t->next = NULL;
    pthread_mutex_lock(&p->mu);
    if (!p->started) start_workers(p);
    if (p->nworkers > 0 && !p->stop) {
      if (p->tasks_tail) p->tasks_tail->next = t;
      else p->tasks = t;
      p->tasks_tail = t;
      atomic_fetch_add_explicit(&p->ntasks, 1, memory_order_relaxed);
      pthread_cond_broadcast(&p->wake);
      queued = true;
    }
    pthread_mutex_unlock(&p->mu);
  }
  if (!queued) {
    free(t);
    task(data);
  }
}
