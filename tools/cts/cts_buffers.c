/* anvil-cts: buffers — host transfers of every element type and semantics, strides, queries,
 * copies between devices and memories, deletion, external references, raw pointers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cts.h"

static cts_status setup(cts_ctx *t, PJRT_Client **c, PJRT_Device **d) {
  CTS_TRY(cts_client_create(t, c));
  PJRT_Device *const *ad;
  size_t n;
  CTS_TRY(cts_addressable_devices(t, *c, &ad, &n));
  *d = ad[0];
  return CTS_PASS;
}

static void fill_pattern(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(seed * 31u + i * 7u + 1u);
}

CTS_CHECK(cts_buffer_roundtrip) {
  CTS_NEED_FN(t, PJRT_Buffer_Dimensions);
  CTS_NEED_FN(t, PJRT_Buffer_ElementType);
  CTS_NEED_FN(t, PJRT_Buffer_OnDeviceSizeInBytes);
  CTS_NEED_FN(t, PJRT_Buffer_Device);
  PJRT_Client *c;
  PJRT_Device *d;
  CTS_TRY(setup(t, &c, &d));
  const float host[6] = {1.5f, -2.0f, 3.25f, 0.0f, -0.0f, 1e30f};
  const int64_t dims[2] = {2, 3};
  PJRT_Buffer *b;
  CTS_TRY(cts_buffer_from_host(t, c, d, PJRT_Buffer_Type_F32, dims, 2, host, &b));
  float back[6];
  CTS_TRY(cts_to_host(t, b, back, sizeof back));
  if (memcmp(back, host, sizeof host)) return cts_fail(t, "data differs after the round trip");
  PJRT_Buffer_Dimensions_Args dm = {.struct_size = PJRT_Buffer_Dimensions_Args_STRUCT_SIZE,
                                    .buffer = b};
  CTS_TRY(cts_err(t, t->api->PJRT_Buffer_Dimensions(&dm), "PJRT_Buffer_Dimensions"));
  if (dm.num_dims != 2 || !dm.dims || dm.dims[0] != 2 || dm.dims[1] != 3)
    return cts_fail(t, "dimensions are not [2, 3]");
  PJRT_Buffer_ElementType_Args et = {.struct_size = PJRT_Buffer_ElementType_Args_STRUCT_SIZE,
                                     .buffer = b};
  CTS_TRY(cts_err(t, t->api->PJRT_Buffer_ElementType(&et), "PJRT_Buffer_ElementType"));
  if (et.type != PJRT_Buffer_Type_F32) return cts_fail(t, "element type %d, not F32", et.type);
  PJRT_Buffer_OnDeviceSizeInBytes_Args sz = {
      .struct_size = PJRT_Buffer_OnDeviceSizeInBytes_Args_STRUCT_SIZE, .buffer = b};
  CTS_TRY(cts_err(t, t->api->PJRT_Buffer_OnDeviceSizeInBytes(&sz),
                  "PJRT_Buffer_OnDeviceSizeInBytes"));
  if (sz.on_device_size_in_bytes < sizeof host)
    return cts_fail(t, "on-device size %zu < 24", sz.on_device_size_in_bytes);
  PJRT_Buffer_Device_Args dv = {.struct_size = PJRT_Buffer_Device_Args_STRUCT_SIZE, .buffer = b};
  CTS_TRY(cts_err(t, t->api->PJRT_Buffer_Device(&dv), "PJRT_Buffer_Device"));
  if (dv.device != d) return cts_fail(t, "PJRT_Buffer_Device is not the device it was put on");
  if (CTS_FN(t, PJRT_Buffer_Memory) && CTS_FN(t, PJRT_Device_DefaultMemory)) {
    PJRT_Buffer_Memory_Args bm = {.struct_size = PJRT_Buffer_Memory_Args_STRUCT_SIZE, .buffer = b};
    PJRT_Device_DefaultMemory_Args dmem = {
        .struct_size = PJRT_Device_DefaultMemory_Args_STRUCT_SIZE, .device = d};
    PJRT_Error *e1 = t->api->PJRT_Buffer_Memory(&bm);
    PJRT_Error *e2 = t->api->PJRT_Device_DefaultMemory(&dmem);
    if (!e1 && !e2 && bm.memory != dmem.memory)
      return cts_fail(t, "buffer placed by device is not in the device's default memory");
    cts_error_free(t, e1);
    cts_error_free(t, e2);
  }
  cts_buffer_destroy(t, b);
  cts_client_destroy(t, c);
  return CTS_PASS;
}

static const struct {
  PJRT_Buffer_Type type;
  const char *name;
} kStandardTypes[] = {
    {PJRT_Buffer_Type_PRED, "pred"}, {PJRT_Buffer_Type_S8, "s8"},   {PJRT_Buffer_Type_S16, "s16"},
    {PJRT_Buffer_Type_S32, "s32"},   {PJRT_Buffer_Type_S64, "s64"}, {PJRT_Buffer_Type_U8, "u8"},
    {PJRT_Buffer_Type_U16, "u16"},   {PJRT_Buffer_Type_U32, "u32"}, {PJRT_Buffer_Type_U64, "u64"},
    {PJRT_Buffer_Type_F16, "f16"},   {PJRT_Buffer_Type_F32, "f32"}, {PJRT_Buffer_Type_F64, "f64"},
    {PJRT_Buffer_Type_BF16, "bf16"}, {PJRT_Buffer_Type_C64, "c64"}, {PJRT_Buffer_Type_C128, "c128"},
};
static const struct {
  PJRT_Buffer_Type type;
  const char *name;
} kExoticTypes[] = {
    {PJRT_Buffer_Type_F8E5M2, "f8e5m2"},         {PJRT_Buffer_Type_F8E4M3FN, "f8e4m3fn"},
    {PJRT_Buffer_Type_F8E4M3B11FNUZ, "f8e4m3b11fnuz"}, {PJRT_Buffer_Type_F8E5M2FNUZ, "f8e5m2fnuz"},
    {PJRT_Buffer_Type_F8E4M3FNUZ, "f8e4m3fnuz"}, {PJRT_Buffer_Type_F8E4M3, "f8e4m3"},
    {PJRT_Buffer_Type_F8E3M4, "f8e3m4"},         {PJRT_Buffer_Type_F8E8M0FNU, "f8e8m0fnu"},
};

/* Round trip of one type: returns PASS, FAIL, or UNSUPPORTED when the plugin rejects the type. */
static cts_status roundtrip_type(cts_ctx *t, PJRT_Client *c, PJRT_Device *d, PJRT_Buffer_Type type,
                                 const char *name) {
  const int64_t dims[2] = {3, 5};
  size_t bytes = 15 * cts_type_size(type);
  unsigned char host[240], back[240];
  fill_pattern(host, bytes, (unsigned)type);
  if (type == PJRT_Buffer_Type_PRED)
    for (size_t i = 0; i < bytes; i++) host[i] &= 1; /* pred is 0 or 1 */
  PJRT_Client_BufferFromHostBuffer_Args a = {
      .struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE, .client = c,
      .data = host, .type = type, .dims = dims, .num_dims = 2,
      .host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableOnlyDuringCall, .device = d};
  PJRT_Error *e = t->api->PJRT_Client_BufferFromHostBuffer(&a);
  if (e) {
    char text[512];
    cts_error_text(t, e, text, sizeof text);
    cts_error_free(t, e);
    return cts_unsupported(t, "%s: %s", name, text);
  }
  CTS_TRY(cts_await(t, a.done_with_host_buffer, name));
  PJRT_Buffer_ElementType_Args et = {.struct_size = PJRT_Buffer_ElementType_Args_STRUCT_SIZE,
                                     .buffer = a.buffer};
  CTS_TRY(cts_err(t, t->api->PJRT_Buffer_ElementType(&et), "PJRT_Buffer_ElementType"));
  if (et.type != type) return cts_fail(t, "%s: element type reads back as %d", name, et.type);
  memset(back, 0, sizeof back);
  CTS_TRY(cts_to_host(t, a.buffer, back, bytes));
  if (memcmp(back, host, bytes)) return cts_fail(t, "%s: data differs after the round trip", name);
  cts_buffer_destroy(t, a.buffer);
  return CTS_PASS;
}

