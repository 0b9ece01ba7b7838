/* Users' custom ops (runtime/ffi/, compiler/lower_ffi.c): XLA FFI handlers written in C11
 * against JAX's own headers (ffi_handlers.c) registered through the plugin's entry points
 * (AnvilFfi_*) before the programs that call them are compiled, then run: every attribute
 * kind sorted as XLA sorts them, every element type and rank, layouts, aliasing, tokens,
 * errors (the handler's message and code), state made once per call site and deleted with
 * the program, the thread pool (also tasks that schedule tasks and wait), an asynchronous
 * handler, run ids, API version negotiation, and legacy custom calls. Expected values are
 * computed here by hand. Built only when CMake finds a Python with JAX (for the headers). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/program.h"
#include "runtime/thread_pool.h"
#include "util/storage.h"
#include "xla/ffi/api/c_api.h"

/* the anvil entry points (runtime/ffi/registry.c) */
int32_t AnvilFfi_RegisterHandler(const char *name, const char *platform, int32_t api_version,
                                 void *instantiate, void *prepare, void *initialize,
                                 void *execute, uint32_t traits, char *err, int64_t errcap);
int32_t AnvilFfi_RegisterType(const char *name, int64_t *type_id, const void *type_info,
                              char *err, int64_t errcap);
const void *AnvilFfi_GetApi(void);

/* ffi_handlers.c */
#define HANDLER(n) XLA_FFI_Error *ffi_test_##n(XLA_FFI_CallFrame *f);
HANDLER(attrs_echo) HANDLER(describe) HANDLER(copy) HANDLER(scale_in_place) HANDLER(fail)
HANDLER(bogus_error) HANDLER(counter_instantiate) HANDLER(counter_execute)
HANDLER(counter_execute_v02) HANDLER(too_new) HANDLER(ids) HANDLER(pool_sum)
HANDLER(async_add_one)
#undef HANDLER
XLA_FFI_Error *ffi_test_register_self(const XLA_FFI_Api *api);
void ffi_test_legacy_add(void *out, const void **in);
void ffi_test_legacy_two(void *out, const void **in);
void ffi_test_legacy_fail(void *out, const void **in, void *status);
void ffi_test_legacy_opaque(void *out, const void **in, const char *opaque, size_t len, void *status);
extern XLA_FFI_TypeId ffi_test_counter_type;
extern atomic_int ffi_test_counters_deleted;
extern const XLA_FFI_TypeInfo ffi_test_counter_type_info;

static void *fp(void *p) { return p; }
#define FN(f) fp((void *)(uintptr_t)(f))

static int32_t reg(const char *name, const char *platform, int version, void *inst, void *exec,
                   char *err) {
  return AnvilFfi_RegisterHandler(name, platform, version, inst, NULL, NULL, exec, 0, err, 512);
}

static int setup(void **state) {
  (void)state;
  char err[512] = "";
  int64_t id = 0;
  if (AnvilFfi_RegisterType("ffi_test.counter", &id, &ffi_test_counter_type_info, err, 512)) {
    fprintf(stderr, "%s\n", err);
    return -1;
  }
  ffi_test_counter_type.type_id = id;
  struct {
    const char *name, *platform;
    int version;
    void *inst, *exec;
  } all[] = {
      {"attrs_echo", "cpu", 1, NULL, FN(ffi_test_attrs_echo)},
      {"describe", "Host", 1, NULL, FN(ffi_test_describe)},
      {"copy", "anvil", 1, NULL, FN(ffi_test_copy)},
      {"scale_in_place", "HOST", 1, NULL, FN(ffi_test_scale_in_place)},
      {"fail", "cpu", 1, NULL, FN(ffi_test_fail)},
      {"bogus_error", "cpu", 1, NULL, FN(ffi_test_bogus_error)},
      {"counter", "cpu", 1, FN(ffi_test_counter_instantiate), FN(ffi_test_counter_execute)},
      {"counter_v02", "cpu", 1, FN(ffi_test_counter_instantiate), FN(ffi_test_counter_execute_v02)},
      {"ids", "cpu", 1, NULL, FN(ffi_test_ids)},
      {"pool_sum", "cpu", 1, NULL, FN(ffi_test_pool_sum)},
      {"async_add_one", "cpu", 1, NULL, FN(ffi_test_async_add_one)},
      {"legacy_add", "cpu", 0, NULL, FN(ffi_test_legacy_add)},
      {"legacy_two", "cpu", 0, NULL, FN(ffi_test_legacy_two)},
      {"legacy_fail", "cpu", 0, NULL, FN(ffi_test_legacy_fail)},
      {"legacy_opaque", "cpu", 0, NULL, FN(ffi_test_legacy_opaque)},
  };
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    if (reg(all[i].name, all[i].platform, all[i].version, all[i].inst, all[i].exec, err)) {
      fprintf(stderr, "%s: %s\n", all[i].name, err);
      return -1;
    }
  return 0;
}

