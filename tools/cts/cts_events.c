/* anvil-cts: events — OnReady callbacks (any thread, destroy inside/after), error propagation,
 * Event_Create / Event_Set. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cts.h"

/* Counts callback runs; the callback owns the error it gets and must destroy it. */
typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int calls;
  int errors;
  PJRT_Error_Code last_code;
  cts_ctx *t;
  PJRT_Event *destroy_me; /* destroyed inside the callback when set */
} waiter;

static void waiter_init(waiter *w, cts_ctx *t) {
  memset(w, 0, sizeof *w);
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
  w->t = t;
}

static void on_ready(PJRT_Error *error, void *arg) {
  waiter *w = arg;
  PJRT_Error_Code code = cts_error_code(w->t, error);
  cts_error_free(w->t, error);
  if (w->destroy_me) {
    PJRT_Event_Destroy_Args d = {.struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE,
                                 .event = w->destroy_me};
    cts_error_free(w->t, w->t->api->PJRT_Event_Destroy(&d));
  }
  pthread_mutex_lock(&w->mu);
  w->calls++;
  if (error) w->errors++;
  w->last_code = code;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

/* Waits up to 10 s for `calls` callbacks. */
static bool wait_calls(waiter *w, int calls) {
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 10;
  pthread_mutex_lock(&w->mu);
  while (w->calls < calls)
    if (pthread_cond_timedwait(&w->cv, &w->mu, &deadline) != 0) break;
  bool ok = w->calls >= calls;
  pthread_mutex_unlock(&w->mu);
  return ok;
}

static cts_status on_ready_register(cts_ctx *t, PJRT_Event *ev, waiter *w) {
  PJRT_Event_OnReady_Args a = {.struct_size = PJRT_Event_OnReady_Args_STRUCT_SIZE, .event = ev,
                               .callback = on_ready, .user_arg = w};
  return cts_err(t, t->api->PJRT_Event_OnReady(&a), "PJRT_Event_OnReady");
}

static void event_destroy(cts_ctx *t, PJRT_Event *ev) {
  PJRT_Event_Destroy_Args d = {.struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE, .event = ev};
  cts_error_free(t, t->api->PJRT_Event_Destroy(&d));
}

/* A client, a buffer on its first device, and that buffer's ready event. */
typedef struct {
  PJRT_Client *c;
  PJRT_Buffer *b;
} fixture;

static cts_status ready_event(cts_ctx *t, fixture *f, PJRT_Event **ev) {
  PJRT_Buffer_ReadyEvent_Args r = {.struct_size = PJRT_Buffer_ReadyEvent_Args_STRUCT_SIZE,
                                   .buffer = f->b};
  CTS_TRY(cts_err(t, t->api->PJRT_Buffer_ReadyEvent(&r), "PJRT_Buffer_ReadyEvent"));
  if (!r.event) return cts_fail(t, "NULL ready event");
  *ev = r.event;
  return CTS_PASS;
}

static cts_status fixture_make(cts_ctx *t, fixture *f) {
  CTS_NEED_FN(t, PJRT_Event_OnReady);
  CTS_TRY(cts_client_create(t, &f->c));
  PJRT_Device *const *ad;
  size_t n;
  CTS_TRY(cts_addressable_devices(t, f->c, &ad, &n));
  const float v[4] = {1, 2, 3, 4};
  return cts_f32_buffer(t, f->c, ad[0], v, 4, &f->b);
}

static void fixture_free(cts_ctx *t, fixture *f) {
  cts_buffer_destroy(t, f->b);
  cts_client_destroy(t, f->c);
}

CTS_CHECK(cts_event_on_ready) {
  fixture f;
  CTS_TRY(fixture_make(t, &f));
  PJRT_Event *ev;
  CTS_TRY(ready_event(t, &f, &ev));
  waiter w;
  waiter_init(&w, t);
  CTS_TRY(on_ready_register(t, ev, &w));
  if (!wait_calls(&w, 1)) return cts_fail(t, "callback did not run within 10 s");
  if (w.errors) return cts_fail(t, "callback got an error (%s)", cts_code_name(w.last_code));
  event_destroy(t, ev);
  if (w.calls != 1) return cts_fail(t, "callback ran %d times", w.calls);
  fixture_free(t, &f);
  return CTS_PASS;
}

CTS_CHECK(cts_event_many_callbacks) {
  fixture f;
  CTS_TRY(fixture_make(t, &f));
  PJRT_Event *ev;
  CTS_TRY(ready_event(t, &f, &ev));
  waiter w;
  waiter_init(&w, t);
  for (int i = 0; i < 16; i++) CTS_TRY(on_ready_register(t, ev, &w));
  if (!wait_calls(&w, 16)) return cts_fail(t, "only %d of 16 callbacks ran", w.calls);
  event_destroy(t, ev);
  struct timespec pause = {0, 20 * 1000 * 1000};
  nanosleep(&pause, NULL);
  if (w.calls != 16) return cts_fail(t, "16 callbacks ran %d times in all", w.calls);
  fixture_free(t, &f);
  return CTS_PASS;
}

CTS_CHECK(cts_event_destroy_after_on_ready) {
  /* Destroying the event right after registering must not cancel the callback. */
  fixture f;
  CTS_TRY(fixture_make(t, &f));
  waiter w;
  waiter_init(&w, t);
  for (int i = 0; i < 8; i++) {
    PJRT_Event *ev;
    CTS_TRY(ready_event(t, &f, &ev));
    CTS_TRY(on_ready_register(t, ev, &w));
    event_destroy(t, ev);
  }
  if (!wait_calls(&w, 8)) return cts_fail(t, "%d of 8 callbacks ran", w.calls);
  fixture_free(t, &f);
  return CTS_PASS;
}

CTS_CHECK(cts_event_destroy_in_callback) {
  fixture f;
  CTS_TRY(fixture_make(t, &f));
  PJRT_Event *ev;
  CTS_TRY(ready_event(t, &f, &ev));
  waiter w;
  waiter_init(&w, t);
  w.destroy_me = ev;
  CTS_TRY(on_ready_register(t, ev, &w));
  if (!wait_calls(&w, 1)) return cts_fail(t, "callback did not run within 10 s");
  fixture_free(t, &f);
  return CTS_PASS;
}

typedef struct {
  cts_ctx *t;
  fixture *f;
  waiter *w;
  int failed;
} thread_arg;

static void *register_from_thread(void *p) {
  thread_arg *a = p;
  for (int i = 0; i < 10; i++) {
    PJRT_Event *ev;
    if (ready_event(a->t, a->f, &ev) != CTS_PASS || on_ready_register(a->t, ev, a->w) != CTS_PASS) {
      a->failed = 1;
      return NULL;
    }
    event_destroy(a->t, ev);
  }
  return NULL;
}

CTS_CHECK(cts_event_on_ready_threads) {
  /* OnReady registered from several threads at once; callbacks may run on any thread. */
  fixture f;
  CTS_TRY(fixture_make(t, &f));
  waiter w;
  waiter_init(&w, t);
  enum { kThreads = 6 };
  pthread_t th[kThreads];
  thread_arg args[kThreads];
  for (int i = 0; i < kThreads; i++) {
    args[i] = (thread_arg){t, &f, &w, 0};
    pthread_create(&th[i], NULL, register_from_thread, &args[i]);
  }
  for (int i = 0; i < kThreads; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < kThreads; i++)
    if (args[i].failed) return cts_fail(t, "thread %d: %s", i, t->msg);
  if (!wait_calls(&w, kThreads * 10))
    return cts_fail(t, "%d of %d callbacks ran", w.calls, kThreads * 10);
  fixture_free(t, &f);
  return CTS_PASS;
}

CTS_CHECK(cts_event_error_propagation) {
  /* An error buffer's ready event carries the error to Await, Error and OnReady. */
  CTS_WANT_FN(t, PJRT_Client_CreateErrorBuffer);
  fixture f = {0};
  CTS_TRY(cts_client_create(t, &f.c));
  PJRT_Device *const *ad;
  size_t n;
  CTS_TRY(cts_addressable_devices(t, f.c, &ad, &n));
  PJRT_Device_DefaultMemory_Args dm = {.struct_size = PJRT_Device_DefaultMemory_Args_STRUCT_SIZE,
                                       .device = ad[0]};
  CTS_TRY(cts_err(t, t->api->PJRT_Device_DefaultMemory(&dm), "PJRT_Device_DefaultMemory"));
  const int64_t dims[1] = {4};
  PJRT_Client_CreateErrorBuffer_Args a = {
      .struct_size = PJRT_Client_CreateErrorBuffer_Args_STRUCT_SIZE,
      .client = f.c,
      .error_code = PJRT_Error_Code_DATA_LOSS,
      .error_message = "cts injected",
      .error_message_size = 12,
      .shape_dims = dims,
      .shape_num_dims = 1,
      .shape_element_type = PJRT_Buffer_Type_F32,
      .memory = dm.memory};
  CTS_TRY(cts_err_opt(t, t->api->PJRT_Client_CreateErrorBuffer(&a), "CreateErrorBuffer"));
  f.b = a.buffer;
  PJRT_Event *ev;
  CTS_TRY(ready_event(t, &f, &ev));
  PJRT_Event_Await_Args aw = {.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE, .event = ev};
  PJRT_Error *e = t->api->PJRT_Event_Await(&aw);
  if (cts_error_code(t, e) != PJRT_Error_Code_DATA_LOSS)
    return cts_fail(t, "Await gave %s, expected DATA_LOSS", cts_code_name(cts_error_code(t, e)));
  cts_error_free(t, e);
  PJRT_Event_Error_Args er = {.struct_size = PJRT_Event_Error_Args_STRUCT_SIZE, .event = ev};
  e = t->api->PJRT_Event_Error(&er);
  if (cts_error_code(t, e) != PJRT_Error_Code_DATA_LOSS)
    return cts_fail(t, "Event_Error gave %s", cts_code_name(cts_error_code(t, e)));
  cts_error_free(t, e);
  waiter w;
  waiter_init(&w, t);
  CTS_TRY(on_ready_register(t, ev, &w));
  if (!wait_calls(&w, 1)) return cts_fail(t, "callback did not run");
  if (w.last_code != PJRT_Error_Code_DATA_LOSS)
    return cts_fail(t, "callback got %s", cts_code_name(w.last_code));
  event_destroy(t, ev);
  float sink[4];
  PJRT_Buffer_ToHostBuffer_Args th = {.struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE,
                                      .src = f.b, .dst = sink, .dst_size = sizeof sink};
  e = t->api->PJRT_Buffer_ToHostBuffer(&th);
  if (!e && cts_await_code(t, th.event, NULL, 0) == PJRT_Error_Code_OK)
    return cts_fail(t, "ToHostBuffer of an error buffer succeeded");
  cts_error_free(t, e);
  fixture_free(t, &f);
  return CTS_PASS;
}

CTS_CHECK(cts_event_create_set) {
  CTS_WANT_FN(t, PJRT_Event_Create);
  CTS_WANT_FN(t, PJRT_Event_Set);
  CTS_NEED_FN(t, PJRT_Event_OnReady);
  for (int round = 0; round < 2; round++) {
    PJRT_Event_Create_Args c = {.struct_size = PJRT_Event_Create_Args_STRUCT_SIZE};
    CTS_TRY(cts_err_opt(t, t->api->PJRT_Event_Create(&c), "PJRT_Event_Create"));
    if (!c.event) return cts_fail(t, "NULL event");
    PJRT_Event_IsReady_Args ir = {.struct_size = PJRT_Event_IsReady_Args_STRUCT_SIZE,
                                  .event = c.event};
    CTS_TRY(cts_err(t, t->api->PJRT_Event_IsReady(&ir), "PJRT_Event_IsReady"));
    if (ir.is_ready) return cts_fail(t, "a new event is already ready");
    waiter w;
    waiter_init(&w, t);
    CTS_TRY(on_ready_register(t, c.event, &w));
    PJRT_Error_Code code = round == 0 ? PJRT_Error_Code_OK : PJRT_Error_Code_ABORTED;
    PJRT_Event_Set_Args s = {.struct_size = PJRT_Event_Set_Args_STRUCT_SIZE, .event = c.event,
                             .error_code = code, .error_message = round ? "cts set" : NULL,
                             .error_message_size = round ? 7 : 0};
    CTS_TRY(cts_err_opt(t, t->api->PJRT_Event_Set(&s), "PJRT_Event_Set"));
    if (!wait_calls(&w, 1)) return cts_fail(t, "callback did not run after Set");
    if (w.last_code != code)
      return cts_fail(t, "callback got %s after Set(%s)", cts_code_name(w.last_code),
                      cts_code_name(code));
    char text[256];
    PJRT_Error_Code got = cts_await_code(t, c.event, text, sizeof text);
    if (got != code) return cts_fail(t, "Await gave %s after Set(%s)", cts_code_name(got),
                                     cts_code_name(code));
  }
  return CTS_PASS;
}
