/* PJRT_Event: a reference-counted, thread-safe one-shot completion with an optional error.
 *
 * Every PJRT_Event* handed to the framework owns one reference (PJRT_Event_Destroy drops it);
 * whoever will set the event holds another, so destroying a handle while work is pending is
 * safe. Callbacks run exactly once, outside the lock: on the setter's thread, or at once on
 * the caller's thread when the event is already ready (the callback may then destroy the
 * event: nothing touches it after the callback returns). */
#include <stdlib.h>
#include <string.h>

#include "pjrt/pjrt_internal.h"

PJRT_Event *av_event_create(void) {
  PJRT_Event *e = calloc(1, sizeof *e);
  if (!e) return NULL;
  pthread_mutex_init(&e->mu, NULL);
  pthread_cond_init(&e->cv, NULL);
  e->refs = 1;
  return e;
}

PJRT_Event *av_event_create_ready(PJRT_Error *error) {
  PJRT_Event *e = av_event_create();
  if (!e) {
    av_error_free(error);
    return NULL;
  }
  e->ready = true;
  e->error = error;
  return e;
}

PJRT_Event *av_event_retain(PJRT_Event *e) {
  if (!e) return NULL;
  pthread_mutex_lock(&e->mu);
  e->refs++;
  pthread_mutex_unlock(&e->mu);
  return e;
}

void av_event_release(PJRT_Event *e) {
  if (!e) return;
  pthread_mutex_lock(&e->mu);
  int left = --e->refs;
  pthread_mutex_unlock(&e->mu);
  if (left > 0) return;
  /* Callbacks still registered on a never-set event are dropped (their owner is gone). */
  for (av_event_cb *cb = e->callbacks; cb;) {
    av_event_cb *next = cb->next;
    free(cb);
    cb = next;
  }
  av_error_free(e->error);
  pthread_cond_destroy(&e->cv);
  pthread_mutex_destroy(&e->mu);
  free(e);
}

static void run_callback(av_event_cb *cb, const PJRT_Error *error) {
  if (cb->user_fn)
    cb->user_fn(av_error_copy(error), cb->user_arg); /* the framework owns its copy */
  else
    cb->fn(cb->ctx, error);
  free(cb);
}

void av_event_set(PJRT_Event *e, PJRT_Error *error) {
  pthread_mutex_lock(&e->mu);
  if (e->ready) {
    pthread_mutex_unlock(&e->mu);
    av_error_free(error);
    return;
  }
  e->ready = true;
  e->error = error;
  av_event_cb *cbs = e->callbacks;
  e->callbacks = NULL;
  e->refs++; /* keep the event (and its error) alive while callbacks run */
  pthread_cond_broadcast(&e->cv);
  pthread_mutex_unlock(&e->mu);
  /* Registration pushes to the front; run in registration order. */
  av_event_cb *rev = NULL;
  while (cbs) {
    av_event_cb *next = cbs->next;
    cbs->next = rev;
    rev = cbs;
    cbs = next;
  }
  while (rev) {
    av_event_cb *next = rev->next;
    run_callback(rev, e->error);
    rev = next;
  }
  av_event_release(e);
}

PJRT_Error *av_event_wait(PJRT_Event *e) {
  pthread_mutex_lock(&e->mu);
  while (!e->ready) pthread_cond_wait(&e->cv, &e->mu);
  PJRT_Error *copy = av_error_copy(e->error);
  pthread_mutex_unlock(&e->mu);
  return copy;
}

bool av_event_is_ready(PJRT_Event *e) {
  pthread_mutex_lock(&e->mu);
  bool r = e->ready;
  pthread_mutex_unlock(&e->mu);
  return r;
}

static PJRT_Error *add_callback(PJRT_Event *e, av_event_cb *cb) {
  pthread_mutex_lock(&e->mu);
  if (!e->ready) {
    cb->next = e->callbacks;
    e->callbacks = cb;
    pthread_mutex_unlock(&e->mu);
    return NULL;
  }
  /* Ready: e->error is immutable from now on, but the callback may drop the last reference
   * to `e`, so take what it needs first. */
  PJRT_Error *copy = av_error_copy(e->error);
  pthread_mutex_unlock(&e->mu);
  run_callback(cb, copy);
  av_error_free(copy);
  return NULL;
}

