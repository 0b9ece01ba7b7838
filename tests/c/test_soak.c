/* Concurrency soak: 8 threads share one 4-device client and each runs ANVIL_SOAK_EXECUTES
 * executions (default 1,000; 100 in sanitizer builds; 10,000 by hand) of a mix of programs:
 * single-device ones spread over the devices (execute_device), an all_reduce over 2 replicas,
 * one that donates its input, a matmul, a while loop, a JAX HLO scatter. Inputs are large
 * enough (64K-256K floats) that executions go to the device workers, so they are queued. Every iteration uploads fresh inputs (host transfers interleaved
 * with other threads' executions), executes asynchronously, and then, by turns: deletes the
 * inputs (PJRT_Buffer_Delete) while the execution that reads them may still be queued,
 * destroys them at once, or keeps them until the outputs are read; the outputs are downloaded
 * asynchronously. Every output must be bit-identical to a serial run of the same program on
 * the same inputs before the soak. At the end every device's bytes in use are back at their
 * start value, and, once the client is gone, so is the number of live heap blocks anvil
 * holds (counted by the test-only plugin's allocation wrappers, tests/oom/oom_wrap.c, here
 * never failing an allocation). The test prints executions, wall time and memory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "test_pjrt_util.h"
#include "test_pjrt_run.h"

enum { THREADS = 8, DEVICES = 4, SEEDS = 8, NPROG = 6 };

static void (*oom_counts)(long long *allocations, long long *injected, long long *live);

static int load_soak_api(void **state) {
  (void)state;
  void *h = load_api_from("ANVIL_OOM_PLUGIN_PATH");
  if (!h) return -1;
  oom_counts = (void (*)(long long *, long long *, long long *))dlsym(h, "anvil_oom_counts");
  return oom_counts ? 0 : -1;
}

static const char axpy_text[] =
    "module @axpy {\n"
    "  func.func public @main(%x: tensor<65536xf32>, %y: tensor<65536xf32>) -> tensor<65536xf32> {\n"
    "    %a = stablehlo.constant dense<2.5> : tensor<65536xf32>\n"
    "    %0 = stablehlo.multiply %a, %x : tensor<65536xf32>\n"
    "    %1 = stablehlo.add %0, %y : tensor<65536xf32>\n"
    "    %2 = stablehlo.exponential %1 : tensor<65536xf32>\n"
    "    return %2 : tensor<65536xf32>\n"
    "  }\n"
    "}\n";

static const char loop_text[] =
    "module @loop {\n"
    "  func.func public @main(%x: tensor<16384xf32>) -> (tensor<16384xf32>, tensor<f32>) {\n"
    "    %i0 = stablehlo.constant dense<0> : tensor<i32>\n"
    "    %n = stablehlo.constant dense<12> : tensor<i32>\n"
    "    %one = stablehlo.constant dense<1> : tensor<i32>\n"
    "    %h = stablehlo.constant dense<0.5> : tensor<16384xf32>\n"
    "    %c = stablehlo.constant dense<1.0> : tensor<16384xf32>\n"
    "    %r:2 = stablehlo.while(%it = %i0, %v = %x) : tensor<i32>, tensor<16384xf32>\n"
    "      cond {\n"
    "        %p = stablehlo.compare LT, %it, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>\n"
    "        stablehlo.return %p : tensor<i1>\n"
    "      } do {\n"
    "        %m = stablehlo.multiply %v, %h : tensor<16384xf32>\n"
    "        %s = stablehlo.sine %m : tensor<16384xf32>\n"
    "        %a = stablehlo.add %s, %c : tensor<16384xf32>\n"
    "        %i1 = stablehlo.add %it, %one : tensor<i32>\n"
    "        stablehlo.return %i1, %a : tensor<i32>, tensor<16384xf32>\n"
    "      }\n"
    "    %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
    "    %sum = stablehlo.reduce(%r#1 init: %z) applies stablehlo.add across dimensions = [0] : "
    "(tensor<16384xf32>, tensor<f32>) -> tensor<f32>\n"
    "    return %r#1, %sum : tensor<16384xf32>, tensor<f32>\n"
    "  }\n"
    "}\n";

static const char donate_text[] =
    "module @donate {\n"
    "  func.func public @main(%x: tensor<65536xf32> {tf.aliasing_output = 0 : i32}, "
    "%y: tensor<65536xf32>) -> tensor<65536xf32> {\n"
    "    %0 = stablehlo.multiply %x, %y : tensor<65536xf32>\n"
    "    %1 = stablehlo.subtract %0, %x : tensor<65536xf32>\n"
    "    return %1 : tensor<65536xf32>\n"
    "  }\n"
    "}\n";

static const char matmul_text[] =
    "module @matmul {\n"
    "  func.func public @main(%x: tensor<96x128xf32>, %y: tensor<128x80xf32>) -> tensor<96x80xf32> {\n"
    "    %0 = stablehlo.dot_general %x, %y, contracting_dims = [1] x [0] : "
    "(tensor<96x128xf32>, tensor<128x80xf32>) -> tensor<96x80xf32>\n"
    "    %1 = stablehlo.tanh %0 : tensor<96x80xf32>\n"
    "    return %1 : tensor<96x80xf32>\n"
    "  }\n"
    "}\n";

static const char allreduce_text[] =
    "module @allreduce attributes {mhlo.num_replicas = 2 : i32} {\n"
    "  func.func public @main(%x: tensor<32768xf32>) -> tensor<32768xf32> {\n"
    "    %0 = \"stablehlo.all_reduce\"(%x) ({\n"
    "    ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
    "      %s = stablehlo.add %a, %b : tensor<f32>\n"
    "      stablehlo.return %s : tensor<f32>\n"
    "    }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<32768xf32>) -> "
    "tensor<32768xf32>\n"
    "    %1 = stablehlo.multiply %0, %x : tensor<32768xf32>\n"
    "    return %1 : tensor<32768xf32>\n"
    "  }\n"
    "}\n";

/* The programs; the HLO one is a JAX-made while loop (skipped without the file). */
static const run_program programs[NPROG] = {
    {"axpy+exp", "mlir", NULL, axpy_text, 2,
     {{PJRT_Buffer_Type_F32, 1, {65536}}, {PJRT_Buffer_Type_F32, 1, {65536}}}, 0},
    {"while loop + reduce", "mlir", NULL, loop_text, 1, {{PJRT_Buffer_Type_F32, 1, {16384}}}, 0},
    {"donated input", "mlir", NULL, donate_text, 2,
     {{PJRT_Buffer_Type_F32, 1, {65536}}, {PJRT_Buffer_Type_F32, 1, {65536}}}, 0},
    {"matmul + tanh", "mlir", NULL, matmul_text, 2,
     {{PJRT_Buffer_Type_F32, 2, {96, 128}}, {PJRT_Buffer_Type_F32, 2, {128, 80}}}, 0},
    {"all_reduce over 2 replicas", "mlir", NULL, allreduce_text, 1,
     {{PJRT_Buffer_Type_F32, 1, {32768}}}, 2},
    {"hlo scatter-add (jax)", "hlo", "tests/data/hlo/scatter.pb", NULL, 3,
     {{PJRT_Buffer_Type_F32, 1, {5}}, {PJRT_Buffer_Type_S32, 1, {2}}, {PJRT_Buffer_Type_F32, 1, {2}}},
     0},
};

