#include "frontend/proto_wire.h"

#include <string.h>

void av_pb_init(av_pb_cursor *c, const void *data, size_t size) {
  c->pos = data;
  c->end = c->pos ? c->pos + size : c->pos;
}

void av_pb_sub(av_pb_cursor *c, const av_pb_field *f) { av_pb_init(c, f->data, f->len); }

bool av_pb_done(const av_pb_cursor *c) { return c->pos >= c->end; }

bool av_pb_read_varint(av_pb_cursor *c, uint64_t *out) {
  uint64_t v = 0;
  for (int i = 0; i < 10; i++) {
    if (c->pos >= c->end) return false;
    uint8_t b = *c->pos++;
    /* The 10th byte carries only bit 63; anything more is an overlong encoding. */
    if (i == 9 && (b & 0xfe)) return false;
    v |= (uint64_t)(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) {
      *out = v;
      return true;
    }
  }
  return false;
}

static bool read_fixed(av_pb_cursor *c, int nbytes, uint64_t *out) {
  if ((size_t)(c->end - c->pos) < (size_t)nbytes) return false;
  uint64_t v = 0;
  for (int i = 0; i < nbytes; i++) v |= (uint64_t)c->pos[i] << (8 * i);
  c->pos += nbytes;
  *out = v;
  return true;
}

int av_pb_next(av_pb_cursor *c, av_pb_field *f, const char **err) {
  if (c->pos >= c->end) return 0;
  uint64_t key;
  if (!av_pb_read_varint(c, &key)) {
    *err = "truncated or overlong field key";
    return -1;
  }
  uint64_t num = key >> 3;
  if (num == 0 || num > 536870911u) {
    *err = "invalid field number";
    return -1;
  }
  memset(f, 0, sizeof *f);
  f->num = (uint32_t)num;
  f->wire = (av_pb_wire)(key & 7);
  switch (key & 7) {
    case AV_PB_VARINT:
      if (!av_pb_read_varint(c, &f->u64)) {
        *err = "truncated varint";
        return -1;
      }
      return 1;
    case AV_PB_I64:
      if (!read_fixed(c, 8, &f->u64)) {
        *err = "truncated fixed64";
        return -1;
      }
      return 1;
    case AV_PB_I32:
      if (!read_fixed(c, 4, &f->u64)) {
        *err = "truncated fixed32";
        return -1;
      }
      return 1;
    case AV_PB_LEN: {
      uint64_t len;
      if (!av_pb_read_varint(c, &len)) {
        *err = "truncated length";
        return -1;
      }
      if (len > (uint64_t)(c->end - c->pos)) {
        *err = "length-delimited field runs past the end of its message";
        return -1;
      }
      f->data = c->pos;
      f->len = (size_t)len;
      c->pos += len;
      return 1;
    }
    default:
      *err = "unsupported wire type (groups or invalid)";
      return -1;
  }
}

bool av_pb_scalars_begin(av_pb_scalars *it, const av_pb_field *f, av_pb_wire elem,
                         const char **err) {
  memset(it, 0, sizeof *it);
  it->elem = elem;
  if (f->wire == AV_PB_LEN) {
    av_pb_sub(&it->c, f);
    return true;
  }
  if (f->wire == elem) {
    it->single = true;
    it->value = f->u64;
    return true;
  }
  *err = "repeated scalar field has the wrong wire type";
  return false;
}

int av_pb_scalars_next(av_pb_scalars *it, uint64_t *v, const char **err) {
  if (it->single) {
    if (it->consumed) return 0;
    it->consumed = true;
    *v = it->value;
    return 1;
  }
  if (av_pb_done(&it->c)) return 0;
  bool ok = it->elem == AV_PB_VARINT ? av_pb_read_varint(&it->c, v)
            : it->elem == AV_PB_I32  ? read_fixed(&it->c, 4, v)
                                     : read_fixed(&it->c, 8, v);
  if (!ok) {
    *err = "truncated packed repeated field";
    return -1;
  }
  return 1;
}

float av_pb_as_float(uint64_t raw) {
  uint32_t bits = (uint32_t)raw;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

double av_pb_as_double(uint64_t raw) {
  double d;
  memcpy(&d, &raw, sizeof d);
  return d;
}
