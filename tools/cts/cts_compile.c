/* anvil-cts: compile (MLIR text and portable-artifact bytecode), executable queries, execute on
 * one and on all devices, donation, serialization, and compile/execute error paths. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cts.h"

static const float kA[4] = {1.0f, 2.0f, -3.0f, 0.5f};
static const float kB[4] = {10.0f, 20.0f, 30.0f, -4.0f};

typedef struct {
  PJRT_Client *c;
  PJRT_Device *const *devs;
  size_t ndev;
} env;

static cts_status env_make(cts_ctx *t, env *e) {
  CTS_TRY(cts_client_create(t, &e->c));
  return cts_addressable_devices(t, e->c, &e->devs, &e->ndev);
}

/* Runs `exe` (the add or fma program `p`) on device d with kA, kB and checks the result. */
static cts_status run_and_check(cts_ctx *t, env *e, PJRT_LoadedExecutable *exe,
                                const cts_program *p, PJRT_Device *d, PJRT_ExecuteOptions *opts) {
  PJRT_Buffer *args[2], *out[1] = {NULL};
  CTS_TRY(cts_f32_buffer(t, e->c, d, kA, 4, &args[0]));
  CTS_TRY(cts_f32_buffer(t, e->c, d, kB, 4, &args[1]));
  CTS_TRY(cts_execute1(t, exe, args, 2, out, opts));
  if (!out[0]) return cts_fail(t, "execute produced a NULL output buffer");
  float want[4];
  cts_expected(p, kA, kB, want);
  CTS_TRY(cts_expect_f32(t, out[0], want, 4, p->name));
  for (int i = 0; i < 2; i++) cts_buffer_destroy(t, args[i]);
  cts_buffer_destroy(t, out[0]);
  return CTS_PASS;
}

CTS_CHECK(cts_compile_probe) {
  /* Precondition for everything that executes: some carried program compiles and runs. */
  env e;
  CTS_TRY(env_make(t, &e));
  PJRT_LoadedExecutable *exe;
  const cts_program *p;
  CTS_TRY(cts_compile_any(t, e.c, &exe, &p));
  CTS_TRY(run_and_check(t, &e, exe, p, e.devs[0], NULL));
  cts_note(t, "using %s", p->name);
  cts_executable_destroy(t, exe);
  cts_client_destroy(t, e.c);
  return CTS_PASS;
}

static cts_status compile_and_run(cts_ctx *t, const cts_program *p) {
  env e;
  CTS_TRY(env_make(t, &e));
  PJRT_LoadedExecutable *exe;
  CTS_TRY(cts_compile(t, e.c, p, NULL, 0, &exe));
  CTS_TRY(run_and_check(t, &e, exe, p, e.devs[0], NULL));
  cts_executable_destroy(t, exe);
  cts_client_destroy(t, e.c);
  return CTS_PASS;
}

CTS_CHECK(cts_compile_mlir_text) { return compile_and_run(t, &cts_prog_add_text); }
CTS_CHECK(cts_compile_mlir_bytecode) { return compile_and_run(t, &cts_prog_fma_bytecode); }

CTS_CHECK(cts_compile_empty_options) {
  /* An empty CompileOptionsProto (every field at its proto default, so num_replicas is 0) must
   * either compile to a working executable or be refused with an error: not abort. */
  env e;
  CTS_TRY(env_make(t, &e));
  PJRT_LoadedExecutable *exe;
  cts_status s = cts_compile(t, e.c, &cts_prog_add_text, "", 0, &exe);
  if (s == CTS_FAIL && strstr(t->msg, ": success but") == NULL) {
    cts_note(t, "(refused cleanly)");
    cts_client_destroy(t, e.c);
    return CTS_PASS;
  }
  CTS_TRY(s);
  CTS_TRY(run_and_check(t, &e, exe, &cts_prog_add_text, e.devs[0], NULL));
  cts_executable_destroy(t, exe);
  cts_client_destroy(t, e.c);
  return CTS_PASS;
}

