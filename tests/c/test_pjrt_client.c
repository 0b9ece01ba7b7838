/* Client creation (options, env), devices, memories, topology and their consistency. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_pjrt_util.h"

static size_t num_devices(PJRT_Client *c) {
  PJRT_Client_Devices_Args a = {.struct_size = PJRT_Client_Devices_Args_STRUCT_SIZE, .client = c};
  CHECK_OK(api->PJRT_Client_Devices(&a));
  return a.num_devices;
}

static PJRT_NamedValue int_opt(const char *name, int64_t v) {
  PJRT_NamedValue o = {.struct_size = PJRT_NamedValue_STRUCT_SIZE,
                       .name = name,
                       .name_size = strlen(name),
                       .type = PJRT_NamedValue_kInt64,
                       .int64_value = v,
                       .value_size = 1};
  return o;
}

static PJRT_Error *try_create(const PJRT_NamedValue *opts, size_t n, PJRT_Client **out) {
  PJRT_Client_Create_Args a = {.struct_size = PJRT_Client_Create_Args_STRUCT_SIZE,
                               .create_options = opts,
                               .num_options = n};
  PJRT_Error *e = api->PJRT_Client_Create(&a);
  *out = a.client;
  return e;
}

static void test_device_count_options(void **state) {
  (void)state;
  unsetenv("ANVIL_DEVICE_COUNT");
  PJRT_Client *c;
  CHECK_OK(try_create(NULL, 0, &c));
  assert_int_equal(num_devices(c), 1);
  destroy_client(c);

  c = make_client(4);
  assert_int_equal(num_devices(c), 4);
  destroy_client(c);

  PJRT_NamedValue alias = int_opt("cpu_device_count", 3);
  c = make_client_opts(&alias, 1);
  assert_int_equal(num_devices(c), 3);
  destroy_client(c);
  /* JAX's jax_pjrt_client_create_options="device_count:4" passes a string. */
  PJRT_NamedValue as_string = {.struct_size = PJRT_NamedValue_STRUCT_SIZE,
                               .name = "device_count",
                               .name_size = 12,
                               .type = PJRT_NamedValue_kString,
                               .string_value = "4",
                               .value_size = 1};
  c = make_client_opts(&as_string, 1);
  assert_int_equal(num_devices(c), 4);
  destroy_client(c);

  /* The environment sets the default; an explicit option wins. */
  setenv("ANVIL_DEVICE_COUNT", "5", 1);
  CHECK_OK(try_create(NULL, 0, &c));
  assert_int_equal(num_devices(c), 5);
  destroy_client(c);
  c = make_client(2);
  assert_int_equal(num_devices(c), 2);
  destroy_client(c);
  setenv("ANVIL_DEVICE_COUNT", "zero", 1);
  EXPECT_ERROR(try_create(NULL, 0, &c), PJRT_Error_Code_INVALID_ARGUMENT, "ANVIL_DEVICE_COUNT");
  assert_null(c);
  unsetenv("ANVIL_DEVICE_COUNT");
}

/* ANVIL_CACHE_MB: a size in MiB (0 turns the block cache off); anything else is refused
 * with the variable named. */
static void test_cache_size_env(void **state) {
  (void)state;
  PJRT_Client *c;
  setenv("ANVIL_CACHE_MB", "0", 1);
  CHECK_OK(try_create(NULL, 0, &c));
  destroy_client(c);
  setenv("ANVIL_CACHE_MB", "64", 1);
  CHECK_OK(try_create(NULL, 0, &c));
  destroy_client(c);
  static const char *bad[] = {"-1", "lots", "12MB", "99999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    setenv("ANVIL_CACHE_MB", bad[i], 1);
    EXPECT_ERROR(try_create(NULL, 0, &c), PJRT_Error_Code_INVALID_ARGUMENT, "ANVIL_CACHE_MB");
    assert_null(c);
  }
  unsetenv("ANVIL_CACHE_MB");
}

