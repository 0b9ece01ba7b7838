/* anvil-cts: API table, plugin attributes, client life cycle, device and memory topology. */
#include <stdio.h>
#include <string.h>

#include "cts.h"

/* The minor version that added each PJRT_Api slot after the first 90 (from the header). */
static const struct {
  size_t offset;
  int minor;
} kSlotMinor[] = {
    {offsetof(PJRT_Api, PJRT_Executable_OutputDimensions), 29},
    {offsetof(PJRT_Api, PJRT_Buffer_CopyToMemory), 32},
    {offsetof(PJRT_Api, PJRT_Executable_GetCompiledMemoryStats), 40},
    {offsetof(PJRT_Api, PJRT_ExecuteContext_Destroy), 52},
    {offsetof(PJRT_Api, PJRT_AsyncHostToDeviceTransferManager_AddMetadata), 62},
    {offsetof(PJRT_Api, PJRT_Client_CreateUninitializedBuffer), 68},
    {offsetof(PJRT_Api, PJRT_TopologyDescription_Deserialize), 75},
    {offsetof(PJRT_Api, PJRT_Client_CreateErrorBuffer), 82},
    {offsetof(PJRT_Api, PJRT_Event_Set), 89},
    {offsetof(PJRT_Api, PJRT_Client_Load), 95},
    {offsetof(PJRT_Api, PJRT_Error_ForEachPayload), 99},
    {offsetof(PJRT_Api, PJRT_Device_ClearMemoryStats), 106},
    {offsetof(PJRT_Api, PJRT_TopologyDescription_GetMemorySpaceKindIds), 110},
};

CTS_CHECK(cts_api_version) {
  const PJRT_Api *api = t->api;
  if (api->struct_size < offsetof(PJRT_Api, PJRT_Compile) + sizeof(void *))
    return cts_fail(t, "PJRT_Api.struct_size %zu is smaller than the first 90 slots",
                    api->struct_size);
  if (api->pjrt_api_version.struct_size < PJRT_Api_Version_STRUCT_SIZE)
    return cts_fail(t, "pjrt_api_version.struct_size is %zu", api->pjrt_api_version.struct_size);
  int major = api->pjrt_api_version.major_version, minor = api->pjrt_api_version.minor_version;
  if (major != 0 || minor <= 0)
    return cts_fail(t, "reported API version %d.%d is not 0.N", major, minor);
  /* The table must be at least as long as the reported minor version implies. */
  for (size_t i = 0; i < sizeof kSlotMinor / sizeof kSlotMinor[0]; i++)
    if (minor >= kSlotMinor[i].minor && api->struct_size < kSlotMinor[i].offset + sizeof(void *))
      return cts_fail(t, "reports minor %d but PJRT_Api.struct_size %zu lacks the slots of 0.%d",
                      minor, api->struct_size, kSlotMinor[i].minor);
  if (minor > PJRT_API_MINOR)
    cts_note(t, "plugin is newer (0.%d) than this suite (0.%d)", minor, PJRT_API_MINOR);
  return CTS_PASS;
}