CTS_CHECK(cts_executable_queries) {
  env e;
  CTS_TRY(env_make(t, &e));
  PJRT_LoadedExecutable *le;
  const cts_program *p;
  CTS_TRY(cts_compile_any(t, e.c, &le, &p));
  PJRT_LoadedExecutable_GetExecutable_Args g = {
      .struct_size = PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE, .loaded_executable = le};
  CTS_TRY(cts_err(t, t->api->PJRT_LoadedExecutable_GetExecutable(&g), "GetExecutable"));
  PJRT_Executable *x = g.executable;
  if (!x) return cts_fail(t, "NULL executable");
  PJRT_Executable_Name_Args nm = {.struct_size = PJRT_Executable_Name_Args_STRUCT_SIZE,
                                  .executable = x};
  CTS_TRY(cts_err(t, t->api->PJRT_Executable_Name(&nm), "PJRT_Executable_Name"));
  if (nm.executable_name_size && !nm.executable_name) return cts_fail(t, "NULL name");
  PJRT_Executable_NumOutputs_Args no = {.struct_size = PJRT_Executable_NumOutputs_Args_STRUCT_SIZE,
                                        .executable = x};
  CTS_TRY(cts_err(t, t->api->PJRT_Executable_NumOutputs(&no), "PJRT_Executable_NumOutputs"));
  if (no.num_outputs != 1) return cts_fail(t, "NumOutputs %zu, expected 1", no.num_outputs);
  PJRT_Executable_NumReplicas_Args nr = {
      .struct_size = PJRT_Executable_NumReplicas_Args_STRUCT_SIZE, .executable = x};
  CTS_TRY(cts_err(t, t->api->PJRT_Executable_NumReplicas(&nr), "PJRT_Executable_NumReplicas"));
  PJRT_Executable_NumPartitions_Args np = {
      .struct_size = PJRT_Executable_NumPartitions_Args_STRUCT_SIZE, .executable = x};
  CTS_TRY(cts_err(t, t->api->PJRT_Executable_NumPartitions(&np), "PJRT_Executable_NumPartitions"));
  if (nr.num_replicas != 1 || np.num_partitions != 1)
    return cts_fail(t, "%zu replicas x %zu partitions, expected 1 x 1", nr.num_replicas,
                    np.num_partitions);
  if (CTS_FN(t, PJRT_Executable_OutputElementTypes)) {
    PJRT_Executable_OutputElementTypes_Args ot = {
        .struct_size = PJRT_Executable_OutputElementTypes_Args_STRUCT_SIZE, .executable = x};
    CTS_TRY(cts_err(t, t->api->PJRT_Executable_OutputElementTypes(&ot), "OutputElementTypes"));
    if (ot.num_output_types != 1 || ot.output_types[0] != PJRT_Buffer_Type_F32)
      return cts_fail(t, "output element types are not [F32]");
  }
  if (CTS_FN(t, PJRT_Executable_OutputDimensions)) {
    PJRT_Executable_OutputDimensions_Args od = {
        .struct_size = PJRT_Executable_OutputDimensions_Args_STRUCT_SIZE, .executable = x};
    CTS_TRY(cts_err(t, t->api->PJRT_Executable_OutputDimensions(&od), "OutputDimensions"));
    if (od.num_outputs != 1 || od.dim_sizes[0] != 1 || od.dims[0] != 4)
      return cts_fail(t, "output dimensions are not [[4]]");
  }
  PJRT_LoadedExecutable_AddressableDevices_Args ad = {
      .struct_size = PJRT_LoadedExecutable_AddressableDevices_Args_STRUCT_SIZE, .executable = le};
  CTS_TRY(cts_err(t, t->api->PJRT_LoadedExecutable_AddressableDevices(&ad),
                  "LoadedExecutable_AddressableDevices"));
  if (ad.num_addressable_devices != 1 || ad.addressable_devices[0] != e.devs[0])
    return cts_fail(t, "a single-device executable lists %zu devices", ad.num_addressable_devices);
  if (CTS_FN(t, PJRT_Executable_Fingerprint)) {
    PJRT_Executable_Fingerprint_Args fp = {
        .struct_size = PJRT_Executable_Fingerprint_Args_STRUCT_SIZE, .executable = x};
    PJRT_Error *err = t->api->PJRT_Executable_Fingerprint(&fp);
    if (err) CTS_TRY(cts_err_opt(t, err, "PJRT_Executable_Fingerprint"));
  }
  PJRT_Executable_Destroy_Args xd = {.struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE,
                                     .executable = x};
  CTS_TRY(cts_err(t, t->api->PJRT_Executable_Destroy(&xd), "PJRT_Executable_Destroy"));
  /* The loaded executable stays usable after the executable handle is destroyed. */
  CTS_TRY(run_and_check(t, &e, le, p, e.devs[0], NULL));
  cts_executable_destroy(t, le);
  cts_client_destroy(t, e.c);
  return CTS_PASS;
}

