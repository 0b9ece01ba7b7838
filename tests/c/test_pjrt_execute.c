/* Compile + execute through the C API: executable queries, device assignment bytes,
 * asynchronous execution with chained outputs, 4-device replicated execution, misuse.
 * Tests that need the compiler skip while av_program_compile cannot build the program. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>

#include "test_pjrt_util.h"
#include "anvil/pjrt_profiler.h"
#include "util/checksum.h"

static const char add_program[] =
    "module @add_test {\n"
    "  func.func public @main(%arg0: tensor<2x3xf32>, %arg1: tensor<2x3xf32>) -> "
    "tensor<2x3xf32> {\n"
    "    %0 = stablehlo.add %arg0, %arg1 : tensor<2x3xf32>\n"
    "    return %0 : tensor<2x3xf32>\n"
    "  }\n"
    "}\n";

static const char add_donating_program[] =
    "module @add_donating {\n"
    "  func.func public @main(%arg0: tensor<2x3xf32> {tf.aliasing_output = 0 : i32}, "
    "%arg1: tensor<2x3xf32>) -> tensor<2x3xf32> {\n"
    "    %0 = stablehlo.add %arg0, %arg1 : tensor<2x3xf32>\n"
    "    return %0 : tensor<2x3xf32>\n"
    "  }\n"
    "}\n";

static PJRT_Error *compile(PJRT_Client *c, const char *format, const char *code,
                           const char *opts, size_t opts_size, PJRT_LoadedExecutable **out) {
  PJRT_Program p = {.struct_size = PJRT_Program_STRUCT_SIZE,
                    .code = (char *)code,
                    .code_size = strlen(code),
                    .format = format,
                    .format_size = strlen(format)};
  PJRT_Client_Compile_Args a = {.struct_size = PJRT_Client_Compile_Args_STRUCT_SIZE,
                                .client = c,
                                .program = &p,
                                .compile_options = opts,
                                .compile_options_size = opts_size};
  a.executable = (PJRT_LoadedExecutable *)&p; /* must be overwritten */
  PJRT_Error *e = api->PJRT_Client_Compile(&a);
  *out = a.executable;
  return e;
}

static void destroy_exe(PJRT_LoadedExecutable *e) {
  PJRT_LoadedExecutable_Destroy_Args a = {.struct_size = PJRT_LoadedExecutable_Destroy_Args_STRUCT_SIZE,
                                          .executable = e};
  CHECK_OK(api->PJRT_LoadedExecutable_Destroy(&a));
}

/* Compiles or skips the test when the compiler cannot build it yet. */
static PJRT_LoadedExecutable *compile_prog_or_skip(PJRT_Client *c, const char *program,
                                                   const char *opts, size_t n) {
  PJRT_LoadedExecutable *exe;
  PJRT_Error *e = compile(c, "mlir", program, opts, n, &exe);
  if (e) {
    size_t len;
    const char *m = err_msg(e, &len);
    fprintf(stderr, "skipping: compile failed: %.*s\n", (int)len, m);
    err_free(e);
    destroy_client(c);
    skip();
  }
  assert_non_null(exe);
  return exe;
}

static PJRT_LoadedExecutable *compile_or_skip(PJRT_Client *c, const char *opts, size_t n) {
  return compile_prog_or_skip(c, add_program, opts, n);
}

static void test_compile_bad_format(void **state) {
  (void)state;
  PJRT_Client *c = make_client(1);
  PJRT_LoadedExecutable *exe;
  EXPECT_ERROR(compile(c, "invalid", "x", NULL, 0, &exe), PJRT_Error_Code_INVALID_ARGUMENT,
               "Unknown program format 'invalid'.");
  assert_null(exe);
  destroy_exe(exe); /* the framework destroys the unset field: NULL is a no-op */
  PJRT_Client_Compile_Args a = {.struct_size = PJRT_Client_Compile_Args_STRUCT_SIZE, .client = c};
  EXPECT_ERROR(api->PJRT_Client_Compile(&a), PJRT_Error_Code_INVALID_ARGUMENT, "program is NULL");
  destroy_client(c);
}

static PJRT_Buffer *upload(PJRT_Client *c, PJRT_Device *d, const float *v) {
  static const int64_t dims[2] = {2, 3};
  PJRT_Client_BufferFromHostBuffer_Args a = {
      .struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE,
      .client = c,
      .data = v,
      .type = PJRT_Buffer_Type_F32,
      .dims = dims,
      .num_dims = 2,
      .device = d};
  CHECK_OK(api->PJRT_Client_BufferFromHostBuffer(&a));
  event_destroy(a.done_with_host_buffer);
  return a.buffer;
}

static void download(PJRT_Buffer *b, float *out) {
  PJRT_Buffer_ToHostBuffer_Args a = {.struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE,
                                     .src = b,
                                     .dst = out,
                                     .dst_size = 6 * sizeof(float)};
  CHECK_OK(api->PJRT_Buffer_ToHostBuffer(&a));
  event_await(a.event);
  event_destroy(a.event);
}

static PJRT_Error *execute_opts(PJRT_LoadedExecutable *exe, size_t nd,
                                PJRT_Buffer *const *const *args, size_t na,
                                PJRT_Buffer **const *outs, PJRT_Event **events,
                                const int64_t *keep, size_t num_keep) {
  PJRT_ExecuteOptions opts = {.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE,
                              .non_donatable_input_indices = keep,
                              .num_non_donatable_input_indices = num_keep};
  PJRT_LoadedExecutable_Execute_Args a = {.struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE,
                                          .executable = exe,
                                          .options = &opts,
                                          .argument_lists = args,
                                          .num_devices = nd,
                                          .num_args = na,
                                          .output_lists = outs,
                                          .device_complete_events = events};
  return api->PJRT_LoadedExecutable_Execute(&a);
}

static PJRT_Error *execute(PJRT_LoadedExecutable *exe, size_t nd, PJRT_Buffer *const *const *args,
                           size_t na, PJRT_Buffer **const *outs, PJRT_Event **events) {
  return execute_opts(exe, nd, args, na, outs, events, NULL, 0);
}

