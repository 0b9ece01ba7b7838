/* XLA FFI handlers written in C11 against the headers JAX ships (jax.ffi.include_dir():
 * xla/ffi/api/c_api.h), used by tests/c/ffi/test_ffi.c and tests/python/test_ffi.py (which
 * compiles this file into a shared library). They speak the raw C ABI the way ffi.h does:
 * answer the metadata query, check the stage and their buffers, and report problems as
 * XLA_FFI_Error objects made through call_frame->api. Every handler is exported as
 * `ffi_test_<name>` (an XLA_FFI_Handler*), legacy targets as `ffi_test_legacy_<name>`. */
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "xla/ffi/api/c_api.h"

#define EXPORT __attribute__((visibility("default")))

/* ---- helpers */

static XLA_FFI_Error *err(const XLA_FFI_Api *api, XLA_FFI_Error_Code code, const char *msg) {
  XLA_FFI_Error_Create_Args a;
  memset(&a, 0, sizeof a);
  a.struct_size = XLA_FFI_Error_Create_Args_STRUCT_SIZE;
  a.message = msg;
  a.errc = code;
  return api->XLA_FFI_Error_Create(&a);
}

/* Answers the metadata query (true: it was one). */
static int metadata(XLA_FFI_CallFrame *f, int minor, int64_t state_type_id) {
  if (!f->extension_start || f->extension_start->type != XLA_FFI_Extension_Metadata) return 0;
  XLA_FFI_Metadata_Extension *ext = (XLA_FFI_Metadata_Extension *)f->extension_start;
  ext->metadata->api_version.struct_size = XLA_FFI_Api_Version_STRUCT_SIZE;
  ext->metadata->api_version.extension_start = NULL;
  ext->metadata->api_version.major_version = XLA_FFI_API_MAJOR;
  ext->metadata->api_version.minor_version = minor;
  ext->metadata->traits = 0;
  ext->metadata->state_type_id.type_id = state_type_id;
  return 1;
}

/* The checks every handler starts with: frame size, metadata, stage. */
#define PROLOGUE(f, want_stage, state_type)                                               \
  do {                                                                                    \
    if ((f)->struct_size != XLA_FFI_CallFrame_STRUCT_SIZE)                                \
      return err((f)->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "bad call frame size");   \
    if (metadata((f), XLA_FFI_API_MINOR, (state_type))) return NULL;                      \
    if ((f)->stage != (want_stage))                                                       \
      return err((f)->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "Wrong execution stage"); \
  } while (0)

static XLA_FFI_Buffer *arg(XLA_FFI_CallFrame *f, int64_t i) {
  return i < f->args.size ? (XLA_FFI_Buffer *)f->args.args[i] : NULL;
}
static XLA_FFI_Buffer *ret(XLA_FFI_CallFrame *f, int64_t i) {
  return i < f->rets.size ? (XLA_FFI_Buffer *)f->rets.rets[i] : NULL;
}

static size_t dtype_size(XLA_FFI_DataType t) {
  switch (t) {
    case XLA_FFI_DataType_S16: case XLA_FFI_DataType_U16: case XLA_FFI_DataType_F16:
    case XLA_FFI_DataType_BF16: return 2;
    case XLA_FFI_DataType_S32: case XLA_FFI_DataType_U32: case XLA_FFI_DataType_F32: return 4;
    case XLA_FFI_DataType_S64: case XLA_FFI_DataType_U64: case XLA_FFI_DataType_F64:
    case XLA_FFI_DataType_C64: return 8;
    case XLA_FFI_DataType_C128: return 16;
    case XLA_FFI_DataType_TOKEN: case XLA_FFI_DataType_INVALID: return 0;
    default: return 1; /* pred, 8-bit, f8, sub-byte: one byte each in anvil's storage */
  }
}

static int64_t elements(const XLA_FFI_Buffer *b) {
  int64_t n = 1;
  for (int64_t i = 0; i < b->rank; i++) n *= b->dims[i];
  return n;
}

/* ---- attrs_echo: () -> u8[N]: a text rendering of every attribute, in the order given */