CTS_CHECK(cts_buffer_standard_types) {
  PJRT_Client *c;
  PJRT_Device *d;
  CTS_TRY(setup(t, &c, &d));
  for (size_t i = 0; i < sizeof kStandardTypes / sizeof kStandardTypes[0]; i++) {
    cts_status s = roundtrip_type(t, c, d, kStandardTypes[i].type, kStandardTypes[i].name);
    if (s == CTS_UNSUPPORTED) return cts_fail(t, "standard type rejected: %s", t->msg);
    if (s != CTS_PASS) return s;
  }
  cts_client_destroy(t, c);
  return CTS_PASS;
}

CTS_CHECK(cts_buffer_f8_types) {
  PJRT_Client *c;
  PJRT_Device *d;
  CTS_TRY(setup(t, &c, &d));
  char missing[512] = "";
  size_t len = 0, nmissing = 0, n = sizeof kExoticTypes / sizeof kExoticTypes[0];
  for (size_t i = 0; i < n; i++) {
    cts_status s = roundtrip_type(t, c, d, kExoticTypes[i].type, kExoticTypes[i].name);
    if (s == CTS_FAIL || s == CTS_SKIP) return s;
    if (s == CTS_UNSUPPORTED) {
      nmissing++;
      len += (size_t)snprintf(missing + len, sizeof missing - len, " %s", kExoticTypes[i].name);
    }
  }
  t->msg[0] = 0;
  cts_client_destroy(t, c);
  if (nmissing == n) return cts_unsupported(t, "no 8-bit float type accepted");
  if (nmissing) cts_note(t, "not accepted:%s", missing);
  return CTS_PASS;
}

