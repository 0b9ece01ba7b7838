/* Buffers: host round trips for every element type, strided / negative / zero strides,
 * zero-copy, host layouts, deletion, external references, copies and misuse. Expected
 * values are computed here from the host arrays, never read back from the plugin. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_pjrt_util.h"

static PJRT_Client *client;
static PJRT_Device *dev0, *dev1;

static int setup(void **state) {
  if (load_api(state)) return -1;
  client = make_client(2);
  dev0 = client_device(client, 0);
  dev1 = client_device(client, 1);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  destroy_client(client);
  return 0;
}

/* Bytes per element, from the PJRT type list (sub-byte types take one byte each). */
static const struct {
  PJRT_Buffer_Type t;
  size_t size;
} types[] = {
    {PJRT_Buffer_Type_PRED, 1},        {PJRT_Buffer_Type_S8, 1},          {PJRT_Buffer_Type_S16, 2},
    {PJRT_Buffer_Type_S32, 4},         {PJRT_Buffer_Type_S64, 8},         {PJRT_Buffer_Type_U8, 1},
    {PJRT_Buffer_Type_U16, 2},         {PJRT_Buffer_Type_U32, 4},         {PJRT_Buffer_Type_U64, 8},
    {PJRT_Buffer_Type_F16, 2},         {PJRT_Buffer_Type_F32, 4},         {PJRT_Buffer_Type_F64, 8},
    {PJRT_Buffer_Type_BF16, 2},        {PJRT_Buffer_Type_C64, 8},         {PJRT_Buffer_Type_C128, 16},
    {PJRT_Buffer_Type_F8E5M2, 1},      {PJRT_Buffer_Type_F8E4M3FN, 1},    {PJRT_Buffer_Type_F8E4M3B11FNUZ, 1},
    {PJRT_Buffer_Type_F8E5M2FNUZ, 1},  {PJRT_Buffer_Type_F8E4M3FNUZ, 1},  {PJRT_Buffer_Type_S4, 1},
    {PJRT_Buffer_Type_U4, 1},          {PJRT_Buffer_Type_S2, 1},          {PJRT_Buffer_Type_U2, 1},
    {PJRT_Buffer_Type_F8E4M3, 1},      {PJRT_Buffer_Type_F8E3M4, 1},      {PJRT_Buffer_Type_F8E8M0FNU, 1},
    {PJRT_Buffer_Type_F4E2M1FN, 1},    {PJRT_Buffer_Type_S1, 1},          {PJRT_Buffer_Type_U1, 1},
    {PJRT_Buffer_Type_F6E2M3FN, 1},    {PJRT_Buffer_Type_F6E3M2FN, 1},
};

static PJRT_Error *from_host(const void *data, PJRT_Buffer_Type t, const int64_t *dims, size_t rank,
                             const int64_t *strides, PJRT_HostBufferSemantics sem,
                             PJRT_Device *dev, PJRT_Memory *mem, PJRT_Buffer **buf,
                             PJRT_Event **done) {
  PJRT_Client_BufferFromHostBuffer_Args a = {
      .struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE,
      .client = client,
      .data = data,
      .type = t,
      .dims = dims,
      .num_dims = rank,
      .byte_strides = strides,
      .num_byte_strides = strides ? rank : 0,
      .host_buffer_semantics = sem,
      .device = dev,
      .memory = mem};
  PJRT_Error *e = api->PJRT_Client_BufferFromHostBuffer(&a);
  *buf = a.buffer;
  if (done)
    *done = a.done_with_host_buffer;
  else if (a.done_with_host_buffer)
    event_destroy(a.done_with_host_buffer);
  return e;
}

static PJRT_Buffer *upload(const void *data, PJRT_Buffer_Type t, const int64_t *dims, size_t rank,
                           const int64_t *strides) {
  PJRT_Buffer *b;
  CHECK_OK(from_host(data, t, dims, rank, strides, PJRT_HostBufferSemantics_kImmutableOnlyDuringCall,
                     dev0, NULL, &b, NULL));
  assert_non_null(b);
  return b;
}

static PJRT_Error *to_host(PJRT_Buffer *b, void *dst, size_t size, PJRT_Buffer_MemoryLayout *layout) {
  PJRT_Buffer_ToHostBuffer_Args a = {.struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE,
                                     .src = b,
                                     .host_layout = layout,
                                     .dst = dst,
                                     .dst_size = size};
  PJRT_Error *e = api->PJRT_Buffer_ToHostBuffer(&a);
  if (e) return e;
  assert_non_null(a.event); /* the framework CHECKs this */
  PJRT_Event_Await_Args aw = {.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE, .event = a.event};
  e = api->PJRT_Event_Await(&aw);
  event_destroy(a.event);
  return e;
}

static size_t host_size(PJRT_Buffer *b, PJRT_Buffer_MemoryLayout *layout) {
  PJRT_Buffer_ToHostBuffer_Args a = {.struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE,
                                     .src = b,
                                     .host_layout = layout};
  CHECK_OK(api->PJRT_Buffer_ToHostBuffer(&a));
  return a.dst_size;
}

/* Host bytes of a signed sub-byte int with its high bits set (JAX's rand_fullrange viewed as
 * int4: lax_numpy_test testView): only the low bits count. Sign-extending them shifted a
 * negative char left, undefined behaviour (UBSan's report under JAX's suite). */
static void test_subbyte_host_bytes_with_high_bits(void **state) {
  (void)state;
  unsigned char src[4] = {0x8E, 0xF7, 0x78, 0xFF}, dst[4];
  int64_t dims[1] = {4};
  PJRT_Buffer *b = upload(src, PJRT_Buffer_Type_S4, dims, 1, NULL);
  CHECK_OK(to_host(b, dst, sizeof dst, NULL));
  const unsigned char want[4] = {0x0E, 0x07, 0x08, 0x0F};
  assert_memory_equal(dst, want, sizeof want);
  buffer_destroy(b);
}

static void test_round_trip_every_type(void **state) {
  (void)state;
  static const int64_t shapes[][2] = {{2, 3}, {0, 5}};
  for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
    for (int rank_case = 0; rank_case < 3; rank_case++) {
      const int64_t *dims = rank_case == 0 ? NULL : shapes[rank_case - 1];
      size_t rank = rank_case == 0 ? 0 : 2;
      size_t n = rank_case == 0 ? 1 : (size_t)(dims[0] * dims[1]);
      size_t bytes = n * types[ti].size;
      unsigned char src[6 * 16], dst[6 * 16 + 8];
      /* Host bytes of signed sub-byte ints hold only their low bits (ml_dtypes' layout). */
      PJRT_Buffer_Type t = types[ti].t;
      unsigned char mask = t == PJRT_Buffer_Type_S4 ? 0x0F : t == PJRT_Buffer_Type_S2 ? 0x03
                         : t == PJRT_Buffer_Type_S1 ? 0x01 : 0xFF;
      for (size_t i = 0; i < sizeof src; i++) src[i] = (unsigned char)(i * 7 + 3 + ti) & mask;
      PJRT_Buffer *b = upload(src, types[ti].t, dims, rank, NULL);
      PJRT_Buffer_ElementType_Args et = {.struct_size = PJRT_Buffer_ElementType_Args_STRUCT_SIZE,
                                         .buffer = b};
      CHECK_OK(api->PJRT_Buffer_ElementType(&et));
      assert_int_equal(et.type, types[ti].t);
      PJRT_Buffer_Dimensions_Args dm = {.struct_size = PJRT_Buffer_Dimensions_Args_STRUCT_SIZE,
                                        .buffer = b};
      CHECK_OK(api->PJRT_Buffer_Dimensions(&dm));
      assert_int_equal(dm.num_dims, rank);
      for (size_t i = 0; i < rank; i++) assert_int_equal(dm.dims[i], dims[i]);
      PJRT_Buffer_OnDeviceSizeInBytes_Args sz = {
          .struct_size = PJRT_Buffer_OnDeviceSizeInBytes_Args_STRUCT_SIZE, .buffer = b};
      CHECK_OK(api->PJRT_Buffer_OnDeviceSizeInBytes(&sz));
      assert_int_equal(sz.on_device_size_in_bytes, bytes);
      assert_int_equal(host_size(b, NULL), bytes);
      memset(dst, 0xEE, sizeof dst);
      CHECK_OK(to_host(b, dst, bytes, NULL));
      assert_memory_equal(dst, src, bytes);
      assert_int_equal(dst[bytes], 0xEE); /* nothing written past the end */
      buffer_destroy(b);
    }
  }
}

