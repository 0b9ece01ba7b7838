/* XLA_FFI_Future: how an asynchronous handler tells the runtime its results are ready.
 *
 * The handler creates a future (Future_Create), stores it in call_frame->future, returns, and
 * completes it later from any thread (SetAvailable, or SetError handing over an error). The
 * step waits for it on the executing thread, so the call's buffers and attributes stay alive
 * until then (trap 12). Two references: the handler's, dropped when it completes the future,
 * and the runtime's, dropped when the wait is over; whichever goes last frees it. Like
 * errors, a future is trusted only while it is on the live list. */
#include <pthread.h>
#include <stdlib.h>

#include "runtime/ffi/ffi.h"

struct av_xffi_future {
  pthread_mutex_t mu;
  pthread_cond_t done_cv;
  bool done;
  av_xffi_error *error; /* SetError's, until the waiter takes it */
  int refs;             /* under live_mu */
  av_xffi_future *prev, *next;
};

static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static av_xffi_future *live;

static bool is_live_locked(const av_xffi_future *f) {
  for (const av_xffi_future *x = live; x; x = x->next)
    if (x == f) return true;
  return false;
}

bool av_ffi_future_is_live(const av_xffi_future *f) {
  if (!f) return false;
  pthread_mutex_lock(&live_mu);
  bool ok = is_live_locked(f);
  pthread_mutex_unlock(&live_mu);
  return ok;
}

av_xffi_future *av_ffi_future_new(void) {
  av_xffi_future *f = calloc(1, sizeof *f);
  if (!f) return NULL;
  pthread_mutex_init(&f->mu, NULL);
  pthread_cond_init(&f->done_cv, NULL);
  f->refs = 2;
  pthread_mutex_lock(&live_mu);
  f->next = live;
  if (live) live->prev = f;
  live = f;
  pthread_mutex_unlock(&live_mu);
  return f;
}

/* Drops one reference (the future must be live); the last one frees it. */
static void future_unref(av_xffi_future *f) {
  pthread_mutex_lock(&live_mu);
  bool last = --f->refs == 0;
  if (last) {
    if (f->prev) f->prev->next = f->next;
    else live = f->next;
    if (f->next) f->next->prev = f->prev;
  }
  pthread_mutex_unlock(&live_mu);
  if (!last) return;
  pthread_cond_destroy(&f->done_cv);
  pthread_mutex_destroy(&f->mu);
  free(f);
}

av_xffi_error *av_ffi_future_wait(av_xffi_future *f) {
  pthread_mutex_lock(&f->mu);
  while (!f->done) pthread_cond_wait(&f->done_cv, &f->mu);
  av_xffi_error *e = f->error;
  f->error = NULL;
  pthread_mutex_unlock(&f->mu);
  future_unref(f);
  return e;
}

bool av_ffi_future_complete(av_xffi_future *f, av_xffi_error *err) {
  /* the handler's reference keeps it live until this call drops it */
  if (!av_ffi_future_is_live(f)) return false;
  pthread_mutex_lock(&f->mu);
  bool first = !f->done;
  if (first) {
    f->done = true;
    f->error = err;
    pthread_cond_broadcast(&f->done_cv);
  }
  pthread_mutex_unlock(&f->mu);
  if (first) future_unref(f);
  return first;
}