CTS_CHECK(cts_buffer_scalar_and_empty) {
  PJRT_Client *c;
  PJRT_Device *d;
  CTS_TRY(setup(t, &c, &d));
  const double scalar = 2.718281828;
  PJRT_Buffer *b;
  CTS_TRY(cts_buffer_from_host(t, c, d, PJRT_Buffer_Type_F64, NULL, 0, &scalar, &b));
  double back = 0;
  CTS_TRY(cts_to_host(t, b, &back, sizeof back));
  if (back != scalar) return cts_fail(t, "rank-0 f64 reads back as %g", back);
  cts_buffer_destroy(t, b);
  const int64_t dims[2] = {0, 3};
  const float none[1] = {0};
  CTS_TRY(cts_buffer_from_host(t, c, d, PJRT_Buffer_Type_F32, dims, 2, none, &b));
  PJRT_Buffer_Dimensions_Args dm = {.struct_size = PJRT_Buffer_Dimensions_Args_STRUCT_SIZE,
                                    .buffer = b};
  CTS_TRY(cts_err(t, t->api->PJRT_Buffer_Dimensions(&dm), "PJRT_Buffer_Dimensions"));
  if (dm.num_dims != 2 || dm.dims[0] != 0 || dm.dims[1] != 3)
    return cts_fail(t, "empty buffer dimensions are not [0, 3]");
  float sink[1];
  CTS_TRY(cts_to_host(t, b, sink, 0));
  cts_buffer_destroy(t, b);
  cts_client_destroy(t, c);
  return CTS_PASS;
}

CTS_CHECK(cts_buffer_to_host_size_query) {
  /* ToHostBuffer with dst == NULL reports the needed size in dst_size and copies nothing. */
  PJRT_Client *c;
  PJRT_Device *d;
  CTS_TRY(setup(t, &c, &d));
  const int32_t v[6] = {1, 2, 3, 4, 5, 6};
  const int64_t dims[2] = {3, 2};
  PJRT_Buffer *b;
  CTS_TRY(cts_buffer_from_host(t, c, d, PJRT_Buffer_Type_S32, dims, 2, v, &b));
  PJRT_Buffer_ToHostBuffer_Args a = {.struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE,
                                     .src = b};
  CTS_TRY(cts_err_opt(t, t->api->PJRT_Buffer_ToHostBuffer(&a), "ToHostBuffer size query"));
  if (a.event) CTS_TRY(cts_await(t, a.event, "size query event"));
  if (a.dst_size != sizeof v) return cts_fail(t, "size query gave %zu, expected 24", a.dst_size);
  cts_buffer_destroy(t, b);
  cts_client_destroy(t, c);
  return CTS_PASS;
}

