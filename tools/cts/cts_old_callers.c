/* anvil-cts: callers of every supported API version, newer callers, unknown extensions.
 *
 * A framework built against an older header passes smaller argument structs (the STRUCT_SIZE of
 * its own version). The plugin must accept them and read or write no field past the struct the
 * caller has. For each supported caller (jaxlib 0.4.35 ... 0.10.2, torch_xla 2.9, the current
 * API; anvil/pjrt_c_api_history.h lists them with the API minor each speaks) one check makes the
 * calls such a framework makes, every argument struct with that minor's size (from the size
 * history in the same header, measured from the API's headers), in memory that ends where the
 * caller's struct ends: exactly there under AddressSanitizer, so that any access past it is
 * reported; followed by a canary pattern otherwise, so that a write past it is detected and a
 * read past it yields garbage. Calls whose struct did not exist yet at that minor are skipped, as
 * the framework could not make them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/pjrt_c_api_history.h"
#include "cts.h"

#if defined(__SANITIZE_ADDRESS__)
#define CTS_OLD_PAD 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CTS_OLD_PAD 0
#endif
#endif
#ifndef CTS_OLD_PAD
#define CTS_OLD_PAD 64
#endif

/* ------------------------------------------------------------------ sizes */

typedef struct {
  const char *type;
  int minor;
  size_t declared, extent;
} old_row;

static const old_row k_history[] = {
#define OLD_ROW(T, m, d, e) {#T, (m), (d), (e)},
    ANVIL_PJRT_SIZE_HISTORY(OLD_ROW)
#undef OLD_ROW
};

/* The size a caller of API 0.`minor` declares for `type`, and the bytes its struct really has
 * (more where its header's STRUCT_SIZE named an earlier member); false if it has no such struct. */
static bool old_size(const char *type, int minor, size_t *declared, size_t *extent) {
  const old_row *found = NULL;
  for (size_t i = 0; i < sizeof k_history / sizeof k_history[0]; i++)
    if (k_history[i].minor <= minor && !strcmp(k_history[i].type, type)) found = &k_history[i];
  if (!found) return false;
  *declared = found->declared;
  *extent = found->extent;
  return true;
}

/* One caller being imitated. */
typedef struct {
  cts_ctx *t;
  int minor;
  const char *who;
} old_caller;

/* A copy of an argument struct as an old caller has it: `declared` in struct_size, `extent`
 * bytes of memory (plus the canary pad outside AddressSanitizer). */
typedef struct {
  unsigned char *mem;
  size_t declared, extent;
} old_struct;

static bool old_place(old_struct *o, const void *full, size_t full_size, size_t declared,
                      size_t extent) {
  o->declared = declared;
  o->extent = extent;
  o->mem = malloc(extent + CTS_OLD_PAD);
  if (!o->mem) return false;
  memset(o->mem, CTS_CANARY_BYTE, extent + CTS_OLD_PAD);
  memcpy(o->mem, full, extent < full_size ? extent : full_size);
  memcpy(o->mem, &declared, sizeof declared); /* struct_size is every struct's first member */
  return true;
}

/* Copies the caller's part back into `full` and frees; false if the canary changed. */
static bool old_take(old_struct *o, void *full, size_t full_size) {
  bool intact = cts_canary_intact(o->mem, o->extent, o->extent + CTS_OLD_PAD);
  memcpy(full, o->mem, o->extent < full_size ? o->extent : full_size);
  free(o->mem);
  o->mem = NULL;
  return intact;
}

/* Calls api->Name with `args` as caller `c` has it; `err` receives the result. Leaves the
 * enclosing check with FAIL when the plugin wrote past the caller's struct; skips the statement
 * `skip` when the caller's API has no such struct. */
