#include "frontend/hlo_config.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/proto_wire.h"
#include "util/proto_writer.h"

typedef struct span {
  const uint8_t *p;
  size_t n;
  bool found;
} span;

/* The last occurrence of LEN field `num` in a message (proto3 merge semantics). */
static int find_len_field(const uint8_t *p, size_t n, uint32_t num, span *out, const char **err) {
  av_pb_cursor c;
  av_pb_field f;
  int r;
  av_pb_init(&c, p, n);
  while ((r = av_pb_next(&c, &f, err)) == 1)
    if (f.num == num && f.wire == AV_PB_LEN) *out = (span){f.data, f.len, true};
  return r;
}

/* program_shape (4) of the computation whose id (5) is `entry_id`; with no entry id, the
 * last computation (older producers put the entry last). */
static int entry_program_shape(const uint8_t *p, size_t n, span *out, const char **err) {
  av_pb_cursor c;
  av_pb_field f;
  int r;
  bool has_entry_id = false;
  uint64_t entry_id = 0;
  av_pb_init(&c, p, n);
  while ((r = av_pb_next(&c, &f, err)) == 1)
    if (f.num == 6 && f.wire == AV_PB_VARINT) {
      entry_id = f.u64;
      has_entry_id = true;
    }
  if (r < 0) return r;
  av_pb_init(&c, p, n);
  while ((r = av_pb_next(&c, &f, err)) == 1) {
    if (f.num != 3 || f.wire != AV_PB_LEN) continue;
    uint64_t id = 0;
    av_pb_cursor cc;
    av_pb_field cf;
    int cr;
    span ps = {0};
    av_pb_sub(&cc, &f);
    while ((cr = av_pb_next(&cc, &cf, err)) == 1) {
      if (cf.num == 5 && cf.wire == AV_PB_VARINT) id = cf.u64;
      if (cf.num == 4 && cf.wire == AV_PB_LEN) ps = (span){cf.data, cf.len, true};
    }
    if (cr < 0) return cr;
    if (!has_entry_id || id == entry_id) *out = ps;
  }
  return r;
}

static uint8_t *put_len(uint8_t *w, uint32_t num, size_t len) {
  w = av_pb_put_varint(w, (uint64_t)num << 3 | AV_PB_LEN);
  return av_pb_put_varint(w, len);
}

av_code av_hlo_module_with_config(const void *hlo, size_t size, int64_t replica_count,
                                  int64_t num_partitions, uint8_t **out, size_t *out_size,
                                  av_diag *d) {
  *out = NULL;
  *out_size = 0;
  const char *err = "malformed";
  span ps = {0};
  if (!hlo && size) return av_diag_set(d, AV_INVALID_ARGUMENT, "hlo_with_config: no module bytes");
  if (find_len_field(hlo, size, 4, &ps, &err) < 0)
    return av_diag_set(d, AV_INVALID_ARGUMENT, "hlo_with_config: HloModuleProto is malformed: %s",
                       err);
  bool append_shape = !ps.found;
  if (append_shape && entry_program_shape(hlo, size, &ps, &err) < 0)
    return av_diag_set(d, AV_INVALID_ARGUMENT, "hlo_with_config: HloModuleProto is malformed: %s",
                       err);
  if (!ps.found)
    return av_diag_set(d, AV_INVALID_ARGUMENT,
                       "hlo_with_config: the module has no host_program_shape and its entry "
                       "computation no program_shape");
  if (replica_count < 1) replica_count = 1;
  if (num_partitions < 1) num_partitions = 1;
  size_t shape_field = 1 + av_pb_varint_size(ps.n) + ps.n;
  size_t module_len = size + (append_shape ? shape_field : 0);
  size_t config_len = shape_field + 1 + av_pb_varint_size((uint64_t)replica_count) + 1 +
                      av_pb_varint_size((uint64_t)num_partitions);
  if (module_len > SIZE_MAX / 2 - config_len - 64)
    return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "hlo_with_config: module too large");
  size_t total = 1 + av_pb_varint_size(module_len) + module_len + 1 + av_pb_varint_size(config_len) + config_len;
  uint8_t *buf = malloc(total);
  if (!buf) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "hlo_with_config: out of memory");
  uint8_t *w = put_len(buf, 1, module_len);
  if (size) memcpy(w, hlo, size);
  w += size;
  if (append_shape) {
    w = put_len(w, 4, ps.n);
    memcpy(w, ps.p, ps.n);
    w += ps.n;
  }
  w = put_len(w, 2, config_len);
  w = put_len(w, 1, ps.n);
  memcpy(w, ps.p, ps.n);
  w += ps.n;
  w = av_pb_put_varint(w, 4 << 3 | AV_PB_VARINT);
  w = av_pb_put_varint(w, (uint64_t)replica_count);
  w = av_pb_put_varint(w, 5 << 3 | AV_PB_VARINT);
  w = av_pb_put_varint(w, (uint64_t)num_partitions);
  *out = buf;
  *out_size = (size_t)(w - buf);
  return AV_OK;
}
