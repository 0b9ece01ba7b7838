/* Multi-process clients through the PJRT C API, as a framework drives them: create options
 * (node_id / num_nodes / collective_timeout_s), an in-memory key-value store standing in for the
 * framework's, two clients of one job on two threads (process 0 and 1 of one job, 2 devices
 * each) running all_reduce and all_gather over gloo on loopback, hostile store answers, a peer
 * that never comes, and a peer that goes away. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "test_pjrt_util.h"

/* ------------------------------------------------------ an in-memory key-value store */

typedef struct kv_entry {
  char *key, *value;
  size_t size;
  struct kv_entry *next;
} kv_entry;

typedef struct kv_store {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  kv_entry *head;
} kv_store;

static kv_store store = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL};

static void kv_reset(void) {
  pthread_mutex_lock(&store.mu);
  for (kv_entry *e = store.head, *n; e; e = n) {
    n = e->next;
    free(e->key);
    free(e->value);
    free(e);
  }
  store.head = NULL;
  pthread_mutex_unlock(&store.mu);
}

static kv_entry *kv_find(const char *key, size_t n) {
  for (kv_entry *e = store.head; e; e = e->next)
    if (strlen(e->key) == n && memcmp(e->key, key, n) == 0) return e;
  return NULL;
}

static void kv_set(const char *key, const char *value) {
  kv_entry *e = calloc(1, sizeof *e);
  e->key = strdup(key);
  e->value = strdup(value);
  e->size = strlen(value);
  pthread_mutex_lock(&store.mu);
  e->next = store.head;
  store.head = e;
  pthread_cond_broadcast(&store.cv);
  pthread_mutex_unlock(&store.mu);
}

static void free_value(char *v) { free(v); }

static PJRT_Error *kv_get(PJRT_KeyValueGetCallback_Args *a) {
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  dl.tv_sec += a->timeout_in_ms / 1000;
  dl.tv_nsec += (long)(a->timeout_in_ms % 1000) * 1000000L;
  if (dl.tv_nsec >= 1000000000L) {
    dl.tv_sec++;
    dl.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&store.mu);
  kv_entry *e;
  int rc = 0;
  while (!(e = kv_find(a->key, a->key_size)) && rc != ETIMEDOUT)
    rc = pthread_cond_timedwait(&store.cv, &store.mu, &dl);
  if (!e) {
    pthread_mutex_unlock(&store.mu);
    const char m[] = "key not found before the deadline";
    return (*a->callback_error)(PJRT_Error_Code_DEADLINE_EXCEEDED, m, sizeof m - 1);
  }
  a->value = malloc(e->size + 1);
  memcpy(a->value, e->value, e->size);
  a->value_size = e->size;
  a->value_deleter_callback = free_value;
  pthread_mutex_unlock(&store.mu);
  return NULL;
}

static PJRT_Error *kv_try_get(PJRT_KeyValueTryGetCallback_Args *a) {
  pthread_mutex_lock(&store.mu);
  kv_entry *e = kv_find(a->key, a->key_size);
  if (!e) {
    pthread_mutex_unlock(&store.mu);
    const char m[] = "no such key";
    return (*a->callback_error)(PJRT_Error_Code_NOT_FOUND, m, sizeof m - 1);
  }
  a->value = malloc(e->size + 1);
  memcpy(a->value, e->value, e->size);
  a->value_size = e->size;
  a->value_deleter_callback = free_value;
  pthread_mutex_unlock(&store.mu);
  return NULL;
}

static PJRT_Error *kv_put(PJRT_KeyValuePutCallback_Args *a) {
  pthread_mutex_lock(&store.mu);
  bool exists = kv_find(a->key, a->key_size) != NULL;
  pthread_mutex_unlock(&store.mu);
  if (exists) { /* as JAX's store: no overwriting */
    const char m[] = "key exists";
    return (*a->callback_error)(PJRT_Error_Code_ALREADY_EXISTS, m, sizeof m - 1);
  }
  char key[512], *value = malloc(a->value_size + 1);
  snprintf(key, sizeof key, "%.*s", (int)a->key_size, a->key);
  memcpy(value, a->value, a->value_size);
  value[a->value_size] = '\0';
  kv_entry *e = calloc(1, sizeof *e);
  e->key = strdup(key);
  e->value = value;
  e->size = a->value_size;
  pthread_mutex_lock(&store.mu);
  e->next = store.head;
  store.head = e;
  pthread_cond_broadcast(&store.cv);
  pthread_mutex_unlock(&store.mu);
  return NULL;
}

