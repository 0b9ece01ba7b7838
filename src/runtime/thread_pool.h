/* A small fork-join thread pool for data-parallel kernel loops.
 *
 * One pool belongs to one PJRT client (no process-wide state); its worker threads start on
 * the first loop large enough to be split. av_parallel_for splits [0, n) into chunks whose
 * sizes are multiples of `grain`, runs them on the workers and on the calling thread, and
 * returns when every chunk is done. Kernels must compute each chunk independently, so the
 * results do not depend on how the range was split (bit-identical to a serial loop).
 *
 * Safe for concurrent callers: the pool serves one loop at a time; a loop started while it
 * is busy (another device, or a nested loop inside a chunk) simply runs on its caller's
 * thread. A NULL pool runs everything inline.
 *
 * Runs that use the cores at once by construction (the devices of a per-device program)
 * each take a lane (av_thread_pool_lane): a pool of their share of the threads. Sharing one
 * pool instead let one device's loop take every thread while the other device's loops ran
 * inline beside them: more threads than cores, and a loop's last chunk waiting on a worker
 * descheduled in favour of the other device (a 2-device step ran slower than 1 device). */
#ifndef ANVIL_RUNTIME_THREAD_POOL_H
#define ANVIL_RUNTIME_THREAD_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/fp_env.h"

typedef struct av_thread_pool av_thread_pool;

/* Runs items [begin, end) of a loop. */
typedef void (*av_parallel_fn)(void *ctx, int64_t begin, int64_t end);

enum { AV_MAX_THREADS = 256 };

/* Threads to use by default: ANVIL_NUM_THREADS when it is set (validated by
 * av_parse_num_threads), else the CPUs this process may run on (sched_getaffinity). */
int av_default_num_threads(void);
/* Parses a thread count ("1".."256"); false when `s` is not one. */
bool av_parse_num_threads(const char *s, int *out);

/* A pool of `nthreads` threads counting the caller (1 = everything runs inline), holding
 * one reference. Starts no thread yet. NULL when out of memory. */
av_thread_pool *av_thread_pool_create(int nthreads);
/* The floating-point mode the workers compute in (runtime/fp_env.h; default flush), and what
 * BLAS calls of executions on this pool need. Call before the pool's first loop. */
void av_thread_pool_set_denormals(av_thread_pool *pool, av_denormals mode);
/* Restarts OpenBLAS's worker threads in flush mode, once per process (they start when the
 * library loads, in the loading thread's mode; new threads inherit their creator's). A
 * flush-mode client calls it when it is made, before any of its executions. */
void av_fp_blas_threads_flush(void);
/* Reference counting: the client holds one, and so does every program that runs on the
 * pool (a program may outlive the client that loaded it). The last release stops and joins
 * the workers; no loop may be running then. NULL is ignored. */
av_thread_pool *av_thread_pool_retain(av_thread_pool *pool);
void av_thread_pool_release(av_thread_pool *pool);
/* Lane `index` of `share` (share > 1): a pool of max(1, size / share) threads counting the
 * caller, with its own workers, owned by `pool` (made on first use, freed with it; the
 * same lane every time). `pool` itself when share <= 1 or pool is NULL; NULL only when out
 * of memory (loops then run inline). Lanes of lanes are fine (nested device threads). */
av_thread_pool *av_thread_pool_lane(av_thread_pool *pool, int share, int index);
/* Threads a loop may use, counting the caller (1 for a NULL pool). */
int av_thread_pool_size(const av_thread_pool *pool);

/* Runs fn over [0, n) in chunks of a multiple of `grain` items (the last one may be shorter).
 * Loops with fewer than 2 * min_items items, a NULL or 1-thread pool, or a busy pool run as
 * one fn(ctx, 0, n) call on the calling thread. */
void av_parallel_for(av_thread_pool *pool, int64_t n, int64_t grain, int64_t min_items,
                     av_parallel_fn fn, void *ctx);

/* Marks a program execution on the pool as started (true) or ended (false). While one runs,
 * idle workers poll for the next loop for up to ~1 ms instead of a few microseconds before
 * they sleep: a program's parallel steps come back to back, with short serial steps between
 * them, and a sleeping worker takes tens of microseconds to wake (more on a virtual machine).
 * Outside executions they go back to sleep at once, taking no CPU from other work. */
void av_thread_pool_hot(av_thread_pool *pool, bool running);

/* Runs task(data) on one of the pool's workers, soon, detached from any loop (what XLA FFI
 * handlers' ThreadPool_Schedule asks for; the pool finishes queued tasks before it stops).
 * Runs it on the calling thread instead, before returning, when the pool is NULL or has no
 * workers, or when the caller is a worker of any pool: a handler's task that schedules more
 * tasks and waits for them would otherwise hold a worker while waiting, and with every
 * worker held the pool would deadlock (../shared/research/xla_ffi.md, trap 11). */
void av_thread_pool_schedule(av_thread_pool *pool, void (*task)(void *), void *data);

/* Threads one BLAS call uses: the size of the pool's root (the client's pool, for a lane)
 * divided by `share` (the runs of the program that share the cores by construction,
 * av_frame.blas_share; at least 1 thread). Sets
 * OpenBLAS's thread count when that changed. A function of the program, not of what else
 * runs: OpenBLAS's results depend on its thread count, and a program's must not depend on
 * timing (an eager op and the same op under jit gave different sqrtm results). */
void av_thread_pool_prepare_blas(av_thread_pool *pool, int share);

#endif