static av_program *compile(const char *src, av_diag *d) {
  av_diag_init(d);
  return av_program_compile("mlir", 4, src, strlen(src), NULL, d);
}

static av_program *compile_ok(const char *src) {
  av_diag d;
  av_program *p = compile(src, &d);
  if (!p) fail_msg("%s", d.msg);
  return p;
}

static av_tensor input(av_dtype dt, int rank, const int64_t *dims, const void *data, size_t n) {
  av_tensor t = {0};
  t.storage = av_storage_alloc_uninit(n);
  if (n) memcpy(t.storage->data, data, n);
  t.dtype = dt;
  t.rank = rank;
  for (int i = 0; i < rank; i++) t.dims[i] = dims[i];
  return t;
}

/* Runs p on inputs (released after) into outputs; returns the code, message in d. */
static av_code run(av_program *p, av_tensor *in, int nin, av_tensor *out, int nout, av_diag *d) {
  av_diag_init(d);
  for (int i = 0; i < nout; i++) out[i].storage = NULL;
  av_code c = av_program_execute(p, 0, in, out, d);
  for (int i = 0; i < nin; i++) av_storage_release(in[i].storage);
  return c;
}

static void release(av_tensor *out, int n) {
  for (int i = 0; i < n; i++)
    if (out[i].storage) av_storage_release(out[i].storage);
}

/* ---------------------------------------------------------------------------- attributes */

static void test_attributes_arrive_sorted_with_their_types(void **state) {
  (void)state;
  const char *src =
      "func.func @main() -> tensor<512xui8> {\n"
      "  %0 = stablehlo.custom_call @attrs_echo() {mhlo.backend_config = {\n"
      "      zeta = \"last\", b = true, i8 = -3 : i8, i16 = 300 : i16, i32 = -7 : i32,\n"
      "      i64 = 9000000000 : i64, u8 = 76 : ui8, u16 = 60000 : ui16, u32 = 7 : ui32,\n"
      "      u64 = 18446744073709551615 : ui64, f32 = 1.5 : f32, f64 = 2.25 : f64,\n"
      "      arr = dense<[1, 2, 3]> : tensor<3xi32>, arrf = dense<[0.5, 1.5]> : tensor<2xf64>,\n"
      "      m = dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>, sp = dense<7> : tensor<3xui8>,\n"
      "      d = {z = 1 : i32, a = {y = 2.5 : f32, c = \"in\"}}, Alpha = 0 : i64, e = {}}}\n"
      "      : () -> tensor<512xui8>\n"
      "  return %0 : tensor<512xui8>\n"
      "}\n";
  av_program *p = compile_ok(src);
  av_tensor out[1];
  av_diag d;
  if (run(p, NULL, 0, out, 1, &d) != AV_OK) fail_msg("%s", d.msg);
  const char *want =
      "Alpha=s5:0,arr=a4[1 2 3],arrf=a12[0.5 1.5],b=s1:true,d={a={c='in',y=s11:2.5},z=s4:1},"
      "e={},f32=s11:1.5,f64=s12:2.25,i16=s3:300,i32=s4:-7,i64=s5:9000000000,i8=s2:-3,"
      "m=a5[1 2 3 4],sp=a6[7 7 7],u16=s7:60000,u32=s8:7,u64=s9:18446744073709551615,"
      "u8=s6:76,zeta='last'";
  assert_string_equal((const char *)out[0].storage->data, want);
  release(out, 1);
  av_program_free(p);
}

