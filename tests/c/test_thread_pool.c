/* The kernel thread pool: every item runs exactly once, chunks respect the grain, concurrent
 * and nested callers are safe, and programs give the same bytes with and without a pool
 * (checked against values computed here by hand). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler/program.h"
#include "runtime/kernels/shape.h"
#include "runtime/thread_pool.h"

typedef struct counts {
  atomic_int *hits;
  int64_t grain, n;
  atomic_int bad_chunks;
  atomic_int calls;
} counts;

static void count_range(void *ctx, int64_t b, int64_t e) {
  counts *c = ctx;
  atomic_fetch_add(&c->calls, 1);
  if (b < 0 || e > c->n || b >= e || b % c->grain != 0 || (e != c->n && e % c->grain != 0))
    atomic_fetch_add(&c->bad_chunks, 1);
  for (int64_t i = b; i < e && i < c->n; i++) atomic_fetch_add(&c->hits[i], 1);
}

static void check_cover(av_thread_pool *pool, int64_t n, int64_t grain, int64_t min_items,
                        int expect_calls_max) {
  counts c = {calloc((size_t)n, sizeof(atomic_int)), grain, n, 0, 0};
  assert_non_null(c.hits);
  av_parallel_for(pool, n, grain, min_items, count_range, &c);
  for (int64_t i = 0; i < n; i++) assert_int_equal(atomic_load(&c.hits[i]), 1);
  assert_int_equal(atomic_load(&c.bad_chunks), 0);
  if (expect_calls_max > 0) assert_true(atomic_load(&c.calls) <= expect_calls_max);
  free(c.hits);
}

static void test_every_item_once(void **state) {
  (void)state;
  av_thread_pool *pool = av_thread_pool_create(4);
  assert_non_null(pool);
  assert_int_equal(av_thread_pool_size(pool), 4);
  check_cover(pool, 1000003, 1024, 4096, 0);
  check_cover(pool, 1 << 20, 1, 1, 0);
  check_cover(pool, 100, 1, 1000, 1); /* small: one inline call */
  check_cover(NULL, 5000, 7, 1, 1);   /* no pool: one inline call */
  av_thread_pool *one = av_thread_pool_create(1);
  check_cover(one, 1 << 16, 1, 1, 1);
  av_thread_pool_release(one);
  av_parallel_for(pool, 0, 1, 1, count_range, NULL); /* nothing to do: fn never called */
  av_thread_pool_release(pool);
}

/* prefix-free per-item work: out[i] = f(i), compared with a serial loop */
typedef struct squares {
  double *out;
} squares;
static void square_range(void *ctx, int64_t b, int64_t e) {
  squares *s = ctx;
  for (int64_t i = b; i < e; i++) s->out[i] = sqrt((double)i) * (double)(i % 7);
}

typedef struct caller {
  av_thread_pool *pool;
  int failures;
} caller;

static void *concurrent_caller(void *arg) {
  caller *c = arg;
  enum { N = 50000 };
  double *out = malloc(N * sizeof *out);
  for (int r = 0; r < 60 && out; r++) {
    memset(out, 0, N * sizeof *out);
    squares s = {out};
    av_parallel_for(c->pool, N, 16, 256, square_range, &s);
    for (int64_t i = 0; i < N; i++)
      if (out[i] != sqrt((double)i) * (double)(i % 7)) {
        c->failures++;
        break;
      }
  }
  if (!out) c->failures++;
  free(out);
  return NULL;
}

static void test_concurrent_callers(void **state) {
  (void)state;
  av_thread_pool *pool = av_thread_pool_create(3);
  enum { CALLERS = 4 };
  pthread_t t[CALLERS];
  caller c[CALLERS];
  for (int i = 0; i < CALLERS; i++) {
    c[i] = (caller){pool, 0};
    assert_int_equal(pthread_create(&t[i], NULL, concurrent_caller, &c[i]), 0);
  }
  for (int i = 0; i < CALLERS; i++) {
    pthread_join(t[i], NULL);
    assert_int_equal(c[i].failures, 0);
  }
  av_thread_pool_release(pool);
}

/* A loop started inside a chunk finds the pool busy and runs inline. */
typedef struct nested {
  av_thread_pool *pool;
  atomic_int *hits;
} nested;
static void inner_range(void *ctx, int64_t b, int64_t e) {
  atomic_int *row = ctx;
  for (int64_t i = b; i < e; i++) atomic_fetch_add(&row[i], 1);
}
static void outer_range(void *ctx, int64_t b, int64_t e) {
  nested *n = ctx;
  for (int64_t r = b; r < e; r++) av_parallel_for(n->pool, 4096, 1, 1, inner_range, n->hits + r * 4096);
}

