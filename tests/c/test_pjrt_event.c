/* Events: Create/Set, Await, IsReady, Error, OnReady from another thread and from inside,
 * destroying the event inside its own callback (what the framework's futures do). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <unistd.h>

#include "test_pjrt_util.h"

static PJRT_Event *new_event(void) {
  PJRT_Event_Create_Args a = {.struct_size = PJRT_Event_Create_Args_STRUCT_SIZE};
  CHECK_OK(api->PJRT_Event_Create(&a));
  assert_non_null(a.event);
  return a.event;
}

static PJRT_Error *set_event(PJRT_Event *e, PJRT_Error_Code code, const char *msg) {
  PJRT_Event_Set_Args a = {.struct_size = PJRT_Event_Set_Args_STRUCT_SIZE,
                           .event = e,
                           .error_code = code,
                           .error_message = msg,
                           .error_message_size = msg ? strlen(msg) : 0};
  return api->PJRT_Event_Set(&a);
}

typedef struct {
  pthread_mutex_t mu;
  int calls;
  PJRT_Error_Code code;
  char msg[128];
  pthread_t thread;
  PJRT_Event *destroy_me; /* destroyed from inside the callback when set */
} cb_record;

static void record_cb(PJRT_Error *error, void *arg) {
  cb_record *r = arg;
  pthread_mutex_lock(&r->mu);
  r->calls++;
  r->thread = pthread_self();
  r->code = PJRT_Error_Code_OK;
  r->msg[0] = '\0';
  if (error) { /* the callback owns the error */
    r->code = err_code(error);
    size_t n;
    const char *m = err_msg(error, &n);
    snprintf(r->msg, sizeof r->msg, "%.*s", (int)n, m);
    err_free(error);
  }
  PJRT_Event *d = r->destroy_me;
  r->destroy_me = NULL;
  pthread_mutex_unlock(&r->mu);
  if (d) event_destroy(d);
}

static void on_ready(PJRT_Event *e, cb_record *r) {
  PJRT_Event_OnReady_Args a = {.struct_size = PJRT_Event_OnReady_Args_STRUCT_SIZE,
                               .event = e,
                               .callback = record_cb,
                               .user_arg = r};
  CHECK_OK(api->PJRT_Event_OnReady(&a));
}

static void test_set_then_await_and_error(void **state) {
  (void)state;
  PJRT_Event *e = new_event();
  assert_false(event_ready(e));
  PJRT_Event_Error_Args ea = {.struct_size = PJRT_Event_Error_Args_STRUCT_SIZE, .event = e};
  EXPECT_ERROR(api->PJRT_Event_Error(&ea), PJRT_Error_Code_FAILED_PRECONDITION, "not ready");
  CHECK_OK(set_event(e, PJRT_Error_Code_INTERNAL, "disk on fire"));
  assert_true(event_ready(e));
  EXPECT_ERROR(api->PJRT_Event_Error(&ea), PJRT_Error_Code_INTERNAL, "disk on fire");
  /* Each call returns a fresh copy. */
  EXPECT_ERROR(api->PJRT_Event_Error(&ea), PJRT_Error_Code_INTERNAL, "disk on fire");
  PJRT_Event_Await_Args aw = {.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE, .event = e};
  EXPECT_ERROR(api->PJRT_Event_Await(&aw), PJRT_Error_Code_INTERNAL, "disk on fire");
  EXPECT_ERROR(set_event(e, PJRT_Error_Code_OK, NULL), PJRT_Error_Code_FAILED_PRECONDITION,
               "already set");
  event_destroy(e);

  PJRT_Event *ok = new_event();
  CHECK_OK(set_event(ok, PJRT_Error_Code_OK, NULL));
  event_await(ok);
  PJRT_Event_Error_Args eo = {.struct_size = PJRT_Event_Error_Args_STRUCT_SIZE, .event = ok};
  CHECK_OK(api->PJRT_Event_Error(&eo));
  event_destroy(ok);
}

static void test_on_ready_already_ready_runs_inline(void **state) {
  (void)state;
  PJRT_Event *e = new_event();
  CHECK_OK(set_event(e, PJRT_Error_Code_OK, NULL));
  cb_record r = {.mu = PTHREAD_MUTEX_INITIALIZER};
  r.destroy_me = e; /* the framework destroys the event inside its callback */
  on_ready(e, &r);
  assert_int_equal(r.calls, 1);
  assert_true(pthread_equal(r.thread, pthread_self()));
  assert_int_equal(r.code, PJRT_Error_Code_OK);
}

typedef struct {
  PJRT_Event *e;
  int delay_us;
} setter_arg;

