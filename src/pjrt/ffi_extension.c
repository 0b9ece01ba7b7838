/* The PJRT FFI extension (type PJRT_Extension_Type_FFI, version 2; layout in
 * include/anvil/pjrt_ffi.h), last in the PJRT_Api extension chain (api.c):
 *
 * - type_id_register(name, id): the FFI type registry the handlers' XLA_FFI_Type_Register and
 *   the Python package's registrations use (runtime/ffi/registry.c): id 0 gets a fresh id, a
 *   name already bound to another id is refused (INTERNAL, as XLA's registry answers).
 * - user_data_add(context, {type id, data, deleter}): the entry goes into the
 *   PJRT_ExecuteContext (execute_context.c); handlers of every execution given that context
 *   find it with XLA_FFI_ExecutionContext_Get.
 * - register_handler(target, platform, api_version, handler, traits): the same handler
 *   registry jax.ffi.register_ffi_target fills through the Python package; api_version 1
 *   registers an XLA FFI handler (its execute stage), 0 a legacy custom call.
 *
 * Every argument struct is checked by its declared size before a field is read. */
#include <string.h>

#include "anvil/pjrt_ffi.h"
#include "pjrt/execute_context.h"
#include "pjrt/ffi_extension.h"
#include "pjrt/pjrt_internal.h"
#include "runtime/ffi/ffi.h"

/* Longest names taken (the registry's and XLA's own names are far shorter). */
enum { MAX_TARGET_NAME = 1024, MAX_PLATFORM_NAME = 64, MAX_TYPE_NAME = 1024 };

#define AV_FFI_ARGS(args, Type) AV_ARGS_MIN(args, Type, (size_t)Type##_STRUCT_SIZE)

static PJRT_Error *type_id_register(PJRT_FFI_TypeID_Register_Args *args) {
  AV_FFI_ARGS(args, PJRT_FFI_TypeID_Register_Args);
  const char *fn = "PJRT_FFI_TypeID_Register";
  AV_REQUIRE(args->type_name && args->type_name_size > 0 &&
                 args->type_name_size <= MAX_TYPE_NAME,
             AV_INVALID_ARGUMENT, "%s: type_name must be 1 to %d bytes", fn, MAX_TYPE_NAME);
  av_diag d;
  av_diag_init(&d);
  int64_t id = args->type_id;
  if (av_ffi_register_type(args->type_name, args->type_name_size, &id, NULL, &d) != AV_OK)
    return av_error_from_diag(&d);
  args->type_id = id;
  return NULL;
}

static PJRT_Error *user_data_add(PJRT_FFI_UserData_Add_Args *args) {
  AV_FFI_ARGS(args, PJRT_FFI_UserData_Add_Args);
  return av_execute_context_add(args->context, args->user_data.type_id, args->user_data.data,
                                args->user_data.deleter);
}

/* A (pointer, size) name as a NUL-terminated string in buf[cap]; false when it does not fit. */
static bool copy_name(const char *p, size_t n, char *buf, size_t cap) {
  if (!p || n == 0 || n >= cap || memchr(p, '\0', n)) return false;
  memcpy(buf, p, n);
  buf[n] = '\0';
  return true;
}

static PJRT_Error *register_handler(PJRT_FFI_Register_Handler_Args *args) {
  AV_FFI_ARGS(args, PJRT_FFI_Register_Handler_Args);
  const char *fn = "PJRT_FFI_Register_Handler";
  char target[MAX_TARGET_NAME], platform[MAX_PLATFORM_NAME];
  AV_REQUIRE(copy_name(args->target_name, args->target_name_size, target, sizeof target),
             AV_INVALID_ARGUMENT, "%s: target_name must be 1 to %d bytes without NUL", fn,
             MAX_TARGET_NAME - 1);
  AV_REQUIRE(copy_name(args->platform_name, args->platform_name_size, platform, sizeof platform),
             AV_INVALID_ARGUMENT, "%s: platform_name must be 1 to %d bytes without NUL", fn,
             MAX_PLATFORM_NAME - 1);
  AV_REQUIRE(args->handler, AV_INVALID_ARGUMENT, "%s: the handler of %s is NULL", fn, target);
  AV_REQUIRE(args->api_version == 0 || args->api_version == 1, AV_INVALID_ARGUMENT,
             "%s: api_version %d for %s (0: legacy custom call, 1: XLA FFI handler)", fn,
             args->api_version, target);
  av_xffi_bundle bundle = {0};
  void *handler = args->handler;
  memcpy(&bundle.execute, &handler, sizeof bundle.execute); /* a data pointer to a function */
  av_diag d;
  av_diag_init(&d);
  if (av_ffi_register(target, platform, args->api_version, &bundle, handler,
                      (uint32_t)args->traits, &d) != AV_OK)
    return av_error_from_diag(&d);
  return NULL;
}

const PJRT_FFI_Extension av_ffi_ext = {
    .base = {.struct_size = PJRT_FFI_Extension_STRUCT_SIZE,
             .type = PJRT_Extension_Type_FFI,
             .next = NULL},
    .type_id_register = type_id_register,
    .user_data_add = user_data_add,
    .register_handler = register_handler,
};
