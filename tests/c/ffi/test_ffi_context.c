/* Execution-context user data, end to end through the PJRT C API as a framework drives it:
 * the plugin is dlopen'd (ANVIL_PLUGIN_PATH), the test finds the FFI extension in the
 * PJRT_Api extension chain, registers a type and an XLA FFI handler written in C against
 * JAX's headers (ffi_handlers.c: user_data, gate) through it, creates a PJRT_ExecuteContext,
 * attaches user data with user_data_add and passes the context in PJRT_ExecuteOptions. The
 * handler reads the data with XLA_FFI_ExecutionContext_Get at the top level, inside a while
 * loop and in a called function, on every device of a replicated and of a partitioned
 * (manual computation) program; without the data it gets NOT_FOUND with the type id. The
 * data's deleter runs only once the caller destroyed the context and the executions given
 * it have ended. Hostile argument structs and contexts are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdatomic.h>
#include <time.h>

#include "test_pjrt_util.h"
#include "test_pjrt_run.h"
#include "anvil/pjrt_ffi.h"
#include "xla/ffi/api/c_api.h"

/* ffi_handlers.c */
XLA_FFI_Error *ffi_test_user_data(XLA_FFI_CallFrame *f);
XLA_FFI_Error *ffi_test_gate(XLA_FFI_CallFrame *f);
extern XLA_FFI_TypeId ffi_test_user_data_type;
extern atomic_int ffi_test_user_data_calls;
extern atomic_int ffi_test_gate_open;

static const PJRT_FFI_Extension *ffi;

static void *fp(XLA_FFI_Error *(*f)(XLA_FFI_CallFrame *)) {
  void *p;
  memcpy(&p, &f, sizeof p);
  return p;
}

static PJRT_Error *register_handler(const char *name, void *handler, int api_version) {
  PJRT_FFI_Register_Handler_Args a = {.struct_size = PJRT_FFI_Register_Handler_Args_STRUCT_SIZE,
                                      .target_name = name,
                                      .target_name_size = strlen(name),
                                      .api_version = api_version,
                                      .handler = handler,
                                      .platform_name = "cpu",
                                      .platform_name_size = 3};
  return ffi->register_handler(&a);
}

static PJRT_Error *register_type(const char *name, int64_t *id) {
  PJRT_FFI_TypeID_Register_Args a = {.struct_size = PJRT_FFI_TypeID_Register_Args_STRUCT_SIZE,
                                     .type_name = name,
                                     .type_name_size = strlen(name),
                                     .type_id = *id};
  PJRT_Error *e = ffi->type_id_register(&a);
  *id = a.type_id;
  return e;
}

static int setup(void **state) {
  if (load_api(state)) return -1;
  for (const PJRT_Extension_Base *e = api->extension_start; e; e = e->next)
    if (e->type == PJRT_Extension_Type_FFI) ffi = (const PJRT_FFI_Extension *)e;
  if (!ffi || ffi->base.struct_size < PJRT_FFI_Extension_STRUCT_SIZE) {
    fprintf(stderr, "no FFI extension (version 2) in the plugin's extension chain\n");
    return -1;
  }
  int64_t id = 0;
  PJRT_Error *e = register_type("ffi_context_test.payload", &id);
  if (!e) e = register_handler("user_data", fp(ffi_test_user_data), 1);
  if (!e) e = register_handler("gate", fp(ffi_test_gate), 1);
  if (e) {
    fprintf(stderr, "%s\n", err_msg(e, NULL));
    return -1;
  }
  ffi_test_user_data_type.type_id = id;
  return 0;
}

static PJRT_ExecuteContext *context_new(void) {
  PJRT_ExecuteContext_Create_Args a = {.struct_size = PJRT_ExecuteContext_Create_Args_STRUCT_SIZE};
  CHECK_OK(api->PJRT_ExecuteContext_Create(&a));
  assert_non_null(a.context);
  return a.context;
}

static PJRT_Error *context_destroy(PJRT_ExecuteContext *c) {
  PJRT_ExecuteContext_Destroy_Args a = {.struct_size = PJRT_ExecuteContext_Destroy_Args_STRUCT_SIZE,
                                        .context = c};
  return api->PJRT_ExecuteContext_Destroy(&a);
}