static void test_metadata_queries(void **state) {
  (void)state;
  float v[6] = {1, 2, 3, 4, 5, 6};
  int64_t dims[2] = {2, 3};
  PJRT_Buffer *b = upload(v, PJRT_Buffer_Type_F32, dims, 2, NULL);
  PJRT_Buffer_IsOnCpu_Args oc = {.struct_size = PJRT_Buffer_IsOnCpu_Args_STRUCT_SIZE, .buffer = b};
  CHECK_OK(api->PJRT_Buffer_IsOnCpu(&oc));
  assert_true(oc.is_on_cpu);
  PJRT_Buffer_Device_Args d = {.struct_size = PJRT_Buffer_Device_Args_STRUCT_SIZE, .buffer = b};
  CHECK_OK(api->PJRT_Buffer_Device(&d));
  assert_ptr_equal(d.device, dev0);
  PJRT_Device_DefaultMemory_Args dm = {.struct_size = PJRT_Device_DefaultMemory_Args_STRUCT_SIZE,
                                       .device = dev0};
  CHECK_OK(api->PJRT_Device_DefaultMemory(&dm));
  PJRT_Buffer_Memory_Args m = {.struct_size = PJRT_Buffer_Memory_Args_STRUCT_SIZE, .buffer = b};
  CHECK_OK(api->PJRT_Buffer_Memory(&m));
  assert_ptr_equal(m.memory, dm.memory);
  PJRT_Buffer_GetMemoryLayout_Args l = {.struct_size = PJRT_Buffer_GetMemoryLayout_Args_STRUCT_SIZE,
                                        .buffer = b};
  CHECK_OK(api->PJRT_Buffer_GetMemoryLayout(&l));
  assert_int_equal(l.layout.type, PJRT_Buffer_MemoryLayout_Type_Tiled);
  assert_int_equal(l.layout.tiled.minor_to_major_size, 2);
  assert_int_equal(l.layout.tiled.minor_to_major[0], 1);
  assert_int_equal(l.layout.tiled.minor_to_major[1], 0);
  assert_int_equal(l.layout.tiled.num_tiles, 0);
  PJRT_Buffer_UnpaddedDimensions_Args ud = {
      .struct_size = PJRT_Buffer_UnpaddedDimensions_Args_STRUCT_SIZE, .buffer = b};
  CHECK_OK(api->PJRT_Buffer_UnpaddedDimensions(&ud));
  assert_int_equal(ud.num_dims, 2);
  assert_int_equal(ud.unpadded_dims[1], 3);
  PJRT_Buffer_DynamicDimensionIndices_Args dd = {
      .struct_size = PJRT_Buffer_DynamicDimensionIndices_Args_STRUCT_SIZE, .buffer = b};
  CHECK_OK(api->PJRT_Buffer_DynamicDimensionIndices(&dd));
  assert_int_equal(dd.num_dynamic_dims, 0);
  PJRT_Buffer_ReadyEvent_Args re = {.struct_size = PJRT_Buffer_ReadyEvent_Args_STRUCT_SIZE, .buffer = b};
  CHECK_OK(api->PJRT_Buffer_ReadyEvent(&re));
  assert_non_null(re.event);
  event_await(re.event);
  assert_true(event_ready(re.event));
  event_destroy(re.event);
  PJRT_Buffer_UnsafePointer_Args up = {.struct_size = PJRT_Buffer_UnsafePointer_Args_STRUCT_SIZE,
                                       .buffer = b};
  CHECK_OK(api->PJRT_Buffer_UnsafePointer(&up));
  PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args op = {
      .struct_size = PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args_STRUCT_SIZE, .buffer = b};
  CHECK_OK(api->PJRT_Buffer_OpaqueDeviceMemoryDataPointer(&op));
  assert_ptr_equal((void *)up.buffer_pointer, op.device_memory_ptr);
  assert_memory_equal(op.device_memory_ptr, v, sizeof v); /* dense row-major on the device */
  assert_int_equal((uintptr_t)op.device_memory_ptr % 64, 0);
  buffer_destroy(b);
}

static void test_target_memory(void **state) {
  (void)state;
  int32_t v[3] = {7, 8, 9};
  int64_t dims[1] = {3};
  PJRT_Device_AddressableMemories_Args am = {
      .struct_size = PJRT_Device_AddressableMemories_Args_STRUCT_SIZE, .device = dev1};
  CHECK_OK(api->PJRT_Device_AddressableMemories(&am));
  /* By memory only (what JAX does): the device is the memory's. */
  PJRT_Buffer *b;
  CHECK_OK(from_host(v, PJRT_Buffer_Type_S32, dims, 1, NULL,
                     PJRT_HostBufferSemantics_kImmutableOnlyDuringCall, NULL, am.memories[0], &b, NULL));
  PJRT_Buffer_Device_Args d = {.struct_size = PJRT_Buffer_Device_Args_STRUCT_SIZE, .buffer = b};
  CHECK_OK(api->PJRT_Buffer_Device(&d));
  assert_ptr_equal(d.device, dev1);
  buffer_destroy(b);
  /* Pinned host memory with an explicit device. */
  CHECK_OK(from_host(v, PJRT_Buffer_Type_S32, dims, 1, NULL,
                     PJRT_HostBufferSemantics_kImmutableOnlyDuringCall, dev1, am.memories[1], &b, NULL));
  PJRT_Buffer_Memory_Args m = {.struct_size = PJRT_Buffer_Memory_Args_STRUCT_SIZE, .buffer = b};
  CHECK_OK(api->PJRT_Buffer_Memory(&m));
  assert_ptr_equal(m.memory, am.memories[1]);
  int32_t out[3];
  buffer_destroy(b);
  /* Pinned host memory only: the buffer is device 1's (JAX's device_put to pinned_host on a
   * device other than the first; a host memory shared by all devices placed it on device 0). */
  CHECK_OK(from_host(v, PJRT_Buffer_Type_S32, dims, 1, NULL,
                     PJRT_HostBufferSemantics_kImmutableOnlyDuringCall, NULL, am.memories[1], &b, NULL));
  d.buffer = b;
  d.device = NULL;
  CHECK_OK(api->PJRT_Buffer_Device(&d));
  assert_ptr_equal(d.device, dev1);
  PJRT_Memory_AddressableByDevices_Args by = {
      .struct_size = PJRT_Memory_AddressableByDevices_Args_STRUCT_SIZE, .memory = am.memories[1]};
  CHECK_OK(api->PJRT_Memory_AddressableByDevices(&by));
  assert_int_equal(by.num_devices, 1);
  assert_ptr_equal(by.devices[0], dev1);
  CHECK_OK(to_host(b, out, sizeof out, NULL));
  assert_memory_equal(out, v, sizeof v);
  buffer_destroy(b);
  /* The default memory of device 0 is not addressable by device 1. */
  PJRT_Device_DefaultMemory_Args dm0 = {.struct_size = PJRT_Device_DefaultMemory_Args_STRUCT_SIZE,
                                        .device = dev0};
  CHECK_OK(api->PJRT_Device_DefaultMemory(&dm0));
  EXPECT_ERROR(from_host(v, PJRT_Buffer_Type_S32, dims, 1, NULL,
                         PJRT_HostBufferSemantics_kImmutableOnlyDuringCall, dev1, dm0.memory, &b, NULL),
               PJRT_Error_Code_INVALID_ARGUMENT, "not addressable by device 1");
  EXPECT_ERROR(from_host(v, PJRT_Buffer_Type_S32, dims, 1, NULL,
                         PJRT_HostBufferSemantics_kImmutableOnlyDuringCall, NULL, NULL, &b, NULL),
               PJRT_Error_Code_INVALID_ARGUMENT, "neither device nor memory");
}

