/* The XLA_FFI_Api table anvil hands handlers (call_frame->api): version 0.3, every function.
 *
 * Every argument struct is checked by its size (>=, trap 2) before a field is read, and out
 * fields are written by layout. A bad call answers an error object, never a crash. What the
 * CPU has no use for answers as XLA:CPU does: no GPU stream, no device memory (the handler's
 * ScratchAllocator then reports it). */
#include <stdio.h>
#include <string.h>

#include "runtime/ffi/ffi.h"
#include "runtime/thread_pool.h"

#define BAD_ARGS(fn) av_ffi_error_new(AV_XFFI_INVALID_ARGUMENT, "%s: bad arguments (struct size)", fn)

/* An error object carrying `d`'s code and message. */
static av_xffi_error *from_diag(const av_diag *d) {
  return av_ffi_error_new((int32_t)d->code, "%s", d->msg);
}

static av_xffi_error *no_ctx(const char *fn) {
  return av_ffi_error_new(AV_XFFI_INVALID_ARGUMENT, "%s: not an execution context anvil passed", fn);
}

static av_xffi_error *handler_register(av_xffi_handler_register_args *a) {
  if (!a || a->struct_size < AV_XFFI_HANDLER_REGISTER_SIZE) return BAD_ARGS("XLA_FFI_Handler_Register");
  char name[512], platform[64];
  if (!a->name.ptr || a->name.len >= sizeof name || !a->platform.ptr ||
      a->platform.len >= sizeof platform)
    return BAD_ARGS("XLA_FFI_Handler_Register");
  memcpy(name, a->name.ptr, a->name.len);
  name[a->name.len] = '\0';
  memcpy(platform, a->platform.ptr, a->platform.len);
  platform[a->platform.len] = '\0';
  av_diag d;
  av_diag_init(&d);
  if (av_ffi_register(name, platform, 1, &a->bundle, NULL, a->traits, &d) != AV_OK) return from_diag(&d);
  return NULL;
}

static av_xffi_error *stream_get(av_xffi_stream_get_args *a) {
  (void)a;
  return av_ffi_error_new(AV_XFFI_UNIMPLEMENTED, "XLA FFI GPU context is not available (anvil is a CPU runtime: no stream)");
}

static av_xffi_error *type_register(av_xffi_type_register_args *a) {
  if (!a || a->struct_size < AV_XFFI_TYPE_REGISTER_SIZE || !a->type_id || !a->name.ptr)
    return BAD_ARGS("XLA_FFI_Type_Register");
  /* type_info lies past the checked size: present in every header that has the field */
  const av_xffi_type_info *ti = a->struct_size >= sizeof *a ? a->type_info : NULL;
  void (*deleter)(void *) = ti && ti->struct_size >= sizeof *ti ? ti->deleter : NULL;
  av_diag d;
  av_diag_init(&d);
  int64_t id = a->type_id->type_id;
  if (av_ffi_register_type(a->name.ptr, a->name.len, &id, deleter, &d) != AV_OK) return from_diag(&d);
  a->type_id->type_id = id;
  return NULL;
}

/* The user data the caller attached to this execution under the type id (the PJRT layer's
 * PJRT_FFI_UserData_Add); none at the instantiate stage (compile time). */
static av_xffi_error *context_get(av_xffi_context_get_args *a) {
  if (!a || a->struct_size < sizeof *a || !a->type_id) return BAD_ARGS("XLA_FFI_ExecutionContext_Get");
  av_xffi_ctx *ctx = av_ffi_ctx_check(a->ctx);
  if (!ctx) return no_ctx("XLA_FFI_ExecutionContext_Get");
  void *data;
  if (!av_user_data_find(ctx->user_data, a->type_id->type_id, &data))
    return av_ffi_error_new(AV_XFFI_NOT_FOUND,
                            "User data with type id %lld not found in execution context",
                            (long long)a->type_id->type_id);
  a->data = data;
  return NULL;
}

/* State_Set / State_Get: 0.3 args carry the stage; 0.2 handlers' do not (INSTANTIATE). */
static bool state_args(av_xffi_state_args *a, int32_t *stage, av_xffi_type_id **tid, void ***state) {
  if (!a) return false;
  if (a->struct_size >= AV_XFFI_STATE_SIZE) {
    *stage = a->stage;
    *tid = a->type_id;
    *state = &a->state;
  } else if (a->struct_size >= AV_XFFI_STATE_SIZE_V02) {
    av_xffi_state_args_v02 *o = (av_xffi_state_args_v02 *)a;
    *stage = AV_XFFI_INSTANTIATE;
    *tid = o->type_id;
    *state = &o->state;
  } else {
    return false;
  }
  return *tid != NULL;
}

static av_xffi_error *state_set(av_xffi_state_args *a) {
  int32_t stage;
  av_xffi_type_id *tid;
  void **state;
  if (!state_args(a, &stage, &tid, &state)) return BAD_ARGS("XLA_FFI_State_Set");
  av_xffi_ctx *ctx = av_ffi_ctx_check(a->ctx);
  if (!ctx) return no_ctx("XLA_FFI_State_Set");
  av_diag d;
  av_diag_init(&d);
  if (av_ffi_site_set(ctx->site, stage, tid->type_id, *state, &d) != AV_OK) return from_diag(&d);
  return NULL;
}

static av_xffi_error *state_get(av_xffi_state_args *a) {
  int32_t stage;
  av_xffi_type_id *tid;
  void **state;
  if (!state_args(a, &stage, &tid, &state)) return BAD_ARGS("XLA_FFI_State_Get");
  av_xffi_ctx *ctx = av_ffi_ctx_check(a->ctx);
  if (!ctx) return no_ctx("XLA_FFI_State_Get");
  av_diag d;
  av_diag_init(&d);
  if (av_ffi_site_get(ctx->site, stage, tid->type_id, state, &d) != AV_OK) return from_diag(&d);
  return NULL;
}