static void *setter(void *p) {
  setter_arg *s = p;
  usleep((useconds_t)s->delay_us);
  PJRT_Error *err = set_event(s->e, PJRT_Error_Code_ABORTED, "stopped");
  if (err) err_free(err);
  return NULL;
}

static void test_on_ready_from_another_thread(void **state) {
  (void)state;
  PJRT_Event *e = new_event();
  cb_record r1 = {.mu = PTHREAD_MUTEX_INITIALIZER};
  cb_record r2 = {.mu = PTHREAD_MUTEX_INITIALIZER};
  on_ready(e, &r1);
  on_ready(e, &r2);
  r2.destroy_me = e; /* last callback destroys the handle while the setter still runs */
  assert_int_equal(r1.calls, 0);
  setter_arg s = {.e = e, .delay_us = 20000};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, setter, &s), 0);
  pthread_join(t, NULL);
  assert_int_equal(r1.calls, 1);
  assert_int_equal(r2.calls, 1);
  assert_true(pthread_equal(r1.thread, t));
  assert_int_equal(r1.code, PJRT_Error_Code_ABORTED);
  assert_string_equal(r1.msg, "stopped");
  assert_int_equal(r2.code, PJRT_Error_Code_ABORTED);
}

static void test_await_blocks_until_set(void **state) {
  (void)state;
  PJRT_Event *e = new_event();
  setter_arg s = {.e = e, .delay_us = 30000};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, setter, &s), 0);
  PJRT_Event_Await_Args aw = {.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE, .event = e};
  EXPECT_ERROR(api->PJRT_Event_Await(&aw), PJRT_Error_Code_ABORTED, "stopped");
  assert_true(event_ready(e));
  pthread_join(t, NULL);
  event_destroy(e);
}

/* Many racing waiters and callback registrations against one setter. */
typedef struct {
  PJRT_Event *e;
  cb_record rec;
} racer;

static void *race_register(void *p) {
  racer *r = p;
  on_ready(r->e, &r->rec);
  return NULL;
}

static void test_race_callbacks_run_exactly_once(void **state) {
  (void)state;
  enum { K = 8 };
  for (int round = 0; round < 20; round++) {
    PJRT_Event *e = new_event();
    racer rs[K];
    pthread_t ts[K];
    for (int i = 0; i < K; i++) {
      memset(&rs[i], 0, sizeof rs[i]);
      pthread_mutex_init(&rs[i].rec.mu, NULL);
      rs[i].e = e;
      assert_int_equal(pthread_create(&ts[i], NULL, race_register, &rs[i]), 0);
    }
    CHECK_OK(set_event(e, PJRT_Error_Code_OK, NULL));
    for (int i = 0; i < K; i++) pthread_join(ts[i], NULL);
    for (int i = 0; i < K; i++) {
      assert_int_equal(rs[i].rec.calls, 1);
      pthread_mutex_destroy(&rs[i].rec.mu);
    }
    event_destroy(e);
  }
}

static void test_set_bad_arguments(void **state) {
  (void)state;
  PJRT_Event *e = new_event();
  EXPECT_ERROR(set_event(e, (PJRT_Error_Code)99, "x"), PJRT_Error_Code_INVALID_ARGUMENT,
               "invalid error_code 99");
  PJRT_Event_Set_Args a = {.struct_size = PJRT_Event_Set_Args_STRUCT_SIZE,
                           .event = e,
                           .error_code = PJRT_Error_Code_INTERNAL,
                           .error_message = NULL,
                           .error_message_size = 5};
  EXPECT_ERROR(api->PJRT_Event_Set(&a), PJRT_Error_Code_INVALID_ARGUMENT, "error_message is NULL");
  PJRT_Event_OnReady_Args o = {.struct_size = PJRT_Event_OnReady_Args_STRUCT_SIZE, .event = e};
  EXPECT_ERROR(api->PJRT_Event_OnReady(&o), PJRT_Error_Code_INVALID_ARGUMENT, "callback is NULL");
  /* Destroying a never-set event with a registered callback is safe (callback dropped). */
  cb_record r = {.mu = PTHREAD_MUTEX_INITIALIZER};
  on_ready(e, &r);
  event_destroy(e);
  assert_int_equal(r.calls, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_set_then_await_and_error),
      cmocka_unit_test(test_on_ready_already_ready_runs_inline),
      cmocka_unit_test(test_on_ready_from_another_thread),
      cmocka_unit_test(test_await_blocks_until_set),
      cmocka_unit_test(test_race_callbacks_run_exactly_once),
      cmocka_unit_test(test_set_bad_arguments),
  };
  return cmocka_run_group_tests(tests, load_api, NULL);
}