static void test_bad_create_options(void **state) {
  (void)state;
  PJRT_Client *c;
  PJRT_NamedValue unknown = int_opt("num_gpus", 2);
  EXPECT_ERROR(try_create(&unknown, 1, &c), PJRT_Error_Code_INVALID_ARGUMENT,
               "unknown create option 'num_gpus'");
  assert_null(c);
  PJRT_NamedValue wrong_type = {.struct_size = PJRT_NamedValue_STRUCT_SIZE,
                                .name = "device_count",
                                .name_size = 12,
                                .type = PJRT_NamedValue_kBool,
                                .bool_value = true,
                                .value_size = 1};
  EXPECT_ERROR(try_create(&wrong_type, 1, &c), PJRT_Error_Code_INVALID_ARGUMENT,
               "'device_count' must be an int64");
  PJRT_NamedValue not_int = {.struct_size = PJRT_NamedValue_STRUCT_SIZE,
                             .name = "device_count",
                             .name_size = 12,
                             .type = PJRT_NamedValue_kString,
                             .string_value = "4x",
                             .value_size = 2};
  EXPECT_ERROR(try_create(&not_int, 1, &c), PJRT_Error_Code_INVALID_ARGUMENT,
               "'device_count' = '4x' is not an integer");
  PJRT_NamedValue zero = int_opt("device_count", 0);
  EXPECT_ERROR(try_create(&zero, 1, &c), PJRT_Error_Code_INVALID_ARGUMENT, "out of range");
  PJRT_NamedValue huge = int_opt("device_count", 1 << 30);
  EXPECT_ERROR(try_create(&huge, 1, &c), PJRT_Error_Code_INVALID_ARGUMENT, "out of range");
  EXPECT_ERROR(try_create(NULL, 2, &c), PJRT_Error_Code_INVALID_ARGUMENT, "create_options is NULL");
}

static void test_client_basics(void **state) {
  (void)state;
  PJRT_Client *c = make_client(1);
  PJRT_Client_PlatformName_Args pn = {.struct_size = PJRT_Client_PlatformName_Args_STRUCT_SIZE,
                                      .client = c};
  CHECK_OK(api->PJRT_Client_PlatformName(&pn));
  assert_int_equal(pn.platform_name_size, 5);
  assert_memory_equal(pn.platform_name, "anvil", 5);
  PJRT_Client_PlatformVersion_Args pv = {
      .struct_size = PJRT_Client_PlatformVersion_Args_STRUCT_SIZE, .client = c};
  CHECK_OK(api->PJRT_Client_PlatformVersion(&pv));
  char ver[128];
  snprintf(ver, sizeof ver, "%.*s", (int)pv.platform_version_size, pv.platform_version);
  assert_non_null(strstr(ver, "anvil"));
  assert_non_null(strstr(ver, "0.114"));
  PJRT_Client_ProcessIndex_Args pi = {.struct_size = PJRT_Client_ProcessIndex_Args_STRUCT_SIZE,
                                      .client = c,
                                      .process_index = 99};
  CHECK_OK(api->PJRT_Client_ProcessIndex(&pi));
  assert_int_equal(pi.process_index, 0);
  destroy_client(c);
}

