/* The binary interface of XLA's FFI ("typed custom calls"), version 0.3 (jaxlib 0.10.2), as
 * anvil serves it to handlers compiled against xla/ffi/api/{c_api,api,ffi}.h.
 *
 * anvil's own declaration of that ABI: the layouts are facts checked below (offsets and
 * sizes on LP64), the names are ours. Every argument struct starts with {struct_size,
 * extension_start}; a struct's "checked size" (the *_SIZE constants) ends at the field the
 * header names for it, which for several structs is not the last one: out fields after it
 * (call_frame.future, future_create.future, type_register.type_info, metadata.state_type_id)
 * exist all the same and are reached by layout, never by struct_size (see
 * ../shared/research/xla_ffi.md, trap 3). Handlers check the call frame's size with ==;
 * anvil checks what handlers hand it with >= (trap 2). All enums are 4-byte ints. */
#ifndef ANVIL_RUNTIME_FFI_ABI_H
#define ANVIL_RUNTIME_FFI_ABI_H

#include <stddef.h>
#include <stdint.h>

enum { AV_XFFI_MAJOR = 0, AV_XFFI_MINOR = 3 };

/* ---- common */
typedef struct av_xffi_ext {
  size_t struct_size;
  int32_t type; /* 1: the metadata extension */
  struct av_xffi_ext *next;
} av_xffi_ext;
enum { AV_XFFI_EXT_METADATA = 1 };

typedef struct av_xffi_version {
  size_t struct_size;
  av_xffi_ext *ext;
  int32_t major, minor;
} av_xffi_version;

typedef struct av_xffi_bytes { /* a string: not NUL-terminated by contract */
  const char *ptr;
  size_t len;
} av_xffi_bytes;

typedef struct av_xffi_error av_xffi_error;     /* runtime-defined (errors.c) */
typedef struct av_xffi_future av_xffi_future;   /* runtime-defined (future.c) */
typedef struct av_xffi_ctx av_xffi_ctx;         /* runtime-defined (ffi_internal.h) */

/* Error codes: absl's status codes 0..16. */
enum {
  AV_XFFI_OK = 0, AV_XFFI_CANCELLED, AV_XFFI_UNKNOWN, AV_XFFI_INVALID_ARGUMENT,
  AV_XFFI_DEADLINE_EXCEEDED, AV_XFFI_NOT_FOUND, AV_XFFI_ALREADY_EXISTS,
  AV_XFFI_PERMISSION_DENIED, AV_XFFI_RESOURCE_EXHAUSTED, AV_XFFI_FAILED_PRECONDITION,
  AV_XFFI_ABORTED, AV_XFFI_OUT_OF_RANGE, AV_XFFI_UNIMPLEMENTED, AV_XFFI_INTERNAL,
  AV_XFFI_UNAVAILABLE, AV_XFFI_DATA_LOSS, AV_XFFI_UNAUTHENTICATED
};

/* Element types: xla::PrimitiveType numbers. */
enum {
  AV_XFFI_INVALID = 0, AV_XFFI_PRED = 1, AV_XFFI_S8 = 2, AV_XFFI_S16 = 3, AV_XFFI_S32 = 4,
  AV_XFFI_S64 = 5, AV_XFFI_U8 = 6, AV_XFFI_U16 = 7, AV_XFFI_U32 = 8, AV_XFFI_U64 = 9,
  AV_XFFI_F16 = 10, AV_XFFI_F32 = 11, AV_XFFI_F64 = 12, AV_XFFI_C64 = 15, AV_XFFI_BF16 = 16,
  AV_XFFI_TOKEN = 17, AV_XFFI_C128 = 18, AV_XFFI_F8E5M2 = 19, AV_XFFI_F8E4M3FN = 20,
  AV_XFFI_S4 = 21, AV_XFFI_U4 = 22, AV_XFFI_F8E4M3B11FNUZ = 23, AV_XFFI_F8E5M2FNUZ = 24,
  AV_XFFI_F8E4M3FNUZ = 25, AV_XFFI_S2 = 26, AV_XFFI_U2 = 27, AV_XFFI_F8E4M3 = 28,
  AV_XFFI_F8E3M4 = 29, AV_XFFI_S1 = 30, AV_XFFI_U1 = 31, AV_XFFI_F4E2M1FN = 32,
  AV_XFFI_F8E8M0FNU = 33
};