static PJRT_Error *add(PJRT_ExecuteContext *c, int64_t type_id, void *data, void (*deleter)(void *)) {
  PJRT_FFI_UserData_Add_Args a = {.struct_size = PJRT_FFI_UserData_Add_Args_STRUCT_SIZE,
                                  .context = c,
                                  .user_data = {.type_id = type_id, .data = data, .deleter = deleter}};
  return ffi->user_data_add(&a);
}

/* Compiles MLIR text for replicas x partitions devices (CompileOptionsProto
 * { executable_build_options { num_replicas, num_partitions } }). */
static PJRT_LoadedExecutable *compile(PJRT_Client *c, const char *text, int replicas, int partitions) {
  PJRT_Program prog = {.struct_size = PJRT_Program_STRUCT_SIZE,
                       .code = (char *)text,
                       .code_size = strlen(text),
                       .format = "mlir",
                       .format_size = 4};
  const char opts[6] = {0x1a, 0x04, 0x20, (char)replicas, 0x28, (char)partitions};
  PJRT_Client_Compile_Args a = {.struct_size = PJRT_Client_Compile_Args_STRUCT_SIZE,
                                .client = c,
                                .program = &prog,
                                .compile_options = opts,
                                .compile_options_size = sizeof opts};
  CHECK_OK(api->PJRT_Client_Compile(&a));
  return a.executable;
}

enum { MAX_DEV = 2, MAX_OUT = 3 };

typedef struct launch {
  size_t ndev, nout;
  PJRT_Buffer *out[MAX_DEV][MAX_OUT];
  PJRT_Event *done[MAX_DEV];
} launch;

/* Starts `exe` on its `ndev` devices (args[d]: device d's `nargs` arguments) with options of
 * `options_size` bytes whose context is `ctx`; returns Execute's error. */
static PJRT_Error *start_with(PJRT_LoadedExecutable *exe, size_t ndev, PJRT_Buffer *const *const *args,
                              size_t nargs, size_t nout, PJRT_ExecuteContext *ctx,
                              size_t options_size, launch *l) {
  memset(l, 0, sizeof *l);
  l->ndev = ndev;
  l->nout = nout;
  PJRT_Buffer **lists[MAX_DEV] = {l->out[0], l->out[1]};
  PJRT_ExecuteOptions opts = {.struct_size = options_size, .context = ctx};
  PJRT_LoadedExecutable_Execute_Args a = {
      .struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE,
      .executable = exe,
      .options = &opts,
      .argument_lists = args,
      .num_args = nargs,
      .num_devices = ndev,
      .output_lists = lists,
      .device_complete_events = l->done};
  return api->PJRT_LoadedExecutable_Execute(&a);
}

static PJRT_Error *start(PJRT_LoadedExecutable *exe, size_t ndev, size_t nout,
                         PJRT_ExecuteContext *ctx, size_t options_size, launch *l) {
  PJRT_Buffer *const *no_args[MAX_DEV] = {NULL, NULL};
  return start_with(exe, ndev, no_args, 0, nout, ctx, options_size, l);
}

/* Waits for every device; returns the first error (the others freed); outputs downloaded
 * as s64 into got[dev][out][2] when all succeeded. Destroys the outputs. */
static PJRT_Error *finish(launch *l, int64_t got[MAX_DEV][MAX_OUT][2]) {
  PJRT_Error *first = NULL;
  for (size_t d = 0; d < l->ndev; d++) {
    PJRT_Error *e = run_await(l->done[d]);
    if (e && !first) first = e;
    else if (e) err_free(e);
  }
  for (size_t d = 0; d < l->ndev; d++)
    for (size_t k = 0; k < l->nout; k++) {
      if (!first) {
        unsigned char *bytes = NULL;
        size_t n = 0;
        first = run_download(l->out[d][k], &bytes, &n);
        if (!first) {
          assert_int_equal(n, 2 * sizeof(int64_t));
          memcpy(got[d][k], bytes, n);
        }
        free(bytes);
      }
      run_destroy_buffer(l->out[d][k]);
    }
  return first;
}

static PJRT_Error *run(PJRT_LoadedExecutable *exe, size_t ndev, size_t nout, PJRT_ExecuteContext *ctx,
                       int64_t got[MAX_DEV][MAX_OUT][2]) {
  launch l;
  PJRT_Error *e = start(exe, ndev, nout, ctx, PJRT_ExecuteOptions_STRUCT_SIZE, &l);
  return e ? e : finish(&l, got);
}

