/* GetPjrtApi: the one exported symbol. A constant table of entry points; each goes through a
 * thin wrapper that logs the call when ANVIL_TRACE=1. Entries anvil does not implement yet
 * answer UNIMPLEMENTED with the function's name, so that no slot is ever NULL. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pjrt/pjrt_internal.h"
#include "pjrt/layouts_extension.h"
#include "pjrt/shardings_extension.h"

#define AV_WRAP(name)                                                                   \
  static PJRT_Error *wrap_PJRT_##name(PJRT_##name##_Args *args) {                        \
    if (!av_trace_enabled()) return av_PJRT_##name(args);                                \
    av_trace_span span;                                                                  \
    av_trace_enter(&span, "PJRT_" #name, args);                                          \
    PJRT_Error *err = av_PJRT_##name(args);                                              \
    av_trace_exit(&span, args, err);                                                     \
    return err;                                                                          \
  }
AV_PJRT_IMPLEMENTED(AV_WRAP)

#define AV_STUB(name)                                                                   \
  static PJRT_Error *av_PJRT_##name(PJRT_##name##_Args *args) {                          \
    (void)args;                                                                          \
    return av_error_unimplemented("PJRT_" #name);                                        \
  }                                                                                      \
  AV_WRAP(name)
AV_PJRT_UNIMPLEMENTED(AV_STUB)

#define AV_COUNT(name) +1
_Static_assert(2 AV_PJRT_IMPLEMENTED(AV_COUNT) AV_PJRT_UNIMPLEMENTED(AV_COUNT) ==
                   (PJRT_Api_STRUCT_SIZE - offsetof(PJRT_Api, PJRT_Error_Destroy)) / sizeof(void *),
               "every PJRT_Api entry must be listed exactly once in api_list.h");

/* ------------------------------------------------------------------ plugin */

PJRT_Error *av_PJRT_Plugin_Initialize(PJRT_Plugin_Initialize_Args *args) {
  AV_ARGS(args, PJRT_Plugin_Initialize_Args);
  return NULL;
}

/* StableHLO version negotiation. A framework serializes its programs for the plugin's
 * `stablehlo_current_version`; jaxlib 0.4.38 and later take the older of that and their own,
 * but jaxlib 0.4.35 uses the plugin's as is and fails every compile when it is newer than the
 * version it can write (1.7.8). So anvil reports the older of the version it reads and the
 * caller's, which reaches it as ANVIL_STABLEHLO_VERSION=MAJOR.MINOR.PATCH: the Python package
 * sets it from jaxlib's StableHLO version before JAX creates a client. Without it, a caller that
 * declares the 24-byte PJRT_Plugin_Attributes_Args of API 0.55 to 0.70 (jaxlib 0.4.35 to 0.6.2,
 * loaded by library path) is told 1.7.8, which every one of them can write. Read once per
 * process; the tables below are written once (pthread_once) and only read afterwards. */
#define AV_OLD_CALLER_STABLEHLO_MAJOR 1
#define AV_OLD_CALLER_STABLEHLO_MINOR 7
#define AV_OLD_CALLER_STABLEHLO_PATCH 8

enum { AV_ATTRS_NEW_CALLER, AV_ATTRS_OLD_CALLER };
static pthread_once_t attributes_once = PTHREAD_ONCE_INIT;
static int64_t stablehlo_current[2][3];
static PJRT_NamedValue plugin_attributes[2][3];

static const int64_t stablehlo_minimum[3] = {ANVIL_STABLEHLO_MINIMUM_MAJOR,
                                             ANVIL_STABLEHLO_MINIMUM_MINOR,
                                             ANVIL_STABLEHLO_MINIMUM_PATCH};
static const int64_t xla_version = 2;

static bool version_older(const int64_t *a, const int64_t *b) {
  for (int i = 0; i < 3; i++)
    if (a[i] != b[i]) return a[i] < b[i];
  return false;
}

/* "MAJOR.MINOR.PATCH" (each 0..9999) into v; false (v untouched) for anything else. */
bool av_parse_stablehlo_version(const char *s, int64_t v[3]) {
  int64_t out[3];
  for (int i = 0; i < 3; i++) {
    if (!s || *s < '0' || *s > '9') return false;
    int64_t x = 0;
    int digits = 0;
    while (*s >= '0' && *s <= '9') {
      if (++digits > 4) return false;
      x = x * 10 + (*s++ - '0');
    }
    out[i] = x;
    if (i < 2 && *s++ != '.') return false;
  }
  if (*s) return false;
  memcpy(v, out, sizeof out);
  return true;
}