CTS_CHECK(cts_execute_two_outputs) {
  env e;
  CTS_TRY(env_make(t, &e));
  PJRT_LoadedExecutable *exe;
  CTS_TRY(cts_compile(t, e.c, &cts_prog_two_outputs_text, NULL, 0, &exe));
  const int32_t a[6] = {1, -2, 3, 40, 0, 7};
  const int64_t dims[2] = {2, 3};
  PJRT_Buffer *arg, *out[2] = {NULL, NULL};
  CTS_TRY(cts_buffer_from_host(t, e.c, e.devs[0], PJRT_Buffer_Type_S32, dims, 2, a, &arg));
  CTS_TRY(cts_execute1(t, exe, &arg, 1, out, NULL));
  int32_t got[2][6];
  for (int k = 0; k < 2; k++) {
    if (!out[k]) return cts_fail(t, "output %d is NULL", k);
    CTS_TRY(cts_to_host(t, out[k], got[k], sizeof got[k]));
  }
  for (int i = 0; i < 6; i++)
    if (got[0][i] != a[i] * 2 || got[1][i] != a[i] - 1)
      return cts_fail(t, "element %d: got (%d, %d), expected (%d, %d)", i, got[0][i], got[1][i],
                      a[i] * 2, a[i] - 1);
  cts_buffer_destroy(t, arg);
  for (int k = 0; k < 2; k++) cts_buffer_destroy(t, out[k]);
  cts_executable_destroy(t, exe);
  cts_client_destroy(t, e.c);
  return CTS_PASS;
}

CTS_CHECK(cts_execute_all_devices) {
  /* One replica per addressable device; each replica computes on its own device. */
  env e;
  CTS_TRY(env_make(t, &e));
  size_t n = e.ndev < 64 ? e.ndev : 64;
  int ids[64];
  for (size_t i = 0; i < n; i++) CTS_TRY(cts_device_id(t, e.devs[i], &ids[i]));
  char opts[1024];
  size_t len = cts_compile_options(opts, sizeof opts, ids, (int)n, false);
  PJRT_LoadedExecutable *exe;
  CTS_TRY(cts_compile(t, e.c, &cts_prog_add_text, opts, len, &exe));
  PJRT_LoadedExecutable_AddressableDevices_Args ad = {
      .struct_size = PJRT_LoadedExecutable_AddressableDevices_Args_STRUCT_SIZE, .executable = exe};
  CTS_TRY(cts_err(t, t->api->PJRT_LoadedExecutable_AddressableDevices(&ad),
                  "LoadedExecutable_AddressableDevices"));
  if (ad.num_addressable_devices != n)
    return cts_fail(t, "executable for %zu replicas lists %zu devices", n,
                    ad.num_addressable_devices);
  PJRT_Buffer *args[64][2], *outs[64][1];
  PJRT_Buffer *const *arg_lists[64];
  PJRT_Buffer **out_lists[64];
  PJRT_Event *done[64];
  float a[64][4];
  for (size_t i = 0; i < n; i++) {
    for (int k = 0; k < 4; k++) a[i][k] = kA[k] + (float)i;
    CTS_TRY(cts_f32_buffer(t, e.c, ad.addressable_devices[i], a[i], 4, &args[i][0]));
    CTS_TRY(cts_f32_buffer(t, e.c, ad.addressable_devices[i], kB, 4, &args[i][1]));
    arg_lists[i] = args[i];
    out_lists[i] = outs[i];
    outs[i][0] = NULL;
    done[i] = NULL;
  }
  PJRT_ExecuteOptions o = {.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE};
  PJRT_LoadedExecutable_Execute_Args x = {
      .struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE, .executable = exe,
      .options = &o, .argument_lists = arg_lists, .num_devices = n, .num_args = 2,
      .output_lists = out_lists, .device_complete_events = done};
  CTS_TRY(cts_err(t, t->api->PJRT_LoadedExecutable_Execute(&x), "Execute on all devices"));
  for (size_t i = 0; i < n; i++) {
    CTS_TRY(cts_await(t, done[i], "device_complete_event"));
    float want[4];
    cts_expected(&cts_prog_add_text, a[i], kB, want);
    char what[64];
    snprintf(what, sizeof what, "replica %zu", i);
    CTS_TRY(cts_expect_f32(t, outs[i][0], want, 4, what));
    PJRT_Buffer_Device_Args dv = {.struct_size = PJRT_Buffer_Device_Args_STRUCT_SIZE,
                                  .buffer = outs[i][0]};
    CTS_TRY(cts_err(t, t->api->PJRT_Buffer_Device(&dv), "PJRT_Buffer_Device"));
    if (dv.device != ad.addressable_devices[i])
      return cts_fail(t, "replica %zu's output is not on its device", i);
    for (int k = 0; k < 2; k++) cts_buffer_destroy(t, args[i][k]);
    cts_buffer_destroy(t, outs[i][0]);
  }
  cts_note(t, "%zu devices", n);
  cts_executable_destroy(t, exe);
  cts_client_destroy(t, e.c);
  return CTS_PASS;
}