/* ------------------------------------------------------------------- clients */

static PJRT_NamedValue int_opt(const char *name, int64_t v) {
  return (PJRT_NamedValue){.struct_size = PJRT_NamedValue_STRUCT_SIZE, .name = name,
                           .name_size = strlen(name), .type = PJRT_NamedValue_kInt64,
                           .int64_value = v, .value_size = 1};
}

static PJRT_NamedValue str_opt(const char *name, const char *v) {
  return (PJRT_NamedValue){.struct_size = PJRT_NamedValue_STRUCT_SIZE, .name = name,
                           .name_size = strlen(name), .type = PJRT_NamedValue_kString,
                           .string_value = v, .value_size = strlen(v)};
}

static PJRT_Error *create(int node, int nodes, int timeout_s, bool callbacks, PJRT_Client **out) {
  PJRT_NamedValue opts[5] = {int_opt("device_count", 2), int_opt("node_id", node),
                             int_opt("num_nodes", nodes), int_opt("collective_timeout_s", timeout_s),
                             str_opt("gloo_hostname", "127.0.0.1")};
  PJRT_Client_Create_Args a = {.struct_size = PJRT_Client_Create_Args_STRUCT_SIZE,
                               .create_options = opts, .num_options = 5};
  if (callbacks) {
    a.kv_get_callback = kv_get;
    a.kv_put_callback = kv_put;
    a.kv_try_get_callback = kv_try_get;
  }
  PJRT_Error *e = api->PJRT_Client_Create(&a);
  *out = a.client;
  return e;
}

static const char all_reduce_program[] =
    "module @sum_over_processes {\n"
    "  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
    "    %0 = \"stablehlo.all_reduce\"(%arg0) ({\n"
    "    ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
    "      %s = stablehlo.add %a, %b : tensor<f32>\n"
    "      stablehlo.return %s : tensor<f32>\n"
    "    }) {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>} : (tensor<4xf32>) -> "
    "tensor<4xf32>\n"
    "    return %0 : tensor<4xf32>\n"
    "  }\n"
    "}\n";

static const char all_gather_program[] =
    "module @gather_over_processes {\n"
    "  func.func public @main(%arg0: tensor<4xf32>) -> tensor<16xf32> {\n"
    "    %0 = \"stablehlo.all_gather\"(%arg0) {all_gather_dim = 0 : i64, replica_groups = "
    "dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>} : (tensor<4xf32>) -> tensor<16xf32>\n"
    "    return %0 : tensor<16xf32>\n"
    "  }\n"
    "}\n";

/* the same collective over 8 elements: what a process running another program sends */
static const char all_reduce_8_program[] =
    "module @sum_of_eight {\n"
    "  func.func public @main(%arg0: tensor<8xf32>) -> tensor<8xf32> {\n"
    "    %0 = \"stablehlo.all_reduce\"(%arg0) ({\n"
    "    ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
    "      %s = stablehlo.add %a, %b : tensor<f32>\n"
    "      stablehlo.return %s : tensor<f32>\n"
    "    }) {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>} : (tensor<8xf32>) -> "
    "tensor<8xf32>\n"
    "    return %0 : tensor<8xf32>\n"
    "  }\n"
    "}\n";