static void test_devices_and_memories_consistent(void **state) {
  (void)state;
  enum { N = 4 };
  PJRT_Client *c = make_client(N);
  PJRT_Client_Devices_Args all = {.struct_size = PJRT_Client_Devices_Args_STRUCT_SIZE, .client = c};
  CHECK_OK(api->PJRT_Client_Devices(&all));
  PJRT_Client_AddressableDevices_Args ad = {
      .struct_size = PJRT_Client_AddressableDevices_Args_STRUCT_SIZE, .client = c};
  CHECK_OK(api->PJRT_Client_AddressableDevices(&ad));
  assert_int_equal(all.num_devices, N);
  assert_int_equal(ad.num_addressable_devices, N);
  PJRT_Client_AddressableMemories_Args am = {
      .struct_size = PJRT_Client_AddressableMemories_Args_STRUCT_SIZE, .client = c};
  CHECK_OK(api->PJRT_Client_AddressableMemories(&am));
  /* each device: its device memory, a pinned host and an unpinned host memory */
  assert_int_equal(am.num_addressable_memories, 3 * N);
  int memory_ids_seen[3 * N] = {0};
  for (size_t m = 0; m < am.num_addressable_memories; m++) {
    PJRT_Memory_Id_Args id = {.struct_size = PJRT_Memory_Id_Args_STRUCT_SIZE,
                              .memory = am.addressable_memories[m]};
    CHECK_OK(api->PJRT_Memory_Id(&id));
    assert_true(id.id >= 0 && id.id < 3 * N);
    memory_ids_seen[id.id]++;
    assert_non_null(am.addressable_memories[m]->vtable);
  }
  for (int i = 0; i < 3 * N; i++) assert_int_equal(memory_ids_seen[i], 1);

  for (int i = 0; i < N; i++) {
    PJRT_Device *d = all.devices[i];
    assert_ptr_equal(d, ad.addressable_devices[i]);
    PJRT_Device_GetDescription_Args gd = {.struct_size = PJRT_Device_GetDescription_Args_STRUCT_SIZE,
                                          .device = d};
    CHECK_OK(api->PJRT_Device_GetDescription(&gd));
    PJRT_DeviceDescription_Id_Args id = {.struct_size = PJRT_DeviceDescription_Id_Args_STRUCT_SIZE,
                                         .device_description = gd.device_description};
    CHECK_OK(api->PJRT_DeviceDescription_Id(&id));
    assert_int_equal(id.id, i);
    PJRT_DeviceDescription_ProcessIndex_Args dpi = {
        .struct_size = PJRT_DeviceDescription_ProcessIndex_Args_STRUCT_SIZE,
        .device_description = gd.device_description};
    CHECK_OK(api->PJRT_DeviceDescription_ProcessIndex(&dpi));
    assert_int_equal(dpi.process_index, 0);
    PJRT_DeviceDescription_Kind_Args k = {.struct_size = PJRT_DeviceDescription_Kind_Args_STRUCT_SIZE,
                                          .device_description = gd.device_description};
    CHECK_OK(api->PJRT_DeviceDescription_Kind(&k));
    assert_true(k.device_kind_size > 0);
    PJRT_DeviceDescription_ToString_Args ts = {
        .struct_size = PJRT_DeviceDescription_ToString_Args_STRUCT_SIZE,
        .device_description = gd.device_description};
    CHECK_OK(api->PJRT_DeviceDescription_ToString(&ts));
    char want[64];
    snprintf(want, sizeof want, "AnvilDevice(id=%d)", i);
    assert_int_equal(ts.to_string_size, strlen(want));
    assert_memory_equal(ts.to_string, want, ts.to_string_size);
    PJRT_DeviceDescription_DebugString_Args ds = {
        .struct_size = PJRT_DeviceDescription_DebugString_Args_STRUCT_SIZE,
        .device_description = gd.device_description};
    CHECK_OK(api->PJRT_DeviceDescription_DebugString(&ds));
    assert_true(ds.debug_string_size > 0);
    /* Only the attribute kinds the framework accepts on devices. */
    PJRT_DeviceDescription_Attributes_Args at = {
        .struct_size = PJRT_DeviceDescription_Attributes_Args_STRUCT_SIZE,
        .device_description = gd.device_description};
    CHECK_OK(api->PJRT_DeviceDescription_Attributes(&at));
    for (size_t a = 0; a < at.num_attributes; a++)
      assert_true(at.attributes[a].type == PJRT_NamedValue_kString ||
                  at.attributes[a].type == PJRT_NamedValue_kInt64 ||
                  at.attributes[a].type == PJRT_NamedValue_kInt64List);
    PJRT_Device_GetAttributes_Args ga = {.struct_size = PJRT_Device_GetAttributes_Args_STRUCT_SIZE,
                                         .device = d};
    CHECK_OK(api->PJRT_Device_GetAttributes(&ga));
    assert_non_null(ga.attributes_deleter);
    ga.attributes_deleter(ga.device_attributes);

    PJRT_Device_IsAddressable_Args ia = {.struct_size = PJRT_Device_IsAddressable_Args_STRUCT_SIZE,
                                         .device = d};
    CHECK_OK(api->PJRT_Device_IsAddressable(&ia));
    assert_true(ia.is_addressable);
    PJRT_Device_LocalHardwareId_Args hw = {.struct_size = PJRT_Device_LocalHardwareId_Args_STRUCT_SIZE,
                                           .device = d};
    CHECK_OK(api->PJRT_Device_LocalHardwareId(&hw));
    assert_int_equal(hw.local_hardware_id, i);

    PJRT_Client_LookupDevice_Args lk = {.struct_size = PJRT_Client_LookupDevice_Args_STRUCT_SIZE,
                                        .client = c,
                                        .id = i};
    CHECK_OK(api->PJRT_Client_LookupDevice(&lk));
    assert_ptr_equal(lk.device, d);
    PJRT_Client_LookupAddressableDevice_Args la = {
        .struct_size = PJRT_Client_LookupAddressableDevice_Args_STRUCT_SIZE,
        .client = c,
        .local_hardware_id = i};
    CHECK_OK(api->PJRT_Client_LookupAddressableDevice(&la));
    assert_ptr_equal(la.addressable_device, d);

    /* Memories: default "device" memory only this device sees, plus shared pinned host. */
    PJRT_Device_DefaultMemory_Args dm = {.struct_size = PJRT_Device_DefaultMemory_Args_STRUCT_SIZE,
                                         .device = d};
    CHECK_OK(api->PJRT_Device_DefaultMemory(&dm));
    PJRT_Memory_Kind_Args mk = {.struct_size = PJRT_Memory_Kind_Args_STRUCT_SIZE, .memory = dm.memory};
    CHECK_OK(api->PJRT_Memory_Kind(&mk));
    assert_int_equal(mk.kind_size, 6);
    assert_memory_equal(mk.kind, "device", 6);
    PJRT_Memory_AddressableByDevices_Args by = {
        .struct_size = PJRT_Memory_AddressableByDevices_Args_STRUCT_SIZE, .memory = dm.memory};
    CHECK_OK(api->PJRT_Memory_AddressableByDevices(&by));
    assert_int_equal(by.num_devices, 1);
    assert_ptr_equal(by.devices[0], d);
    PJRT_Device_AddressableMemories_Args dam = {
        .struct_size = PJRT_Device_AddressableMemories_Args_STRUCT_SIZE, .device = d};
    CHECK_OK(api->PJRT_Device_AddressableMemories(&dam));
    assert_int_equal(dam.num_memories, 3); /* device, pinned_host, unpinned_host */
    assert_ptr_equal(dam.memories[0], dm.memory);
    PJRT_Memory_Kind_Args hk = {.struct_size = PJRT_Memory_Kind_Args_STRUCT_SIZE,
                                .memory = dam.memories[1]};
    CHECK_OK(api->PJRT_Memory_Kind(&hk));
    assert_int_equal(hk.kind_size, 11);
    assert_memory_equal(hk.kind, "pinned_host", 11);
    PJRT_Memory_AddressableByDevices_Args hby = {
        .struct_size = PJRT_Memory_AddressableByDevices_Args_STRUCT_SIZE, .memory = dam.memories[1]};
    CHECK_OK(api->PJRT_Memory_AddressableByDevices(&hby));
    assert_int_equal(hby.num_devices, 1); /* each device has host memories of its own */
    assert_ptr_equal(hby.devices[0], d);
    PJRT_Memory_Kind_Id_Args k1 = {.struct_size = PJRT_Memory_Kind_Id_Args_STRUCT_SIZE,
                                   .memory = dam.memories[0]};
    PJRT_Memory_Kind_Id_Args k2 = {.struct_size = PJRT_Memory_Kind_Id_Args_STRUCT_SIZE,
                                   .memory = dam.memories[1]};
    CHECK_OK(api->PJRT_Memory_Kind_Id(&k1));
    CHECK_OK(api->PJRT_Memory_Kind_Id(&k2));
    assert_int_not_equal(k1.kind_id, k2.kind_id);
    PJRT_Memory_ToString_Args mts = {.struct_size = PJRT_Memory_ToString_Args_STRUCT_SIZE,
                                     .memory = dm.memory};
    CHECK_OK(api->PJRT_Memory_ToString(&mts));
    assert_true(mts.to_string_size > 0);
    PJRT_Memory_DebugString_Args mds = {.struct_size = PJRT_Memory_DebugString_Args_STRUCT_SIZE,
                                        .memory = dm.memory};
    CHECK_OK(api->PJRT_Memory_DebugString(&mds));
    assert_true(mds.debug_string_size > 0);
  }
  PJRT_Client_LookupDevice_Args bad = {.struct_size = PJRT_Client_LookupDevice_Args_STRUCT_SIZE,
                                       .client = c,
                                       .id = -1};
  EXPECT_ERROR(api->PJRT_Client_LookupDevice(&bad), PJRT_Error_Code_INVALID_ARGUMENT,
               "No matching device found for device_id -1");
  bad.id = N;
  EXPECT_ERROR(api->PJRT_Client_LookupDevice(&bad), PJRT_Error_Code_INVALID_ARGUMENT,
               "No matching device found for device_id 4");
  destroy_client(c);
}

