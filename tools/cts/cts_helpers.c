/* anvil-cts helpers: error handling, fixtures (client, devices, buffers, events). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cts.h"

/* ------------------------------------------------------------------ reporting */

static cts_status vset(cts_ctx *t, cts_status s, const char *fmt, va_list ap) {
  vsnprintf(t->msg, sizeof t->msg, fmt, ap);
  return s;
}

cts_status cts_fail(cts_ctx *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cts_status s = vset(t, CTS_FAIL, fmt, ap);
  va_end(ap);
  return s;
}

cts_status cts_unsupported(cts_ctx *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cts_status s = vset(t, CTS_UNSUPPORTED, fmt, ap);
  va_end(ap);
  return s;
}

cts_status cts_skip(cts_ctx *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cts_status s = vset(t, CTS_SKIP, fmt, ap);
  va_end(ap);
  return s;
}

void cts_note(cts_ctx *t, const char *fmt, ...) {
  size_t len = strlen(t->msg);
  if (len + 3 >= sizeof t->msg) return;
  if (len) {
    memcpy(t->msg + len, "; ", 3);
    len += 2;
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t->msg + len, sizeof t->msg - len, fmt, ap);
  va_end(ap);
}

/* -------------------------------------------------------------- API version */

bool cts_api_covers(const PJRT_Api *api, size_t offset) {
  return api && api->struct_size >= offset + sizeof(void (*)(void));
}