CTS_CHECK(cts_api_core_slots) {
  /* Functions a framework calls without checking for NULL. */
#define SLOT(Name) {#Name, offsetof(PJRT_Api, Name)}
  static const struct {
    const char *name;
    size_t offset;
  } core[] = {
      SLOT(PJRT_Error_Destroy), SLOT(PJRT_Error_Message), SLOT(PJRT_Error_GetCode),
      SLOT(PJRT_Plugin_Initialize), SLOT(PJRT_Plugin_Attributes), SLOT(PJRT_Event_Destroy),
      SLOT(PJRT_Event_IsReady), SLOT(PJRT_Event_Error), SLOT(PJRT_Event_Await),
      SLOT(PJRT_Event_OnReady), SLOT(PJRT_Client_Create), SLOT(PJRT_Client_Destroy),
      SLOT(PJRT_Client_PlatformName), SLOT(PJRT_Client_ProcessIndex),
      SLOT(PJRT_Client_PlatformVersion), SLOT(PJRT_Client_Devices),
      SLOT(PJRT_Client_AddressableDevices), SLOT(PJRT_Client_LookupDevice),
      SLOT(PJRT_Client_LookupAddressableDevice), SLOT(PJRT_Client_AddressableMemories),
      SLOT(PJRT_Client_Compile), SLOT(PJRT_Client_BufferFromHostBuffer),
      SLOT(PJRT_DeviceDescription_Id), SLOT(PJRT_DeviceDescription_ProcessIndex),
      SLOT(PJRT_DeviceDescription_Attributes), SLOT(PJRT_DeviceDescription_Kind),
      SLOT(PJRT_DeviceDescription_DebugString), SLOT(PJRT_DeviceDescription_ToString),
      SLOT(PJRT_Device_GetDescription), SLOT(PJRT_Device_IsAddressable),
      SLOT(PJRT_Device_LocalHardwareId), SLOT(PJRT_Device_AddressableMemories),
      SLOT(PJRT_Device_DefaultMemory), SLOT(PJRT_Memory_Id), SLOT(PJRT_Memory_Kind),
      SLOT(PJRT_Memory_DebugString), SLOT(PJRT_Memory_ToString),
      SLOT(PJRT_Memory_AddressableByDevices), SLOT(PJRT_Executable_Destroy),
      SLOT(PJRT_Executable_Name), SLOT(PJRT_Executable_NumOutputs),
      SLOT(PJRT_LoadedExecutable_Destroy), SLOT(PJRT_LoadedExecutable_GetExecutable),
      SLOT(PJRT_LoadedExecutable_AddressableDevices), SLOT(PJRT_LoadedExecutable_Execute),
      SLOT(PJRT_Buffer_Destroy), SLOT(PJRT_Buffer_ElementType), SLOT(PJRT_Buffer_Dimensions),
      SLOT(PJRT_Buffer_OnDeviceSizeInBytes), SLOT(PJRT_Buffer_Device), SLOT(PJRT_Buffer_Memory),
      SLOT(PJRT_Buffer_Delete), SLOT(PJRT_Buffer_IsDeleted), SLOT(PJRT_Buffer_ToHostBuffer),
      SLOT(PJRT_Buffer_ReadyEvent),
  };
#undef SLOT
  char missing[1500] = "";
  size_t len = 0;
  for (size_t i = 0; i < sizeof core / sizeof core[0]; i++) {
    void *const *slot = (void *const *)((const char *)t->api + core[i].offset);
    if (cts_api_covers(t->api, core[i].offset) && *slot == NULL && len < sizeof missing - 64)
      len += (size_t)snprintf(missing + len, sizeof missing - len, " %s", core[i].name);
  }
  if (len) return cts_fail(t, "NULL slots:%s", missing);
  return CTS_PASS;
}

CTS_CHECK(cts_plugin_initialize_check) {
  /* main.c already called PJRT_Plugin_Initialize once for this process; this checks the slot. */
  CTS_NEED_FN(t, PJRT_Plugin_Initialize);
  return CTS_PASS;
}

static cts_status check_named_values(cts_ctx *t, const PJRT_NamedValue *v, size_t n,
                                     const char *what, bool allow_float_bool) {
  if (n && !v) return cts_fail(t, "%s: %zu attributes but a NULL array", what, n);
  for (size_t i = 0; i < n; i++) {
    if (!v[i].name || v[i].name_size == 0) return cts_fail(t, "%s[%zu]: empty name", what, i);
    for (size_t j = 0; j < i; j++)
      if (v[j].name_size == v[i].name_size && !memcmp(v[j].name, v[i].name, v[i].name_size))
        return cts_fail(t, "%s: duplicate name '%.*s'", what, (int)v[i].name_size, v[i].name);
    switch (v[i].type) {
      case PJRT_NamedValue_kString:
        if (v[i].value_size && !v[i].string_value)
          return cts_fail(t, "%s '%.*s': NULL string", what, (int)v[i].name_size, v[i].name);
        break;
      case PJRT_NamedValue_kInt64List:
        if (v[i].value_size && !v[i].int64_array_value)
          return cts_fail(t, "%s '%.*s': NULL int64 list", what, (int)v[i].name_size, v[i].name);
        break;
      case PJRT_NamedValue_kInt64:
        break;
      case PJRT_NamedValue_kFloat:
      case PJRT_NamedValue_kBool:
        if (!allow_float_bool) /* jaxlib aborts on these for device attributes */
          return cts_fail(t, "%s '%.*s': type %d is not allowed here (string/int64/int64 list)",
                          what, (int)v[i].name_size, v[i].name, (int)v[i].type);
        break;
      default:
        return cts_fail(t, "%s '%.*s': invalid type %d", what, (int)v[i].name_size, v[i].name,
                        (int)v[i].type);
    }
  }
  return CTS_PASS;
}

