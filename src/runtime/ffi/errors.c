/* XLA_FFI_Error objects, and the status legacy targets report failures through.
 *
 * Errors cross the ABI as opaque pointers: the runtime makes them (Error_Create), handlers
 * return them, and whoever ends up holding one destroys it. A pointer a handler returns is
 * trusted only when it is on the list of live errors made here: anything else (a stale, a
 * foreign or a wild pointer) is reported without being read. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/ffi/ffi.h"

#define STATUS_MAGIC 0x616e76696c537473ull /* "anvilSts" */

struct av_xffi_error {
  int32_t code;
  char *message;
  av_xffi_error *prev, *next; /* the live list */
};

static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static av_xffi_error *live;

static bool is_live_locked(const av_xffi_error *e) {
  for (const av_xffi_error *x = live; x; x = x->next)
    if (x == e) return true;
  return false;
}

bool av_ffi_error_is_live(const av_xffi_error *e) {
  if (!e) return false;
  pthread_mutex_lock(&live_mu);
  bool ok = is_live_locked(e);
  pthread_mutex_unlock(&live_mu);
  return ok;
}

static av_xffi_error *error_make(int32_t code, const char *msg) {
  av_xffi_error *e = calloc(1, sizeof *e);
  if (!e) return NULL;
  e->code = code;
  e->message = strdup(msg ? msg : "");
  if (!e->message) {
    free(e);
    return NULL;
  }
  pthread_mutex_lock(&live_mu);
  e->next = live;
  if (live) live->prev = e;
  live = e;
  pthread_mutex_unlock(&live_mu);
  return e;
}

av_xffi_error *av_ffi_error_new(int32_t code, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return error_make(code, buf);
}

/* Unlinks `e` when live; false otherwise (nothing touched). */
static bool unlink_live(av_xffi_error *e) {
  pthread_mutex_lock(&live_mu);
  bool ok = e && is_live_locked(e);
  if (ok) {
    if (e->prev) e->prev->next = e->next;
    else live = e->next;
    if (e->next) e->next->prev = e->prev;
  }
  pthread_mutex_unlock(&live_mu);
  return ok;
}

av_code av_ffi_error_take(av_xffi_error *e, const char *what, av_diag *d) {
  if (!unlink_live(e))
    return av_diag_set(d, AV_INTERNAL, "%s: the handler returned %p, which is no error the "
                       "XLA FFI API made (or one already destroyed)", what, (void *)e);
  av_code code = e->code > AV_OK && e->code <= AV_UNAUTHENTICATED ? (av_code)e->code
                                                                   : AV_UNKNOWN;
  av_diag_set(d, code, "%s: %s", what, e->message);
  free(e->message);
  free(e);
  return code;
}

/* ---- the API's functions (api.c puts them in the table) */

av_xffi_error *av_ffi_api_error_create(av_xffi_error_create_args *a) {
  if (!a || a->struct_size < AV_XFFI_ERROR_CREATE_SIZE)
    return error_make(AV_XFFI_INVALID_ARGUMENT, "XLA_FFI_Error_Create: bad arguments");
  /* the message is the caller's temporary (a std::string's c_str()): copied */
  return error_make(a->errc, a->message);
}

void av_ffi_api_error_get_message(av_xffi_error_get_message_args *a) {
  if (!a || a->struct_size < sizeof *a) return;
  /* the message stays valid until the error is destroyed */
  a->message = av_ffi_error_is_live(a->error) ? a->error->message
                                               : "(not an error the XLA FFI API made)";
}

void av_ffi_api_error_destroy(av_xffi_error_destroy_args *a) {
  if (!a || a->struct_size < sizeof *a || !unlink_live(a->error)) return;
  free(a->error->message);
  free(a->error);
}

/* ---- legacy status (api_version 2 and 3 targets) */

void av_ffi_status_init(av_ffi_status *s) {
  memset(s, 0, sizeof *s);
  s->magic = STATUS_MAGIC;
}

/* Exported under XLA's names: a legacy target reports failure with these. */
__attribute__((visibility("default"))) void XlaCustomCallStatusSetFailure(void *status,
                                                                          const char *message,
                                                                          size_t len);
__attribute__((visibility("default"))) void XlaCustomCallStatusSetSuccess(void *status);

void XlaCustomCallStatusSetFailure(void *status, const char *message, size_t len) {
  av_ffi_status *s = status;
  if (!s || s->magic != STATUS_MAGIC) return;
  s->failed = true;
  if (!message) len = 0;
  if (len >= sizeof s->message) len = sizeof s->message - 1;
  if (len) memcpy(s->message, message, len);
  s->message[len] = '\0';
}

void XlaCustomCallStatusSetSuccess(void *status) {
  av_ffi_status *s = status;
  if (!s || s->magic != STATUS_MAGIC) return;
  s->failed = false;
  s->message[0] = '\0';
}