static void test_strided_views(void **state) {
  (void)state;
  int32_t a[3][4];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 4; j++) a[i][j] = i * 10 + j;
  /* Transposed view: B[4][3], B[j][i] = a[i][j]. */
  int64_t tdims[2] = {4, 3}, tstrides[2] = {4, 16};
  PJRT_Buffer *b = upload(a, PJRT_Buffer_Type_S32, tdims, 2, tstrides);
  int32_t out[12];
  CHECK_OK(to_host(b, out, sizeof out, NULL));
  for (int j = 0; j < 4; j++)
    for (int i = 0; i < 3; i++) assert_int_equal(out[j * 3 + i], a[i][j]);
  buffer_destroy(b);
  /* Negative stride: column 2 of `a` read bottom-up, data points at its first element. */
  int64_t rdims[1] = {3}, rstrides[1] = {-16};
  b = upload(&a[2][2], PJRT_Buffer_Type_S32, rdims, 1, rstrides);
  CHECK_OK(to_host(b, out, 12, NULL));
  assert_int_equal(out[0], 22);
  assert_int_equal(out[1], 12);
  assert_int_equal(out[2], 2);
  buffer_destroy(b);
  /* Zero stride: row 1 broadcast 3 times. */
  int64_t bdims[2] = {3, 4}, bstrides[2] = {0, 4};
  b = upload(&a[1][0], PJRT_Buffer_Type_S32, bdims, 2, bstrides);
  CHECK_OK(to_host(b, out, sizeof out, NULL));
  for (int r = 0; r < 3; r++)
    for (int j = 0; j < 4; j++) assert_int_equal(out[r * 4 + j], 10 + j);
  buffer_destroy(b);
  /* Strides on an empty array read nothing. */
  int64_t edims[2] = {0, 4}, estrides[2] = {INT64_MAX / 2, 4};
  b = upload(a, PJRT_Buffer_Type_S32, edims, 2, estrides);
  buffer_destroy(b);
  /* Strides whose span overflows are refused. */
  int64_t odims[2] = {3, 4}, ostrides[2] = {INT64_MAX / 2, 4};
  EXPECT_ERROR(from_host(a, PJRT_Buffer_Type_S32, odims, 2, ostrides,
                         PJRT_HostBufferSemantics_kImmutableOnlyDuringCall, dev0, NULL, &b, NULL),
               PJRT_Error_Code_INVALID_ARGUMENT, "byte_strides overflow");
  assert_null(b);
  PJRT_Client_BufferFromHostBuffer_Args bad = {
      .struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE,
      .client = client,
      .data = a,
      .type = PJRT_Buffer_Type_S32,
      .dims = odims,
      .num_dims = 2,
      .byte_strides = tstrides,
      .num_byte_strides = 1,
      .device = dev0};
  EXPECT_ERROR(api->PJRT_Client_BufferFromHostBuffer(&bad), PJRT_Error_Code_INVALID_ARGUMENT,
               "1 byte_strides for 2 dimensions");
}

static void test_zero_copy(void **state) {
  (void)state;
  int32_t *host = aligned_alloc(64, 64 * sizeof(int32_t));
  for (int i = 0; i < 64; i++) host[i] = i;
  int64_t dims[1] = {16};
  PJRT_Buffer *b;
  PJRT_Event *done;
  CHECK_OK(from_host(host, PJRT_Buffer_Type_S32, dims, 1, NULL,
                     PJRT_HostBufferSemantics_kImmutableZeroCopy, dev0, NULL, &b, &done));
  assert_non_null(done);
  assert_false(event_ready(done)); /* the buffer still uses the host memory */
  PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args op = {
      .struct_size = PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args_STRUCT_SIZE, .buffer = b};
  CHECK_OK(api->PJRT_Buffer_OpaqueDeviceMemoryDataPointer(&op));
  assert_ptr_equal(op.device_memory_ptr, host);
  buffer_destroy(b);
  assert_true(event_ready(done)); /* released with the buffer */
  event_await(done);
  event_destroy(done);

  /* Not 64-byte aligned: copied, the host buffer is free at once. */
  CHECK_OK(from_host(host + 1, PJRT_Buffer_Type_S32, dims, 1, NULL,
                     PJRT_HostBufferSemantics_kImmutableZeroCopy, dev0, NULL, &b, &done));
  assert_true(event_ready(done));
  CHECK_OK(api->PJRT_Buffer_OpaqueDeviceMemoryDataPointer(&(PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args){
      .struct_size = PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args_STRUCT_SIZE, .buffer = b}));
  int32_t out[16];
  host[1] = -5; /* the copy does not see later host writes */
  CHECK_OK(to_host(b, out, sizeof out, NULL));
  assert_int_equal(out[0], 1);
  assert_int_equal(out[15], 16);
  event_destroy(done);
  buffer_destroy(b);

  /* Until-transfer-completes: a done event is always returned. */
  CHECK_OK(from_host(host, PJRT_Buffer_Type_S32, dims, 1, NULL,
                     PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes, dev0, NULL, &b, &done));
  assert_non_null(done);
  event_await(done);
  event_destroy(done);
  buffer_destroy(b);
  EXPECT_ERROR(from_host(host, PJRT_Buffer_Type_S32, dims, 1, NULL,
                         PJRT_HostBufferSemantics_kMutableZeroCopy, dev0, NULL, &b, NULL),
               PJRT_Error_Code_UNIMPLEMENTED, "host_buffer_semantics");
  free(host);
}

static void test_host_layouts(void **state) {
  (void)state;
  int16_t v[2][3] = {{1, 2, 3}, {4, 5, 6}};
  int64_t dims[2] = {2, 3};
  PJRT_Buffer *b = upload(v, PJRT_Buffer_Type_S16, dims, 2, NULL);
  /* Column-major via minor_to_major {0, 1}. */
  int64_t m2m[2] = {0, 1};
  PJRT_Buffer_MemoryLayout col = {.struct_size = PJRT_Buffer_MemoryLayout_STRUCT_SIZE,
                                  .type = PJRT_Buffer_MemoryLayout_Type_Tiled};
  col.tiled.struct_size = PJRT_Buffer_MemoryLayout_Tiled_STRUCT_SIZE;
  col.tiled.minor_to_major = m2m;
  col.tiled.minor_to_major_size = 2;
  int16_t out[8];
  assert_int_equal(host_size(b, &col), 12);
  CHECK_OK(to_host(b, out, 12, &col));
  for (int j = 0; j < 3; j++)
    for (int i = 0; i < 2; i++) assert_int_equal(out[j * 2 + i], v[i][j]);
  /* Padded rows via explicit byte strides {8, 2}. */
  int64_t st[2] = {8, 2};
  PJRT_Buffer_MemoryLayout pad = {.struct_size = PJRT_Buffer_MemoryLayout_STRUCT_SIZE,
                                  .type = PJRT_Buffer_MemoryLayout_Type_Strides};
  pad.strides.struct_size = PJRT_Buffer_MemoryLayout_Strides_STRUCT_SIZE;
  pad.strides.byte_strides = st;
  pad.strides.num_byte_strides = 2;
  assert_int_equal(host_size(b, &pad), 14);
  for (int i = 0; i < 8; i++) out[i] = -1;
  CHECK_OK(to_host(b, out, sizeof out, &pad));
  assert_int_equal(out[0], 1);
  assert_int_equal(out[2], 3);
  assert_int_equal(out[3], -1); /* padding untouched */
  assert_int_equal(out[4], 4);
  assert_int_equal(out[6], 6);
  /* Misuse. */
  EXPECT_ERROR(to_host(b, out, 11, &col), PJRT_Error_Code_INVALID_ARGUMENT, "dst_size 11");
  EXPECT_ERROR(to_host(b, out, 10, NULL), PJRT_Error_Code_INVALID_ARGUMENT, "dst_size 10");
  int64_t not_perm[2] = {1, 1};
  col.tiled.minor_to_major = not_perm;
  EXPECT_ERROR(to_host(b, out, 12, &col), PJRT_Error_Code_INVALID_ARGUMENT, "permutation");
  col.tiled.minor_to_major = m2m;
  col.tiled.num_tiles = 1;
  EXPECT_ERROR(to_host(b, out, 12, &col), PJRT_Error_Code_UNIMPLEMENTED, "tiled");
  buffer_destroy(b);
}