typedef struct soak {
  PJRT_Client *client;
  PJRT_Device *devices[DEVICES];
  PJRT_LoadedExecutable *exe[NPROG];
  unsigned char *want[NPROG][SEEDS];
  size_t want_size[NPROG][SEEDS];
  long executes_per_thread;
  atomic_long executions, mismatches, errors, deleted_early;
} soak;

static int ndevices(const run_program *p) { return p->num_replicas > 1 ? p->num_replicas : 1; }

/* Device d's inputs of program p for `seed` (distinct per device). */
static PJRT_Error *upload_inputs(soak *s, int p, int seed, int d, PJRT_Device *dev,
                                 PJRT_Buffer **in) {
  for (int i = 0; i < programs[p].num_inputs; i++) {
    PJRT_Error *e = run_upload(s->client, dev, &programs[p].inputs[i], seed * 5 + i + 3 * d, &in[i]);
    if (e) {
      for (int k = 0; k < i; k++) run_destroy_buffer(in[k]);
      return e;
    }
  }
  return NULL;
}

static void delete_buffer(PJRT_Buffer *b) {
  PJRT_Buffer_Delete_Args a = {.struct_size = PJRT_Buffer_Delete_Args_STRUCT_SIZE, .buffer = b};
  PJRT_Error *e = api->PJRT_Buffer_Delete(&a);
  if (e) err_free(e);
}