CTS_CHECK(cts_plugin_attributes) {
  CTS_NEED_FN(t, PJRT_Plugin_Attributes);
  PJRT_Plugin_Attributes_Args a = {.struct_size = PJRT_Plugin_Attributes_Args_STRUCT_SIZE};
  CTS_TRY(cts_err(t, t->api->PJRT_Plugin_Attributes(&a), "PJRT_Plugin_Attributes"));
  CTS_TRY(check_named_values(t, a.attributes, a.num_attributes, "plugin attribute", true));
  bool has_current = false;
  for (size_t i = 0; i < a.num_attributes; i++) {
    const PJRT_NamedValue *v = &a.attributes[i];
    bool versioned = (v->name_size == 25 && !memcmp(v->name, "stablehlo_current_version", 25)) ||
                     (v->name_size == 25 && !memcmp(v->name, "stablehlo_minimum_version", 25));
    if (versioned) {
      has_current |= !memcmp(v->name, "stablehlo_current_version", 25);
      if (v->type != PJRT_NamedValue_kInt64List || v->value_size != 3)
        return cts_fail(t, "%.*s must be an int64 list of 3 (major, minor, patch)",
                        (int)v->name_size, v->name);
      for (int k = 0; k < 3; k++)
        if (v->int64_array_value[k] < 0) return cts_fail(t, "%.*s has a negative part",
                                                         (int)v->name_size, v->name);
    }
  }
  if (!has_current)
    cts_note(t, "no stablehlo_current_version attribute (frameworks then assume an old target)");
  return CTS_PASS;
}

CTS_CHECK(cts_client_create_destroy) {
  CTS_NEED_FN(t, PJRT_Client_Create);
  CTS_NEED_FN(t, PJRT_Client_Destroy);
  PJRT_Client_Create_Args a = {.struct_size = PJRT_Client_Create_Args_STRUCT_SIZE};
  PJRT_Error *e = t->api->PJRT_Client_Create(&a);
  if (e) {
    /* Not a conformance failure by itself (e.g. no GPU on this machine), but nothing that needs
     * a client can run. */
    char text[1024];
    PJRT_Error_Code code = cts_error_code(t, e);
    cts_error_text(t, e, text, sizeof text);
    cts_error_free(t, e);
    if (code == PJRT_Error_Code_OK)
      return cts_fail(t, "PJRT_Client_Create returned an error object with code OK: %s", text);
    return cts_skip(t, "PJRT_Client_Create failed (no usable device here?): %s", text);
  }
  if (!a.client) return cts_fail(t, "PJRT_Client_Create returned success and a NULL client");
  PJRT_Client_Destroy_Args d = {.struct_size = PJRT_Client_Destroy_Args_STRUCT_SIZE,
                                .client = a.client};
  return cts_err(t, t->api->PJRT_Client_Destroy(&d), "PJRT_Client_Destroy");
}

CTS_CHECK(cts_client_twice) {
  PJRT_Client *c1, *c2;
  CTS_TRY(cts_client_create(t, &c1));
  cts_status s = cts_client_create(t, &c2);
  if (s != CTS_PASS) return s;
  if (c1 == c2) return cts_fail(t, "two live clients share one handle");
  PJRT_Device *const *d1, *const *d2;
  size_t n1, n2;
  CTS_TRY(cts_addressable_devices(t, c1, &d1, &n1));
  CTS_TRY(cts_addressable_devices(t, c2, &d2, &n2));
  if (n1 != n2) return cts_fail(t, "two clients see %zu and %zu devices", n1, n2);
  cts_client_destroy(t, c1);
  /* The second client must survive the first one's destruction. */
  float v[4] = {1, 2, 3, 4};
  PJRT_Buffer *b;
  CTS_TRY(cts_f32_buffer(t, c2, d2[0], v, 4, &b));
  CTS_TRY(cts_expect_f32(t, b, v, 4, "buffer of the 2nd client"));
  cts_buffer_destroy(t, b);
  cts_client_destroy(t, c2);
  PJRT_Client *c3; /* and creating one again after both are gone works */
  CTS_TRY(cts_client_create(t, &c3));
  cts_client_destroy(t, c3);
  return CTS_PASS;
}