static void test_unsupported_attributes_fail_at_compile_time(void **state) {
  (void)state;
  const char *bad[] = {"x = [1, 2]", "x = 1.0 : f16", "x = dense<[true, false]> : tensor<2xi1>"};
  for (size_t i = 0; i < 3; i++) {
    char src[1024];
    snprintf(src, sizeof src,
             "func.func @main() -> tensor<512xui8> {\n"
             "  %%0 = stablehlo.custom_call @attrs_echo() {mhlo.backend_config = {%s}}\n"
             "      : () -> tensor<512xui8>\n"
             "  return %%0 : tensor<512xui8>\n}\n", bad[i]);
    av_diag d;
    av_program *p = compile(src, &d);
    assert_null(p);
    assert_int_equal(d.code, AV_INVALID_ARGUMENT);
    assert_non_null(strstr(d.msg, "Unsupported attribute type for attribute: x"));
  }
}

/* -------------------------------------------------------------------------------- buffers */

static void test_every_element_type_round_trips(void **state) {
  (void)state;
  static const char *const types[] = {
      "i1", "i8", "i16", "i32", "i64", "ui8", "ui16", "ui32", "ui64", "f16", "bf16", "f32",
      "f64", "complex<f32>", "complex<f64>", "f8E5M2", "f8E4M3FN", "f8E4M3B11FNUZ",
      "f8E5M2FNUZ", "f8E4M3FNUZ", "f8E4M3", "f8E3M4", "f8E8M0FNU", "f4E2M1FN", "i4", "ui4",
      "i2", "ui2"};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
    for (int rank = 0; rank <= 3; rank++) {
      const char *shape = rank == 0 ? "" : rank == 1 ? "5x" : rank == 2 ? "2x3x" : "2x1x3x";
      char src[1024];
      snprintf(src, sizeof src,
               "func.func @main(%%x: tensor<%s%s>) -> tensor<%s%s> {\n"
               "  %%0 = stablehlo.custom_call @copy(%%x) {mhlo.backend_config = {}}\n"
               "      : (tensor<%s%s>) -> tensor<%s%s>\n"
               "  return %%0 : tensor<%s%s>\n}\n",
               shape, types[i], shape, types[i], shape, types[i], shape, types[i], shape, types[i]);
      av_diag d;
      av_program *p = compile(src, &d);
      if (!p) fail_msg("%s: %s", types[i], d.msg);
      av_dtype dt = av_dtype_from_mlir_name(types[i], strlen(types[i]));
      int64_t dims[3] = {rank == 1 ? 5 : 2, rank == 2 ? 3 : 1, 3};
      if (rank == 2) dims[1] = 3;
      int64_t n = 1;
      for (int k = 0; k < rank; k++) n *= dims[k];
      size_t bytes = (size_t)n * av_dtype_size(dt);
      unsigned char data[256];
      for (size_t k = 0; k < bytes; k++) data[k] = (unsigned char)(k * 37 + 1) & (av_dtype_bits(dt) < 8 ? 1 : 0xff);
      av_tensor in[1] = {input(dt, rank, dims, data, bytes)}, out[1];
      if (run(p, in, 1, out, 1, &d) != AV_OK) fail_msg("%s rank %d: %s", types[i], rank, d.msg);
      assert_memory_equal(out[0].storage->data, data, bytes);
      release(out, 1);
      av_program_free(p);
    }
  }
}

