#include "util/diag.h"

#include <stdarg.h>
#include <stdio.h>

void av_diag_init(av_diag *d) {
  d->code = AV_OK;
  d->len = 0;
  d->dropped = 0;
  d->msg[0] = '\0';
}

av_code av_diag_set(av_diag *d, av_code code, const char *fmt, ...) {
  if (!d) return code;
  if (d->code == AV_OK) d->code = code;
  size_t room = sizeof d->msg - d->len;
  if (d->len > 0 && room > 1) {
    d->msg[d->len++] = '\n';
    d->msg[d->len] = '\0';
    room--;
  }
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(d->msg + d->len, room, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= room) {
    d->len = sizeof d->msg - 1;
    d->dropped++;
  } else {
    d->len += (size_t)n;
  }
  return code;
}

const char *av_code_name(av_code code) {
  static const char *const names[] = {
      "OK",        "CANCELLED",          "UNKNOWN",       "INVALID_ARGUMENT",    "DEADLINE_EXCEEDED",
      "NOT_FOUND", "ALREADY_EXISTS",     "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
      "ABORTED",   "OUT_OF_RANGE",       "UNIMPLEMENTED", "INTERNAL",            "UNAVAILABLE",
      "DATA_LOSS", "UNAUTHENTICATED",
  };
  if ((unsigned)code < sizeof names / sizeof names[0]) return names[code];
  return "UNKNOWN";
}