CTS_CHECK(cts_client_unknown_option) {
  /* An unknown create option must give a clean error or be ignored; never a crash. */
  PJRT_NamedValue opt = {.struct_size = PJRT_NamedValue_STRUCT_SIZE,
                         .name = "anvil_cts_no_such_option", .name_size = 24,
                         .type = PJRT_NamedValue_kInt64, .int64_value = 7, .value_size = 1};
  PJRT_Client_Create_Args a = {.struct_size = PJRT_Client_Create_Args_STRUCT_SIZE,
                               .create_options = &opt, .num_options = 1};
  PJRT_Error *e = t->api->PJRT_Client_Create(&a);
  if (e) {
    CTS_TRY(cts_expect_error(t, e, "unknown option"));
    cts_note(t, "unknown option rejected");
    return CTS_PASS;
  }
  if (!a.client) return cts_fail(t, "success and a NULL client");
  PJRT_Device *const *d;
  size_t n;
  CTS_TRY(cts_addressable_devices(t, a.client, &d, &n));
  cts_client_destroy(t, a.client);
  cts_note(t, "unknown option ignored");
  return CTS_PASS;
}

CTS_CHECK(cts_client_platform) {
  CTS_NEED_FN(t, PJRT_Client_PlatformName);
  CTS_NEED_FN(t, PJRT_Client_PlatformVersion);
  CTS_NEED_FN(t, PJRT_Client_ProcessIndex);
  PJRT_Client *c;
  CTS_TRY(cts_client_create(t, &c));
  PJRT_Client_PlatformName_Args n = {.struct_size = PJRT_Client_PlatformName_Args_STRUCT_SIZE,
                                     .client = c};
  CTS_TRY(cts_err(t, t->api->PJRT_Client_PlatformName(&n), "PJRT_Client_PlatformName"));
  if (!n.platform_name || n.platform_name_size == 0) return cts_fail(t, "empty platform name");
  PJRT_Client_PlatformVersion_Args v = {
      .struct_size = PJRT_Client_PlatformVersion_Args_STRUCT_SIZE, .client = c};
  CTS_TRY(cts_err(t, t->api->PJRT_Client_PlatformVersion(&v), "PJRT_Client_PlatformVersion"));
  if (v.platform_version_size && !v.platform_version)
    return cts_fail(t, "platform version has a size but a NULL pointer");
  PJRT_Client_ProcessIndex_Args p = {.struct_size = PJRT_Client_ProcessIndex_Args_STRUCT_SIZE,
                                     .client = c};
  CTS_TRY(cts_err(t, t->api->PJRT_Client_ProcessIndex(&p), "PJRT_Client_ProcessIndex"));
  if (p.process_index != 0)
    return cts_fail(t, "process index %d in a single-process client", p.process_index);
  cts_note(t, "platform '%.*s' version '%.*s'", (int)n.platform_name_size, n.platform_name,
           (int)v.platform_version_size, v.platform_version ? v.platform_version : "");
  cts_client_destroy(t, c);
  return CTS_PASS;
}

static cts_status description(cts_ctx *t, PJRT_Device *d, PJRT_DeviceDescription **out) {
  PJRT_Device_GetDescription_Args g = {.struct_size = PJRT_Device_GetDescription_Args_STRUCT_SIZE,
                                       .device = d};
  CTS_TRY(cts_err(t, t->api->PJRT_Device_GetDescription(&g), "PJRT_Device_GetDescription"));
  if (!g.device_description) return cts_fail(t, "NULL device description");
  *out = g.device_description;
  return CTS_PASS;
}