CTS_CHECK(cts_execute_portable_on_device) {
  /* A portable executable (compile_portable_executable) runs on the device named by
   * Execute's execute_device. */
  env e;
  CTS_TRY(env_make(t, &e));
  char opts[256];
  size_t len = cts_compile_options(opts, sizeof opts, NULL, 1, true);
  PJRT_LoadedExecutable *exe;
  CTS_TRY(cts_compile(t, e.c, &cts_prog_add_text, opts, len, &exe));
  PJRT_Device *d = e.devs[e.ndev - 1];
  PJRT_Buffer *args[2], *out[1] = {NULL};
  CTS_TRY(cts_f32_buffer(t, e.c, d, kA, 4, &args[0]));
  CTS_TRY(cts_f32_buffer(t, e.c, d, kB, 4, &args[1]));
  PJRT_Buffer *const *al[1] = {args};
  PJRT_Buffer **ol[1] = {out};
  PJRT_Event *done[1] = {NULL};
  PJRT_ExecuteOptions o = {.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE};
  PJRT_LoadedExecutable_Execute_Args x = {
      .struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE, .executable = exe,
      .options = &o, .argument_lists = al, .num_devices = 1, .num_args = 2, .output_lists = ol,
      .device_complete_events = done, .execute_device = d};
  CTS_TRY(cts_err_opt(t, t->api->PJRT_LoadedExecutable_Execute(&x), "Execute with execute_device"));
  CTS_TRY(cts_await(t, done[0], "device_complete_event"));
  float want[4];
  cts_expected(&cts_prog_add_text, kA, kB, want);
  CTS_TRY(cts_expect_f32(t, out[0], want, 4, "portable execution"));
  PJRT_Buffer_Device_Args dv = {.struct_size = PJRT_Buffer_Device_Args_STRUCT_SIZE,
                                .buffer = out[0]};
  CTS_TRY(cts_err(t, t->api->PJRT_Buffer_Device(&dv), "PJRT_Buffer_Device"));
  if (dv.device != d) return cts_fail(t, "output is not on execute_device");
  for (int i = 0; i < 2; i++) cts_buffer_destroy(t, args[i]);
  cts_buffer_destroy(t, out[0]);
  cts_executable_destroy(t, exe);
  cts_client_destroy(t, e.c);
  return CTS_PASS;
}

CTS_CHECK(cts_execute_repeat) {
  env e;
  CTS_TRY(env_make(t, &e));
  PJRT_LoadedExecutable *exe;
  const cts_program *p;
  CTS_TRY(cts_compile_any(t, e.c, &exe, &p));
  PJRT_Buffer *args[2];
  CTS_TRY(cts_f32_buffer(t, e.c, e.devs[0], kA, 4, &args[0]));
  CTS_TRY(cts_f32_buffer(t, e.c, e.devs[0], kB, 4, &args[1]));
  float want[4];
  cts_expected(p, kA, kB, want);
  for (int i = 0; i < 25; i++) { /* the same inputs stay valid across executions */
    PJRT_Buffer *out[1] = {NULL};
    CTS_TRY(cts_execute1(t, exe, args, 2, out, NULL));
    CTS_TRY(cts_expect_f32(t, out[0], want, 4, "repeated execution"));
    cts_buffer_destroy(t, out[0]);
  }
  CTS_TRY(cts_expect_f32(t, args[0], kA, 4, "input after 25 executions"));
  for (int i = 0; i < 2; i++) cts_buffer_destroy(t, args[i]);
  cts_executable_destroy(t, exe);
  cts_client_destroy(t, e.c);
  return CTS_PASS;
}