#define AV_NAME(s) .name = (s), .name_size = sizeof(s) - 1
static void attributes_init(void) {
  const int64_t own[3] = {ANVIL_STABLEHLO_CURRENT_MAJOR, ANVIL_STABLEHLO_CURRENT_MINOR,
                          ANVIL_STABLEHLO_CURRENT_PATCH};
  const int64_t old_caller[3] = {AV_OLD_CALLER_STABLEHLO_MAJOR, AV_OLD_CALLER_STABLEHLO_MINOR,
                                 AV_OLD_CALLER_STABLEHLO_PATCH};
  int64_t caller[3];
  const char *env = getenv("ANVIL_STABLEHLO_VERSION");
  bool known = env && *env && av_parse_stablehlo_version(env, caller);
  if (env && *env && !known)
    fprintf(stderr, "anvil: ignoring ANVIL_STABLEHLO_VERSION=%s (want MAJOR.MINOR.PATCH)\n", env);
  for (int k = 0; k < 2; k++) {
    const int64_t *limit = known ? caller : k == AV_ATTRS_OLD_CALLER ? old_caller : own;
    memcpy(stablehlo_current[k], version_older(limit, own) ? limit : own, sizeof own);
    PJRT_NamedValue *a = plugin_attributes[k];
    a[0] = (PJRT_NamedValue){.struct_size = PJRT_NamedValue_STRUCT_SIZE, AV_NAME("xla_version"),
                             .type = PJRT_NamedValue_kInt64, .int64_value = xla_version,
                             .value_size = 1};
    a[1] = (PJRT_NamedValue){.struct_size = PJRT_NamedValue_STRUCT_SIZE,
                             AV_NAME("stablehlo_current_version"),
                             .type = PJRT_NamedValue_kInt64List,
                             .int64_array_value = stablehlo_current[k], .value_size = 3};
    a[2] = (PJRT_NamedValue){.struct_size = PJRT_NamedValue_STRUCT_SIZE,
                             AV_NAME("stablehlo_minimum_version"),
                             .type = PJRT_NamedValue_kInt64List,
                             .int64_array_value = stablehlo_minimum, .value_size = 3};
  }
}

PJRT_Error *av_PJRT_Plugin_Attributes(PJRT_Plugin_Attributes_Args *args) {
  AV_ARGS(args, PJRT_Plugin_Attributes_Args);
  pthread_once(&attributes_once, attributes_init);
  bool old_caller =
      args->struct_size < ANVIL_PJRT_STRUCT_SIZE(PJRT_Plugin_Attributes_Args, num_attributes);
  args->attributes = plugin_attributes[old_caller ? AV_ATTRS_OLD_CALLER : AV_ATTRS_NEW_CALLER];
  /* Callers of 0.55 to 0.70 declare 24 bytes (their header's STRUCT_SIZE named `attributes`) but
   * have and read num_attributes: every supported caller's struct extends past it. */
  args->num_attributes = 3;
  return NULL;
}

/* ------------------------------------------------------------------- table */

static void wrap_PJRT_Error_Destroy(PJRT_Error_Destroy_Args *args) { av_PJRT_Error_Destroy(args); }
static void wrap_PJRT_Error_Message(PJRT_Error_Message_Args *args) { av_PJRT_Error_Message(args); }

#define AV_ENTRY(name) .PJRT_##name = wrap_PJRT_##name,
static const PJRT_Api anvil_api = {
    .struct_size = PJRT_Api_STRUCT_SIZE,
    /* the extension chain: layouts, shardings, profiler, custom partitioner, FFI */
    .extension_start = (PJRT_Extension_Base *)&av_layouts_ext.base,
    .pjrt_api_version = {.struct_size = PJRT_Api_Version_STRUCT_SIZE,
                         .extension_start = NULL,
                         .major_version = PJRT_API_MAJOR,
                         .minor_version = PJRT_API_MINOR},
    .PJRT_Error_Destroy = wrap_PJRT_Error_Destroy,
    .PJRT_Error_Message = wrap_PJRT_Error_Message,
    AV_PJRT_IMPLEMENTED(AV_ENTRY) AV_PJRT_UNIMPLEMENTED(AV_ENTRY)};

__attribute__((visibility("default"))) const PJRT_Api *GetPjrtApi(void) {
  (void)av_trace_enabled(); /* reads ANVIL_TRACE once */
  return &anvil_api;
}