CTS_CHECK(cts_client_devices) {
  CTS_NEED_FN(t, PJRT_Client_Devices);
  CTS_NEED_FN(t, PJRT_Device_IsAddressable);
  PJRT_Client *c;
  CTS_TRY(cts_client_create(t, &c));
  PJRT_Client_Devices_Args a = {.struct_size = PJRT_Client_Devices_Args_STRUCT_SIZE, .client = c};
  CTS_TRY(cts_err(t, t->api->PJRT_Client_Devices(&a), "PJRT_Client_Devices"));
  if (a.num_devices == 0 || !a.devices) return cts_fail(t, "no devices");
  PJRT_Device *const *ad;
  size_t nad;
  CTS_TRY(cts_addressable_devices(t, c, &ad, &nad));
  if (nad > a.num_devices) return cts_fail(t, "more addressable devices than devices");
  int ids[1024];
  size_t n = a.num_devices < 1024 ? a.num_devices : 1024;
  for (size_t i = 0; i < n; i++) {
    CTS_TRY(cts_device_id(t, a.devices[i], &ids[i]));
    if (ids[i] < 0) return cts_fail(t, "device %zu has negative id %d", i, ids[i]);
    for (size_t j = 0; j < i; j++)
      if (ids[j] == ids[i]) return cts_fail(t, "devices %zu and %zu share id %d", j, i, ids[i]);
    bool listed = false;
    for (size_t k = 0; k < nad; k++) listed |= ad[k] == a.devices[i];
    PJRT_Device_IsAddressable_Args ia = {.struct_size = PJRT_Device_IsAddressable_Args_STRUCT_SIZE,
                                         .device = a.devices[i]};
    CTS_TRY(cts_err(t, t->api->PJRT_Device_IsAddressable(&ia), "PJRT_Device_IsAddressable"));
    if (ia.is_addressable != listed)
      return cts_fail(t, "device id %d: IsAddressable=%d but %s the addressable list", ids[i],
                      ia.is_addressable, listed ? "in" : "not in");
  }
  for (size_t k = 0; k < nad; k++) {
    bool found = false;
    for (size_t i = 0; i < a.num_devices; i++) found |= ad[k] == a.devices[i];
    if (!found) return cts_fail(t, "addressable device %zu is not in PJRT_Client_Devices", k);
  }
  cts_note(t, "%zu devices, %zu addressable", a.num_devices, nad);
  cts_client_destroy(t, c);
  return CTS_PASS;
}

CTS_CHECK(cts_client_lookup_device) {
  CTS_NEED_FN(t, PJRT_Client_LookupDevice);
  CTS_NEED_FN(t, PJRT_Client_LookupAddressableDevice);
  CTS_NEED_FN(t, PJRT_Device_LocalHardwareId);
  PJRT_Client *c;
  CTS_TRY(cts_client_create(t, &c));
  PJRT_Device *const *ad;
  size_t nad;
  CTS_TRY(cts_addressable_devices(t, c, &ad, &nad));
  for (size_t i = 0; i < nad; i++) {
    int id;
    CTS_TRY(cts_device_id(t, ad[i], &id));
    PJRT_Client_LookupDevice_Args l = {.struct_size = PJRT_Client_LookupDevice_Args_STRUCT_SIZE,
                                       .client = c, .id = id};
    CTS_TRY(cts_err(t, t->api->PJRT_Client_LookupDevice(&l), "PJRT_Client_LookupDevice"));
    if (l.device != ad[i]) return cts_fail(t, "LookupDevice(%d) gave another device", id);
    PJRT_Device_LocalHardwareId_Args h = {
        .struct_size = PJRT_Device_LocalHardwareId_Args_STRUCT_SIZE, .device = ad[i]};
    CTS_TRY(cts_err(t, t->api->PJRT_Device_LocalHardwareId(&h), "PJRT_Device_LocalHardwareId"));
    if (h.local_hardware_id < 0)
      return cts_fail(t, "addressable device %d has local hardware id %d", id, h.local_hardware_id);
    PJRT_Client_LookupAddressableDevice_Args la = {
        .struct_size = PJRT_Client_LookupAddressableDevice_Args_STRUCT_SIZE, .client = c,
        .local_hardware_id = h.local_hardware_id};
    CTS_TRY(cts_err(t, t->api->PJRT_Client_LookupAddressableDevice(&la),
                    "PJRT_Client_LookupAddressableDevice"));
    if (la.addressable_device != ad[i])
      return cts_fail(t, "LookupAddressableDevice(%d) gave another device", h.local_hardware_id);
  }
  cts_client_destroy(t, c);
  return CTS_PASS;
}

static cts_status check_string(cts_ctx *t, PJRT_Error *e, const char *const *s, const size_t *n,
                               const char *what) {
  /* s and n are read only after the call has returned (argument order is unspecified). */
  CTS_TRY(cts_err(t, e, what));
  if (!*s || *n == 0) return cts_fail(t, "%s is empty", what);
  return CTS_PASS;
}

