/* Allocation-failure injection (SQLite's OOM test applied to the PJRT surface). The test-only
 * plugin libanvil_pjrt_oom.so routes every allocation anvil makes through tests/oom/oom_wrap.c;
 * for N = 1, 2, 3, ... the N-th allocation of a whole program's life fails: client creation,
 * compile, serialize + deserialize, buffer uploads, two executions of each executable,
 * downloads, destroy. Every run must end with RESOURCE_EXHAUSTED (or succeed with the right
 * results, where the failed allocation was optional), free everything it allocated (the
 * wrapper's live count returns to its start; the ASan build's leak checker also runs), and
 * never crash, abort or hang (a watchdog fails the test after 60 s in one run). A second pass
 * makes every allocation from the N-th on fail (cleanup under persistent pressure), at every
 * 5th point.
 *
 * ANVIL_OOM_STRIDE=k tries every k-th point only (default 1), ANVIL_OOM_START=n starts at n
 * (with gdb -ex 'break oom_injected if k == n' to see where allocation n is made). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "test_pjrt_util.h"
#include "test_pjrt_run.h"

static void (*oom_arm)(long long fail_at, int persistent);
static void (*oom_counts)(long long *allocations, long long *injected, long long *live);

static int load_oom_api(void **state) {
  (void)state;
  void *h = load_api_from("ANVIL_OOM_PLUGIN_PATH");
  if (!h) return -1;
  oom_arm = (void (*)(long long, int))dlsym(h, "anvil_oom_arm");
  oom_counts = (void (*)(long long *, long long *, long long *))dlsym(h, "anvil_oom_counts");
  if (!oom_arm || !oom_counts) return -1;
  /* One kernel thread: the allocation order, and so each point, is the same every run. */
  setenv("ANVIL_NUM_THREADS", "1", 1);
  return api ? 0 : -1;
}

/* --------------------------------------------------------------- watchdog */

static atomic_llong run_started_ns; /* 0: no run in progress */
static atomic_llong run_point;

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void *watchdog_main(void *arg) {
  (void)arg;
  for (;;) {
    sleep(1);
    long long s = atomic_load(&run_started_ns);
    if (s && now_ns() - s > 60LL * 1000000000LL) {
      fprintf(stderr, "test_oom: HANG: the run failing allocation %lld took over 60 s\n",
              (long long)atomic_load(&run_point));
      _exit(1);
    }
  }
  return NULL;
}

/* ---------------------------------------------------------------- scenario */

static PJRT_Error *serialize_and_load(PJRT_Client *c, PJRT_LoadedExecutable *exe,
                                      PJRT_LoadedExecutable **out) {
  *out = NULL;
  PJRT_LoadedExecutable_GetExecutable_Args ge = {
      .struct_size = PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE,
      .loaded_executable = exe};
  PJRT_Error *e = api->PJRT_LoadedExecutable_GetExecutable(&ge);
  if (e) return e;
  PJRT_Executable_Serialize_Args s = {.struct_size = PJRT_Executable_Serialize_Args_STRUCT_SIZE,
                                      .executable = ge.executable};
  e = api->PJRT_Executable_Serialize(&s);
  PJRT_Executable_Destroy_Args d = {.struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE,
                                    .executable = ge.executable};
  PJRT_Error *e2 = api->PJRT_Executable_Destroy(&d);
  if (e2) err_free(e2);
  if (e) return e;
  PJRT_Executable_DeserializeAndLoad_Args l = {
      .struct_size = PJRT_Executable_DeserializeAndLoad_Args_STRUCT_SIZE,
      .client = c,
      .serialized_executable = s.serialized_bytes,
      .serialized_executable_size = s.serialized_bytes_size};
  e = api->PJRT_Executable_DeserializeAndLoad(&l);
  s.serialized_executable_deleter(s.serialized_executable);
  *out = l.loaded_executable;
  return e;
}