static bool is_deleted(PJRT_Buffer *b) {
  PJRT_Buffer_IsDeleted_Args a = {.struct_size = PJRT_Buffer_IsDeleted_Args_STRUCT_SIZE, .buffer = b};
  CHECK_OK(api->PJRT_Buffer_IsDeleted(&a));
  return a.is_deleted;
}

/* Input 0 aliases output 0. Donated: the input becomes deleted (when the plugin donates);
 * listed as non-donatable: it must stay intact. Input 1 is never touched. */
static void test_donation(void **state) {
  (void)state;
  PJRT_Client *c = make_client(1);
  PJRT_LoadedExecutable *exe = compile_prog_or_skip(c, add_donating_program, NULL, 0);
  PJRT_Device *d0 = client_device(c, 0);
  float x[6] = {1, 2, 3, 4, 5, 6}, y[6] = {10, 10, 10, 10, 10, 10};
  for (int forbid = 0; forbid < 2; forbid++) {
    PJRT_Buffer *in[2] = {upload(c, d0, x), upload(c, d0, y)};
    PJRT_Buffer *const *arg_lists[1] = {in};
    PJRT_Buffer *out[1];
    PJRT_Buffer **out_lists[1] = {out};
    PJRT_Event *done[1];
    static const int64_t keep[1] = {0};
    CHECK_OK(execute_opts(exe, 1, arg_lists, 2, out_lists, done, forbid ? keep : NULL, forbid ? 1 : 0));
    event_await(done[0]);
    event_destroy(done[0]);
    float r[6];
    download(out[0], r);
    for (int i = 0; i < 6; i++) assert_true(r[i] == x[i] + y[i]);
    assert_false(is_deleted(in[1]));
    if (forbid) {
      assert_false(is_deleted(in[0]));
      download(in[0], r);
      assert_memory_equal(r, x, sizeof x);
    } else if (is_deleted(in[0])) {
      float tmp[6];
      PJRT_Buffer_ToHostBuffer_Args t = {.struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE,
                                         .src = in[0],
                                         .dst = tmp,
                                         .dst_size = sizeof tmp};
      EXPECT_ERROR(api->PJRT_Buffer_ToHostBuffer(&t), PJRT_Error_Code_FAILED_PRECONDITION, "deleted");
    }
    /* A donated buffer passed twice is refused, as XLA does (the other use would read what
     * the execution took); it stays valid. Allowed when its donation is forbidden. */
    PJRT_Buffer *twice[2] = {in[1], in[1]};
    PJRT_Buffer *const *twice_lists[1] = {twice};
    PJRT_Buffer *out2[1];
    PJRT_Buffer **out_lists2[1] = {out2};
    EXPECT_ERROR(execute_opts(exe, 1, twice_lists, 2, out_lists2, done, NULL, 0),
                 PJRT_Error_Code_INVALID_ARGUMENT, "donated");
    assert_false(is_deleted(in[1]));
    CHECK_OK(execute_opts(exe, 1, twice_lists, 2, out_lists2, done, keep, 1));
    event_await(done[0]);
    event_destroy(done[0]);
    download(out2[0], r);
    for (int i = 0; i < 6; i++) assert_true(r[i] == 2 * y[i]);
    assert_false(is_deleted(in[1]));
    buffer_destroy(out2[0]);
    buffer_destroy(out[0]);
    buffer_destroy(in[0]);
    buffer_destroy(in[1]);
  }
  destroy_exe(exe);
  destroy_client(c);
}