/* Donation: argument 0 aliases output 0 (tf.aliasing_output). */
static cts_status donation(cts_ctx *t, bool forbid) {
  env e;
  CTS_TRY(env_make(t, &e));
  PJRT_LoadedExecutable *exe;
  CTS_TRY(cts_compile(t, e.c, &cts_prog_add_donating_text, NULL, 0, &exe));
  PJRT_Buffer *args[2], *out[1] = {NULL};
  CTS_TRY(cts_f32_buffer(t, e.c, e.devs[0], kA, 4, &args[0]));
  CTS_TRY(cts_f32_buffer(t, e.c, e.devs[0], kB, 4, &args[1]));
  const int64_t keep[1] = {0};
  PJRT_ExecuteOptions o = {.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE,
                           .non_donatable_input_indices = forbid ? keep : NULL,
                           .num_non_donatable_input_indices = forbid ? 1 : 0};
  CTS_TRY(cts_execute1(t, exe, args, 2, out, &o));
  float want[4];
  cts_expected(&cts_prog_add_text, kA, kB, want);
  CTS_TRY(cts_expect_f32(t, out[0], want, 4, "donating execution"));
  bool deleted;
  CTS_TRY(cts_buffer_is_deleted(t, args[0], &deleted));
  if (forbid) {
    if (deleted) return cts_fail(t, "input 0 was donated although listed as non-donatable");
    CTS_TRY(cts_expect_f32(t, args[0], kA, 4, "non-donated input"));
  }
  bool b_deleted;
  CTS_TRY(cts_buffer_is_deleted(t, args[1], &b_deleted));
  if (b_deleted) return cts_fail(t, "input 1 (not aliased) was deleted");
  for (int i = 0; i < 2; i++) cts_buffer_destroy(t, args[i]);
  cts_buffer_destroy(t, out[0]);
  cts_executable_destroy(t, exe);
  cts_client_destroy(t, e.c);
  if (!forbid && !deleted)
    return cts_unsupported(t, "donated input 0 is still alive: donation is not implemented");
  return CTS_PASS;
}

CTS_CHECK(cts_execute_donation) { return donation(t, false); }
CTS_CHECK(cts_execute_non_donatable) { return donation(t, true); }

CTS_CHECK(cts_executable_serialize) {
  CTS_WANT_FN(t, PJRT_Executable_Serialize);
  CTS_WANT_FN(t, PJRT_Executable_DeserializeAndLoad);
  env e;
  CTS_TRY(env_make(t, &e));
  PJRT_LoadedExecutable *le;
  const cts_program *p;
  CTS_TRY(cts_compile_any(t, e.c, &le, &p));
  PJRT_LoadedExecutable_GetExecutable_Args g = {
      .struct_size = PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE, .loaded_executable = le};
  CTS_TRY(cts_err(t, t->api->PJRT_LoadedExecutable_GetExecutable(&g), "GetExecutable"));
  PJRT_Executable_Serialize_Args s = {.struct_size = PJRT_Executable_Serialize_Args_STRUCT_SIZE,
                                      .executable = g.executable};
  CTS_TRY(cts_err_opt(t, t->api->PJRT_Executable_Serialize(&s), "PJRT_Executable_Serialize"));
  if (!s.serialized_bytes || s.serialized_bytes_size == 0)
    return cts_fail(t, "empty serialization");
  if (!s.serialized_executable_deleter) return cts_fail(t, "NULL serialized_executable_deleter");
  char *copy = malloc(s.serialized_bytes_size);
  if (!copy) return cts_fail(t, "out of memory");
  memcpy(copy, s.serialized_bytes, s.serialized_bytes_size);
  size_t size = s.serialized_bytes_size;
  s.serialized_executable_deleter(s.serialized_executable);
  PJRT_Executable_Destroy_Args xd = {.struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE,
                                     .executable = g.executable};
  cts_error_free(t, t->api->PJRT_Executable_Destroy(&xd));
  cts_executable_destroy(t, le);
  PJRT_Executable_DeserializeAndLoad_Args d = {
      .struct_size = PJRT_Executable_DeserializeAndLoad_Args_STRUCT_SIZE, .client = e.c,
      .serialized_executable = copy, .serialized_executable_size = size};
  CTS_TRY(cts_err_opt(t, t->api->PJRT_Executable_DeserializeAndLoad(&d), "DeserializeAndLoad"));
  if (!d.loaded_executable) return cts_fail(t, "NULL deserialized executable");
  CTS_TRY(run_and_check(t, &e, d.loaded_executable, p, e.devs[0], NULL));
  /* Damaged bytes must be refused, not crash. */
  copy[size / 2] ^= 0x5a;
  PJRT_Executable_DeserializeAndLoad_Args bad = d;
  bad.loaded_executable = NULL;
  bad.serialized_executable_size = size / 2;
  PJRT_Error *err = t->api->PJRT_Executable_DeserializeAndLoad(&bad);
  if (!err) return cts_fail(t, "a truncated serialized executable was accepted");
  cts_error_free(t, err);
  free(copy);
  cts_note(t, "%zu bytes", size);
  cts_executable_destroy(t, d.loaded_executable);
  cts_client_destroy(t, e.c);
  return CTS_PASS;
}

