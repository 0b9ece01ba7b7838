/* The PJRT FFI extension: how a framework reaches the plugin's XLA FFI (typed custom calls).
 *
 * Declared here in anvil's words, ABI-compatible with PJRT_FFI_Extension
 * (xla/pjrt/c/pjrt_c_api_ffi_extension.h, PJRT_API_FFI_EXTENSION_VERSION 2, the version with
 * register_handler). The reference dumps of the PJRT C API (/work/shared/reference) do not
 * cover extensions; the sizes below follow that header's field order on LP64 and are pinned
 * by the _Static_asserts at the end.
 *
 * The framework finds the extension (type PJRT_Extension_Type_FFI) in the PJRT_Api
 * extension chain. Per execution it may create a PJRT_ExecuteContext, attach user data to it
 * (user_data_add: a type id and a pointer the handlers look up with
 * XLA_FFI_ExecutionContext_Get), and pass it in PJRT_ExecuteOptions.context. jaxlib's PJRT C
 * API client does so from ExecuteOptions::context (its ForwardExecuteContext): it creates the
 * context, adds each entry without a deleter (the data stays jaxlib's), passes it to
 * PJRT_LoadedExecutable_Execute and destroys it as soon as Execute returns, also when the
 * execution is still running (only its multi-device Execute forwards; the single-device
 * ExecuteSharded / ExecutePortable pass no context). */
#ifndef ANVIL_PJRT_FFI_H
#define ANVIL_PJRT_FFI_H

#include <stddef.h>
#include <stdint.h>

#include "anvil/pjrt_c_api.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PJRT_API_FFI_EXTENSION_VERSION 2

/* Registers a type by name in the plugin's FFI type registry: type_id 0 asks for a fresh id
 * (written back); otherwise the caller's id is bound to the name (an error when the name has
 * another one). */
typedef struct PJRT_FFI_TypeID_Register_Args {
  size_t struct_size;
  PJRT_Extension_Base *extension_start;
  const char *type_name;
  size_t type_name_size;
  int64_t type_id; /* in-out */
} PJRT_FFI_TypeID_Register_Args;
enum { PJRT_FFI_TypeID_Register_Args_STRUCT_SIZE = ANVIL_PJRT_STRUCT_SIZE(PJRT_FFI_TypeID_Register_Args, type_id) };
typedef PJRT_Error *PJRT_FFI_TypeID_Register(PJRT_FFI_TypeID_Register_Args *args);

/* One entry of an execution's user data. The deleter (may be NULL) runs on `data` when the
 * context is destroyed. */
typedef struct PJRT_FFI_UserData {
  int64_t type_id;
  void *data;
  void (*deleter)(void *data);
} PJRT_FFI_UserData;

typedef struct PJRT_FFI_UserData_Add_Args {
  size_t struct_size;
  PJRT_Extension_Base *extension_start;
  PJRT_ExecuteContext *context;
  PJRT_FFI_UserData user_data;
} PJRT_FFI_UserData_Add_Args;
enum { PJRT_FFI_UserData_Add_Args_STRUCT_SIZE = ANVIL_PJRT_STRUCT_SIZE(PJRT_FFI_UserData_Add_Args, user_data) };
typedef PJRT_Error *PJRT_FFI_UserData_Add(PJRT_FFI_UserData_Add_Args *args);

typedef enum PJRT_FFI_Handler_TraitsBits {
  PJRT_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE = 1u << 0,
} PJRT_FFI_Handler_TraitsBits;

/* Registers a custom-call handler for a platform. No extension_start in this struct. */
typedef struct PJRT_FFI_Register_Handler_Args {
  size_t struct_size;
  const char *target_name;
  size_t target_name_size;
  int api_version; /* 0: a legacy (untyped) custom call, 1: an XLA FFI handler */
  void *handler;   /* XLA_FFI_Handler* (the execute stage), or the legacy function */
  const char *platform_name;
  size_t platform_name_size;
  PJRT_FFI_Handler_TraitsBits traits;
} PJRT_FFI_Register_Handler_Args;
enum { PJRT_FFI_Register_Handler_Args_STRUCT_SIZE = ANVIL_PJRT_STRUCT_SIZE(PJRT_FFI_Register_Handler_Args, traits) };
typedef PJRT_Error *PJRT_FFI_Register_Handler(PJRT_FFI_Register_Handler_Args *args);

typedef struct PJRT_FFI_Extension {
  PJRT_Extension_Base base; /* type = PJRT_Extension_Type_FFI */
  PJRT_FFI_TypeID_Register *type_id_register;
  PJRT_FFI_UserData_Add *user_data_add;
  PJRT_FFI_Register_Handler *register_handler; /* absent in headers older than version 2's */
} PJRT_FFI_Extension;
enum { PJRT_FFI_Extension_STRUCT_SIZE = ANVIL_PJRT_STRUCT_SIZE(PJRT_FFI_Extension, register_handler) };

#if !defined(__cplusplus) && (defined(__x86_64__) || defined(__aarch64__))
_Static_assert(PJRT_FFI_TypeID_Register_Args_STRUCT_SIZE == 40, "PJRT_FFI_TypeID_Register_Args");
_Static_assert(sizeof(PJRT_FFI_UserData) == 24, "PJRT_FFI_UserData");
_Static_assert(PJRT_FFI_UserData_Add_Args_STRUCT_SIZE == 48, "PJRT_FFI_UserData_Add_Args");
_Static_assert(offsetof(PJRT_FFI_Register_Handler_Args, api_version) == 24 &&
                   offsetof(PJRT_FFI_Register_Handler_Args, handler) == 32 &&
                   PJRT_FFI_Register_Handler_Args_STRUCT_SIZE == 60,
               "PJRT_FFI_Register_Handler_Args");
_Static_assert(PJRT_FFI_Extension_STRUCT_SIZE == 48, "PJRT_FFI_Extension");
#endif

#ifdef __cplusplus
}
#endif

#endif