static void test_single_device_execute(void **state) {
  (void)state;
  PJRT_Client *c = make_client(1);
  PJRT_LoadedExecutable *exe = compile_or_skip(c, NULL, 0);
  PJRT_Device *d0 = client_device(c, 0);

  PJRT_LoadedExecutable_GetExecutable_Args ge = {
      .struct_size = PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE, .loaded_executable = exe};
  CHECK_OK(api->PJRT_LoadedExecutable_GetExecutable(&ge));
  PJRT_Executable_NumOutputs_Args no = {.struct_size = PJRT_Executable_NumOutputs_Args_STRUCT_SIZE,
                                        .executable = ge.executable};
  CHECK_OK(api->PJRT_Executable_NumOutputs(&no));
  assert_int_equal(no.num_outputs, 1);
  PJRT_Executable_OutputElementTypes_Args ot = {
      .struct_size = PJRT_Executable_OutputElementTypes_Args_STRUCT_SIZE, .executable = ge.executable};
  CHECK_OK(api->PJRT_Executable_OutputElementTypes(&ot));
  assert_int_equal(ot.num_output_types, 1);
  assert_int_equal(ot.output_types[0], PJRT_Buffer_Type_F32);
  PJRT_Executable_OutputDimensions_Args od = {
      .struct_size = PJRT_Executable_OutputDimensions_Args_STRUCT_SIZE, .executable = ge.executable};
  CHECK_OK(api->PJRT_Executable_OutputDimensions(&od));
  assert_int_equal(od.dim_sizes[0], 2);
  assert_int_equal(od.dims[0], 2);
  assert_int_equal(od.dims[1], 3);
  PJRT_Executable_NumReplicas_Args nr = {.struct_size = PJRT_Executable_NumReplicas_Args_STRUCT_SIZE,
                                         .executable = ge.executable};
  CHECK_OK(api->PJRT_Executable_NumReplicas(&nr));
  assert_int_equal(nr.num_replicas, 1);
  PJRT_Executable_Fingerprint_Args fp = {.struct_size = PJRT_Executable_Fingerprint_Args_STRUCT_SIZE,
                                         .executable = ge.executable};
  CHECK_OK(api->PJRT_Executable_Fingerprint(&fp));
  assert_int_equal(fp.executable_fingerprint_size, 16);
  /* Two f32[2,3] arguments (48 bytes), one f32[2,3] output (24 bytes), as a 0.75 caller. */
  PJRT_Executable_GetCompiledMemoryStats_Args ms = {
      .struct_size = PJRT_Executable_GetCompiledMemoryStats_Args_SIZE_0_75, .executable = ge.executable};
  CHECK_OK(api->PJRT_Executable_GetCompiledMemoryStats(&ms));
  assert_int_equal(ms.argument_size_in_bytes, 48);
  assert_int_equal(ms.output_size_in_bytes, 24);
  assert_int_equal(ms.alias_size_in_bytes, 0);
  PJRT_Executable_ParameterMemoryKinds_Args pk = {
      .struct_size = PJRT_Executable_ParameterMemoryKinds_Args_STRUCT_SIZE, .executable = ge.executable};
  CHECK_OK(api->PJRT_Executable_ParameterMemoryKinds(&pk));
  assert_int_equal(pk.num_parameters, 2);
  assert_int_equal(pk.memory_kind_sizes[1], 6);
  assert_memory_equal(pk.memory_kinds[1], "device", 6);
  PJRT_Executable_Destroy_Args ed = {.struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE,
                                     .executable = ge.executable};
  CHECK_OK(api->PJRT_Executable_Destroy(&ed));

  /* DeviceAssignmentProto{replica_count 1, computation_count 1, computation_devices {ids [0]}} */
  PJRT_LoadedExecutable_GetDeviceAssignment_Args da = {
      .struct_size = PJRT_LoadedExecutable_GetDeviceAssignment_Args_STRUCT_SIZE, .executable = exe};
  CHECK_OK(api->PJRT_LoadedExecutable_GetDeviceAssignment(&da));
  static const unsigned char want[] = {0x08, 0x01, 0x10, 0x01, 0x1a, 0x02, 0x08, 0x00};
  assert_int_equal(da.serialized_bytes_size, sizeof want);
  assert_memory_equal(da.serialized_bytes, want, sizeof want);
  assert_non_null(da.serialized_device_assignment_deleter);
  da.serialized_device_assignment_deleter(da.serialized_device_assignment);
  PJRT_LoadedExecutable_AddressableDevices_Args ad = {
      .struct_size = PJRT_LoadedExecutable_AddressableDevices_Args_STRUCT_SIZE, .executable = exe};
  CHECK_OK(api->PJRT_LoadedExecutable_AddressableDevices(&ad));
  assert_int_equal(ad.num_addressable_devices, 1);
  assert_ptr_equal(ad.addressable_devices[0], d0);

  float x[6] = {1, 2, 3, 4, 5, 6}, y[6] = {10, 20, 30, 40, 50, 60};
  PJRT_Buffer *bx = upload(c, d0, x), *by = upload(c, d0, y);
  PJRT_Buffer *args0[2] = {bx, by};
  PJRT_Buffer *const *arg_lists[1] = {args0};
  PJRT_Buffer *out0[1] = {NULL};
  PJRT_Buffer **out_lists[1] = {out0};
  PJRT_Event *done[1] = {NULL};
  CHECK_OK(execute(exe, 1, arg_lists, 2, out_lists, done));
  assert_non_null(out0[0]);
  assert_non_null(done[0]);
  /* Chain: (x + y) + y, launched before the first result is awaited. */
  PJRT_Buffer *args1[2] = {out0[0], by};
  PJRT_Buffer *const *arg_lists1[1] = {args1};
  PJRT_Buffer *out1[1] = {NULL};
  PJRT_Buffer **out_lists1[1] = {out1};
  PJRT_Event *done1[1] = {NULL};
  CHECK_OK(execute(exe, 1, arg_lists1, 2, out_lists1, done1));
  event_await(done[0]);
  event_await(done1[0]);
  event_destroy(done[0]);
  event_destroy(done1[0]);
  float r0[6], r1[6];
  download(out0[0], r0);
  download(out1[0], r1);
  for (int i = 0; i < 6; i++) {
    assert_true(r0[i] == x[i] + y[i]);
    assert_true(r1[i] == x[i] + 2 * y[i]);
  }
  /* Misuse: wrong argument count, wrong argument type, deleted argument. */
  EXPECT_ERROR(execute(exe, 1, arg_lists, 1, out_lists, done), PJRT_Error_Code_INVALID_ARGUMENT,
               "takes 2 arguments, got 1");
  {
    static const int32_t iv[6] = {0};
    static const int64_t idims[2] = {2, 3};
    PJRT_Client_BufferFromHostBuffer_Args ba = {
        .struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE,
        .client = c,
        .data = iv,
        .type = PJRT_Buffer_Type_S32,
        .dims = idims,
        .num_dims = 2,
        .device = d0};
    CHECK_OK(api->PJRT_Client_BufferFromHostBuffer(&ba));
    event_destroy(ba.done_with_host_buffer);
    PJRT_Buffer *bad_args[2] = {bx, ba.buffer};
    PJRT_Buffer *const *bad_lists[1] = {bad_args};
    EXPECT_ERROR(execute(exe, 1, bad_lists, 2, out_lists, done), PJRT_Error_Code_INVALID_ARGUMENT,
                 "argument 1 of device 0");
    buffer_destroy(ba.buffer);
  }
  PJRT_Buffer_Delete_Args del = {.struct_size = PJRT_Buffer_Delete_Args_STRUCT_SIZE, .buffer = bx};
  CHECK_OK(api->PJRT_Buffer_Delete(&del));
  EXPECT_ERROR(execute(exe, 1, arg_lists, 2, out_lists, done), PJRT_Error_Code_INVALID_ARGUMENT,
               "argument 0 of device 0 has been deleted");
  buffer_destroy(bx);
  buffer_destroy(by);
  buffer_destroy(out0[0]);
  buffer_destroy(out1[0]);
  PJRT_LoadedExecutable_Delete_Args ld = {.struct_size = PJRT_LoadedExecutable_Delete_Args_STRUCT_SIZE,
                                          .executable = exe};
  CHECK_OK(api->PJRT_LoadedExecutable_Delete(&ld));
  PJRT_LoadedExecutable_IsDeleted_Args li = {
      .struct_size = PJRT_LoadedExecutable_IsDeleted_Args_STRUCT_SIZE, .executable = exe};
  CHECK_OK(api->PJRT_LoadedExecutable_IsDeleted(&li));
  assert_true(li.is_deleted);
  EXPECT_ERROR(execute(exe, 1, arg_lists, 2, out_lists, done), PJRT_Error_Code_FAILED_PRECONDITION,
               "deleted");
  destroy_exe(exe);
  destroy_client(c);
}

