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
 * (replica, partition); anvil stores it at [replica * num_partitions + partition].
 *
 *   ExecutableBuildOptionsProto  3: debug_options (DebugOptions)
 *   DebugOptions               109: xla_dump_to (string; XLA_FLAGS=--xla_dump_to=DIR sets it)
 *
 *   CompileOptionsProto          7: env_option_overrides (map<string, OptionOverrideProto>)
 *   OptionOverrideProto          1: string_field, 2: bool_field, 3: int_field, 4: double_field
 *
 * env_option_overrides are JAX's `compiler_options`: XLA applies each one to its DebugOptions
 * by field name and refuses unknown names and values of the wrong type. anvil has no such
 * options, but refuses the same way so that typos do not pass silently: a name must look
 * like an XLA debug option (xla_...), and the value of a known option must fit its type. One is
 * used: xla_dump_to (JAX's compiler_options={"xla_dump_to": DIR}), which wins over the
 * DebugOptions field. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/compile_options.h"
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

/* Replaces out->dump_to with a copy of the given bytes (an empty string clears it). */
static av_code set_dump_to(av_compile_options *out, const void *s, size_t n, av_diag *d) {
  free(out->dump_to);
  out->dump_to = NULL;
  if (n == 0) return AV_OK;
  if (n > 4096) return bad(d, "xla_dump_to is longer than 4096 bytes");
  if (memchr(s, '\0', n)) return bad(d, "xla_dump_to holds a NUL byte");
  out->dump_to = malloc(n + 1);
  if (!out->dump_to) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "compile options: out of memory");
  memcpy(out->dump_to, s, n);
  out->dump_to[n] = '\0';
  return AV_OK;
}