/* The handler at the top level, in a called function and in a 3-trip while loop (summed). */
static const char *kEverywhere =
    "func.func private @inner() -> tensor<2xi64> {\n"
    "  %0 = stablehlo.custom_call @user_data() {has_side_effect = true, mhlo.backend_config = {}} : () -> tensor<2xi64>\n"
    "  return %0 : tensor<2xi64>\n"
    "}\n"
    "func.func @main() -> (tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) {\n"
    "  %top = stablehlo.custom_call @user_data() {has_side_effect = true, mhlo.backend_config = {}} : () -> tensor<2xi64>\n"
    "  %called = func.call @inner() : () -> tensor<2xi64>\n"
    "  %i0 = stablehlo.constant dense<0> : tensor<i32>\n"
    "  %one = stablehlo.constant dense<1> : tensor<i32>\n"
    "  %three = stablehlo.constant dense<3> : tensor<i32>\n"
    "  %z = stablehlo.constant dense<0> : tensor<2xi64>\n"
    "  %r:2 = \"stablehlo.while\"(%i0, %z) ({\n"
    "  ^bb0(%i: tensor<i32>, %acc: tensor<2xi64>):\n"
    "    %lt = stablehlo.compare LT, %i, %three : (tensor<i32>, tensor<i32>) -> tensor<i1>\n"
    "    stablehlo.return %lt : tensor<i1>\n"
    "  }, {\n"
    "  ^bb0(%i: tensor<i32>, %acc: tensor<2xi64>):\n"
    "    %v = stablehlo.custom_call @user_data() {has_side_effect = true, mhlo.backend_config = {}} : () -> tensor<2xi64>\n"
    "    %a = stablehlo.add %acc, %v : tensor<2xi64>\n"
    "    %n = stablehlo.add %i, %one : tensor<i32>\n"
    "    stablehlo.return %n, %a : tensor<i32>, tensor<2xi64>\n"
    "  }) : (tensor<i32>, tensor<2xi64>) -> (tensor<i32>, tensor<2xi64>)\n"
    "  return %top, %called, %r#1 : tensor<2xi64>, tensor<2xi64>, tensor<2xi64>\n"
    "}\n";

static void test_handlers_find_the_user_data_everywhere(void **state) {
  (void)state;
  PJRT_Client *c = make_client(1);
  PJRT_LoadedExecutable *exe = compile(c, kEverywhere, 1, 1);
  int64_t payload = 42, other = 7;
  PJRT_ExecuteContext *ctx = context_new();
  CHECK_OK(add(ctx, ffi_test_user_data_type.type_id + 1000, &other, NULL));
  CHECK_OK(add(ctx, ffi_test_user_data_type.type_id, &payload, NULL));
  for (int r = 0; r < 2; r++) {
    int calls = atomic_load(&ffi_test_user_data_calls);
    int64_t got[MAX_DEV][MAX_OUT][2];
    CHECK_OK(run(exe, 1, 3, ctx, got));
    assert_int_equal(got[0][0][0], 42);
    assert_int_equal(got[0][0][1], 0);
    assert_int_equal(got[0][1][0], 42);
    assert_int_equal(got[0][2][0], 3 * 42);
    assert_int_equal(atomic_load(&ffi_test_user_data_calls) - calls, 5);
  }
  CHECK_OK(context_destroy(ctx));
  run_destroy_exe(exe);
  destroy_client(c);
}