static void test_serialize_round_trip(void **state) {
  (void)state;
  PJRT_Client *c = make_client(1);
  /* Corrupt inputs are refused without compiling anything. */
  PJRT_Executable_DeserializeAndLoad_Args bad = {
      .struct_size = PJRT_Executable_DeserializeAndLoad_Args_STRUCT_SIZE,
      .client = c,
      .serialized_executable = "not an executable",
      .serialized_executable_size = 17};
  EXPECT_ERROR(api->PJRT_Executable_DeserializeAndLoad(&bad), PJRT_Error_Code_INVALID_ARGUMENT,
               "bad magic");
  /* Lengths behind a valid checksum are still checked: a format field longer than what is
   * left, and a length of 2^64-1. */
  static const char truncated[] = {'A', 'N', 'V', 'I', 'L', 'E', 'X', '2', 5, 0, 0, 0, 0, 0, 0, 0,
                                   '0', '.', '1', '.', '0', 4, 0, 0, 0, 0, 0, 0, 0, 'm'};
  static const char huge_len[] = {'A', 'N', 'V', 'I', 'L', 'E', 'X', '2', 5, 0, 0, 0, 0, 0, 0, 0,
                                  '0', '.', '1', '.', '0', -1, -1, -1, -1, -1, -1, -1, -1};
  const char *cases[2] = {truncated, huge_len};
  size_t sizes[2] = {sizeof truncated, sizeof huge_len};
  for (int i = 0; i < 2; i++) {
    char sealed[64];
    memcpy(sealed, cases[i], sizes[i]);
    uint64_t sum = av_checksum64(sealed, sizes[i]);
    for (int b = 0; b < 8; b++) sealed[sizes[i] + (size_t)b] = (char)(sum >> (8 * b));
    bad.serialized_executable = sealed;
    bad.serialized_executable_size = sizes[i] + 8;
    EXPECT_ERROR(api->PJRT_Executable_DeserializeAndLoad(&bad), PJRT_Error_Code_INVALID_ARGUMENT,
                 "truncated");
  }

  PJRT_LoadedExecutable *exe = compile_or_skip(c, NULL, 0);
  PJRT_LoadedExecutable_GetExecutable_Args ge = {
      .struct_size = PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE, .loaded_executable = exe};
  CHECK_OK(api->PJRT_LoadedExecutable_GetExecutable(&ge));
  PJRT_Executable_Serialize_Args ser = {.struct_size = PJRT_Executable_Serialize_Args_STRUCT_SIZE,
                                        .executable = ge.executable};
  CHECK_OK(api->PJRT_Executable_Serialize(&ser));
  assert_non_null(ser.serialized_executable_deleter);
  PJRT_Executable_DeserializeAndLoad_Args de = {
      .struct_size = PJRT_Executable_DeserializeAndLoad_Args_STRUCT_SIZE,
      .client = c,
      .serialized_executable = ser.serialized_bytes,
      .serialized_executable_size = ser.serialized_bytes_size};
  CHECK_OK(api->PJRT_Executable_DeserializeAndLoad(&de));
  ser.serialized_executable_deleter(ser.serialized_executable);
  PJRT_Executable_Destroy_Args ed = {.struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE,
                                     .executable = ge.executable};
  CHECK_OK(api->PJRT_Executable_Destroy(&ed));
  destroy_exe(exe);
  /* The reloaded executable runs. */
  PJRT_Device *d0 = client_device(c, 0);
  float x[6] = {1, 2, 3, 4, 5, 6}, y[6] = {6, 5, 4, 3, 2, 1};
  PJRT_Buffer *in[2] = {upload(c, d0, x), upload(c, d0, y)};
  PJRT_Buffer *const *arg_lists[1] = {in};
  PJRT_Buffer *out[1];
  PJRT_Buffer **out_lists[1] = {out};
  PJRT_Event *done[1];
  CHECK_OK(execute(de.loaded_executable, 1, arg_lists, 2, out_lists, done));
  event_await(done[0]);
  event_destroy(done[0]);
  float r[6];
  download(out[0], r);
  for (int i = 0; i < 6; i++) assert_true(r[i] == 7.0f);
  buffer_destroy(out[0]);
  buffer_destroy(in[0]);
  buffer_destroy(in[1]);
  destroy_exe(de.loaded_executable);
  destroy_client(c);
}

/* A one-device program run on another device (portable execution), and the optimized
 * program's two-call protocol. */