/* ---- errors */
typedef struct av_xffi_error_create_args {
  size_t struct_size;
  av_xffi_ext *ext;
  const char *message;
  int32_t errc;
} av_xffi_error_create_args;
typedef struct av_xffi_error_get_message_args {
  size_t struct_size;
  av_xffi_ext *ext;
  av_xffi_error *error;
  const char *message; /* out */
} av_xffi_error_get_message_args;
typedef struct av_xffi_error_destroy_args {
  size_t struct_size;
  av_xffi_ext *ext;
  av_xffi_error *error;
} av_xffi_error_destroy_args;

/* ---- buffers, arguments, results, attributes */
typedef struct av_xffi_buffer {
  size_t struct_size;
  av_xffi_ext *ext;
  int32_t dtype;
  void *data;
  int64_t rank;
  int64_t *dims; /* rank logical dimensions */
} av_xffi_buffer;
enum { AV_XFFI_ARG_BUFFER = 1, AV_XFFI_RET_BUFFER = 1 };
enum { AV_XFFI_ATTR_ARRAY = 1, AV_XFFI_ATTR_DICT = 2, AV_XFFI_ATTR_SCALAR = 3,
       AV_XFFI_ATTR_STRING = 4 };

typedef struct av_xffi_scalar {
  int32_t dtype;
  void *value;
} av_xffi_scalar;
typedef struct av_xffi_array {
  int32_t dtype;
  size_t size; /* elements */
  void *data;
} av_xffi_array;

typedef struct av_xffi_args {
  size_t struct_size;
  av_xffi_ext *ext;
  int64_t size;
  int32_t *types;
  void **args; /* av_xffi_buffer* */
} av_xffi_args;
typedef av_xffi_args av_xffi_rets; /* same layout, `args` holding the results */

typedef struct av_xffi_attrs {
  size_t struct_size;
  av_xffi_ext *ext;
  int64_t size;
  int32_t *types;
  av_xffi_bytes **names; /* sorted byte-wise */
  void **attrs;          /* av_xffi_scalar / av_xffi_array / av_xffi_bytes / av_xffi_attrs */
} av_xffi_attrs;

/* ---- the call frame and handlers */
enum { AV_XFFI_INSTANTIATE = 0, AV_XFFI_PREPARE = 1, AV_XFFI_INITIALIZE = 2, AV_XFFI_EXECUTE = 3 };

struct av_xffi_api;
typedef struct av_xffi_call_frame {
  size_t struct_size; /* AV_XFFI_CALL_FRAME_SIZE: `future` is outside it */
  av_xffi_ext *ext;
  const struct av_xffi_api *api;
  av_xffi_ctx *ctx;
  int32_t stage;
  av_xffi_args args;
  av_xffi_rets rets;
  av_xffi_attrs attrs;
  av_xffi_future *future; /* out: set by an asynchronous handler */
} av_xffi_call_frame;
typedef av_xffi_error *(*av_xffi_handler)(av_xffi_call_frame *frame);

typedef struct av_xffi_bundle {
  av_xffi_handler instantiate, prepare, initialize, execute;
} av_xffi_bundle;

typedef struct av_xffi_handler_register_args {
  size_t struct_size;
  av_xffi_ext *ext;
  av_xffi_bytes name;
  av_xffi_bytes platform;
  av_xffi_bundle bundle;
  uint32_t traits;
} av_xffi_handler_register_args;

/* ---- types, user data, state */
typedef struct av_xffi_type_id {
  int64_t type_id;
} av_xffi_type_id;
typedef struct av_xffi_type_info {
  size_t struct_size;
  av_xffi_ext *ext;
  void (*deleter)(void *object);
} av_xffi_type_info;
typedef struct av_xffi_type_register_args {
  size_t struct_size; /* AV_XFFI_TYPE_REGISTER_SIZE: `type_info` is outside it */
  av_xffi_ext *ext;
  av_xffi_bytes name;
  av_xffi_type_id *type_id; /* in-out: 0 asks for a fresh id */
  const av_xffi_type_info *type_info;
} av_xffi_type_register_args;
typedef struct av_xffi_context_get_args {
  size_t struct_size;
  av_xffi_ext *ext;
  av_xffi_ctx *ctx;
  av_xffi_type_id *type_id;
  void *data; /* out */
} av_xffi_context_get_args;
typedef struct av_xffi_state_args { /* State_Set and State_Get (state: in / out) */
  size_t struct_size; /* 48 (0.3); 40 from 0.2 handlers, which have no `stage` */
  av_xffi_ext *ext;
  av_xffi_ctx *ctx;
  int32_t stage;
  av_xffi_type_id *type_id;
  void *state;
} av_xffi_state_args;
typedef struct av_xffi_state_args_v02 {
  size_t struct_size;
  av_xffi_ext *ext;
  av_xffi_ctx *ctx;
  av_xffi_type_id *type_id;
  void *state;
} av_xffi_state_args_v02;