/* Name of the PJRT_Api function slot at `offset` (for reports). */
const char *cts_slot_name(size_t offset) {
#define SLOT(Name) {offsetof(PJRT_Api, Name), #Name}
  static const struct {
    size_t offset;
    const char *name;
  } kSlots[] = {
      SLOT(PJRT_Error_Destroy),
      SLOT(PJRT_Error_Message),
      SLOT(PJRT_Error_GetCode),
      SLOT(PJRT_Plugin_Initialize),
      SLOT(PJRT_Plugin_Attributes),
      SLOT(PJRT_Event_Destroy),
      SLOT(PJRT_Event_IsReady),
      SLOT(PJRT_Event_Error),
      SLOT(PJRT_Event_Await),
      SLOT(PJRT_Event_OnReady),
      SLOT(PJRT_Client_Create),
      SLOT(PJRT_Client_Destroy),
      SLOT(PJRT_Client_PlatformName),
      SLOT(PJRT_Client_ProcessIndex),
      SLOT(PJRT_Client_PlatformVersion),
      SLOT(PJRT_Client_Devices),
      SLOT(PJRT_Client_AddressableDevices),
      SLOT(PJRT_Client_LookupDevice),
      SLOT(PJRT_Client_LookupAddressableDevice),
      SLOT(PJRT_Client_AddressableMemories),
      SLOT(PJRT_Client_Compile),
      SLOT(PJRT_Client_DefaultDeviceAssignment),
      SLOT(PJRT_Client_BufferFromHostBuffer),
      SLOT(PJRT_DeviceDescription_Id),
      SLOT(PJRT_DeviceDescription_ProcessIndex),
      SLOT(PJRT_DeviceDescription_Attributes),
      SLOT(PJRT_DeviceDescription_Kind),
      SLOT(PJRT_DeviceDescription_DebugString),
      SLOT(PJRT_DeviceDescription_ToString),
      SLOT(PJRT_Device_GetDescription),
      SLOT(PJRT_Device_IsAddressable),
      SLOT(PJRT_Device_LocalHardwareId),
      SLOT(PJRT_Device_AddressableMemories),
      SLOT(PJRT_Device_DefaultMemory),
      SLOT(PJRT_Device_MemoryStats),
      SLOT(PJRT_Memory_Id),
      SLOT(PJRT_Memory_Kind),
      SLOT(PJRT_Memory_DebugString),
      SLOT(PJRT_Memory_ToString),
      SLOT(PJRT_Memory_AddressableByDevices),
      SLOT(PJRT_Executable_Destroy),
      SLOT(PJRT_Executable_Name),
      SLOT(PJRT_Executable_NumReplicas),
      SLOT(PJRT_Executable_NumPartitions),
      SLOT(PJRT_Executable_NumOutputs),
      SLOT(PJRT_Executable_SizeOfGeneratedCodeInBytes),
      SLOT(PJRT_Executable_GetCostAnalysis),
      SLOT(PJRT_Executable_OutputMemoryKinds),
      SLOT(PJRT_Executable_OptimizedProgram),
      SLOT(PJRT_Executable_Serialize),
      SLOT(PJRT_LoadedExecutable_Destroy),
      SLOT(PJRT_LoadedExecutable_GetExecutable),
      SLOT(PJRT_LoadedExecutable_AddressableDevices),
      SLOT(PJRT_LoadedExecutable_Delete),
      SLOT(PJRT_LoadedExecutable_IsDeleted),
      SLOT(PJRT_LoadedExecutable_Execute),
      SLOT(PJRT_Executable_DeserializeAndLoad),
      SLOT(PJRT_LoadedExecutable_Fingerprint),
      SLOT(PJRT_Buffer_Destroy),
      SLOT(PJRT_Buffer_ElementType),
      SLOT(PJRT_Buffer_Dimensions),
      SLOT(PJRT_Buffer_UnpaddedDimensions),
      SLOT(PJRT_Buffer_DynamicDimensionIndices),
      SLOT(PJRT_Buffer_GetMemoryLayout),
      SLOT(PJRT_Buffer_OnDeviceSizeInBytes),
      SLOT(PJRT_Buffer_Device),
      SLOT(PJRT_Buffer_Memory),
      SLOT(PJRT_Buffer_Delete),
      SLOT(PJRT_Buffer_IsDeleted),
      SLOT(PJRT_Buffer_CopyToDevice),
      SLOT(PJRT_Buffer_ToHostBuffer),
      SLOT(PJRT_Buffer_IsOnCpu),
      SLOT(PJRT_Buffer_ReadyEvent),
      SLOT(PJRT_Buffer_UnsafePointer),
      SLOT(PJRT_Buffer_IncreaseExternalReferenceCount),
      SLOT(PJRT_Buffer_DecreaseExternalReferenceCount),
      SLOT(PJRT_Buffer_OpaqueDeviceMemoryDataPointer),
      SLOT(PJRT_CopyToDeviceStream_Destroy),
      SLOT(PJRT_CopyToDeviceStream_AddChunk),
      SLOT(PJRT_CopyToDeviceStream_TotalBytes),
      SLOT(PJRT_CopyToDeviceStream_GranuleSize),
      SLOT(PJRT_CopyToDeviceStream_CurrentBytes),
      SLOT(PJRT_TopologyDescription_Create),
      SLOT(PJRT_TopologyDescription_Destroy),
      SLOT(PJRT_TopologyDescription_PlatformName),
      SLOT(PJRT_TopologyDescription_PlatformVersion),
      SLOT(PJRT_TopologyDescription_GetDeviceDescriptions),
      SLOT(PJRT_TopologyDescription_Serialize),
      SLOT(PJRT_TopologyDescription_Attributes),
      SLOT(PJRT_Compile),
      SLOT(PJRT_Executable_OutputElementTypes),
      SLOT(PJRT_Executable_OutputDimensions),
      SLOT(PJRT_Buffer_CopyToMemory),
      SLOT(PJRT_Client_CreateViewOfDeviceBuffer),
      SLOT(PJRT_Executable_Fingerprint),
      SLOT(PJRT_Client_TopologyDescription),
      SLOT(PJRT_Executable_GetCompiledMemoryStats),
      SLOT(PJRT_Memory_Kind_Id),
      SLOT(PJRT_ExecuteContext_Create),
      SLOT(PJRT_ExecuteContext_Destroy),
      SLOT(PJRT_Buffer_CopyRawToHost),
      SLOT(PJRT_AsyncHostToDeviceTransferManager_Destroy),
      SLOT(PJRT_AsyncHostToDeviceTransferManager_TransferData),
      SLOT(PJRT_Client_CreateBuffersForAsyncHostToDevice),
      SLOT(PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer),
      SLOT(PJRT_AsyncHostToDeviceTransferManager_Device),
      SLOT(PJRT_AsyncHostToDeviceTransferManager_BufferCount),
      SLOT(PJRT_AsyncHostToDeviceTransferManager_BufferSize),
      SLOT(PJRT_AsyncHostToDeviceTransferManager_SetBufferError),
      SLOT(PJRT_AsyncHostToDeviceTransferManager_AddMetadata),
      SLOT(PJRT_Client_DmaMap),
      SLOT(PJRT_Client_DmaUnmap),
      SLOT(PJRT_Client_CreateUninitializedBuffer),
      SLOT(PJRT_Client_UpdateGlobalProcessInfo),
      SLOT(PJRT_TopologyDescription_Deserialize),
      SLOT(PJRT_Client_CreateAliasBuffer),
      SLOT(PJRT_Client_FulfillAliasBuffer),
      SLOT(PJRT_LoadedExecutable_GetDeviceAssignment),
      SLOT(PJRT_Client_CreateErrorBuffer),
      SLOT(PJRT_AsyncHostToDeviceTransferManager_TransferLiteral),
      SLOT(PJRT_Buffer_CopyRawToHostFuture),
      SLOT(PJRT_Device_PoisonExecution),
      SLOT(PJRT_Device_CreateAsyncTrackingEvent),
      SLOT(PJRT_AsyncTrackingEvent_Destroy),
      SLOT(PJRT_Executable_GetCompileOptions),
      SLOT(PJRT_Buffer_DonateWithControlDependency),
      SLOT(PJRT_Event_Create),
      SLOT(PJRT_Event_Set),
      SLOT(PJRT_Device_GetAttributes),
      SLOT(PJRT_Client_Load),
      SLOT(PJRT_LoadedExecutable_AddressableDeviceLogicalIds),
      SLOT(PJRT_Buffer_Bitcast),
      SLOT(PJRT_Error_ForEachPayload),
      SLOT(PJRT_TopologyDescription_Fingerprint),
      SLOT(PJRT_Executable_ParameterMemoryKinds),
      SLOT(PJRT_Device_ClearMemoryStats),
      SLOT(PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace),
      SLOT(PJRT_TopologyDescription_GetMemorySpaceKindIds),
  };
#undef SLOT
  for (size_t i = 0; i < sizeof kSlots / sizeof kSlots[0]; i++)
    if (kSlots[i].offset == offset) return kSlots[i].name;
  return "(unknown slot)";
}