static void test_nested(void **state) {
  (void)state;
  av_thread_pool *pool = av_thread_pool_create(2);
  nested n = {pool, calloc(64 * 4096, sizeof(atomic_int))};
  av_parallel_for(pool, 64, 1, 1, outer_range, &n);
  for (int i = 0; i < 64 * 4096; i++) assert_int_equal(atomic_load(&n.hits[i]), 1);
  free(n.hits);
  av_thread_pool_release(pool);
}

/* Lanes: each of `share` concurrent runs gets its own pool of its share of the threads, the
 * same one every time; loops on different lanes at once each cover their items. */
typedef struct lane_caller {
  av_thread_pool *lane;
  int failures;
} lane_caller;
static void *lane_main(void *arg) {
  lane_caller *c = arg;
  caller inner = {c->lane, 0};
  concurrent_caller(&inner);
  c->failures = inner.failures;
  return NULL;
}

static void test_lanes(void **state) {
  (void)state;
  av_thread_pool *pool = av_thread_pool_create(8);
  assert_ptr_equal(av_thread_pool_lane(pool, 1, 0), pool);
  assert_null(av_thread_pool_lane(NULL, 2, 0));
  av_thread_pool *a = av_thread_pool_lane(pool, 2, 0), *b = av_thread_pool_lane(pool, 2, 1);
  assert_non_null(a);
  assert_non_null(b);
  assert_ptr_not_equal(a, b);
  assert_ptr_not_equal(a, pool);
  assert_ptr_equal(av_thread_pool_lane(pool, 2, 0), a);
  assert_ptr_equal(av_thread_pool_lane(pool, 2, 3), b); /* index modulo share */
  assert_int_equal(av_thread_pool_size(a), 4);
  assert_int_equal(av_thread_pool_size(av_thread_pool_lane(pool, 3, 2)), 2);
  assert_int_equal(av_thread_pool_size(av_thread_pool_lane(pool, 16, 15)), 1);
  av_thread_pool *inner = av_thread_pool_lane(a, 2, 1); /* a lane of a lane */
  assert_int_equal(av_thread_pool_size(inner), 2);
  lane_caller c[2] = {{a, 0}, {b, 0}};
  pthread_t t[2];
  for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&t[i], NULL, lane_main, &c[i]), 0);
  for (int i = 0; i < 2; i++) {
    pthread_join(t[i], NULL);
    assert_int_equal(c[i].failures, 0);
  }
  check_cover(inner, 1 << 18, 8, 64, 0);
  check_cover(av_thread_pool_lane(pool, 16, 0), 1 << 16, 1, 1, 1); /* one thread: inline */
  av_thread_pool_release(pool); /* frees the lanes with it */
}

/* Detached tasks (av_thread_pool_schedule, what XLA FFI handlers' ThreadPool_Schedule uses):
 * a task from outside the pool runs on a worker; a task scheduled by a task runs inline on
 * that worker (so tasks waiting for their own tasks cannot take every worker); no pool, or a
 * 1-thread one, runs it on the caller; release runs what is still queued. */
typedef struct sched_probe {
  pthread_t ran_on;
  atomic_int done;
  struct sched_probe *inner; /* scheduled by this task, waited for */
  av_thread_pool *pool;
} sched_probe;

static void probe_task(void *p) {
  sched_probe *t = p;
  t->ran_on = pthread_self();
  if (t->inner) {
    av_thread_pool_schedule(t->pool, probe_task, t->inner);
    while (!atomic_load(&t->inner->done)) sched_yield();
  }
  atomic_store(&t->done, 1);
}

