/* PJRT_Error: a code and a message. Every error starts with a valid function table, so the
 * framework may use either the PJRT_Error_* entry points or the vtable. No payloads. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pjrt/pjrt_internal.h"

static void vt_destroy(PJRT_Error *e) { av_error_free(e); }
static void vt_message(const PJRT_Error *e, const char **msg, size_t *len) {
  const av_error *ae = (const av_error *)e;
  *msg = ae->msg;
  *len = ae->len;
}
static PJRT_Error_Code vt_get_code(const PJRT_Error *e) { return ((const av_error *)e)->code; }
static void vt_for_each_payload(const PJRT_Error *e, PJRT_Error_PayloadVisitor v, void *arg) {
  (void)e;
  (void)v;
  (void)arg;
}

static const PJRT_Error_FunctionTable error_vtable = {
    .struct_size = PJRT_Error_FunctionTable_STRUCT_SIZE,
    .instance_size = sizeof(av_error),
    .extension_start = NULL,
    .destroy = vt_destroy,
    .message = vt_message,
    .get_code = vt_get_code,
    .for_each_payload = vt_for_each_payload,
};

/* Returned when even the error cannot be allocated; av_error_free never frees it. */
static const av_error oom_error = {{&error_vtable}, PJRT_Error_Code_RESOURCE_EXHAUSTED, 28,
                                   "anvil: out of memory (error)"};

PJRT_Error *av_error_from_msg(av_code code, const char *msg, size_t len) {
  if (code == AV_OK) code = AV_UNKNOWN; /* an error object always means failure */
  av_error *e = malloc(sizeof *e + len + 1);
  if (!e) return (PJRT_Error *)&oom_error.base;
  e->base.vtable = &error_vtable;
  e->code = (PJRT_Error_Code)code;
  e->len = len;
  char *text = (char *)(e + 1);
  if (len) memcpy(text, msg, len);
  text[len] = '\0';
  e->msg = text;
  return &e->base;
}

PJRT_Error *av_error_new(av_code code, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0) n = 0;
  if ((size_t)n >= sizeof buf) n = sizeof buf - 1;
  return av_error_from_msg(code, buf, (size_t)n);
}

PJRT_Error *av_error_from_diag(const av_diag *d) {
  if (d->code == AV_OK) return NULL;
  return av_error_from_msg(d->code, d->msg, d->len);
}

PJRT_Error *av_error_unimplemented(const char *fn) {
  return av_error_new(AV_UNIMPLEMENTED, "anvil: %s is not implemented yet", fn);
}

PJRT_Error *av_error_copy(const PJRT_Error *e) {
  if (!e) return NULL;
  const av_error *ae = (const av_error *)e;
  return av_error_from_msg((av_code)ae->code, ae->msg, ae->len);
}

void av_error_free(PJRT_Error *e) {
  if (!e || e == &oom_error.base) return;
  free(e);
}

av_code av_error_code(const PJRT_Error *e) { return e ? (av_code)((const av_error *)e)->code : AV_OK; }
const char *av_error_message(const PJRT_Error *e) { return e ? ((const av_error *)e)->msg : ""; }

PJRT_Error *av_check_args(const void *args, size_t struct_size, size_t min_size,
                          const char *type_name, const char *fn) {
  /* __func__ is av_PJRT_Foo; report the public name PJRT_Foo. */
  if (strncmp(fn, "av_", 3) == 0) fn += 3;
  if (!args) return av_error_new(AV_INVALID_ARGUMENT, "%s: args is NULL", fn);
  if (struct_size < min_size)
    return av_error_new(AV_INVALID_ARGUMENT,
                        "%s: unexpected %s size: expected at least %zu, got %zu", fn, type_name,
                        min_size, struct_size);
  return NULL;
}

/* ------------------------------------------------------------ entry points */

void av_PJRT_Error_Destroy(PJRT_Error_Destroy_Args *args) {
  if (!args || args->struct_size < PJRT_Error_Destroy_Args_MIN_SIZE) return;
  av_error_free(args->error);
}

void av_PJRT_Error_Message(PJRT_Error_Message_Args *args) {
  if (!args || args->struct_size < PJRT_Error_Message_Args_MIN_SIZE) return;
  if (!args->error) {
    args->message = "";
    args->message_size = 0;
    return;
  }
  const av_error *e = (const av_error *)args->error;
  args->message = e->msg;
  args->message_size = e->len;
}

PJRT_Error *av_PJRT_Error_GetCode(PJRT_Error_GetCode_Args *args) {
  AV_ARGS(args, PJRT_Error_GetCode_Args);
  AV_REQUIRE(args->error, AV_INVALID_ARGUMENT, "PJRT_Error_GetCode: error is NULL");
  args->code = ((const av_error *)args->error)->code;
  return NULL;
}

PJRT_Error *av_PJRT_Error_ForEachPayload(PJRT_Error_ForEachPayload_Args *args) {
  AV_ARGS(args, PJRT_Error_ForEachPayload_Args);
  return NULL; /* anvil errors carry no payloads */
}