static cts_status compile_must_fail(cts_ctx *t, const char *code, size_t size, const char *format,
                                    const char *opts, size_t opts_size, const char *what) {
  env e;
  CTS_TRY(env_make(t, &e));
  char def[512];
  if (!opts) {
    int id;
    CTS_TRY(cts_device_id(t, e.devs[0], &id));
    opts_size = cts_compile_options(def, sizeof def, &id, 1, false);
    opts = def;
  }
  PJRT_Program prog = {.struct_size = PJRT_Program_STRUCT_SIZE, .code = (char *)code,
                       .code_size = size, .format = format, .format_size = strlen(format)};
  PJRT_Client_Compile_Args a = {.struct_size = PJRT_Client_Compile_Args_STRUCT_SIZE,
                                .client = e.c, .program = &prog, .compile_options = opts,
                                .compile_options_size = opts_size};
  CTS_TRY(cts_expect_error(t, t->api->PJRT_Client_Compile(&a), what));
  cts_client_destroy(t, e.c);
  return CTS_PASS;
}

CTS_CHECK(cts_compile_invalid_text) {
  static const char bad[] = "module { func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {";
  return compile_must_fail(t, bad, sizeof bad - 1, "mlir", NULL, 0, "truncated MLIR text");
}

CTS_CHECK(cts_compile_truncated_bytecode) {
  return compile_must_fail(t, cts_prog_fma_bytecode.code, cts_prog_fma_bytecode.code_size / 2,
                           "mlir", NULL, 0, "bytecode cut in half");
}

CTS_CHECK(cts_compile_invalid_format) {
  return compile_must_fail(t, cts_prog_add_text.code, cts_prog_add_text.code_size,
                           "anvil_cts_no_such_format", NULL, 0, "unknown program format");
}

CTS_CHECK(cts_compile_invalid_options) {
  static const char junk[] = "invalid compile options";
  return compile_must_fail(t, cts_prog_add_text.code, cts_prog_add_text.code_size, "mlir", junk,
                           sizeof junk - 1, "compile options that are not a protobuf");
}

/* Execute with each argument list of `cases`; every one must be refused (by Execute or by the
 * completion event). */
typedef struct {
  PJRT_Buffer *args[2];
  size_t n;
  const char *what;
} bad_args;

static cts_status execute_must_fail(cts_ctx *t, PJRT_LoadedExecutable *exe, const bad_args *cases,
                                    size_t ncases) {
  for (size_t i = 0; i < ncases; i++) {
    PJRT_Buffer *out[1] = {NULL};
    PJRT_Buffer *const *al[1] = {cases[i].args};
    PJRT_Buffer **ol[1] = {out};
    PJRT_Event *done[1] = {NULL};
    PJRT_ExecuteOptions o = {.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE};
    PJRT_LoadedExecutable_Execute_Args x = {
        .struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE, .executable = exe,
        .options = &o, .argument_lists = al, .num_devices = 1, .num_args = cases[i].n,
        .output_lists = ol, .device_complete_events = done};
    PJRT_Error *err = t->api->PJRT_LoadedExecutable_Execute(&x);
    if (!err) {
      /* An asynchronous plugin may report the problem through the completion event instead. */
      if (cts_await_code(t, done[0], NULL, 0) == PJRT_Error_Code_OK)
        return cts_fail(t, "Execute accepted %s", cases[i].what);
      cts_buffer_destroy(t, out[0]);
      continue;
    }
    CTS_TRY(cts_expect_error(t, err, cases[i].what));
  }
  return CTS_PASS;
}

