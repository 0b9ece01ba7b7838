/* anvil-cts: old and newer callers, unknown extensions.
 *
 * A framework built against an older header passes smaller argument structs (the struct_size of
 * its own version). The plugin must accept them, read no field past struct_size and write none:
 * every call here places the struct in memory filled with a canary pattern, so a field read past
 * the end is garbage and a write past the end is detected.
 *
 * Sizes of PJRT C API 0.75 (what e.g. PyTorch/XLA 2.9 sends), copied from the 0.75 struct-size
 * table (tests/c/abi_sizes_0_75.inc; this tool stands alone so the values are repeated here).
 * STRUCT_SIZE is offsetof(last field) + its size, without tail padding (hence 25, 28, 185). */
#include <stdio.h>
#include <string.h>

#include "cts.h"

enum {
  V75_Client_Create = 88, V75_Client_Destroy = 24, V75_Client_Devices = 40,
  V75_Client_AddressableDevices = 40, V75_Device_GetDescription = 32, V75_DeviceDescription_Id = 28,
  V75_DeviceDescription_Kind = 40, V75_Device_IsAddressable = 25, V75_Device_LocalHardwareId = 28,
  V75_Device_DefaultMemory = 32, V75_Device_MemoryStats = 185,
  V75_Client_BufferFromHostBuffer = 120, V75_Buffer_ReadyEvent = 32, V75_Event_Await = 24,
  V75_Event_Destroy = 24, V75_Buffer_ToHostBuffer = 56, V75_Buffer_Dimensions = 40,
  V75_Buffer_ElementType = 28, V75_Buffer_IsDeleted = 25, V75_Buffer_OnDeviceSizeInBytes = 32,
  V75_Buffer_Device = 32, V75_Buffer_Destroy = 24, V75_Program = 48, V75_Client_Compile = 56,
  V75_ExecuteOptions = 80, V75_LoadedExecutable_Execute = 80, V75_LoadedExecutable_Destroy = 24,
  V75_Executable_DeserializeAndLoad = 64, V75_Executable_GetCompiledMemoryStats = 112,
};

/* Calls api->Name on a copy of `args` declared `size` bytes long and placed in canary memory;
 * copies the declared part back and FAILs if anything past it changed. Sets `err`. */
