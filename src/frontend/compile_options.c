/* Decoder for a serialized xla.CompileOptionsProto: only the fields that matter to anvil.
 *
 *   CompileOptionsProto          3: executable_build_options (ExecutableBuildOptionsProto)
 *   ExecutableBuildOptionsProto  4: num_replicas, 5: num_partitions, 6: use_spmd_partitioning,
 *                                9: device_assignment (DeviceAssignmentProto),
 *                               19: use_shardy_partitioner
 *   DeviceAssignmentProto        1: replica_count, 2: computation_count,
 *                                3: computation_devices (repeated ComputationDevice)
 *   ComputationDevice            1: replica_device_ids (repeated int64)
 *
 * computation_devices[partition].replica_device_ids[replica] is the device of that
 * (replica, partition); anvil stores it at [replica * num_partitions + partition]. */
#include <stdlib.h>
#include <string.h>

#include "compiler/program.h"
#include "frontend/proto_wire.h"

enum { MAX_DEVICES = 1 << 16 };

static av_code bad(av_diag *d, const char *what) {
  return av_diag_set(d, AV_INVALID_ARGUMENT, "compile options: %s", what);
}

/* One ComputationDevice: appends its ids to `ids` (room for `cap`), counting in *n. */
static av_code read_computation(const av_pb_field *f, int64_t *ids, size_t cap, size_t *n,
                                av_diag *d) {
  av_pb_cursor c;
  av_pb_sub(&c, f);
  av_pb_field g;
  const char *err = NULL;
  int r = 0;
  *n = 0;
  while ((r = av_pb_next(&c, &g, &err)) == 1) {
    if (g.num != 1) continue;
    av_pb_scalars it;
    if (!av_pb_scalars_begin(&it, &g, AV_PB_VARINT, &err)) return bad(d, err);
    uint64_t v;
    int s;
    while ((s = av_pb_scalars_next(&it, &v, &err)) == 1) {
      if ((int64_t)v < 0 || (int64_t)v >= MAX_DEVICES) return bad(d, "device id out of range");
      if (*n >= cap) return bad(d, "computation has more device ids than replicas");
      ids[(*n)++] = (int64_t)v;
    }
    if (s < 0) return bad(d, err);
  }
  return r < 0 ? bad(d, err) : AV_OK;
}

static av_code read_assignment(const av_pb_field *f, av_compile_options *out, av_diag *d,
                               int64_t *replicas, int64_t *computations) {
  av_pb_cursor c;
  av_pb_field g;
  const char *err = NULL;
  int r = 0;
  uint64_t rc = 0, cc = 0;
  size_t ncomp = 0;
  /* pass 1: counts */
  av_pb_sub(&c, f);
  while ((r = av_pb_next(&c, &g, &err)) == 1) {
    if (g.num == 1 && g.wire == AV_PB_VARINT) rc = g.u64;
    if (g.num == 2 && g.wire == AV_PB_VARINT) cc = g.u64;
    if (g.num == 3 && g.wire == AV_PB_LEN) ncomp++;
  }
  if (r < 0) return bad(d, err);
  if (rc == 0 || cc == 0 || rc > MAX_DEVICES || cc > MAX_DEVICES || rc * cc > MAX_DEVICES)
    return bad(d, "device assignment has a bad replica or computation count");
  if (ncomp != cc) return bad(d, "device assignment lists a different number of computations");
  int64_t *da = malloc(sizeof *da * (size_t)(rc * cc));
  int64_t *ids = malloc(sizeof *ids * (size_t)rc);
  if (!da || !ids) {
    free(da);
    free(ids);
    return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "compile options: out of memory");
  }
  /* pass 2: devices */
  av_pb_sub(&c, f);
  size_t p = 0;
  av_code code = AV_OK;
  while (code == AV_OK && (r = av_pb_next(&c, &g, &err)) == 1) {
    if (g.num != 3 || g.wire != AV_PB_LEN) continue;
    size_t n;
    code = read_computation(&g, ids, (size_t)rc, &n, d);
    if (code == AV_OK && n != rc) code = bad(d, "computation has fewer device ids than replicas");
    for (size_t i = 0; code == AV_OK && i < n; i++) da[i * cc + p] = ids[i];
    p++;
  }
  free(ids);
  if (code == AV_OK && r < 0) code = bad(d, err);
  if (code != AV_OK) {
    free(da);
    return code;
  }
  free(out->device_assignment);
  out->device_assignment = da;
  *replicas = (int64_t)rc;
  *computations = (int64_t)cc;
  return AV_OK;
}

static av_code read_build_options(const av_pb_field *f, av_compile_options *out, av_diag *d) {
  av_pb_cursor c;
  av_pb_sub(&c, f);
  av_pb_field g;
  const char *err = NULL;
  int r = 0;
  uint64_t nrep = 0, npart = 0;
  int64_t da_rep = 0, da_comp = 0;
  while ((r = av_pb_next(&c, &g, &err)) == 1) {
    if (g.wire == AV_PB_VARINT) {
      if (g.num == 4) nrep = g.u64;
      if (g.num == 5) npart = g.u64;
      if (g.num == 6) out->use_spmd_partitioning = g.u64 != 0;
      if (g.num == 19) out->use_shardy_partitioner = g.u64 != 0;
    } else if (g.num == 9 && g.wire == AV_PB_LEN) {
      av_code code = read_assignment(&g, out, d, &da_rep, &da_comp);
      if (code != AV_OK) return code;
    }
  }
  if (r < 0) return bad(d, err);
  /* proto3 leaves unset counts at 0: that means 1 (or what the assignment says) */
  if (nrep > MAX_DEVICES || npart > MAX_DEVICES) return bad(d, "replica/partition count too large");
  out->num_replicas = nrep ? (int)nrep : da_rep ? (int)da_rep : 1;
  out->num_partitions = npart ? (int)npart : da_comp ? (int)da_comp : 1;
  if ((int64_t)out->num_replicas * out->num_partitions > MAX_DEVICES)
    return bad(d, "too many devices");
  if (out->device_assignment &&
      (da_rep != out->num_replicas || da_comp != out->num_partitions))
    return av_diag_set(d, AV_INVALID_ARGUMENT,
                       "compile options: device assignment is %lldx%lld but the program has "
                       "%d replicas and %d partitions",
                       (long long)da_rep, (long long)da_comp, out->num_replicas,
                       out->num_partitions);
  return AV_OK;
}

av_code av_compile_options_parse(const void *data, size_t size, av_compile_options *out,
                                 av_diag *d) {
  memset(out, 0, sizeof *out);
  out->num_replicas = 1;
  out->num_partitions = 1;
  if (!data || size == 0) return AV_OK;
  av_pb_cursor c;
  av_pb_init(&c, data, size);
  av_pb_field f;
  const char *err = NULL;
  int r = 0;
  av_code code = AV_OK;
  while (code == AV_OK && (r = av_pb_next(&c, &f, &err)) == 1) {
    if (f.num == 3 && f.wire == AV_PB_LEN) code = read_build_options(&f, out, d);
  }
  if (code == AV_OK && r < 0) code = bad(d, err);
  if (code != AV_OK) av_compile_options_free(out);
  return code;
}

void av_compile_options_free(av_compile_options *o) {
  free(o->device_assignment);
  o->device_assignment = NULL;
}
