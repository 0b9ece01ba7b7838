/* Users' custom ops: XLA FFI handlers and legacy custom-call targets, run by anvil.
 *
 * Process-wide, like XLA's own registries (handlers are registered once per process, by name
 * and platform, before or after any client exists):
 *   registry.c   handlers, types and batch-partitionable target names; the exported entry
 *                points the Python package hands registrations to (AnvilFfi_*)
 *   api.c        the XLA_FFI_Api table handlers call back through (call_frame->api)
 *   errors.c     XLA_FFI_Error objects and the legacy XlaCustomCallStatus
 *   future.c     XLA_FFI_Future objects of asynchronous handlers
 *   call_frame.c call frames: one per call, the handler invoked, its error or future awaited;
 *                per-call-site state (the INSTANTIATE stage's)
 *   step.c       the plan step of a custom_call served by a handler
 * The compiler (compiler/lower_ffi.c) finds the handler by target name, converts the op's
 * attributes into the sorted attribute tree once, and runs INSTANTIATE once per call site;
 * the plan keeps the call site (and its state) until it is freed. */
#ifndef ANVIL_RUNTIME_FFI_FFI_H
#define ANVIL_RUNTIME_FFI_FFI_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/ffi/abi.h"
#include "runtime/plan.h"
#include "util/diag.h"

/* ---- registry (registry.c) */

/* Where a handler was registered: for the platform "anvil", or for the CPU ("cpu", "Host",
 * "host": the names XLA:CPU answers to, compared without case). anvil serves both; its own
 * platform wins when a name is registered for both. */
typedef enum av_ffi_platform { AV_FFI_ANVIL, AV_FFI_HOST } av_ffi_platform;

typedef struct av_ffi_handler {
  const char *name;
  av_ffi_platform platform;
  bool typed;              /* XLA FFI (api_version 1) or a legacy target (api_version 0) */
  av_xffi_bundle bundle;   /* typed */
  void *legacy;            /* legacy: void fn(void *out, const void **in[, ...]) */
  uint32_t traits;
  int32_t minor;           /* the API version (0.minor) the handler was built against */
  int64_t state_type_id;   /* what its instantiate stage creates (0: nothing) */
} av_ffi_handler;

/* The handler registered under `name` (anvil's platform first, then the CPU's), or NULL.
 * Entries live for the rest of the process. */
const av_ffi_handler *av_ffi_find(const char *name);

/* Registers a handler. `api_version` 1: typed (bundle; execute required), 0: legacy (`legacy`).
 * A typed handler is asked for its metadata (API version accepted: 0.1 to 0.3). Registering
 * the same name and platform again is fine with the same handler, an error otherwise. */
av_code av_ffi_register(const char *name, const char *platform, int api_version,
                        const av_xffi_bundle *bundle, void *legacy, uint32_t traits,
                        av_diag *d);
/* Registers a type: *id == 0 gets a fresh id written back; otherwise the caller's id is
 * bound to `name` (an error if `name` has another one). `deleter` may be NULL (the type then
 * cannot be used as state). */
av_code av_ffi_register_type(const char *name, size_t len, int64_t *id, void (*deleter)(void *),
                             av_diag *d);
/* The deleter registered for a type id; false when the id is unknown. */
bool av_ffi_type_deleter(int64_t id, void (**deleter)(void *));

/* Targets registered batch-partitionable (jax.ffi.register_ffi_target_as_batch_partitionable):
 * in a partitioned program they run per device on the shards of their leading
 * `num_batch_dims` dimensions (mhlo.frontend_attributes). */
av_code av_ffi_set_batch_partitionable(const char *name, size_t len, av_diag *d);
bool av_ffi_is_batch_partitionable(const char *name);

/* The API table handlers get (api.c). */
const av_xffi_api *av_ffi_api(void);

/* ---- errors (errors.c) */

