/* anvil-cts: a conformance test suite for any PJRT plugin.
 *
 * The suite talks to a plugin only through dlopen + GetPjrtApi and the PJRT C API declared in
 * include/anvil/pjrt_c_api.h; it links no plugin code. Every check runs in its own forked child
 * process (see main.c), so a crashing or hanging plugin costs one FAIL, not the run.
 *
 * Writing a check:
 *   CTS_CHECK(cts_buffer_roundtrip) { ...; return CTS_PASS; }
 * and one line in checks.def naming it, what it needs (API / CLIENT / COMPILE) and what it
 * verifies. A check returns PASS, or one of the cts_fail / cts_unsupported / cts_skip helpers,
 * which also record the message the report prints.
 *
 * Status meanings (the report's contract):
 *   PASS         the plugin did what the PJRT C API asks.
 *   FAIL         crash, hang, NULL function slot, wrong answer, or an error where success is
 *                required.
 *   UNSUPPORTED  an optional feature answered UNIMPLEMENTED (or is absent from the plugin's API
 *                version). Counted as skipped.
 *   SKIPPED      a precondition failed (e.g. no client could be created, nothing compiles).
 */
#ifndef ANVIL_CTS_H_
#define ANVIL_CTS_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "anvil/pjrt_c_api.h"
#include "anvil/pjrt_c_api_history.h"

typedef enum { CTS_PASS = 0, CTS_FAIL = 1, CTS_UNSUPPORTED = 2, CTS_SKIP = 3 } cts_status;

/* What a check needs; the runner SKIPs it when the matching precondition probe did not pass. */
typedef enum {
  CTS_NEEDS_API = 0,     /* only the PJRT_Api table (and Plugin_Initialize) */
  CTS_NEEDS_CLIENT = 1,  /* a client can be created (probe: client.create_destroy) */
  CTS_NEEDS_COMPILE = 2, /* the carried test program compiles and runs (probe: compile.probe) */
} cts_needs;

/* Per-process state of one running check (each check runs in its own child process). */
typedef struct cts_ctx {
  const PJRT_Api *api;
  char msg[2048];
} cts_ctx;

typedef cts_status (*cts_check_fn)(cts_ctx *t);

#define CTS_CHECK(fn) cts_status fn(cts_ctx *t)

/* ------------------------------------------------------------------ reporting */