static void test_schedule(void **state) {
  (void)state;
  av_thread_pool *pool = av_thread_pool_create(2);
  enum { N = 16 };
  sched_probe outer[N], inner[N];
  for (int i = 0; i < N; i++) {
    memset(&outer[i], 0, sizeof outer[i]);
    memset(&inner[i], 0, sizeof inner[i]);
    outer[i].inner = &inner[i];
    outer[i].pool = pool;
    av_thread_pool_schedule(pool, probe_task, &outer[i]);
  }
  for (int i = 0; i < N; i++) {
    while (!atomic_load(&outer[i].done)) sched_yield();
    assert_false(pthread_equal(outer[i].ran_on, pthread_self()));
    assert_true(pthread_equal(inner[i].ran_on, outer[i].ran_on)); /* inline on the worker */
  }
  av_thread_pool_release(pool);
  sched_probe solo;
  memset(&solo, 0, sizeof solo);
  av_thread_pool_schedule(NULL, probe_task, &solo);
  assert_true(atomic_load(&solo.done) && pthread_equal(solo.ran_on, pthread_self()));
  av_thread_pool *one = av_thread_pool_create(1);
  memset(&solo, 0, sizeof solo);
  av_thread_pool_schedule(one, probe_task, &solo);
  assert_true(atomic_load(&solo.done) && pthread_equal(solo.ran_on, pthread_self()));
  av_thread_pool_release(one);
}

/* A pool marked as running an execution (its idle workers keep polling) still covers every
 * item once across serial gaps, runs detached tasks queued while its workers poll, and is
 * released (workers joined) both after the execution ends and while one is still marked. */
static void test_hot_pool(void **state) {
  (void)state;
  for (int end_first = 0; end_first < 2; end_first++) {
    av_thread_pool *pool = av_thread_pool_create(3);
    assert_non_null(pool);
    av_thread_pool_hot(pool, true);
    for (int r = 0; r < 20; r++) {
      check_cover(pool, 100000 + r, 64, 256, 0);
      usleep((useconds_t)(r * 150)); /* serial gaps around the polling time */
    }
    sched_probe probe[4], inner[4];
    for (int i = 0; i < 4; i++) {
      memset(&probe[i], 0, sizeof probe[i]);
      memset(&inner[i], 0, sizeof inner[i]);
      probe[i].inner = &inner[i];
      probe[i].pool = pool;
      av_thread_pool_schedule(pool, probe_task, &probe[i]);
    }
    for (int i = 0; i < 4; i++)
      while (!atomic_load(&probe[i].done)) sched_yield();
    if (end_first) {
      av_thread_pool_hot(pool, false);
      check_cover(pool, 1 << 18, 1, 1, 0);
    }
    av_thread_pool_release(pool);
  }
  av_thread_pool_hot(NULL, true); /* no pool: nothing */
}

static void test_parse_num_threads(void **state) {
  (void)state;
  int v = 0;
  assert_true(av_parse_num_threads("3", &v));
  assert_int_equal(v, 3);
  assert_false(av_parse_num_threads("0", &v));
  assert_false(av_parse_num_threads("-2", &v));
  assert_false(av_parse_num_threads("4x", &v));
  assert_false(av_parse_num_threads("", &v));
  assert_false(av_parse_num_threads("100000", &v));
  assert_true(av_default_num_threads() >= 1);
}

/* ---- whole programs: fused elementwise, plain elementwise, reductions along both axes */

enum { ROWS = 512, COLS = 1024 };
static const char *kProgram =
    "func.func public @main(%x: tensor<512x1024xf32>, %p: tensor<512x1024xi1>) -> "
    "(tensor<512x1024xf32>, tensor<512xf32>, tensor<1024xf32>, tensor<512x1024xf32>, "
    "tensor<512x1024xf32>, tensor<f32>, tensor<1024x512xf32>) {\n"
    "  %two = stablehlo.constant dense<2.0> : tensor<512x1024xf32>\n"
    "  %one = stablehlo.constant dense<1.0> : tensor<512x1024xf32>\n"
    "  %a = stablehlo.multiply %x, %two : tensor<512x1024xf32>\n"
    "  %b = stablehlo.add %a, %one : tensor<512x1024xf32>\n"
    "  %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
    "  %rows = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [1] : "
    "(tensor<512x1024xf32>, tensor<f32>) -> tensor<512xf32>\n"
    "  %cols = stablehlo.reduce(%x init: %z) applies stablehlo.maximum across dimensions = [0] : "
    "(tensor<512x1024xf32>, tensor<f32>) -> tensor<1024xf32>\n"
    "  %s = stablehlo.select %p, %x, %b : tensor<512x1024xi1>, tensor<512x1024xf32>\n"
    "  %e = stablehlo.exponential %x : tensor<512x1024xf32>\n"
    "  %all = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0, 1] : "
    "(tensor<512x1024xf32>, tensor<f32>) -> tensor<f32>\n"
    "  %t = stablehlo.transpose %x, dims = [1, 0] : (tensor<512x1024xf32>) -> tensor<1024x512xf32>\n"
    "  return %b, %rows, %cols, %s, %e, %all, %t : tensor<512x1024xf32>, tensor<512xf32>, "
    "tensor<1024xf32>, tensor<512x1024xf32>, tensor<512x1024xf32>, tensor<f32>, "
    "tensor<1024x512xf32>\n"
    "}\n";