/* Appends (b, n) to (*all, *all_size); the test's own memory. */
static void append(unsigned char **all, size_t *all_size, const unsigned char *b, size_t n) {
  unsigned char *nb = realloc(*all, *all_size + n + 1);
  assert_non_null(nb);
  if (n) memcpy(nb + *all_size, b, n);
  *all = nb;
  *all_size += n;
}

/* A program's whole life on a fresh client; *bytes gets the outputs of both executables. */
static PJRT_Error *scenario(const run_program *p, const void *code, size_t code_size,
                            unsigned char **bytes, size_t *size) {
  *bytes = NULL;
  *size = 0;
  size_t ndev = p->num_replicas > 1 ? (size_t)p->num_replicas : 1;
  PJRT_Client *c;
  PJRT_Error *e = run_client((int64_t)ndev, &c);
  if (e) return e;
  PJRT_Client_AddressableDevices_Args da = {
      .struct_size = PJRT_Client_AddressableDevices_Args_STRUCT_SIZE, .client = c};
  e = api->PJRT_Client_AddressableDevices(&da);
  PJRT_LoadedExecutable *exe[2] = {NULL, NULL};
  PJRT_Buffer *in[RUN_MAX_DEVICES][6];
  memset(in, 0, sizeof in);
  if (!e) e = run_compile_replicas(c, p->format, code, code_size, p->num_replicas, &exe[0]);
  if (!e) e = serialize_and_load(c, exe[0], &exe[1]);
  for (size_t d = 0; d < ndev; d++)
    for (int i = 0; !e && i < p->num_inputs; i++)
      e = run_upload(c, da.addressable_devices[d], &p->inputs[i], i + (int)d, &in[d][i]);
  PJRT_Buffer *const *lists[RUN_MAX_DEVICES];
  for (size_t d = 0; d < ndev; d++) lists[d] = in[d];
  for (int k = 0; !e && k < 2; k++) {
    unsigned char *out;
    size_t n;
    e = run_execute_devices(exe[k], ndev, lists, (size_t)p->num_inputs, NULL, 0, &out, &n);
    if (!e) append(bytes, size, out, n);
    free(out);
  }
  for (size_t d = 0; d < ndev; d++)
    for (int i = 0; i < p->num_inputs; i++) run_destroy_buffer(in[d][i]);
  run_destroy_exe(exe[0]);
  run_destroy_exe(exe[1]);
  PJRT_Client_Destroy_Args cd = {.struct_size = PJRT_Client_Destroy_Args_STRUCT_SIZE, .client = c};
  PJRT_Error *e2 = api->PJRT_Client_Destroy(&cd);
  if (e2) {
    if (e) err_free(e2);
    else e = e2;
  }
  return e;
}

/* ------------------------------------------------------------------ driver */

typedef struct oom_stats {
  long long points, errors, survived, wrong_code, wrong_result, leaks, allocations;
} oom_stats;

/* Runs the scenario failing allocation `at` (persistent: and all after it); checks the
 * outcome against the reference. Returns the injected count (0: the run never reached `at`). */