/* ---- devices, threads, futures, ids */
typedef struct av_xffi_stream_get_args {
  size_t struct_size;
  av_xffi_ext *ext;
  av_xffi_ctx *ctx;
  void *stream;
} av_xffi_stream_get_args;
typedef struct av_xffi_memory_allocate_args {
  size_t struct_size;
  av_xffi_ext *ext;
  av_xffi_ctx *ctx;
  size_t size, alignment;
  void *data;
} av_xffi_memory_allocate_args;
typedef struct av_xffi_memory_free_args {
  size_t struct_size;
  av_xffi_ext *ext;
  av_xffi_ctx *ctx;
  size_t size;
  void *data;
} av_xffi_memory_free_args;
typedef void (*av_xffi_task)(void *data);
typedef struct av_xffi_schedule_args {
  size_t struct_size;
  av_xffi_ext *ext;
  av_xffi_ctx *ctx;
  av_xffi_task task;
  void *data;
} av_xffi_schedule_args;
typedef struct av_xffi_num_threads_args {
  size_t struct_size;
  av_xffi_ext *ext;
  av_xffi_ctx *ctx;
  int64_t *num_threads;
} av_xffi_num_threads_args;
typedef struct av_xffi_future_create_args {
  size_t struct_size; /* AV_XFFI_FUTURE_CREATE_SIZE: `future` is outside it */
  av_xffi_ext *ext;
  av_xffi_future *future; /* out */
} av_xffi_future_create_args;
typedef struct av_xffi_future_set_available_args {
  size_t struct_size;
  av_xffi_ext *ext;
  av_xffi_future *future;
} av_xffi_future_set_available_args;
typedef struct av_xffi_future_set_error_args {
  size_t struct_size;
  av_xffi_ext *ext;
  av_xffi_future *future;
  av_xffi_error *error; /* owned by the runtime once passed */
} av_xffi_future_set_error_args;
typedef struct av_xffi_run_id_args {
  size_t struct_size;
  av_xffi_ext *ext;
  av_xffi_ctx *ctx;
  int64_t run_id; /* out */
} av_xffi_run_id_args;
typedef struct av_xffi_device_ordinal_args {
  size_t struct_size;
  av_xffi_ext *ext;
  av_xffi_ctx *ctx;
  int32_t device_ordinal; /* out */
} av_xffi_device_ordinal_args;

/* ---- metadata (the registration-time query of a handler) */
typedef struct av_xffi_metadata {
  size_t struct_size; /* AV_XFFI_METADATA_SIZE: `state_type_id` is outside it */
  av_xffi_version api_version;
  uint32_t traits;
  av_xffi_type_id state_type_id;
} av_xffi_metadata;
typedef struct av_xffi_metadata_ext {
  av_xffi_ext base;
  av_xffi_metadata *metadata;
} av_xffi_metadata_ext;

/* ---- the function table */
typedef struct av_xffi_api {
  size_t struct_size;
  av_xffi_ext *ext;
  av_xffi_version api_version;
  const void *internal_api; /* only XLA's statically linked variant reads it: NULL */
  av_xffi_error *(*error_create)(av_xffi_error_create_args *);
  void (*error_get_message)(av_xffi_error_get_message_args *);
  void (*error_destroy)(av_xffi_error_destroy_args *);
  av_xffi_error *(*handler_register)(av_xffi_handler_register_args *);
  av_xffi_error *(*stream_get)(av_xffi_stream_get_args *);
  av_xffi_error *(*type_register)(av_xffi_type_register_args *);
  av_xffi_error *(*context_get)(av_xffi_context_get_args *);
  av_xffi_error *(*state_set)(av_xffi_state_args *);
  av_xffi_error *(*state_get)(av_xffi_state_args *);
  av_xffi_error *(*memory_allocate)(av_xffi_memory_allocate_args *);
  av_xffi_error *(*memory_free)(av_xffi_memory_free_args *);
  av_xffi_error *(*thread_pool_schedule)(av_xffi_schedule_args *);
  av_xffi_error *(*thread_pool_num_threads)(av_xffi_num_threads_args *);
  av_xffi_error *(*future_create)(av_xffi_future_create_args *);
  av_xffi_error *(*future_set_available)(av_xffi_future_set_available_args *);
  av_xffi_error *(*future_set_error)(av_xffi_future_set_error_args *);
  av_xffi_error *(*run_id_get)(av_xffi_run_id_args *);
  av_xffi_error *(*device_ordinal_get)(av_xffi_device_ordinal_args *);
} av_xffi_api;