static void test_portable_execute_and_text(void **state) {
  (void)state;
  PJRT_Client *c = make_client(2);
  PJRT_LoadedExecutable *exe = compile_or_skip(c, NULL, 0);
  PJRT_Device *d1 = client_device(c, 1);
  float x[6] = {1, 2, 3, 4, 5, 6}, y[6] = {1, 1, 1, 1, 1, 1};
  PJRT_Buffer *in[2] = {upload(c, d1, x), upload(c, d1, y)};
  PJRT_Buffer *const *arg_lists[1] = {in};
  PJRT_Buffer *out[1];
  PJRT_Buffer **out_lists[1] = {out};
  PJRT_Event *done[1];
  PJRT_ExecuteOptions opts = {.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE};
  PJRT_LoadedExecutable_Execute_Args a = {.struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE,
                                          .executable = exe,
                                          .options = &opts,
                                          .argument_lists = arg_lists,
                                          .num_devices = 1,
                                          .num_args = 2,
                                          .output_lists = out_lists,
                                          .device_complete_events = done,
                                          .execute_device = d1};
  CHECK_OK(api->PJRT_LoadedExecutable_Execute(&a));
  event_await(done[0]);
  event_destroy(done[0]);
  PJRT_Buffer_Device_Args bd = {.struct_size = PJRT_Buffer_Device_Args_STRUCT_SIZE, .buffer = out[0]};
  CHECK_OK(api->PJRT_Buffer_Device(&bd));
  assert_ptr_equal(bd.device, d1);
  float r[6];
  download(out[0], r);
  for (int i = 0; i < 6; i++) assert_true(r[i] == x[i] + 1);
  buffer_destroy(out[0]);
  a.num_devices = 2;
  EXPECT_ERROR(api->PJRT_LoadedExecutable_Execute(&a), PJRT_Error_Code_INVALID_ARGUMENT,
               "execute_device is set but num_devices is 2");
  buffer_destroy(in[0]);
  buffer_destroy(in[1]);

  PJRT_LoadedExecutable_GetExecutable_Args ge = {
      .struct_size = PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE, .loaded_executable = exe};
  CHECK_OK(api->PJRT_LoadedExecutable_GetExecutable(&ge));
  PJRT_Program prog = {.struct_size = PJRT_Program_STRUCT_SIZE};
  PJRT_Executable_OptimizedProgram_Args op = {
      .struct_size = PJRT_Executable_OptimizedProgram_Args_STRUCT_SIZE,
      .executable = ge.executable,
      .program = &prog};
  PJRT_Error *e = api->PJRT_Executable_OptimizedProgram(&op);
  if (!e) {
    assert_int_equal(prog.format_size, 4);
    assert_memory_equal(prog.format, "mlir", 4);
    size_t n = prog.code_size;
    assert_true(n > 0);
    char *buf = malloc(n);
    prog.code = buf;
    prog.code_size = n - 1;
    EXPECT_ERROR(api->PJRT_Executable_OptimizedProgram(&op), PJRT_Error_Code_INVALID_ARGUMENT,
                 "smaller than the program");
    prog.code_size = n;
    CHECK_OK(api->PJRT_Executable_OptimizedProgram(&op));
    assert_int_equal(prog.code_size, n);
    free(buf);
  } else {
    EXPECT_ERROR(e, PJRT_Error_Code_UNIMPLEMENTED, "program text");
  }
  PJRT_Executable_Destroy_Args ed = {.struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE,
                                     .executable = ge.executable};
  CHECK_OK(api->PJRT_Executable_Destroy(&ed));
  destroy_exe(exe);
  destroy_client(c);
}

/* A quantized program through the PJRT API: compiled (quantized types legalized), run on a
 * device buffer, its f32 result read back; values worked out by hand (scale 0.5, i8:
 * x / 0.5 rounded half to even and clamped to [-128, 127], times 0.5). */
static void test_quantized_program(void **state) {
  (void)state;
  static const char program[] =
      "func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {\n"
      "  %q = stablehlo.uniform_quantize %x : (tensor<2x3xf32>) -> "
      "tensor<2x3x!quant.uniform<i8:f32, 0.5>>\n"
      "  %r = stablehlo.uniform_dequantize %q : (tensor<2x3x!quant.uniform<i8:f32, 0.5>>) -> "
      "tensor<2x3xf32>\n"
      "  return %r : tensor<2x3xf32>\n}\n";
  PJRT_Client *c = make_client(1);
  PJRT_LoadedExecutable *exe;
  CHECK_OK(compile(c, "mlir", program, NULL, 0, &exe));
  float x[6] = {0.3f, 1.26f, -0.74f, 100.0f, -100.0f, 2.25f};
  PJRT_Buffer *in[1] = {upload(c, client_device(c, 0), x)};
  PJRT_Buffer *const *arg_lists[1] = {in};
  PJRT_Buffer *out[1];
  PJRT_Buffer **out_lists[1] = {out};
  PJRT_Event *done[1];
  CHECK_OK(execute(exe, 1, arg_lists, 1, out_lists, done));
  event_await(done[0]);
  event_destroy(done[0]);
  float r[6], expect[6] = {0.5f, 1.5f, -0.5f, 63.5f, -64.0f, 2.0f};
  download(out[0], r);
  assert_memory_equal(r, expect, sizeof r);
  buffer_destroy(out[0]);
  buffer_destroy(in[0]);
  destroy_exe(exe);
  destroy_client(c);
}

/* An argument that failed (an error buffer) fails the execution: outputs, completion event
 * and a chained execution all carry its error; nothing hangs. */
static void test_error_propagates(void **state) {
  (void)state;
  PJRT_Client *c = make_client(1);
  PJRT_LoadedExecutable *exe = compile_or_skip(c, NULL, 0);
  PJRT_Device *d0 = client_device(c, 0);
  PJRT_Device_DefaultMemory_Args dm = {.struct_size = PJRT_Device_DefaultMemory_Args_STRUCT_SIZE,
                                       .device = d0};
  CHECK_OK(api->PJRT_Device_DefaultMemory(&dm));
  static const int64_t dims[2] = {2, 3};
  PJRT_Client_CreateErrorBuffer_Args eb = {.struct_size = PJRT_Client_CreateErrorBuffer_Args_STRUCT_SIZE,
                                           .client = c,
                                           .error_code = PJRT_Error_Code_ABORTED,
                                           .error_message = "upstream failed",
                                           .error_message_size = 15,
                                           .shape_dims = dims,
                                           .shape_num_dims = 2,
                                           .shape_element_type = PJRT_Buffer_Type_F32,
                                           .memory = dm.memory};
  CHECK_OK(api->PJRT_Client_CreateErrorBuffer(&eb));
  float y[6] = {0};
  PJRT_Buffer *good = upload(c, d0, y);
  PJRT_Buffer *in[2] = {eb.buffer, good};
  PJRT_Buffer *const *arg_lists[1] = {in};
  PJRT_Buffer *out[1];
  PJRT_Buffer **out_lists[1] = {out};
  PJRT_Event *done[1];
  CHECK_OK(execute(exe, 1, arg_lists, 2, out_lists, done));
  PJRT_Buffer *in2[2] = {NULL, good};
  in2[0] = out[0];
  PJRT_Buffer *const *arg_lists2[1] = {in2};
  PJRT_Buffer *out2[1];
  PJRT_Buffer **out_lists2[1] = {out2};
  PJRT_Event *done2[1];
  CHECK_OK(execute(exe, 1, arg_lists2, 2, out_lists2, done2));
  PJRT_Event_Await_Args aw = {.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE, .event = done[0]};
  EXPECT_ERROR(api->PJRT_Event_Await(&aw), PJRT_Error_Code_ABORTED, "upstream failed");
  aw.event = done2[0];
  EXPECT_ERROR(api->PJRT_Event_Await(&aw), PJRT_Error_Code_ABORTED, "upstream failed");
  float r[6];
  PJRT_Buffer_ToHostBuffer_Args t = {.struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE,
                                     .src = out2[0],
                                     .dst = r,
                                     .dst_size = sizeof r};
  CHECK_OK(api->PJRT_Buffer_ToHostBuffer(&t));
  aw.event = t.event;
  EXPECT_ERROR(api->PJRT_Event_Await(&aw), PJRT_Error_Code_ABORTED, "upstream failed");
  event_destroy(t.event);
  event_destroy(done[0]);
  event_destroy(done2[0]);
  buffer_destroy(out[0]);
  buffer_destroy(out2[0]);
  buffer_destroy(eb.buffer);
  buffer_destroy(good);
  destroy_exe(exe);
  destroy_client(c);
}