static float input_value(int64_t i) { return (float)((i * 37) % 1001) - 500.0f; }

static void run_program(av_thread_pool *pool, av_tensor *out) {
  av_diag d;
  av_diag_init(&d);
  av_program *p = av_program_compile("mlir", 4, kProgram, strlen(kProgram), NULL, &d);
  if (!p) fail_msg("compile: %s", d.msg);
  av_program_use_thread_pool(p, pool);
  av_tensor in[2];
  memset(in, 0, sizeof in);
  int64_t n = (int64_t)ROWS * COLS;
  in[0].storage = av_storage_alloc((size_t)n * 4);
  in[1].storage = av_storage_alloc((size_t)n);
  assert_non_null(in[0].storage);
  assert_non_null(in[1].storage);
  in[0].dtype = AV_DT_F32;
  in[1].dtype = AV_DT_PRED;
  for (int k = 0; k < 2; k++) {
    in[k].rank = 2;
    in[k].dims[0] = ROWS;
    in[k].dims[1] = COLS;
  }
  float *x = (float *)in[0].storage->data;
  uint8_t *pr = (uint8_t *)in[1].storage->data;
  for (int64_t i = 0; i < n; i++) {
    x[i] = input_value(i);
    pr[i] = (uint8_t)(i % 3 == 0);
  }
  if (av_program_execute(p, 0, in, out, &d) != AV_OK) fail_msg("execute: %s", d.msg);
  av_storage_release(in[0].storage);
  av_storage_release(in[1].storage);
  av_program_free(p);
}

static void test_program_same_bytes(void **state) {
  (void)state;
  av_tensor serial[7], parallel[7];
  run_program(NULL, serial);
  av_thread_pool *pool = av_thread_pool_create(3);
  run_program(pool, parallel);
  av_thread_pool_release(pool); /* the program held its own reference until freed */
  for (int k = 0; k < 7; k++) {
    assert_int_equal(serial[k].storage->size, parallel[k].storage->size);
    assert_memory_equal(serial[k].storage->data, parallel[k].storage->data, serial[k].storage->size);
  }
  /* independent values: small integers make every result exact */
  const float *b = (const float *)parallel[0].storage->data, *rows = (const float *)parallel[1].storage->data;
  const float *cols = (const float *)parallel[2].storage->data, *s = (const float *)parallel[3].storage->data;
  double all = 0;
  for (int64_t r = 0; r < ROWS; r++) {
    double sum = 0;
    for (int64_t c = 0; c < COLS; c++) {
      int64_t i = r * COLS + c;
      float v = input_value(i);
      assert_true(b[i] == v * 2.0f + 1.0f);
      assert_true(s[i] == (i % 3 == 0 ? v : v * 2.0f + 1.0f));
      sum += v;
    }
    assert_true(rows[r] == (float)sum);
    all += sum;
  }
  for (int64_t c = 0; c < COLS; c++) {
    float m = 0; /* the init value */
    for (int64_t r = 0; r < ROWS; r++) m = input_value(r * COLS + c) > m ? input_value(r * COLS + c) : m;
    assert_true(cols[c] == m);
  }
  assert_true(*(const float *)parallel[5].storage->data == (float)all);
  const float *tr = (const float *)parallel[6].storage->data;
  for (int64_t r = 0; r < ROWS; r++)
    for (int64_t c = 0; c < COLS; c++) assert_true(tr[c * ROWS + r] == input_value(r * COLS + c));
  const float *e = (const float *)parallel[4].storage->data;
  for (int64_t i = 0; i < (int64_t)ROWS * COLS; i += 997) {
    double want = exp((double)input_value(i));
    if (isinf(want) || want > 3.4e38) assert_true(isinf(e[i]));
    else assert_true(fabs(e[i] - want) <= 4e-7 * want + 1e-38);
  }
  for (int k = 0; k < 7; k++) {
    av_storage_release(serial[k].storage);
    av_storage_release(parallel[k].storage);
  }
}