static void test_dims_layouts_and_tokens_reach_the_handler(void **state) {
  (void)state;
  /* x: f32[2,3] column-major; t: a token; z: i8[0] */
  const char *src =
      "func.func @main(%x: tensor<2x3xf32>, %z: tensor<0xi8>) -> (tensor<64xi64>, tensor<6xf32>) {\n"
      "  %t = stablehlo.create_token : !stablehlo.token\n"
      "  %0:2 = stablehlo.custom_call @describe(%x, %t, %z) {mhlo.backend_config = {},\n"
      "      operand_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>,\n"
      "                         dense<0> : tensor<1xindex>],\n"
      "      result_layouts = [dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>]}\n"
      "      : (tensor<2x3xf32>, !stablehlo.token, tensor<0xi8>) -> (tensor<64xi64>, tensor<6xf32>)\n"
      "  return %0#0, %0#1 : tensor<64xi64>, tensor<6xf32>\n"
      "}\n";
  av_program *p = compile_ok(src);
  float x[6] = {0, 1, 2, 3, 4, 5};
  int64_t xd[2] = {2, 3}, zd[1] = {0};
  av_tensor in[2] = {input(AV_DT_F32, 2, xd, x, sizeof x), input(AV_DT_S8, 1, zd, NULL, 0)};
  av_tensor out[2];
  av_diag d;
  if (run(p, in, 2, out, 2, &d) != AV_OK) fail_msg("%s", d.msg);
  const int64_t *o = out[0].storage->data;
  /* f32 (11), aligned, rank 2, dims 2 3; token (17), rank 0; s8 (2), rank 1, dim 0;
   * results: s64 (5) rank 1 [64]; f32 rank 1 [6] */
  const int64_t want[] = {11, 1, 2, 2, 3, 17, 1, 0, 2, 1, 1, 0, 5, 1, 1, 64, 11, 1, 1, 6, -1};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    if (o[i] != want[i]) fail_msg("describe[%zu] = %lld, want %lld", i, (long long)o[i], (long long)want[i]);
  /* the raw bytes of x in column-major order */
  const float *raw = out[1].storage->data;
  const float col[6] = {0, 3, 1, 4, 2, 5};
  assert_memory_equal(raw, col, sizeof col);
  release(out, 2);
  av_program_free(p);
}

static void test_results_in_column_major_come_back_row_major(void **state) {
  (void)state;
  /* copy with both sides column-major: the handler copies physical bytes, the value is kept */
  const char *src =
      "func.func @main(%x: tensor<2x3xi32>) -> tensor<2x3xi32> {\n"
      "  %0 = stablehlo.custom_call @copy(%x) {mhlo.backend_config = {},\n"
      "      operand_layouts = [dense<[0, 1]> : tensor<2xindex>],\n"
      "      result_layouts = [dense<[0, 1]> : tensor<2xindex>]}\n"
      "      : (tensor<2x3xi32>) -> tensor<2x3xi32>\n"
      "  return %0 : tensor<2x3xi32>\n"
      "}\n";
  av_program *p = compile_ok(src);
  int32_t x[6] = {1, 2, 3, 4, 5, 6};
  int64_t dims[2] = {2, 3};
  av_tensor in[1] = {input(AV_DT_S32, 2, dims, x, sizeof x)}, out[1];
  av_diag d;
  if (run(p, in, 1, out, 1, &d) != AV_OK) fail_msg("%s", d.msg);
  assert_memory_equal(out[0].storage->data, x, sizeof x);
  release(out, 1);
  av_program_free(p);
}

static void test_aliased_results_share_the_operand_buffer(void **state) {
  (void)state;
  /* the operand is read again after the call: the aliased result must not clobber it */
  const char *src =
      "func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {\n"
      "  %0 = stablehlo.custom_call @scale_in_place(%x) {mhlo.backend_config = {},\n"
      "      output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [],\n"
      "          operand_index = 0, operand_tuple_indices = []>]}\n"
      "      : (tensor<4xf32>) -> tensor<4xf32>\n"
      "  %1 = stablehlo.add %x, %x : tensor<4xf32>\n"
      "  return %0, %1 : tensor<4xf32>, tensor<4xf32>\n"
      "}\n";
  av_program *p = compile_ok(src);
  float x[4] = {1, -2, 3.5f, 0};
  int64_t dims[1] = {4};
  av_tensor in[1] = {input(AV_DT_F32, 1, dims, x, sizeof x)}, out[2];
  av_diag d;
  if (run(p, in, 1, out, 2, &d) != AV_OK) fail_msg("%s", d.msg);
  const float want[4] = {2, -4, 7, 0};
  assert_memory_equal(out[0].storage->data, want, sizeof want);
  assert_memory_equal(out[1].storage->data, want, sizeof want);
  release(out, 2);
  av_program_free(p);
  /* without an alias the handler sees two buffers and says so */
  const char *unaliased =
      "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
      "  %0 = stablehlo.custom_call @scale_in_place(%x) {mhlo.backend_config = {}}\n"
      "      : (tensor<4xf32>) -> tensor<4xf32>\n"
      "  return %0 : tensor<4xf32>\n"
      "}\n";
  p = compile_ok(unaliased);
  av_tensor in2[1] = {input(AV_DT_F32, 1, dims, x, sizeof x)};
  assert_int_equal(run(p, in2, 1, out, 1, &d), AV_INVALID_ARGUMENT);
  assert_non_null(strstr(d.msg, "custom call @scale_in_place: scale_in_place: not aliased"));
  av_program_free(p);
}