/* ------------------------------------------------------------------- errors */

const char *cts_code_name(PJRT_Error_Code code) {
  static const char *const names[] = {
      "OK",        "CANCELLED",          "UNKNOWN",      "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
      "NOT_FOUND", "ALREADY_EXISTS",     "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
      "FAILED_PRECONDITION", "ABORTED",  "OUT_OF_RANGE", "UNIMPLEMENTED",    "INTERNAL",
      "UNAVAILABLE", "DATA_LOSS",        "UNAUTHENTICATED"};
  if ((int)code < 0 || (size_t)code >= sizeof names / sizeof names[0]) return "<bad code>";
  return names[code];
}

PJRT_Error_Code cts_error_code(cts_ctx *t, PJRT_Error *e) {
  if (!e) return PJRT_Error_Code_OK;
  if (!CTS_FN(t, PJRT_Error_GetCode)) return PJRT_Error_Code_UNKNOWN;
  PJRT_Error_GetCode_Args a = {.struct_size = PJRT_Error_GetCode_Args_STRUCT_SIZE, .error = e};
  PJRT_Error *e2 = t->api->PJRT_Error_GetCode(&a);
  if (e2) {
    cts_error_free(t, e2);
    return PJRT_Error_Code_UNKNOWN;
  }
  return a.code;
}

