/* Whole-program runs through the PJRT C API for the reliability tests (integrity, allocation
 * failure injection, soak): compile, upload inputs, execute, download every output. Each step
 * returns the plugin's error instead of failing the test, and cleans up what it made, so a
 * caller can check that a failure anywhere leaves nothing behind. Include after
 * test_pjrt_util.h (which provides `api`). */
#ifndef ANVIL_TEST_PJRT_RUN_H
#define ANVIL_TEST_PJRT_RUN_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/pjrt_c_api.h"

typedef struct run_input {
  PJRT_Buffer_Type type;
  int rank;
  int64_t dims[4];
} run_input;

/* A program and the shapes of its inputs. */
typedef struct run_program {
  const char *name;
  const char *format; /* "mlir" or "hlo" */
  const char *file;   /* relative to ANVIL_SOURCE_DIR ("shared/..." to ANVIL_SHARED_DIR), or
                       * NULL when `text` holds the code */
  const char *text;
  int num_inputs;
  run_input inputs[6];
  int num_replicas; /* 0 or 1: one device; N: N replicas on N devices */
} run_program;

enum { RUN_MAX_DEVICES = 4, RUN_MAX_OUTPUTS = 16 };

/* The bytes of a file under the environment directory `env` (ANVIL_SOURCE_DIR or
 * ANVIL_SHARED_DIR), malloc'd; NULL when it is not there (the caller skips). */
static inline unsigned char *run_read_file(const char *env, const char *rel, size_t *n) {
  const char *dir = getenv(env);
  if (!dir) return NULL;
  char path[2048];
  snprintf(path, sizeof path, "%s/%s", dir, rel);
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  unsigned char *buf = NULL;
  size_t cap = 0, len = 0;
  for (;;) {
    if (len == cap) {
      cap = cap ? 2 * cap : 1 << 16;
      unsigned char *nb = realloc(buf, cap);
      if (!nb) break;
      buf = nb;
    }
    size_t got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (got == 0) break;
  }
  fclose(f);
  *n = len;
  return buf;
}

/* The code of `p` (malloc'd), or NULL when its file is missing. */
static inline unsigned char *run_program_code(const run_program *p, size_t *n) {
  if (p->file && strncmp(p->file, "shared/", 7) == 0)
    return run_read_file("ANVIL_SHARED_DIR", p->file + 7, n);
  if (p->file) return run_read_file("ANVIL_SOURCE_DIR", p->file, n);
  *n = strlen(p->text);
  unsigned char *c = malloc(*n + 1);
  if (c) memcpy(c, p->text, *n + 1);
  return c;
}

/* Compiles for `replicas` devices (0 or 1: one), with hand-encoded CompileOptionsProto
 * { executable_build_options { num_replicas, num_partitions = 1 } }. */
static inline PJRT_Error *run_compile_replicas(PJRT_Client *c, const char *format, const void *code,
                                               size_t code_size, int replicas,
                                               PJRT_LoadedExecutable **out) {
  PJRT_Program prog = {.struct_size = PJRT_Program_STRUCT_SIZE,
                       .code = (char *)code,
                       .code_size = code_size,
                       .format = format,
                       .format_size = strlen(format)};
  const char opts[6] = {0x1a, 0x04, 0x20, (char)(replicas > 1 ? replicas : 1), 0x28, 0x01};
  PJRT_Client_Compile_Args a = {.struct_size = PJRT_Client_Compile_Args_STRUCT_SIZE,
                                .client = c,
                                .program = &prog,
                                .compile_options = replicas > 1 ? opts : NULL,
                                .compile_options_size = replicas > 1 ? sizeof opts : 0};
  PJRT_Error *e = api->PJRT_Client_Compile(&a);
  *out = a.executable;
  return e;
}

static inline PJRT_Error *run_compile(PJRT_Client *c, const char *format, const void *code,
                                      size_t code_size, PJRT_LoadedExecutable **out) {
  return run_compile_replicas(c, format, code, code_size, 1, out);
}

static inline void run_destroy_exe(PJRT_LoadedExecutable *e) {
  if (!e) return;
  PJRT_LoadedExecutable_Destroy_Args a = {
      .struct_size = PJRT_LoadedExecutable_Destroy_Args_STRUCT_SIZE, .executable = e};
  PJRT_Error *err = api->PJRT_LoadedExecutable_Destroy(&a);
  if (err) err_free(err);
}

static inline void run_destroy_buffer(PJRT_Buffer *b) {
  if (!b) return;
  PJRT_Buffer_Destroy_Args a = {.struct_size = PJRT_Buffer_Destroy_Args_STRUCT_SIZE, .buffer = b};
  PJRT_Error *err = api->PJRT_Buffer_Destroy(&a);
  if (err) err_free(err);
}