/* --------------------------------------------------------------------------------- errors */

static void test_handler_errors_carry_code_and_message(void **state) {
  (void)state;
  const char *src =
      "func.func @main() -> tensor<i32> {\n"
      "  %0 = stablehlo.custom_call @fail() {has_side_effect = true, mhlo.backend_config = {\n"
      "      message = \"the handler says no\", code = 9 : i32}} : () -> tensor<i32>\n"
      "  return %0 : tensor<i32>\n"
      "}\n";
  av_program *p = compile_ok(src);
  av_tensor out[1];
  av_diag d;
  assert_int_equal(run(p, NULL, 0, out, 1, &d), AV_FAILED_PRECONDITION);
  assert_non_null(strstr(d.msg, "custom call @fail: the handler says no"));
  release(out, 1);
  av_program_free(p);
  /* a pointer that is no error is reported, never read */
  p = compile_ok("func.func @main() -> tensor<i32> {\n"
                 "  %0 = stablehlo.custom_call @bogus_error() {mhlo.backend_config = {}} : () -> tensor<i32>\n"
                 "  return %0 : tensor<i32>\n}\n");
  assert_int_equal(run(p, NULL, 0, out, 1, &d), AV_INTERNAL);
  assert_non_null(strstr(d.msg, "no error the XLA FFI API made"));
  release(out, 1);
  av_program_free(p);
}

static void test_unknown_targets_and_bad_versions_are_refused(void **state) {
  (void)state;
  av_diag d;
  av_program *p = compile("func.func @main() -> tensor<i32> {\n"
                          "  %0 = stablehlo.custom_call @nobody_registered_this() : () -> tensor<i32>\n"
                          "  return %0 : tensor<i32>\n}\n", &d);
  assert_null(p);
  assert_int_equal(d.code, AV_UNIMPLEMENTED);
  assert_non_null(strstr(d.msg, "custom_call target @nobody_registered_this is not supported"));
  char err[512] = "";
  assert_int_equal(reg("too_new", "cpu", 1, NULL, FN(ffi_test_too_new), err), AV_INVALID_ARGUMENT);
  assert_non_null(strstr(err, "API version (0.9) is incompatible"));
  assert_int_equal(reg("elsewhere", "cuda", 1, NULL, FN(ffi_test_copy), err), AV_INVALID_ARGUMENT);
  /* the same name again: fine with the same handler, refused with another */
  assert_int_equal(reg("copy", "anvil", 1, NULL, FN(ffi_test_copy), err), 0);
  assert_int_equal(reg("copy", "anvil", 1, NULL, FN(ffi_test_describe), err), AV_INVALID_ARGUMENT);
  /* a typed handler called through the legacy API is refused at compile time */
  p = compile("func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
              "  %0 = stablehlo.custom_call @copy(%x) {api_version = 2 : i32} : (tensor<2xf32>) -> tensor<2xf32>\n"
              "  return %0 : tensor<2xf32>\n}\n", &d);
  assert_null(p);
  assert_non_null(strstr(d.msg, "registered as an XLA FFI handler"));
}

/* ------------------------------------------------------------------------------ state */

static void test_state_is_made_once_per_call_site_and_deleted_with_the_program(void **state) {
  (void)state;
  const char *src =
      "func.func @main() -> (tensor<i64>, tensor<i64>, tensor<i64>) {\n"
      "  %0 = stablehlo.custom_call @counter() {mhlo.backend_config = {start = 10 : i64}} : () -> tensor<i64>\n"
      "  %1 = stablehlo.custom_call @counter() {mhlo.backend_config = {start = 20 : i64}} : () -> tensor<i64>\n"
      "  %2 = stablehlo.custom_call @counter_v02() {mhlo.backend_config = {start = 0 : i64}} : () -> tensor<i64>\n"
      "  return %0, %1, %2 : tensor<i64>, tensor<i64>, tensor<i64>\n"
      "}\n";
  int deleted = atomic_load(&ffi_test_counters_deleted);
  av_program *p = compile_ok(src);
  for (int64_t r = 1; r <= 3; r++) {
    av_tensor out[3];
    av_diag d;
    if (run(p, NULL, 0, out, 3, &d) != AV_OK) fail_msg("%s", d.msg);
    assert_int_equal(*(int64_t *)out[0].storage->data, 10 + r);
    assert_int_equal(*(int64_t *)out[1].storage->data, 20 + r);
    assert_int_equal(*(int64_t *)out[2].storage->data, 1000 + r);
    release(out, 3);
  }
  assert_int_equal(atomic_load(&ffi_test_counters_deleted), deleted);
  av_program_free(p);
  assert_int_equal(atomic_load(&ffi_test_counters_deleted), deleted + 3);
}