static long long one_point(const run_program *p, const void *code, size_t code_size,
                           const unsigned char *want, size_t want_size, long long at,
                           int persistent, oom_stats *st) {
  long long a0, i0, live0;
  oom_counts(&a0, &i0, &live0);
  atomic_store(&run_point, at);
  atomic_store(&run_started_ns, now_ns());
  oom_arm(at, persistent);
  unsigned char *got;
  size_t got_size;
  PJRT_Error *e = scenario(p, code, code_size, &got, &got_size);
  long long allocs, injected, live;
  oom_counts(&allocs, &injected, &live);
  oom_arm(0, 0);
  atomic_store(&run_started_ns, 0);
  st->allocations = allocs;
  if (injected == 0) {
    if (e) {
      size_t n;
      const char *m = err_msg(e, &n);
      fail_msg("%s: failed without an injected failure: %.*s", p->name, (int)n, m);
    }
  } else {
    st->points++;
    if (e) {
      st->errors++;
      if (err_code(e) != PJRT_Error_Code_RESOURCE_EXHAUSTED) {
        size_t n;
        const char *m = err_msg(e, &n);
        fprintf(stderr, "oom: %s: allocation %lld%s: code %d, not RESOURCE_EXHAUSTED: %.*s\n",
                p->name, at, persistent ? "+" : "", (int)err_code(e), (int)n, m);
        st->wrong_code++;
      }
    } else {
      st->survived++;
    }
  }
  if (!e && (got_size != want_size || memcmp(got, want, got_size) != 0)) {
    fprintf(stderr, "oom: %s: allocation %lld%s failed, the run succeeded with other results\n",
            p->name, at, persistent ? "+" : "");
    st->wrong_result++;
  }
  if (e) err_free(e);
  free(got);
  long long unused_allocs, unused_injected;
  oom_counts(&unused_allocs, &unused_injected, &live); /* once the error is freed */
  if (live != live0) {
    fprintf(stderr, "oom: %s: allocation %lld%s: %lld allocations not freed\n", p->name, at,
            persistent ? "+" : "", live - live0);
    st->leaks++;
  }
  return injected;
}

static const char text_program[] =
    "module @mix {\n"
    "  func.func public @main(%arg0: tensor<4x3xf32>, %arg1: tensor<3x2xf32>) -> "
    "(tensor<4x2xf32>, tensor<f32>) {\n"
    "    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : "
    "(tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>\n"
    "    %c = stablehlo.constant dense<0.0> : tensor<f32>\n"
    "    %1 = stablehlo.reduce(%0 init: %c) applies stablehlo.add across dimensions = [0, 1] : "
    "(tensor<4x2xf32>, tensor<f32>) -> tensor<f32>\n"
    "    %2 = stablehlo.tanh %0 : tensor<4x2xf32>\n"
    "    %3 = stablehlo.broadcast_in_dim %1, dims = [] : (tensor<f32>) -> tensor<4x2xf32>\n"
    "    %4 = stablehlo.multiply %2, %3 : tensor<4x2xf32>\n"
    "    return %4, %1 : tensor<4x2xf32>, tensor<f32>\n"
    "  }\n"
    "}\n";

/* Two replicas: an all-reduce across devices (collectives, one worker per device). */
static const char allreduce_program[] =
    "module @allreduce attributes {mhlo.num_replicas = 2 : i32} {\n"
    "  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
    "    %0 = \"stablehlo.all_reduce\"(%arg0) ({\n"
    "    ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
    "      %s = stablehlo.add %a, %b : tensor<f32>\n"
    "      stablehlo.return %s : tensor<f32>\n"
    "    }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<4xf32>) -> tensor<4xf32>\n"
    "    %1 = stablehlo.multiply %0, %arg0 : tensor<4xf32>\n"
    "    return %1 : tensor<4xf32>\n"
    "  }\n"
    "}\n";