/* every other collective across the two processes, plus replica_id */
static const char many_collectives_program[] =
    "module @many_collectives {\n"
    "  func.func public @main(%x: tensor<4xf32>) -> (tensor<ui32>, tensor<4xf32>, tensor<1xf32>, "
    "tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {\n"
    "    %rid = stablehlo.replica_id : tensor<ui32>\n"
    "    %mx = \"stablehlo.all_reduce\"(%x) ({\n"
    "    ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
    "      %m = stablehlo.maximum %a, %b : tensor<f32>\n"
    "      stablehlo.return %m : tensor<f32>\n"
    "    }) {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>} : (tensor<4xf32>) -> "
    "tensor<4xf32>\n"
    "    %rs = \"stablehlo.reduce_scatter\"(%x) ({\n"
    "    ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
    "      %s = stablehlo.add %a, %b : tensor<f32>\n"
    "      stablehlo.return %s : tensor<f32>\n"
    "    }) {scatter_dimension = 0 : i64, replica_groups = dense<[[0, 1, 2, 3]]> : "
    "tensor<1x4xi64>} : (tensor<4xf32>) -> tensor<1xf32>\n"
    "    %cp = \"stablehlo.collective_permute\"(%x) {source_target_pairs = dense<[[0, 1], [1, 2], "
    "[2, 3], [3, 0]]> : tensor<4x2xi64>} : (tensor<4xf32>) -> tensor<4xf32>\n"
    "    %aa = \"stablehlo.all_to_all\"(%x) {split_dimension = 0 : i64, concat_dimension = 0 : i64, "
    "split_count = 4 : i64, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>} : "
    "(tensor<4xf32>) -> tensor<4xf32>\n"
    "    %cb = \"stablehlo.collective_broadcast\"(%x) {replica_groups = dense<[[2, 0, 1, 3]]> : "
    "tensor<1x4xi64>} : (tensor<4xf32>) -> tensor<4xf32>\n"
    "    return %rid, %mx, %rs, %cp, %aa, %cb : tensor<ui32>, tensor<4xf32>, tensor<1xf32>, "
    "tensor<4xf32>, tensor<4xf32>, tensor<4xf32>\n"
    "  }\n"
    "}\n";

static const char four_replicas[] = {0x1a, 0x02, 0x20, 0x04};

static PJRT_LoadedExecutable *compile(PJRT_Client *c, const char *code) {
  PJRT_Program p = {.struct_size = PJRT_Program_STRUCT_SIZE, .code = (char *)code,
                    .code_size = strlen(code), .format = "mlir", .format_size = 4};
  PJRT_Client_Compile_Args a = {.struct_size = PJRT_Client_Compile_Args_STRUCT_SIZE,
                                .client = c, .program = &p, .compile_options = four_replicas,
                                .compile_options_size = sizeof four_replicas};
  CHECK_OK(api->PJRT_Client_Compile(&a));
  return a.executable;
}

static void destroy_exe(PJRT_LoadedExecutable *e) {
  PJRT_LoadedExecutable_Destroy_Args a = {
      .struct_size = PJRT_LoadedExecutable_Destroy_Args_STRUCT_SIZE, .executable = e};
  CHECK_OK(api->PJRT_LoadedExecutable_Destroy(&a));
}

static PJRT_Buffer *upload(PJRT_Client *c, PJRT_Device *d, const float *v, int64_t n) {
  const int64_t dims[1] = {n};
  PJRT_Client_BufferFromHostBuffer_Args a = {
      .struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE, .client = c, .data = v,
      .type = PJRT_Buffer_Type_F32, .dims = dims, .num_dims = 1,
      .host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableOnlyDuringCall, .device = d};
  CHECK_OK(api->PJRT_Client_BufferFromHostBuffer(&a));
  if (a.done_with_host_buffer) event_destroy(a.done_with_host_buffer);
  return a.buffer;
}

static void download(PJRT_Buffer *b, float *v, size_t n) {
  PJRT_Buffer_ToHostBuffer_Args a = {.struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE,
                                     .src = b, .dst = v, .dst_size = n * sizeof *v};
  CHECK_OK(api->PJRT_Buffer_ToHostBuffer(&a));
  event_await(a.event);
  event_destroy(a.event);
}

/* Runs `exe` on this client's two devices: device d's input is 10 * global id + [0 1 2 3].
 * Returns the execution's error (outputs in out[2][n] when OK). */