/* One execution of program p: `dev0` is where a single-device program runs; `mode` 0 keeps
 * the inputs until the outputs are read, 1 deletes them right after Execute, 2 destroys
 * them right after Execute. Outputs of all devices, in order, go to *bytes. */
static PJRT_Error *run_once(soak *s, int p, int seed, int dev0, int mode, unsigned char **bytes,
                            size_t *size) {
  *bytes = NULL;
  *size = 0;
  const run_program *pr = &programs[p];
  int nd = ndevices(pr);
  PJRT_Buffer *in[RUN_MAX_DEVICES][6];
  memset(in, 0, sizeof in);
  PJRT_Error *e = NULL;
  for (int d = 0; !e && d < nd; d++)
    e = upload_inputs(s, p, seed, d, s->devices[nd > 1 ? d : dev0], in[d]);
  if (e) {
    for (int d = 0; d < nd; d++)
      for (int i = 0; i < pr->num_inputs; i++) run_destroy_buffer(in[d][i]);
    return e;
  }
  size_t nout = 0;
  e = run_num_outputs(s->exe[p], &nout);
  if (e) return e;
  PJRT_Buffer *out[RUN_MAX_DEVICES][RUN_MAX_OUTPUTS];
  memset(out, 0, sizeof out);
  PJRT_Buffer **out_lists[RUN_MAX_DEVICES];
  PJRT_Buffer *const *arg_lists[RUN_MAX_DEVICES];
  PJRT_Event *done[RUN_MAX_DEVICES] = {0};
  for (int d = 0; d < nd; d++) {
    out_lists[d] = out[d];
    arg_lists[d] = in[d];
  }
  PJRT_ExecuteOptions opts = {.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE};
  PJRT_LoadedExecutable_Execute_Args a = {
      .struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE,
      .executable = s->exe[p],
      .options = &opts,
      .argument_lists = arg_lists,
      .num_devices = (size_t)nd,
      .num_args = (size_t)pr->num_inputs,
      .output_lists = out_lists,
      .device_complete_events = done,
      .execute_device = nd == 1 ? s->devices[dev0] : NULL};
  e = api->PJRT_LoadedExecutable_Execute(&a);
  if (!e && mode != 0)
    for (int d = 0; d < nd; d++)
      for (int i = 0; i < pr->num_inputs; i++) {
        if (mode == 1) delete_buffer(in[d][i]);
        run_destroy_buffer(in[d][i]);
        in[d][i] = NULL;
      }
  if (!e && mode == 1) atomic_fetch_add(&s->deleted_early, 1);
  for (int d = 0; d < nd; d++) {
    PJRT_Error *ed = e ? NULL : run_await(done[d]);
    if (!e) e = ed;
    else if (ed) err_free(ed);
  }
  for (int d = 0; d < nd; d++)
    for (size_t i = 0; i < nout; i++) {
      if (!e && out[d][i]) e = run_download(out[d][i], bytes, size);
      run_destroy_buffer(out[d][i]);
    }
  for (int d = 0; d < nd; d++)
    for (int i = 0; i < pr->num_inputs; i++) run_destroy_buffer(in[d][i]);
  return e;
}

typedef struct worker_arg {
  soak *s;
  int t;
} worker_arg;

