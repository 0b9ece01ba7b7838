/* anvil-cts: the PJRT calls TensorFlow's NextPluggableDevice makes and JAX does not (TensorFlow
 * 2.21, xla/pjrt/c_api_client through tensorflow/compiler/jit/pjrt_device_context.cc and
 * xla_launch_util.cc): compile options naming argument and result layouts for a portable
 * executable run on execute_device; host-to-device uploads with kImmutableZeroCopy and an
 * explicit device layout (retried without it when refused with UNIMPLEMENTED), whose done
 * event keeps the host tensor alive; ready events waited through OnReady before each use;
 * device-to-host copies with a host layout; copies within one device. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cts.h"

static const float kX[4] = {1.5f, -2.0f, 3.25f, 8.0f};
static const float kY[4] = {0.5f, 4.0f, -1.25f, 2.0f};

static bool event_is_ready(cts_ctx *t, PJRT_Event *ev) {
  PJRT_Event_IsReady_Args a = {.struct_size = PJRT_Event_IsReady_Args_STRUCT_SIZE, .event = ev};
  PJRT_Error *e = t->api->PJRT_Event_IsReady(&a);
  cts_error_free(t, e);
  return !e && a.is_ready;
}

/* ------------------------------------------------------ OnReady, as TensorFlow waits */

typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool called;
  PJRT_Error_Code code;
  cts_ctx *t;
} ready_wait;