/* ------------------------------------------------------- thread pool, async, ids */

static void test_thread_pool_tasks_run_and_never_deadlock(void **state) {
  (void)state;
  for (int nested = 0; nested < 2; nested++) {
    char src[1024];
    snprintf(src, sizeof src,
             "func.func @main(%%x: tensor<1000xf64>) -> tensor<f64> {\n"
             "  %%0 = stablehlo.custom_call @pool_sum(%%x) {mhlo.backend_config = {nested = %s}}\n"
             "      : (tensor<1000xf64>) -> tensor<f64>\n"
             "  return %%0 : tensor<f64>\n}\n", nested ? "true" : "false");
    av_program *p = compile_ok(src);
    /* tasks only run inline without a pool: give the program a 3-thread one */
    struct av_thread_pool *pool = av_thread_pool_create(3);
    av_program_use_thread_pool(p, pool);
    av_thread_pool_release(pool);
    double x[1000], want = 0;
    for (int i = 0; i < 1000; i++) want += x[i] = i * 0.5;
    int64_t dims[1] = {1000};
    for (int r = 0; r < 20; r++) {
      av_tensor in[1] = {input(AV_DT_F64, 1, dims, x, sizeof x)}, out[1];
      av_diag d;
      if (run(p, in, 1, out, 1, &d) != AV_OK) fail_msg("%s", d.msg);
      assert_true(*(double *)out[0].storage->data == want);
      release(out, 1);
    }
    av_program_free(p);
  }
}

static void test_async_handlers_complete_their_future(void **state) {
  (void)state;
  for (int fail = 0; fail < 2; fail++) {
    char src[1024];
    snprintf(src, sizeof src,
             "func.func @main(%%x: tensor<3xf32>) -> tensor<3xf32> {\n"
             "  %%0 = stablehlo.custom_call @async_add_one(%%x) {mhlo.backend_config = {%s}}\n"
             "      : (tensor<3xf32>) -> tensor<3xf32>\n"
             "  %%1 = stablehlo.multiply %%0, %%0 : tensor<3xf32>\n"
             "  return %%1 : tensor<3xf32>\n}\n", fail ? "fail = true" : "");
    av_program *p = compile_ok(src);
    float x[3] = {1, 2, -3};
    int64_t dims[1] = {3};
    av_tensor in[1] = {input(AV_DT_F32, 1, dims, x, sizeof x)}, out[1];
    av_diag d;
    av_code c = run(p, in, 1, out, 1, &d);
    if (fail) {
      assert_int_equal(c, AV_DATA_LOSS);
      assert_non_null(strstr(d.msg, "async failure"));
    } else {
      if (c != AV_OK) fail_msg("%s", d.msg);
      const float want[3] = {4, 9, 4};
      assert_memory_equal(out[0].storage->data, want, sizeof want);
    }
    release(out, 1);
    av_program_free(p);
  }
}

static void test_run_ids_differ_per_run_and_match_within_one(void **state) {
  (void)state;
  const char *src =
      "func.func @main() -> (tensor<2xi64>, tensor<2xi64>) {\n"
      "  %0 = stablehlo.custom_call @ids() {mhlo.backend_config = {}} : () -> tensor<2xi64>\n"
      "  %1 = stablehlo.custom_call @ids() {mhlo.backend_config = {}} : () -> tensor<2xi64>\n"
      "  return %0, %1 : tensor<2xi64>, tensor<2xi64>\n"
      "}\n";
  av_program *p = compile_ok(src);
  int64_t first = 0;
  for (int r = 0; r < 2; r++) {
    av_tensor out[2];
    av_diag d;
    if (run(p, NULL, 0, out, 2, &d) != AV_OK) fail_msg("%s", d.msg);
    const int64_t *a = out[0].storage->data, *b = out[1].storage->data;
    assert_int_equal(a[0], b[0]);
    assert_int_equal(a[1], 0); /* device ordinal */
    if (r == 0) first = a[0];
    else assert_int_not_equal(a[0], first);
    release(out, 2);
  }
  av_program_free(p);
}