CTS_CHECK(cts_device_descriptions) {
  PJRT_Client *c;
  CTS_TRY(cts_client_create(t, &c));
  PJRT_Client_Devices_Args a = {.struct_size = PJRT_Client_Devices_Args_STRUCT_SIZE, .client = c};
  CTS_TRY(cts_err(t, t->api->PJRT_Client_Devices(&a), "PJRT_Client_Devices"));
  for (size_t i = 0; i < a.num_devices; i++) {
    PJRT_DeviceDescription *dd = NULL;
    CTS_TRY(description(t, a.devices[i], &dd));
    PJRT_DeviceDescription_Kind_Args k = {
        .struct_size = PJRT_DeviceDescription_Kind_Args_STRUCT_SIZE, .device_description = dd};
    CTS_TRY(check_string(t, t->api->PJRT_DeviceDescription_Kind(&k),
                         &k.device_kind, &k.device_kind_size, "PJRT_DeviceDescription_Kind"));
    PJRT_DeviceDescription_DebugString_Args ds = {
        .struct_size = PJRT_DeviceDescription_DebugString_Args_STRUCT_SIZE,
        .device_description = dd};
    CTS_TRY(check_string(t, t->api->PJRT_DeviceDescription_DebugString(&ds), &ds.debug_string,
                         &ds.debug_string_size, "PJRT_DeviceDescription_DebugString"));
    PJRT_DeviceDescription_ToString_Args ts = {
        .struct_size = PJRT_DeviceDescription_ToString_Args_STRUCT_SIZE, .device_description = dd};
    CTS_TRY(check_string(t, t->api->PJRT_DeviceDescription_ToString(&ts),
                         &ts.to_string, &ts.to_string_size, "PJRT_DeviceDescription_ToString"));
    PJRT_DeviceDescription_ProcessIndex_Args p = {
        .struct_size = PJRT_DeviceDescription_ProcessIndex_Args_STRUCT_SIZE,
        .device_description = dd};
    CTS_TRY(cts_err(t, t->api->PJRT_DeviceDescription_ProcessIndex(&p),
                    "PJRT_DeviceDescription_ProcessIndex"));
    if (p.process_index != 0) return cts_fail(t, "device process index %d", p.process_index);
    PJRT_DeviceDescription_Attributes_Args at = {
        .struct_size = PJRT_DeviceDescription_Attributes_Args_STRUCT_SIZE,
        .device_description = dd};
    CTS_TRY(cts_err(t, t->api->PJRT_DeviceDescription_Attributes(&at),
                    "PJRT_DeviceDescription_Attributes"));
    CTS_TRY(check_named_values(t, at.attributes, at.num_attributes, "device attribute", false));
    if (i == 0)
      cts_note(t, "device 0: kind '%.*s', '%.*s'", (int)k.device_kind_size, k.device_kind,
               (int)ts.to_string_size, ts.to_string);
  }
  cts_client_destroy(t, c);
  return CTS_PASS;
}

static cts_status device_memories(cts_ctx *t, PJRT_Device *d, PJRT_Memory *const **m, size_t *n) {
  PJRT_Device_AddressableMemories_Args a = {
      .struct_size = PJRT_Device_AddressableMemories_Args_STRUCT_SIZE, .device = d};
  CTS_TRY(cts_err_opt(t, t->api->PJRT_Device_AddressableMemories(&a),
                      "PJRT_Device_AddressableMemories"));
  if (a.num_memories && !a.memories) return cts_fail(t, "NULL memory list");
  *m = a.memories;
  *n = a.num_memories;
  return CTS_PASS;
}