cts_status cts_fail(cts_ctx *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
cts_status cts_unsupported(cts_ctx *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
cts_status cts_skip(cts_ctx *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends a note to the message of a passing check (e.g. which optional types were absent). */
void cts_note(cts_ctx *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* -------------------------------------------------------- API version / slots */

/* True when the plugin's PJRT_Api (by its struct_size) has the function slot at `offset`. */
bool cts_api_covers(const PJRT_Api *api, size_t offset);
/* Name of the PJRT_Api function slot at `offset`, e.g. "PJRT_Buffer_Delete". */
const char *cts_slot_name(size_t offset);
#define CTS_FN(t, Name) \
  (cts_api_covers((t)->api, offsetof(PJRT_Api, Name)) ? (t)->api->Name : NULL)

/* A function every plugin must provide: absent from the table (older API) -> UNSUPPORTED, NULL
 * slot -> FAIL. */
#define CTS_NEED_FN(t, Name)                                                                   \
  do {                                                                                         \
    if (!cts_api_covers((t)->api, offsetof(PJRT_Api, Name)))                                   \
      return cts_unsupported((t), "plugin API %d.%d predates " #Name,                          \
                             (t)->api->pjrt_api_version.major_version,                         \
                             (t)->api->pjrt_api_version.minor_version);                        \
    if (!(t)->api->Name) return cts_fail((t), #Name " slot is NULL");                          \
  } while (0)
/* An optional function: absent or NULL -> UNSUPPORTED. */
#define CTS_WANT_FN(t, Name)                                                                   \
  do {                                                                                         \
    if (!CTS_FN((t), Name)) return cts_unsupported((t), #Name " is not provided");             \
  } while (0)

/* ------------------------------------------------------------------- errors */

const char *cts_code_name(PJRT_Error_Code code);
/* Code of a plugin error (OK for NULL). */
PJRT_Error_Code cts_error_code(cts_ctx *t, PJRT_Error *e);
/* "CODE: message" of a plugin error into buf. */
void cts_error_text(cts_ctx *t, PJRT_Error *e, char *buf, size_t n);
void cts_error_free(cts_ctx *t, PJRT_Error *e);
/* Turns a non-NULL error of a required call into FAIL ("what: CODE: message"); frees it. */
cts_status cts_err(cts_ctx *t, PJRT_Error *e, const char *what);
/* Same for an optional feature: UNIMPLEMENTED -> UNSUPPORTED, anything else -> FAIL. */
cts_status cts_err_opt(cts_ctx *t, PJRT_Error *e, const char *what);
/* For calls that must fail: FAIL when e is NULL ("what: accepted ..."), else checks that the error
 * has a non-OK code and a message, frees it and returns PASS. */
cts_status cts_expect_error(cts_ctx *t, PJRT_Error *e, const char *what);

/* Propagates any non-PASS status. */
#define CTS_TRY(expr)                     \
  do {                                    \
    cts_status cts_try_ = (expr);         \
    if (cts_try_ != CTS_PASS) return cts_try_; \
  } while (0)

/* ------------------------------------------------------------------ fixtures */

cts_status cts_plugin_initialize(cts_ctx *t);
cts_status cts_client_create(cts_ctx *t, PJRT_Client **out);
void cts_client_destroy(cts_ctx *t, PJRT_Client *c);
cts_status cts_addressable_devices(cts_ctx *t, PJRT_Client *c, PJRT_Device *const **devs,
                                   size_t *n);
cts_status cts_device_id(cts_ctx *t, PJRT_Device *d, int *id);
/* Awaits (if non-NULL) and destroys an event; its error becomes FAIL. */
cts_status cts_await(cts_ctx *t, PJRT_Event *ev, const char *what);
/* Awaits and destroys; returns the event's error code (OK on success), message into buf. */
PJRT_Error_Code cts_await_code(cts_ctx *t, PJRT_Event *ev, char *buf, size_t n);

size_t cts_type_size(PJRT_Buffer_Type type); /* bytes per element; 0 = not byte-sized */
size_t cts_num_elements(const int64_t *dims, size_t nd);
/* Host -> device with kImmutableOnlyDuringCall; waits for the done event. */
cts_status cts_buffer_from_host(cts_ctx *t, PJRT_Client *c, PJRT_Device *d, PJRT_Buffer_Type type,
                                const int64_t *dims, size_t nd, const void *data,
                                PJRT_Buffer **out);
cts_status cts_f32_buffer(cts_ctx *t, PJRT_Client *c, PJRT_Device *d, const float *v, int64_t n,
                          PJRT_Buffer **out);
/* Device -> host of exactly `size` bytes, waits for completion. */
cts_status cts_to_host(cts_ctx *t, PJRT_Buffer *b, void *dst, size_t size);
cts_status cts_expect_f32(cts_ctx *t, PJRT_Buffer *b, const float *want, int64_t n,
                          const char *what);
void cts_buffer_destroy(cts_ctx *t, PJRT_Buffer *b);
cts_status cts_buffer_is_deleted(cts_ctx *t, PJRT_Buffer *b, bool *deleted);

/* ----------------------------------------------------------------- programs */

typedef struct cts_program {
  const char *name;
  const char *format; /* "mlir" */
  const char *code;
  size_t code_size;
} cts_program;

/* programs.c: f(a, b) = a + b on tensor<4xf32>, as MLIR text. */
extern const cts_program cts_prog_add_text;
/* programs.c: f(a, b) = a * b + a on tensor<4xf32>, a StableHLO portable artifact (bytecode). */
extern const cts_program cts_prog_fma_bytecode;
/* programs.c: f(a, b) = a + b with argument 0 donated to result 0 (tf.aliasing_output). */
extern const cts_program cts_prog_add_donating_text;
/* programs.c: f(a) = a * 2 on tensor<2x3xi32> returning also a - 1 (two outputs). */
extern const cts_program cts_prog_two_outputs_text;

/* Serialized xla.CompileOptionsProto for `replicas` replicas on the given device ids (one
 * partition). portable=true sets compile_portable_executable and no assignment. Returns length. */
size_t cts_compile_options(char *buf, size_t cap, const int *device_ids, int replicas,
                           bool portable);
/* The CompileOptionsProto TensorFlow's PJRT compiler sends for a single-device function of
 * `nargs` f32[n] arguments and one f32[n] result: argument_layouts and result_layout with
 * row-major layouts, device_ordinal -1, compile_portable_executable. Returns length. */
size_t cts_compile_options_tf(char *buf, size_t cap, int nargs, int64_t n);
/* Compiles with single-device options for device_ids[0] (or the first addressable device when
 * device_id < 0). Compile errors come back as FAIL (UNSUPPORTED for UNIMPLEMENTED). */
cts_status cts_compile(cts_ctx *t, PJRT_Client *c, const cts_program *p, const char *options,
                       size_t options_size, PJRT_LoadedExecutable **out);
/* The program all execute checks use: the bytecode artifact if it compiles, else the text one. */
cts_status cts_compile_any(cts_ctx *t, PJRT_Client *c, PJRT_LoadedExecutable **out,
                           const cts_program **which);
/* Expected result of the program `p` (add or fma) for inputs a, b (4 elements). */
void cts_expected(const cts_program *p, const float *a, const float *b, float *out);
void cts_executable_destroy(cts_ctx *t, PJRT_LoadedExecutable *e);
/* Executes on one device with `nargs` arguments; `outs` receives num_outputs buffers. */
cts_status cts_execute1(cts_ctx *t, PJRT_LoadedExecutable *e, PJRT_Buffer *const *args,
                        size_t nargs, PJRT_Buffer **outs, PJRT_ExecuteOptions *opts);

/* ----------------------------------------------------------------- helpers */

/* A buffer of `size` bytes followed by a canary area, to verify that a callee writes nothing
 * past the struct_size the caller declared. */
#define CTS_CANARY_BYTE 0xA5
bool cts_canary_intact(const void *base, size_t from, size_t to);

#endif /* ANVIL_CTS_H_ */