static PJRT_Error *run_n(PJRT_Client *c, PJRT_LoadedExecutable *exe, int first_id,
                         float (*out)[16], size_t n, int64_t n_in) {
  PJRT_LoadedExecutable_AddressableDevices_Args ad = {
      .struct_size = PJRT_LoadedExecutable_AddressableDevices_Args_STRUCT_SIZE, .executable = exe};
  CHECK_OK(api->PJRT_LoadedExecutable_AddressableDevices(&ad));
  assert_int_equal(ad.num_addressable_devices, 2);
  float x[2][8];
  PJRT_Buffer *in[2][1], *res[2][1];
  PJRT_Buffer *const *args[2] = {in[0], in[1]};
  PJRT_Buffer **outs[2] = {res[0], res[1]};
  PJRT_Event *done[2];
  for (int d = 0; d < 2; d++) {
    for (int i = 0; i < 8; i++) x[d][i] = (float)(10 * (first_id + d) + i);
    in[d][0] = upload(c, ad.addressable_devices[d], x[d], n_in);
  }
  PJRT_ExecuteOptions eo = {.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE};
  PJRT_LoadedExecutable_Execute_Args a = {
      .struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE, .executable = exe,
      .options = &eo, .argument_lists = args, .num_devices = 2, .num_args = 1,
      .output_lists = outs, .device_complete_events = done};
  CHECK_OK(api->PJRT_LoadedExecutable_Execute(&a));
  PJRT_Error *err = NULL;
  for (int d = 0; d < 2; d++) {
    PJRT_Event_Await_Args w = {.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE, .event = done[d]};
    PJRT_Error *e = api->PJRT_Event_Await(&w);
    if (e && !err) err = e;
    else if (e) err_free(e);
    event_destroy(done[d]);
    if (!e) download(res[d][0], out[d], n);
    buffer_destroy(res[d][0]);
    buffer_destroy(in[d][0]);
  }
  return err;
}

static PJRT_Error *run(PJRT_Client *c, PJRT_LoadedExecutable *exe, int first_id, float (*out)[16],
                       size_t n) {
  return run_n(c, exe, first_id, out, n, 4);
}

/* many_collectives_program on this client's two devices; checks every result of device d
 * (global id first_id + d, input x_j[i] = 10 j + i). */
static void run_many(PJRT_Client *c, PJRT_LoadedExecutable *exe, int first_id) {
  PJRT_LoadedExecutable_AddressableDevices_Args ad = {
      .struct_size = PJRT_LoadedExecutable_AddressableDevices_Args_STRUCT_SIZE, .executable = exe};
  CHECK_OK(api->PJRT_LoadedExecutable_AddressableDevices(&ad));
  enum { NOUT = 6 };
  float x[2][4];
  PJRT_Buffer *in[2][1], *res[2][NOUT];
  PJRT_Buffer *const *args[2] = {in[0], in[1]};
  PJRT_Buffer **outs[2] = {res[0], res[1]};
  PJRT_Event *done[2];
  for (int d = 0; d < 2; d++) {
    for (int i = 0; i < 4; i++) x[d][i] = (float)(10 * (first_id + d) + i);
    in[d][0] = upload(c, ad.addressable_devices[d], x[d], 4);
  }
  PJRT_ExecuteOptions eo = {.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE};
  PJRT_LoadedExecutable_Execute_Args a = {
      .struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE, .executable = exe,
      .options = &eo, .argument_lists = args, .num_devices = 2, .num_args = 1,
      .output_lists = outs, .device_complete_events = done};
  CHECK_OK(api->PJRT_LoadedExecutable_Execute(&a));
  for (int d = 0; d < 2; d++) {
    int g = first_id + d;
    event_await(done[d]);
    event_destroy(done[d]);
    uint32_t rid;
    PJRT_Buffer_ToHostBuffer_Args h = {.struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE,
                                       .src = res[d][0], .dst = &rid, .dst_size = sizeof rid};
    CHECK_OK(api->PJRT_Buffer_ToHostBuffer(&h));
    event_await(h.event);
    event_destroy(h.event);
    assert_int_equal(rid, (uint32_t)g);
    float mx[4], rs[1], cp[4], aa[4], cb[4];
    download(res[d][1], mx, 4);
    download(res[d][2], rs, 1);
    download(res[d][3], cp, 4);
    download(res[d][4], aa, 4);
    download(res[d][5], cb, 4);
    assert_true(rs[0] == (float)(60 + 4 * g)); /* element g of the sum of every x_j */
    for (int i = 0; i < 4; i++) {
      assert_true(mx[i] == (float)(30 + i));                  /* x_3 */
      assert_true(cp[i] == (float)(10 * ((g + 3) % 4) + i));  /* from g - 1 */
      assert_true(aa[i] == (float)(10 * i + g));              /* element g of each x_i */
      assert_true(cb[i] == (float)(20 + i));                  /* the group's first: device 2 */
    }
    for (int k = 0; k < NOUT; k++) buffer_destroy(res[d][k]);
    buffer_destroy(in[d][0]);
  }
}