/* One host-buffer semantics: the device copy must hold the data as it was at call time. */
static cts_status semantics(cts_ctx *t, PJRT_HostBufferSemantics sem, bool optional) {
  PJRT_Client *c;
  PJRT_Device *d;
  CTS_TRY(setup(t, &c, &d));
  /* Zero-copy semantics may alias the host memory: give it aligned storage that outlives the
   * buffer. */
  float *host = aligned_alloc(64, 64 * sizeof(float));
  if (!host) return cts_fail(t, "out of memory");
  for (int i = 0; i < 64; i++) host[i] = (float)i * 0.5f;
  const int64_t dims[1] = {64};
  PJRT_Client_BufferFromHostBuffer_Args a = {
      .struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE, .client = c, .data = host,
      .type = PJRT_Buffer_Type_F32, .dims = dims, .num_dims = 1, .host_buffer_semantics = sem,
      .device = d};
  PJRT_Error *e = t->api->PJRT_Client_BufferFromHostBuffer(&a);
  if (e && optional) return cts_err_opt(t, e, "BufferFromHostBuffer");
  CTS_TRY(cts_err(t, e, "BufferFromHostBuffer"));
  if (!a.buffer) return cts_fail(t, "NULL buffer");
  if (sem == PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes && !a.done_with_host_buffer)
    return cts_fail(t, "no done_with_host_buffer event for kImmutableUntilTransferCompletes");
  /* With zero copy the host memory may stay in use until the buffer is gone, so the done event
   * may only fire after Destroy: wait for it there. */
  bool zero_copy = sem == PJRT_HostBufferSemantics_kImmutableZeroCopy ||
                   sem == PJRT_HostBufferSemantics_kMutableZeroCopy;
  if (!zero_copy) CTS_TRY(cts_await(t, a.done_with_host_buffer, "done_with_host_buffer"));
  float want[64], back[64];
  memcpy(want, host, sizeof want);
  if (!zero_copy)
    for (int i = 0; i < 64; i++) host[i] = -1.0f; /* the plugin must not see this */
  CTS_TRY(cts_to_host(t, a.buffer, back, sizeof back));
  if (memcmp(back, want, sizeof want)) return cts_fail(t, "device data differs from the host data");
  cts_buffer_destroy(t, a.buffer);
  if (zero_copy) CTS_TRY(cts_await(t, a.done_with_host_buffer, "done_with_host_buffer"));
  free(host);
  cts_client_destroy(t, c);
  return CTS_PASS;
}

CTS_CHECK(cts_buffer_semantics_during_call) {
  return semantics(t, PJRT_HostBufferSemantics_kImmutableOnlyDuringCall, false);
}
CTS_CHECK(cts_buffer_semantics_until_transfer) {
  return semantics(t, PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes, false);
}
CTS_CHECK(cts_buffer_semantics_zero_copy) {
  return semantics(t, PJRT_HostBufferSemantics_kImmutableZeroCopy, true);
}
CTS_CHECK(cts_buffer_semantics_mutable_zero_copy) {
  return semantics(t, PJRT_HostBufferSemantics_kMutableZeroCopy, true);
}

CTS_CHECK(cts_buffer_strides) {
  /* Host data in column-major order, described by byte strides; the device array is logical. */
  PJRT_Client *c;
  PJRT_Device *d;
  CTS_TRY(setup(t, &c, &d));
  const float colmajor[6] = {1, 4, 2, 5, 3, 6}; /* logical [[1,2,3],[4,5,6]] */
  const float logical[6] = {1, 2, 3, 4, 5, 6};
  const int64_t dims[2] = {2, 3}, strides[2] = {4, 8};
  PJRT_Client_BufferFromHostBuffer_Args a = {
      .struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE, .client = c,
      .data = colmajor, .type = PJRT_Buffer_Type_F32, .dims = dims, .num_dims = 2,
      .byte_strides = strides, .num_byte_strides = 2,
      .host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableOnlyDuringCall, .device = d};
  CTS_TRY(cts_err_opt(t, t->api->PJRT_Client_BufferFromHostBuffer(&a),
                      "BufferFromHostBuffer with byte_strides {4, 8}"));
  CTS_TRY(cts_await(t, a.done_with_host_buffer, "done_with_host_buffer"));
  float back[6];
  CTS_TRY(cts_to_host(t, a.buffer, back, sizeof back));
  if (memcmp(back, logical, sizeof back))
    return cts_fail(t, "strided input read back as %g %g %g %g %g %g (expected 1..6)", back[0],
                    back[1], back[2], back[3], back[4], back[5]);
  cts_buffer_destroy(t, a.buffer);
  cts_client_destroy(t, c);
  return CTS_PASS;
}

