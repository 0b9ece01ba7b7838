#include "frontend/bytecode_cursor.h"

#include <string.h>

bc_cursor bc_cursor_make(const uint8_t *file, const uint8_t *begin, size_t size) {
  bc_cursor c = {file, begin, begin + size};
  return c;
}

bool bc_read_u8(bc_cursor *c, uint8_t *out) {
  if (c->p >= c->end) return false;
  *out = *c->p++;
  return true;
}

bool bc_read_varint(bc_cursor *c, uint64_t *out) {
  uint8_t b0;
  if (!bc_read_u8(c, &b0)) return false;
  if (b0 & 1) {
    *out = b0 >> 1;
    return true;
  }
  if (b0 == 0) {
    if (bc_remaining(c) < 8) return false;
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | c->p[i];
    c->p += 8;
    *out = v;
    return true;
  }
  unsigned extra = (unsigned)__builtin_ctz(b0); /* 1..7 additional bytes */
  if (bc_remaining(c) < extra) return false;
  uint64_t v = b0;
  for (unsigned i = 0; i < extra; i++) v |= (uint64_t)c->p[i] << (8 * (i + 1));
  c->p += extra;
  *out = v >> (extra + 1);
  return true;
}

bool bc_read_svarint(bc_cursor *c, int64_t *out) {
  uint64_t u;
  if (!bc_read_varint(c, &u)) return false;
  uint64_t v = (u >> 1) ^ (0 - (u & 1));
  memcpy(out, &v, sizeof v);
  return true;
}

bool bc_read_varint_flag(bc_cursor *c, uint64_t *value, bool *flag) {
  uint64_t u;
  if (!bc_read_varint(c, &u)) return false;
  *flag = (u & 1) != 0;
  *value = u >> 1;
  return true;
}

bool bc_read_bytes(bc_cursor *c, size_t n, const uint8_t **out) {
  if (bc_remaining(c) < n) return false;
  *out = c->p;
  c->p += n;
  return true;
}

bool bc_read_cstr(bc_cursor *c, const char **s, size_t *len) {
  const uint8_t *nul = memchr(c->p, 0, bc_remaining(c));
  if (!nul) return false;
  *s = (const char *)c->p;
  *len = (size_t)(nul - c->p);
  c->p = nul + 1;
  return true;
}

bool bc_read_blob(bc_cursor *c, const uint8_t **data, size_t *size) {
  uint64_t n;
  if (!bc_read_varint(c, &n) || n > bc_remaining(c)) return false;
  *size = (size_t)n;
  return bc_read_bytes(c, (size_t)n, data);
}

bool bc_align_to(bc_cursor *c, uint64_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > 4096) return false;
  while ((bc_offset(c) & (alignment - 1)) != 0) {
    uint8_t b;
    if (!bc_read_u8(c, &b) || b != 0xCB) return false;
  }
  return true;
}

bool bc_sub_cursor(bc_cursor *c, size_t n, bc_cursor *sub) {
  if (bc_remaining(c) < n) return false;
  *sub = bc_cursor_make(c->file, c->p, n);
  c->p += n;
  return true;
}
