/* Protocol-buffer wire format writer, the counterpart of frontend/proto_wire.h's reader.
 *
 * Two levels:
 *  - av_pb_varint_size / av_pb_put_varint: raw varints into a buffer the caller sized (for
 *    messages whose size is known up front, e.g. frontend/hlo_config.c);
 *  - av_pbw: a growable buffer that writes whole fields, with nested messages opened by
 *    av_pbw_begin and closed by av_pbw_end (the length prefix is written at the end, the
 *    payload moved right when it needs more than one byte).
 * Only what proto3 messages need: varint, 64-bit (double) and length-delimited fields.
 * Running out of memory sets `failed` and turns every later write into a no-op, so callers
 * check once at the end. */
#ifndef ANVIL_UTIL_PROTO_WRITER_H
#define ANVIL_UTIL_PROTO_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes the varint encoding of v takes (1..10). */
size_t av_pb_varint_size(uint64_t v);
/* Writes v as a varint at p (av_pb_varint_size(v) bytes); returns the byte after it. */
uint8_t *av_pb_put_varint(uint8_t *p, uint64_t v);

typedef struct av_pbw {
  uint8_t *buf;
  size_t len, cap;
  bool failed;
} av_pbw;

void av_pbw_init(av_pbw *w);
void av_pbw_free(av_pbw *w);
/* Hands the bytes over (malloc'd, caller frees; NULL when empty or failed) and resets w. */
uint8_t *av_pbw_take(av_pbw *w, size_t *len);

/* int32/int64/uint64/bool/enum fields (negative int64 values take 10 bytes, as in proto3). */
void av_pbw_varint(av_pbw *w, uint32_t field, uint64_t v);
void av_pbw_double(av_pbw *w, uint32_t field, double v);
void av_pbw_bytes(av_pbw *w, uint32_t field, const void *data, size_t n);
void av_pbw_string(av_pbw *w, uint32_t field, const char *s);
/* Opens a sub-message field; returns the mark av_pbw_end needs. Marks nest like brackets. */
size_t av_pbw_begin(av_pbw *w, uint32_t field);
void av_pbw_end(av_pbw *w, size_t mark);

#endif