CTS_CHECK(cts_buffer_ready_event) {
  PJRT_Client *c;
  PJRT_Device *d;
  CTS_TRY(setup(t, &c, &d));
  const float v[4] = {1, 2, 3, 4};
  PJRT_Buffer *b;
  CTS_TRY(cts_f32_buffer(t, c, d, v, 4, &b));
  PJRT_Event *ev[2];
  for (int i = 0; i < 2; i++) { /* two independent events for the same buffer */
    PJRT_Buffer_ReadyEvent_Args r = {.struct_size = PJRT_Buffer_ReadyEvent_Args_STRUCT_SIZE,
                                     .buffer = b};
    CTS_TRY(cts_err(t, t->api->PJRT_Buffer_ReadyEvent(&r), "PJRT_Buffer_ReadyEvent"));
    if (!r.event) return cts_fail(t, "NULL ready event");
    ev[i] = r.event;
  }
  PJRT_Event_Await_Args aw = {.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE, .event = ev[0]};
  CTS_TRY(cts_err(t, t->api->PJRT_Event_Await(&aw), "PJRT_Event_Await"));
  PJRT_Event_IsReady_Args ir = {.struct_size = PJRT_Event_IsReady_Args_STRUCT_SIZE, .event = ev[0]};
  CTS_TRY(cts_err(t, t->api->PJRT_Event_IsReady(&ir), "PJRT_Event_IsReady"));
  if (!ir.is_ready) return cts_fail(t, "IsReady false after Await");
  PJRT_Event_Error_Args er = {.struct_size = PJRT_Event_Error_Args_STRUCT_SIZE, .event = ev[0]};
  CTS_TRY(cts_err(t, t->api->PJRT_Event_Error(&er), "PJRT_Event_Error of a successful event"));
  CTS_TRY(cts_await(t, ev[0], "ready event"));
  CTS_TRY(cts_await(t, ev[1], "second ready event"));
  cts_buffer_destroy(t, b);
  cts_client_destroy(t, c);
  return CTS_PASS;
}

CTS_CHECK(cts_buffer_copy_to_device) {
  CTS_NEED_FN(t, PJRT_Buffer_CopyToDevice);
  PJRT_Client *c;
  CTS_TRY(cts_client_create(t, &c));
  PJRT_Device *const *ad;
  size_t n;
  CTS_TRY(cts_addressable_devices(t, c, &ad, &n));
  const float v[4] = {9, 8, 7, 6};
  PJRT_Buffer *b;
  CTS_TRY(cts_f32_buffer(t, c, ad[0], v, 4, &b));
  size_t copies = 0;
  for (size_t i = n > 1 ? 1 : 0; i < n; i++) {
    PJRT_Buffer_CopyToDevice_Args a = {.struct_size = PJRT_Buffer_CopyToDevice_Args_STRUCT_SIZE,
                                       .buffer = b, .dst_device = ad[i]};
    PJRT_Error *e = t->api->PJRT_Buffer_CopyToDevice(&a);
    if (e && n == 1) { /* copying onto its own device may be refused */
      cts_error_free(t, e);
      cts_client_destroy(t, c);
      return cts_unsupported(t, "one device only and a same-device copy was refused");
    }
    CTS_TRY(cts_err(t, e, "PJRT_Buffer_CopyToDevice"));
    if (!a.dst_buffer) return cts_fail(t, "NULL dst_buffer");
    CTS_TRY(cts_expect_f32(t, a.dst_buffer, v, 4, "copied buffer"));
    PJRT_Buffer_Device_Args dv = {.struct_size = PJRT_Buffer_Device_Args_STRUCT_SIZE,
                                  .buffer = a.dst_buffer};
    CTS_TRY(cts_err(t, t->api->PJRT_Buffer_Device(&dv), "PJRT_Buffer_Device"));
    if (dv.device != ad[i]) return cts_fail(t, "copy to device %zu landed elsewhere", i);
    cts_buffer_destroy(t, a.dst_buffer);
    copies++;
  }
  CTS_TRY(cts_expect_f32(t, b, v, 4, "source after copies"));
  cts_note(t, "%zu copies", copies);
  cts_buffer_destroy(t, b);
  cts_client_destroy(t, c);
  return CTS_PASS;
}