static void *worker_main(void *arg) {
  worker_arg *w = arg;
  soak *s = w->s;
  for (long i = 0; i < s->executes_per_thread; i++) {
    int p = (int)((i + w->t) % NPROG);
    if (!s->exe[p]) continue;
    int seed = (int)((i * 7 + w->t) % SEEDS);
    int mode = (int)((i / NPROG + w->t) % 3);
    unsigned char *got;
    size_t n;
    PJRT_Error *e = run_once(s, p, seed, (int)((i + (long)w->t) % DEVICES), mode, &got, &n);
    atomic_fetch_add(&s->executions, 1);
    if (e) {
      size_t len;
      const char *m = err_msg(e, &len);
      fprintf(stderr, "soak: %s (mode %d): %.*s\n", programs[p].name, mode, (int)len, m);
      err_free(e);
      atomic_fetch_add(&s->errors, 1);
    } else if (n != s->want_size[p][seed] || memcmp(got, s->want[p][seed], n) != 0) {
      if (atomic_fetch_add(&s->mismatches, 1) < 5)
        fprintf(stderr, "soak: %s seed %d (mode %d): results differ from the serial run\n",
                programs[p].name, seed, mode);
    }
    free(got);
  }
  return NULL;
}

static long long bytes_in_use(soak *s) {
  long long total = 0;
  for (int d = 0; d < DEVICES; d++) {
    PJRT_Device_MemoryStats_Args a = {.struct_size = PJRT_Device_MemoryStats_Args_STRUCT_SIZE,
                                      .device = s->devices[d]};
    CHECK_OK(api->PJRT_Device_MemoryStats(&a));
    total += a.bytes_in_use;
  }
  return total;
}

static long rss_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long kib = -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %ld", &kib) == 1) break;
  fclose(f);
  return kib;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void test_soak(void **state) {
  (void)state;
  soak s;
  memset(&s, 0, sizeof s);
  const char *n = getenv("ANVIL_SOAK_EXECUTES");
  s.executes_per_thread = n && *n ? atol(n) : 1000;
  long long a0, i0, live_before;
  oom_counts(&a0, &i0, &live_before);
  long rss_before = rss_kib();
  CHECK_OK(run_client(DEVICES, &s.client));
  for (int d = 0; d < DEVICES; d++) s.devices[d] = client_device(s.client, (size_t)d);
  long long in_use_before = bytes_in_use(&s); /* the new client's */
  int ran = 0;
  for (int p = 0; p < NPROG; p++) {
    size_t code_size;
    unsigned char *code = run_program_code(&programs[p], &code_size);
    if (!code) continue;
    CHECK_OK(run_compile_replicas(s.client, programs[p].format, code, code_size,
                                  programs[p].num_replicas, &s.exe[p]));
    free(code);
    ran++;
    /* the serial reference, on device 0 (and 1) */
    for (int seed = 0; seed < SEEDS; seed++)
      CHECK_OK(run_once(&s, p, seed, 0, 0, &s.want[p][seed], &s.want_size[p][seed]));
  }
  assert_true(ran >= NPROG - 1);
  double t0 = now_s();
  pthread_t threads[THREADS];
  worker_arg args[THREADS];
  for (int t = 0; t < THREADS; t++) {
    args[t] = (worker_arg){&s, t};
    assert_int_equal(pthread_create(&threads[t], NULL, worker_main, &args[t]), 0);
  }
  for (int t = 0; t < THREADS; t++) pthread_join(threads[t], NULL);
  double took = now_s() - t0;
  /* a worker drops its job's references just after the job's events fire: wait for that */
  long long in_use_after = bytes_in_use(&s);
  for (int k = 0; k < 500 && in_use_after != in_use_before; k++) {
    struct timespec ms = {0, 10 * 1000 * 1000};
    nanosleep(&ms, NULL);
    in_use_after = bytes_in_use(&s);
  }
  long rss_soak = rss_kib();
  long long live_soak;
  oom_counts(&a0, &i0, &live_soak);
  for (int p = 0; p < NPROG; p++) {
    run_destroy_exe(s.exe[p]);
    for (int seed = 0; seed < SEEDS; seed++) free(s.want[p][seed]);
  }
  destroy_client(s.client);
  long long live_after;
  oom_counts(&a0, &i0, &live_after);
  printf("soak: %d threads x %ld executions = %ld executions (%ld with inputs deleted while "
         "queued) in %.1f s: %ld results differ from the serial runs, %ld errors; device bytes "
         "in use %lld before, %lld after; anvil heap blocks %lld before the client, %lld at the "
         "end of the soak, %lld once it is destroyed; process RSS %ld KiB before, %ld KiB at the end of the soak\n",
         THREADS, s.executes_per_thread, (long)atomic_load(&s.executions),
         (long)atomic_load(&s.deleted_early), took, (long)atomic_load(&s.mismatches),
         (long)atomic_load(&s.errors), in_use_before, in_use_after, live_before, live_soak, live_after,
         rss_before, rss_soak);
  fflush(stdout);
  assert_int_equal(atomic_load(&s.mismatches), 0);
  assert_int_equal(atomic_load(&s.errors), 0);
  assert_int_equal(in_use_after, in_use_before);
  assert_int_equal(live_after, live_before);
}