static inline void run_destroy_event(PJRT_Event *ev) {
  if (!ev) return;
  PJRT_Event_Destroy_Args a = {.struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE, .event = ev};
  PJRT_Error *err = api->PJRT_Event_Destroy(&a);
  if (err) err_free(err);
}

/* Awaits and destroys `ev`; returns its error. */
static inline PJRT_Error *run_await(PJRT_Event *ev) {
  if (!ev) return NULL;
  PJRT_Event_Await_Args a = {.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE, .event = ev};
  PJRT_Error *e = api->PJRT_Event_Await(&a);
  run_destroy_event(ev);
  return e;
}

static inline size_t run_type_size(PJRT_Buffer_Type t) {
  switch (t) {
    case PJRT_Buffer_Type_PRED:
    case PJRT_Buffer_Type_S8:
    case PJRT_Buffer_Type_U8: return 1;
    case PJRT_Buffer_Type_F16:
    case PJRT_Buffer_Type_BF16: return 2;
    case PJRT_Buffer_Type_F64:
    case PJRT_Buffer_Type_S64:
    case PJRT_Buffer_Type_U64: return 8;
    default: return 4;
  }
}

/* Fills an input with a fixed pattern (`seed` varies it): small integers so that index
 * inputs stay in range, floats in [-1.5, 1.5]. */
static inline void run_fill(const run_input *in, int seed, void *dst, size_t n) {
  for (size_t i = 0; i < n; i++) {
    int v = (int)((i * 7 + (size_t)seed * 3) % 5);
    switch (in->type) {
      case PJRT_Buffer_Type_F32: ((float *)dst)[i] = (float)v * 0.75f - 1.5f; break;
      case PJRT_Buffer_Type_F64: ((double *)dst)[i] = (double)v * 0.75 - 1.5; break;
      case PJRT_Buffer_Type_PRED: ((unsigned char *)dst)[i] = (unsigned char)(v & 1); break;
      case PJRT_Buffer_Type_S64: ((int64_t *)dst)[i] = v % 2; break;
      case PJRT_Buffer_Type_U32: ((uint32_t *)dst)[i] = (uint32_t)(i * 2654435761u + (unsigned)seed); break;
      default: ((int32_t *)dst)[i] = v % 2; break;
    }
  }
}

static inline PJRT_Error *run_upload(PJRT_Client *c, PJRT_Device *dev, const run_input *in,
                                     int seed, PJRT_Buffer **out) {
  *out = NULL;
  size_t n = 1;
  for (int i = 0; i < in->rank; i++) n *= (size_t)in->dims[i];
  size_t bytes = n * run_type_size(in->type);
  void *host = malloc(bytes ? bytes : 1);
  if (!host) return NULL; /* the test's own allocation: cannot happen in practice */
  run_fill(in, seed, host, n);
  PJRT_Client_BufferFromHostBuffer_Args a = {
      .struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE,
      .client = c,
      .data = host,
      .type = in->type,
      .dims = in->dims,
      .num_dims = (size_t)in->rank,
      .host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableOnlyDuringCall,
      .device = dev};
  PJRT_Error *e = api->PJRT_Client_BufferFromHostBuffer(&a);
  if (!e) e = run_await(a.done_with_host_buffer);
  else run_destroy_event(a.done_with_host_buffer);
  free(host);
  if (e) {
    run_destroy_buffer(a.buffer);
    return e;
  }
  *out = a.buffer;
  return NULL;
}

/* Appends the bytes of `b` to *bytes (realloc'd), *size grows. */
static inline PJRT_Error *run_download(PJRT_Buffer *b, unsigned char **bytes, size_t *size) {
  PJRT_Buffer_ToHostBuffer_Args q = {.struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE,
                                     .src = b};
  PJRT_Error *e = api->PJRT_Buffer_ToHostBuffer(&q);
  if (e) return e;
  unsigned char *nb = realloc(*bytes, *size + q.dst_size + 1);
  if (!nb) return NULL;
  *bytes = nb;
  PJRT_Buffer_ToHostBuffer_Args a = {.struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE,
                                     .src = b,
                                     .dst = nb + *size,
                                     .dst_size = q.dst_size};
  e = api->PJRT_Buffer_ToHostBuffer(&a);
  if (e) {
    run_destroy_event(a.event);
    return e;
  }
  e = run_await(a.event);
  if (!e) *size += q.dst_size;
  return e;
}