static void test_delete_and_use_after_delete(void **state) {
  (void)state;
  float v[4] = {41, 42, 43, 44};
  int64_t dims[1] = {4};
  PJRT_Buffer *b = upload(v, PJRT_Buffer_Type_F32, dims, 1, NULL);
  PJRT_Buffer_IsDeleted_Args d = {.struct_size = PJRT_Buffer_IsDeleted_Args_STRUCT_SIZE, .buffer = b};
  CHECK_OK(api->PJRT_Buffer_IsDeleted(&d));
  assert_false(d.is_deleted);
  PJRT_Buffer_Delete_Args del = {.struct_size = PJRT_Buffer_Delete_Args_STRUCT_SIZE, .buffer = b};
  CHECK_OK(api->PJRT_Buffer_Delete(&del));
  CHECK_OK(api->PJRT_Buffer_IsDeleted(&d));
  assert_true(d.is_deleted);
  CHECK_OK(api->PJRT_Buffer_Delete(&del)); /* double delete is fine */
  float out[4];
  EXPECT_ERROR(to_host(b, out, sizeof out, NULL), PJRT_Error_Code_FAILED_PRECONDITION, "deleted");
  PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args op = {
      .struct_size = PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args_STRUCT_SIZE, .buffer = b};
  EXPECT_ERROR(api->PJRT_Buffer_OpaqueDeviceMemoryDataPointer(&op), PJRT_Error_Code_FAILED_PRECONDITION,
               "deleted");
  PJRT_Buffer_CopyToDevice_Args cp = {.struct_size = PJRT_Buffer_CopyToDevice_Args_STRUCT_SIZE,
                                      .buffer = b,
                                      .dst_device = dev1};
  EXPECT_ERROR(api->PJRT_Buffer_CopyToDevice(&cp), PJRT_Error_Code_FAILED_PRECONDITION, "deleted");
  PJRT_Buffer_Dimensions_Args dm = {.struct_size = PJRT_Buffer_Dimensions_Args_STRUCT_SIZE, .buffer = b};
  CHECK_OK(api->PJRT_Buffer_Dimensions(&dm)); /* metadata stays readable */
  assert_int_equal(dm.dims[0], 4);
  buffer_destroy(b);
}

static void test_external_references(void **state) {
  (void)state;
  double v[3] = {1.5, -2.5, 3.25};
  int64_t dims[1] = {3};
  PJRT_Buffer *b = upload(v, PJRT_Buffer_Type_F64, dims, 1, NULL);
  PJRT_Buffer_IncreaseExternalReferenceCount_Args inc = {
      .struct_size = PJRT_Buffer_IncreaseExternalReferenceCount_Args_STRUCT_SIZE, .buffer = b};
  PJRT_Buffer_DecreaseExternalReferenceCount_Args dec = {
      .struct_size = PJRT_Buffer_DecreaseExternalReferenceCount_Args_STRUCT_SIZE, .buffer = b};
  CHECK_OK(api->PJRT_Buffer_IncreaseExternalReferenceCount(&inc));
  PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args op = {
      .struct_size = PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args_STRUCT_SIZE, .buffer = b};
  CHECK_OK(api->PJRT_Buffer_OpaqueDeviceMemoryDataPointer(&op));
  const double *p = op.device_memory_ptr;
  /* Delete while externally referenced: the memory stays valid (ASan checks the read). */
  PJRT_Buffer_Delete_Args del = {.struct_size = PJRT_Buffer_Delete_Args_STRUCT_SIZE, .buffer = b};
  CHECK_OK(api->PJRT_Buffer_Delete(&del));
  assert_true(p[0] == 1.5 && p[1] == -2.5 && p[2] == 3.25);
  CHECK_OK(api->PJRT_Buffer_DecreaseExternalReferenceCount(&dec));
  EXPECT_ERROR(api->PJRT_Buffer_DecreaseExternalReferenceCount(&dec), PJRT_Error_Code_INVALID_ARGUMENT,
               "Attempting to decrease reference on a buffer with zero reference count.");
  buffer_destroy(b);
}

static void test_copies(void **state) {
  (void)state;
  uint8_t v[10];
  for (int i = 0; i < 10; i++) v[i] = (uint8_t)(100 + i);
  int64_t dims[2] = {2, 5};
  PJRT_Buffer *b = upload(v, PJRT_Buffer_Type_U8, dims, 2, NULL);
  PJRT_Buffer_CopyToDevice_Args cp = {.struct_size = PJRT_Buffer_CopyToDevice_Args_STRUCT_SIZE,
                                      .buffer = b,
                                      .dst_device = dev1};
  CHECK_OK(api->PJRT_Buffer_CopyToDevice(&cp));
  PJRT_Buffer_Device_Args d = {.struct_size = PJRT_Buffer_Device_Args_STRUCT_SIZE,
                               .buffer = cp.dst_buffer};
  CHECK_OK(api->PJRT_Buffer_Device(&d));
  assert_ptr_equal(d.device, dev1);
  uint8_t out[10];
  CHECK_OK(to_host(cp.dst_buffer, out, sizeof out, NULL));
  assert_memory_equal(out, v, sizeof v);
  buffer_destroy(cp.dst_buffer);

  PJRT_Device_AddressableMemories_Args am = {
      .struct_size = PJRT_Device_AddressableMemories_Args_STRUCT_SIZE, .device = dev0};
  CHECK_OK(api->PJRT_Device_AddressableMemories(&am));
  /* Into device 1's default memory: the copy lives on device 1. */
  PJRT_Device_DefaultMemory_Args dm1 = {.struct_size = PJRT_Device_DefaultMemory_Args_STRUCT_SIZE,
                                        .device = dev1};
  CHECK_OK(api->PJRT_Device_DefaultMemory(&dm1));
  PJRT_Buffer_CopyToMemory_Args c1 = {.struct_size = PJRT_Buffer_CopyToMemory_Args_STRUCT_SIZE,
                                      .buffer = b,
                                      .dst_memory = dm1.memory};
  CHECK_OK(api->PJRT_Buffer_CopyToMemory(&c1));
  d.buffer = c1.dst_buffer;
  CHECK_OK(api->PJRT_Buffer_Device(&d));
  assert_ptr_equal(d.device, dev1);
  memset(out, 0, sizeof out);
  CHECK_OK(to_host(c1.dst_buffer, out, sizeof out, NULL));
  assert_memory_equal(out, v, sizeof v);
  /* From device 1 into its pinned host memory: it stays on device 1; into device 0's, it
   * moves to device 0 (each device has host memories of its own). */
  PJRT_Device_AddressableMemories_Args am1 = {
      .struct_size = PJRT_Device_AddressableMemories_Args_STRUCT_SIZE, .device = dev1};
  CHECK_OK(api->PJRT_Device_AddressableMemories(&am1));
  PJRT_Buffer_CopyToMemory_Args c2 = {.struct_size = PJRT_Buffer_CopyToMemory_Args_STRUCT_SIZE,
                                      .buffer = c1.dst_buffer,
                                      .dst_memory = am1.memories[1]};
  CHECK_OK(api->PJRT_Buffer_CopyToMemory(&c2));
  d.buffer = c2.dst_buffer;
  CHECK_OK(api->PJRT_Buffer_Device(&d));
  assert_ptr_equal(d.device, dev1);
  buffer_destroy(c2.dst_buffer);
  c2.dst_memory = am.memories[1];
  CHECK_OK(api->PJRT_Buffer_CopyToMemory(&c2));
  d.buffer = c2.dst_buffer;
  CHECK_OK(api->PJRT_Buffer_Device(&d));
  assert_ptr_equal(d.device, dev0);
  buffer_destroy(c2.dst_buffer);
  buffer_destroy(c1.dst_buffer);
  /* From device 0 into pinned host memory. */
  PJRT_Buffer_CopyToMemory_Args cm = {.struct_size = PJRT_Buffer_CopyToMemory_Args_STRUCT_SIZE,
                                      .buffer = b,
                                      .dst_memory = am.memories[1]};
  CHECK_OK(api->PJRT_Buffer_CopyToMemory(&cm));
  PJRT_Buffer_Memory_Args m = {.struct_size = PJRT_Buffer_Memory_Args_STRUCT_SIZE,
                               .buffer = cm.dst_buffer};
  CHECK_OK(api->PJRT_Buffer_Memory(&m));
  assert_ptr_equal(m.memory, am.memories[1]);
  d.buffer = cm.dst_buffer;
  CHECK_OK(api->PJRT_Buffer_Device(&d));
  assert_ptr_equal(d.device, dev0);
  buffer_destroy(cm.dst_buffer);

  uint8_t raw[4] = {0};
  PJRT_Buffer_CopyRawToHost_Args r = {.struct_size = PJRT_Buffer_CopyRawToHost_Args_STRUCT_SIZE,
                                      .buffer = b,
                                      .dst = raw,
                                      .offset = 3,
                                      .transfer_size = 4};
  CHECK_OK(api->PJRT_Buffer_CopyRawToHost(&r));
  assert_non_null(r.event);
  event_await(r.event);
  event_destroy(r.event);
  assert_int_equal(raw[0], 103);
  assert_int_equal(raw[3], 106);
  /* Future variant: the destination arrives later through the returned callback. */
  PJRT_Buffer_CopyRawToHostFuture_Args f = {
      .struct_size = PJRT_Buffer_CopyRawToHostFuture_Args_STRUCT_SIZE,
      .buffer = b,
      .offset = 6,
      .transfer_size = 4};
  CHECK_OK(api->PJRT_Buffer_CopyRawToHostFuture(&f));
  assert_non_null(f.event);
  assert_non_null(f.future_ready_callback);
  assert_false(event_ready(f.event));
  uint8_t later[4] = {0};
  PJRT_Buffer_CopyRawToHostFuture_Callback_Args cb = {
      .struct_size = PJRT_Buffer_CopyRawToHostFuture_Callback_Args_STRUCT_SIZE,
      .callback_data = f.callback_data,
      .error_code = PJRT_Error_Code_OK,
      .dst = later};
  f.future_ready_callback(&cb);
  event_await(f.event);
  event_destroy(f.event);
  assert_int_equal(later[0], 106);
  assert_int_equal(later[3], 109);
  /* The framework may fail the destination instead: the event carries that error. */
  CHECK_OK(api->PJRT_Buffer_CopyRawToHostFuture(&f));
  cb.callback_data = f.callback_data;
  cb.error_code = PJRT_Error_Code_CANCELLED;
  cb.error_message = "no room";
  cb.error_message_size = 7;
  cb.dst = NULL;
  f.future_ready_callback(&cb);
  PJRT_Event_Await_Args aw = {.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE, .event = f.event};
  EXPECT_ERROR(api->PJRT_Event_Await(&aw), PJRT_Error_Code_CANCELLED, "no room");
  event_destroy(f.event);
  f.offset = 7;
  f.transfer_size = 4;
  EXPECT_ERROR(api->PJRT_Buffer_CopyRawToHostFuture(&f), PJRT_Error_Code_INVALID_ARGUMENT, "outside");
  r.offset = 8;
  EXPECT_ERROR(api->PJRT_Buffer_CopyRawToHost(&r), PJRT_Error_Code_INVALID_ARGUMENT, "outside");
  r.offset = -1;
  EXPECT_ERROR(api->PJRT_Buffer_CopyRawToHost(&r), PJRT_Error_Code_INVALID_ARGUMENT, "outside");
  buffer_destroy(b);
}

