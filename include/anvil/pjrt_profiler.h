/* The plugin profiler API and the PJRT extension that hands it to a framework.
 *
 * Declared here in anvil's words, ABI-compatible with XLA's plugin profiler interface
 * (xla/backends/profiler/plugin/profiler_c_api.h, PLUGIN_PROFILER_VERSION 1) and with
 * PJRT_Profiler_Extension (xla/pjrt/c/pjrt_c_api_profiler_extension.h, version 1).
 *
 * The framework finds the extension (type PJRT_Extension_Type_Profiler) in the PJRT_Api
 * extension chain and drives one profiling session at a time through `profiler_api`:
 * create -> start -> ... the program runs ... -> stop -> collect_data -> destroy.
 * collect_data hands over a serialized tensorflow.profiler.XSpace whose planes the framework
 * merges into its own trace (jax.profiler.trace writes them to <dir>/plugins/profile/...).
 *
 * Note on callers: jaxlib fills only the fields it uses (struct_size is often left unset in
 * these argument structs), calls collect_data once with buffer == NULL and then reads the
 * bytes at the `buffer` the plugin set; a plugin must therefore point `buffer` at data it
 * keeps until destroy. Errors are the plugin's own objects; codes are absl status codes
 * (the same numbers as PJRT_Error_Code). */
#ifndef ANVIL_PJRT_PROFILER_H
#define ANVIL_PJRT_PROFILER_H

#include <stddef.h>
#include <stdint.h>

#include "anvil/pjrt_c_api.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ANVIL_PLUGIN_PROFILER_VERSION 1
#define ANVIL_PJRT_PROFILER_EXTENSION_VERSION 1

typedef struct PLUGIN_Profiler PLUGIN_Profiler;             /* one profiling session */
typedef struct PLUGIN_Profiler_Error PLUGIN_Profiler_Error; /* NULL means success */

typedef struct PLUGIN_Profiler_Error_Destroy_Args {
  size_t struct_size;
  void *priv;
  PLUGIN_Profiler_Error *error; /* may be NULL */
} PLUGIN_Profiler_Error_Destroy_Args;

typedef struct PLUGIN_Profiler_Error_Message_Args {
  size_t struct_size;
  void *priv;
  const PLUGIN_Profiler_Error *error;
  const char *message; /* out: lives as long as `error` */
  size_t message_size; /* out */
} PLUGIN_Profiler_Error_Message_Args;

typedef struct PLUGIN_Profiler_Error_GetCode_Args {
  size_t struct_size;
  void *priv;
  const PLUGIN_Profiler_Error *error;
  int code; /* out */
} PLUGIN_Profiler_Error_GetCode_Args;

typedef struct PLUGIN_Profiler_Create_Args {
  size_t struct_size;
  const char *options; /* a serialized tensorflow.ProfileOptions */
  size_t options_size;
  PLUGIN_Profiler *profiler; /* out */
} PLUGIN_Profiler_Create_Args;

/* Destroy, Start and Stop take just the session. */
typedef struct PLUGIN_Profiler_Session_Args {
  size_t struct_size;
  PLUGIN_Profiler *profiler;
} PLUGIN_Profiler_Destroy_Args, PLUGIN_Profiler_Start_Args, PLUGIN_Profiler_Stop_Args;

typedef struct PLUGIN_Profiler_CollectData_Args {
  size_t struct_size;
  PLUGIN_Profiler *profiler;
  uint8_t *buffer;             /* in: NULL, or room for buffer_size_in_bytes; out: the data */
  size_t buffer_size_in_bytes; /* out */
} PLUGIN_Profiler_CollectData_Args;

typedef struct PLUGIN_Profiler_Api {
  size_t struct_size; /* callers insist on exactly sizeof(PLUGIN_Profiler_Api) */
  void *priv;
  void (*error_destroy)(PLUGIN_Profiler_Error_Destroy_Args *args);
  void (*error_message)(PLUGIN_Profiler_Error_Message_Args *args);
  PLUGIN_Profiler_Error *(*error_get_code)(PLUGIN_Profiler_Error_GetCode_Args *args);
  PLUGIN_Profiler_Error *(*create)(PLUGIN_Profiler_Create_Args *args);
  PLUGIN_Profiler_Error *(*destroy)(PLUGIN_Profiler_Destroy_Args *args);
  PLUGIN_Profiler_Error *(*start)(PLUGIN_Profiler_Start_Args *args);
  PLUGIN_Profiler_Error *(*stop)(PLUGIN_Profiler_Stop_Args *args);
  PLUGIN_Profiler_Error *(*collect_data)(PLUGIN_Profiler_CollectData_Args *args);
} PLUGIN_Profiler_Api;

/* The extension itself: a PJRT_Extension_Base followed by the API table. When a framework
 * passes one as an argument extension instead, traceme_context_id carries its trace context
 * (anvil does not use that). */
typedef struct PJRT_Profiler_Extension {
  PJRT_Extension_Base base; /* type = PJRT_Extension_Type_Profiler */
  const PLUGIN_Profiler_Api *profiler_api;
  int64_t traceme_context_id;
} PJRT_Profiler_Extension;

#ifdef __cplusplus
}
#endif

#endif