static av_xffi_error *memory_allocate(av_xffi_memory_allocate_args *a) {
  (void)a;
  return av_ffi_error_new(AV_XFFI_UNIMPLEMENTED, "XLA FFI GPU context is not available (anvil is a CPU runtime: no device memory allocator)");
}

static av_xffi_error *memory_free(av_xffi_memory_free_args *a) {
  (void)a;
  return av_ffi_error_new(AV_XFFI_UNIMPLEMENTED, "XLA FFI GPU context is not available (anvil is a CPU runtime: no device memory allocator)");
}

static av_xffi_error *thread_pool_schedule(av_xffi_schedule_args *a) {
  if (!a || a->struct_size < sizeof *a || !a->task) return BAD_ARGS("XLA_FFI_ThreadPool_Schedule");
  av_xffi_ctx *ctx = av_ffi_ctx_check(a->ctx);
  if (!ctx) return no_ctx("XLA_FFI_ThreadPool_Schedule");
  /* runs on a worker of the pool, or on this thread when none can take it (no pool, no
   * workers, or the caller is itself a pool worker: see av_thread_pool_schedule) */
  av_thread_pool_schedule(ctx->pool, a->task, a->data);
  return NULL;
}

static av_xffi_error *thread_pool_num_threads(av_xffi_num_threads_args *a) {
  if (!a || a->struct_size < sizeof *a || !a->num_threads) return BAD_ARGS("XLA_FFI_ThreadPool_NumThreads");
  av_xffi_ctx *ctx = av_ffi_ctx_check(a->ctx);
  if (!ctx) return no_ctx("XLA_FFI_ThreadPool_NumThreads");
  *a->num_threads = av_thread_pool_size(ctx->pool);
  return NULL;
}

static av_xffi_error *future_create(av_xffi_future_create_args *a) {
  if (!a || a->struct_size < AV_XFFI_FUTURE_CREATE_SIZE) return BAD_ARGS("XLA_FFI_Future_Create");
  av_xffi_future *f = av_ffi_future_new();
  if (!f) return av_ffi_error_new(AV_XFFI_RESOURCE_EXHAUSTED, "out of memory for a future");
  a->future = f; /* past the checked size, by layout */
  return NULL;
}

static av_xffi_error *future_set_available(av_xffi_future_set_available_args *a) {
  if (!a || a->struct_size < sizeof *a) return BAD_ARGS("XLA_FFI_Future_SetAvailable");
  if (!av_ffi_future_complete(a->future, NULL))
    return av_ffi_error_new(AV_XFFI_INVALID_ARGUMENT, "XLA_FFI_Future_SetAvailable: not a pending future");
  return NULL;
}

static av_xffi_error *future_set_error(av_xffi_future_set_error_args *a) {
  if (!a || a->struct_size < sizeof *a) return BAD_ARGS("XLA_FFI_Future_SetError");
  if (!av_ffi_error_is_live(a->error))
    return av_ffi_error_new(AV_XFFI_INVALID_ARGUMENT, "XLA_FFI_Future_SetError: the error must be an error the API made");
  if (!av_ffi_future_complete(a->future, a->error))
    return av_ffi_error_new(AV_XFFI_INVALID_ARGUMENT, "XLA_FFI_Future_SetError: not a pending future");
  return NULL;
}

static av_xffi_error *run_id_get(av_xffi_run_id_args *a) {
  /* ffi.h passes a larger struct_size than the struct has: only run_id is written */
  if (!a || a->struct_size < sizeof *a) return BAD_ARGS("XLA_FFI_RunId_Get");
  av_xffi_ctx *ctx = av_ffi_ctx_check(a->ctx);
  if (!ctx) return no_ctx("XLA_FFI_RunId_Get");
  a->run_id = ctx->run_id;
  return NULL;
}

static av_xffi_error *device_ordinal_get(av_xffi_device_ordinal_args *a) {
  if (!a || a->struct_size < AV_XFFI_SIZE(av_xffi_device_ordinal_args, device_ordinal))
    return BAD_ARGS("XLA_FFI_DeviceOrdinal_Get");
  av_xffi_ctx *ctx = av_ffi_ctx_check(a->ctx);
  if (!ctx) return no_ctx("XLA_FFI_DeviceOrdinal_Get");
  a->device_ordinal = ctx->device_ordinal;
  return NULL;
}

static const av_xffi_api the_api = {
    .struct_size = sizeof(av_xffi_api),
    .api_version = {AV_XFFI_VERSION_SIZE, NULL, AV_XFFI_MAJOR, AV_XFFI_MINOR},
    .error_create = av_ffi_api_error_create,
    .error_get_message = av_ffi_api_error_get_message,
    .error_destroy = av_ffi_api_error_destroy,
    .handler_register = handler_register,
    .stream_get = stream_get,
    .type_register = type_register,
    .context_get = context_get,
    .state_set = state_set,
    .state_get = state_get,
    .memory_allocate = memory_allocate,
    .memory_free = memory_free,
    .thread_pool_schedule = thread_pool_schedule,
    .thread_pool_num_threads = thread_pool_num_threads,
    .future_create = future_create,
    .future_set_available = future_set_available,
    .future_set_error = future_set_error,
    .run_id_get = run_id_get,
    .device_ordinal_get = device_ordinal_get,
};

const av_xffi_api *av_ffi_api(void) { return &the_api; }
