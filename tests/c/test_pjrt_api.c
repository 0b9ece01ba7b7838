/* GetPjrtApi, the function table, errors, plugin attributes and argument validation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_pjrt_util.h"
#include "anvil/pjrt_ffi.h"
#include "anvil/pjrt_profiler.h"

static void test_version_and_size(void **state) {
  (void)state;
  assert_int_equal(api->struct_size, PJRT_Api_STRUCT_SIZE);
  assert_int_equal(api->struct_size, 1144); /* 3 header words + 138 entry points on x86-64 */
  assert_int_equal(api->pjrt_api_version.major_version, 0);
  assert_int_equal(api->pjrt_api_version.minor_version, 114);
  assert_int_equal(api->pjrt_api_version.struct_size, PJRT_Api_Version_STRUCT_SIZE);
  /* five extensions: Layouts (executable/buffer/default layouts), Shardings (multi-device
   * executables' parameter/output shardings), Profiler (the plugin profiler API), Custom
   * Partitioner (batch-partitionable FFI targets), then FFI (execution user data, types,
   * handlers) */
  assert_non_null(api->extension_start);
  assert_int_equal(api->extension_start->type, PJRT_Extension_Type_Layouts);
  assert_non_null(api->extension_start->next);
  assert_int_equal(api->extension_start->next->type, PJRT_Extension_Type_Shardings);
  const PJRT_Extension_Base *prof = api->extension_start->next->next;
  assert_non_null(prof);
  assert_int_equal(prof->type, PJRT_Extension_Type_Profiler);
  const PJRT_Extension_Base *part = prof->next;
  assert_non_null(part);
  assert_int_equal(part->type, PJRT_Extension_Type_Custom_Partitioner);
  assert_int_equal(part->struct_size, 5 * sizeof(void *)); /* header + 2 functions */
  const PJRT_Extension_Base *ffi = part->next;
  assert_non_null(ffi);
  assert_int_equal(ffi->type, PJRT_Extension_Type_FFI);
  assert_int_equal(ffi->struct_size, 6 * sizeof(void *)); /* version 2: header + 3 functions */
  const PJRT_FFI_Extension *fe = (const PJRT_FFI_Extension *)ffi;
  assert_true(fe->type_id_register && fe->user_data_add && fe->register_handler);
  assert_null(ffi->next);
  /* callers check the API table's size exactly: 2 words + 8 functions */
  const PJRT_Profiler_Extension *pe = (const PJRT_Profiler_Extension *)prof;
  assert_int_equal(pe->profiler_api->struct_size, 10 * sizeof(void *));
}

/* Every entry point up to struct_size must be callable: the framework calls many without a
 * NULL check. */
static void test_every_slot_non_null(void **state) {
  (void)state;
  const char *base = (const char *)api;
  size_t first = offsetof(PJRT_Api, PJRT_Error_Destroy);
  size_t n = 0;
  for (size_t off = first; off + sizeof(void *) <= api->struct_size; off += sizeof(void *)) {
    void *p;
    memcpy(&p, base + off, sizeof p);
    if (!p) fail_msg("PJRT_Api slot %zu is NULL", (off - first) / sizeof(void *));
    n++;
  }
  assert_int_equal(n, 138);
}

static void test_unimplemented_names_function(void **state) {
  (void)state;
  PJRT_Device_PoisonExecution_Args d = {.struct_size = PJRT_Device_PoisonExecution_Args_STRUCT_SIZE};
  EXPECT_ERROR(api->PJRT_Device_PoisonExecution(&d), PJRT_Error_Code_UNIMPLEMENTED,
               "anvil: PJRT_Device_PoisonExecution is not implemented yet");
  /* Execution contexts (which carry FFI user data: test_ffi_context) and DMA mapping, which
   * has nothing to do on the CPU. */
  PJRT_ExecuteContext_Create_Args ec = {.struct_size = PJRT_ExecuteContext_Create_Args_STRUCT_SIZE};
  CHECK_OK(api->PJRT_ExecuteContext_Create(&ec));
  assert_non_null(ec.context);
  PJRT_ExecuteContext_Destroy_Args ed = {.struct_size = PJRT_ExecuteContext_Destroy_Args_STRUCT_SIZE,
                                         .context = ec.context};
  CHECK_OK(api->PJRT_ExecuteContext_Destroy(&ed));
  PJRT_Client_DmaMap_Args dm = {.struct_size = PJRT_Client_DmaMap_Args_STRUCT_SIZE};
  EXPECT_ERROR(api->PJRT_Client_DmaMap(&dm), PJRT_Error_Code_INVALID_ARGUMENT, "client is NULL");
}