CTS_CHECK(cts_memory_topology) {
  CTS_NEED_FN(t, PJRT_Client_AddressableMemories);
  PJRT_Client *c;
  CTS_TRY(cts_client_create(t, &c));
  PJRT_Client_AddressableMemories_Args a = {
      .struct_size = PJRT_Client_AddressableMemories_Args_STRUCT_SIZE, .client = c};
  CTS_TRY(cts_err_opt(t, t->api->PJRT_Client_AddressableMemories(&a),
                      "PJRT_Client_AddressableMemories"));
  if (a.num_addressable_memories == 0) return cts_unsupported(t, "the client lists no memories");
  int ids[256];
  size_t nm = a.num_addressable_memories < 256 ? a.num_addressable_memories : 256;
  for (size_t i = 0; i < nm; i++) {
    PJRT_Memory *m = a.addressable_memories[i];
    PJRT_Memory_Id_Args id = {.struct_size = PJRT_Memory_Id_Args_STRUCT_SIZE, .memory = m};
    CTS_TRY(cts_err(t, t->api->PJRT_Memory_Id(&id), "PJRT_Memory_Id"));
    ids[i] = id.id;
    for (size_t j = 0; j < i; j++)
      if (ids[j] == ids[i]) return cts_fail(t, "memories %zu and %zu share id %d", j, i, ids[i]);
    PJRT_Memory_Kind_Args k = {.struct_size = PJRT_Memory_Kind_Args_STRUCT_SIZE, .memory = m};
    CTS_TRY(check_string(t, t->api->PJRT_Memory_Kind(&k),
                         &k.kind, &k.kind_size, "PJRT_Memory_Kind"));
    PJRT_Memory_DebugString_Args ds = {.struct_size = PJRT_Memory_DebugString_Args_STRUCT_SIZE,
                                       .memory = m};
    CTS_TRY(check_string(t, t->api->PJRT_Memory_DebugString(&ds),
                         &ds.debug_string, &ds.debug_string_size, "PJRT_Memory_DebugString"));
    PJRT_Memory_ToString_Args ts = {.struct_size = PJRT_Memory_ToString_Args_STRUCT_SIZE,
                                    .memory = m};
    CTS_TRY(check_string(t, t->api->PJRT_Memory_ToString(&ts),
                         &ts.to_string, &ts.to_string_size, "PJRT_Memory_ToString"));
    if (CTS_FN(t, PJRT_Memory_Kind_Id)) {
      PJRT_Memory_Kind_Id_Args ki = {.struct_size = PJRT_Memory_Kind_Id_Args_STRUCT_SIZE,
                                     .memory = m};
      CTS_TRY(cts_err(t, t->api->PJRT_Memory_Kind_Id(&ki), "PJRT_Memory_Kind_Id"));
    }
    /* Inverse relation: every device that can address m lists m among its memories. */
    PJRT_Memory_AddressableByDevices_Args by = {
        .struct_size = PJRT_Memory_AddressableByDevices_Args_STRUCT_SIZE, .memory = m};
    CTS_TRY(cts_err(t, t->api->PJRT_Memory_AddressableByDevices(&by),
                    "PJRT_Memory_AddressableByDevices"));
    if (by.num_devices == 0) return cts_fail(t, "memory id %d is addressable by no device", ids[i]);
    for (size_t j = 0; j < by.num_devices; j++) {
      PJRT_Memory *const *dm;
      size_t ndm;
      CTS_TRY(device_memories(t, by.devices[j], &dm, &ndm));
      bool found = false;
      for (size_t k2 = 0; k2 < ndm; k2++) found |= dm[k2] == m;
      if (!found)
        return cts_fail(t, "memory id %d names a device whose AddressableMemories lack it", ids[i]);
    }
  }
  /* And the other direction: each device's memories name the device. */
  PJRT_Device *const *ad;
  size_t nad;
  CTS_TRY(cts_addressable_devices(t, c, &ad, &nad));
  for (size_t i = 0; i < nad; i++) {
    PJRT_Memory *const *dm;
    size_t ndm;
    CTS_TRY(device_memories(t, ad[i], &dm, &ndm));
    for (size_t k = 0; k < ndm; k++) {
      PJRT_Memory_AddressableByDevices_Args by = {
          .struct_size = PJRT_Memory_AddressableByDevices_Args_STRUCT_SIZE, .memory = dm[k]};
      CTS_TRY(cts_err(t, t->api->PJRT_Memory_AddressableByDevices(&by),
                      "PJRT_Memory_AddressableByDevices"));
      bool found = false;
      for (size_t j = 0; j < by.num_devices; j++) found |= by.devices[j] == ad[i];
      if (!found) return cts_fail(t, "device %zu lists a memory that does not list the device", i);
    }
  }
  cts_note(t, "%zu memories", a.num_addressable_memories);
  cts_client_destroy(t, c);
  return CTS_PASS;
}

CTS_CHECK(cts_device_default_memory) {
  CTS_NEED_FN(t, PJRT_Device_DefaultMemory);
  PJRT_Client *c;
  CTS_TRY(cts_client_create(t, &c));
  PJRT_Device *const *ad;
  size_t nad;
  CTS_TRY(cts_addressable_devices(t, c, &ad, &nad));
  for (size_t i = 0; i < nad; i++) {
    PJRT_Device_DefaultMemory_Args a = {.struct_size = PJRT_Device_DefaultMemory_Args_STRUCT_SIZE,
                                        .device = ad[i]};
    CTS_TRY(cts_err_opt(t, t->api->PJRT_Device_DefaultMemory(&a), "PJRT_Device_DefaultMemory"));
    if (!a.memory) return cts_fail(t, "device %zu: NULL default memory", i);
    PJRT_Memory *const *dm;
    size_t ndm;
    CTS_TRY(device_memories(t, ad[i], &dm, &ndm));
    bool found = false;
    for (size_t k = 0; k < ndm; k++) found |= dm[k] == a.memory;
    if (!found) return cts_fail(t, "device %zu: default memory not among its memories", i);
  }
  cts_client_destroy(t, c);
  return CTS_PASS;
}