PJRT_Error *av_event_on_ready(PJRT_Event *e, av_event_fn fn, void *ctx) {
  av_event_cb *cb = calloc(1, sizeof *cb);
  if (!cb) return av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory (event callback)");
  cb->fn = fn;
  cb->ctx = ctx;
  return add_callback(e, cb);
}

/* ------------------------------------------------------------ entry points */

PJRT_Error *av_PJRT_Event_Destroy(PJRT_Event_Destroy_Args *args) {
  AV_ARGS(args, PJRT_Event_Destroy_Args);
  av_event_release(args->event);
  return NULL;
}

PJRT_Error *av_PJRT_Event_IsReady(PJRT_Event_IsReady_Args *args) {
  AV_ARGS(args, PJRT_Event_IsReady_Args);
  AV_REQUIRE(args->event, AV_INVALID_ARGUMENT, "PJRT_Event_IsReady: event is NULL");
  args->is_ready = av_event_is_ready(args->event);
  return NULL;
}

/* The event's error (a copy the caller owns), NULL if it succeeded. Only meaningful once
 * ready; before that we report FAILED_PRECONDITION rather than block. */
PJRT_Error *av_PJRT_Event_Error(PJRT_Event_Error_Args *args) {
  AV_ARGS(args, PJRT_Event_Error_Args);
  AV_REQUIRE(args->event, AV_INVALID_ARGUMENT, "PJRT_Event_Error: event is NULL");
  PJRT_Event *e = args->event;
  pthread_mutex_lock(&e->mu);
  bool ready = e->ready;
  PJRT_Error *copy = ready ? av_error_copy(e->error) : NULL;
  pthread_mutex_unlock(&e->mu);
  if (!ready)
    return av_error_new(AV_FAILED_PRECONDITION, "PJRT_Event_Error: the event is not ready yet");
  return copy;
}

PJRT_Error *av_PJRT_Event_Await(PJRT_Event_Await_Args *args) {
  AV_ARGS(args, PJRT_Event_Await_Args);
  AV_REQUIRE(args->event, AV_INVALID_ARGUMENT, "PJRT_Event_Await: event is NULL");
  return av_event_wait(args->event);
}

PJRT_Error *av_PJRT_Event_OnReady(PJRT_Event_OnReady_Args *args) {
  AV_ARGS(args, PJRT_Event_OnReady_Args);
  AV_REQUIRE(args->event, AV_INVALID_ARGUMENT, "PJRT_Event_OnReady: event is NULL");
  AV_REQUIRE(args->callback, AV_INVALID_ARGUMENT, "PJRT_Event_OnReady: callback is NULL");
  av_event_cb *cb = calloc(1, sizeof *cb);
  if (!cb) return av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory (event callback)");
  cb->user_fn = args->callback;
  cb->user_arg = args->user_arg;
  return add_callback(args->event, cb);
}

PJRT_Error *av_PJRT_Event_Create(PJRT_Event_Create_Args *args) {
  AV_ARGS(args, PJRT_Event_Create_Args);
  args->event = av_event_create();
  AV_REQUIRE(args->event, AV_RESOURCE_EXHAUSTED, "anvil: out of memory (event)");
  return NULL;
}

PJRT_Error *av_PJRT_Event_Set(PJRT_Event_Set_Args *args) {
  AV_ARGS(args, PJRT_Event_Set_Args);
  AV_REQUIRE(args->event, AV_INVALID_ARGUMENT, "PJRT_Event_Set: event is NULL");
  AV_REQUIRE((unsigned)args->error_code <= PJRT_Error_Code_UNAUTHENTICATED, AV_INVALID_ARGUMENT,
             "PJRT_Event_Set: invalid error_code %d", (int)args->error_code);
  AV_REQUIRE(args->error_message || args->error_message_size == 0, AV_INVALID_ARGUMENT,
             "PJRT_Event_Set: error_message is NULL but error_message_size is %zu",
             args->error_message_size);
  PJRT_Error *err = NULL;
  if (args->error_code != PJRT_Error_Code_OK)
    err = av_error_from_msg((av_code)args->error_code, args->error_message,
                            args->error_message_size);
  pthread_mutex_lock(&args->event->mu);
  bool already = args->event->ready;
  pthread_mutex_unlock(&args->event->mu);
  if (already) {
    av_error_free(err);
    return av_error_new(AV_FAILED_PRECONDITION, "PJRT_Event_Set: the event is already set");
  }
  av_event_set(args->event, err);
  return NULL;
}