/* Ahead-of-time: PJRT_Compile against the client's topology, then Client_Load, then run. */
static void test_compile_then_load(void **state) {
  (void)state;
  PJRT_Client *c = make_client(2);
  PJRT_Client_TopologyDescription_Args t = {
      .struct_size = PJRT_Client_TopologyDescription_Args_STRUCT_SIZE, .client = c};
  CHECK_OK(api->PJRT_Client_TopologyDescription(&t));
  PJRT_Program p = {.struct_size = PJRT_Program_STRUCT_SIZE,
                    .code = (char *)add_program,
                    .code_size = strlen(add_program),
                    .format = "mlir",
                    .format_size = 4};
  PJRT_Compile_Args ca = {.struct_size = PJRT_Compile_Args_STRUCT_SIZE,
                          .topology = t.topology,
                          .program = &p,
                          .client = c};
  PJRT_Error *e = api->PJRT_Compile(&ca);
  if (e) {
    size_t len;
    const char *m = err_msg(e, &len);
    fprintf(stderr, "skipping: compile failed: %.*s\n", (int)len, m);
    err_free(e);
    destroy_client(c);
    skip();
  }
  assert_non_null(ca.executable);
  PJRT_Client_Load_Args l = {.struct_size = PJRT_Client_Load_Args_STRUCT_SIZE,
                             .client = c,
                             .executable = ca.executable};
  CHECK_OK(api->PJRT_Client_Load(&l));
  PJRT_Executable_Destroy_Args xd = {.struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE,
                                     .executable = ca.executable};
  CHECK_OK(api->PJRT_Executable_Destroy(&xd)); /* the loaded one keeps the program */
  PJRT_LoadedExecutable *first = l.loaded_executable;
  /* Loading with options for another replica count is refused. */
  static const char four[] = {0x1a, 0x02, 0x20, 0x04};
  PJRT_LoadedExecutable_GetExecutable_Args ge = {
      .struct_size = PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE, .loaded_executable = first};
  CHECK_OK(api->PJRT_LoadedExecutable_GetExecutable(&ge));
  PJRT_Client_Load_Args l4 = {.struct_size = PJRT_Client_Load_Args_STRUCT_SIZE,
                              .client = c,
                              .executable = ge.executable,
                              .compile_options = four,
                              .compile_options_size = sizeof four};
  EXPECT_ERROR(api->PJRT_Client_Load(&l4), PJRT_Error_Code_INVALID_ARGUMENT, "compiled for 1 x 1");
  xd.executable = ge.executable;
  CHECK_OK(api->PJRT_Executable_Destroy(&xd));
  PJRT_Device *d0 = client_device(c, 0);
  float x[6] = {1, 2, 3, 4, 5, 6}, y[6] = {2, 2, 2, 2, 2, 2};
  PJRT_Buffer *in[2] = {upload(c, d0, x), upload(c, d0, y)};
  PJRT_Buffer *const *arg_lists[1] = {in};
  PJRT_Buffer *out[1];
  PJRT_Buffer **out_lists[1] = {out};
  PJRT_Event *done[1];
  CHECK_OK(execute(first, 1, arg_lists, 2, out_lists, done));
  event_await(done[0]);
  event_destroy(done[0]);
  float r[6];
  download(out[0], r);
  for (int i = 0; i < 6; i++) assert_true(r[i] == x[i] + 2);
  buffer_destroy(out[0]);
  buffer_destroy(in[0]);
  buffer_destroy(in[1]);
  destroy_exe(first);
  destroy_client(c);
}

/* CompileOptionsProto { executable_build_options (3) { num_replicas (4): 4 } } */
static const char four_replicas[] = {0x1a, 0x02, 0x20, 0x04};

