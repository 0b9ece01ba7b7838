/* anvil-cts: concurrency — many threads transferring, executing and creating clients at once.
 * The PJRT C API is thread-safe: any function may be called from any thread. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cts.h"

enum { kThreads = 8 };

typedef struct {
  cts_ctx ctx; /* per-thread message buffer */
  PJRT_Client *c;
  PJRT_Device *d;
  PJRT_LoadedExecutable *exe;
  const cts_program *prog;
  int index;
  cts_status status;
} worker;

static cts_status join_all(cts_ctx *t, pthread_t *th, worker *w, int n) {
  for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < n; i++)
    if (w[i].status != CTS_PASS) {
      snprintf(t->msg, sizeof t->msg, "thread %d: %.1900s", i, w[i].ctx.msg);
      return w[i].status;
    }
  return CTS_PASS;
}

static cts_status transfer_loop(worker *w) {
  cts_ctx *t = &w->ctx;
  for (int iter = 0; iter < 40; iter++) {
    int32_t host[257], back[257];
    for (int i = 0; i < 257; i++) host[i] = w->index * 100000 + iter * 1000 + i;
    const int64_t dims[1] = {257};
    PJRT_Buffer *b;
    CTS_TRY(cts_buffer_from_host(t, w->c, w->d, PJRT_Buffer_Type_S32, dims, 1, host, &b));
    CTS_TRY(cts_to_host(t, b, back, sizeof back));
    if (memcmp(host, back, sizeof host))
      return cts_fail(t, "iteration %d: data came back different", iter);
    cts_buffer_destroy(t, b);
  }
  return CTS_PASS;
}

static void *transfer_thread(void *p) {
  worker *w = p;
  w->status = transfer_loop(w);
  return NULL;
}

static cts_status make_workers(cts_ctx *t, worker *w, PJRT_Client **c) {
  CTS_TRY(cts_client_create(t, c));
  PJRT_Device *const *ad;
  size_t n;
  CTS_TRY(cts_addressable_devices(t, *c, &ad, &n));
  for (int i = 0; i < kThreads; i++) {
    memset(&w[i], 0, sizeof w[i]);
    w[i].ctx.api = t->api;
    w[i].c = *c;
    w[i].d = ad[(size_t)i % n]; /* spread over the devices */
    w[i].index = i;
  }
  return CTS_PASS;
}

CTS_CHECK(cts_concurrent_transfers) {
  worker w[kThreads];
  PJRT_Client *c;
  CTS_TRY(make_workers(t, w, &c));
  pthread_t th[kThreads];
  for (int i = 0; i < kThreads; i++) pthread_create(&th[i], NULL, transfer_thread, &w[i]);
  CTS_TRY(join_all(t, th, w, kThreads));
  cts_client_destroy(t, c);
  return CTS_PASS;
}

static cts_status execute_loop(worker *w) {
  cts_ctx *t = &w->ctx;
  for (int iter = 0; iter < 20; iter++) {
    float a[4], b[4], want[4];
    for (int i = 0; i < 4; i++) {
      a[i] = (float)(w->index * 10 + iter);
      b[i] = (float)i - 1.5f;
    }
    cts_expected(w->prog, a, b, want);
    PJRT_Buffer *args[2], *out[1] = {NULL};
    CTS_TRY(cts_f32_buffer(t, w->c, w->d, a, 4, &args[0]));
    CTS_TRY(cts_f32_buffer(t, w->c, w->d, b, 4, &args[1]));
    CTS_TRY(cts_execute1(t, w->exe, args, 2, out, NULL));
    CTS_TRY(cts_expect_f32(t, out[0], want, 4, "concurrent execution"));
    for (int i = 0; i < 2; i++) cts_buffer_destroy(t, args[i]);
    cts_buffer_destroy(t, out[0]);
  }
  return CTS_PASS;
}

static void *execute_thread(void *p) {
  worker *w = p;
  w->status = execute_loop(w);
  return NULL;
}

CTS_CHECK(cts_concurrent_execute) {
  /* One executable (compiled for device 0), executed by all threads at once. */
  worker w[kThreads];
  PJRT_Client *c;
  CTS_TRY(make_workers(t, w, &c));
  PJRT_LoadedExecutable *exe;
  const cts_program *p;
  CTS_TRY(cts_compile_any(t, c, &exe, &p));
  pthread_t th[kThreads];
  for (int i = 0; i < kThreads; i++) {
    w[i].exe = exe;
    w[i].prog = p;
    w[i].d = w[0].d;
    pthread_create(&th[i], NULL, execute_thread, &w[i]);
  }
  CTS_TRY(join_all(t, th, w, kThreads));
  cts_executable_destroy(t, exe);
  cts_client_destroy(t, c);
  return CTS_PASS;
}

static cts_status mixed_loop(worker *w) {
  /* Odd threads transfer while even threads execute; results checked by each thread. */
  return (w->index % 2) ? transfer_loop(w) : execute_loop(w);
}

static void *mixed_thread(void *p) {
  worker *w = p;
  w->status = mixed_loop(w);
  return NULL;
}

CTS_CHECK(cts_concurrent_mixed) {
  worker w[kThreads];
  PJRT_Client *c;
  CTS_TRY(make_workers(t, w, &c));
  PJRT_LoadedExecutable *exe;
  const cts_program *p;
  CTS_TRY(cts_compile_any(t, c, &exe, &p));
  pthread_t th[kThreads];
  for (int i = 0; i < kThreads; i++) {
    w[i].exe = exe;
    w[i].prog = p;
    w[i].d = w[0].d;
    pthread_create(&th[i], NULL, mixed_thread, &w[i]);
  }
  CTS_TRY(join_all(t, th, w, kThreads));
  cts_executable_destroy(t, exe);
  cts_client_destroy(t, c);
  return CTS_PASS;
}

static void *client_thread(void *p) {
  worker *w = p;
  cts_ctx *t = &w->ctx;
  w->status = CTS_PASS;
  for (int i = 0; i < 5 && w->status == CTS_PASS; i++) {
    PJRT_Client *c;
    w->status = cts_client_create(t, &c);
    if (w->status != CTS_PASS) break;
    PJRT_Device *const *ad;
    size_t n;
    w->status = cts_addressable_devices(t, c, &ad, &n);
    cts_client_destroy(t, c);
  }
  return NULL;
}

CTS_CHECK(cts_concurrent_clients) {
  enum { kClientThreads = 4 };
  worker w[kClientThreads];
  pthread_t th[kClientThreads];
  for (int i = 0; i < kClientThreads; i++) {
    memset(&w[i], 0, sizeof w[i]);
    w[i].ctx.api = t->api;
    pthread_create(&th[i], NULL, client_thread, &w[i]);
  }
  return join_all(t, th, w, kClientThreads);
}