/* A new error object (what the API hands handlers); NULL when out of memory. */
av_xffi_error *av_ffi_error_new(int32_t code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Takes an error a handler returned: when it is one anvil made and has not destroyed, records
 * its code and message in `d` (after `what`) and destroys it; otherwise records that the
 * handler returned a pointer that is no error (never reading through it). */
av_code av_ffi_error_take(av_xffi_error *e, const char *what, av_diag *d);
/* Whether `e` is a live error anvil made. */
bool av_ffi_error_is_live(const av_xffi_error *e);

/* The table's three error functions (Error_Create, Error_GetMessage, Error_Destroy). */
av_xffi_error *av_ffi_api_error_create(av_xffi_error_create_args *a);
void av_ffi_api_error_get_message(av_xffi_error_get_message_args *a);
void av_ffi_api_error_destroy(av_xffi_error_destroy_args *a);

/* The legacy status a status-returning target writes through XlaCustomCallStatusSetFailure. */
typedef struct av_ffi_status {
  uint64_t magic;
  bool failed;
  char message[1024];
} av_ffi_status;
void av_ffi_status_init(av_ffi_status *s);

/* ---- futures (future.c) */
av_xffi_future *av_ffi_future_new(void);
bool av_ffi_future_is_live(const av_xffi_future *f);
/* Blocks until the handler completes `f`, then drops the runtime's reference; returns its
 * error (owned by the caller) or NULL. */
av_xffi_error *av_ffi_future_wait(av_xffi_future *f);
/* The handler's side (the API's SetAvailable / SetError): completes `f` once; `err` is taken
 * over. false when `f` is not a pending future. */
bool av_ffi_future_complete(av_xffi_future *f, av_xffi_error *err);

/* ---- call sites and calls (call_frame.c) */

/* One custom_call of a plan: its state per stage (INSTANTIATE, PREPARE, INITIALIZE). */
typedef struct av_ffi_site av_ffi_site;
av_ffi_site *av_ffi_site_new(void);
void av_ffi_site_free(void *site); /* runs the states' deleters */

/* What a handler's calls through `ctx` see (the opaque XLA_FFI_ExecutionContext). */
struct av_xffi_ctx {
  uint64_t magic;
  int32_t stage;
  av_ffi_site *site;
  struct av_thread_pool *pool; /* NULL: tasks run on the caller */
  int64_t run_id;
  int32_t device_ordinal;
  const av_user_data_list *user_data; /* the execution's (ExecutionContext_Get), or NULL */
};
void av_ffi_ctx_init(av_xffi_ctx *ctx, int32_t stage, av_ffi_site *site,
                     struct av_thread_pool *pool, int64_t run_id, int32_t device_ordinal,
                     const av_user_data_list *user_data);
/* `ctx` as the API receives it: NULL unless it is a context anvil made. */
av_xffi_ctx *av_ffi_ctx_check(av_xffi_ctx *ctx);
/* State slots of a call site (api.c's State_Set / State_Get). */
av_code av_ffi_site_set(av_ffi_site *s, int32_t stage, int64_t type_id, void *state,
                        av_diag *d);
av_code av_ffi_site_get(av_ffi_site *s, int32_t stage, int64_t type_id, void **state,
                        av_diag *d);

/* Calls `fn` (one stage of a typed handler, ctx->stage) with a fresh call frame (args and
 * rets may be NULL: none), waits for the future an asynchronous handler returns, and turns
 * its error into `d` ("@target: message"). */
av_code av_ffi_invoke(av_xffi_handler fn, av_xffi_ctx *ctx, const av_xffi_args *args,
                      const av_xffi_rets *rets, const av_xffi_attrs *attrs, const char *target,
                      av_diag *d);
/* The metadata a typed handler reports (registration time): false with `d` set when it
 * answers with an error or nothing. */
bool av_ffi_metadata(av_xffi_handler fn, av_xffi_metadata *md, av_diag *d);

/* Sorts an attribute dictionary by name, byte-wise, as XLA does (nested ones are sorted
 * by whoever builds them). */
void av_ffi_attrs_sort(av_xffi_attrs *a);

/* ---- the step (step.c) */

/* How a call passes its buffers. */
typedef enum av_ffi_call_kind {
  AV_FFI_CALL_TYPED,          /* XLA FFI: call frame */
  AV_FFI_CALL_ORIGINAL,       /* void(void *out, const void **in) */
  AV_FFI_CALL_STATUS,         /* ... , XlaCustomCallStatus *status) */
  AV_FFI_CALL_STATUS_OPAQUE,  /* ... , const char *opaque, size_t len, XlaCustomCallStatus *) */
} av_ffi_call_kind;

typedef struct av_ffi_operand {
  int32_t dtype;          /* XLA element type (AV_XFFI_TOKEN for tokens) */
  int64_t rank;
  int64_t *dims;          /* logical dimensions (the call frame's Buffer points here) */
  const int64_t *minor_to_major; /* the physical layout; NULL: row-major */
  int32_t alias;          /* results: the operand it shares a buffer with, or -1 */
  size_t esize;           /* bytes per element in anvil's storage */
} av_ffi_operand;

typedef struct av_ffi_call_params {
  const char *target;
  const av_ffi_handler *handler;
  av_ffi_call_kind kind;
  const av_xffi_attrs *attrs; /* typed: the sorted attribute tree */
  const char *opaque;         /* STATUS_OPAQUE: the backend_config string */
  size_t opaque_len;
  av_ffi_site *site;          /* typed: this call site's state */
  uint32_t nargs, nrets;      /* the step's inputs and outputs, tokens included */
  const av_ffi_operand *args, *rets;
} av_ffi_call_params;

av_code av_step_ffi(const av_step *s, av_frame *f, av_diag *d);

/* The XLA element type of an anvil dtype (AV_XFFI_INVALID when XLA has none). */
int32_t av_ffi_dtype(av_dtype t);

#endif