void cts_error_text(cts_ctx *t, PJRT_Error *e, char *buf, size_t n) {
  if (!e) {
    snprintf(buf, n, "OK");
    return;
  }
  const char *msg = "";
  size_t len = 0;
  if (CTS_FN(t, PJRT_Error_Message)) {
    PJRT_Error_Message_Args a = {.struct_size = PJRT_Error_Message_Args_STRUCT_SIZE, .error = e};
    t->api->PJRT_Error_Message(&a);
    if (a.message) {
      msg = a.message;
      len = a.message_size;
    }
  }
  if (len > 600) len = 600; /* keep reports readable */
  snprintf(buf, n, "%s: %.*s", cts_code_name(cts_error_code(t, e)), (int)len, msg);
}

void cts_error_free(cts_ctx *t, PJRT_Error *e) {
  if (!e || !CTS_FN(t, PJRT_Error_Destroy)) return;
  PJRT_Error_Destroy_Args a = {.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE, .error = e};
  t->api->PJRT_Error_Destroy(&a);
}

cts_status cts_err(cts_ctx *t, PJRT_Error *e, const char *what) {
  if (!e) return CTS_PASS;
  char text[1024];
  cts_error_text(t, e, text, sizeof text);
  cts_error_free(t, e);
  return cts_fail(t, "%s: %s", what, text);
}

cts_status cts_err_opt(cts_ctx *t, PJRT_Error *e, const char *what) {
  if (!e) return CTS_PASS;
  PJRT_Error_Code code = cts_error_code(t, e);
  char text[1024];
  cts_error_text(t, e, text, sizeof text);
  cts_error_free(t, e);
  if (code == PJRT_Error_Code_UNIMPLEMENTED) return cts_unsupported(t, "%s: %s", what, text);
  return cts_fail(t, "%s: %s", what, text);
}

cts_status cts_expect_error(cts_ctx *t, PJRT_Error *e, const char *what) {
  if (!e) return cts_fail(t, "%s: accepted (expected an error)", what);
  PJRT_Error_Code code = cts_error_code(t, e);
  size_t len = 0;
  if (CTS_FN(t, PJRT_Error_Message)) {
    PJRT_Error_Message_Args a = {.struct_size = PJRT_Error_Message_Args_STRUCT_SIZE, .error = e};
    t->api->PJRT_Error_Message(&a);
    len = a.message ? a.message_size : 0;
  }
  cts_error_free(t, e);
  if (code == PJRT_Error_Code_OK) return cts_fail(t, "%s: error object has code OK", what);
  if (len == 0) return cts_fail(t, "%s: error has an empty message", what);
  return CTS_PASS;
}

/* ------------------------------------------------------------------ fixtures */

cts_status cts_plugin_initialize(cts_ctx *t) {
  PJRT_Plugin_Initialize *init = CTS_FN(t, PJRT_Plugin_Initialize);
  if (!init) return CTS_PASS;
  PJRT_Plugin_Initialize_Args a = {.struct_size = PJRT_Plugin_Initialize_Args_STRUCT_SIZE};
  return cts_err(t, init(&a), "PJRT_Plugin_Initialize");
}

cts_status cts_client_create(cts_ctx *t, PJRT_Client **out) {
  *out = NULL;
  CTS_NEED_FN(t, PJRT_Client_Create);
  PJRT_Client_Create_Args a = {.struct_size = PJRT_Client_Create_Args_STRUCT_SIZE};
  CTS_TRY(cts_err(t, t->api->PJRT_Client_Create(&a), "PJRT_Client_Create"));
  if (!a.client) return cts_fail(t, "PJRT_Client_Create returned success and a NULL client");
  *out = a.client;
  return CTS_PASS;
}

void cts_client_destroy(cts_ctx *t, PJRT_Client *c) {
  if (!c || !CTS_FN(t, PJRT_Client_Destroy)) return;
  PJRT_Client_Destroy_Args a = {.struct_size = PJRT_Client_Destroy_Args_STRUCT_SIZE, .client = c};
  cts_error_free(t, t->api->PJRT_Client_Destroy(&a));
}