static void test_without_the_user_data_the_handler_gets_not_found(void **state) {
  (void)state;
  PJRT_Client *c = make_client(1);
  PJRT_LoadedExecutable *exe = compile(c, kEverywhere, 1, 1);
  char want[128];
  snprintf(want, sizeof want, "User data with type id %lld not found in execution context",
           (long long)ffi_test_user_data_type.type_id);
  int64_t got[MAX_DEV][MAX_OUT][2], other = 7;
  /* no context; a context without that type; a context given by a caller of PJRT 0.55,
   * whose PJRT_ExecuteOptions ends before `context` (never read) */
  EXPECT_ERROR(run(exe, 1, 3, NULL, got), PJRT_Error_Code_NOT_FOUND, want);
  PJRT_ExecuteContext *ctx = context_new();
  CHECK_OK(add(ctx, ffi_test_user_data_type.type_id + 1, &other, NULL));
  EXPECT_ERROR(run(exe, 1, 3, ctx, got), PJRT_Error_Code_NOT_FOUND, want);
  CHECK_OK(context_destroy(ctx));
  ctx = context_new();
  CHECK_OK(add(ctx, ffi_test_user_data_type.type_id, &other, NULL));
  launch l;
  /* (a program that calls a handler ends before Execute returns, with its error) */
  EXPECT_ERROR(start(exe, 1, 3, ctx, offsetof(PJRT_ExecuteOptions, context), &l),
               PJRT_Error_Code_NOT_FOUND, want);
  CHECK_OK(context_destroy(ctx));
  run_destroy_exe(exe);
  destroy_client(c);
}

/* Two replicas: each device's own execution. */
static const char *kReplicated =
    "module @m attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 2 : i32} {\n"
    "  func.func public @main() -> tensor<2xi64> {\n"
    "    %0 = stablehlo.custom_call @user_data() {has_side_effect = true, mhlo.backend_config = {}} : () -> tensor<2xi64>\n"
    "    return %0 : tensor<2xi64>\n"
    "  }\n"
    "}\n";

/* Two partitions: the handler runs inside a manual computation, once per device. The
 * argument's sharding over a second mesh (not a reshape of the first) keeps the partitioner
 * out: the program runs once for both devices, the region on one thread per device. */
static const char *kManual =
    "module @m attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {\n"
    "  sdy.mesh @mesh = <[\"i\"=2]>\n"
    "  sdy.mesh @other = <[\"j\"=2], device_ids=[1, 0]>\n"
    "  func.func public @main(%a: tensor<2xi64> {sdy.sharding = #sdy.sharding<@other, [{\"j\"}]>}) -> (tensor<4xi64> {sdy.sharding = #sdy.sharding<@mesh, [{\"i\"}]>}) {\n"
    "    %0 = sdy.manual_computation() in_shardings=[] out_shardings=[<@mesh, [{\"i\"}]>] "
    "manual_axes={\"i\"} () {\n"
    "      %v = stablehlo.custom_call @user_data() {has_side_effect = true, mhlo.backend_config = {}} : () -> tensor<2xi64>\n"
    "      sdy.return %v : tensor<2xi64>\n"
    "    } : () -> tensor<4xi64>\n"
    "    return %0 : tensor<4xi64>\n"
    "  }\n"
    "}\n";

static void test_every_device_of_a_sharded_execution_finds_it(void **state) {
  (void)state;
  PJRT_Client *c = make_client(2);
  const char *programs[2] = {kReplicated, kManual};
  for (int k = 0; k < 2; k++) {
    PJRT_LoadedExecutable *exe = compile(c, programs[k], k == 0 ? 2 : 1, k == 0 ? 1 : 2);
    /* kManual's argument: each device's shard */
    PJRT_Buffer *shard[MAX_DEV] = {NULL, NULL};
    const run_input in = {.type = PJRT_Buffer_Type_S64, .rank = 1, .dims = {1}};
    for (int d = 0; k == 1 && d < MAX_DEV; d++) CHECK_OK(run_upload(c, client_device(c, d), &in, d, &shard[d]));
    PJRT_Buffer *const *args[MAX_DEV] = {&shard[0], &shard[1]};
    int64_t payload = 1234;
    PJRT_ExecuteContext *ctx = context_new();
    CHECK_OK(add(ctx, ffi_test_user_data_type.type_id, &payload, NULL));
    int64_t got[MAX_DEV][MAX_OUT][2];
    launch l;
    PJRT_Error *e = start_with(exe, 2, args, k == 1, 1, ctx, PJRT_ExecuteOptions_STRUCT_SIZE, &l);
    if (!e) e = finish(&l, got);
    if (e) fail_msg("program %d: %s", k, err_msg(e, NULL));
    for (int d = 0; d < 2; d++) {
      assert_int_equal(got[d][0][0], 1234);
      assert_int_equal(got[d][0][1], d); /* the handler ran on device d */
    }
    CHECK_OK(context_destroy(ctx));
    for (int d = 0; d < MAX_DEV; d++) run_destroy_buffer(shard[d]);
    run_destroy_exe(exe);
  }
  destroy_client(c);
}