static void test_uninitialized_buffer(void **state) {
  (void)state;
  int64_t dims[1] = {4};
  PJRT_Client_CreateUninitializedBuffer_Args a = {
      .struct_size = PJRT_Client_CreateUninitializedBuffer_Args_STRUCT_SIZE,
      .client = client,
      .shape_dims = dims,
      .shape_num_dims = 1,
      .shape_element_type = PJRT_Buffer_Type_F32,
      .device = dev0};
  CHECK_OK(api->PJRT_Client_CreateUninitializedBuffer(&a));
  PJRT_Buffer_OnDeviceSizeInBytes_Args sz = {
      .struct_size = PJRT_Buffer_OnDeviceSizeInBytes_Args_STRUCT_SIZE, .buffer = a.buffer};
  CHECK_OK(api->PJRT_Buffer_OnDeviceSizeInBytes(&sz));
  assert_int_equal(sz.on_device_size_in_bytes, 16);
  PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args op = {
      .struct_size = PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args_STRUCT_SIZE, .buffer = a.buffer};
  CHECK_OK(api->PJRT_Buffer_OpaqueDeviceMemoryDataPointer(&op));
  assert_non_null(op.device_memory_ptr);
  buffer_destroy(a.buffer);
}

static void test_error_buffer(void **state) {
  (void)state;
  int64_t dims[1] = {3};
  PJRT_Device_DefaultMemory_Args dm = {.struct_size = PJRT_Device_DefaultMemory_Args_STRUCT_SIZE,
                                       .device = dev1};
  CHECK_OK(api->PJRT_Device_DefaultMemory(&dm));
  PJRT_Client_CreateErrorBuffer_Args a = {.struct_size = PJRT_Client_CreateErrorBuffer_Args_STRUCT_SIZE,
                                          .client = client,
                                          .error_code = PJRT_Error_Code_DATA_LOSS,
                                          .error_message = "lost it",
                                          .error_message_size = 7,
                                          .shape_dims = dims,
                                          .shape_num_dims = 1,
                                          .shape_element_type = PJRT_Buffer_Type_S8,
                                          .memory = dm.memory};
  CHECK_OK(api->PJRT_Client_CreateErrorBuffer(&a));
  PJRT_Buffer_ReadyEvent_Args re = {.struct_size = PJRT_Buffer_ReadyEvent_Args_STRUCT_SIZE,
                                    .buffer = a.buffer};
  CHECK_OK(api->PJRT_Buffer_ReadyEvent(&re));
  PJRT_Event_Await_Args aw = {.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE, .event = re.event};
  EXPECT_ERROR(api->PJRT_Event_Await(&aw), PJRT_Error_Code_DATA_LOSS, "lost it");
  event_destroy(re.event);
  int8_t out[3];
  EXPECT_ERROR(to_host(a.buffer, out, sizeof out, NULL), PJRT_Error_Code_DATA_LOSS, "lost it");
  PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args op = {
      .struct_size = PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args_STRUCT_SIZE, .buffer = a.buffer};
  EXPECT_ERROR(api->PJRT_Buffer_OpaqueDeviceMemoryDataPointer(&op), PJRT_Error_Code_DATA_LOSS,
               "lost it");
  buffer_destroy(a.buffer);
  a.error_code = PJRT_Error_Code_OK;
  EXPECT_ERROR(api->PJRT_Client_CreateErrorBuffer(&a), PJRT_Error_Code_INVALID_ARGUMENT,
               "is not an error");
}

static void count_delete(void *ptr, void *arg) {
  (void)ptr;
  ++*(int *)arg;
}

static void test_view_and_bitcast(void **state) {
  (void)state;
  float *mem = aligned_alloc(64, 64);
  for (int i = 0; i < 4; i++) mem[i] = (float)i + 0.5f;
  int deleted = 0;
  int64_t dims[1] = {4};
  PJRT_Client_CreateViewOfDeviceBuffer_Args v = {
      .struct_size = PJRT_Client_CreateViewOfDeviceBuffer_Args_STRUCT_SIZE,
      .client = client,
      .device_buffer_ptr = mem,
      .dims = dims,
      .num_dims = 1,
      .element_type = PJRT_Buffer_Type_F32,
      .device = dev1,
      .on_delete_callback = count_delete,
      .on_delete_callback_arg = &deleted};
  CHECK_OK(api->PJRT_Client_CreateViewOfDeviceBuffer(&v));
  PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args op = {
      .struct_size = PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args_STRUCT_SIZE, .buffer = v.buffer};
  CHECK_OK(api->PJRT_Buffer_OpaqueDeviceMemoryDataPointer(&op));
  assert_ptr_equal(op.device_memory_ptr, mem); /* a view, not a copy */
  /* Bitcast f32[4] -> s32[2,2]: same bytes. */
  int64_t dims2[2] = {2, 2};
  PJRT_Buffer_Bitcast_Args bc = {.struct_size = PJRT_Buffer_Bitcast_Args_STRUCT_SIZE,
                                 .buffer = v.buffer,
                                 .element_type = PJRT_Buffer_Type_S32,
                                 .dims = dims2,
                                 .num_dims = 2};
  CHECK_OK(api->PJRT_Buffer_Bitcast(&bc));
  PJRT_Buffer *cast = bc.out_buffer;
  int32_t bits[4];
  CHECK_OK(to_host(cast, bits, sizeof bits, NULL));
  assert_memory_equal(bits, mem, sizeof bits);
  int64_t dims3[1] = {3};
  bc.dims = dims3;
  bc.num_dims = 1;
  EXPECT_ERROR(api->PJRT_Buffer_Bitcast(&bc), PJRT_Error_Code_INVALID_ARGUMENT,
               "the new shape has 12 bytes, the buffer 16");
  buffer_destroy(v.buffer);
  assert_int_equal(deleted, 0); /* the bitcast still uses the memory */
  buffer_destroy(cast);
  assert_int_equal(deleted, 1);
  /* Misaligned for its element type. */
  v.device_buffer_ptr = (char *)mem + 2;
  EXPECT_ERROR(api->PJRT_Client_CreateViewOfDeviceBuffer(&v), PJRT_Error_Code_INVALID_ARGUMENT,
               "not aligned");
  free(mem);
}