typedef struct peer {
  int node;
  pthread_barrier_t *after_runs; /* both ran; then process 1 goes away */
  pthread_barrier_t *gone;       /* process 1's client is destroyed */
  char failure[2048];            /* process 0's error once its peer is gone */
} peer;

static void *peer_main(void *arg) {
  peer *p = arg;
  PJRT_Client *c;
  CHECK_OK(create(p->node, 2, 3, true, &c));
  /* the job's devices: ids 0-1 in process 0, 2-3 in process 1 */
  PJRT_Client_Devices_Args dv = {.struct_size = PJRT_Client_Devices_Args_STRUCT_SIZE, .client = c};
  CHECK_OK(api->PJRT_Client_Devices(&dv));
  assert_int_equal(dv.num_devices, 4);
  for (size_t i = 0; i < 4; i++) {
    PJRT_Device_GetDescription_Args gd = {
        .struct_size = PJRT_Device_GetDescription_Args_STRUCT_SIZE, .device = dv.devices[i]};
    CHECK_OK(api->PJRT_Device_GetDescription(&gd));
    PJRT_DeviceDescription_Id_Args id = {.struct_size = PJRT_DeviceDescription_Id_Args_STRUCT_SIZE,
                                         .device_description = gd.device_description};
    CHECK_OK(api->PJRT_DeviceDescription_Id(&id));
    PJRT_DeviceDescription_ProcessIndex_Args pi = {
        .struct_size = PJRT_DeviceDescription_ProcessIndex_Args_STRUCT_SIZE,
        .device_description = gd.device_description};
    CHECK_OK(api->PJRT_DeviceDescription_ProcessIndex(&pi));
    PJRT_Device_IsAddressable_Args ia = {
        .struct_size = PJRT_Device_IsAddressable_Args_STRUCT_SIZE, .device = dv.devices[i]};
    CHECK_OK(api->PJRT_Device_IsAddressable(&ia));
    assert_int_equal(id.id, (int)i);
    assert_int_equal(pi.process_index, (int)i / 2);
    assert_int_equal(ia.is_addressable, (int)i / 2 == p->node);
    PJRT_Device_DefaultMemory_Args dm = {
        .struct_size = PJRT_Device_DefaultMemory_Args_STRUCT_SIZE, .device = dv.devices[i]};
    PJRT_Error *e = api->PJRT_Device_DefaultMemory(&dm);
    if (ia.is_addressable) CHECK_OK(e);
    else EXPECT_ERROR(e, PJRT_Error_Code_INVALID_ARGUMENT, "belongs to process");
  }
  PJRT_Client_ProcessIndex_Args pi = {.struct_size = PJRT_Client_ProcessIndex_Args_STRUCT_SIZE,
                                      .client = c};
  CHECK_OK(api->PJRT_Client_ProcessIndex(&pi));
  assert_int_equal(pi.process_index, p->node);
  PJRT_Client_LookupDevice_Args ld = {.struct_size = PJRT_Client_LookupDevice_Args_STRUCT_SIZE,
                                      .client = c, .id = 3};
  CHECK_OK(api->PJRT_Client_LookupDevice(&ld));
  assert_ptr_equal(ld.device, dv.devices[3]);

  PJRT_LoadedExecutable *sum = compile(c, all_reduce_program);
  PJRT_LoadedExecutable *gather = compile(c, all_gather_program);
  float out[2][16];
  for (int round = 0; round < 3; round++) {
    CHECK_OK(run(c, sum, 2 * p->node, out, 4));
    for (int d = 0; d < 2; d++)
      for (int i = 0; i < 4; i++) assert_true(out[d][i] == (float)(60 + 4 * i)); /* 0+10+20+30 */
  }
  CHECK_OK(run(c, gather, 2 * p->node, out, 16));
  for (int d = 0; d < 2; d++)
    for (int i = 0; i < 16; i++) assert_true(out[d][i] == (float)(10 * (i / 4) + i % 4));
  PJRT_LoadedExecutable *many = compile(c, many_collectives_program);
  run_many(c, many, 2 * p->node);
  destroy_exe(many);
  pthread_barrier_wait(p->after_runs);
  if (p->node == 1) { /* goes away without a word */
    destroy_exe(sum);
    destroy_exe(gather);
    destroy_client(c);
    pthread_barrier_wait(p->gone);
    return NULL;
  }
  pthread_barrier_wait(p->gone);
  PJRT_Error *e = run(c, sum, 0, out, 4);
  assert_non_null(e);
  size_t n;
  const char *m = err_msg(e, &n);
  snprintf(p->failure, sizeof p->failure, "%.*s", (int)n, m);
  err_free(e);
  /* the link is broken now: the next one fails at once, with the same story */
  e = run(c, sum, 0, out, 4);
  assert_non_null(e);
  m = err_msg(e, &n);
  assert_non_null(strstr(m, "an earlier cross-process collective failed"));
  err_free(e);
  destroy_exe(sum);
  destroy_exe(gather);
  destroy_client(c); /* still possible */
  return NULL;
}