static const run_program programs[] = {
    {"mlir text: all_reduce over 2 replicas", "mlir", NULL, allreduce_program, 1,
     {{PJRT_Buffer_Type_F32, 1, {4}}}, 2},
    {"mlir text: dot_general, reduce, tanh", "mlir", NULL, text_program, 2,
     {{PJRT_Buffer_Type_F32, 2, {4, 3}}, {PJRT_Buffer_Type_F32, 2, {3, 2}}}, 0},
    {"hlo while loop (jax)", "hlo", "tests/data/hlo/while.pb", NULL, 1,
     {{PJRT_Buffer_Type_F32, 1, {4}}}, 0},
    {"hlo scatter-add (jax)", "hlo", "tests/data/hlo/scatter.pb", NULL, 3,
     {{PJRT_Buffer_Type_F32, 1, {5}}, {PJRT_Buffer_Type_S32, 1, {2}}, {PJRT_Buffer_Type_F32, 1, {2}}}, 0},
    {"hlo constants, 5 outputs (jax)", "hlo", "tests/data/hlo/constants.pb", NULL, 1,
     {{PJRT_Buffer_Type_F32, 1, {3}}}, 0},
    {"stablehlo bytecode, LU via LAPACK (jax export)", "mlir",
     "shared/conformance/jax-export/cpu_lu_lapack_getrf__data_2024_05_31__f32.mlirbc", NULL, 0,
     {{0}}, 0},
    {"hlo convolution (jax)", "hlo", "tests/data/hlo/conv.pb", NULL, 2,
     {{PJRT_Buffer_Type_F32, 4, {1, 2, 6, 5}}, {PJRT_Buffer_Type_F32, 4, {3, 2, 3, 2}}}, 0},
    {"hlo sort (jax)", "hlo", "tests/data/hlo/sort.pb", NULL, 1, {{PJRT_Buffer_Type_F32, 2, {2, 4}}}, 0},
    {"hlo rng (jax)", "hlo", "tests/data/hlo/rng.pb", NULL, 2,
     {{PJRT_Buffer_Type_U32, 1, {4}}, {PJRT_Buffer_Type_F32, 0, {0}}}, 0},
    {"hlo cond (jax)", "hlo", "tests/data/hlo/cond.pb", NULL, 2,
     {{PJRT_Buffer_Type_PRED, 0, {0}}, {PJRT_Buffer_Type_F32, 1, {3}}}, 0},
};

static long long env_int(const char *name, long long def) {
  const char *v = getenv(name);
  return v && *v ? atoll(v) : def;
}

static long long total_bad; /* wrong codes, wrong results and leaks over every program */

static bool run_one_program(const run_program *p) {
  size_t code_size;
  unsigned char *code = run_program_code(p, &code_size);
  if (!code) {
    printf("oom: %s: not found, skipped\n", p->name);
    return false;
  }
  unsigned char *want;
  size_t want_size;
  oom_arm(0, 0);
  PJRT_Error *e = scenario(p, code, code_size, &want, &want_size); /* reference, and warm-up */
  if (e) {
    size_t n;
    const char *m = err_msg(e, &n);
    fail_msg("%s: reference run failed: %.*s", p->name, (int)n, m);
  }
  long long stride = env_int("ANVIL_OOM_STRIDE", 1);
  if (stride < 1) stride = 1;
  oom_stats st = {0}, sp = {0};
  long long at = env_int("ANVIL_OOM_START", 1);
  while (one_point(p, code, code_size, want, want_size, at, 0, &st)) at += stride;
  long long total = st.allocations;
  /* Persistent failure from every 5th point on (cleanup paths when nothing can be had). */
  for (long long k = 1; k <= total; k += 5 * stride)
    one_point(p, code, code_size, want, want_size, k, 1, &sp);
  printf("oom: %s: %lld allocations; one failing: %lld points tried, %lld RESOURCE_EXHAUSTED, "
         "%lld survived; all failing from a point on: %lld points; %lld wrong codes, %lld wrong "
         "results, %lld leaks\n",
         p->name, total, st.points, st.errors - st.wrong_code, st.survived, sp.points,
         st.wrong_code + sp.wrong_code, st.wrong_result + sp.wrong_result, st.leaks + sp.leaks);
  fflush(stdout);
  total_bad += st.wrong_code + sp.wrong_code + st.wrong_result + sp.wrong_result + st.leaks + sp.leaks;
  assert_true(st.points > 0);
  free(want);
  free(code);
  return true;
}

static void test_every_allocation_failure_is_survived(void **state) {
  (void)state;
  pthread_t wd;
  assert_int_equal(pthread_create(&wd, NULL, watchdog_main, NULL), 0);
  pthread_detach(wd);
  int ran = 0;
  for (size_t i = 0; i < sizeof programs / sizeof programs[0]; i++)
    ran += run_one_program(&programs[i]);
  assert_true(ran > 0);
  assert_int_equal(total_bad, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_allocation_failure_is_survived),
  };
  return cmocka_run_group_tests(tests, load_oom_api, NULL);
}
