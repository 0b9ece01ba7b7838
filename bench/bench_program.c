/* bench-program FILE [--runs N] [--compiles N] [--threads N] [--profile TRACE.json]: how long
 * anvil takes to compile a program (split into load = frontend into IR, and lower = check +
 * lower + plan) and to run it on a thread pool of N threads (default: what a client would use,
 * ANVIL_NUM_THREADS or the CPUs the process may run on; 1 runs everything on the calling
 * thread). --profile records the runs with the profiler, as ANVIL_PROFILE does for a client
 * (trace file, flat profile on stderr).
 *
 *   build/bench-program transformer_bwd.mlirbc --compiles 20 --runs 0
 *   build/bench-program fori.mlir --runs 2000
 *   build/bench-program resnet_train.mlirbc --runs 20 --profile /tmp/resnet.json
 *
 * Inputs are filled with a fixed pattern (floats 0.5, integers 0): enough for timing, not for
 * checking results. A benchmark, not a test: it prints numbers; nothing fails on speed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compiler/program.h"
#include "compiler/program_module.h"
#include "frontend/load.h"
#include "runtime/kernels/convert.h"
#include "runtime/profiler.h"
#include "runtime/thread_pool.h"
#include "util/block_cache.h"
#include "util/file.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n ? v[n / 2] : 0.0;
}

static bool fill_input(const av_program *p, int i, av_tensor *t) {
  const int64_t *dims;
  memset(t, 0, sizeof *t);
  if (!av_program_input_type(p, i, &t->dtype, &t->rank, &dims)) return false;
  int64_t n = 1;
  for (int k = 0; k < t->rank; k++) {
    t->dims[k] = dims[k];
    n *= dims[k];
  }
  size_t es = av_dtype_size(t->dtype);
  t->storage = av_storage_alloc((size_t)n * es + 1);
  if (!t->storage) return false;
  if (av_dtype_is_float(t->dtype)) {
    av_convert cv;
    double half = 0.5;
    if (!av_convert_prepare(AV_DT_F64, t->dtype, &cv)) return false;
    for (int64_t e = 0; e < n; e++)
      av_convert_run(&cv, &half, (char *)t->storage->data + (size_t)e * es, 1);
  }
  return true;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench-program FILE.mlirbc|FILE.mlir|FILE.pb [--runs N] [--compiles N] "
                    "[--threads N] [--profile TRACE.json]\n");
    return 2;
  }
  int runs = 200, compiles = 10, threads = av_default_num_threads();
  const char *profile = NULL;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--runs") == 0) runs = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--profile") == 0) profile = argv[i + 1];
    else if (strcmp(argv[i], "--compiles") == 0) compiles = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--threads") == 0) threads = atoi(argv[i + 1]);
  }
  if (compiles < 1) compiles = 1;
  if (runs < 0) runs = 0;
  size_t size = 0;
  char *data = av_read_file(argv[1], &size);
  if (!data) {
    fprintf(stderr, "%s: cannot read\n", argv[1]);
    return 2;
  }
  size_t len = strlen(argv[1]);
  const char *format = len > 3 && strcmp(argv[1] + len - 3, ".pb") == 0 ? "hlo" : "mlir";
  double *tl = calloc((size_t)compiles, sizeof *tl), *tc = calloc((size_t)compiles, sizeof *tc);
  double *tr = calloc((size_t)runs + 1, sizeof *tr);
  av_program *p = NULL;
  for (int rep = 0; rep < compiles; rep++) {
    av_diag d;
    av_diag_init(&d);
    double t0 = now();
    av_module *m = av_load_module(format, strlen(format), data, size, &d);
    double t1 = now();
    av_program *q = m ? av_program_from_module(m, NULL, &d) : NULL;
    double t2 = now();
    if (!q) {
      fprintf(stderr, "%s: %s\n", argv[1], d.msg);
      return 2;
    }
    tl[rep] = t1 - t0;
    tc[rep] = t2 - t1;
    av_program_free(p);
    p = q;
  }
  double ml = median(tl, compiles) * 1e3, mc = median(tc, compiles) * 1e3;
  printf("%s: compile %.3f ms (load %.3f + lower %.3f), median of %d; first %.3f + %.3f\n", argv[1],
         ml + mc, ml, mc, compiles, tl[0] * 1e3, tc[0] * 1e3);
  av_thread_pool *pool = threads > 1 ? av_thread_pool_create(threads) : NULL;
  if (pool) av_program_use_thread_pool(p, pool); /* the program takes its own reference */
  av_thread_pool_release(pool);
  /* large blocks kept between runs, as a client does (ANVIL_CACHE_MB=0: none) */
  const char *cache_mb = getenv("ANVIL_CACHE_MB");
  size_t cache_bytes = (size_t)(cache_mb ? atoll(cache_mb) : 256) << 20;
  av_block_cache *cache = cache_bytes ? av_block_cache_new(cache_bytes) : NULL;
  av_program_use_block_cache(p, cache);
  av_block_cache_release(cache);
  av_profiler *prof = NULL;
  if (profile) {
    av_diag d;
    av_diag_init(&d);
    if (!(prof = av_profiler_new(profile, &d))) {
      fprintf(stderr, "%s\n", d.msg);
      return 2;
    }
    av_program_use_profiler(p, prof);
  }
  int nin = av_program_num_inputs(p), nout = av_program_num_outputs(p);
  av_tensor *ins = calloc((size_t)nin + 1, sizeof *ins), *outs = calloc((size_t)nout + 1, sizeof *outs);
  for (int i = 0; i < nin; i++)
    if (!fill_input(p, i, &ins[i])) {
      fprintf(stderr, "input %d: cannot make\n", i);
      return 2;
    }
  for (int r = 0; r < runs; r++) {
    av_diag d;
    av_diag_init(&d);
    double t0 = now();
    av_code c = av_program_execute(p, 0, ins, outs, &d);
    tr[r] = now() - t0;
    if (c != AV_OK) {
      fprintf(stderr, "run: %s\n", d.msg);
      return 2;
    }
    for (int i = 0; i < nout; i++) av_storage_release(outs[i].storage);
  }
  if (runs) {
    double med = median(tr, runs) * 1e3; /* sorts: tr[0] is the fastest */
    printf("run %.4f ms median, %.4f ms min, of %d\n", med, tr[0] * 1e3, runs);
  }
  av_profiler_finish(prof, stderr);
  av_profiler_release(prof);
  for (int i = 0; i < nin; i++) av_storage_release(ins[i].storage);
  free(ins);
  free(outs);
  av_program_free(p);
  free(tl);
  free(tc);
  free(tr);
  free(data);
  return 0;
}