/* The parts of a 2-replica all_reduce launched one at a time from one thread with
 * execute_device (as a framework's sharded execution does): the first Execute must return
 * at once, not wait inside for the part that only the next call launches. */
static void test_parts_launched_from_one_thread(void **state) {
  (void)state;
  PJRT_Client *c;
  CHECK_OK(run_client(2, &c));
  PJRT_LoadedExecutable *exe;
  CHECK_OK(run_compile_replicas(c, "mlir", allreduce_text, strlen(allreduce_text), 2, &exe));
  PJRT_Buffer *in[2];
  PJRT_Buffer *out[2] = {0};
  PJRT_Event *done[2] = {0};
  for (int d = 0; d < 2; d++)
    CHECK_OK(run_upload(c, client_device(c, (size_t)d), &programs[4].inputs[0], d, &in[d]));
  double t0 = now_s();
  for (int d = 0; d < 2; d++) {
    PJRT_Buffer *const *args[1] = {&in[d]};
    PJRT_Buffer **outs[1] = {&out[d]};
    PJRT_ExecuteOptions o = {.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE};
    PJRT_LoadedExecutable_Execute_Args a = {
        .struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE,
        .executable = exe,
        .options = &o,
        .argument_lists = args,
        .num_devices = 1,
        .num_args = 1,
        .output_lists = outs,
        .device_complete_events = &done[d],
        .execute_device = client_device(c, (size_t)d)};
    CHECK_OK(api->PJRT_LoadedExecutable_Execute(&a));
  }
  for (int d = 0; d < 2; d++) CHECK_OK(run_await(done[d]));
  double took = now_s() - t0;
  /* out = (x0 + x1) * x_d, for the pattern run_fill writes */
  enum { N = 32768 };
  static float x[2][N], got[N];
  for (int d = 0; d < 2; d++) run_fill(&programs[4].inputs[0], d, x[d], N);
  for (int d = 0; d < 2; d++) {
    PJRT_Buffer_ToHostBuffer_Args t = {.struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE,
                                       .src = out[d],
                                       .dst = got,
                                       .dst_size = sizeof got};
    CHECK_OK(api->PJRT_Buffer_ToHostBuffer(&t));
    CHECK_OK(run_await(t.event));
    for (int i = 0; i < N; i++) assert_true(got[i] == (x[0][i] + x[1][i]) * x[d][i]);
    buffer_destroy(out[d]);
    buffer_destroy(in[d]);
  }
  assert_true(took < 60); /* the collective's default timeout is 120 s */
  run_destroy_exe(exe);
  destroy_client(c);
}

static PJRT_Error *execute_part(PJRT_LoadedExecutable *exe, PJRT_Client *c, int d,
                                PJRT_Buffer *in, PJRT_Buffer **out, PJRT_Event **done) {
  PJRT_Buffer *const *args[1] = {&in};
  PJRT_Buffer **outs[1] = {out};
  PJRT_ExecuteOptions o = {.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE};
  PJRT_LoadedExecutable_Execute_Args a = {
      .struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE,
      .executable = exe,
      .options = &o,
      .argument_lists = args,
      .num_devices = 1,
      .num_args = 1,
      .output_lists = outs,
      .device_complete_events = done,
      .execute_device = client_device(c, (size_t)d)};
  return api->PJRT_LoadedExecutable_Execute(&a);
}