cts_status cts_addressable_devices(cts_ctx *t, PJRT_Client *c, PJRT_Device *const **devs,
                                   size_t *n) {
  CTS_NEED_FN(t, PJRT_Client_AddressableDevices);
  PJRT_Client_AddressableDevices_Args a = {
      .struct_size = PJRT_Client_AddressableDevices_Args_STRUCT_SIZE, .client = c};
  CTS_TRY(cts_err(t, t->api->PJRT_Client_AddressableDevices(&a), "PJRT_Client_AddressableDevices"));
  if (a.num_addressable_devices == 0) return cts_fail(t, "client has no addressable devices");
  if (!a.addressable_devices) return cts_fail(t, "addressable device list is NULL");
  *devs = a.addressable_devices;
  *n = a.num_addressable_devices;
  return CTS_PASS;
}

cts_status cts_device_id(cts_ctx *t, PJRT_Device *d, int *id) {
  CTS_NEED_FN(t, PJRT_Device_GetDescription);
  CTS_NEED_FN(t, PJRT_DeviceDescription_Id);
  PJRT_Device_GetDescription_Args g = {.struct_size = PJRT_Device_GetDescription_Args_STRUCT_SIZE,
                                       .device = d};
  CTS_TRY(cts_err(t, t->api->PJRT_Device_GetDescription(&g), "PJRT_Device_GetDescription"));
  if (!g.device_description) return cts_fail(t, "PJRT_Device_GetDescription gave NULL");
  PJRT_DeviceDescription_Id_Args a = {.struct_size = PJRT_DeviceDescription_Id_Args_STRUCT_SIZE,
                                      .device_description = g.device_description};
  CTS_TRY(cts_err(t, t->api->PJRT_DeviceDescription_Id(&a), "PJRT_DeviceDescription_Id"));
  *id = a.id;
  return CTS_PASS;
}

static void event_destroy(cts_ctx *t, PJRT_Event *ev) {
  if (!ev || !CTS_FN(t, PJRT_Event_Destroy)) return;
  PJRT_Event_Destroy_Args d = {.struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE, .event = ev};
  cts_error_free(t, t->api->PJRT_Event_Destroy(&d));
}

PJRT_Error_Code cts_await_code(cts_ctx *t, PJRT_Event *ev, char *buf, size_t n) {
  if (buf && n) buf[0] = 0;
  if (!ev) return PJRT_Error_Code_OK;
  PJRT_Event_Await_Args a = {.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE, .event = ev};
  PJRT_Error *e = t->api->PJRT_Event_Await(&a);
  PJRT_Error_Code code = cts_error_code(t, e);
  if (e && buf) cts_error_text(t, e, buf, n);
  cts_error_free(t, e);
  event_destroy(t, ev);
  return code;
}

cts_status cts_await(cts_ctx *t, PJRT_Event *ev, const char *what) {
  if (!ev) return CTS_PASS;
  CTS_NEED_FN(t, PJRT_Event_Await);
  char text[1024];
  if (cts_await_code(t, ev, text, sizeof text) != PJRT_Error_Code_OK)
    return cts_fail(t, "%s: event completed with %s", what, text);
  return CTS_PASS;
}

size_t cts_type_size(PJRT_Buffer_Type type) {
  switch (type) {
    case PJRT_Buffer_Type_PRED: case PJRT_Buffer_Type_S8: case PJRT_Buffer_Type_U8:
    case PJRT_Buffer_Type_F8E5M2: case PJRT_Buffer_Type_F8E4M3FN:
    case PJRT_Buffer_Type_F8E4M3B11FNUZ: case PJRT_Buffer_Type_F8E5M2FNUZ:
    case PJRT_Buffer_Type_F8E4M3FNUZ: case PJRT_Buffer_Type_F8E4M3: case PJRT_Buffer_Type_F8E3M4:
    case PJRT_Buffer_Type_F8E8M0FNU:
      return 1;
    case PJRT_Buffer_Type_S16: case PJRT_Buffer_Type_U16: case PJRT_Buffer_Type_F16:
    case PJRT_Buffer_Type_BF16:
      return 2;
    case PJRT_Buffer_Type_S32: case PJRT_Buffer_Type_U32: case PJRT_Buffer_Type_F32:
      return 4;
    case PJRT_Buffer_Type_S64: case PJRT_Buffer_Type_U64: case PJRT_Buffer_Type_F64:
    case PJRT_Buffer_Type_C64:
      return 8;
    case PJRT_Buffer_Type_C128:
      return 16;
    default:
      return 0;
  }
}

