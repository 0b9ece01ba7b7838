#include "util/proto_writer.h"

#include <stdlib.h>
#include <string.h>

enum { WIRE_VARINT = 0, WIRE_I64 = 1, WIRE_LEN = 2 };

size_t av_pb_varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    n++;
  }
  return n;
}

uint8_t *av_pb_put_varint(uint8_t *p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  *p++ = (uint8_t)v;
  return p;
}

void av_pbw_init(av_pbw *w) { memset(w, 0, sizeof *w); }

void av_pbw_free(av_pbw *w) {
  free(w->buf);
  av_pbw_init(w);
}

uint8_t *av_pbw_take(av_pbw *w, size_t *len) {
  uint8_t *b = w->failed || !w->len ? NULL : w->buf;
  *len = b ? w->len : 0;
  if (!b) free(w->buf);
  av_pbw_init(w);
  return b;
}

/* Room for `n` more bytes. */
static bool reserve(av_pbw *w, size_t n) {
  if (w->failed) return false;
  if (w->cap - w->len >= n) return true;
  size_t cap = w->cap ? w->cap : 256;
  while (cap - w->len < n) {
    if (cap > SIZE_MAX / 2) {
      w->failed = true;
      return false;
    }
    cap *= 2;
  }
  uint8_t *b = realloc(w->buf, cap);
  if (!b) {
    w->failed = true;
    return false;
  }
  w->buf = b;
  w->cap = cap;
  return true;
}

static void put_raw_varint(av_pbw *w, uint64_t v) {
  if (reserve(w, 10)) w->len = (size_t)(av_pb_put_varint(w->buf + w->len, v) - w->buf);
}

static void put_tag(av_pbw *w, uint32_t field, int wire) {
  put_raw_varint(w, (uint64_t)field << 3 | (uint64_t)wire);
}

void av_pbw_varint(av_pbw *w, uint32_t field, uint64_t v) {
  put_tag(w, field, WIRE_VARINT);
  put_raw_varint(w, v);
}

void av_pbw_double(av_pbw *w, uint32_t field, double v) {
  uint64_t bits;
  memcpy(&bits, &v, sizeof bits);
  put_tag(w, field, WIRE_I64);
  if (!reserve(w, 8)) return;
  for (int i = 0; i < 8; i++) w->buf[w->len++] = (uint8_t)(bits >> (8 * i)); /* little endian */
}

void av_pbw_bytes(av_pbw *w, uint32_t field, const void *data, size_t n) {
  put_tag(w, field, WIRE_LEN);
  put_raw_varint(w, n);
  if (!n || !reserve(w, n)) return;
  memcpy(w->buf + w->len, data, n);
  w->len += n;
}

void av_pbw_string(av_pbw *w, uint32_t field, const char *s) {
  av_pbw_bytes(w, field, s ? s : "", s ? strlen(s) : 0);
}

size_t av_pbw_begin(av_pbw *w, uint32_t field) {
  put_tag(w, field, WIRE_LEN);
  if (reserve(w, 1)) w->buf[w->len++] = 0; /* one byte of length; av_pbw_end widens it */
  return w->len;
}

void av_pbw_end(av_pbw *w, size_t mark) {
  if (w->failed || mark == 0 || mark > w->len) return;
  size_t payload = w->len - mark, n = av_pb_varint_size(payload);
  if (n > 1) {
    if (!reserve(w, n - 1)) return;
    memmove(w->buf + mark + n - 1, w->buf + mark, payload);
    w->len += n - 1;
  }
  av_pb_put_varint(w->buf + mark - 1, payload);
}