static av_code read_debug_options(const av_pb_field *f, av_compile_options *out, av_diag *d) {
  av_pb_cursor c;
  av_pb_sub(&c, f);
  av_pb_field g;
  const char *err = NULL;
  int r = 0;
  while ((r = av_pb_next(&c, &g, &err)) == 1)
    if (g.num == 109 && g.wire == AV_PB_LEN) {
      av_code code = set_dump_to(out, g.data, g.len, d);
      if (code != AV_OK) return code;
    }
  return r < 0 ? bad(d, err) : AV_OK;
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
    } else if (g.num == 3 && g.wire == AV_PB_LEN) {
      av_code code = read_debug_options(&g, out, d);
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

typedef enum opt_type { OPT_BOOL, OPT_INT, OPT_STRING } opt_type;

/* A few common DebugOptions fields whose type is checked (XLA's type names). */
static const struct {
  const char *name;
  opt_type type;
} KNOWN_OPTIONS[] = {
    {"xla_embed_ir_in_executable", OPT_BOOL},
    {"xla_dump_hlo_as_text", OPT_BOOL},
    {"xla_dump_hlo_as_proto", OPT_BOOL},
    {"xla_dump_hlo_as_dot", OPT_BOOL},
    {"xla_dump_hlo_as_html", OPT_BOOL},
    {"xla_dump_hlo_as_url", OPT_BOOL},
    {"xla_dump_hlo_snapshots", OPT_BOOL},
    {"xla_dump_include_timestamp", OPT_BOOL},
    {"xla_cpu_enable_fast_math", OPT_BOOL},
    {"xla_cpu_fast_math_honor_nans", OPT_BOOL},
    {"xla_cpu_fast_math_honor_infs", OPT_BOOL},
    {"xla_cpu_fast_math_honor_division", OPT_BOOL},
    {"xla_cpu_fast_math_honor_functions", OPT_BOOL},
    {"xla_llvm_disable_expensive_passes", OPT_BOOL},
    {"xla_test_all_input_layouts", OPT_BOOL},
    {"xla_hlo_profile", OPT_BOOL},
    {"xla_backend_optimization_level", OPT_INT},
    {"xla_dump_max_hlo_modules", OPT_INT},
    {"xla_dump_to", OPT_STRING},
    {"xla_dump_hlo_module_re", OPT_STRING},
    {"xla_dump_hlo_pass_re", OPT_STRING},
    {"xla_dump_hlo_pipeline_re", OPT_STRING},
};

static const char *const TYPE_NAMES[] = {"bool", "int32", "string"};

/* One map entry: key (1) and OptionOverrideProto (2). An xla_dump_to string is copied to
 * *dump_to (malloc'd; replaces what it held). */
static av_code check_option(const av_pb_field *entry, char **dump_to, bool *as_proto, av_diag *d) {
  av_pb_cursor c;
  av_pb_sub(&c, entry);
  av_pb_field g;
  const char *err = NULL;
  int r = 0;
  char name[128] = "";
  const av_pb_field *value = NULL;
  av_pb_field vf;
  while ((r = av_pb_next(&c, &g, &err)) == 1) {
    if (g.num == 1 && g.wire == AV_PB_LEN) {
      size_t n = g.len < sizeof name - 1 ? g.len : sizeof name - 1;
      memcpy(name, g.data, n);
      name[n] = '\0';
      for (size_t i = 0; i < n; i++)
        if ((unsigned char)name[i] < 0x20 || (unsigned char)name[i] > 0x7e) name[i] = '?';
    } else if (g.num == 2 && g.wire == AV_PB_LEN) {
      vf = g;
      value = &vf;
    }
  }
  if (r < 0) return bad(d, err);
  /* the value's kind and its text (as XLA prints it in messages) */
  int kind = 0;
  char text[96] = "";
  const void *str = NULL; /* the string value, whole */
  size_t str_len = 0;
  av_pb_field v;
  if (value) {
    av_pb_sub(&c, value);
    while ((r = av_pb_next(&c, &v, &err)) == 1) {
      if (v.num == 1 && v.wire == AV_PB_LEN) {
        kind = 1;
        str = v.data;
        str_len = v.len;
        size_t n = v.len < sizeof text - 1 ? v.len : sizeof text - 1;
        memcpy(text, v.data, n);
        text[n] = '\0';
        for (size_t i = 0; i < n; i++)
          if ((unsigned char)text[i] < 0x20 || (unsigned char)text[i] > 0x7e) text[i] = '?';
      } else if (v.num == 2 && v.wire == AV_PB_VARINT) {
        kind = 2;
        snprintf(text, sizeof text, "%s", v.u64 ? "true" : "false");
      } else if (v.num == 3 && v.wire == AV_PB_VARINT) {
        kind = 3;
        snprintf(text, sizeof text, "%" PRId64, (int64_t)v.u64);
      } else if (v.num == 4 && v.wire == AV_PB_I64) {
        kind = 4;
        snprintf(text, sizeof text, "%g", av_pb_as_double(v.u64));
      }
    }
    if (r < 0) return bad(d, err);
  }
  if (kind == 0) return av_diag_set(d, AV_INTERNAL, "OptionOverrideProto value not set.");
  if (strncmp(name, "xla_", 4) != 0)
    return av_diag_set(d, AV_INVALID_ARGUMENT, "No such compile option: '%s'", name);
  for (size_t i = 0; i < sizeof KNOWN_OPTIONS / sizeof KNOWN_OPTIONS[0]; i++) {
    if (strcmp(KNOWN_OPTIONS[i].name, name) != 0) continue;
    opt_type t = KNOWN_OPTIONS[i].type;
    bool ok = kind == 1 ? t == OPT_STRING ||
                              (t == OPT_BOOL && (strcmp(text, "True") == 0 || strcmp(text, "False") == 0))
                        : (t == OPT_BOOL && kind == 2) || (t == OPT_INT && kind == 3);
    if (kind == 1 && t == OPT_INT) {
      char *end = NULL;
      long long x = strtoll(text, &end, 10);
      ok = end != text && *end == '\0' && x >= INT32_MIN && x <= INT32_MAX;
    }
    if (!ok)
      return av_diag_set(d, AV_INVALID_ARGUMENT, "While setting option %s, '%s' is not a valid %s value.",
                         name, text, TYPE_NAMES[t]);
    break;
  }
  if (strcmp(name, "xla_dump_hlo_as_proto") == 0)
    *as_proto = kind == 2 ? strcmp(text, "true") == 0 : strcmp(text, "True") == 0;
  if (kind == 1 && strcmp(name, "xla_dump_to") == 0) {
    av_compile_options tmp = {.dump_to = *dump_to};
    av_code code = set_dump_to(&tmp, str, str_len, d);
    *dump_to = tmp.dump_to;
    if (code != AV_OK) return code;
  }
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
  char *dump_override = NULL; /* compiler_options' xla_dump_to wins, wherever it comes */
  while (code == AV_OK && (r = av_pb_next(&c, &f, &err)) == 1) {
    if (f.num == 3 && f.wire == AV_PB_LEN) code = read_build_options(&f, out, d);
    if (f.num == 7 && f.wire == AV_PB_LEN)
      code = check_option(&f, &dump_override, &out->dump_hlo_as_proto, d);
  }
  if (code == AV_OK && r < 0) code = bad(d, err);
  if (code == AV_OK && dump_override) {
    free(out->dump_to);
    out->dump_to = dump_override;
    dump_override = NULL;
  }
  free(dump_override);
  if (code != AV_OK) av_compile_options_free(out);
  return code;
}

void av_compile_options_free(av_compile_options *o) {
  free(o->device_assignment);
  o->device_assignment = NULL;
  free(o->dump_to);
  o->dump_to = NULL;
}