CTS_CHECK(cts_execute_wrong_element_type) {
  env e;
  CTS_TRY(env_make(t, &e));
  PJRT_LoadedExecutable *exe;
  const cts_program *p;
  CTS_TRY(cts_compile_any(t, e.c, &exe, &p));
  PJRT_Buffer *good, *int_buf;
  CTS_TRY(cts_f32_buffer(t, e.c, e.devs[0], kA, 4, &good));
  const int32_t iv[4] = {1, 2, 3, 4};
  const int64_t d4[1] = {4};
  CTS_TRY(cts_buffer_from_host(t, e.c, e.devs[0], PJRT_Buffer_Type_S32, d4, 1, iv, &int_buf));
  const bad_args cases[] = {{{good, int_buf}, 2, "an s32[4] argument for an f32[4] parameter"}};
  CTS_TRY(execute_must_fail(t, exe, cases, 1));
  cts_buffer_destroy(t, good);
  cts_buffer_destroy(t, int_buf);
  cts_executable_destroy(t, exe);
  cts_client_destroy(t, e.c);
  return CTS_PASS;
}

CTS_CHECK(cts_execute_bad_arguments) {
  env e;
  CTS_TRY(env_make(t, &e));
  PJRT_LoadedExecutable *exe;
  const cts_program *p;
  CTS_TRY(cts_compile_any(t, e.c, &exe, &p));
  PJRT_Buffer *good, *short_buf;
  CTS_TRY(cts_f32_buffer(t, e.c, e.devs[0], kA, 4, &good));
  CTS_TRY(cts_f32_buffer(t, e.c, e.devs[0], kA, 3, &short_buf));
  const bad_args cases[] = {
      {{good, NULL}, 1, "one argument for a two-argument program"},
      {{good, short_buf}, 2, "an f32[3] argument for an f32[4] parameter"},
  };
  CTS_TRY(execute_must_fail(t, exe, cases, sizeof cases / sizeof cases[0]));
  cts_buffer_destroy(t, good);
  cts_buffer_destroy(t, short_buf);
  cts_executable_destroy(t, exe);
  cts_client_destroy(t, e.c);
  return CTS_PASS;
}

CTS_CHECK(cts_execute_deleted_argument) {
  env e;
  CTS_TRY(env_make(t, &e));
  PJRT_LoadedExecutable *exe;
  const cts_program *p;
  CTS_TRY(cts_compile_any(t, e.c, &exe, &p));
  PJRT_Buffer *args[2], *out[1] = {NULL};
  CTS_TRY(cts_f32_buffer(t, e.c, e.devs[0], kA, 4, &args[0]));
  CTS_TRY(cts_f32_buffer(t, e.c, e.devs[0], kB, 4, &args[1]));
  PJRT_Buffer_Delete_Args del = {.struct_size = PJRT_Buffer_Delete_Args_STRUCT_SIZE,
                                 .buffer = args[1]};
  CTS_TRY(cts_err(t, t->api->PJRT_Buffer_Delete(&del), "PJRT_Buffer_Delete"));
  PJRT_Buffer *const *al[1] = {args};
  PJRT_Buffer **ol[1] = {out};
  PJRT_Event *done[1] = {NULL};
  PJRT_ExecuteOptions o = {.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE};
  PJRT_LoadedExecutable_Execute_Args x = {
      .struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE, .executable = exe,
      .options = &o, .argument_lists = al, .num_devices = 1, .num_args = 2, .output_lists = ol,
      .device_complete_events = done};
  PJRT_Error *err = t->api->PJRT_LoadedExecutable_Execute(&x);
  if (!err) {
    if (cts_await_code(t, done[0], NULL, 0) == PJRT_Error_Code_OK)
      return cts_fail(t, "Execute with a deleted argument succeeded");
    cts_buffer_destroy(t, out[0]);
  } else {
    CTS_TRY(cts_expect_error(t, err, "deleted argument"));
  }
  for (int i = 0; i < 2; i++) cts_buffer_destroy(t, args[i]);
  cts_executable_destroy(t, exe);
  cts_client_destroy(t, e.c);
  return CTS_PASS;
}