/* reduce_window: a 2x2/2 max pool and a padded 3x3 sum, serial and pooled */
static const char *kWindows =
    "func.func public @main(%x: tensor<512x1024xf32>) -> (tensor<256x512xf32>, "
    "tensor<512x1024xf32>) {\n"
    "  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>\n"
    "  %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
    "  %m = \"stablehlo.reduce_window\"(%x, %ninf) <{window_dimensions = array<i64: 2, 2>, "
    "window_strides = array<i64: 2, 2>}> ({\n"
    "  ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
    "    %r = stablehlo.maximum %a, %b : tensor<f32>\n"
    "    stablehlo.return %r : tensor<f32>\n"
    "  }) : (tensor<512x1024xf32>, tensor<f32>) -> tensor<256x512xf32>\n"
    "  %s = \"stablehlo.reduce_window\"(%x, %z) <{padding = dense<1> : tensor<2x2xi64>, "
    "window_dimensions = array<i64: 3, 3>, window_strides = array<i64: 1, 1>}> ({\n"
    "  ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
    "    %r = stablehlo.add %a, %b : tensor<f32>\n"
    "    stablehlo.return %r : tensor<f32>\n"
    "  }) : (tensor<512x1024xf32>, tensor<f32>) -> tensor<512x1024xf32>\n"
    "  return %m, %s : tensor<256x512xf32>, tensor<512x1024xf32>\n"
    "}\n";

static void run_windows(av_thread_pool *pool, av_tensor *out) {
  av_diag d;
  av_diag_init(&d);
  av_program *p = av_program_compile("mlir", 4, kWindows, strlen(kWindows), NULL, &d);
  if (!p) fail_msg("compile: %s", d.msg);
  av_program_use_thread_pool(p, pool);
  av_tensor in;
  memset(&in, 0, sizeof in);
  in.storage = av_storage_alloc((size_t)ROWS * COLS * 4);
  assert_non_null(in.storage);
  in.dtype = AV_DT_F32;
  in.rank = 2;
  in.dims[0] = ROWS;
  in.dims[1] = COLS;
  for (int64_t i = 0; i < (int64_t)ROWS * COLS; i++) ((float *)in.storage->data)[i] = input_value(i);
  if (av_program_execute(p, 0, &in, out, &d) != AV_OK) fail_msg("execute: %s", d.msg);
  av_storage_release(in.storage);
  av_program_free(p);
}

static void test_reduce_window(void **state) {
  (void)state;
  av_tensor serial[2], parallel[2];
  run_windows(NULL, serial);
  av_thread_pool *pool = av_thread_pool_create(3);
  run_windows(pool, parallel);
  av_thread_pool_release(pool);
  for (int k = 0; k < 2; k++) {
    assert_int_equal(serial[k].storage->size, parallel[k].storage->size);
    assert_memory_equal(serial[k].storage->data, parallel[k].storage->data, serial[k].storage->size);
  }
  const float *m = (const float *)parallel[0].storage->data, *s = (const float *)parallel[1].storage->data;
  for (int64_t r = 0; r < ROWS / 2; r++)
    for (int64_t c = 0; c < COLS / 2; c++) {
      float want = -INFINITY;
      for (int dr = 0; dr < 2; dr++)
        for (int dc = 0; dc < 2; dc++) {
          float v = input_value((2 * r + dr) * COLS + 2 * c + dc);
          want = v > want ? v : want;
        }
      assert_true(m[r * (COLS / 2) + c] == want);
    }
  for (int64_t r = 0; r < ROWS; r += 7)
    for (int64_t c = 0; c < COLS; c++) {
      float want = 0;
      for (int64_t dr = -1; dr <= 1; dr++)
        for (int64_t dc = -1; dc <= 1; dc++)
          if (r + dr >= 0 && r + dr < ROWS && c + dc >= 0 && c + dc < COLS)
            want += input_value((r + dr) * COLS + c + dc);
      assert_true(s[r * COLS + c] == want);
    }
  for (int k = 0; k < 2; k++) {
    av_storage_release(serial[k].storage);
    av_storage_release(parallel[k].storage);
  }
}

/* av_box_copy transposes (the tiled path for planes of at least 16 x 16, edges included)
 * against the index formula. out[a][b][c] = in at the permuted index. */