static void test_transfer_manager(void **state) {
  (void)state;
  PJRT_Device_DefaultMemory_Args dm = {.struct_size = PJRT_Device_DefaultMemory_Args_STRUCT_SIZE,
                                       .device = dev1};
  CHECK_OK(api->PJRT_Device_DefaultMemory(&dm));
  const int64_t d0[1] = {4}, d1[2] = {2, 2}, d2[1] = {3};
  PJRT_ShapeSpec specs[3] = {
      {.struct_size = PJRT_ShapeSpec_STRUCT_SIZE, .dims = d0, .num_dims = 1, .element_type = PJRT_Buffer_Type_S32},
      {.struct_size = PJRT_ShapeSpec_STRUCT_SIZE, .dims = d1, .num_dims = 2, .element_type = PJRT_Buffer_Type_U8},
      {.struct_size = PJRT_ShapeSpec_STRUCT_SIZE, .dims = d2, .num_dims = 1, .element_type = PJRT_Buffer_Type_F64}};
  PJRT_Client_CreateBuffersForAsyncHostToDevice_Args a = {
      .struct_size = PJRT_Client_CreateBuffersForAsyncHostToDevice_Args_STRUCT_SIZE,
      .client = client,
      .shape_specs = specs,
      .num_shape_specs = 3,
      .memory = dm.memory};
  CHECK_OK(api->PJRT_Client_CreateBuffersForAsyncHostToDevice(&a));
  PJRT_AsyncHostToDeviceTransferManager *m = a.transfer_manager;
  PJRT_AsyncHostToDeviceTransferManager_Device_Args dv = {
      .struct_size = PJRT_AsyncHostToDeviceTransferManager_Device_Args_STRUCT_SIZE, .transfer_manager = m};
  CHECK_OK(api->PJRT_AsyncHostToDeviceTransferManager_Device(&dv));
  assert_ptr_equal(dv.device_out, dev1);
  PJRT_AsyncHostToDeviceTransferManager_BufferSize_Args bs = {
      .struct_size = PJRT_AsyncHostToDeviceTransferManager_BufferSize_Args_STRUCT_SIZE,
      .transfer_manager = m,
      .buffer_index = 2};
  CHECK_OK(api->PJRT_AsyncHostToDeviceTransferManager_BufferSize(&bs));
  assert_int_equal(bs.buffer_size, 24);
  PJRT_Buffer *bufs[3];
  for (int i = 0; i < 3; i++) {
    PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer_Args rb = {
        .struct_size = PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer_Args_STRUCT_SIZE,
        .transfer_manager = m,
        .buffer_index = i};
    CHECK_OK(api->PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer(&rb));
    bufs[i] = rb.buffer_out;
  }
  PJRT_Buffer_ReadyEvent_Args re = {.struct_size = PJRT_Buffer_ReadyEvent_Args_STRUCT_SIZE,
                                    .buffer = bufs[0]};
  CHECK_OK(api->PJRT_Buffer_ReadyEvent(&re));
  /* Buffer 0 in two chunks, last one second: ready only then. */
  int32_t v[4] = {7, -8, 9, -10};
  PJRT_AsyncHostToDeviceTransferManager_TransferData_Args td = {
      .struct_size = PJRT_AsyncHostToDeviceTransferManager_TransferData_Args_STRUCT_SIZE,
      .transfer_manager = m,
      .buffer_index = 0,
      .data = (const char *)v + 8,
      .offset = 8,
      .transfer_size = 8};
  CHECK_OK(api->PJRT_AsyncHostToDeviceTransferManager_TransferData(&td));
  event_await(td.done_with_h2d_transfer);
  event_destroy(td.done_with_h2d_transfer);
  assert_false(event_ready(re.event));
  td.data = v;
  td.offset = 0;
  td.is_last_transfer = true;
  CHECK_OK(api->PJRT_AsyncHostToDeviceTransferManager_TransferData(&td));
  event_destroy(td.done_with_h2d_transfer);
  assert_true(event_ready(re.event));
  event_destroy(re.event);
  int32_t out[4];
  CHECK_OK(to_host(bufs[0], out, sizeof out, NULL));
  assert_memory_equal(out, v, sizeof v);
  EXPECT_ERROR(api->PJRT_AsyncHostToDeviceTransferManager_TransferData(&td),
               PJRT_Error_Code_FAILED_PRECONDITION, "already complete");
  td.buffer_index = 2;
  td.offset = 20;
  EXPECT_ERROR(api->PJRT_AsyncHostToDeviceTransferManager_TransferData(&td),
               PJRT_Error_Code_INVALID_ARGUMENT, "outside the 24-byte buffer");
  td.buffer_index = 3;
  EXPECT_ERROR(api->PJRT_AsyncHostToDeviceTransferManager_TransferData(&td),
               PJRT_Error_Code_INVALID_ARGUMENT, "buffer_index 3 is out of range");
  /* Buffer 1 fails. */
  PJRT_AsyncHostToDeviceTransferManager_SetBufferError_Args se = {
      .struct_size = PJRT_AsyncHostToDeviceTransferManager_SetBufferError_Args_STRUCT_SIZE,
      .transfer_manager = m,
      .buffer_index = 1,
      .error_code = PJRT_Error_Code_DATA_LOSS,
      .error_message = "wire cut",
      .error_message_size = 8};
  CHECK_OK(api->PJRT_AsyncHostToDeviceTransferManager_SetBufferError(&se));
  uint8_t u[4];
  EXPECT_ERROR(to_host(bufs[1], u, sizeof u, NULL), PJRT_Error_Code_DATA_LOSS, "wire cut");
  /* Buffer 2 is never sent: destroying the manager fails it instead of leaving it pending. */
  PJRT_AsyncHostToDeviceTransferManager_Destroy_Args md = {
      .struct_size = PJRT_AsyncHostToDeviceTransferManager_Destroy_Args_STRUCT_SIZE,
      .transfer_manager = m};
  CHECK_OK(api->PJRT_AsyncHostToDeviceTransferManager_Destroy(&md));
  double dd[3];
  EXPECT_ERROR(to_host(bufs[2], dd, sizeof dd, NULL), PJRT_Error_Code_CANCELLED, "destroyed");
  for (int i = 0; i < 3; i++) buffer_destroy(bufs[i]);
}