typedef struct text {
  char *p;
  size_t n, cap;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#include <stdarg.h>
static void put(text *t, const char *fmt, ...) {
  if (t->n >= t->cap) return;
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(t->p + t->n, t->cap - t->n, fmt, ap);
  va_end(ap);
  if (k > 0) t->n = t->n + (size_t)k < t->cap ? t->n + (size_t)k : t->cap;
}

static void put_value(text *t, XLA_FFI_DataType dt, const void *v) {
  switch (dt) {
    case XLA_FFI_DataType_PRED: put(t, "%s", *(const uint8_t *)v ? "true" : "false"); break;
    case XLA_FFI_DataType_S8: put(t, "%d", *(const int8_t *)v); break;
    case XLA_FFI_DataType_S16: put(t, "%d", *(const int16_t *)v); break;
    case XLA_FFI_DataType_S32: put(t, "%d", *(const int32_t *)v); break;
    case XLA_FFI_DataType_S64: put(t, "%lld", (long long)*(const int64_t *)v); break;
    case XLA_FFI_DataType_U8: put(t, "%u", *(const uint8_t *)v); break;
    case XLA_FFI_DataType_U16: put(t, "%u", *(const uint16_t *)v); break;
    case XLA_FFI_DataType_U32: put(t, "%u", *(const uint32_t *)v); break;
    case XLA_FFI_DataType_U64: put(t, "%llu", (unsigned long long)*(const uint64_t *)v); break;
    case XLA_FFI_DataType_F32: put(t, "%g", *(const float *)v); break;
    case XLA_FFI_DataType_F64: put(t, "%g", *(const double *)v); break;
    default: put(t, "?"); break;
  }
}

static void put_attrs(text *t, const XLA_FFI_Attrs *a) {
  for (int64_t i = 0; i < a->size; i++) {
    put(t, "%s%.*s=", i ? "," : "", (int)a->names[i]->len, a->names[i]->ptr);
    switch (a->types[i]) {
      case XLA_FFI_AttrType_SCALAR: {
        const XLA_FFI_Scalar *s = a->attrs[i];
        put(t, "s%d:", s->dtype);
        put_value(t, s->dtype, s->value);
        break;
      }
      case XLA_FFI_AttrType_ARRAY: {
        const XLA_FFI_Array *arr = a->attrs[i];
        put(t, "a%d[", arr->dtype);
        for (size_t j = 0; j < arr->size; j++) {
          if (j) put(t, " ");
          put_value(t, arr->dtype, (const char *)arr->data + j * dtype_size(arr->dtype));
        }
        put(t, "]");
        break;
      }
      case XLA_FFI_AttrType_STRING: {
        const XLA_FFI_ByteSpan *s = a->attrs[i];
        put(t, "'%.*s'", (int)s->len, s->ptr);
        break;
      }
      case XLA_FFI_AttrType_DICTIONARY: {
        const XLA_FFI_Attrs *d = a->attrs[i];
        put(t, "{");
        if (d->struct_size == XLA_FFI_Attrs_STRUCT_SIZE) put_attrs(t, d);
        put(t, "}");
        break;
      }
      default: put(t, "?"); break;
    }
  }
}

EXPORT XLA_FFI_Error *ffi_test_attrs_echo(XLA_FFI_CallFrame *f);
XLA_FFI_Error *ffi_test_attrs_echo(XLA_FFI_CallFrame *f) {
  PROLOGUE(f, XLA_FFI_ExecutionStage_EXECUTE, 0);
  XLA_FFI_Buffer *out = ret(f, 0);
  if (f->args.size != 0 || f->rets.size != 1 || out->dtype != XLA_FFI_DataType_U8 || out->rank != 1)
    return err(f->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "attrs_echo: () -> u8[N]");
  text t = {out->data, 0, (size_t)out->dims[0]};
  memset(out->data, 0, t.cap);
  put_attrs(&t, &f->attrs);
  if (t.cap) t.p[t.cap - 1] = '\0';
  return NULL;
}

/* ---- describe: (any...) -> s64[64]: per argument dtype, rank, dims, and whether its data is
 * 16-byte aligned and non-NULL; then per result the same. Copies argument 0 into result 1
 * when there are two results of the same size (layouts: the raw physical bytes). */
EXPORT XLA_FFI_Error *ffi_test_describe(XLA_FFI_CallFrame *f);
XLA_FFI_Error *ffi_test_describe(XLA_FFI_CallFrame *f) {
  PROLOGUE(f, XLA_FFI_ExecutionStage_EXECUTE, 0);
  XLA_FFI_Buffer *out = ret(f, 0);
  if (!out || out->dtype != XLA_FFI_DataType_S64 || out->rank != 1 || out->dims[0] < 64)
    return err(f->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "describe: result 0 must be s64[64]");
  int64_t *o = out->data, k = 0;
  memset(o, 0, (size_t)out->dims[0] * sizeof *o);
  for (int64_t j = 0; j < f->args.size + f->rets.size && k + 4 < 64; j++) {
    bool is_arg = j < f->args.size;
    const XLA_FFI_Buffer *b = is_arg ? arg(f, j) : ret(f, j - f->args.size);
    int kind = is_arg ? (int)f->args.types[j] : (int)f->rets.types[j - f->args.size];
    if (kind != 1 /* BUFFER */ || b->struct_size < XLA_FFI_Buffer_STRUCT_SIZE)
      return err(f->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "describe: not a buffer");
    o[k++] = b->dtype;
    o[k++] = b->data != NULL && ((uintptr_t)b->data % 16) == 0;
    o[k++] = b->rank;
    for (int64_t d = 0; d < b->rank && k < 63; d++) o[k++] = b->dims[d];
  }
  o[k] = -1;
  XLA_FFI_Buffer *copy = ret(f, 1), *src = arg(f, 0);
  if (copy && src && elements(copy) * (int64_t)dtype_size(copy->dtype) ==
                         elements(src) * (int64_t)dtype_size(src->dtype))
    memcpy(copy->data, src->data, (size_t)elements(src) * dtype_size(src->dtype));
  return NULL;
}

/* ---- copy: (x) -> y of the same type and shape (any element type, any rank) */
EXPORT XLA_FFI_Error *ffi_test_copy(XLA_FFI_CallFrame *f);
XLA_FFI_Error *ffi_test_copy(XLA_FFI_CallFrame *f) {
  PROLOGUE(f, XLA_FFI_ExecutionStage_EXECUTE, 0);
  XLA_FFI_Buffer *x = arg(f, 0), *y = ret(f, 0);
  if (f->args.size != 1 || f->rets.size != 1 || x->dtype != y->dtype || x->rank != y->rank)
    return err(f->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "copy: x and y differ");
  for (int64_t i = 0; i < x->rank; i++)
    if (x->dims[i] != y->dims[i]) return err(f->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "copy: dims differ");
  memcpy(y->data, x->data, (size_t)elements(x) * dtype_size(x->dtype));
  return NULL;
}

/* ---- scale_in_place: (f32[n] x) -> f32[n] aliased to x: x * 2, checking the aliasing */
EXPORT XLA_FFI_Error *ffi_test_scale_in_place(XLA_FFI_CallFrame *f);
XLA_FFI_Error *ffi_test_scale_in_place(XLA_FFI_CallFrame *f) {
  PROLOGUE(f, XLA_FFI_ExecutionStage_EXECUTE, 0);
  XLA_FFI_Buffer *x = arg(f, 0), *y = ret(f, 0);
  if (!x || !y || x->dtype != XLA_FFI_DataType_F32 || y->dtype != XLA_FFI_DataType_F32)
    return err(f->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "scale_in_place: f32 -> f32");
  if (x->data != y->data)
    return err(f->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "scale_in_place: not aliased");
  float *p = y->data;
  for (int64_t i = 0; i < elements(y); i++) p[i] *= 2.0f;
  return NULL;
}

/* ---- fail: always an error, with the `message` string attribute and `code` (s32) */
EXPORT XLA_FFI_Error *ffi_test_fail(XLA_FFI_CallFrame *f);
XLA_FFI_Error *ffi_test_fail(XLA_FFI_CallFrame *f) {
  PROLOGUE(f, XLA_FFI_ExecutionStage_EXECUTE, 0);
  char msg[256] = "failed";
  int code = XLA_FFI_Error_Code_INVALID_ARGUMENT;
  for (int64_t i = 0; i < f->attrs.size; i++) {
    const XLA_FFI_ByteSpan *n = f->attrs.names[i];
    if (n->len == 7 && !memcmp(n->ptr, "message", 7) && f->attrs.types[i] == XLA_FFI_AttrType_STRING) {
      const XLA_FFI_ByteSpan *s = f->attrs.attrs[i];
      snprintf(msg, sizeof msg, "%.*s", (int)s->len, s->ptr);
    }
    if (n->len == 4 && !memcmp(n->ptr, "code", 4) && f->attrs.types[i] == XLA_FFI_AttrType_SCALAR) {
      const XLA_FFI_Scalar *s = f->attrs.attrs[i];
      if (s->dtype == XLA_FFI_DataType_S32) code = *(const int32_t *)s->value;
    }
  }
  return err(f->api, (XLA_FFI_Error_Code)code, msg);
}

/* ---- bogus_error: returns a pointer that is no error */
EXPORT XLA_FFI_Error *ffi_test_bogus_error(XLA_FFI_CallFrame *f);
XLA_FFI_Error *ffi_test_bogus_error(XLA_FFI_CallFrame *f) {
  static char not_an_error[64];
  PROLOGUE(f, XLA_FFI_ExecutionStage_EXECUTE, 0);
  return (XLA_FFI_Error *)not_an_error;
}

/* ---- state: instantiate makes a counter starting at attribute `start` (s64); each execute
 * adds one and writes it to its s64[] result. The type is registered by the test (its id
 * lands in ffi_test_counter_type). */
EXPORT XLA_FFI_TypeId ffi_test_counter_type;
XLA_FFI_TypeId ffi_test_counter_type;
EXPORT atomic_int ffi_test_counters_deleted;
atomic_int ffi_test_counters_deleted;

typedef struct counter {
  int64_t value;
} counter;

#include <stdlib.h>
static void counter_delete(void *p) {
  free(p);
  atomic_fetch_add(&ffi_test_counters_deleted, 1);
}
EXPORT const XLA_FFI_TypeInfo ffi_test_counter_type_info;
const XLA_FFI_TypeInfo ffi_test_counter_type_info = {XLA_FFI_TypeInfo_STRUCT_SIZE, NULL, counter_delete};

EXPORT XLA_FFI_Error *ffi_test_counter_instantiate(XLA_FFI_CallFrame *f);
XLA_FFI_Error *ffi_test_counter_instantiate(XLA_FFI_CallFrame *f) {
  PROLOGUE(f, XLA_FFI_ExecutionStage_INSTANTIATE, ffi_test_counter_type.type_id);
  if (f->args.size || f->rets.size)
    return err(f->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "instantiate sees buffers");
  counter *c = malloc(sizeof *c);
  if (!c) return err(f->api, XLA_FFI_Error_Code_RESOURCE_EXHAUSTED, "oom");
  c->value = 0;
  for (int64_t i = 0; i < f->attrs.size; i++)
    if (f->attrs.types[i] == XLA_FFI_AttrType_SCALAR && f->attrs.names[i]->len == 5 &&
        !memcmp(f->attrs.names[i]->ptr, "start", 5))
      c->value = *(const int64_t *)((const XLA_FFI_Scalar *)f->attrs.attrs[i])->value;
  XLA_FFI_State_Set_Args a;
  memset(&a, 0, sizeof a);
  a.struct_size = XLA_FFI_State_Set_Args_STRUCT_SIZE;
  a.ctx = f->ctx;
  a.stage = XLA_FFI_ExecutionStage_INSTANTIATE;
  a.type_id = &ffi_test_counter_type;
  a.state = c;
  XLA_FFI_Error *e = f->api->XLA_FFI_State_Set(&a);
  if (e) free(c);
  return e;
}

EXPORT XLA_FFI_Error *ffi_test_counter_execute(XLA_FFI_CallFrame *f);
XLA_FFI_Error *ffi_test_counter_execute(XLA_FFI_CallFrame *f) {
  PROLOGUE(f, XLA_FFI_ExecutionStage_EXECUTE, 0);
  XLA_FFI_State_Get_Args a;
  memset(&a, 0, sizeof a);
  a.struct_size = XLA_FFI_State_Get_Args_STRUCT_SIZE;
  a.ctx = f->ctx;
  a.stage = XLA_FFI_ExecutionStage_INSTANTIATE;
  a.type_id = &ffi_test_counter_type;
  XLA_FFI_Error *e = f->api->XLA_FFI_State_Get(&a);
  if (e) return e;
  counter *c = a.state;
  XLA_FFI_Buffer *out = ret(f, 0);
  if (!out || out->dtype != XLA_FFI_DataType_S64)
    return err(f->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "counter: -> s64[]");
  *(int64_t *)out->data = ++c->value; /* one call site runs on one thread at a time here */
  return NULL;
}

/* A handler built against API 0.2: reports minor 2 and reads state with the 0.2 argument
 * layout (no `stage`). */
typedef struct state_args_v02 {
  size_t struct_size;
  XLA_FFI_Extension_Base *extension_start;
  XLA_FFI_ExecutionContext *ctx;
  XLA_FFI_TypeId *type_id;
  void *state;
} state_args_v02;

EXPORT XLA_FFI_Error *ffi_test_counter_execute_v02(XLA_FFI_CallFrame *f);
XLA_FFI_Error *ffi_test_counter_execute_v02(XLA_FFI_CallFrame *f) {
  if (metadata(f, 2, 0)) return NULL;
  state_args_v02 a = {sizeof(state_args_v02), NULL, f->ctx, &ffi_test_counter_type, NULL};
  XLA_FFI_Error *e = f->api->XLA_FFI_State_Get((XLA_FFI_State_Get_Args *)&a);
  if (e) return e;
  counter *c = a.state;
  *(int64_t *)ret(f, 0)->data = 1000 + ++c->value;
  return NULL;
}

/* Reports API version 0.9: must be refused at registration. */
EXPORT XLA_FFI_Error *ffi_test_too_new(XLA_FFI_CallFrame *f);
XLA_FFI_Error *ffi_test_too_new(XLA_FFI_CallFrame *f) {
  if (metadata(f, 9, 0)) return NULL;
  return err(f->api, XLA_FFI_Error_Code_INTERNAL, "must not run");
}

/* ---- ids: () -> s64[2] {run id, device ordinal} */
EXPORT XLA_FFI_Error *ffi_test_ids(XLA_FFI_CallFrame *f);
XLA_FFI_Error *ffi_test_ids(XLA_FFI_CallFrame *f) {
  PROLOGUE(f, XLA_FFI_ExecutionStage_EXECUTE, 0);
  /* ffi.h passes RunId_Get a struct_size larger than the struct: do the same */
  struct {
    XLA_FFI_RunId_Get_Args a;
    int64_t spare;
  } r;
  memset(&r, 0, sizeof r);
  r.a.struct_size = sizeof r;
  r.a.ctx = f->ctx;
  XLA_FFI_Error *e = f->api->XLA_FFI_RunId_Get(&r.a);
  if (e) return e;
  XLA_FFI_DeviceOrdinal_Get_Args d;
  memset(&d, 0, sizeof d);
  d.struct_size = XLA_FFI_DeviceOrdinal_Get_Args_STRUCT_SIZE;
  d.ctx = f->ctx;
  if ((e = f->api->XLA_FFI_DeviceOrdinal_Get(&d)) != NULL) return e;
  int64_t *o = ret(f, 0)->data;
  o[0] = r.a.run_id;
  o[1] = d.device_ordinal;
  return NULL;
}

/* ---- user_data: () -> s64[2] {the int64 the caller attached to the execution under
 * ffi_test_user_data_type (XLA_FFI_ExecutionContext_Get, what ffi.h's Ctx<UserData<T>> does),
 * the device ordinal}; counts its calls. Without that user data it returns the API's error. */
EXPORT XLA_FFI_TypeId ffi_test_user_data_type;
EXPORT atomic_int ffi_test_user_data_calls;
EXPORT XLA_FFI_Error *ffi_test_user_data(XLA_FFI_CallFrame *f);
XLA_FFI_Error *ffi_test_user_data(XLA_FFI_CallFrame *f) {
  PROLOGUE(f, XLA_FFI_ExecutionStage_EXECUTE, 0);
  XLA_FFI_Buffer *o = ret(f, 0);
  if (!o || o->dtype != XLA_FFI_DataType_S64 || elements(o) != 2)
    return err(f->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "user_data: want one s64[2] result");
  XLA_FFI_ExecutionContext_Get_Args g;
  memset(&g, 0, sizeof g);
  g.struct_size = XLA_FFI_ExecutionContext_Get_Args_STRUCT_SIZE;
  g.ctx = f->ctx;
  g.type_id = &ffi_test_user_data_type;
  XLA_FFI_Error *e = f->api->XLA_FFI_ExecutionContext_Get(&g);
  if (e) return e;
  XLA_FFI_DeviceOrdinal_Get_Args d;
  memset(&d, 0, sizeof d);
  d.struct_size = XLA_FFI_DeviceOrdinal_Get_Args_STRUCT_SIZE;
  d.ctx = f->ctx;
  if ((e = f->api->XLA_FFI_DeviceOrdinal_Get(&d)) != NULL) return e;
  int64_t *out = o->data;
  out[0] = *(const int64_t *)g.data;
  out[1] = d.device_ordinal;
  atomic_fetch_add(&ffi_test_user_data_calls, 1);
  return NULL;
}

/* ---- gate: (any...) -> s32[] 1, once ffi_test_gate_open is set (gives up after 30 s): holds
 * an execution until its caller has done something (test_ffi_context.c) */
EXPORT atomic_int ffi_test_gate_open;
EXPORT XLA_FFI_Error *ffi_test_gate(XLA_FFI_CallFrame *f);
XLA_FFI_Error *ffi_test_gate(XLA_FFI_CallFrame *f) {
  PROLOGUE(f, XLA_FFI_ExecutionStage_EXECUTE, 0);
  XLA_FFI_Buffer *o = ret(f, 0);
  if (!o || o->dtype != XLA_FFI_DataType_S32 || elements(o) != 1)
    return err(f->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "gate: want one s32[] result");
  struct timespec ms = {0, 1000000};
  for (int i = 0; i < 30000 && !atomic_load(&ffi_test_gate_open); i++) nanosleep(&ms, NULL);
  if (!atomic_load(&ffi_test_gate_open))
    return err(f->api, XLA_FFI_Error_Code_DEADLINE_EXCEEDED, "gate: never opened");
  *(int32_t *)o->data = 1;
  return NULL;
}

/* ---- thread pool: (f64[n] x) -> f64[] sum, in chunks run as scheduled tasks; the caller
 * blocks until they are done (what jaxlib's LAPACK kernels do). With `nested` (a bool
 * attribute) every task schedules a second-level task and waits for it too. */
typedef struct chunk_job {
  const XLA_FFI_Api *api;
  XLA_FFI_ExecutionContext *ctx;
  const double *x;
  int64_t begin, end;
  double sum;
  int nested;
  atomic_int done;
} chunk_job;

static void wait_done(atomic_int *flag) {
  while (!atomic_load(flag)) {
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
  }
}

static void schedule(const XLA_FFI_Api *api, XLA_FFI_ExecutionContext *ctx, void (*task)(void *),
                     void *data) {
  XLA_FFI_ThreadPool_Schedule_Args a;
  memset(&a, 0, sizeof a);
  a.struct_size = XLA_FFI_ThreadPool_Schedule_Args_STRUCT_SIZE;
  a.ctx = ctx;
  a.task = task;
  a.data = data;
  XLA_FFI_Error *e = api->XLA_FFI_ThreadPool_Schedule(&a);
  if (e) { /* as ffi.h does: run it here */
    XLA_FFI_Error_Destroy_Args d = {XLA_FFI_Error_Destroy_Args_STRUCT_SIZE, NULL, e};
    api->XLA_FFI_Error_Destroy(&d);
    task(data);
  }
}

static void sum_chunk(void *p) {
  chunk_job *j = p;
  double s = 0;
  for (int64_t i = j->begin; i < j->end; i++) s += j->x[i];
  j->sum = s;
  atomic_store(&j->done, 1);
}

static void sum_chunk_nested(void *p) {
  chunk_job *j = p;
  chunk_job inner = *j;
  atomic_init(&inner.done, 0);
  schedule(j->api, j->ctx, sum_chunk, &inner); /* and block on it: trap 11 */
  wait_done(&inner.done);
  j->sum = inner.sum;
  atomic_store(&j->done, 1);
}

EXPORT XLA_FFI_Error *ffi_test_pool_sum(XLA_FFI_CallFrame *f);
XLA_FFI_Error *ffi_test_pool_sum(XLA_FFI_CallFrame *f) {
  PROLOGUE(f, XLA_FFI_ExecutionStage_EXECUTE, 0);
  XLA_FFI_Buffer *x = arg(f, 0), *y = ret(f, 0);
  if (!x || !y || x->dtype != XLA_FFI_DataType_F64 || x->rank != 1)
    return err(f->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "pool_sum: f64[n] -> f64[]");
  int nested = 0;
  for (int64_t i = 0; i < f->attrs.size; i++)
    if (f->attrs.types[i] == XLA_FFI_AttrType_SCALAR)
      nested = *(const uint8_t *)((const XLA_FFI_Scalar *)f->attrs.attrs[i])->value;
  int64_t nt = 0;
  XLA_FFI_ThreadPool_NumThreads_Args na;
  memset(&na, 0, sizeof na);
  na.struct_size = XLA_FFI_ThreadPool_NumThreads_Args_STRUCT_SIZE;
  na.ctx = f->ctx;
  na.num_threads = &nt;
  XLA_FFI_Error *e = f->api->XLA_FFI_ThreadPool_NumThreads(&na);
  if (e) return e;
  enum { TASKS = 8 };
  chunk_job jobs[TASKS];
  int64_t n = x->dims[0];
  for (int t = 0; t < TASKS; t++) {
    jobs[t].api = f->api;
    jobs[t].ctx = f->ctx;
    jobs[t].x = x->data;
    jobs[t].begin = n * t / TASKS;
    jobs[t].end = n * (t + 1) / TASKS;
    jobs[t].nested = nested;
    atomic_init(&jobs[t].done, 0);
    schedule(f->api, f->ctx, nested ? sum_chunk_nested : sum_chunk, &jobs[t]);
  }
  double s = 0;
  for (int t = 0; t < TASKS; t++) {
    wait_done(&jobs[t].done);
    s += jobs[t].sum;
  }
  *(double *)y->data = s + (nt >= 1 ? 0.0 : 1e9); /* a pool reports at least one thread */
  return NULL;
}

/* ---- async: (f32[n] x) -> f32[n] x + 1, written 20 ms later by another thread that then
 * completes the future (or fails it with `fail` set) */
typedef struct async_job {
  const XLA_FFI_Api *api;
  XLA_FFI_Future *future;
  const float *x;
  float *y;
  int64_t n;
  int fail;
} async_job;

static void *async_main(void *p) {
  async_job *j = p;
  struct timespec ts = {0, 20 * 1000 * 1000};
  nanosleep(&ts, NULL);
  for (int64_t i = 0; i < j->n; i++) j->y[i] = j->x[i] + 1.0f;
  XLA_FFI_Error *e;
  if (j->fail) {
    XLA_FFI_Future_SetError_Args a = {XLA_FFI_Future_SetError_Args_STRUCT_SIZE, NULL, j->future,
                                      err(j->api, XLA_FFI_Error_Code_DATA_LOSS, "async failure")};
    e = j->api->XLA_FFI_Future_SetError(&a);
  } else {
    XLA_FFI_Future_SetAvailable_Args a = {XLA_FFI_Future_SetAvailable_Args_STRUCT_SIZE, NULL, j->future};
    e = j->api->XLA_FFI_Future_SetAvailable(&a);
  }
  if (e) abort(); /* what ffi.h's Future does */
  free(j);
  return NULL;
}

EXPORT XLA_FFI_Error *ffi_test_async_add_one(XLA_FFI_CallFrame *f);
XLA_FFI_Error *ffi_test_async_add_one(XLA_FFI_CallFrame *f) {
  PROLOGUE(f, XLA_FFI_ExecutionStage_EXECUTE, 0);
  XLA_FFI_Buffer *x = arg(f, 0), *y = ret(f, 0);
  if (!x || !y || x->dtype != XLA_FFI_DataType_F32)
    return err(f->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "async_add_one: f32 -> f32");
  XLA_FFI_Future_Create_Args c;
  memset(&c, 0, sizeof c);
  c.struct_size = XLA_FFI_Future_Create_Args_STRUCT_SIZE;
  XLA_FFI_Error *e = f->api->XLA_FFI_Future_Create(&c);
  if (e) return e;
  async_job *j = malloc(sizeof *j);
  if (!j) abort();
  *j = (async_job){f->api, c.future, x->data, y->data, elements(x), f->attrs.size > 0};
  pthread_t th;
  if (pthread_create(&th, NULL, async_main, j) != 0) abort();
  pthread_detach(th);
  f->future = c.future;
  return NULL;
}

/* ---- row_sum: (f32[b, n] x) -> (f32[b] sums, s32[b] how many rows this call saw): for
 * batch partitioning, where each device's call sees its own rows */
EXPORT XLA_FFI_Error *ffi_test_row_sum(XLA_FFI_CallFrame *f);
XLA_FFI_Error *ffi_test_row_sum(XLA_FFI_CallFrame *f) {
  PROLOGUE(f, XLA_FFI_ExecutionStage_EXECUTE, 0);
  XLA_FFI_Buffer *x = arg(f, 0), *y = ret(f, 0), *rows = ret(f, 1);
  if (!x || !y || !rows || x->rank != 2 || x->dtype != XLA_FFI_DataType_F32 ||
      y->rank != 1 || y->dims[0] != x->dims[0] || rows->rank != 1 || rows->dims[0] != x->dims[0])
    return err(f->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "row_sum: f32[b,n] -> (f32[b], s32[b])");
  const float *p = x->data;
  float *o = y->data;
  for (int64_t i = 0; i < x->dims[0]; i++) {
    float s = 0;
    for (int64_t j = 0; j < x->dims[1]; j++) s += p[i * x->dims[1] + j];
    o[i] = s;
  }
  for (int64_t i = 0; i < x->dims[0]; i++) ((int32_t *)rows->data)[i] = (int32_t)x->dims[0];
  return NULL;
}

/* ---- registered by the library itself through the API table (Handler_Register) */
EXPORT XLA_FFI_Error *ffi_test_self_registered(XLA_FFI_CallFrame *f);
XLA_FFI_Error *ffi_test_self_registered(XLA_FFI_CallFrame *f) {
  PROLOGUE(f, XLA_FFI_ExecutionStage_EXECUTE, 0);
  *(int32_t *)ret(f, 0)->data = 42;
  return NULL;
}

EXPORT XLA_FFI_Error *ffi_test_register_self(const XLA_FFI_Api *api);
XLA_FFI_Error *ffi_test_register_self(const XLA_FFI_Api *api) {
  XLA_FFI_Handler_Register_Args a;
  memset(&a, 0, sizeof a);
  a.struct_size = XLA_FFI_Handler_Register_Args_STRUCT_SIZE;
  a.name = (XLA_FFI_ByteSpan){"self_registered", 15};
  a.platform = (XLA_FFI_ByteSpan){"Host", 4};
  a.bundle.execute = ffi_test_self_registered;
  return api->XLA_FFI_Handler_Register(&a);
}

/* ---- legacy custom calls (registered with api_version=0) */

/* API_VERSION_ORIGINAL: out = in0 + in1 (f32[4]) */
EXPORT void ffi_test_legacy_add(void *out, const void **in);
void ffi_test_legacy_add(void *out, const void **in) {
  const float *a = in[0], *b = in[1];
  float *o = out;
  for (int i = 0; i < 4; i++) o[i] = a[i] + b[i];
}

/* Two results: out is an array of their buffers. (f32[4] x) -> (x * 3, s32[] 7) */
EXPORT void ffi_test_legacy_two(void *out, const void **in);
void ffi_test_legacy_two(void *out, const void **in) {
  void **outs = out;
  const float *x = in[0];
  float *o = outs[0];
  for (int i = 0; i < 4; i++) o[i] = x[i] * 3;
  *(int32_t *)outs[1] = 7;
}

/* API_VERSION_STATUS_RETURNING(_UNIFIED): fails with the opaque string as its message */
extern void XlaCustomCallStatusSetFailure(void *status, const char *message, size_t len)
    __attribute__((weak));
EXPORT void ffi_test_legacy_fail(void *out, const void **in, void *status);
void ffi_test_legacy_fail(void *out, const void **in, void *status) {
  (void)out, (void)in;
  if (XlaCustomCallStatusSetFailure) XlaCustomCallStatusSetFailure(status, "legacy failure", 14);
}
EXPORT void ffi_test_legacy_opaque(void *out, const void **in, const char *opaque, size_t len,
                                   void *status);
void ffi_test_legacy_opaque(void *out, const void **in, const char *opaque, size_t len,
                            void *status) {
  (void)in;
  if (len == 0) {
    if (XlaCustomCallStatusSetFailure) XlaCustomCallStatusSetFailure(status, "no opaque", 9);
    return;
  }
  *(int32_t *)out = (int32_t)len * 100 + (opaque[0] - '0');
}