static void test_two_processes_on_threads(void **state) {
  (void)state;
  kv_reset();
  pthread_barrier_t b1, b2;
  pthread_barrier_init(&b1, NULL, 2);
  pthread_barrier_init(&b2, NULL, 2);
  peer p[2] = {{.node = 0, .after_runs = &b1, .gone = &b2}, {.node = 1, .after_runs = &b1, .gone = &b2}};
  pthread_t t[2];
  for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&t[i], NULL, peer_main, &p[i]), 0);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  pthread_barrier_destroy(&b1);
  pthread_barrier_destroy(&b2);
  /* names the collective, the program and the missing process */
  assert_non_null(strstr(p[0].failure, "all_reduce"));
  assert_non_null(strstr(p[0].failure, "sum_over_processes"));
  assert_non_null(strstr(p[0].failure, "process(es) 1 did not take part"));
}

/* Process 0 runs one program, process 1 another with the same collective over a different
 * size: their exchanges never pair up; both fail at the timeout, saying so. */
typedef struct mismatched {
  int node;
  char failure[2048];
} mismatched;

static void *mismatched_main(void *arg) {
  mismatched *m = arg;
  PJRT_Client *c;
  CHECK_OK(create(m->node, 2, 2, true, &c));
  PJRT_LoadedExecutable *exe = compile(c, m->node ? all_reduce_8_program : all_reduce_program);
  float out[2][16];
  PJRT_Error *e = run_n(c, exe, 2 * m->node, out, m->node ? 8 : 4, m->node ? 8 : 4);
  assert_non_null(e);
  size_t n;
  const char *msg = err_msg(e, &n);
  snprintf(m->failure, sizeof m->failure, "%.*s", (int)n, msg);
  err_free(e);
  destroy_exe(exe);
  destroy_client(c);
  return NULL;
}

static void test_mismatched_programs(void **state) {
  (void)state;
  kv_reset();
  mismatched m[2] = {{.node = 0}, {.node = 1}};
  pthread_t t[2];
  time_t t0 = time(NULL);
  for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&t[i], NULL, mismatched_main, &m[i]), 0);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  assert_true(time(NULL) - t0 < 30);
  for (int i = 0; i < 2; i++) {
    if (!strstr(m[i].failure, "mismatched programs"))
      fail_msg("process %d: %s", i, m[i].failure);
  }
}