static void test_four_device_execute(void **state) {
  (void)state;
  enum { N = 4 };
  PJRT_Client *c = make_client(N);
  PJRT_LoadedExecutable *exe = compile_or_skip(c, four_replicas, sizeof four_replicas);
  PJRT_LoadedExecutable_AddressableDevices_Args ad = {
      .struct_size = PJRT_LoadedExecutable_AddressableDevices_Args_STRUCT_SIZE, .executable = exe};
  CHECK_OK(api->PJRT_LoadedExecutable_AddressableDevices(&ad));
  assert_int_equal(ad.num_addressable_devices, N);
  float x[N][6], y[6] = {0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f};
  PJRT_Buffer *in[N][2], *out[N][1];
  PJRT_Buffer *const *arg_lists[N];
  PJRT_Buffer **out_lists[N];
  PJRT_Event *done[N];
  for (int d = 0; d < N; d++) {
    for (int i = 0; i < 6; i++) x[d][i] = (float)(100 * d + i);
    in[d][0] = upload(c, ad.addressable_devices[d], x[d]);
    in[d][1] = upload(c, ad.addressable_devices[d], y);
    arg_lists[d] = in[d];
    out_lists[d] = out[d];
  }
  CHECK_OK(execute(exe, N, arg_lists, 2, out_lists, done));
  for (int d = 0; d < N; d++) {
    event_await(done[d]);
    event_destroy(done[d]);
    PJRT_Buffer_Device_Args bd = {.struct_size = PJRT_Buffer_Device_Args_STRUCT_SIZE,
                                  .buffer = out[d][0]};
    CHECK_OK(api->PJRT_Buffer_Device(&bd));
    assert_ptr_equal(bd.device, ad.addressable_devices[d]);
    float r[6];
    download(out[d][0], r);
    for (int i = 0; i < 6; i++) assert_true(r[i] == x[d][i] + y[i]);
    buffer_destroy(out[d][0]);
    buffer_destroy(in[d][0]);
    buffer_destroy(in[d][1]);
  }
  EXPECT_ERROR(execute(exe, 2, arg_lists, 2, out_lists, done), PJRT_Error_Code_INVALID_ARGUMENT,
               "runs on 4 devices but num_devices is 2");
  /* One device of a 4-device program runs its own part (ExecuteSharded): device 1's. */
  for (int d = 0; d < N; d++) {
    in[d][0] = upload(c, ad.addressable_devices[d], x[d]);
    in[d][1] = upload(c, ad.addressable_devices[d], y);
  }
  PJRT_ExecuteOptions eo = {.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE};
  PJRT_Buffer *const *one_args[1] = {in[1]};
  PJRT_LoadedExecutable_Execute_Args one = {
      .struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE,
      .executable = exe,
      .options = &eo,
      .argument_lists = one_args,
      .num_devices = 1,
      .num_args = 2,
      .output_lists = out_lists,
      .device_complete_events = done,
      .execute_device = ad.addressable_devices[1]};
  CHECK_OK(api->PJRT_LoadedExecutable_Execute(&one));
  event_await(done[0]);
  event_destroy(done[0]);
  float r1[6];
  download(out[0][0], r1);
  for (int i = 0; i < 6; i++) assert_true(r1[i] == x[1][i] + y[i]);
  buffer_destroy(out[0][0]);
  for (int d = 0; d < N; d++) {
    buffer_destroy(in[d][0]);
    buffer_destroy(in[d][1]);
  }
  destroy_exe(exe);
  destroy_client(c);
}

/* Several threads launching 4-device executions at once: every result is right. */
typedef struct {
  PJRT_Client *c;
  PJRT_LoadedExecutable *exe;
  PJRT_Device *const *devs;
  int seed;
  int bad;
} launcher;

static void *launch_many(void *p) {
  launcher *l = p;
  for (int it = 0; it < 10; it++) {
    float x[4][6], y[6];
    PJRT_Buffer *in[4][2], *out[4][1];
    PJRT_Buffer *const *arg_lists[4];
    PJRT_Buffer **out_lists[4];
    PJRT_Event *done[4];
    for (int i = 0; i < 6; i++) y[i] = (float)(l->seed * 1000 + it);
    for (int d = 0; d < 4; d++) {
      for (int i = 0; i < 6; i++) x[d][i] = (float)(d * 10 + i);
      in[d][0] = upload(l->c, l->devs[d], x[d]);
      in[d][1] = upload(l->c, l->devs[d], y);
      arg_lists[d] = in[d];
      out_lists[d] = out[d];
    }
    PJRT_Error *e = execute(l->exe, 4, arg_lists, 2, out_lists, done);
    if (e) {
      err_free(e);
      l->bad++;
      return NULL;
    }
    for (int d = 0; d < 4; d++) {
      float r[6];
      download(out[d][0], r);
      for (int i = 0; i < 6; i++) l->bad += r[i] != x[d][i] + y[i];
      event_destroy(done[d]);
      buffer_destroy(out[d][0]);
      buffer_destroy(in[d][0]);
      buffer_destroy(in[d][1]);
    }
  }
  return NULL;
}

static void test_concurrent_launches(void **state) {
  (void)state;
  PJRT_Client *c = make_client(4);
  PJRT_LoadedExecutable *exe = compile_or_skip(c, four_replicas, sizeof four_replicas);
  PJRT_LoadedExecutable_AddressableDevices_Args ad = {
      .struct_size = PJRT_LoadedExecutable_AddressableDevices_Args_STRUCT_SIZE, .executable = exe};
  CHECK_OK(api->PJRT_LoadedExecutable_AddressableDevices(&ad));
  launcher ls[4];
  pthread_t ts[4];
  for (int k = 0; k < 4; k++) {
    ls[k] = (launcher){.c = c, .exe = exe, .devs = ad.addressable_devices, .seed = k};
    assert_int_equal(pthread_create(&ts[k], NULL, launch_many, &ls[k]), 0);
  }
  for (int k = 0; k < 4; k++) {
    pthread_join(ts[k], NULL);
    assert_int_equal(ls[k].bad, 0);
  }
  destroy_exe(exe);
  destroy_client(c);
}

/* Programs too big to run on the caller's thread go through the device worker: chain two
 * of them and read the second result while the first may still be running. */
static const char big_add_program[] =
    "module @big_add {\n"
    "  func.func public @main(%arg0: tensor<256x256xf32>, %arg1: tensor<256x256xf32>) -> "
    "tensor<256x256xf32> {\n"
    "    %0 = stablehlo.add %arg0, %arg1 : tensor<256x256xf32>\n"
    "    return %0 : tensor<256x256xf32>\n"
    "  }\n"
    "}\n";

