/* GetPjrtApi: the one exported symbol. A constant table of entry points; each goes through a
 * thin wrapper that logs the call when ANVIL_TRACE=1. Entries anvil does not implement yet
 * answer UNIMPLEMENTED with the function's name, so that no slot is ever NULL. */
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

static const int64_t stablehlo_current[3] = {ANVIL_STABLEHLO_CURRENT_MAJOR,
                                             ANVIL_STABLEHLO_CURRENT_MINOR,
                                             ANVIL_STABLEHLO_CURRENT_PATCH};
static const int64_t stablehlo_minimum[3] = {ANVIL_STABLEHLO_MINIMUM_MAJOR,
                                             ANVIL_STABLEHLO_MINIMUM_MINOR,
                                             ANVIL_STABLEHLO_MINIMUM_PATCH};

#define AV_NAME(s) .name = (s), .name_size = sizeof(s) - 1
static const PJRT_NamedValue plugin_attributes[] = {
    {.struct_size = PJRT_NamedValue_STRUCT_SIZE, AV_NAME("xla_version"),
     .type = PJRT_NamedValue_kInt64, .int64_value = 2, .value_size = 1},
    {.struct_size = PJRT_NamedValue_STRUCT_SIZE, AV_NAME("stablehlo_current_version"),
     .type = PJRT_NamedValue_kInt64List, .int64_array_value = stablehlo_current, .value_size = 3},
    {.struct_size = PJRT_NamedValue_STRUCT_SIZE, AV_NAME("stablehlo_minimum_version"),
     .type = PJRT_NamedValue_kInt64List, .int64_array_value = stablehlo_minimum, .value_size = 3},
};

PJRT_Error *av_PJRT_Plugin_Attributes(PJRT_Plugin_Attributes_Args *args) {
  AV_ARGS(args, PJRT_Plugin_Attributes_Args);
  args->attributes = plugin_attributes;
  args->num_attributes = sizeof plugin_attributes / sizeof plugin_attributes[0];
  return NULL;
}

/* ------------------------------------------------------------------- table */

static void wrap_PJRT_Error_Destroy(PJRT_Error_Destroy_Args *args) { av_PJRT_Error_Destroy(args); }
static void wrap_PJRT_Error_Message(PJRT_Error_Message_Args *args) { av_PJRT_Error_Message(args); }

#define AV_ENTRY(name) .PJRT_##name = wrap_PJRT_##name,
static const PJRT_Api anvil_api = {
    .struct_size = PJRT_Api_STRUCT_SIZE,
    .extension_start = (PJRT_Extension_Base *)&av_layouts_ext.base, /* then shardings, profiler */
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