static void check_permute(const int64_t *in_dims, const int *perm, size_t esize) {
  int64_t n = in_dims[0] * in_dims[1] * in_dims[2];
  int64_t istr[3] = {in_dims[1] * in_dims[2], in_dims[2], 1}, od[3], ostr[3];
  for (int k = 0; k < 3; k++) od[k] = in_dims[perm[k]];
  ostr[0] = od[1] * od[2];
  ostr[1] = od[2];
  ostr[2] = 1;
  uint64_t *in = malloc((size_t)n * 8), *out = malloc((size_t)n * 8);
  for (int64_t i = 0; i < n; i++) in[i] = (uint64_t)(i * 2654435761u + 7);
  if (esize == 4)
    for (int64_t i = 0; i < n; i++) ((uint32_t *)(void *)in)[i] = (uint32_t)(i * 40503u + 3);
  av_box b = {.rank = 3};
  for (int k = 0; k < 3; k++) {
    b.dims[k] = od[k];
    b.sstride[k] = istr[perm[k]];
    b.dstride[k] = ostr[k];
  }
  av_box_copy(&b, in, out, esize);
  for (int64_t x = 0; x < od[0]; x++)
    for (int64_t y = 0; y < od[1]; y++)
      for (int64_t z = 0; z < od[2]; z++) {
        int64_t o = x * ostr[0] + y * ostr[1] + z, i = x * istr[perm[0]] + y * istr[perm[1]] + z * istr[perm[2]];
        if (esize == 4) assert_int_equal(((uint32_t *)(void *)out)[o], ((uint32_t *)(void *)in)[i]);
        else assert_int_equal(out[o], in[i]);
      }
  free(in);
  free(out);
}

static void test_transposes(void **state) {
  (void)state;
  const int64_t dims[3] = {5, 37, 45};
  const int perms[][3] = {{0, 2, 1}, {2, 1, 0}, {1, 2, 0}, {2, 0, 1}, {1, 0, 2}};
  for (size_t k = 0; k < sizeof perms / sizeof perms[0]; k++) {
    check_permute(dims, perms[k], 4);
    check_permute(dims, perms[k], 8);
  }
  const int64_t big[3] = {1, 300, 17};
  const int t[3] = {0, 2, 1};
  check_permute(big, t, 4);
}

/* Batches of dense square planes (shape.c's vector-block and fixed-size paths: sides 2..4,
 * multiples of 8 for 4-byte and of 4 for 8-byte elements up to 64 KiB a plane, and sides
 * that take neither, 128 x 128 of 8 bytes being a larger plane), each plane transposed, with
 * planes apart by more than their size (a padded batch stride). */
static void test_square_plane_batches(void **state) {
  (void)state;
  const int64_t sides[] = {2, 3, 4, 5, 8, 12, 16, 24, 32, 64, 128};
  for (size_t k = 0; k < sizeof sides / sizeof *sides; k++)
    for (size_t esize = 4; esize <= 8; esize += 4) {
      int64_t n = sides[k], nb = 37, pad = 3, plane = n * n + pad, total = nb * plane;
      uint64_t *in = malloc((size_t)total * 8), *out = malloc((size_t)total * 8);
      assert_true(in && out);
      for (int64_t i = 0; i < total; i++) {
        in[i] = (uint64_t)(i * 2654435761u + 11) << 7;
        out[i] = 0;
        if (esize == 4) ((uint32_t *)(void *)in)[i] = (uint32_t)(i * 40503u + 5);
      }
      av_box b = {.rank = 3, .dims = {nb, n, n}, .sstride = {plane, 1, n}, .dstride = {plane, n, 1}};
      av_box_copy(&b, in, out, esize);
      for (int64_t p = 0; p < nb; p++)
        for (int64_t r = 0; r < n; r++)
          for (int64_t c = 0; c < n; c++) {
            int64_t o = p * plane + r * n + c, i = p * plane + c * n + r;
            if (esize == 4)
              assert_int_equal(((uint32_t *)(void *)out)[o], ((uint32_t *)(void *)in)[i]);
            else
              assert_int_equal(out[o], in[i]);
          }
      for (int64_t p = 0; p < nb; p++) /* the padding between planes is not written */
        for (int64_t q = n * n; q < plane; q++)
          assert_int_equal(esize == 4 ? ((uint32_t *)(void *)out)[p * plane + q] : out[p * plane + q], 0);
      free(in);
      free(out);
    }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_square_plane_batches),
      cmocka_unit_test(test_every_item_once),
      cmocka_unit_test(test_concurrent_callers),
      cmocka_unit_test(test_nested),
      cmocka_unit_test(test_lanes),
      cmocka_unit_test(test_parse_num_threads),
      cmocka_unit_test(test_schedule),
      cmocka_unit_test(test_hot_pool),
      cmocka_unit_test(test_program_same_bytes),
      cmocka_unit_test(test_transposes),
      cmocka_unit_test(test_reduce_window),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