CTS_CHECK(cts_buffer_copy_to_memory) {
  CTS_WANT_FN(t, PJRT_Buffer_CopyToMemory);
  PJRT_Client *c;
  PJRT_Device *d;
  CTS_TRY(setup(t, &c, &d));
  PJRT_Device_AddressableMemories_Args m = {
      .struct_size = PJRT_Device_AddressableMemories_Args_STRUCT_SIZE, .device = d};
  CTS_TRY(cts_err_opt(t, t->api->PJRT_Device_AddressableMemories(&m),
                      "PJRT_Device_AddressableMemories"));
  const float v[4] = {0.5f, 1.5f, 2.5f, 3.5f};
  PJRT_Buffer *b;
  CTS_TRY(cts_f32_buffer(t, c, d, v, 4, &b));
  for (size_t i = 0; i < m.num_memories; i++) {
    PJRT_Buffer_CopyToMemory_Args a = {.struct_size = PJRT_Buffer_CopyToMemory_Args_STRUCT_SIZE,
                                       .buffer = b, .dst_memory = m.memories[i]};
    CTS_TRY(cts_err_opt(t, t->api->PJRT_Buffer_CopyToMemory(&a), "PJRT_Buffer_CopyToMemory"));
    if (!a.dst_buffer) return cts_fail(t, "NULL dst_buffer");
    CTS_TRY(cts_expect_f32(t, a.dst_buffer, v, 4, "buffer copied to memory"));
    PJRT_Buffer_Memory_Args bm = {.struct_size = PJRT_Buffer_Memory_Args_STRUCT_SIZE,
                                  .buffer = a.dst_buffer};
    CTS_TRY(cts_err(t, t->api->PJRT_Buffer_Memory(&bm), "PJRT_Buffer_Memory"));
    if (bm.memory != m.memories[i]) return cts_fail(t, "copy to memory %zu landed elsewhere", i);
    cts_buffer_destroy(t, a.dst_buffer);
  }
  cts_note(t, "%zu memories", m.num_memories);
  cts_buffer_destroy(t, b);
  cts_client_destroy(t, c);
  return CTS_PASS;
}

CTS_CHECK(cts_buffer_delete) {
  PJRT_Client *c;
  PJRT_Device *d;
  CTS_TRY(setup(t, &c, &d));
  const float v[4] = {1, 2, 3, 4};
  PJRT_Buffer *b;
  CTS_TRY(cts_f32_buffer(t, c, d, v, 4, &b));
  bool deleted = true;
  CTS_TRY(cts_buffer_is_deleted(t, b, &deleted));
  if (deleted) return cts_fail(t, "a new buffer reports IsDeleted");
  PJRT_Buffer_Delete_Args del = {.struct_size = PJRT_Buffer_Delete_Args_STRUCT_SIZE, .buffer = b};
  CTS_TRY(cts_err(t, t->api->PJRT_Buffer_Delete(&del), "PJRT_Buffer_Delete"));
  CTS_TRY(cts_buffer_is_deleted(t, b, &deleted));
  if (!deleted) return cts_fail(t, "IsDeleted false after Delete");
  /* Shape queries stay valid on a deleted buffer (the handle lives until Destroy). */
  PJRT_Buffer_Dimensions_Args dm = {.struct_size = PJRT_Buffer_Dimensions_Args_STRUCT_SIZE,
                                    .buffer = b};
  CTS_TRY(cts_err(t, t->api->PJRT_Buffer_Dimensions(&dm), "Dimensions of a deleted buffer"));
  cts_buffer_destroy(t, b);
  cts_client_destroy(t, c);
  return CTS_PASS;
}

CTS_CHECK(cts_buffer_external_refs) {
  CTS_WANT_FN(t, PJRT_Buffer_IncreaseExternalReferenceCount);
  CTS_WANT_FN(t, PJRT_Buffer_DecreaseExternalReferenceCount);
  PJRT_Client *c;
  PJRT_Device *d;
  CTS_TRY(setup(t, &c, &d));
  const float v[4] = {1, 2, 3, 4};
  PJRT_Buffer *b;
  CTS_TRY(cts_f32_buffer(t, c, d, v, 4, &b));
  PJRT_Buffer_IncreaseExternalReferenceCount_Args inc = {
      .struct_size = PJRT_Buffer_IncreaseExternalReferenceCount_Args_STRUCT_SIZE, .buffer = b};
  CTS_TRY(cts_err_opt(t, t->api->PJRT_Buffer_IncreaseExternalReferenceCount(&inc),
                      "IncreaseExternalReferenceCount"));
  PJRT_Buffer_DecreaseExternalReferenceCount_Args dec = {
      .struct_size = PJRT_Buffer_DecreaseExternalReferenceCount_Args_STRUCT_SIZE, .buffer = b};
  CTS_TRY(cts_err(t, t->api->PJRT_Buffer_DecreaseExternalReferenceCount(&dec),
                  "DecreaseExternalReferenceCount"));
  CTS_TRY(cts_expect_error(t, t->api->PJRT_Buffer_DecreaseExternalReferenceCount(&dec),
                           "DecreaseExternalReferenceCount below zero"));
  cts_buffer_destroy(t, b);
  cts_client_destroy(t, c);
  return CTS_PASS;
}