static void test_error_object(void **state) {
  (void)state;
  PJRT_Client_LookupDevice_Args a = {.struct_size = PJRT_Client_LookupDevice_Args_STRUCT_SIZE};
  PJRT_Client *c = make_client(1);
  a.client = c;
  a.id = 7;
  PJRT_Error *e = api->PJRT_Client_LookupDevice(&a);
  assert_non_null(e);
  /* Through the API ... */
  assert_int_equal(err_code(e), PJRT_Error_Code_INVALID_ARGUMENT);
  size_t n;
  const char *m = err_msg(e, &n);
  assert_int_equal(n, strlen("No matching device found for device_id 7"));
  assert_memory_equal(m, "No matching device found for device_id 7", n);
  /* ... and through the vtable, which must agree. */
  assert_non_null(e->vtable);
  assert_int_equal(e->vtable->struct_size, PJRT_Error_FunctionTable_STRUCT_SIZE);
  assert_int_equal(e->vtable->get_code(e), PJRT_Error_Code_INVALID_ARGUMENT);
  const char *vm;
  size_t vn;
  e->vtable->message(e, &vm, &vn);
  assert_int_equal(vn, n);
  assert_ptr_equal(vm, m);
  /* No payloads: the visitor is never called. */
  PJRT_Error_ForEachPayload_Args p = {.struct_size = PJRT_Error_ForEachPayload_Args_STRUCT_SIZE,
                                      .error = e,
                                      .visitor = NULL};
  CHECK_OK(api->PJRT_Error_ForEachPayload(&p));
  e->vtable->destroy(e); /* destroying through the vtable works too */
  destroy_client(c);
}

static void test_plugin_initialize_and_attributes(void **state) {
  (void)state;
  PJRT_Plugin_Initialize_Args init = {.struct_size = PJRT_Plugin_Initialize_Args_SIZE_0_75};
  CHECK_OK(api->PJRT_Plugin_Initialize(&init));
  PJRT_Plugin_Attributes_Args a = {.struct_size = PJRT_Plugin_Attributes_Args_STRUCT_SIZE};
  CHECK_OK(api->PJRT_Plugin_Attributes(&a));
  int seen = 0;
  for (size_t i = 0; i < a.num_attributes; i++) {
    const PJRT_NamedValue *v = &a.attributes[i];
    for (size_t j = 0; j < i; j++)
      assert_false(v->name_size == a.attributes[j].name_size &&
                   memcmp(v->name, a.attributes[j].name, v->name_size) == 0);
    if (v->name_size == 11 && !memcmp(v->name, "xla_version", 11)) {
      assert_int_equal(v->type, PJRT_NamedValue_kInt64);
      assert_int_equal(v->int64_value, 2);
      seen |= 1;
    } else if (v->name_size == 25 && !memcmp(v->name, "stablehlo_current_version", 25)) {
      assert_int_equal(v->type, PJRT_NamedValue_kInt64List);
      assert_int_equal(v->value_size, 3);
      assert_int_equal(v->int64_array_value[0], 1);
      assert_true(v->int64_array_value[1] >= 9);
      seen |= 2;
    } else if (v->name_size == 25 && !memcmp(v->name, "stablehlo_minimum_version", 25)) {
      assert_int_equal(v->type, PJRT_NamedValue_kInt64List);
      assert_int_equal(v->value_size, 3);
      assert_int_equal(v->int64_array_value[0], 0);
      assert_int_equal(v->int64_array_value[1], 9);
      assert_int_equal(v->int64_array_value[2], 0);
      seen |= 4;
    }
  }
  assert_int_equal(seen, 7);
}

static void test_null_args_and_bad_sizes(void **state) {
  (void)state;
  EXPECT_ERROR(api->PJRT_Client_Create(NULL), PJRT_Error_Code_INVALID_ARGUMENT,
               "PJRT_Client_Create: args is NULL");
  EXPECT_ERROR(api->PJRT_Buffer_Delete(NULL), PJRT_Error_Code_INVALID_ARGUMENT, "args is NULL");
  EXPECT_ERROR(api->PJRT_LoadedExecutable_Execute(NULL), PJRT_Error_Code_INVALID_ARGUMENT,
               "args is NULL");
  PJRT_Client_Create_Args small = {.struct_size = 16};
  EXPECT_ERROR(api->PJRT_Client_Create(&small), PJRT_Error_Code_INVALID_ARGUMENT,
               "PJRT_Client_Create_Args size: expected at least 72, got 16");
  PJRT_Client_PlatformName_Args pn = {.struct_size = 0};
  EXPECT_ERROR(api->PJRT_Client_PlatformName(&pn), PJRT_Error_Code_INVALID_ARGUMENT,
               "PJRT_Client_PlatformName_Args");
  /* NULL handles inside well-formed args are errors too, not crashes. */
  PJRT_Client_Devices_Args d = {.struct_size = PJRT_Client_Devices_Args_STRUCT_SIZE};
  EXPECT_ERROR(api->PJRT_Client_Devices(&d), PJRT_Error_Code_INVALID_ARGUMENT, "client is NULL");
  PJRT_Buffer_Dimensions_Args bd = {.struct_size = PJRT_Buffer_Dimensions_Args_STRUCT_SIZE};
  EXPECT_ERROR(api->PJRT_Buffer_Dimensions(&bd), PJRT_Error_Code_INVALID_ARGUMENT, "buffer is NULL");
  PJRT_Event_Await_Args ea = {.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE};
  EXPECT_ERROR(api->PJRT_Event_Await(&ea), PJRT_Error_Code_INVALID_ARGUMENT, "event is NULL");
  /* Destroying NULL objects is a no-op. */
  PJRT_Buffer_Destroy_Args bdes = {.struct_size = PJRT_Buffer_Destroy_Args_STRUCT_SIZE};
  CHECK_OK(api->PJRT_Buffer_Destroy(&bdes));
  PJRT_LoadedExecutable_Destroy_Args ldes = {.struct_size = PJRT_LoadedExecutable_Destroy_Args_STRUCT_SIZE};
  CHECK_OK(api->PJRT_LoadedExecutable_Destroy(&ldes));
  PJRT_Error_Destroy_Args edes = {.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE};
  api->PJRT_Error_Destroy(&edes);
}