static void test_alias_buffers(void **state) {
  (void)state;
  PJRT_Device_DefaultMemory_Args dm = {.struct_size = PJRT_Device_DefaultMemory_Args_STRUCT_SIZE,
                                       .device = dev0};
  CHECK_OK(api->PJRT_Device_DefaultMemory(&dm));
  int64_t dims[1] = {3};
  PJRT_Client_CreateAliasBuffer_Args ca = {.struct_size = PJRT_Client_CreateAliasBuffer_Args_STRUCT_SIZE,
                                           .client = client,
                                           .memory = dm.memory,
                                           .shape_dims = dims,
                                           .shape_num_dims = 1,
                                           .shape_element_type = PJRT_Buffer_Type_S16};
  CHECK_OK(api->PJRT_Client_CreateAliasBuffer(&ca));
  PJRT_Buffer_ReadyEvent_Args re = {.struct_size = PJRT_Buffer_ReadyEvent_Args_STRUCT_SIZE,
                                    .buffer = ca.alias_buffer};
  CHECK_OK(api->PJRT_Buffer_ReadyEvent(&re));
  assert_false(event_ready(re.event));
  int16_t v[3] = {5, -6, 7};
  PJRT_Buffer *real = upload(v, PJRT_Buffer_Type_S16, dims, 1, NULL);
  PJRT_Client_FulfillAliasBuffer_Args fa = {.struct_size = PJRT_Client_FulfillAliasBuffer_Args_STRUCT_SIZE,
                                            .client = client,
                                            .buffer = real,
                                            .status_code = PJRT_Error_Code_OK,
                                            .fulfill_alias_buffer_cb = ca.fulfill_alias_buffer_cb};
  CHECK_OK(api->PJRT_Client_FulfillAliasBuffer(&fa));
  event_await(re.event);
  event_destroy(re.event);
  buffer_destroy(real); /* the alias keeps the bytes */
  int16_t out[3];
  CHECK_OK(to_host(ca.alias_buffer, out, sizeof out, NULL));
  assert_memory_equal(out, v, sizeof v);
  buffer_destroy(ca.alias_buffer);
  /* Fulfilled with an error instead. */
  CHECK_OK(api->PJRT_Client_CreateAliasBuffer(&ca));
  fa.buffer = NULL;
  fa.status_code = PJRT_Error_Code_UNAVAILABLE;
  fa.error_message = "producer died";
  fa.error_message_size = 13;
  fa.fulfill_alias_buffer_cb = ca.fulfill_alias_buffer_cb;
  CHECK_OK(api->PJRT_Client_FulfillAliasBuffer(&fa));
  EXPECT_ERROR(to_host(ca.alias_buffer, out, sizeof out, NULL), PJRT_Error_Code_UNAVAILABLE,
               "producer died");
  buffer_destroy(ca.alias_buffer);
  /* A buffer of another shape does not fit (the token stays usable). */
  CHECK_OK(api->PJRT_Client_CreateAliasBuffer(&ca));
  int64_t dims4[1] = {4};
  int16_t w[4] = {0};
  PJRT_Buffer *wrong = upload(w, PJRT_Buffer_Type_S16, dims4, 1, NULL);
  fa.buffer = wrong;
  fa.status_code = PJRT_Error_Code_OK;
  fa.fulfill_alias_buffer_cb = ca.fulfill_alias_buffer_cb;
  EXPECT_ERROR(api->PJRT_Client_FulfillAliasBuffer(&fa), PJRT_Error_Code_INVALID_ARGUMENT,
               "does not match the alias");
  fa.buffer = NULL;
  fa.status_code = PJRT_Error_Code_CANCELLED;
  CHECK_OK(api->PJRT_Client_FulfillAliasBuffer(&fa));
  buffer_destroy(wrong);
  buffer_destroy(ca.alias_buffer);
}

static int64_t bytes_in_use(PJRT_Device *d, size_t struct_size) {
  PJRT_Device_MemoryStats_Args a = {.struct_size = struct_size, .device = d};
  CHECK_OK(api->PJRT_Device_MemoryStats(&a));
  assert_true(a.bytes_limit_is_set && a.bytes_limit > 0);
  return a.bytes_in_use;
}

static void test_memory_stats(void **state) {
  (void)state;
  int64_t base0 = bytes_in_use(dev0, PJRT_Device_MemoryStats_Args_STRUCT_SIZE);
  int64_t base1 = bytes_in_use(dev1, PJRT_Device_MemoryStats_Args_SIZE_0_75);
  static int32_t v[250];
  int64_t dims[1] = {250};
  PJRT_Buffer *b = upload(v, PJRT_Buffer_Type_S32, dims, 1, NULL);
  assert_int_equal(bytes_in_use(dev0, PJRT_Device_MemoryStats_Args_STRUCT_SIZE), base0 + 1000);
  assert_int_equal(bytes_in_use(dev1, PJRT_Device_MemoryStats_Args_SIZE_0_75), base1);
  PJRT_Buffer_CopyToDevice_Args cp = {.struct_size = PJRT_Buffer_CopyToDevice_Args_STRUCT_SIZE,
                                      .buffer = b,
                                      .dst_device = dev1};
  CHECK_OK(api->PJRT_Buffer_CopyToDevice(&cp));
  assert_int_equal(bytes_in_use(dev1, PJRT_Device_MemoryStats_Args_SIZE_0_75), base1 + 1000);
  PJRT_Buffer_Delete_Args del = {.struct_size = PJRT_Buffer_Delete_Args_STRUCT_SIZE, .buffer = b};
  CHECK_OK(api->PJRT_Buffer_Delete(&del));
  assert_int_equal(bytes_in_use(dev0, PJRT_Device_MemoryStats_Args_STRUCT_SIZE), base0);
  buffer_destroy(b);
  buffer_destroy(cp.dst_buffer);
  assert_int_equal(bytes_in_use(dev1, PJRT_Device_MemoryStats_Args_STRUCT_SIZE), base1);
  /* Clearing restarts the peak from what is in use now. */
  PJRT_Device_ClearMemoryStats_Args cl = {.struct_size = PJRT_Device_ClearMemoryStats_Args_STRUCT_SIZE,
                                          .device = dev1};
  CHECK_OK(api->PJRT_Device_ClearMemoryStats(&cl));
  PJRT_Device_MemoryStats_Args st = {.struct_size = PJRT_Device_MemoryStats_Args_STRUCT_SIZE,
                                     .device = dev1};
  CHECK_OK(api->PJRT_Device_MemoryStats(&st));
  assert_int_equal(st.peak_bytes_in_use, st.bytes_in_use);
  /* A 0.75 caller's struct ends at peak_pool_bytes_is_set: nothing after it is written. */
  _Alignas(16) unsigned char raw[sizeof(PJRT_Device_MemoryStats_Args) + 16];
  memset(raw, 0xAB, sizeof raw);
  PJRT_Device_MemoryStats_Args *a = (PJRT_Device_MemoryStats_Args *)(void *)raw;
  a->struct_size = PJRT_Device_MemoryStats_Args_SIZE_0_75;
  a->extension_start = NULL;
  a->device = dev0;
  CHECK_OK(api->PJRT_Device_MemoryStats(a));
  for (size_t i = PJRT_Device_MemoryStats_Args_SIZE_0_75; i < sizeof raw; i++)
    assert_int_equal(raw[i], 0xAB);
  /* Statistics anvil does not keep are reported unset, not left as garbage. */
  assert_false(a->bytes_reserved_is_set);
  assert_false(a->pool_bytes_is_set);
  assert_false(a->peak_pool_bytes_is_set);
  memset(raw, 0xAB, sizeof raw);
  a->struct_size = PJRT_Device_MemoryStats_Args_STRUCT_SIZE;
  a->extension_start = NULL;
  a->device = dev0;
  CHECK_OK(api->PJRT_Device_MemoryStats(a));
  assert_false(a->peak_allocated_bytes_is_set);
  assert_true(a->peak_bytes_in_use_is_set);
  a->struct_size = 64;
  EXPECT_ERROR(api->PJRT_Device_MemoryStats(a), PJRT_Error_Code_INVALID_ARGUMENT,
               "PJRT_Device_MemoryStats_Args");
}