CTS_CHECK(cts_loaded_executable_delete) {
  env e;
  CTS_TRY(env_make(t, &e));
  PJRT_LoadedExecutable *exe;
  const cts_program *p;
  CTS_TRY(cts_compile_any(t, e.c, &exe, &p));
  CTS_NEED_FN(t, PJRT_LoadedExecutable_IsDeleted);
  CTS_NEED_FN(t, PJRT_LoadedExecutable_Delete);
  PJRT_LoadedExecutable_IsDeleted_Args d = {
      .struct_size = PJRT_LoadedExecutable_IsDeleted_Args_STRUCT_SIZE, .executable = exe};
  CTS_TRY(cts_err(t, t->api->PJRT_LoadedExecutable_IsDeleted(&d), "IsDeleted"));
  if (d.is_deleted) return cts_fail(t, "a new executable reports IsDeleted");
  PJRT_LoadedExecutable_Delete_Args del = {
      .struct_size = PJRT_LoadedExecutable_Delete_Args_STRUCT_SIZE, .executable = exe};
  CTS_TRY(cts_err(t, t->api->PJRT_LoadedExecutable_Delete(&del), "PJRT_LoadedExecutable_Delete"));
  CTS_TRY(cts_err(t, t->api->PJRT_LoadedExecutable_IsDeleted(&d), "IsDeleted"));
  if (!d.is_deleted) return cts_fail(t, "IsDeleted false after Delete");
  PJRT_Buffer *args[2], *out[1] = {NULL};
  CTS_TRY(cts_f32_buffer(t, e.c, e.devs[0], kA, 4, &args[0]));
  CTS_TRY(cts_f32_buffer(t, e.c, e.devs[0], kB, 4, &args[1]));
  PJRT_Buffer *const *al[1] = {args};
  PJRT_Buffer **ol[1] = {out};
  PJRT_Event *done[1] = {NULL};
  PJRT_ExecuteOptions o = {.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE};
  PJRT_LoadedExecutable_Execute_Args x = {
      .struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE, .executable = exe,
      .options = &o, .argument_lists = al, .num_devices = 1, .num_args = 2, .output_lists = ol,
      .device_complete_events = done};
  /* Executing a deleted executable is a caller error: it must not crash (an error is the
   * helpful answer, but some plugins keep running it). */
  PJRT_Error *err = t->api->PJRT_LoadedExecutable_Execute(&x);
  if (!err && cts_await_code(t, done[0], NULL, 0) == PJRT_Error_Code_OK)
    cts_note(t, "a deleted executable still executes");
  if (!err) cts_buffer_destroy(t, out[0]);
  cts_error_free(t, err);
  for (int i = 0; i < 2; i++) cts_buffer_destroy(t, args[i]);
  cts_executable_destroy(t, exe);
  cts_client_destroy(t, e.c);
  return CTS_PASS;
}

CTS_CHECK(cts_executable_optimized_program) {
  CTS_WANT_FN(t, PJRT_Executable_OptimizedProgram);
  env e;
  CTS_TRY(env_make(t, &e));
  PJRT_LoadedExecutable *le;
  const cts_program *p;
  CTS_TRY(cts_compile_any(t, e.c, &le, &p));
  PJRT_LoadedExecutable_GetExecutable_Args g = {
      .struct_size = PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE, .loaded_executable = le};
  CTS_TRY(cts_err(t, t->api->PJRT_LoadedExecutable_GetExecutable(&g), "GetExecutable"));
  /* Two-call protocol: first with code == NULL for the sizes, then with buffers. */
  char format[64];
  PJRT_Program prog = {.struct_size = PJRT_Program_STRUCT_SIZE};
  PJRT_Executable_OptimizedProgram_Args a = {
      .struct_size = PJRT_Executable_OptimizedProgram_Args_STRUCT_SIZE, .executable = g.executable,
      .program = &prog};
  CTS_TRY(cts_err_opt(t, t->api->PJRT_Executable_OptimizedProgram(&a), "OptimizedProgram (size)"));
  if (prog.code_size == 0) return cts_fail(t, "optimized program of size 0");
  char *code = malloc(prog.code_size);
  if (!code) return cts_fail(t, "out of memory");
  prog.code = code;
  CTS_TRY(cts_err(t, t->api->PJRT_Executable_OptimizedProgram(&a), "OptimizedProgram (bytes)"));
  snprintf(format, sizeof format, "%.*s", (int)prog.format_size, prog.format ? prog.format : "");
  cts_note(t, "%zu bytes, format '%s'", prog.code_size, format);
  free(code);
  PJRT_Executable_Destroy_Args xd = {.struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE,
                                     .executable = g.executable};
  cts_error_free(t, t->api->PJRT_Executable_Destroy(&xd));
  cts_executable_destroy(t, le);
  cts_client_destroy(t, e.c);
  return CTS_PASS;
}