/* A 0.75-sized caller (PyTorch/XLA 2.9) is accepted: the sizes of the structs it uses. */
static void test_old_struct_sizes_accepted(void **state) {
  (void)state;
  PJRT_Client_Create_Args a = {.struct_size = PJRT_Client_Create_Args_SIZE_0_75};
  CHECK_OK(api->PJRT_Client_Create(&a));
  PJRT_Client_PlatformName_Args pn = {.struct_size = PJRT_Client_PlatformName_Args_SIZE_0_75,
                                      .client = a.client};
  CHECK_OK(api->PJRT_Client_PlatformName(&pn));
  assert_int_equal(pn.platform_name_size, 5);
  assert_memory_equal(pn.platform_name, "anvil", 5);
  PJRT_Client_PlatformVersion_Args pv = {
      .struct_size = PJRT_Client_PlatformVersion_Args_SIZE_0_75, .client = a.client};
  CHECK_OK(api->PJRT_Client_PlatformVersion(&pv));
  assert_true(pv.platform_version_size > 0);
  PJRT_Client_Destroy_Args d = {.struct_size = PJRT_Client_Destroy_Args_SIZE_0_75,
                                .client = a.client};
  CHECK_OK(api->PJRT_Client_Destroy(&d));
}

/* The oldest supported caller (jaxlib 0.4.35, API 0.55) declares 72 bytes for Client_Create and
 * 24 for Plugin_Attributes (whose struct still has num_attributes, which it reads). */
static void test_oldest_struct_sizes_accepted(void **state) {
  (void)state;
  struct {
    PJRT_Client_Create_Args args;
    unsigned char tail[16];
  } cc;
  memset(&cc, 0xAB, sizeof cc);
  memset(&cc.args, 0, 72);
  cc.args.struct_size = 72;
  CHECK_OK(api->PJRT_Client_Create(&cc.args));
  const unsigned char *p = (const unsigned char *)&cc.args;
  for (size_t i = 72; i < sizeof cc; i++) assert_int_equal(p[i], 0xAB);
  PJRT_Client_Destroy_Args d = {.struct_size = 24, .client = cc.args.client};
  CHECK_OK(api->PJRT_Client_Destroy(&d));
  /* Without ANVIL_STABLEHLO_VERSION, such a caller is told a StableHLO version every jaxlib of
   * API 0.55-0.70 can write (jaxlib 0.4.35 writes at most 1.7.8). */
  if (!getenv("ANVIL_STABLEHLO_VERSION")) {
    PJRT_Plugin_Attributes_Args pa = {.struct_size = 24};
    CHECK_OK(api->PJRT_Plugin_Attributes(&pa));
    assert_int_equal(pa.num_attributes, 3);
    assert_int_equal(pa.attributes[1].value_size, 3);
    assert_int_equal(pa.attributes[1].name_size, strlen("stablehlo_current_version"));
    assert_int_equal(pa.attributes[1].int64_array_value[0], 1);
    assert_int_equal(pa.attributes[1].int64_array_value[1], 7);
    assert_int_equal(pa.attributes[1].int64_array_value[2], 8);
  }
  PJRT_Client_Create_Args small = {.struct_size = 71};
  EXPECT_ERROR(api->PJRT_Client_Create(&small), PJRT_Error_Code_INVALID_ARGUMENT,
               "PJRT_Client_Create_Args size: expected at least 72, got 71");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_version_and_size),
      cmocka_unit_test(test_every_slot_non_null),
      cmocka_unit_test(test_unimplemented_names_function),
      cmocka_unit_test(test_error_object),
      cmocka_unit_test(test_plugin_initialize_and_attributes),
      cmocka_unit_test(test_null_args_and_bad_sizes),
      cmocka_unit_test(test_old_struct_sizes_accepted),
      cmocka_unit_test(test_oldest_struct_sizes_accepted),
  };
  return cmocka_run_group_tests(tests, load_api, NULL);
}