CTS_CHECK(cts_buffer_device_pointer) {
  /* OpaqueDeviceMemoryDataPointer must give a pointer; on a CPU plugin (IsOnCpu) it must point
   * at the data itself. */
  CTS_WANT_FN(t, PJRT_Buffer_OpaqueDeviceMemoryDataPointer);
  PJRT_Client *c;
  PJRT_Device *d;
  CTS_TRY(setup(t, &c, &d));
  const float v[4] = {4, 3, 2, 1};
  PJRT_Buffer *b;
  CTS_TRY(cts_f32_buffer(t, c, d, v, 4, &b));
  PJRT_Buffer_ReadyEvent_Args r = {.struct_size = PJRT_Buffer_ReadyEvent_Args_STRUCT_SIZE,
                                   .buffer = b};
  CTS_TRY(cts_err(t, t->api->PJRT_Buffer_ReadyEvent(&r), "PJRT_Buffer_ReadyEvent"));
  CTS_TRY(cts_await(t, r.event, "ready event"));
  PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args p = {
      .struct_size = PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args_STRUCT_SIZE, .buffer = b};
  CTS_TRY(cts_err_opt(t, t->api->PJRT_Buffer_OpaqueDeviceMemoryDataPointer(&p),
                      "OpaqueDeviceMemoryDataPointer"));
  if (!p.device_memory_ptr) return cts_fail(t, "NULL device memory pointer");
  bool on_cpu = false;
  if (CTS_FN(t, PJRT_Buffer_IsOnCpu)) {
    PJRT_Buffer_IsOnCpu_Args oc = {.struct_size = PJRT_Buffer_IsOnCpu_Args_STRUCT_SIZE,
                                   .buffer = b};
    CTS_TRY(cts_err(t, t->api->PJRT_Buffer_IsOnCpu(&oc), "PJRT_Buffer_IsOnCpu"));
    on_cpu = oc.is_on_cpu;
  }
  if (on_cpu) {
    if (memcmp(p.device_memory_ptr, v, sizeof v))
      return cts_fail(t, "CPU buffer: the device pointer does not point at the data");
    if (CTS_FN(t, PJRT_Buffer_UnsafePointer)) {
      PJRT_Buffer_UnsafePointer_Args u = {.struct_size = PJRT_Buffer_UnsafePointer_Args_STRUCT_SIZE,
                                          .buffer = b};
      PJRT_Error *e = t->api->PJRT_Buffer_UnsafePointer(&u);
      if (!e && memcmp((const void *)u.buffer_pointer, v, sizeof v))
        return cts_fail(t, "CPU buffer: UnsafePointer does not point at the data");
      cts_error_free(t, e);
    }
  }
  cts_note(t, "on_cpu=%d", on_cpu);
  cts_buffer_destroy(t, b);
  cts_client_destroy(t, c);
  return CTS_PASS;
}

CTS_CHECK(cts_buffer_uninitialized) {
  CTS_WANT_FN(t, PJRT_Client_CreateUninitializedBuffer);
  PJRT_Client *c;
  PJRT_Device *d;
  CTS_TRY(setup(t, &c, &d));
  const int64_t dims[2] = {4, 2};
  PJRT_Client_CreateUninitializedBuffer_Args a = {
      .struct_size = PJRT_Client_CreateUninitializedBuffer_Args_STRUCT_SIZE, .client = c,
      .shape_dims = dims, .shape_num_dims = 2, .shape_element_type = PJRT_Buffer_Type_S16,
      .device = d};
  CTS_TRY(cts_err_opt(t, t->api->PJRT_Client_CreateUninitializedBuffer(&a),
                      "CreateUninitializedBuffer"));
  if (!a.buffer) return cts_fail(t, "NULL buffer");
  PJRT_Buffer_ElementType_Args et = {.struct_size = PJRT_Buffer_ElementType_Args_STRUCT_SIZE,
                                     .buffer = a.buffer};
  CTS_TRY(cts_err(t, t->api->PJRT_Buffer_ElementType(&et), "PJRT_Buffer_ElementType"));
  PJRT_Buffer_Dimensions_Args dm = {.struct_size = PJRT_Buffer_Dimensions_Args_STRUCT_SIZE,
                                    .buffer = a.buffer};
  CTS_TRY(cts_err(t, t->api->PJRT_Buffer_Dimensions(&dm), "PJRT_Buffer_Dimensions"));
  if (et.type != PJRT_Buffer_Type_S16 || dm.num_dims != 2 || dm.dims[0] != 4 || dm.dims[1] != 2)
    return cts_fail(t, "shape is not s16[4,2]");
  cts_buffer_destroy(t, a.buffer);
  cts_client_destroy(t, c);
  return CTS_PASS;
}