static void ready_cb(PJRT_Error *error, void *arg) {
  ready_wait *w = arg;
  PJRT_Error_Code code = cts_error_code(w->t, error);
  cts_error_free(w->t, error);
  pthread_mutex_lock(&w->mu);
  w->called = true;
  w->code = code;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

/* Registers OnReady on `ev`, destroys the event (TensorFlow keeps only the future), waits up
 * to 10 s for the callback; it must report OK. */
static cts_status wait_on_ready(cts_ctx *t, PJRT_Event *ev, const char *what) {
  if (!ev) return cts_fail(t, "%s: NULL event", what);
  ready_wait w = {.t = t};
  pthread_mutex_init(&w.mu, NULL);
  pthread_cond_init(&w.cv, NULL);
  PJRT_Event_OnReady_Args a = {.struct_size = PJRT_Event_OnReady_Args_STRUCT_SIZE, .event = ev,
                               .callback = ready_cb, .user_arg = &w};
  CTS_TRY(cts_err(t, t->api->PJRT_Event_OnReady(&a), "PJRT_Event_OnReady"));
  PJRT_Event_Destroy_Args d = {.struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE, .event = ev};
  cts_error_free(t, t->api->PJRT_Event_Destroy(&d));
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 10;
  pthread_mutex_lock(&w.mu);
  while (!w.called)
    if (pthread_cond_timedwait(&w.cv, &w.mu, &deadline) != 0) break;
  bool called = w.called;
  PJRT_Error_Code code = w.code;
  pthread_mutex_unlock(&w.mu);
  if (!called) return cts_fail(t, "%s: OnReady callback did not run within 10 s", what);
  if (code != PJRT_Error_Code_OK)
    return cts_fail(t, "%s: OnReady reported %s", what, cts_code_name(code));
  return CTS_PASS;
}

static cts_status ready_event(cts_ctx *t, PJRT_Buffer *b, PJRT_Event **out) {
  PJRT_Buffer_ReadyEvent_Args r = {.struct_size = PJRT_Buffer_ReadyEvent_Args_STRUCT_SIZE,
                                   .buffer = b};
  CTS_TRY(cts_err(t, t->api->PJRT_Buffer_ReadyEvent(&r), "PJRT_Buffer_ReadyEvent"));
  *out = r.event;
  return CTS_PASS;
}

/* --------------------------------------------------------------- uploads */

typedef struct {
  PJRT_Buffer *buffer;
  PJRT_Event *done; /* done_with_host_buffer */
  bool with_layout; /* the device layout was accepted */
} upload;

/* BufferFromHostBuffer as TensorFlow calls it: kImmutableZeroCopy with a device layout (an
 * untiled minor_to_major), again without the layout if the plugin answers UNIMPLEMENTED. */
static cts_status tf_upload(cts_ctx *t, PJRT_Client *c, PJRT_Device *d, const float *host,
                            const int64_t *dims, size_t rank, const int64_t *m2m, upload *u) {
  PJRT_Buffer_MemoryLayout layout = {.struct_size = PJRT_Buffer_MemoryLayout_STRUCT_SIZE,
                                     .type = PJRT_Buffer_MemoryLayout_Type_Tiled};
  layout.tiled.struct_size = PJRT_Buffer_MemoryLayout_Tiled_STRUCT_SIZE;
  layout.tiled.minor_to_major = m2m;
  layout.tiled.minor_to_major_size = rank;
  PJRT_Client_BufferFromHostBuffer_Args a = {
      .struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE, .client = c, .data = host,
      .type = PJRT_Buffer_Type_F32, .dims = dims, .num_dims = rank,
      .host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableZeroCopy, .device = d,
      .device_layout = &layout};
  PJRT_Error *e = t->api->PJRT_Client_BufferFromHostBuffer(&a);
  u->with_layout = e == NULL;
  if (e && cts_error_code(t, e) == PJRT_Error_Code_UNIMPLEMENTED) {
    cts_error_free(t, e);
    a.device_layout = NULL;
    e = t->api->PJRT_Client_BufferFromHostBuffer(&a);
  }
  CTS_TRY(cts_err(t, e, "BufferFromHostBuffer (kImmutableZeroCopy, device layout)"));
  if (!a.buffer) return cts_fail(t, "BufferFromHostBuffer: success but NULL buffer");
  /* TensorFlow keeps the host tensor alive until this event fires: it must exist. */
  if (!a.done_with_host_buffer)
    return cts_fail(t, "kImmutableZeroCopy upload gave no done_with_host_buffer event");
  u->buffer = a.buffer;
  u->done = a.done_with_host_buffer;
  return CTS_PASS;
}

/* ToHostBuffer with a row-major host layout (TensorFlow passes its literal's layout). */
static cts_status to_host_with_layout(cts_ctx *t, PJRT_Buffer *b, const int64_t *m2m, size_t rank,
                                      float *dst, size_t size) {
  PJRT_Buffer_MemoryLayout layout = {.struct_size = PJRT_Buffer_MemoryLayout_STRUCT_SIZE,
                                     .type = PJRT_Buffer_MemoryLayout_Type_Tiled};
  layout.tiled.struct_size = PJRT_Buffer_MemoryLayout_Tiled_STRUCT_SIZE;
  layout.tiled.minor_to_major = m2m;
  layout.tiled.minor_to_major_size = rank;
  PJRT_Buffer_ToHostBuffer_Args a = {.struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE,
                                     .src = b, .host_layout = &layout, .dst = dst,
                                     .dst_size = size};
  CTS_TRY(cts_err(t, t->api->PJRT_Buffer_ToHostBuffer(&a), "ToHostBuffer with a host layout"));
  return wait_on_ready(t, a.event, "ToHostBuffer event");
}

static cts_status setup(cts_ctx *t, PJRT_Client **c, PJRT_Device *const **devs, size_t *n) {
  CTS_TRY(cts_client_create(t, c));
  return cts_addressable_devices(t, *c, devs, n);
}

/* --------------------------------------------------------------- checks */

CTS_CHECK(cts_tf_zero_copy_device_layout) {
  PJRT_Client *c;
  PJRT_Device *const *devs;
  size_t ndev;
  CTS_TRY(setup(t, &c, &devs, &ndev));
  /* Aligned host storage that outlives the buffer, as a TensorFlow tensor does. */
  float *host = aligned_alloc(64, 64 * sizeof(float));
  if (!host) return cts_fail(t, "out of memory");
  const float logical[6] = {1, 2, 3, 4, 5, 6};
  memcpy(host, logical, sizeof logical);
  const int64_t dims[2] = {2, 3}, row_major[2] = {1, 0}, col_major[2] = {0, 1};
  upload u;
  CTS_TRY(tf_upload(t, c, devs[0], host, dims, 2, row_major, &u));
  if (!u.with_layout) cts_note(t, "row-major device layout refused with UNIMPLEMENTED");
  /* A fired done event means the plugin copied: the host may change without effect. An
   * unfired one means the plugin reads the host memory until the buffer goes. */
  bool copied = event_is_ready(t, u.done);
  if (copied) memset(host, 0xff, sizeof logical);
  float back[6];
  CTS_TRY(to_host_with_layout(t, u.buffer, row_major, 2, back, sizeof back));
  if (memcmp(back, logical, sizeof back))
    return cts_fail(t, "zero-copy upload read back as %g %g %g %g %g %g (expected 1..6)%s",
                    back[0], back[1], back[2], back[3], back[4], back[5],
                    copied ? " after the done event fired" : "");
  cts_buffer_destroy(t, u.buffer);
  CTS_TRY(wait_on_ready(t, u.done, "done_with_host_buffer after Destroy"));
  cts_note(t, "%s", copied ? "the plugin copied at upload" : "the plugin aliased the host data");

  /* A column-major device layout: stored as asked and read back logically, or UNIMPLEMENTED
   * (TensorFlow then retries without it). */
  memcpy(host, logical, sizeof logical);
  CTS_TRY(tf_upload(t, c, devs[0], host, dims, 2, col_major, &u));
  CTS_TRY(to_host_with_layout(t, u.buffer, row_major, 2, back, sizeof back));
  if (memcmp(back, logical, sizeof back))
    return cts_fail(t, "upload with a column-major device layout read back as %g %g %g %g %g %g",
                    back[0], back[1], back[2], back[3], back[4], back[5]);
  if (!u.with_layout) cts_note(t, "column-major device layout refused with UNIMPLEMENTED");
  cts_buffer_destroy(t, u.buffer);
  CTS_TRY(wait_on_ready(t, u.done, "done_with_host_buffer after Destroy"));
  free(host);
  cts_client_destroy(t, c);
  return CTS_PASS;
}

CTS_CHECK(cts_tf_portable_compile_and_run) {
  /* TensorFlow's single-device function: TF's compile options, uploads waited through their
   * ready events, ExecutePortable on each device, results waited through ready events, read
   * with a host layout, then copied within the device (the TFNPD same-device copy). */
  PJRT_Client *c;
  PJRT_Device *const *devs;
  size_t ndev;
  CTS_TRY(setup(t, &c, &devs, &ndev));
  char opts[512];
  size_t len = cts_compile_options_tf(opts, sizeof opts, 2, 4);
  if (!len) return cts_fail(t, "compile options do not fit");
  PJRT_LoadedExecutable *exe;
  CTS_TRY(cts_compile(t, c, &cts_prog_add_text, opts, len, &exe));
  const int64_t dims[1] = {4}, m2m[1] = {0};
  float *host = aligned_alloc(64, 2 * 16 * sizeof(float));
  if (!host) return cts_fail(t, "out of memory");
  memcpy(host, kX, sizeof kX);
  memcpy(host + 16, kY, sizeof kY);
  for (size_t i = 0; i < ndev; i++) {
    upload in[2];
    PJRT_Buffer *args[2];
    for (int k = 0; k < 2; k++) {
      CTS_TRY(tf_upload(t, c, devs[i], host + 16 * k, dims, 1, m2m, &in[k]));
      PJRT_Event *ready;
      CTS_TRY(ready_event(t, in[k].buffer, &ready));
      CTS_TRY(wait_on_ready(t, ready, "uploaded buffer's ready event"));
      args[k] = in[k].buffer;
    }
    PJRT_Buffer *out[1] = {NULL};
    PJRT_Buffer *const *al[1] = {args};
    PJRT_Buffer **ol[1] = {out};
    PJRT_Event *done[1] = {NULL};
    PJRT_ExecuteOptions o = {.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE, .launch_id = 1};
    PJRT_LoadedExecutable_Execute_Args x = {
        .struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE, .executable = exe,
        .options = &o, .argument_lists = al, .num_devices = 1, .num_args = 2,
        .output_lists = ol, .device_complete_events = done, .execute_device = devs[i]};
    CTS_TRY(cts_err(t, t->api->PJRT_LoadedExecutable_Execute(&x), "ExecutePortable"));
    if (!out[0]) return cts_fail(t, "ExecutePortable produced a NULL output");
    CTS_TRY(wait_on_ready(t, done[0], "device_complete_event"));
    PJRT_Event *ready;
    CTS_TRY(ready_event(t, out[0], &ready));
    CTS_TRY(wait_on_ready(t, ready, "output's ready event"));
    PJRT_Buffer_Device_Args dv = {.struct_size = PJRT_Buffer_Device_Args_STRUCT_SIZE,
                                  .buffer = out[0]};
    CTS_TRY(cts_err(t, t->api->PJRT_Buffer_Device(&dv), "PJRT_Buffer_Device"));
    if (dv.device != devs[i]) return cts_fail(t, "output of device %zu is elsewhere", i);
    float want[4], back[4];
    for (int k = 0; k < 4; k++) want[k] = kX[k] + kY[k];
    CTS_TRY(to_host_with_layout(t, out[0], m2m, 1, back, sizeof back));
    if (memcmp(back, want, sizeof want))
      return cts_fail(t, "device %zu: x + y gave %g %g %g %g", i, back[0], back[1], back[2],
                      back[3]);
    PJRT_Buffer_CopyToDevice_Args cp = {
        .struct_size = PJRT_Buffer_CopyToDevice_Args_STRUCT_SIZE, .buffer = out[0],
        .dst_device = devs[i]};
    CTS_TRY(cts_err(t, t->api->PJRT_Buffer_CopyToDevice(&cp), "CopyToDevice (same device)"));
    if (!cp.dst_buffer || cp.dst_buffer == out[0])
      return cts_fail(t, "a same-device copy must be a new buffer");
    cts_buffer_destroy(t, out[0]);
    CTS_TRY(to_host_with_layout(t, cp.dst_buffer, m2m, 1, back, sizeof back));
    if (memcmp(back, want, sizeof want))
      return cts_fail(t, "device %zu: the same-device copy outlived its source wrongly", i);
    cts_buffer_destroy(t, cp.dst_buffer);
    for (int k = 0; k < 2; k++) {
      cts_buffer_destroy(t, in[k].buffer);
      CTS_TRY(wait_on_ready(t, in[k].done, "done_with_host_buffer after Destroy"));
    }
  }
  free(host);
  cts_executable_destroy(t, exe);
  cts_client_destroy(t, c);
  return CTS_PASS;
}