CTS_CHECK(cts_device_memory_stats) {
  CTS_WANT_FN(t, PJRT_Device_MemoryStats);
  PJRT_Client *c;
  CTS_TRY(cts_client_create(t, &c));
  PJRT_Device *const *ad;
  size_t nad;
  CTS_TRY(cts_addressable_devices(t, c, &ad, &nad));
  PJRT_Device_MemoryStats_Args a = {.struct_size = PJRT_Device_MemoryStats_Args_STRUCT_SIZE,
                                    .device = ad[0]};
  CTS_TRY(cts_err_opt(t, t->api->PJRT_Device_MemoryStats(&a), "PJRT_Device_MemoryStats"));
  if (a.bytes_in_use < 0) return cts_fail(t, "bytes_in_use %lld", (long long)a.bytes_in_use);
  cts_client_destroy(t, c);
  return CTS_PASS;
}

CTS_CHECK(cts_client_default_assignment) {
  CTS_WANT_FN(t, PJRT_Client_DefaultDeviceAssignment);
  PJRT_Client *c;
  CTS_TRY(cts_client_create(t, &c));
  int out[1] = {-12345};
  PJRT_Client_DefaultDeviceAssignment_Args a = {
      .struct_size = PJRT_Client_DefaultDeviceAssignment_Args_STRUCT_SIZE, .client = c,
      .num_replicas = 1, .num_partitions = 1, .default_assignment_size = 1,
      .default_assignment = out};
  CTS_TRY(cts_err_opt(t, t->api->PJRT_Client_DefaultDeviceAssignment(&a),
                      "PJRT_Client_DefaultDeviceAssignment"));
  PJRT_Client_LookupDevice_Args l = {.struct_size = PJRT_Client_LookupDevice_Args_STRUCT_SIZE,
                                     .client = c, .id = out[0]};
  CTS_TRY(cts_err(t, t->api->PJRT_Client_LookupDevice(&l), "LookupDevice of the assigned id"));
  cts_client_destroy(t, c);
  return CTS_PASS;
}

CTS_CHECK(cts_client_topology) {
  CTS_WANT_FN(t, PJRT_Client_TopologyDescription);
  PJRT_Client *c;
  CTS_TRY(cts_client_create(t, &c));
  PJRT_Client_TopologyDescription_Args a = {
      .struct_size = PJRT_Client_TopologyDescription_Args_STRUCT_SIZE, .client = c};
  CTS_TRY(cts_err_opt(t, t->api->PJRT_Client_TopologyDescription(&a),
                      "PJRT_Client_TopologyDescription"));
  if (!a.topology) return cts_fail(t, "NULL topology");
  /* The topology is owned by the client: compare its platform name, do not destroy it. */
  if (CTS_FN(t, PJRT_TopologyDescription_PlatformName)) {
    PJRT_TopologyDescription_PlatformName_Args tn = {
        .struct_size = PJRT_TopologyDescription_PlatformName_Args_STRUCT_SIZE,
        .topology = a.topology};
    CTS_TRY(cts_err(t, t->api->PJRT_TopologyDescription_PlatformName(&tn),
                    "PJRT_TopologyDescription_PlatformName"));
    PJRT_Client_PlatformName_Args n = {.struct_size = PJRT_Client_PlatformName_Args_STRUCT_SIZE,
                                       .client = c};
    CTS_TRY(cts_err(t, t->api->PJRT_Client_PlatformName(&n), "PJRT_Client_PlatformName"));
    if (tn.platform_name_size != n.platform_name_size ||
        memcmp(tn.platform_name, n.platform_name, n.platform_name_size))
      return cts_fail(t, "topology platform '%.*s' != client platform '%.*s'",
                      (int)tn.platform_name_size, tn.platform_name, (int)n.platform_name_size,
                      n.platform_name);
  }
  cts_client_destroy(t, c);
  return CTS_PASS;
}