/* Checked sizes (offset of the named field + its size). */
#define AV_XFFI_SIZE(t, f) (offsetof(t, f) + sizeof(((t *)0)->f))
enum {
  AV_XFFI_CALL_FRAME_SIZE = AV_XFFI_SIZE(av_xffi_call_frame, attrs),
  AV_XFFI_ARGS_SIZE = AV_XFFI_SIZE(av_xffi_args, args),
  AV_XFFI_ATTRS_SIZE = AV_XFFI_SIZE(av_xffi_attrs, attrs),
  AV_XFFI_BUFFER_SIZE = AV_XFFI_SIZE(av_xffi_buffer, dims),
  AV_XFFI_VERSION_SIZE = AV_XFFI_SIZE(av_xffi_version, minor),
  AV_XFFI_ERROR_CREATE_SIZE = AV_XFFI_SIZE(av_xffi_error_create_args, errc),
  AV_XFFI_TYPE_REGISTER_SIZE = AV_XFFI_SIZE(av_xffi_type_register_args, type_id),
  AV_XFFI_STATE_SIZE = AV_XFFI_SIZE(av_xffi_state_args, state),
  AV_XFFI_STATE_SIZE_V02 = AV_XFFI_SIZE(av_xffi_state_args_v02, state),
  AV_XFFI_FUTURE_CREATE_SIZE = AV_XFFI_SIZE(av_xffi_future_create_args, ext),
  AV_XFFI_METADATA_SIZE = AV_XFFI_SIZE(av_xffi_metadata, traits),
  AV_XFFI_METADATA_EXT_SIZE = AV_XFFI_SIZE(av_xffi_metadata_ext, metadata),
  AV_XFFI_HANDLER_REGISTER_SIZE = AV_XFFI_SIZE(av_xffi_handler_register_args, traits),
  AV_XFFI_API_SIZE = sizeof(av_xffi_api),
};

/* The layout facts (x86-64 / any LP64 target) the research note lists. */
_Static_assert(sizeof(av_xffi_call_frame) == 176 && AV_XFFI_CALL_FRAME_SIZE == 168 &&
                   offsetof(av_xffi_call_frame, stage) == 32 &&
                   offsetof(av_xffi_call_frame, args) == 40 &&
                   offsetof(av_xffi_call_frame, rets) == 80 &&
                   offsetof(av_xffi_call_frame, attrs) == 120,
               "XLA_FFI_CallFrame layout");
_Static_assert(sizeof(av_xffi_buffer) == 48 && offsetof(av_xffi_buffer, data) == 24,
               "XLA_FFI_Buffer layout");
_Static_assert(sizeof(av_xffi_attrs) == 48 && sizeof(av_xffi_args) == 40, "Attrs/Args layout");
_Static_assert(sizeof(av_xffi_api) == 192 && offsetof(av_xffi_api, error_create) == 48 &&
                   offsetof(av_xffi_api, device_ordinal_get) == 184,
               "XLA_FFI_Api layout");
_Static_assert(AV_XFFI_ERROR_CREATE_SIZE == 28 && AV_XFFI_TYPE_REGISTER_SIZE == 40 &&
                   AV_XFFI_FUTURE_CREATE_SIZE == 16 && AV_XFFI_METADATA_SIZE == 36 &&
                   AV_XFFI_HANDLER_REGISTER_SIZE == 84 && AV_XFFI_STATE_SIZE == 48 &&
                   AV_XFFI_STATE_SIZE_V02 == 40 && AV_XFFI_METADATA_EXT_SIZE == 32,
               "checked sizes");
_Static_assert(offsetof(av_xffi_metadata, state_type_id) == 40 &&
                   offsetof(av_xffi_run_id_args, run_id) == 24 &&
                   offsetof(av_xffi_device_ordinal_args, device_ordinal) == 24,
               "out fields");

#endif