static inline PJRT_Error *run_num_outputs(PJRT_LoadedExecutable *exe, size_t *n) {
  PJRT_LoadedExecutable_GetExecutable_Args ge = {
      .struct_size = PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE,
      .loaded_executable = exe};
  PJRT_Error *e = api->PJRT_LoadedExecutable_GetExecutable(&ge);
  if (e) return e;
  PJRT_Executable_NumOutputs_Args no = {.struct_size = PJRT_Executable_NumOutputs_Args_STRUCT_SIZE,
                                        .executable = ge.executable};
  e = api->PJRT_Executable_NumOutputs(&no);
  *n = no.num_outputs;
  PJRT_Executable_Destroy_Args d = {.struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE,
                                    .executable = ge.executable};
  PJRT_Error *e2 = api->PJRT_Executable_Destroy(&d);
  if (e2) err_free(e2);
  return e;
}

/* Executes `exe` on its `ndev` devices, in[d] holding device d's `nin` arguments; downloads
 * every output of every device in order, appending to *bytes (malloc'd, *size bytes), and
 * destroys the outputs. `keep` (may be NULL) lists inputs that must not be donated. */
static inline PJRT_Error *run_execute_devices(PJRT_LoadedExecutable *exe, size_t ndev,
                                              PJRT_Buffer *const *const *in, size_t nin,
                                              const int64_t *keep, size_t nkeep,
                                              unsigned char **bytes, size_t *size) {
  *bytes = NULL;
  *size = 0;
  size_t nout = 0;
  PJRT_Error *e = run_num_outputs(exe, &nout);
  if (e) return e;
  if (nout > RUN_MAX_OUTPUTS || ndev > RUN_MAX_DEVICES) return NULL;
  PJRT_Buffer *out[RUN_MAX_DEVICES][RUN_MAX_OUTPUTS];
  memset(out, 0, sizeof out);
  PJRT_Buffer **out_lists[RUN_MAX_DEVICES];
  PJRT_Event *done[RUN_MAX_DEVICES] = {0};
  for (size_t d = 0; d < ndev; d++) out_lists[d] = out[d];
  PJRT_ExecuteOptions opts = {.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE,
                              .non_donatable_input_indices = keep,
                              .num_non_donatable_input_indices = nkeep};
  PJRT_LoadedExecutable_Execute_Args a = {
      .struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE,
      .executable = exe,
      .options = &opts,
      .argument_lists = in,
      .num_devices = ndev,
      .num_args = nin,
      .output_lists = out_lists,
      .device_complete_events = done};
  e = api->PJRT_LoadedExecutable_Execute(&a);
  if (e) return e;
  /* The first device's error that is not ABORTED (devices give up with ABORTED when another
   * fails: that other's error is the cause). */
  for (size_t d = 0; d < ndev; d++) {
    PJRT_Error *ed = run_await(done[d]);
    if (ed && (!e || (err_code(e) == PJRT_Error_Code_ABORTED &&
                      err_code(ed) != PJRT_Error_Code_ABORTED))) {
      if (e) err_free(e);
      e = ed;
    } else if (ed) {
      err_free(ed);
    }
  }
  for (size_t d = 0; d < ndev; d++)
    for (size_t i = 0; i < nout; i++) {
      if (!e && out[d][i]) e = run_download(out[d][i], bytes, size);
      run_destroy_buffer(out[d][i]);
    }
  if (e) {
    free(*bytes);
    *bytes = NULL;
    *size = 0;
  }
  return e;
}

/* Executes `exe` on its one device with `in`; see run_execute_devices. */
static inline PJRT_Error *run_execute(PJRT_LoadedExecutable *exe, PJRT_Buffer **in, size_t nin,
                                      unsigned char **bytes, size_t *size) {
  PJRT_Buffer *const *lists[1] = {in};
  return run_execute_devices(exe, 1, lists, nin, NULL, 0, bytes, size);
}

/* A client with `devices` CPU devices (create option device_count). */
static inline PJRT_Error *run_client(int64_t devices, PJRT_Client **out) {
  PJRT_NamedValue opt = {.struct_size = PJRT_NamedValue_STRUCT_SIZE,
                         .name = "device_count",
                         .name_size = 12,
                         .type = PJRT_NamedValue_kInt64,
                         .int64_value = devices,
                         .value_size = 1};
  PJRT_Client_Create_Args a = {.struct_size = PJRT_Client_Create_Args_STRUCT_SIZE,
                               .create_options = &opt,
                               .num_options = 1};
  PJRT_Error *e = api->PJRT_Client_Create(&a);
  *out = a.client;
  return e;
}

static inline void run_destroy_client(PJRT_Client *c) {
  if (!c) return;
  PJRT_Client_Destroy_Args a = {.struct_size = PJRT_Client_Destroy_Args_STRUCT_SIZE, .client = c};
  PJRT_Error *e = api->PJRT_Client_Destroy(&a);
  if (e) err_free(e);
}

#endif