static void test_big_chained_async(void **state) {
  (void)state;
  enum { N = 256 * 256 };
  PJRT_Client *c = make_client(1);
  PJRT_LoadedExecutable *exe = compile_prog_or_skip(c, big_add_program, NULL, 0);
  PJRT_Device *d0 = client_device(c, 0);
  float *x = malloc(N * sizeof *x), *r = malloc(N * sizeof *r);
  for (int i = 0; i < N; i++) x[i] = (float)(i % 1000);
  static const int64_t dims[2] = {256, 256};
  PJRT_Client_BufferFromHostBuffer_Args ba = {
      .struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE,
      .client = c,
      .data = x,
      .type = PJRT_Buffer_Type_F32,
      .dims = dims,
      .num_dims = 2,
      .device = d0};
  CHECK_OK(api->PJRT_Client_BufferFromHostBuffer(&ba));
  event_destroy(ba.done_with_host_buffer);
  PJRT_Buffer *bx = ba.buffer;
  PJRT_Buffer *cur = bx;
  PJRT_Buffer *outs[3];
  PJRT_Event *done[3];
  for (int k = 0; k < 3; k++) { /* cur = cur + x, three times: 4x */
    PJRT_Buffer *in[2] = {cur, bx};
    PJRT_Buffer *const *arg_lists[1] = {in};
    PJRT_Buffer **out_lists[1] = {&outs[k]};
    CHECK_OK(execute(exe, 1, arg_lists, 2, out_lists, &done[k]));
    cur = outs[k];
  }
  PJRT_Buffer_ToHostBuffer_Args t = {.struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE,
                                     .src = outs[2],
                                     .dst = r,
                                     .dst_size = N * sizeof *r};
  CHECK_OK(api->PJRT_Buffer_ToHostBuffer(&t));
  event_await(t.event);
  event_destroy(t.event);
  for (int i = 0; i < N; i++)
    if (r[i] != 4 * x[i]) fail_msg("element %d: %g != %g", i, (double)r[i], 4.0 * x[i]);
  for (int k = 0; k < 3; k++) {
    event_await(done[k]);
    event_destroy(done[k]);
    buffer_destroy(outs[k]);
  }
  buffer_destroy(bx);
  free(x);
  free(r);
  destroy_exe(exe);
  destroy_client(c);
}


/* The plugin profiler API, driven the way jaxlib drives it (struct_size left unset, one
 * collect_data call with buffer == NULL, then the plugin's buffer read): a session captures
 * the executions between start and stop; a second session cannot start meanwhile. */
static void test_profiler_extension(void **state) {
  (void)state;
  const PJRT_Extension_Base *ext = api->extension_start;
  while (ext && ext->type != PJRT_Extension_Type_Profiler) ext = ext->next;
  assert_non_null(ext);
  const PLUGIN_Profiler_Api *pa = ((const PJRT_Profiler_Extension *)ext)->profiler_api;
  PJRT_Client *c = make_client(1);
  PJRT_LoadedExecutable *exe = compile_or_skip(c, NULL, 0);
  PJRT_Device *d0 = client_device(c, 0);
  static const float x[6] = {1, 2, 3, 4, 5, 6};
  PJRT_Buffer *a = upload(c, d0, x), *b = upload(c, d0, x);
  PJRT_Buffer *const args[2] = {a, b};
  PJRT_Buffer *const *arg_lists[1] = {args};

  PLUGIN_Profiler_Create_Args cr;
  cr.options = NULL;
  cr.options_size = 0;
  assert_null(pa->create(&cr));
  PLUGIN_Profiler_Create_Args cr2 = cr;
  assert_null(pa->create(&cr2));
  PLUGIN_Profiler_Start_Args st;
  st.profiler = cr.profiler;
  assert_null(pa->start(&st));
  PLUGIN_Profiler_Start_Args st2;
  st2.profiler = cr2.profiler;
  PLUGIN_Profiler_Error *err = pa->start(&st2);
  assert_non_null(err);
  PLUGIN_Profiler_Error_GetCode_Args gc;
  gc.error = err;
  assert_null(pa->error_get_code(&gc));
  assert_int_equal(gc.code, PJRT_Error_Code_FAILED_PRECONDITION);
  PLUGIN_Profiler_Error_Message_Args em;
  em.error = err;
  pa->error_message(&em);
  assert_true(em.message_size > 0 && strstr(em.message, "another") != NULL);
  PLUGIN_Profiler_Error_Destroy_Args ed;
  ed.error = err;
  pa->error_destroy(&ed);

  for (int i = 0; i < 2; i++) {
    PJRT_Buffer *out[1];
    PJRT_Buffer **out_lists[1] = {out};
    PJRT_Event *done[1];
    CHECK_OK(execute(exe, 1, arg_lists, 2, out_lists, done));
    event_await(done[0]);
    event_destroy(done[0]);
    buffer_destroy(out[0]);
  }
  PLUGIN_Profiler_Stop_Args sp;
  sp.profiler = cr.profiler;
  assert_null(pa->stop(&sp));
  PLUGIN_Profiler_CollectData_Args cd;
  cd.profiler = cr.profiler;
  cd.buffer = NULL;
  assert_null(pa->collect_data(&cd));
  assert_non_null(cd.buffer);
  assert_true(cd.buffer_size_in_bytes > 0);
  const char *bytes = (const char *)cd.buffer;
  size_t n = cd.buffer_size_in_bytes;
  assert_non_null(memmem(bytes, n, "/device:CUSTOM:0", 16));
  assert_non_null(memmem(bytes, n, "XLA Ops", 7));
  assert_non_null(memmem(bytes, n, "stablehlo.add", 13));
  assert_non_null(memmem(bytes, n, "add_test", 8));
  PLUGIN_Profiler_Destroy_Args de;
  de.profiler = cr.profiler;
  assert_null(pa->destroy(&de));
  /* the first session gone, the second may run */
  assert_null(pa->start(&st2));
  de.profiler = cr2.profiler;
  assert_null(pa->destroy(&de));

  buffer_destroy(a);
  buffer_destroy(b);
  destroy_exe(exe);
  destroy_client(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_compile_bad_format),
      cmocka_unit_test(test_single_device_execute),
      cmocka_unit_test(test_four_device_execute),
      cmocka_unit_test(test_serialize_round_trip),
      cmocka_unit_test(test_donation),
      cmocka_unit_test(test_portable_execute_and_text),
      cmocka_unit_test(test_quantized_program),
      cmocka_unit_test(test_error_propagates),
      cmocka_unit_test(test_concurrent_launches),
      cmocka_unit_test(test_compile_then_load),
      cmocka_unit_test(test_big_chained_async),
      cmocka_unit_test(test_profiler_extension),
  };
  return cmocka_run_group_tests(tests, load_api, NULL);
}