/* ---------------------------------------------------------------- lifetime */

static atomic_int deleted;
static void delete_payload(void *p) {
  *(int64_t *)p = -1; /* what a handler would read after the data is gone */
  atomic_fetch_add(&deleted, 1);
}

static const char *kGated =
    "module @m attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 2 : i32} {\n"
    "  func.func public @main() -> tensor<2xi64> {\n"
    "    %g = stablehlo.custom_call @gate() {has_side_effect = true, mhlo.backend_config = {}} : () -> tensor<i32>\n"
    "    %0 = stablehlo.custom_call @user_data(%g) {has_side_effect = true, mhlo.backend_config = {}} : (tensor<i32>) -> tensor<2xi64>\n"
    "    return %0 : tensor<2xi64>\n"
    "  }\n"
    "}\n";

/* jaxlib destroys the context as soon as Execute returns: executions still running keep its
 * data, whose deleter runs after they end. */
static void test_data_outlives_a_context_destroyed_while_running(void **state) {
  (void)state;
  PJRT_Client *c = make_client(2);
  PJRT_LoadedExecutable *exe = compile(c, kGated, 2, 1);
  int64_t payload = 99;
  atomic_store(&deleted, 0);
  atomic_store(&ffi_test_gate_open, 0);
  PJRT_ExecuteContext *ctx = context_new();
  CHECK_OK(add(ctx, ffi_test_user_data_type.type_id, &payload, delete_payload));
  launch l;
  CHECK_OK(start(exe, 2, 1, ctx, PJRT_ExecuteOptions_STRUCT_SIZE, &l));
  CHECK_OK(context_destroy(ctx));
  assert_int_equal(atomic_load(&deleted), 0);
  atomic_store(&ffi_test_gate_open, 1);
  int64_t got[MAX_DEV][MAX_OUT][2];
  CHECK_OK(finish(&l, got));
  assert_int_equal(got[0][0][0], 99);
  assert_int_equal(got[1][0][0], 99);
  /* the jobs drop the context just after their completion events */
  struct timespec ms = {0, 1000000};
  for (int i = 0; i < 10000 && atomic_load(&deleted) == 0; i++) nanosleep(&ms, NULL);
  assert_int_equal(atomic_load(&deleted), 1);
  assert_int_equal(payload, -1);
  /* no execution: Destroy runs the deleter at once */
  payload = 5;
  ctx = context_new();
  CHECK_OK(add(ctx, 77, &payload, delete_payload));
  CHECK_OK(context_destroy(ctx));
  assert_int_equal(atomic_load(&deleted), 2);
  run_destroy_exe(exe);
  destroy_client(c);
}

/* ---------------------------------------------------------------- hostile input */