#define OLD_CALL(c, Name, Type, args, err, skip)                                                  \
  do {                                                                                            \
    size_t d_, e_;                                                                                \
    if (!old_size(#Type, (c)->minor, &d_, &e_)) {                                                 \
      skip;                                                                                       \
    }                                                                                             \
    CTS_NEED_FN((c)->t, Name);                                                                    \
    old_struct o_;                                                                                \
    if (!old_place(&o_, &(args), sizeof(args), d_, e_)) return cts_fail((c)->t, "out of memory"); \
    (err) = (c)->t->api->Name((Type *)(void *)o_.mem);                                            \
    if (!old_take(&o_, &(args), sizeof(args)))                                                    \
      return cts_fail((c)->t, "%s: " #Name " wrote past its struct (struct_size %zu)", (c)->who,  \
                      d_);                                                                        \
  } while (0)

/* The call must succeed; the check fails with its error otherwise. */
#define OLD_OK(c, Name, Type, args)                                                               \
  do {                                                                                            \
    PJRT_Error *ok_err_ = NULL;                                                                   \
    OLD_CALL(c, Name, Type, args, ok_err_, break);                                                \
    CTS_TRY(old_result((c), ok_err_, #Name, false));                                              \
  } while (0)

/* An optional feature: UNIMPLEMENTED is fine. */
#define OLD_OPT(c, Name, Type, args, done)                                                        \
  do {                                                                                            \
    PJRT_Error *opt_err_ = NULL;                                                                  \
    bool absent_ = false;                                                                         \
    OLD_CALL(c, Name, Type, args, opt_err_, absent_ = true; break);                               \
    (done) = !absent_ && opt_err_ == NULL;                                                        \
    CTS_TRY(old_result((c), opt_err_, #Name, true));                                              \
  } while (0)

static cts_status old_result(const old_caller *c, PJRT_Error *e, const char *fn, bool optional) {
  if (!e) return CTS_PASS;
  if (optional && cts_error_code(c->t, e) == PJRT_Error_Code_UNIMPLEMENTED) {
    cts_error_free(c->t, e);
    return CTS_PASS;
  }
  char what[160];
  snprintf(what, sizeof what, "%s (API 0.%d): %s", c->who, c->minor, fn);
  return cts_err(c->t, e, what);
}

/* ------------------------------------------------------------------ calls */

static cts_status old_event_done(const old_caller *c, PJRT_Event *ev) {
  if (!ev) return CTS_PASS;
  PJRT_Event_IsReady_Args r = {.event = ev};
  OLD_OK(c, PJRT_Event_IsReady, PJRT_Event_IsReady_Args, r);
  PJRT_Event_Await_Args aw = {.event = ev};
  OLD_OK(c, PJRT_Event_Await, PJRT_Event_Await_Args, aw);
  PJRT_Event_Error_Args er = {.event = ev};
  OLD_OK(c, PJRT_Event_Error, PJRT_Event_Error_Args, er);
  PJRT_Event_Destroy_Args ed = {.event = ev};
  OLD_OK(c, PJRT_Event_Destroy, PJRT_Event_Destroy_Args, ed);
  return CTS_PASS;
}

static cts_status old_attributes(const old_caller *c) {
  PJRT_Plugin_Initialize_Args in = {0};
  OLD_OK(c, PJRT_Plugin_Initialize, PJRT_Plugin_Initialize_Args, in);
  PJRT_Plugin_Attributes_Args a = {0};
  OLD_OK(c, PJRT_Plugin_Attributes, PJRT_Plugin_Attributes_Args, a);
  bool current = false;
  for (size_t i = 0; i < a.num_attributes; i++) {
    const PJRT_NamedValue *v = &a.attributes[i];
    if (v->name_size == 25 && !memcmp(v->name, "stablehlo_current_version", 25))
      current = v->type == PJRT_NamedValue_kInt64List && v->value_size == 3;
  }
  if (a.num_attributes && !current)
    return cts_fail(c->t, "%s: no readable stablehlo_current_version", c->who);
  return CTS_PASS;
}

static cts_status old_device_queries(const old_caller *c, PJRT_Client *client, PJRT_Device *d) {
  PJRT_Device_GetDescription_Args g = {.device = d};
  OLD_OK(c, PJRT_Device_GetDescription, PJRT_Device_GetDescription_Args, g);
  PJRT_DeviceDescription *desc = g.device_description;
  PJRT_DeviceDescription_Id_Args id = {.device_description = desc};
  OLD_OK(c, PJRT_DeviceDescription_Id, PJRT_DeviceDescription_Id_Args, id);
  PJRT_DeviceDescription_ProcessIndex_Args pi = {.device_description = desc};
  OLD_OK(c, PJRT_DeviceDescription_ProcessIndex, PJRT_DeviceDescription_ProcessIndex_Args, pi);
  PJRT_DeviceDescription_Kind_Args k = {.device_description = desc};
  OLD_OK(c, PJRT_DeviceDescription_Kind, PJRT_DeviceDescription_Kind_Args, k);
  if (!k.device_kind || !k.device_kind_size) return cts_fail(c->t, "%s: empty kind", c->who);
  PJRT_DeviceDescription_DebugString_Args ds = {.device_description = desc};
  OLD_OK(c, PJRT_DeviceDescription_DebugString, PJRT_DeviceDescription_DebugString_Args, ds);
  PJRT_DeviceDescription_ToString_Args ts = {.device_description = desc};
  OLD_OK(c, PJRT_DeviceDescription_ToString, PJRT_DeviceDescription_ToString_Args, ts);
  PJRT_DeviceDescription_Attributes_Args at = {.device_description = desc};
  OLD_OK(c, PJRT_DeviceDescription_Attributes, PJRT_DeviceDescription_Attributes_Args, at);
  PJRT_Device_IsAddressable_Args ia = {.device = d};
  OLD_OK(c, PJRT_Device_IsAddressable, PJRT_Device_IsAddressable_Args, ia);
  if (!ia.is_addressable) return cts_fail(c->t, "%s: addressable device is not", c->who);
  PJRT_Device_LocalHardwareId_Args hw = {.device = d};
  OLD_OK(c, PJRT_Device_LocalHardwareId, PJRT_Device_LocalHardwareId_Args, hw);
  PJRT_Device_AddressableMemories_Args am = {.device = d};
  OLD_OK(c, PJRT_Device_AddressableMemories, PJRT_Device_AddressableMemories_Args, am);
  PJRT_Device_DefaultMemory_Args dm = {.device = d};
  OLD_OK(c, PJRT_Device_DefaultMemory, PJRT_Device_DefaultMemory_Args, dm);
  bool done;
  PJRT_Device_MemoryStats_Args ms = {.device = d};
  OLD_OPT(c, PJRT_Device_MemoryStats, PJRT_Device_MemoryStats_Args, ms, done);
  if (CTS_FN(c->t, PJRT_Device_GetAttributes)) {
    PJRT_Device_GetAttributes_Args ga = {.device = d};
    OLD_OPT(c, PJRT_Device_GetAttributes, PJRT_Device_GetAttributes_Args, ga, done);
  }
  (void)done;
  if (dm.memory) {
    PJRT_Memory *m = dm.memory;
    PJRT_Memory_Id_Args mi = {.memory = m};
    OLD_OK(c, PJRT_Memory_Id, PJRT_Memory_Id_Args, mi);
    PJRT_Memory_Kind_Args mk = {.memory = m};
    OLD_OK(c, PJRT_Memory_Kind, PJRT_Memory_Kind_Args, mk);
    PJRT_Memory_Kind_Id_Args mki = {.memory = m};
    OLD_OK(c, PJRT_Memory_Kind_Id, PJRT_Memory_Kind_Id_Args, mki);
    PJRT_Memory_DebugString_Args md = {.memory = m};
    OLD_OK(c, PJRT_Memory_DebugString, PJRT_Memory_DebugString_Args, md);
    PJRT_Memory_ToString_Args mt = {.memory = m};
    OLD_OK(c, PJRT_Memory_ToString, PJRT_Memory_ToString_Args, mt);
    PJRT_Memory_AddressableByDevices_Args mb = {.memory = m};
    OLD_OK(c, PJRT_Memory_AddressableByDevices, PJRT_Memory_AddressableByDevices_Args, mb);
  }
  (void)client;
  return CTS_PASS;
}

static cts_status old_client_queries(const old_caller *c, PJRT_Client *client,
                                     PJRT_Device **first) {
  PJRT_Client_PlatformName_Args pn = {.client = client};
  OLD_OK(c, PJRT_Client_PlatformName, PJRT_Client_PlatformName_Args, pn);
  PJRT_Client_PlatformVersion_Args pv = {.client = client};
  OLD_OK(c, PJRT_Client_PlatformVersion, PJRT_Client_PlatformVersion_Args, pv);
  PJRT_Client_ProcessIndex_Args pi = {.client = client};
  OLD_OK(c, PJRT_Client_ProcessIndex, PJRT_Client_ProcessIndex_Args, pi);
  PJRT_Client_Devices_Args dv = {.client = client};
  OLD_OK(c, PJRT_Client_Devices, PJRT_Client_Devices_Args, dv);
  PJRT_Client_AddressableDevices_Args ad = {.client = client};
  OLD_OK(c, PJRT_Client_AddressableDevices, PJRT_Client_AddressableDevices_Args, ad);
  if (!ad.num_addressable_devices) return cts_fail(c->t, "%s: no addressable devices", c->who);
  *first = ad.addressable_devices[0];
  PJRT_Client_AddressableMemories_Args mem = {.client = client};
  OLD_OK(c, PJRT_Client_AddressableMemories, PJRT_Client_AddressableMemories_Args, mem);
  PJRT_Client_LookupAddressableDevice_Args la = {.client = client, .local_hardware_id = 0};
  OLD_OK(c, PJRT_Client_LookupAddressableDevice, PJRT_Client_LookupAddressableDevice_Args, la);
  int ids[1] = {0};
  PJRT_Client_DefaultDeviceAssignment_Args da = {.client = client, .num_replicas = 1,
                                                 .num_partitions = 1, .default_assignment_size = 1,
                                                 .default_assignment = ids};
  OLD_OK(c, PJRT_Client_DefaultDeviceAssignment, PJRT_Client_DefaultDeviceAssignment_Args, da);
  PJRT_Client_LookupDevice_Args ld = {.client = client, .id = ids[0]};
  OLD_OK(c, PJRT_Client_LookupDevice, PJRT_Client_LookupDevice_Args, ld);
  /* An error, read back through the caller's Error structs. */
  PJRT_Client_LookupDevice_Args bad = {.client = client, .id = 1 << 30};
  PJRT_Error *e = NULL;
  OLD_CALL(c, PJRT_Client_LookupDevice, PJRT_Client_LookupDevice_Args, bad, e, break);
  if (!e) return cts_fail(c->t, "%s: LookupDevice(2^30) succeeded", c->who);
  PJRT_Error_GetCode_Args gc = {.error = e};
  PJRT_Error *e2 = NULL;
  OLD_CALL(c, PJRT_Error_GetCode, PJRT_Error_GetCode_Args, gc, e2, break);
  if (e2) return cts_fail(c->t, "%s: PJRT_Error_GetCode failed", c->who);
  PJRT_Error_Message_Args em = {.error = e};
  size_t d_, x_;
  if (old_size("PJRT_Error_Message_Args", c->minor, &d_, &x_)) {
    old_struct o;
    if (!old_place(&o, &em, sizeof em, d_, x_)) return cts_fail(c->t, "out of memory");
    c->t->api->PJRT_Error_Message((PJRT_Error_Message_Args *)(void *)o.mem);
    if (!old_take(&o, &em, sizeof em))
      return cts_fail(c->t, "%s: PJRT_Error_Message wrote past its struct", c->who);
  }
  PJRT_Error_Destroy_Args ed = {.error = e};
  if (old_size("PJRT_Error_Destroy_Args", c->minor, &d_, &x_)) {
    old_struct o;
    if (!old_place(&o, &ed, sizeof ed, d_, x_)) return cts_fail(c->t, "out of memory");
    c->t->api->PJRT_Error_Destroy((PJRT_Error_Destroy_Args *)(void *)o.mem);
    if (!old_take(&o, &ed, sizeof ed))
      return cts_fail(c->t, "%s: PJRT_Error_Destroy wrote past its struct", c->who);
  }
  return CTS_PASS;
}

static cts_status old_buffer(const old_caller *c, PJRT_Client *client, PJRT_Device *d,
                             const float *v, PJRT_Buffer **out) {
  static const int64_t dims[1] = {4};
  PJRT_Client_BufferFromHostBuffer_Args h = {
      .client = client, .data = v, .type = PJRT_Buffer_Type_F32, .dims = dims, .num_dims = 1,
      .host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes,
      .device = d};
  OLD_OK(c, PJRT_Client_BufferFromHostBuffer, PJRT_Client_BufferFromHostBuffer_Args, h);
  if (!h.buffer) return cts_fail(c->t, "%s: NULL buffer", c->who);
  CTS_TRY(old_event_done(c, h.done_with_host_buffer));
  PJRT_Buffer_ReadyEvent_Args r = {.buffer = h.buffer};
  OLD_OK(c, PJRT_Buffer_ReadyEvent, PJRT_Buffer_ReadyEvent_Args, r);
  CTS_TRY(old_event_done(c, r.event));
  *out = h.buffer;
  return CTS_PASS;
}

static cts_status old_expect(const old_caller *c, PJRT_Buffer *b, const float *want) {
  float got[4];
  PJRT_Buffer_ToHostBuffer_Args th = {.src = b, .dst = got, .dst_size = sizeof got};
  OLD_OK(c, PJRT_Buffer_ToHostBuffer, PJRT_Buffer_ToHostBuffer_Args, th);
  CTS_TRY(old_event_done(c, th.event));
  for (int i = 0; i < 4; i++)
    if (got[i] != want[i])
      return cts_fail(c->t, "%s: element %d is %g, expected %g", c->who, i, got[i], want[i]);
  return CTS_PASS;
}

static cts_status old_buffer_queries(const old_caller *c, PJRT_Buffer *b, PJRT_Device *d) {
  PJRT_Buffer_Dimensions_Args dm = {.buffer = b};
  OLD_OK(c, PJRT_Buffer_Dimensions, PJRT_Buffer_Dimensions_Args, dm);
  if (dm.num_dims != 1 || dm.dims[0] != 4) return cts_fail(c->t, "%s: dims are not [4]", c->who);
  PJRT_Buffer_UnpaddedDimensions_Args ud = {.buffer = b};
  OLD_OK(c, PJRT_Buffer_UnpaddedDimensions, PJRT_Buffer_UnpaddedDimensions_Args, ud);
  PJRT_Buffer_DynamicDimensionIndices_Args dd = {.buffer = b};
  OLD_OK(c, PJRT_Buffer_DynamicDimensionIndices, PJRT_Buffer_DynamicDimensionIndices_Args, dd);
  PJRT_Buffer_ElementType_Args et = {.buffer = b};
  OLD_OK(c, PJRT_Buffer_ElementType, PJRT_Buffer_ElementType_Args, et);
  if (et.type != PJRT_Buffer_Type_F32) return cts_fail(c->t, "%s: type %d", c->who, et.type);
  PJRT_Buffer_GetMemoryLayout_Args ml = {.buffer = b};
  bool done;
  OLD_OPT(c, PJRT_Buffer_GetMemoryLayout, PJRT_Buffer_GetMemoryLayout_Args, ml, done);
  (void)done;
  PJRT_Buffer_OnDeviceSizeInBytes_Args sz = {.buffer = b};
  OLD_OK(c, PJRT_Buffer_OnDeviceSizeInBytes, PJRT_Buffer_OnDeviceSizeInBytes_Args, sz);
  PJRT_Buffer_Device_Args dv = {.buffer = b};
  OLD_OK(c, PJRT_Buffer_Device, PJRT_Buffer_Device_Args, dv);
  if (dv.device != d) return cts_fail(c->t, "%s: buffer on the wrong device", c->who);
  PJRT_Buffer_Memory_Args bm = {.buffer = b};
  OLD_OK(c, PJRT_Buffer_Memory, PJRT_Buffer_Memory_Args, bm);
  PJRT_Buffer_IsDeleted_Args del = {.buffer = b};
  OLD_OK(c, PJRT_Buffer_IsDeleted, PJRT_Buffer_IsDeleted_Args, del);
  if (del.is_deleted) return cts_fail(c->t, "%s: live buffer is deleted", c->who);
  PJRT_Buffer_IsOnCpu_Args cpu = {.buffer = b};
  OLD_OK(c, PJRT_Buffer_IsOnCpu, PJRT_Buffer_IsOnCpu_Args, cpu);
  PJRT_Buffer_CopyToDevice_Args cp = {.buffer = b, .dst_device = d};
  OLD_OK(c, PJRT_Buffer_CopyToDevice, PJRT_Buffer_CopyToDevice_Args, cp);
  if (cp.dst_buffer) {
    PJRT_Buffer_Delete_Args bd = {.buffer = cp.dst_buffer};
    OLD_OK(c, PJRT_Buffer_Delete, PJRT_Buffer_Delete_Args, bd);
    PJRT_Buffer_Destroy_Args bx = {.buffer = cp.dst_buffer};
    OLD_OK(c, PJRT_Buffer_Destroy, PJRT_Buffer_Destroy_Args, bx);
  }
  return CTS_PASS;
}

/* OnReady callback: records success (1) or failure (-1) and frees the error it owns. */
typedef struct old_ready {
  const PJRT_Api *api;
  int fired;
} old_ready;

static void old_on_ready(PJRT_Error *error, void *user_arg) {
  old_ready *r = user_arg;
  r->fired = error ? -1 : 1;
  if (error) {
    PJRT_Error_Destroy_Args ed = {.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE,
                                  .error = error};
    r->api->PJRT_Error_Destroy(&ed);
  }
}

/* The less common buffer, event and topology calls frameworks make: views of device memory
 * (whose `memory` member came in 0.66), uninitialized buffers (0.69), copies to a memory, raw
 * reads, external references, OnReady, the client's topology. Optional ones may answer
 * UNIMPLEMENTED. */
static cts_status old_more_calls(const old_caller *c, PJRT_Client *client, PJRT_Device *d,
                                 PJRT_Memory *mem) {
  const float v[4] = {1, 2, 3, 4};
  PJRT_Buffer *b;
  CTS_TRY(old_buffer(c, client, d, v, &b));
  bool done;
  PJRT_Buffer_ReadyEvent_Args r = {.buffer = b};
  OLD_OK(c, PJRT_Buffer_ReadyEvent, PJRT_Buffer_ReadyEvent_Args, r);
  old_ready ready = {.api = c->t->api, .fired = 0};
  PJRT_Event_OnReady_Args on = {.event = r.event, .callback = old_on_ready, .user_arg = &ready};
  OLD_OK(c, PJRT_Event_OnReady, PJRT_Event_OnReady_Args, on);
  CTS_TRY(old_event_done(c, r.event));
  if (ready.fired != 1) return cts_fail(c->t, "%s: OnReady callback state %d", c->who, ready.fired);
  PJRT_Buffer_IncreaseExternalReferenceCount_Args inc = {.buffer = b};
  OLD_OPT(c, PJRT_Buffer_IncreaseExternalReferenceCount,
          PJRT_Buffer_IncreaseExternalReferenceCount_Args, inc, done);
  if (done) {
    PJRT_Buffer_UnsafePointer_Args up = {.buffer = b};
    OLD_OPT(c, PJRT_Buffer_UnsafePointer, PJRT_Buffer_UnsafePointer_Args, up, done);
    /* A view of the buffer's memory (it stays valid while the external reference is held). */
    if (done && up.buffer_pointer) {
      static const int64_t dims[1] = {4};
      PJRT_Client_CreateViewOfDeviceBuffer_Args vw = {
          .client = client, .device_buffer_ptr = (void *)up.buffer_pointer, .dims = dims,
          .num_dims = 1, .element_type = PJRT_Buffer_Type_F32, .device = d};
      OLD_OPT(c, PJRT_Client_CreateViewOfDeviceBuffer, PJRT_Client_CreateViewOfDeviceBuffer_Args,
              vw, done);
      if (done && vw.buffer) {
        CTS_TRY(old_expect(c, vw.buffer, v));
        PJRT_Buffer_Destroy_Args vd = {.buffer = vw.buffer};
        OLD_OK(c, PJRT_Buffer_Destroy, PJRT_Buffer_Destroy_Args, vd);
      }
    }
    PJRT_Buffer_DecreaseExternalReferenceCount_Args dec = {.buffer = b};
    OLD_OK(c, PJRT_Buffer_DecreaseExternalReferenceCount,
           PJRT_Buffer_DecreaseExternalReferenceCount_Args, dec);
  }
  float half[2] = {0, 0};
  PJRT_Buffer_CopyRawToHost_Args raw = {.buffer = b, .dst = half, .offset = 4, .transfer_size = 8};
  OLD_OPT(c, PJRT_Buffer_CopyRawToHost, PJRT_Buffer_CopyRawToHost_Args, raw, done);
  if (done) {
    CTS_TRY(old_event_done(c, raw.event));
    if (half[0] != 2 || half[1] != 3)
      return cts_fail(c->t, "%s: CopyRawToHost read %g %g", c->who, half[0], half[1]);
  }
  if (mem) {
    PJRT_Buffer_CopyToMemory_Args cm = {.buffer = b, .dst_memory = mem};
    OLD_OPT(c, PJRT_Buffer_CopyToMemory, PJRT_Buffer_CopyToMemory_Args, cm, done);
    if (done && cm.dst_buffer) {
      CTS_TRY(old_expect(c, cm.dst_buffer, v));
      PJRT_Buffer_Destroy_Args cd = {.buffer = cm.dst_buffer};
      OLD_OK(c, PJRT_Buffer_Destroy, PJRT_Buffer_Destroy_Args, cd);
    }
  }
  if (CTS_FN(c->t, PJRT_Client_CreateUninitializedBuffer)) {
    static const int64_t dims[2] = {2, 3};
    PJRT_Client_CreateUninitializedBuffer_Args ub = {
        .client = client, .shape_dims = dims, .shape_num_dims = 2,
        .shape_element_type = PJRT_Buffer_Type_S32, .device = d};
    OLD_OPT(c, PJRT_Client_CreateUninitializedBuffer, PJRT_Client_CreateUninitializedBuffer_Args,
            ub, done);
    if (done && ub.buffer) {
      PJRT_Buffer_Destroy_Args ud = {.buffer = ub.buffer};
      OLD_OK(c, PJRT_Buffer_Destroy, PJRT_Buffer_Destroy_Args, ud);
    }
  }
  PJRT_Buffer_Destroy_Args bd = {.buffer = b};
  OLD_OK(c, PJRT_Buffer_Destroy, PJRT_Buffer_Destroy_Args, bd);
  PJRT_Client_TopologyDescription_Args td = {.client = client};
  OLD_OPT(c, PJRT_Client_TopologyDescription, PJRT_Client_TopologyDescription_Args, td, done);
  if (done && td.topology) {
    PJRT_TopologyDescription_PlatformName_Args tn = {.topology = td.topology};
    OLD_OK(c, PJRT_TopologyDescription_PlatformName, PJRT_TopologyDescription_PlatformName_Args,
           tn);
    PJRT_TopologyDescription_GetDeviceDescriptions_Args tg = {.topology = td.topology};
    OLD_OK(c, PJRT_TopologyDescription_GetDeviceDescriptions,
           PJRT_TopologyDescription_GetDeviceDescriptions_Args, tg);
    if (!tg.num_descriptions) return cts_fail(c->t, "%s: topology without devices", c->who);
  }
  return CTS_PASS;
}

/* Compiles the add program through the caller's Program and Compile structs. */
static cts_status old_compile(const old_caller *c, PJRT_Client *client, PJRT_Device *d,
                              PJRT_LoadedExecutable **out) {
  int id;
  CTS_TRY(cts_device_id(c->t, d, &id));
  char opts[256];
  size_t opts_size = cts_compile_options(opts, sizeof opts, &id, 1, false);
  PJRT_Program prog = {.code = (char *)cts_prog_add_text.code,
                       .code_size = cts_prog_add_text.code_size, .format = "mlir",
                       .format_size = 4};
  size_t pd, pe;
  if (!old_size("PJRT_Program", c->minor, &pd, &pe)) return cts_fail(c->t, "no PJRT_Program");
  old_struct po;
  if (!old_place(&po, &prog, sizeof prog, pd, pe)) return cts_fail(c->t, "out of memory");
  PJRT_Client_Compile_Args cc = {.client = client, .program = (const PJRT_Program *)(void *)po.mem,
                                 .compile_options = opts, .compile_options_size = opts_size};
  PJRT_Error *e = NULL;
  OLD_CALL(c, PJRT_Client_Compile, PJRT_Client_Compile_Args, cc, e, break);
  bool intact = old_take(&po, &prog, sizeof prog);
  CTS_TRY(old_result(c, e, "PJRT_Client_Compile", false));
  if (!intact) return cts_fail(c->t, "%s: Compile wrote past PJRT_Program", c->who);
  if (!cc.executable) return cts_fail(c->t, "%s: NULL executable", c->who);
  *out = cc.executable;
  return CTS_PASS;
}

static cts_status old_executable_queries(const old_caller *c, PJRT_LoadedExecutable *le) {
  bool done;
  PJRT_LoadedExecutable_AddressableDevices_Args ad = {.executable = le};
  OLD_OK(c, PJRT_LoadedExecutable_AddressableDevices, PJRT_LoadedExecutable_AddressableDevices_Args,
         ad);
  PJRT_LoadedExecutable_Fingerprint_Args lf = {.executable = le};
  OLD_OPT(c, PJRT_LoadedExecutable_Fingerprint, PJRT_LoadedExecutable_Fingerprint_Args, lf, done);
  PJRT_LoadedExecutable_IsDeleted_Args del = {.executable = le};
  OLD_OK(c, PJRT_LoadedExecutable_IsDeleted, PJRT_LoadedExecutable_IsDeleted_Args, del);
  if (CTS_FN(c->t, PJRT_LoadedExecutable_GetDeviceAssignment)) {
    PJRT_LoadedExecutable_GetDeviceAssignment_Args da = {.executable = le};
    OLD_OPT(c, PJRT_LoadedExecutable_GetDeviceAssignment,
            PJRT_LoadedExecutable_GetDeviceAssignment_Args, da, done);
    if (done && da.serialized_device_assignment_deleter)
      da.serialized_device_assignment_deleter(da.serialized_device_assignment);
  }
  PJRT_LoadedExecutable_GetExecutable_Args g = {.loaded_executable = le};
  OLD_OK(c, PJRT_LoadedExecutable_GetExecutable, PJRT_LoadedExecutable_GetExecutable_Args, g);
  PJRT_Executable *x = g.executable;
  PJRT_Executable_Name_Args nm = {.executable = x};
  OLD_OK(c, PJRT_Executable_Name, PJRT_Executable_Name_Args, nm);
  PJRT_Executable_NumReplicas_Args nr = {.executable = x};
  OLD_OK(c, PJRT_Executable_NumReplicas, PJRT_Executable_NumReplicas_Args, nr);
  PJRT_Executable_NumPartitions_Args np = {.executable = x};
  OLD_OK(c, PJRT_Executable_NumPartitions, PJRT_Executable_NumPartitions_Args, np);
  PJRT_Executable_NumOutputs_Args no = {.executable = x};
  OLD_OK(c, PJRT_Executable_NumOutputs, PJRT_Executable_NumOutputs_Args, no);
  if (no.num_outputs != 1) return cts_fail(c->t, "%s: %zu outputs", c->who, no.num_outputs);
  PJRT_Executable_OutputElementTypes_Args ot = {.executable = x};
  OLD_OK(c, PJRT_Executable_OutputElementTypes, PJRT_Executable_OutputElementTypes_Args, ot);
  PJRT_Executable_OutputDimensions_Args od = {.executable = x};
  OLD_OK(c, PJRT_Executable_OutputDimensions, PJRT_Executable_OutputDimensions_Args, od);
  PJRT_Executable_OutputMemoryKinds_Args om = {.executable = x};
  OLD_OPT(c, PJRT_Executable_OutputMemoryKinds, PJRT_Executable_OutputMemoryKinds_Args, om, done);
  if (CTS_FN(c->t, PJRT_Executable_ParameterMemoryKinds)) {
    PJRT_Executable_ParameterMemoryKinds_Args pm = {.executable = x};
    OLD_OPT(c, PJRT_Executable_ParameterMemoryKinds, PJRT_Executable_ParameterMemoryKinds_Args, pm,
            done);
  }
  PJRT_Executable_SizeOfGeneratedCodeInBytes_Args sz = {.executable = x};
  OLD_OPT(c, PJRT_Executable_SizeOfGeneratedCodeInBytes,
          PJRT_Executable_SizeOfGeneratedCodeInBytes_Args, sz, done);
  PJRT_Executable_GetCompiledMemoryStats_Args ms = {.executable = x};
  OLD_OPT(c, PJRT_Executable_GetCompiledMemoryStats, PJRT_Executable_GetCompiledMemoryStats_Args,
          ms, done);
  PJRT_Executable_Fingerprint_Args fp = {.executable = x};
  OLD_OPT(c, PJRT_Executable_Fingerprint, PJRT_Executable_Fingerprint_Args, fp, done);
  PJRT_Executable_GetCostAnalysis_Args ca = {.executable = x};
  OLD_OPT(c, PJRT_Executable_GetCostAnalysis, PJRT_Executable_GetCostAnalysis_Args, ca, done);
  PJRT_Executable_OptimizedProgram_Args op = {.executable = x};
  PJRT_Program prog = {.struct_size = PJRT_Program_STRUCT_SIZE}; /* sizing call: code NULL */
  op.program = &prog;
  OLD_OPT(c, PJRT_Executable_OptimizedProgram, PJRT_Executable_OptimizedProgram_Args, op, done);
  if (CTS_FN(c->t, PJRT_Executable_GetCompileOptions)) {
    PJRT_Executable_GetCompileOptions_Args co = {.executable = x};
    OLD_OPT(c, PJRT_Executable_GetCompileOptions, PJRT_Executable_GetCompileOptions_Args, co,
            done);
    if (done && co.serialized_compile_options_deleter)
      co.serialized_compile_options_deleter(co.serialized_compile_options);
  }
  PJRT_Executable_Destroy_Args xd = {.executable = x};
  OLD_OK(c, PJRT_Executable_Destroy, PJRT_Executable_Destroy_Args, xd);
  return CTS_PASS;
}

/* Executes `exe` (a + b) with the caller's Execute_Args and ExecuteOptions. */
static cts_status old_execute(const old_caller *c, PJRT_Client *client, PJRT_Device *d,
                              PJRT_LoadedExecutable *exe) {
  const float a[4] = {1, 2, 3, 4}, b[4] = {0.5f, 0.25f, -1, 8}, want[4] = {1.5f, 2.25f, 2, 12};
  PJRT_Buffer *args[2], *out[1] = {NULL};
  CTS_TRY(old_buffer(c, client, d, a, &args[0]));
  CTS_TRY(old_buffer(c, client, d, b, &args[1]));
  size_t od, oe;
  if (!old_size("PJRT_ExecuteOptions", c->minor, &od, &oe))
    return cts_fail(c->t, "no PJRT_ExecuteOptions");
  PJRT_ExecuteOptions o = {.launch_id = 0};
  old_struct oo;
  if (!old_place(&oo, &o, sizeof o, od, oe)) return cts_fail(c->t, "out of memory");
  PJRT_Buffer *const *al[1] = {args};
  PJRT_Buffer **ol[1] = {out};
  PJRT_Event *done[1] = {NULL};
  PJRT_LoadedExecutable_Execute_Args x = {
      .executable = exe, .options = (PJRT_ExecuteOptions *)(void *)oo.mem, .argument_lists = al,
      .num_devices = 1, .num_args = 2, .output_lists = ol, .device_complete_events = done};
  PJRT_Error *e = NULL;
  OLD_CALL(c, PJRT_LoadedExecutable_Execute, PJRT_LoadedExecutable_Execute_Args, x, e, break);
  bool intact = old_take(&oo, &o, sizeof o);
  CTS_TRY(old_result(c, e, "PJRT_LoadedExecutable_Execute", false));
  if (!intact) return cts_fail(c->t, "%s: Execute wrote past ExecuteOptions", c->who);
  CTS_TRY(old_event_done(c, done[0]));
  if (!out[0]) return cts_fail(c->t, "%s: NULL output", c->who);
  CTS_TRY(old_expect(c, out[0], want));
  CTS_TRY(old_buffer_queries(c, out[0], d));
  PJRT_Buffer *all[3] = {args[0], args[1], out[0]};
  for (int i = 0; i < 3; i++) {
    PJRT_Buffer_Destroy_Args bd = {.buffer = all[i]};
    OLD_OK(c, PJRT_Buffer_Destroy, PJRT_Buffer_Destroy_Args, bd);
  }
  return CTS_PASS;
}

/* Serializes `le` and loads it back through the caller's DeserializeAndLoad struct, then runs
 * the copy (optional: plugins without serialization answer UNIMPLEMENTED). */
static cts_status old_serialize_roundtrip(const old_caller *c, PJRT_Client *client,
                                          PJRT_Device *d, PJRT_LoadedExecutable *le) {
  PJRT_LoadedExecutable_GetExecutable_Args g = {
      .struct_size = PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE, .loaded_executable = le};
  CTS_TRY(cts_err(c->t, c->t->api->PJRT_LoadedExecutable_GetExecutable(&g), "GetExecutable"));
  bool done;
  PJRT_Executable_Serialize_Args s = {.executable = g.executable};
  OLD_OPT(c, PJRT_Executable_Serialize, PJRT_Executable_Serialize_Args, s, done);
  if (done) {
    PJRT_Executable_DeserializeAndLoad_Args da = {
        .client = client, .serialized_executable = s.serialized_bytes,
        .serialized_executable_size = s.serialized_bytes_size};
    OLD_OPT(c, PJRT_Executable_DeserializeAndLoad, PJRT_Executable_DeserializeAndLoad_Args, da,
            done);
    if (s.serialized_executable_deleter) s.serialized_executable_deleter(s.serialized_executable);
    if (done) {
      if (!da.loaded_executable) return cts_fail(c->t, "%s: NULL deserialized executable", c->who);
      CTS_TRY(old_execute(c, client, d, da.loaded_executable));
      PJRT_LoadedExecutable_Delete_Args ldel = {.executable = da.loaded_executable};
      OLD_OK(c, PJRT_LoadedExecutable_Delete, PJRT_LoadedExecutable_Delete_Args, ldel);
      PJRT_LoadedExecutable_Destroy_Args ld = {.executable = da.loaded_executable};
      OLD_OK(c, PJRT_LoadedExecutable_Destroy, PJRT_LoadedExecutable_Destroy_Args, ld);
    }
  }
  PJRT_Executable_Destroy_Args xd = {.struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE,
                                     .executable = g.executable};
  cts_error_free(c->t, c->t->api->PJRT_Executable_Destroy(&xd));
  return CTS_PASS;
}

/* Everything above, as caller `who` of API 0.`minor`. */
static cts_status old_caller_run(cts_ctx *t, int minor, const char *who) {
  const old_caller c = {.t = t, .minor = minor, .who = who};
  CTS_TRY(old_attributes(&c));
  PJRT_Client_Create_Args cc = {0};
  OLD_OK(&c, PJRT_Client_Create, PJRT_Client_Create_Args, cc);
  if (!cc.client) return cts_fail(t, "%s: NULL client", who);
  PJRT_Device *d;
  CTS_TRY(old_client_queries(&c, cc.client, &d));
  CTS_TRY(old_device_queries(&c, cc.client, d));
  PJRT_Device_DefaultMemory_Args dm = {.struct_size = PJRT_Device_DefaultMemory_Args_STRUCT_SIZE,
                                       .device = d};
  PJRT_Error *dm_err = t->api->PJRT_Device_DefaultMemory(&dm);
  PJRT_Memory *mem = dm_err ? NULL : dm.memory;
  cts_error_free(t, dm_err);
  CTS_TRY(old_more_calls(&c, cc.client, d, mem));
  PJRT_LoadedExecutable *le;
  CTS_TRY(old_compile(&c, cc.client, d, &le));
  CTS_TRY(old_executable_queries(&c, le));
  CTS_TRY(old_execute(&c, cc.client, d, le));
  CTS_TRY(old_serialize_roundtrip(&c, cc.client, d, le));
  PJRT_LoadedExecutable_Destroy_Args ld = {.executable = le};
  OLD_OK(&c, PJRT_LoadedExecutable_Destroy, PJRT_LoadedExecutable_Destroy_Args, ld);
  PJRT_Client_Destroy_Args cd = {.client = cc.client};
  OLD_OK(&c, PJRT_Client_Destroy, PJRT_Client_Destroy_Args, cd);
  return CTS_PASS;
}

#define CTS_OLD_CALLER_CHECK(id, minor, desc) \
  CTS_CHECK(cts_old_##id) { return old_caller_run(t, (minor), (desc)); }
ANVIL_PJRT_CALLERS(CTS_OLD_CALLER_CHECK)

CTS_CHECK(cts_old_execute_options_versions) {
  /* Every size ExecuteOptions ever had, not only the supported callers' ones. */
  PJRT_Client *client;
  CTS_TRY(cts_client_create(t, &client));
  PJRT_Device *const *devs;
  size_t n;
  CTS_TRY(cts_addressable_devices(t, client, &devs, &n));
  char refused[256] = "", first[1024] = "";
  size_t len = 0;
  for (size_t i = 0; i < sizeof k_history / sizeof k_history[0]; i++) {
    if (strcmp(k_history[i].type, "PJRT_ExecuteOptions")) continue;
    const old_caller c = {.t = t, .minor = k_history[i].minor, .who = "ExecuteOptions"};
    PJRT_LoadedExecutable *exe;
    CTS_TRY(old_compile(&c, client, devs[0], &exe));
    t->msg[0] = 0;
    cts_status s = old_execute(&c, client, devs[0], exe);
    cts_executable_destroy(t, exe);
    if (s == CTS_SKIP || s == CTS_UNSUPPORTED) return s;
    if (s == CTS_FAIL && len < sizeof refused - 16) {
      if (!len) snprintf(first, sizeof first, "%.1000s", t->msg);
      len += (size_t)snprintf(refused + len, sizeof refused - len, " %zu",
                              k_history[i].declared);
    }
  }
  if (len)
    return cts_fail(t, "ExecuteOptions sizes refused or wrong:%s (first: %s)", refused, first);
  t->msg[0] = 0;
  cts_client_destroy(t, client);
  return CTS_PASS;
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