static void test_bad_shapes_and_types(void **state) {
  (void)state;
  float v[4] = {0};
  PJRT_Buffer *b;
  int64_t neg[2] = {2, -1};
  EXPECT_ERROR(from_host(v, PJRT_Buffer_Type_F32, neg, 2, NULL,
                         PJRT_HostBufferSemantics_kImmutableOnlyDuringCall, dev0, NULL, &b, NULL),
               PJRT_Error_Code_INVALID_ARGUMENT, "dimension 1 is negative");
  int64_t deep[17];
  for (int i = 0; i < 17; i++) deep[i] = 1;
  EXPECT_ERROR(from_host(v, PJRT_Buffer_Type_F32, deep, 17, NULL,
                         PJRT_HostBufferSemantics_kImmutableOnlyDuringCall, dev0, NULL, &b, NULL),
               PJRT_Error_Code_INVALID_ARGUMENT, "rank 17");
  int64_t huge[3] = {INT64_MAX / 4, INT64_MAX / 4, 8};
  EXPECT_ERROR(from_host(v, PJRT_Buffer_Type_F32, huge, 3, NULL,
                         PJRT_HostBufferSemantics_kImmutableOnlyDuringCall, dev0, NULL, &b, NULL),
               PJRT_Error_Code_INVALID_ARGUMENT, "overflows");
  int64_t one[1] = {1};
  EXPECT_ERROR(from_host(v, PJRT_Buffer_Type_INVALID, one, 1, NULL,
                         PJRT_HostBufferSemantics_kImmutableOnlyDuringCall, dev0, NULL, &b, NULL),
               PJRT_Error_Code_INVALID_ARGUMENT, "invalid element type");
  EXPECT_ERROR(from_host(v, (PJRT_Buffer_Type)1000, one, 1, NULL,
                         PJRT_HostBufferSemantics_kImmutableOnlyDuringCall, dev0, NULL, &b, NULL),
               PJRT_Error_Code_INVALID_ARGUMENT, "invalid element type 1000");
  EXPECT_ERROR(from_host(v, PJRT_Buffer_Type_TOKEN, one, 1, NULL,
                         PJRT_HostBufferSemantics_kImmutableOnlyDuringCall, dev0, NULL, &b, NULL),
               PJRT_Error_Code_UNIMPLEMENTED, "TOKEN");
  EXPECT_ERROR(from_host(NULL, PJRT_Buffer_Type_F32, one, 1, NULL,
                         PJRT_HostBufferSemantics_kImmutableOnlyDuringCall, dev0, NULL, &b, NULL),
               PJRT_Error_Code_INVALID_ARGUMENT, "data is NULL");
  EXPECT_ERROR(from_host(v, PJRT_Buffer_Type_F32, NULL, 2, NULL,
                         PJRT_HostBufferSemantics_kImmutableOnlyDuringCall, dev0, NULL, &b, NULL),
               PJRT_Error_Code_INVALID_ARGUMENT, "dims is NULL");
  EXPECT_ERROR(from_host(v, PJRT_Buffer_Type_F32, one, 1, NULL, (PJRT_HostBufferSemantics)9, dev0,
                         NULL, &b, NULL),
               PJRT_Error_Code_INVALID_ARGUMENT, "host_buffer_semantics 9");
  /* A device that is not ours. */
  EXPECT_ERROR(from_host(v, PJRT_Buffer_Type_F32, one, 1, NULL,
                         PJRT_HostBufferSemantics_kImmutableOnlyDuringCall, (PJRT_Device *)v, NULL,
                         &b, NULL),
               PJRT_Error_Code_INVALID_ARGUMENT, "does not belong to this client");
  /* Device layouts: any order of the dimensions (untiled) is kept as given; tiles are not
   * implemented; a list that is no permutation is refused. */
  int64_t dims2[2] = {2, 2}, desc[2] = {1, 0}, asc[2] = {0, 1}, twice[2] = {0, 0};
  PJRT_Buffer_MemoryLayout l = {.struct_size = PJRT_Buffer_MemoryLayout_STRUCT_SIZE,
                                .type = PJRT_Buffer_MemoryLayout_Type_Tiled};
  l.tiled.struct_size = PJRT_Buffer_MemoryLayout_Tiled_STRUCT_SIZE;
  l.tiled.minor_to_major = desc;
  l.tiled.minor_to_major_size = 2;
  PJRT_Client_BufferFromHostBuffer_Args a = {
      .struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE,
      .client = client,
      .data = v,
      .type = PJRT_Buffer_Type_F32,
      .dims = dims2,
      .num_dims = 2,
      .device = dev0,
      .device_layout = &l};
  CHECK_OK(api->PJRT_Client_BufferFromHostBuffer(&a));
  buffer_destroy(a.buffer);
  event_destroy(a.done_with_host_buffer);
  /* column-major {0,1}: stored transposed, read back row-major when asked for row-major,
   * as stored when no host layout is given (PJRT: the device layout) */
  float m[4] = {1, 2, 3, 4}, got[4] = {0};
  a.data = m;
  l.tiled.minor_to_major = asc;
  CHECK_OK(api->PJRT_Client_BufferFromHostBuffer(&a));
  PJRT_Buffer_GetMemoryLayout_Args ml = {.struct_size = PJRT_Buffer_GetMemoryLayout_Args_STRUCT_SIZE,
                                         .buffer = a.buffer};
  CHECK_OK(api->PJRT_Buffer_GetMemoryLayout(&ml));
  assert_int_equal(ml.layout.tiled.minor_to_major_size, 2);
  assert_int_equal(ml.layout.tiled.minor_to_major[0], 0);
  assert_int_equal(ml.layout.tiled.minor_to_major[1], 1);
  l.tiled.minor_to_major = desc;
  CHECK_OK(to_host(a.buffer, got, sizeof got, &l));
  for (int i = 0; i < 4; i++) assert_true(got[i] == m[i]);
  CHECK_OK(to_host(a.buffer, got, sizeof got, NULL));
  assert_true(got[0] == 1 && got[1] == 3 && got[2] == 2 && got[3] == 4);
  buffer_destroy(a.buffer);
  event_destroy(a.done_with_host_buffer);
  l.tiled.minor_to_major = twice;
  EXPECT_ERROR(api->PJRT_Client_BufferFromHostBuffer(&a), PJRT_Error_Code_INVALID_ARGUMENT,
               "not a permutation");
  int64_t tile[1] = {2};
  size_t tile_sizes[1] = {1};
  l.tiled.minor_to_major = asc;
  l.tiled.tile_dims = tile;
  l.tiled.tile_dim_sizes = tile_sizes;
  l.tiled.num_tiles = 1;
  EXPECT_ERROR(api->PJRT_Client_BufferFromHostBuffer(&a), PJRT_Error_Code_UNIMPLEMENTED, "untiled");
}

/* The 0.75 argument structs of the transfer calls are the same size as 0.114's. */
static void test_old_struct_sizes(void **state) {
  (void)state;
  int32_t v[2] = {5, 6};
  int64_t dims[1] = {2};
  PJRT_Client_BufferFromHostBuffer_Args a = {
      .struct_size = PJRT_Client_BufferFromHostBuffer_Args_SIZE_0_75,
      .client = client,
      .data = v,
      .type = PJRT_Buffer_Type_S32,
      .dims = dims,
      .num_dims = 1,
      .device = dev0};
  CHECK_OK(api->PJRT_Client_BufferFromHostBuffer(&a));
  int32_t out[2];
  PJRT_Buffer_ToHostBuffer_Args t = {.struct_size = PJRT_Buffer_ToHostBuffer_Args_SIZE_0_75,
                                     .src = a.buffer,
                                     .dst = out,
                                     .dst_size = sizeof out};
  CHECK_OK(api->PJRT_Buffer_ToHostBuffer(&t));
  event_await(t.event);
  event_destroy(t.event);
  assert_int_equal(out[0], 5);
  assert_int_equal(out[1], 6);
  event_destroy(a.done_with_host_buffer);
  PJRT_Buffer_Destroy_Args d = {.struct_size = PJRT_Buffer_Destroy_Args_SIZE_0_75, .buffer = a.buffer};
  CHECK_OK(api->PJRT_Buffer_Destroy(&d));
  a.struct_size = 64; /* too small for any version */
  EXPECT_ERROR(api->PJRT_Client_BufferFromHostBuffer(&a), PJRT_Error_Code_INVALID_ARGUMENT,
               "expected at least 120, got 64");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip_every_type),
      cmocka_unit_test(test_subbyte_host_bytes_with_high_bits),
      cmocka_unit_test(test_metadata_queries),
      cmocka_unit_test(test_target_memory),
      cmocka_unit_test(test_strided_views),
      cmocka_unit_test(test_zero_copy),
      cmocka_unit_test(test_host_layouts),
      cmocka_unit_test(test_delete_and_use_after_delete),
      cmocka_unit_test(test_external_references),
      cmocka_unit_test(test_copies),
      cmocka_unit_test(test_uninitialized_buffer),
      cmocka_unit_test(test_error_buffer),
      cmocka_unit_test(test_memory_stats),
      cmocka_unit_test(test_view_and_bitcast),
      cmocka_unit_test(test_transfer_manager),
      cmocka_unit_test(test_alias_buffers),
      cmocka_unit_test(test_bad_shapes_and_types),
      cmocka_unit_test(test_old_struct_sizes),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