static void test_bad_arguments_are_refused(void **state) {
  (void)state;
  int64_t x = 1;
  PJRT_ExecuteContext *ctx = context_new();
  /* struct sizes below the extension's */
  PJRT_FFI_UserData_Add_Args ua = {.struct_size = PJRT_FFI_UserData_Add_Args_STRUCT_SIZE - 8,
                                   .context = ctx};
  EXPECT_ERROR(ffi->user_data_add(&ua), PJRT_Error_Code_INVALID_ARGUMENT, "size");
  EXPECT_ERROR(ffi->user_data_add(NULL), PJRT_Error_Code_INVALID_ARGUMENT, "args is NULL");
  PJRT_FFI_TypeID_Register_Args ta = {.struct_size = 16, .type_name = "t", .type_name_size = 1};
  EXPECT_ERROR(ffi->type_id_register(&ta), PJRT_Error_Code_INVALID_ARGUMENT, "size");
  PJRT_FFI_Register_Handler_Args ha = {.struct_size = PJRT_FFI_Register_Handler_Args_STRUCT_SIZE - 4};
  EXPECT_ERROR(ffi->register_handler(&ha), PJRT_Error_Code_INVALID_ARGUMENT, "size");
  /* no context, a pointer that is no context, the same type twice */
  EXPECT_ERROR(add(NULL, 1, &x, NULL), PJRT_Error_Code_INVALID_ARGUMENT, "execute context is NULL");
  int64_t junk[16] = {0};
  EXPECT_ERROR(add((PJRT_ExecuteContext *)junk, 1, &x, NULL), PJRT_Error_Code_INVALID_ARGUMENT,
               "not an execute context");
  CHECK_OK(add(ctx, 5, &x, NULL));
  EXPECT_ERROR(add(ctx, 5, &x, NULL), PJRT_Error_Code_ALREADY_EXISTS,
               "user data with type id 5 already exists");
  /* Execute refuses a context that is not one */
  PJRT_Client *c = make_client(1);
  PJRT_LoadedExecutable *exe = compile(c, kEverywhere, 1, 1);
  launch l;
  EXPECT_ERROR(start(exe, 1, 3, (PJRT_ExecuteContext *)junk, PJRT_ExecuteOptions_STRUCT_SIZE, &l),
               PJRT_Error_Code_INVALID_ARGUMENT, "not an execute context");
  run_destroy_exe(exe);
  destroy_client(c);
  CHECK_OK(context_destroy(ctx));
  /* handlers: names, versions, NULL */
  EXPECT_ERROR(register_handler("h", NULL, 1), PJRT_Error_Code_INVALID_ARGUMENT, "handler of h is NULL");
  EXPECT_ERROR(register_handler("h", fp(ffi_test_user_data), 3), PJRT_Error_Code_INVALID_ARGUMENT,
               "api_version 3");
  EXPECT_ERROR(register_handler("", fp(ffi_test_user_data), 1), PJRT_Error_Code_INVALID_ARGUMENT,
               "target_name");
  PJRT_FFI_Register_Handler_Args hb = {.struct_size = PJRT_FFI_Register_Handler_Args_STRUCT_SIZE,
                                       .target_name = "h",
                                       .target_name_size = 1,
                                       .api_version = 1,
                                       .handler = fp(ffi_test_user_data),
                                       .platform_name = "cuda",
                                       .platform_name_size = 4};
  EXPECT_ERROR(ffi->register_handler(&hb), PJRT_Error_Code_INVALID_ARGUMENT, "not \"cuda\"");
  /* the same name again: the same handler is fine, another one is refused */
  CHECK_OK(register_handler("user_data", fp(ffi_test_user_data), 1));
  EXPECT_ERROR(register_handler("user_data", fp(ffi_test_gate), 1), PJRT_Error_Code_INVALID_ARGUMENT,
               "Duplicate registration");
}

static void test_type_ids_follow_xla_registry_rules(void **state) {
  (void)state;
  int64_t id = 0;
  CHECK_OK(register_type("ffi_context_test.fresh", &id));
  assert_true(id > 0 && id != ffi_test_user_data_type.type_id);
  int64_t again = id;
  CHECK_OK(register_type("ffi_context_test.fresh", &again)); /* the same id: fine */
  assert_int_equal(again, id);
  int64_t zero = 0, other = id + 1;
  EXPECT_ERROR(register_type("ffi_context_test.fresh", &zero), PJRT_Error_Code_INTERNAL,
               "already registered with type id");
  EXPECT_ERROR(register_type("ffi_context_test.fresh", &other), PJRT_Error_Code_INTERNAL,
               "already registered with type id");
  int64_t mine = 1 << 20; /* a caller's own id (jaxlib uses addresses) */
  CHECK_OK(register_type("ffi_context_test.callers_id", &mine));
  assert_int_equal(mine, 1 << 20);
  PJRT_FFI_TypeID_Register_Args bad = {.struct_size = PJRT_FFI_TypeID_Register_Args_STRUCT_SIZE,
                                       .type_name = NULL};
  EXPECT_ERROR(ffi->type_id_register(&bad), PJRT_Error_Code_INVALID_ARGUMENT, "type_name");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_handlers_find_the_user_data_everywhere),
      cmocka_unit_test(test_without_the_user_data_the_handler_gets_not_found),
      cmocka_unit_test(test_every_device_of_a_sharded_execution_finds_it),
      cmocka_unit_test(test_data_outlives_a_context_destroyed_while_running),
      cmocka_unit_test(test_bad_arguments_are_refused),
      cmocka_unit_test(test_type_ids_follow_xla_registry_rules),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