static int deleter_calls;
static void count_deleter(void *p) {
  deleter_calls++;
  free(p);
}

static void test_memory_user_data(void **state) {
  (void)state;
  PJRT_Client *c = make_client(2);
  PJRT_Client_AddressableMemories_Args am = {
      .struct_size = PJRT_Client_AddressableMemories_Args_STRUCT_SIZE, .client = c};
  CHECK_OK(api->PJRT_Client_AddressableMemories(&am));
  PJRT_Memory *m = am.addressable_memories[0];
  static const int key1 = 0, key2 = 0;
  deleter_calls = 0;
  assert_null(m->vtable->get_user_data(m, &key1));
  m->vtable->set_user_data(m, &key1, malloc(8), count_deleter);
  m->vtable->set_user_data(m, &key2, malloc(8), count_deleter);
  void *third = malloc(8);
  m->vtable->set_user_data(m, &key1, third, count_deleter); /* replaces: old one deleted */
  assert_int_equal(deleter_calls, 1);
  assert_ptr_equal(m->vtable->get_user_data(m, &key1), third);
  assert_non_null(m->vtable->get_user_data(m, &key2));
  assert_null(am.addressable_memories[1]->vtable->get_user_data(am.addressable_memories[1], &key1));
  destroy_client(c);
  assert_int_equal(deleter_calls, 3); /* the rest at client destruction */
}