/* Only one part of a 2-replica all_reduce is ever launched (found by fuzz_pjrt: its
 * collective waited for the other part, and the awaiting caller with it, for 120 s whatever
 * the client was told). The part fails with DEADLINE_EXCEEDED after the client's
 * collective_timeout_s (here 1 s), its output carries the error, and the executable works
 * when both parts come afterwards; nothing is left behind. */
static void test_lone_part_times_out(void **state) {
  (void)state;
  long long allocs, injected, live_before, live_after;
  oom_counts(&allocs, &injected, &live_before);
  PJRT_NamedValue opts[2] = {{.struct_size = PJRT_NamedValue_STRUCT_SIZE,
                              .name = "device_count",
                              .name_size = 12,
                              .type = PJRT_NamedValue_kInt64,
                              .int64_value = 2,
                              .value_size = 1},
                             {.struct_size = PJRT_NamedValue_STRUCT_SIZE,
                              .name = "collective_timeout_s",
                              .name_size = 20,
                              .type = PJRT_NamedValue_kInt64,
                              .int64_value = 1,
                              .value_size = 1}};
  PJRT_Client *c = make_client_opts(opts, 2);
  PJRT_LoadedExecutable *exe;
  CHECK_OK(run_compile_replicas(c, "mlir", allreduce_text, strlen(allreduce_text), 2, &exe));
  PJRT_Buffer *in[2];
  for (int d = 0; d < 2; d++)
    CHECK_OK(run_upload(c, client_device(c, (size_t)d), &programs[4].inputs[0], d, &in[d]));
  PJRT_Buffer *lone = NULL;
  PJRT_Event *lone_done = NULL;
  CHECK_OK(execute_part(exe, c, 1, in[1], &lone, &lone_done));
  EXPECT_ERROR(run_await(lone_done), PJRT_Error_Code_DEADLINE_EXCEEDED,
               "timed out after 1 s waiting for 1 more of its 2 participants");
  unsigned char *bytes = NULL;
  size_t size = 0;
  PJRT_Error *e = run_download(lone, &bytes, &size);
  free(bytes);
  EXPECT_ERROR(e, PJRT_Error_Code_DEADLINE_EXCEEDED, "timed out");
  buffer_destroy(lone);
  /* both parts now: the rendezvous the lone part left is clean */
  PJRT_Buffer *out[2] = {0};
  PJRT_Event *done[2] = {0};
  for (int d = 0; d < 2; d++) CHECK_OK(execute_part(exe, c, d, in[d], &out[d], &done[d]));
  for (int d = 0; d < 2; d++) CHECK_OK(run_await(done[d]));
  enum { N = 32768 };
  static float x[2][N], got[N];
  for (int d = 0; d < 2; d++) run_fill(&programs[4].inputs[0], d, x[d], N);
  for (int d = 0; d < 2; d++) {
    PJRT_Buffer_ToHostBuffer_Args t = {.struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE,
                                       .src = out[d],
                                       .dst = got,
                                       .dst_size = sizeof got};
    CHECK_OK(api->PJRT_Buffer_ToHostBuffer(&t));
    CHECK_OK(run_await(t.event));
    for (int i = 0; i < N; i++) assert_true(got[i] == (x[0][i] + x[1][i]) * x[d][i]);
    buffer_destroy(out[d]);
    buffer_destroy(in[d]);
  }
  run_destroy_exe(exe);
  destroy_client(c);
  oom_counts(&allocs, &injected, &live_after);
  assert_int_equal(live_after, live_before);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_soak),
                                     cmocka_unit_test(test_parts_launched_from_one_thread),
                                     cmocka_unit_test(test_lone_part_times_out)};
  return cmocka_run_group_tests(tests, load_soak_api, NULL);
}