static void test_options_are_checked(void **state) {
  (void)state;
  kv_reset();
  PJRT_Client *c;
  EXPECT_ERROR(create(0, 2, 5, false, &c), PJRT_Error_Code_INVALID_ARGUMENT,
               "needs the key-value store callbacks");
  EXPECT_ERROR(create(2, 2, 5, true, &c), PJRT_Error_Code_INVALID_ARGUMENT,
               "node_id = 2 is not below num_nodes = 2");
  EXPECT_ERROR(create(0, 0, 5, true, &c), PJRT_Error_Code_INVALID_ARGUMENT, "out of range");
  EXPECT_ERROR(create(0, 2, 0, true, &c), PJRT_Error_Code_INVALID_ARGUMENT,
               "collective_timeout_s");
  PJRT_NamedValue bad[2] = {int_opt("num_nodes", 1), str_opt("collectives", "carrier-pigeon")};
  PJRT_Client_Create_Args a = {.struct_size = PJRT_Client_Create_Args_STRUCT_SIZE,
                               .create_options = bad, .num_options = 2};
  EXPECT_ERROR(api->PJRT_Client_Create(&a), PJRT_Error_Code_INVALID_ARGUMENT,
               "collectives 'carrier-pigeon'");
  /* one process: no store needed, process index 0 */
  CHECK_OK(create(0, 1, 5, false, &c));
  PJRT_Client_ProcessIndex_Args pi = {.struct_size = PJRT_Client_ProcessIndex_Args_STRUCT_SIZE,
                                      .client = c};
  CHECK_OK(api->PJRT_Client_ProcessIndex(&pi));
  assert_int_equal(pi.process_index, 0);
  PJRT_ProcessInfo info = {.struct_size = PJRT_ProcessInfo_STRUCT_SIZE, .task_id = 7,
                           .state = PJRT_ProcessState_kDisconnected};
  PJRT_Client_UpdateGlobalProcessInfo_Args up = {
      .struct_size = PJRT_Client_UpdateGlobalProcessInfo_Args_STRUCT_SIZE, .client = c,
      .process_infos = &info, .num_process_infos = 1};
  CHECK_OK(api->PJRT_Client_UpdateGlobalProcessInfo(&up));
  info.struct_size = 3;
  EXPECT_ERROR(api->PJRT_Client_UpdateGlobalProcessInfo(&up), PJRT_Error_Code_INVALID_ARGUMENT,
               "struct_size");
  destroy_client(c);
}

static void test_peer_never_arrives(void **state) {
  (void)state;
  kv_reset();
  PJRT_Client *c;
  time_t t0 = time(NULL);
  EXPECT_ERROR(create(0, 2, 1, true, &c), PJRT_Error_Code_DEADLINE_EXCEEDED,
               "process 1 did not publish its devices within 1 s");
  assert_true(time(NULL) - t0 < 10);
}

static void test_hostile_store_answers(void **state) {
  (void)state;
  PJRT_Client *c;
  static const struct {
    const char *value;
    PJRT_Error_Code code;
    const char *msg;
  } cases[] = {
      {"garbage", PJRT_Error_Code_DATA_LOSS, "malformed device description"},
      {"anvil-topology 1 version=0.1.0 devices=99999 host=x", PJRT_Error_Code_DATA_LOSS,
       "says it has 99999 devices"},
      {"anvil-topology 1 version=0.1.0 devices=-3 host=x", PJRT_Error_Code_DATA_LOSS,
       "says it has -3 devices"},
      {"anvil-topology 1 version=0.1.0 devices=2 host=a\tb", PJRT_Error_Code_DATA_LOSS,
       "unexpected characters"},
      {"anvil-topology 1 version=9.9.9 devices=2 host=x", PJRT_Error_Code_FAILED_PRECONDITION,
       "runs anvil 9.9.9"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    kv_reset();
    kv_set("anvil/g0/topology/1", cases[i].value);
    EXPECT_ERROR(create(0, 2, 5, true, &c), cases[i].code, cases[i].msg);
  }
  /* a second client of the same process and job: the next generation of keys, not mixed up
   * with the first's */
  kv_reset();
  kv_set("anvil/g0/topology/0", "anvil-topology 1 version=0.1.0 devices=2 host=x");
  kv_set("anvil/g0/topology/1", "anvil-topology 1 version=0.1.0 devices=1 host=x");
  kv_set("anvil/g1/topology/1", "anvil-topology 1 version=0.1.0 devices=3 host=x");
  CHECK_OK(create(0, 2, 5, true, &c));
  PJRT_Client_Devices_Args dv = {.struct_size = PJRT_Client_Devices_Args_STRUCT_SIZE, .client = c};
  CHECK_OK(api->PJRT_Client_Devices(&dv));
  assert_int_equal(dv.num_devices, 5); /* 2 here + g1's 3, not g0's 1 */
  destroy_client(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_options_are_checked),
      cmocka_unit_test(test_peer_never_arrives),
      cmocka_unit_test(test_hostile_store_answers),
      cmocka_unit_test(test_two_processes_on_threads),
      cmocka_unit_test(test_mismatched_programs),
  };
  return cmocka_run_group_tests(tests, load_api, NULL);
}