static void test_default_device_assignment(void **state) {
  (void)state;
  PJRT_Client *c = make_client(4);
  int out[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
  PJRT_Client_DefaultDeviceAssignment_Args a = {
      .struct_size = PJRT_Client_DefaultDeviceAssignment_Args_STRUCT_SIZE,
      .client = c,
      .num_replicas = 2,
      .num_partitions = 2,
      .default_assignment_size = 8,
      .default_assignment = out};
  CHECK_OK(api->PJRT_Client_DefaultDeviceAssignment(&a));
  for (int i = 0; i < 4; i++) assert_int_equal(out[i], i);
  a.num_replicas = 4;
  a.default_assignment_size = 7;
  EXPECT_ERROR(api->PJRT_Client_DefaultDeviceAssignment(&a), PJRT_Error_Code_FAILED_PRECONDITION,
               "PJRT_Client_DefaultDeviceAssignment: `default_assignment_size` 7 < `num_replicas "
               "* num_partitions`, 4 * 2 = 8");
  a.num_replicas = 65536;
  a.num_partitions = 65537;
  a.default_assignment_size = 65536;
  EXPECT_ERROR(api->PJRT_Client_DefaultDeviceAssignment(&a), PJRT_Error_Code_FAILED_PRECONDITION,
               "65536 * 65537 = 4295032832");
  a.num_replicas = -1;
  EXPECT_ERROR(api->PJRT_Client_DefaultDeviceAssignment(&a), PJRT_Error_Code_INVALID_ARGUMENT,
               "must be positive, got -1 and 65537");
  destroy_client(c);
}

static void test_topology(void **state) {
  (void)state;
  PJRT_Client *c = make_client(3);
  PJRT_Client_TopologyDescription_Args t = {
      .struct_size = PJRT_Client_TopologyDescription_Args_STRUCT_SIZE, .client = c};
  CHECK_OK(api->PJRT_Client_TopologyDescription(&t));
  assert_non_null(t.topology);
  PJRT_TopologyDescription_PlatformName_Args pn = {
      .struct_size = PJRT_TopologyDescription_PlatformName_Args_STRUCT_SIZE, .topology = t.topology};
  CHECK_OK(api->PJRT_TopologyDescription_PlatformName(&pn));
  assert_int_equal(pn.platform_name_size, 5);
  assert_memory_equal(pn.platform_name, "anvil", 5);
  PJRT_TopologyDescription_PlatformVersion_Args pv = {
      .struct_size = PJRT_TopologyDescription_PlatformVersion_Args_STRUCT_SIZE, .topology = t.topology};
  CHECK_OK(api->PJRT_TopologyDescription_PlatformVersion(&pv));
  assert_true(pv.platform_version_size > 0);
  PJRT_TopologyDescription_GetDeviceDescriptions_Args dd = {
      .struct_size = PJRT_TopologyDescription_GetDeviceDescriptions_Args_STRUCT_SIZE,
      .topology = t.topology};
  CHECK_OK(api->PJRT_TopologyDescription_GetDeviceDescriptions(&dd));
  assert_int_equal(dd.num_descriptions, 3);
  for (int i = 0; i < 3; i++) {
    PJRT_DeviceDescription_Id_Args id = {.struct_size = PJRT_DeviceDescription_Id_Args_STRUCT_SIZE,
                                         .device_description = dd.descriptions[i]};
    CHECK_OK(api->PJRT_DeviceDescription_Id(&id));
    assert_int_equal(id.id, i);
  }
  PJRT_TopologyDescription_Attributes_Args at = {
      .struct_size = PJRT_TopologyDescription_Attributes_Args_STRUCT_SIZE, .topology = t.topology};
  CHECK_OK(api->PJRT_TopologyDescription_Attributes(&at));
  /* Serialize and read back: same device count. */
  PJRT_TopologyDescription_Serialize_Args ser = {
      .struct_size = PJRT_TopologyDescription_Serialize_Args_STRUCT_SIZE, .topology = t.topology};
  CHECK_OK(api->PJRT_TopologyDescription_Serialize(&ser));
  PJRT_TopologyDescription_Deserialize_Args de = {
      .struct_size = PJRT_TopologyDescription_Deserialize_Args_STRUCT_SIZE,
      .serialized_topology = ser.serialized_bytes,
      .serialized_topology_size = ser.serialized_bytes_size};
  CHECK_OK(api->PJRT_TopologyDescription_Deserialize(&de));
  ser.serialized_topology_deleter(ser.serialized_topology);
  PJRT_TopologyDescription_GetDeviceDescriptions_Args dd2 = {
      .struct_size = PJRT_TopologyDescription_GetDeviceDescriptions_Args_STRUCT_SIZE,
      .topology = de.topology};
  CHECK_OK(api->PJRT_TopologyDescription_GetDeviceDescriptions(&dd2));
  assert_int_equal(dd2.num_descriptions, 3);
  PJRT_TopologyDescription_Destroy_Args dd2d = {
      .struct_size = PJRT_TopologyDescription_Destroy_Args_STRUCT_SIZE, .topology = de.topology};
  CHECK_OK(api->PJRT_TopologyDescription_Destroy(&dd2d));
  de.serialized_topology = "garbage";
  de.serialized_topology_size = 7;
  EXPECT_ERROR(api->PJRT_TopologyDescription_Deserialize(&de), PJRT_Error_Code_INVALID_ARGUMENT,
               "not a serialized anvil topology");
  PJRT_TopologyDescription_GetMemorySpaceKindIds_Args kinds = {
      .struct_size = PJRT_TopologyDescription_GetMemorySpaceKindIds_Args_STRUCT_SIZE,
      .topology = t.topology};
  CHECK_OK(api->PJRT_TopologyDescription_GetMemorySpaceKindIds(&kinds));
  assert_int_equal(kinds.num_memory_space_kind_ids, 3); /* device, pinned_host, unpinned_host */
  assert_int_not_equal(kinds.memory_space_kind_ids[0], kinds.memory_space_kind_ids[1]);
  /* Client-owned: destroying it is harmless. */
  PJRT_TopologyDescription_Destroy_Args td = {
      .struct_size = PJRT_TopologyDescription_Destroy_Args_STRUCT_SIZE, .topology = t.topology};
  CHECK_OK(api->PJRT_TopologyDescription_Destroy(&td));
  destroy_client(c);
}

static void test_standalone_topology(void **state) {
  (void)state;
  PJRT_NamedValue opt = int_opt("device_count", 3);
  PJRT_TopologyDescription_Create_Args tc = {
      .struct_size = PJRT_TopologyDescription_Create_Args_STRUCT_SIZE,
      .create_options = &opt,
      .num_options = 1};
  CHECK_OK(api->PJRT_TopologyDescription_Create(&tc));
  PJRT_TopologyDescription_GetDeviceDescriptions_Args dd = {
      .struct_size = PJRT_TopologyDescription_GetDeviceDescriptions_Args_STRUCT_SIZE,
      .topology = tc.topology};
  CHECK_OK(api->PJRT_TopologyDescription_GetDeviceDescriptions(&dd));
  assert_int_equal(dd.num_descriptions, 3);
  PJRT_DeviceDescription_Id_Args id = {.struct_size = PJRT_DeviceDescription_Id_Args_STRUCT_SIZE,
                                       .device_description = dd.descriptions[2]};
  CHECK_OK(api->PJRT_DeviceDescription_Id(&id));
  assert_int_equal(id.id, 2);
  /* Same fingerprint as a 3-device client's topology, another one for 2 devices. */
  PJRT_TopologyDescription_Fingerprint_Args f1 = {
      .struct_size = PJRT_TopologyDescription_Fingerprint_Args_STRUCT_SIZE, .topology = tc.topology};
  CHECK_OK(api->PJRT_TopologyDescription_Fingerprint(&f1));
  PJRT_Client *c3 = make_client(3), *c2 = make_client(2);
  PJRT_Client_TopologyDescription_Args t3 = {
      .struct_size = PJRT_Client_TopologyDescription_Args_STRUCT_SIZE, .client = c3};
  PJRT_Client_TopologyDescription_Args t2 = {
      .struct_size = PJRT_Client_TopologyDescription_Args_STRUCT_SIZE, .client = c2};
  CHECK_OK(api->PJRT_Client_TopologyDescription(&t3));
  CHECK_OK(api->PJRT_Client_TopologyDescription(&t2));
  PJRT_TopologyDescription_Fingerprint_Args f3 = {
      .struct_size = PJRT_TopologyDescription_Fingerprint_Args_STRUCT_SIZE, .topology = t3.topology};
  PJRT_TopologyDescription_Fingerprint_Args f2 = {
      .struct_size = PJRT_TopologyDescription_Fingerprint_Args_STRUCT_SIZE, .topology = t2.topology};
  CHECK_OK(api->PJRT_TopologyDescription_Fingerprint(&f3));
  CHECK_OK(api->PJRT_TopologyDescription_Fingerprint(&f2));
  assert_true(f1.fingerprint == f3.fingerprint);
  assert_true(f1.fingerprint != f2.fingerprint);
  destroy_client(c3);
  destroy_client(c2);
  PJRT_TopologyDescription_Destroy_Args td = {
      .struct_size = PJRT_TopologyDescription_Destroy_Args_STRUCT_SIZE, .topology = tc.topology};
  CHECK_OK(api->PJRT_TopologyDescription_Destroy(&td));
  PJRT_NamedValue bad = int_opt("chips", 3);
  tc.create_options = &bad;
  EXPECT_ERROR(api->PJRT_TopologyDescription_Create(&tc), PJRT_Error_Code_INVALID_ARGUMENT,
               "PJRT_TopologyDescription_Create: unknown create option 'chips'");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_device_count_options),
      cmocka_unit_test(test_cache_size_env),
      cmocka_unit_test(test_bad_create_options),
      cmocka_unit_test(test_client_basics),
      cmocka_unit_test(test_devices_and_memories_consistent),
      cmocka_unit_test(test_memory_user_data),
      cmocka_unit_test(test_default_device_assignment),
      cmocka_unit_test(test_topology),
      cmocka_unit_test(test_standalone_topology),
  };
  return cmocka_run_group_tests(tests, load_api, NULL);
}
