/* Diagnostics: a status code plus a message with context, shared by every layer below PJRT.
 * The PJRT layer turns an av_diag into a PJRT_Error; the codes use the same numbering as
 * PJRT_Error_Code (the canonical absl/gRPC status codes), so the mapping is the identity. */
#ifndef ANVIL_UTIL_DIAG_H
#define ANVIL_UTIL_DIAG_H

#include <stddef.h>

typedef enum av_code {
  AV_OK = 0,
  AV_CANCELLED = 1,
  AV_UNKNOWN = 2,
  AV_INVALID_ARGUMENT = 3,
  AV_DEADLINE_EXCEEDED = 4,
  AV_NOT_FOUND = 5,
  AV_ALREADY_EXISTS = 6,
  AV_PERMISSION_DENIED = 7,
  AV_RESOURCE_EXHAUSTED = 8,
  AV_FAILED_PRECONDITION = 9,
  AV_ABORTED = 10,
  AV_OUT_OF_RANGE = 11,
  AV_UNIMPLEMENTED = 12,
  AV_INTERNAL = 13,
  AV_UNAVAILABLE = 14,
  AV_DATA_LOSS = 15,
  AV_UNAUTHENTICATED = 16,
} av_code;

enum { AV_DIAG_MAX = 4096 };

/* The first error sets `code`; later messages are appended on new lines (so a checker can
 * report every problem at once) until the buffer is full, after which they are counted. */
typedef struct av_diag {
  av_code code;
  size_t len;
  size_t dropped; /* messages that did not fit */
  char msg[AV_DIAG_MAX];
} av_diag;

void av_diag_init(av_diag *d);
/* Records an error; returns `code` so callers can `return av_diag_set(...)`. */
av_code av_diag_set(av_diag *d, av_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
const char *av_code_name(av_code code);

#endif