size_t cts_num_elements(const int64_t *dims, size_t nd) {
  size_t n = 1;
  for (size_t i = 0; i < nd; i++) n *= (size_t)dims[i];
  return n;
}

cts_status cts_buffer_from_host(cts_ctx *t, PJRT_Client *c, PJRT_Device *d, PJRT_Buffer_Type type,
                                const int64_t *dims, size_t nd, const void *data,
                                PJRT_Buffer **out) {
  *out = NULL;
  CTS_NEED_FN(t, PJRT_Client_BufferFromHostBuffer);
  PJRT_Client_BufferFromHostBuffer_Args a = {
      .struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE,
      .client = c, .data = data, .type = type, .dims = dims, .num_dims = nd,
      .host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableOnlyDuringCall, .device = d};
  CTS_TRY(cts_err(t, t->api->PJRT_Client_BufferFromHostBuffer(&a),
                  "PJRT_Client_BufferFromHostBuffer"));
  if (!a.buffer) return cts_fail(t, "PJRT_Client_BufferFromHostBuffer gave a NULL buffer");
  *out = a.buffer;
  return cts_await(t, a.done_with_host_buffer, "done_with_host_buffer");
}

cts_status cts_f32_buffer(cts_ctx *t, PJRT_Client *c, PJRT_Device *d, const float *v, int64_t n,
                          PJRT_Buffer **out) {
  int64_t dims[1] = {n};
  return cts_buffer_from_host(t, c, d, PJRT_Buffer_Type_F32, dims, 1, v, out);
}

cts_status cts_to_host(cts_ctx *t, PJRT_Buffer *b, void *dst, size_t size) {
  CTS_NEED_FN(t, PJRT_Buffer_ToHostBuffer);
  PJRT_Buffer_ToHostBuffer_Args a = {.struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE,
                                     .src = b, .dst = dst, .dst_size = size};
  CTS_TRY(cts_err(t, t->api->PJRT_Buffer_ToHostBuffer(&a), "PJRT_Buffer_ToHostBuffer"));
  return cts_await(t, a.event, "PJRT_Buffer_ToHostBuffer event");
}

cts_status cts_expect_f32(cts_ctx *t, PJRT_Buffer *b, const float *want, int64_t n,
                          const char *what) {
  float got[64];
  if (n > 64) return cts_fail(t, "internal: cts_expect_f32 too large");
  CTS_TRY(cts_to_host(t, b, got, (size_t)n * sizeof(float)));
  for (int64_t i = 0; i < n; i++)
    if (got[i] != want[i])
      return cts_fail(t, "%s: element %lld is %g, expected %g", what, (long long)i, got[i],
                      want[i]);
  return CTS_PASS;
}

void cts_buffer_destroy(cts_ctx *t, PJRT_Buffer *b) {
  if (!b || !CTS_FN(t, PJRT_Buffer_Destroy)) return;
  PJRT_Buffer_Destroy_Args a = {.struct_size = PJRT_Buffer_Destroy_Args_STRUCT_SIZE, .buffer = b};
  cts_error_free(t, t->api->PJRT_Buffer_Destroy(&a));
}

cts_status cts_buffer_is_deleted(cts_ctx *t, PJRT_Buffer *b, bool *deleted) {
  CTS_NEED_FN(t, PJRT_Buffer_IsDeleted);
  PJRT_Buffer_IsDeleted_Args a = {.struct_size = PJRT_Buffer_IsDeleted_Args_STRUCT_SIZE,
                                  .buffer = b};
  CTS_TRY(cts_err(t, t->api->PJRT_Buffer_IsDeleted(&a), "PJRT_Buffer_IsDeleted"));
  *deleted = a.is_deleted;
  return CTS_PASS;
}

bool cts_canary_intact(const void *base, size_t from, size_t to) {
  const unsigned char *p = base;
  for (size_t i = from; i < to; i++)
    if (p[i] != CTS_CANARY_BYTE) return false;
  return true;
}