#define OLD_CALL(t, Name, Type, args, size, err)                                                  \
  do {                                                                                            \
    CTS_NEED_FN(t, Name);                                                                         \
    _Alignas(16) unsigned char mem_[sizeof(Type) + 64];                                           \
    memset(mem_, CTS_CANARY_BYTE, sizeof mem_);                                                   \
    memcpy(mem_, &(args), (size));                                                                \
    ((Type *)(void *)mem_)->struct_size = (size);                                                 \
    (err) = (t)->api->Name((Type *)(void *)mem_);                                                 \
    if (!cts_canary_intact(mem_, (size), sizeof mem_))                                            \
      return cts_fail((t), #Name " wrote past struct_size %zu", (size_t)(size));                  \
    memcpy(&(args), mem_, (size));                                                                \
  } while (0)

#define OLD_CALL_OK(t, Name, Type, args, size)                                                    \
  do {                                                                                            \
    PJRT_Error *old_err_;                                                                         \
    OLD_CALL(t, Name, Type, args, size, old_err_);                                                \
    char what_[96];                                                                               \
    snprintf(what_, sizeof what_, #Name " with struct_size %zu", (size_t)(size));                 \
    CTS_TRY(cts_err((t), old_err_, what_));                                                       \
  } while (0)

/* A client created through the 0.75 struct, with its first device. */
static cts_status old_client(cts_ctx *t, PJRT_Client **c, PJRT_Device **d) {
  PJRT_Client_Create_Args cc = {0};
  OLD_CALL_OK(t, PJRT_Client_Create, PJRT_Client_Create_Args, cc, V75_Client_Create);
  if (!cc.client) return cts_fail(t, "NULL client");
  *c = cc.client;
  PJRT_Client_AddressableDevices_Args ad = {.client = *c};
  OLD_CALL_OK(t, PJRT_Client_AddressableDevices, PJRT_Client_AddressableDevices_Args, ad,
              V75_Client_AddressableDevices);
  if (ad.num_addressable_devices == 0) return cts_fail(t, "no addressable devices");
  *d = ad.addressable_devices[0];
  return CTS_PASS;
}

static cts_status old_client_destroy(cts_ctx *t, PJRT_Client *c) {
  PJRT_Client_Destroy_Args cd = {.client = c};
  OLD_CALL_OK(t, PJRT_Client_Destroy, PJRT_Client_Destroy_Args, cd, V75_Client_Destroy);
  return CTS_PASS;
}

static cts_status old_await(cts_ctx *t, PJRT_Event *ev) {
  if (!ev) return CTS_PASS;
  PJRT_Event_Await_Args aw = {.event = ev};
  OLD_CALL_OK(t, PJRT_Event_Await, PJRT_Event_Await_Args, aw, V75_Event_Await);
  PJRT_Event_Destroy_Args ed = {.event = ev};
  OLD_CALL_OK(t, PJRT_Event_Destroy, PJRT_Event_Destroy_Args, ed, V75_Event_Destroy);
  return CTS_PASS;
}

static cts_status old_f32_buffer(cts_ctx *t, PJRT_Client *c, PJRT_Device *d, const float *v,
                                 PJRT_Buffer **out) {
  static const int64_t dims[1] = {4};
  PJRT_Client_BufferFromHostBuffer_Args h = {
      .client = c, .data = v, .type = PJRT_Buffer_Type_F32, .dims = dims, .num_dims = 1,
      .host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableOnlyDuringCall, .device = d};
  OLD_CALL_OK(t, PJRT_Client_BufferFromHostBuffer, PJRT_Client_BufferFromHostBuffer_Args, h,
              V75_Client_BufferFromHostBuffer);
  if (!h.buffer) return cts_fail(t, "NULL buffer");
  CTS_TRY(old_await(t, h.done_with_host_buffer));
  *out = h.buffer;
  return CTS_PASS;
}

static cts_status old_expect_f32(cts_ctx *t, PJRT_Buffer *b, const float *want) {
  float got[4];
  PJRT_Buffer_ToHostBuffer_Args th = {.src = b, .dst = got, .dst_size = sizeof got};
  OLD_CALL_OK(t, PJRT_Buffer_ToHostBuffer, PJRT_Buffer_ToHostBuffer_Args, th,
              V75_Buffer_ToHostBuffer);
  CTS_TRY(old_await(t, th.event));
  for (int i = 0; i < 4; i++)
    if (got[i] != want[i]) return cts_fail(t, "element %d is %g, expected %g", i, got[i], want[i]);
  return CTS_PASS;
}

static cts_status old_buffer_destroy(cts_ctx *t, PJRT_Buffer *b) {
  PJRT_Buffer_Destroy_Args bd = {.buffer = b};
  OLD_CALL_OK(t, PJRT_Buffer_Destroy, PJRT_Buffer_Destroy_Args, bd, V75_Buffer_Destroy);
  return CTS_PASS;
}

CTS_CHECK(cts_old_client_and_devices) {
  PJRT_Client *c;
  PJRT_Device *d;
  CTS_TRY(old_client(t, &c, &d));
  PJRT_Client_Devices_Args cd = {.client = c};
  OLD_CALL_OK(t, PJRT_Client_Devices, PJRT_Client_Devices_Args, cd, V75_Client_Devices);
  if (cd.num_devices == 0) return cts_fail(t, "no devices");
  PJRT_Device_GetDescription_Args g = {.device = d};
  OLD_CALL_OK(t, PJRT_Device_GetDescription, PJRT_Device_GetDescription_Args, g,
              V75_Device_GetDescription);
  PJRT_DeviceDescription_Id_Args id = {.device_description = g.device_description};
  OLD_CALL_OK(t, PJRT_DeviceDescription_Id, PJRT_DeviceDescription_Id_Args, id,
              V75_DeviceDescription_Id);
  PJRT_DeviceDescription_Kind_Args k = {.device_description = g.device_description};
  OLD_CALL_OK(t, PJRT_DeviceDescription_Kind, PJRT_DeviceDescription_Kind_Args, k,
              V75_DeviceDescription_Kind);
  if (!k.device_kind || !k.device_kind_size) return cts_fail(t, "empty device kind");
  PJRT_Device_IsAddressable_Args ia = {.device = d};
  OLD_CALL_OK(t, PJRT_Device_IsAddressable, PJRT_Device_IsAddressable_Args, ia,
              V75_Device_IsAddressable);
  if (!ia.is_addressable) return cts_fail(t, "addressable device says it is not");
  PJRT_Device_LocalHardwareId_Args hw = {.device = d};
  OLD_CALL_OK(t, PJRT_Device_LocalHardwareId, PJRT_Device_LocalHardwareId_Args, hw,
              V75_Device_LocalHardwareId);
  PJRT_Device_DefaultMemory_Args dm = {.device = d};
  OLD_CALL_OK(t, PJRT_Device_DefaultMemory, PJRT_Device_DefaultMemory_Args, dm,
              V75_Device_DefaultMemory);
  return old_client_destroy(t, c);
}

CTS_CHECK(cts_old_memory_stats) {
  /* 0.75's MemoryStats ends at peak_pool_bytes_is_set; later fields must stay untouched. */
  CTS_WANT_FN(t, PJRT_Device_MemoryStats);
  PJRT_Client *c;
  PJRT_Device *d;
  CTS_TRY(old_client(t, &c, &d));
  PJRT_Device_MemoryStats_Args ms = {.device = d};
  PJRT_Error *e;
  OLD_CALL(t, PJRT_Device_MemoryStats, PJRT_Device_MemoryStats_Args, ms, V75_Device_MemoryStats, e);
  CTS_TRY(cts_err_opt(t, e, "PJRT_Device_MemoryStats with struct_size 185"));
  return old_client_destroy(t, c);
}

CTS_CHECK(cts_old_buffer_roundtrip) {
  PJRT_Client *c;
  PJRT_Device *d;
  CTS_TRY(old_client(t, &c, &d));
  const float v[4] = {3, 1, 4, 1};
  PJRT_Buffer *b;
  CTS_TRY(old_f32_buffer(t, c, d, v, &b));
  PJRT_Buffer_ReadyEvent_Args r = {.buffer = b};
  OLD_CALL_OK(t, PJRT_Buffer_ReadyEvent, PJRT_Buffer_ReadyEvent_Args, r, V75_Buffer_ReadyEvent);
  CTS_TRY(old_await(t, r.event));
  CTS_TRY(old_expect_f32(t, b, v));
  PJRT_Buffer_Dimensions_Args dm = {.buffer = b};
  OLD_CALL_OK(t, PJRT_Buffer_Dimensions, PJRT_Buffer_Dimensions_Args, dm, V75_Buffer_Dimensions);
  if (dm.num_dims != 1 || dm.dims[0] != 4) return cts_fail(t, "dimensions are not [4]");
  PJRT_Buffer_ElementType_Args et = {.buffer = b};
  OLD_CALL_OK(t, PJRT_Buffer_ElementType, PJRT_Buffer_ElementType_Args, et, V75_Buffer_ElementType);
  if (et.type != PJRT_Buffer_Type_F32) return cts_fail(t, "element type %d", et.type);
  PJRT_Buffer_IsDeleted_Args del = {.buffer = b};
  OLD_CALL_OK(t, PJRT_Buffer_IsDeleted, PJRT_Buffer_IsDeleted_Args, del, V75_Buffer_IsDeleted);
  if (del.is_deleted) return cts_fail(t, "IsDeleted on a live buffer");
  PJRT_Buffer_OnDeviceSizeInBytes_Args sz = {.buffer = b};
  OLD_CALL_OK(t, PJRT_Buffer_OnDeviceSizeInBytes, PJRT_Buffer_OnDeviceSizeInBytes_Args, sz,
              V75_Buffer_OnDeviceSizeInBytes);
  PJRT_Buffer_Device_Args dv = {.buffer = b};
  OLD_CALL_OK(t, PJRT_Buffer_Device, PJRT_Buffer_Device_Args, dv, V75_Buffer_Device);
  if (dv.device != d) return cts_fail(t, "buffer on the wrong device");
  CTS_TRY(old_buffer_destroy(t, b));
  return old_client_destroy(t, c);
}

/* Compiles the add program through 0.75 structs (Program and Compile_Args in canary memory). */
static cts_status old_compile(cts_ctx *t, PJRT_Client *c, PJRT_Device *d,
                              PJRT_LoadedExecutable **out) {
  int id;
  CTS_TRY(cts_device_id(t, d, &id));
  char opts[256];
  size_t opts_size = cts_compile_options(opts, sizeof opts, &id, 1, false);
  _Alignas(16) unsigned char prog_mem[sizeof(PJRT_Program) + 64];
  memset(prog_mem, CTS_CANARY_BYTE, sizeof prog_mem);
  PJRT_Program prog = {.struct_size = V75_Program, .code = (char *)cts_prog_add_text.code,
                       .code_size = cts_prog_add_text.code_size, .format = "mlir",
                       .format_size = 4};
  memcpy(prog_mem, &prog, V75_Program);
  PJRT_Client_Compile_Args cc = {.client = c, .program = (const PJRT_Program *)(void *)prog_mem,
                                 .compile_options = opts, .compile_options_size = opts_size};
  PJRT_Error *e;
  OLD_CALL(t, PJRT_Client_Compile, PJRT_Client_Compile_Args, cc, V75_Client_Compile, e);
  CTS_TRY(cts_err(t, e, "PJRT_Client_Compile with 0.75 structs"));
  if (!cts_canary_intact(prog_mem, V75_Program, sizeof prog_mem))
    return cts_fail(t, "PJRT_Client_Compile wrote past PJRT_Program's struct_size");
  *out = cc.executable;
  return CTS_PASS;
}

/* Executes `exe` through a 0.75 Execute_Args whose options struct is `opts_size` long. */
static cts_status old_execute(cts_ctx *t, PJRT_Client *c, PJRT_Device *d,
                              PJRT_LoadedExecutable *exe, size_t opts_size) {
  const float a[4] = {1, 2, 3, 4}, b[4] = {0.5f, 0.25f, -1, 8}, want[4] = {1.5f, 2.25f, 2, 12};
  PJRT_Buffer *args[2], *out[1] = {NULL};
  CTS_TRY(old_f32_buffer(t, c, d, a, &args[0]));
  CTS_TRY(old_f32_buffer(t, c, d, b, &args[1]));
  _Alignas(16) unsigned char opt_mem[sizeof(PJRT_ExecuteOptions) + 64];
  memset(opt_mem, CTS_CANARY_BYTE, sizeof opt_mem);
  PJRT_ExecuteOptions o = {.struct_size = opts_size};
  memcpy(opt_mem, &o, opts_size);
  PJRT_Buffer *const *al[1] = {args};
  PJRT_Buffer **ol[1] = {out};
  PJRT_Event *done[1] = {NULL};
  PJRT_LoadedExecutable_Execute_Args x = {
      .executable = exe, .options = (PJRT_ExecuteOptions *)(void *)opt_mem, .argument_lists = al,
      .num_devices = 1, .num_args = 2, .output_lists = ol, .device_complete_events = done};
  PJRT_Error *e;
  OLD_CALL(t, PJRT_LoadedExecutable_Execute, PJRT_LoadedExecutable_Execute_Args, x,
           V75_LoadedExecutable_Execute, e);
  char what[96];
  snprintf(what, sizeof what, "Execute with ExecuteOptions.struct_size %zu", opts_size);
  CTS_TRY(cts_err(t, e, what));
  if (!cts_canary_intact(opt_mem, opts_size, sizeof opt_mem))
    return cts_fail(t, "Execute wrote past ExecuteOptions' struct_size %zu", opts_size);
  CTS_TRY(old_await(t, done[0]));
  if (!out[0]) return cts_fail(t, "%s: NULL output", what);
  CTS_TRY(old_expect_f32(t, out[0], want));
  for (int i = 0; i < 2; i++) CTS_TRY(old_buffer_destroy(t, args[i]));
  return old_buffer_destroy(t, out[0]);
}

CTS_CHECK(cts_old_compile_execute) {
  PJRT_Client *c;
  PJRT_Device *d;
  CTS_TRY(old_client(t, &c, &d));
  PJRT_LoadedExecutable *exe;
  CTS_TRY(old_compile(t, c, d, &exe));
  CTS_TRY(old_execute(t, c, d, exe, V75_ExecuteOptions));
  PJRT_LoadedExecutable_Destroy_Args ld = {.executable = exe};
  OLD_CALL_OK(t, PJRT_LoadedExecutable_Destroy, PJRT_LoadedExecutable_Destroy_Args, ld,
              V75_LoadedExecutable_Destroy);
  return old_client_destroy(t, c);
}

CTS_CHECK(cts_old_execute_options_versions) {
  /* ExecuteOptions grew field by field after 0.75; each prefix ending at a field is the struct of
   * some later minor version. */
  const size_t sizes[] = {
      V75_ExecuteOptions,
      ANVIL_PJRT_STRUCT_SIZE(PJRT_ExecuteOptions, call_location),
      ANVIL_PJRT_STRUCT_SIZE(PJRT_ExecuteOptions, incarnation_ids),
      ANVIL_PJRT_STRUCT_SIZE(PJRT_ExecuteOptions, multi_slice_config),
      ANVIL_PJRT_STRUCT_SIZE(PJRT_ExecuteOptions, use_major_to_minor_data_layout_for_callbacks),
      PJRT_ExecuteOptions_STRUCT_SIZE,
  };
  PJRT_Client *c;
  PJRT_Device *d;
  CTS_TRY(old_client(t, &c, &d));
  PJRT_LoadedExecutable *exe;
  CTS_TRY(old_compile(t, c, d, &exe));
  char refused[256] = "", first[1024] = "";
  size_t len = 0;
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    t->msg[0] = 0;
    cts_status s = old_execute(t, c, d, exe, sizes[i]);
    if (s == CTS_SKIP || s == CTS_UNSUPPORTED) return s;
    if (s == CTS_FAIL && len < sizeof refused - 16) {
      if (!len) snprintf(first, sizeof first, "%.1000s", t->msg);
      len += (size_t)snprintf(refused + len, sizeof refused - len, " %zu", sizes[i]);
    }
  }
  if (len)
    return cts_fail(t, "ExecuteOptions sizes refused or wrong:%s (first: %s)", refused, first);
  t->msg[0] = 0;
  cts_executable_destroy(t, exe);
  return old_client_destroy(t, c);
}

CTS_CHECK(cts_old_executable_stats) {
  /* 0.75's GetCompiledMemoryStats ends before the host_* fields. */
  CTS_WANT_FN(t, PJRT_Executable_GetCompiledMemoryStats);
  PJRT_Client *c;
  PJRT_Device *d;
  CTS_TRY(old_client(t, &c, &d));
  PJRT_LoadedExecutable *le;
  CTS_TRY(old_compile(t, c, d, &le));
  PJRT_LoadedExecutable_GetExecutable_Args g = {
      .struct_size = PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE, .loaded_executable = le};
  CTS_TRY(cts_err(t, t->api->PJRT_LoadedExecutable_GetExecutable(&g), "GetExecutable"));
  PJRT_Executable_GetCompiledMemoryStats_Args ms = {.executable = g.executable};
  PJRT_Error *e;
  OLD_CALL(t, PJRT_Executable_GetCompiledMemoryStats, PJRT_Executable_GetCompiledMemoryStats_Args,
           ms, V75_Executable_GetCompiledMemoryStats, e);
  CTS_TRY(cts_err_opt(t, e, "GetCompiledMemoryStats with struct_size 112"));
  PJRT_Executable_Destroy_Args xd = {.struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE,
                                     .executable = g.executable};
  cts_error_free(t, t->api->PJRT_Executable_Destroy(&xd));
  cts_executable_destroy(t, le);
  return old_client_destroy(t, c);
}

CTS_CHECK(cts_old_deserialize) {
  /* 0.75's DeserializeAndLoad ends before load_options. */
  CTS_WANT_FN(t, PJRT_Executable_Serialize);
  CTS_WANT_FN(t, PJRT_Executable_DeserializeAndLoad);
  PJRT_Client *c;
  PJRT_Device *d;
  CTS_TRY(old_client(t, &c, &d));
  PJRT_LoadedExecutable *le;
  CTS_TRY(old_compile(t, c, d, &le));
  PJRT_LoadedExecutable_GetExecutable_Args g = {
      .struct_size = PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE, .loaded_executable = le};
  CTS_TRY(cts_err(t, t->api->PJRT_LoadedExecutable_GetExecutable(&g), "GetExecutable"));
  PJRT_Executable_Serialize_Args s = {.struct_size = PJRT_Executable_Serialize_Args_STRUCT_SIZE,
                                      .executable = g.executable};
  CTS_TRY(cts_err_opt(t, t->api->PJRT_Executable_Serialize(&s), "PJRT_Executable_Serialize"));
  PJRT_Executable_DeserializeAndLoad_Args da = {.client = c,
                                                .serialized_executable = s.serialized_bytes,
                                                .serialized_executable_size =
                                                    s.serialized_bytes_size};
  PJRT_Error *e;
  OLD_CALL(t, PJRT_Executable_DeserializeAndLoad, PJRT_Executable_DeserializeAndLoad_Args, da,
           V75_Executable_DeserializeAndLoad, e);
  CTS_TRY(cts_err_opt(t, e, "DeserializeAndLoad with struct_size 64"));
  if (!da.loaded_executable) return cts_fail(t, "NULL deserialized executable");
  /* Current-size options: this check is about DeserializeAndLoad's struct only. */
  CTS_TRY(old_execute(t, c, d, da.loaded_executable, PJRT_ExecuteOptions_STRUCT_SIZE));
  if (s.serialized_executable_deleter) s.serialized_executable_deleter(s.serialized_executable);
  PJRT_Executable_Destroy_Args xd = {.struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE,
                                     .executable = g.executable};
  cts_error_free(t, t->api->PJRT_Executable_Destroy(&xd));
  cts_executable_destroy(t, da.loaded_executable);
  cts_executable_destroy(t, le);
  return old_client_destroy(t, c);
}

/* ------------------------------------------------------------------ newer callers */

/* A framework built against a newer header passes a larger struct_size; the plugin must use the
 * fields it knows and ignore the rest (here zero bytes past the known struct). */
#define NEW_CALL_OK(t, Name, Type, args)                                                          \
  do {                                                                                            \
    _Alignas(16) unsigned char mem_[sizeof(Type) + 64];                                           \
    memset(mem_, 0, sizeof mem_);                                                                 \
    memcpy(mem_, &(args), sizeof(args));                                                          \
    ((Type *)(void *)mem_)->struct_size = sizeof(Type) + 64;                                      \
    CTS_TRY(cts_err((t), (t)->api->Name((Type *)(void *)mem_),                                     \
                    #Name " with a struct_size 64 bytes larger than known"));                     \
    memcpy(&(args), mem_, sizeof(args));                                                          \
  } while (0)

CTS_CHECK(cts_newer_caller) {
  PJRT_Client *c;
  CTS_TRY(cts_client_create(t, &c));
  PJRT_Client_AddressableDevices_Args ad = {.client = c};
  NEW_CALL_OK(t, PJRT_Client_AddressableDevices, PJRT_Client_AddressableDevices_Args, ad);
  if (!ad.num_addressable_devices) return cts_fail(t, "no addressable devices");
  const float v[4] = {5, 6, 7, 8};
  static const int64_t dims[1] = {4};
  PJRT_Client_BufferFromHostBuffer_Args h = {
      .client = c, .data = v, .type = PJRT_Buffer_Type_F32, .dims = dims, .num_dims = 1,
      .host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableOnlyDuringCall,
      .device = ad.addressable_devices[0]};
  NEW_CALL_OK(t, PJRT_Client_BufferFromHostBuffer, PJRT_Client_BufferFromHostBuffer_Args, h);
  CTS_TRY(cts_await(t, h.done_with_host_buffer, "done_with_host_buffer"));
  PJRT_Buffer_Dimensions_Args dm = {.buffer = h.buffer};
  NEW_CALL_OK(t, PJRT_Buffer_Dimensions, PJRT_Buffer_Dimensions_Args, dm);
  if (dm.num_dims != 1 || dm.dims[0] != 4) return cts_fail(t, "dimensions are not [4]");
  float got[4];
  PJRT_Buffer_ToHostBuffer_Args th = {.src = h.buffer, .dst = got, .dst_size = sizeof got};
  NEW_CALL_OK(t, PJRT_Buffer_ToHostBuffer, PJRT_Buffer_ToHostBuffer_Args, th);
  CTS_TRY(cts_await(t, th.event, "ToHostBuffer event"));
  if (memcmp(got, v, sizeof v)) return cts_fail(t, "data differs");
  cts_buffer_destroy(t, h.buffer);
  cts_client_destroy(t, c);
  return CTS_PASS;
}

CTS_CHECK(cts_unknown_extension) {
  /* Frameworks chain extension structs into extension_start (jaxlib passes a profiler
   * extension to Compile and Execute); a plugin must skip types it does not know. */
  PJRT_Extension_Base ext = {.struct_size = PJRT_Extension_Base_STRUCT_SIZE,
                             .type = (PJRT_Extension_Type)7777, .next = NULL};
  PJRT_Client_Create_Args cc = {.struct_size = PJRT_Client_Create_Args_STRUCT_SIZE,
                                .extension_start = &ext};
  CTS_TRY(cts_err(t, t->api->PJRT_Client_Create(&cc), "Client_Create with an unknown extension"));
  PJRT_Client *c = cc.client;
  PJRT_Device *const *devs;
  size_t n;
  CTS_TRY(cts_addressable_devices(t, c, &devs, &n));
  int id;
  CTS_TRY(cts_device_id(t, devs[0], &id));
  char opts[256];
  size_t opts_size = cts_compile_options(opts, sizeof opts, &id, 1, false);
  PJRT_Program prog = {.struct_size = PJRT_Program_STRUCT_SIZE, .extension_start = &ext,
                       .code = (char *)cts_prog_add_text.code,
                       .code_size = cts_prog_add_text.code_size, .format = "mlir",
                       .format_size = 4};
  PJRT_Client_Compile_Args ca = {.struct_size = PJRT_Client_Compile_Args_STRUCT_SIZE,
                                 .extension_start = &ext, .client = c, .program = &prog,
                                 .compile_options = opts, .compile_options_size = opts_size};
  CTS_TRY(cts_err(t, t->api->PJRT_Client_Compile(&ca), "Compile with an unknown extension"));
  const float a[4] = {1, 2, 3, 4}, b[4] = {4, 3, 2, 1}, want[4] = {5, 5, 5, 5};
  PJRT_Buffer *args[2], *out[1] = {NULL};
  CTS_TRY(cts_f32_buffer(t, c, devs[0], a, 4, &args[0]));
  CTS_TRY(cts_f32_buffer(t, c, devs[0], b, 4, &args[1]));
  PJRT_ExecuteOptions o = {.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE, .extension_start = &ext};
  PJRT_Buffer *const *al[1] = {args};
  PJRT_Buffer **ol[1] = {out};
  PJRT_Event *done[1] = {NULL};
  PJRT_LoadedExecutable_Execute_Args x = {
      .struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE, .extension_start = &ext,
      .executable = ca.executable, .options = &o, .argument_lists = al, .num_devices = 1,
      .num_args = 2, .output_lists = ol, .device_complete_events = done};
  CTS_TRY(
      cts_err(t, t->api->PJRT_LoadedExecutable_Execute(&x), "Execute with an unknown extension"));
  CTS_TRY(cts_await(t, done[0], "device_complete_event"));
  CTS_TRY(cts_expect_f32(t, out[0], want, 4, "a + b"));
  for (int i = 0; i < 2; i++) cts_buffer_destroy(t, args[i]);
  cts_buffer_destroy(t, out[0]);
  cts_executable_destroy(t, ca.executable);
  cts_client_destroy(t, c);
  return CTS_PASS;
}