CTS_CHECK(cts_buffer_raw_to_host) {
  CTS_WANT_FN(t, PJRT_Buffer_CopyRawToHost);
  PJRT_Client *c;
  PJRT_Device *d;
  CTS_TRY(setup(t, &c, &d));
  const int32_t v[4] = {10, 20, 30, 40};
  PJRT_Buffer *b;
  int64_t dims[1] = {4};
  CTS_TRY(cts_buffer_from_host(t, c, d, PJRT_Buffer_Type_S32, dims, 1, v, &b));
  int32_t out[2] = {0, 0};
  PJRT_Buffer_CopyRawToHost_Args a = {.struct_size = PJRT_Buffer_CopyRawToHost_Args_STRUCT_SIZE,
                                      .buffer = b, .dst = out, .offset = 4, .transfer_size = 8};
  CTS_TRY(cts_err_opt(t, t->api->PJRT_Buffer_CopyRawToHost(&a), "PJRT_Buffer_CopyRawToHost"));
  CTS_TRY(cts_await(t, a.event, "CopyRawToHost event"));
  if (out[0] != 20 || out[1] != 30)
    return cts_fail(t, "raw bytes 4..12 read as %d %d (expected 20 30)", out[0], out[1]);
  cts_buffer_destroy(t, b);
  cts_client_destroy(t, c);
  return CTS_PASS;
}

CTS_CHECK(cts_buffer_dimension_queries) {
  PJRT_Client *c;
  PJRT_Device *d;
  CTS_TRY(setup(t, &c, &d));
  const uint8_t v[24] = {0};
  const int64_t dims[3] = {2, 3, 4};
  PJRT_Buffer *b;
  CTS_TRY(cts_buffer_from_host(t, c, d, PJRT_Buffer_Type_U8, dims, 3, v, &b));
  if (CTS_FN(t, PJRT_Buffer_UnpaddedDimensions)) {
    PJRT_Buffer_UnpaddedDimensions_Args u = {
        .struct_size = PJRT_Buffer_UnpaddedDimensions_Args_STRUCT_SIZE, .buffer = b};
    PJRT_Error *e = t->api->PJRT_Buffer_UnpaddedDimensions(&u);
    if (!e && (u.num_dims != 3 || u.unpadded_dims[0] != 2 || u.unpadded_dims[1] != 3 ||
               u.unpadded_dims[2] != 4))
      return cts_fail(t, "unpadded dimensions are not [2, 3, 4]");
    if (e) CTS_TRY(cts_err_opt(t, e, "PJRT_Buffer_UnpaddedDimensions"));
  }
  if (CTS_FN(t, PJRT_Buffer_DynamicDimensionIndices)) {
    PJRT_Buffer_DynamicDimensionIndices_Args dd = {
        .struct_size = PJRT_Buffer_DynamicDimensionIndices_Args_STRUCT_SIZE, .buffer = b};
    PJRT_Error *e = t->api->PJRT_Buffer_DynamicDimensionIndices(&dd);
    if (!e && dd.num_dynamic_dims != 0) return cts_fail(t, "a static buffer has dynamic dims");
    if (e) CTS_TRY(cts_err_opt(t, e, "PJRT_Buffer_DynamicDimensionIndices"));
  }
  if (CTS_FN(t, PJRT_Buffer_GetMemoryLayout)) {
    PJRT_Buffer_GetMemoryLayout_Args l = {
        .struct_size = PJRT_Buffer_GetMemoryLayout_Args_STRUCT_SIZE, .buffer = b};
    PJRT_Error *e = t->api->PJRT_Buffer_GetMemoryLayout(&l);
    if (!e && l.layout.type == PJRT_Buffer_MemoryLayout_Type_Tiled) {
      const PJRT_Buffer_MemoryLayout_Tiled *tl = &l.layout.tiled;
      if (tl->minor_to_major_size != 3 || !tl->minor_to_major)
        return cts_fail(t, "tiled layout has %zu minor_to_major entries", tl->minor_to_major_size);
      if (tl->minor_to_major[0] != 2 || tl->minor_to_major[1] != 1 || tl->minor_to_major[2] != 0)
        cts_note(t, "default layout is not row-major");
    }
    if (e) CTS_TRY(cts_err_opt(t, e, "PJRT_Buffer_GetMemoryLayout"));
  }
  cts_buffer_destroy(t, b);
  cts_client_destroy(t, c);
  return CTS_PASS;
}