static void test_handlers_registered_through_the_api_table(void **state) {
  (void)state;
  XLA_FFI_Error *e = ffi_test_register_self(AnvilFfi_GetApi());
  assert_null(e);
  av_program *p = compile_ok("func.func @main() -> tensor<i32> {\n"
                             "  %0 = stablehlo.custom_call @self_registered() {api_version = 4 : i32,\n"
                             "      backend_config = \"\"} : () -> tensor<i32>\n"
                             "  return %0 : tensor<i32>\n}\n");
  av_tensor out[1];
  av_diag d;
  if (run(p, NULL, 0, out, 1, &d) != AV_OK) fail_msg("%s", d.msg);
  assert_int_equal(*(int32_t *)out[0].storage->data, 42);
  release(out, 1);
  av_program_free(p);
}

/* ---------------------------------------------------------------------------- legacy */

static void test_legacy_custom_calls(void **state) {
  (void)state;
  const char *src =
      "func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<i32>, tensor<i32>) {\n"
      "  %0 = stablehlo.custom_call @legacy_add(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
      "  %1:2 = stablehlo.custom_call @legacy_two(%a) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<i32>)\n"
      "  %2 = stablehlo.custom_call @legacy_opaque() {api_version = 3 : i32, backend_config = \"5xyz\"} : () -> tensor<i32>\n"
      "  return %0, %1#0, %1#1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<i32>, tensor<i32>\n"
      "}\n";
  av_program *p = compile_ok(src);
  float a[4] = {1, 2, 3, 4}, b[4] = {0.5f, -1, 2, 8};
  int64_t dims[1] = {4};
  av_tensor in[2] = {input(AV_DT_F32, 1, dims, a, sizeof a), input(AV_DT_F32, 1, dims, b, sizeof b)};
  av_tensor out[4];
  av_diag d;
  if (run(p, in, 2, out, 4, &d) != AV_OK) fail_msg("%s", d.msg);
  const float sum[4] = {1.5f, 1, 5, 12}, triple[4] = {3, 6, 9, 12};
  assert_memory_equal(out[0].storage->data, sum, sizeof sum);
  assert_memory_equal(out[1].storage->data, triple, sizeof triple);
  assert_int_equal(*(int32_t *)out[2].storage->data, 7);
  assert_int_equal(*(int32_t *)out[3].storage->data, 405);
  release(out, 4);
  av_program_free(p);
  p = compile_ok("func.func @main() -> tensor<i32> {\n"
                 "  %0 = stablehlo.custom_call @legacy_fail() {api_version = 2 : i32} : () -> tensor<i32>\n"
                 "  return %0 : tensor<i32>\n}\n");
  assert_int_equal(run(p, NULL, 0, out, 1, &d), AV_INTERNAL);
  assert_non_null(strstr(d.msg, "custom call @legacy_fail: legacy failure"));
  release(out, 1);
  av_program_free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_attributes_arrive_sorted_with_their_types),
      cmocka_unit_test(test_unsupported_attributes_fail_at_compile_time),
      cmocka_unit_test(test_every_element_type_round_trips),
      cmocka_unit_test(test_dims_layouts_and_tokens_reach_the_handler),
      cmocka_unit_test(test_results_in_column_major_come_back_row_major),
      cmocka_unit_test(test_aliased_results_share_the_operand_buffer),
      cmocka_unit_test(test_handler_errors_carry_code_and_message),
      cmocka_unit_test(test_unknown_targets_and_bad_versions_are_refused),
      cmocka_unit_test(test_state_is_made_once_per_call_site_and_deleted_with_the_program),
      cmocka_unit_test(test_thread_pool_tasks_run_and_never_deadlock),
      cmocka_unit_test(test_async_handlers_complete_their_future),
      cmocka_unit_test(test_run_ids_differ_per_run_and_match_within_one),
      cmocka_unit_test(test_handlers_registered_through_the_api_table),
      cmocka_unit_test(test_legacy_custom_calls),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
