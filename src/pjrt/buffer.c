/* PJRT_Buffer: an immutable dense row-major array in anvil storage on one device/memory.
 * A buffer carries a ready event: host transfers make it ready at once; execution outputs
 * become ready (or fail) when their device worker finishes. */
#include <stdlib.h>
#include <string.h>

#include "pjrt/buffer_copy.h"
#include "pjrt/pjrt_internal.h"

PJRT_Buffer *av_buffer_new_pending(PJRT_Device *dev, av_memory *mem, av_dtype dt, int rank,
                                   const int64_t *dims) {
  size_t nbytes = 0;
  if (rank < 0 || rank > AV_MAX_RANK || !av_shape_bytes(dt, rank, dims, &nbytes)) return NULL;
  PJRT_Buffer *b = calloc(1, sizeof *b);
  if (!b) return NULL;
  b->ready = av_event_create();
  if (!b->ready) {
    free(b);
    return NULL;
  }
  pthread_mutex_init(&b->mu, NULL);
  b->refs = 1;
  b->client = dev->client;
  b->device = dev;
  b->memory = mem;
  b->dtype = dt;
  b->type = av_dtype_to_pjrt(dt);
  b->rank = rank;
  for (int i = 0; i < rank; i++) {
    b->dims[i] = dims[i];
    b->minor_to_major[i] = rank - 1 - i;
  }
  b->nbytes = nbytes;
  b->mem_stats = av_mem_counter_retain(dev->mem_stats);
  return b;
}

av_storage *av_buffer_take_storage_locked(PJRT_Buffer *b) {
  av_storage *st = b->storage;
  if (st) av_mem_counter_add(b->mem_stats, -(long long)b->nbytes);
  b->storage = NULL;
  return st;
}

void av_buffer_fulfill(PJRT_Buffer *b, av_storage *storage, PJRT_Error *error) {
  pthread_mutex_lock(&b->mu);
  if ((b->deleted && b->usage_holds == 0) || error) {
    av_storage_release(storage);
    storage = NULL;
  }
  b->storage = storage;
  if (storage) av_mem_counter_add(b->mem_stats, (long long)b->nbytes);
  pthread_mutex_unlock(&b->mu);
  av_event_set(b->ready, error);
}

PJRT_Buffer *av_buffer_retain(PJRT_Buffer *b) {
  pthread_mutex_lock(&b->mu);
  b->refs++;
  pthread_mutex_unlock(&b->mu);
  return b;
}

void av_buffer_release(PJRT_Buffer *b) {
  if (!b) return;
  pthread_mutex_lock(&b->mu);
  int left = --b->refs;
  pthread_mutex_unlock(&b->mu);
  if (left > 0) return;
  av_storage_release(av_buffer_take_storage_locked(b));
  av_mem_counter_release(b->mem_stats);
  while (b->external_refs-- > 0) av_storage_release(b->ext_storage);
  av_event_release(b->ready);
  pthread_mutex_destroy(&b->mu);
  free(b);
}

static PJRT_Error *deleted_error(const char *fn) {
  return av_error_new(AV_FAILED_PRECONDITION, "%s: the buffer has been deleted", fn);
}

/* Waits until the buffer is ready, then returns a reference to its storage. */
static PJRT_Error *acquire_storage(PJRT_Buffer *b, const char *fn, av_storage **out) {
  *out = NULL;
  pthread_mutex_lock(&b->mu);
  bool deleted = b->deleted;
  pthread_mutex_unlock(&b->mu);
  if (deleted) return deleted_error(fn);
  PJRT_Error *err = av_event_wait(b->ready);
  if (err) return err;
  pthread_mutex_lock(&b->mu);
  if (!b->deleted && b->storage) *out = av_storage_retain(b->storage);
  pthread_mutex_unlock(&b->mu);
  return *out ? NULL : deleted_error(fn);
}

PJRT_Error *av_buffer_acquire_storage(PJRT_Buffer *b, av_storage **out) {
  return acquire_storage(b, "execute input", out);
}

av_storage *av_buffer_pin_for_execution(PJRT_Buffer *b, bool *held) {
  *held = false;
  av_storage *st = NULL;
  pthread_mutex_lock(&b->mu);
  if (!b->deleted) {
    if (b->storage) {
      st = av_storage_retain(b->storage);
    } else {
      b->usage_holds++;
      *held = true;
    }
  }
  pthread_mutex_unlock(&b->mu);
  return st;
}

/* Drops a hold; the storage of a deleted buffer goes with the last one. */
static void drop_hold(PJRT_Buffer *b) {
  pthread_mutex_lock(&b->mu);
  av_storage *st = --b->usage_holds == 0 && b->deleted ? av_buffer_take_storage_locked(b) : NULL;
  pthread_mutex_unlock(&b->mu);
  av_storage_release(st);
}

void av_buffer_drop_hold(PJRT_Buffer *b) { drop_hold(b); }

PJRT_Error *av_buffer_acquire_held(PJRT_Buffer *b, av_storage **out) {
  *out = NULL;
  PJRT_Error *err = av_event_wait(b->ready);
  if (!err) {
    pthread_mutex_lock(&b->mu);
    if (b->storage) *out = av_storage_retain(b->storage);
    pthread_mutex_unlock(&b->mu);
    if (!*out) err = deleted_error("execute input");
  }
  drop_hold(b);
  return err;
}

/* ------------------------------------------------------- target resolution */

/* Resolves (device, memory) from what the caller gave; either may be NULL, not both. */
static PJRT_Error *resolve_target(PJRT_Client *c, PJRT_Device *device, PJRT_Memory *memory,
                                  const char *fn, PJRT_Device **dev_out, av_memory **mem_out) {
  av_memory *mem = NULL;
  if (memory) {
    mem = av_client_memory(c, memory);
    AV_REQUIRE(mem, AV_INVALID_ARGUMENT, "%s: memory %p does not belong to this client", fn,
               (void *)memory);
  }
  if (device) {
    AV_REQUIRE(av_client_device(c, device), AV_INVALID_ARGUMENT,
               "%s: device %p does not belong to this client", fn, (void *)device);
  }
  AV_REQUIRE(device || mem, AV_INVALID_ARGUMENT, "%s: neither device nor memory is set", fn);
  if (!mem) mem = (av_memory *)device->memories[0];
  if (!device) {
    AV_REQUIRE(mem->num_devices > 0, AV_INVALID_ARGUMENT, "%s: memory has no devices", fn);
    device = mem->devices[0];
  } else {
    bool ok = false;
    for (size_t i = 0; i < mem->num_devices; i++) ok = ok || mem->devices[i] == device;
    AV_REQUIRE(ok, AV_INVALID_ARGUMENT, "%s: memory %s is not addressable by device %d", fn,
               mem->to_string, device->index);
  }
  *dev_out = device;
  *mem_out = mem;
  return NULL;
}

/* Validates type + dims from the framework. */
static PJRT_Error *check_shape(PJRT_Buffer_Type type, const int64_t *dims, size_t num_dims,
                               const char *fn, av_dtype *dt_out, size_t *nbytes) {
  av_dtype dt = av_dtype_from_pjrt(type);
  AV_REQUIRE(type != PJRT_Buffer_Type_TOKEN, AV_UNIMPLEMENTED,
             "%s: TOKEN buffers are not supported", fn);
  AV_REQUIRE(dt != AV_DT_INVALID, AV_INVALID_ARGUMENT, "%s: invalid element type %d", fn,
             (int)type);
  AV_REQUIRE(num_dims <= AV_MAX_RANK, AV_INVALID_ARGUMENT, "%s: rank %zu exceeds anvil's maximum %d",
             fn, num_dims, AV_MAX_RANK);
  AV_REQUIRE(dims || num_dims == 0, AV_INVALID_ARGUMENT, "%s: dims is NULL with num_dims %zu",
             fn, num_dims);
  for (size_t i = 0; i < num_dims; i++)
    AV_REQUIRE(dims[i] >= 0, AV_INVALID_ARGUMENT, "%s: dimension %zu is negative (%lld)", fn, i,
               (long long)dims[i]);
  AV_REQUIRE(av_shape_bytes(dt, (int)num_dims, dims, nbytes), AV_INVALID_ARGUMENT,
             "%s: the array size overflows", fn);
  *dt_out = dt;
  return NULL;
}

/* anvil stores only the default (descending, untiled) layout here. */
static PJRT_Error *check_device_layout(const PJRT_Buffer_MemoryLayout *l, size_t rank,
                                       const char *fn) {
  if (!l) return NULL;
  if (l->type == PJRT_Buffer_MemoryLayout_Type_Tiled && l->tiled.num_tiles == 0 &&
      l->tiled.minor_to_major_size == rank) {
    bool descending = true;
    for (size_t i = 0; i < rank; i++)
      descending = descending && l->tiled.minor_to_major &&
                   l->tiled.minor_to_major[i] == (int64_t)(rank - 1 - i);
    if (descending) return NULL;
  }
  return av_error_new(AV_UNIMPLEMENTED,
                      "%s: only the default row-major device layout is supported", fn);
}

/* A device layout for BufferFromHostBuffer: row-major (none given) or any order of the
 * dimensions (untiled), into m2m. */
static PJRT_Error *device_permutation(const PJRT_Buffer_MemoryLayout *l, int rank,
                                      const char *fn, int64_t *m2m) {
  for (int k = 0; k < rank; k++) m2m[k] = rank - 1 - k;
  if (!l) return NULL;
  AV_REQUIRE(l->type == PJRT_Buffer_MemoryLayout_Type_Tiled && l->tiled.num_tiles == 0,
             AV_UNIMPLEMENTED, "%s: only untiled device layouts are supported", fn);
  AV_REQUIRE(l->tiled.minor_to_major_size == (size_t)rank && (rank == 0 || l->tiled.minor_to_major),
             AV_INVALID_ARGUMENT, "%s: device layout minor_to_major has %zu entries for rank %d",
             fn, l->tiled.minor_to_major_size, rank);
  bool seen[AV_MAX_RANK] = {false};
  for (int k = 0; k < rank; k++) {
    int64_t d = l->tiled.minor_to_major[k];
    AV_REQUIRE(d >= 0 && d < rank && !seen[d], AV_INVALID_ARGUMENT,
               "%s: device layout minor_to_major is not a permutation of 0..%d", fn, rank - 1);
    seen[d] = true;
    m2m[k] = d;
  }
  return NULL;
}

/* ---------------------------------------------------- BufferFromHostBuffer */

static void fire_done_event(void *ctx) {
  PJRT_Event *done = ctx;
  av_event_set(done, NULL);
  av_event_release(done);
}

PJRT_Error *av_PJRT_Client_BufferFromHostBuffer(PJRT_Client_BufferFromHostBuffer_Args *args) {
  AV_ARGS(args, PJRT_Client_BufferFromHostBuffer_Args);
  const char *fn = "PJRT_Client_BufferFromHostBuffer";
  args->buffer = NULL;
  args->done_with_host_buffer = NULL;
  AV_REQUIRE(args->client, AV_INVALID_ARGUMENT, "%s: client is NULL", fn);
  av_dtype dt = AV_DT_INVALID;
  size_t nbytes = 0;
  PJRT_Error *err = check_shape(args->type, args->dims, args->num_dims, fn, &dt, &nbytes);
  if (err) return err;
  int rank = (int)args->num_dims;
  int64_t m2m[AV_MAX_RANK];
  err = device_permutation(args->device_layout, rank, fn, m2m);
  if (err) return err;
  bool custom = !av_layout_is_default(rank, m2m);
  AV_REQUIRE(args->data || nbytes == 0, AV_INVALID_ARGUMENT, "%s: data is NULL for %zu bytes",
             fn, nbytes);
  size_t elem = av_dtype_size(dt);
  int64_t strides[AV_MAX_RANK];
  av_dense_strides(elem, rank, args->dims, strides);
  bool dense = true;
  if (args->byte_strides) {
    AV_REQUIRE(args->num_byte_strides == args->num_dims, AV_INVALID_ARGUMENT,
               "%s: %zu byte_strides for %zu dimensions", fn, args->num_byte_strides,
               args->num_dims);
    int64_t lo, hi;
    AV_REQUIRE(av_strided_extent(elem, rank, args->dims, args->byte_strides, &lo, &hi),
               AV_INVALID_ARGUMENT, "%s: byte_strides overflow the address range", fn);
    dense = av_strides_are_dense(elem, rank, args->dims, args->byte_strides);
    memcpy(strides, args->byte_strides, (size_t)rank * sizeof *strides);
  }
  PJRT_HostBufferSemantics sem = args->host_buffer_semantics;
  AV_REQUIRE(sem == PJRT_HostBufferSemantics_kImmutableOnlyDuringCall ||
                 sem == PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes ||
                 sem == PJRT_HostBufferSemantics_kImmutableZeroCopy,
             sem == PJRT_HostBufferSemantics_kMutableZeroCopy ? AV_UNIMPLEMENTED
                                                               : AV_INVALID_ARGUMENT,
             "%s: host_buffer_semantics %d is not supported", fn, (int)sem);
  PJRT_Device *dev = NULL;
  av_memory *mem = NULL;
  err = resolve_target(args->client, args->device, args->memory, fn, &dev, &mem);
  if (err) return err;

  PJRT_Buffer *b = av_buffer_new_pending(dev, mem, dt, rank, args->dims);
  PJRT_Event *done = av_event_create();
  if (!b || !done) {
    av_buffer_release(b);
    av_event_release(done);
    return av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory (buffer)");
  }
  av_storage *st = NULL;
  /* Zero-copy only when the host array is dense and aligned like our own storage (kernels
   * may rely on the alignment); otherwise copy now and report the host buffer free. */
  bool zero_copy = sem == PJRT_HostBufferSemantics_kImmutableZeroCopy && dense && !custom && nbytes > 0 &&
                   ((uintptr_t)args->data % AV_STORAGE_ALIGN) == 0 && !av_dtype_host_differs(dt);
  if (zero_copy) {
    st = av_storage_wrap((void *)(uintptr_t)args->data, nbytes, fire_done_event,
                         av_event_retain(done));
    if (!st) av_event_release(done);
  } else {
    st = av_storage_alloc_cached_for(args->client->cache, dev->index, nbytes);
    if (st) {
      if (dense && !custom)
        memcpy(st->data, args->data ? args->data : st->data, nbytes);
      else {
        int64_t dst_strides[AV_MAX_RANK];
        av_layout_strides(elem, rank, args->dims, m2m, dst_strides);
        av_copy_strided(st->data, dst_strides, args->data, strides, args->dims, rank, elem);
      }
      av_subbyte_host_to_storage(dt, st->data, elem ? nbytes / elem : 0);
      av_event_set(done, NULL);
    }
  }
  if (!st) {
    av_buffer_release(b);
    av_event_release(done);
    return av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory (%zu-byte buffer)", nbytes);
  }
  memcpy(b->minor_to_major, m2m, (size_t)rank * sizeof *m2m);
  av_buffer_fulfill(b, st, NULL);
  args->buffer = b;
  args->done_with_host_buffer = done;
  return NULL;
}

PJRT_Error *av_PJRT_Client_CreateUninitializedBuffer(
    PJRT_Client_CreateUninitializedBuffer_Args *args) {
  AV_ARGS(args, PJRT_Client_CreateUninitializedBuffer_Args);
  const char *fn = "PJRT_Client_CreateUninitializedBuffer";
  args->buffer = NULL;
  AV_REQUIRE(args->client, AV_INVALID_ARGUMENT, "%s: client is NULL", fn);
  av_dtype dt = AV_DT_INVALID;
  size_t nbytes = 0;
  PJRT_Error *err =
      check_shape(args->shape_element_type, args->shape_dims, args->shape_num_dims, fn, &dt, &nbytes);
  if (!err) err = check_device_layout(args->shape_layout, args->shape_num_dims, fn);
  PJRT_Device *dev = NULL;
  av_memory *mem = NULL;
  if (!err) err = resolve_target(args->client, args->device, args->memory, fn, &dev, &mem);
  if (err) return err;
  PJRT_Buffer *b = av_buffer_new_pending(dev, mem, dt, (int)args->shape_num_dims, args->shape_dims);
  av_storage *st = b ? av_storage_alloc(nbytes) : NULL;
  if (!st) {
    av_buffer_release(b);
    return av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory (%zu-byte buffer)", nbytes);
  }
  av_buffer_fulfill(b, st, NULL);
  args->buffer = b;
  return NULL;
}

/* A buffer that is "ready" with an error: whoever uses it gets that error. */
PJRT_Error *av_PJRT_Client_CreateErrorBuffer(PJRT_Client_CreateErrorBuffer_Args *args) {
  AV_ARGS(args, PJRT_Client_CreateErrorBuffer_Args);
  const char *fn = "PJRT_Client_CreateErrorBuffer";
  args->buffer = NULL;
  AV_REQUIRE(args->client, AV_INVALID_ARGUMENT, "%s: client is NULL", fn);
  AV_REQUIRE(args->error_code != PJRT_Error_Code_OK &&
                 (unsigned)args->error_code <= PJRT_Error_Code_UNAUTHENTICATED,
             AV_INVALID_ARGUMENT, "%s: error_code %d is not an error", fn, (int)args->error_code);
  AV_REQUIRE(args->error_message || args->error_message_size == 0, AV_INVALID_ARGUMENT,
             "%s: error_message is NULL", fn);
  av_dtype dt = AV_DT_INVALID;
  size_t nbytes = 0;
  PJRT_Error *err =
      check_shape(args->shape_element_type, args->shape_dims, args->shape_num_dims, fn, &dt, &nbytes);
  if (!err) err = check_device_layout(args->shape_layout, args->shape_num_dims, fn);
  PJRT_Device *dev = NULL;
  av_memory *mem = NULL;
  if (!err) err = resolve_target(args->client, NULL, args->memory, fn, &dev, &mem);
  if (err) return err;
  PJRT_Buffer *b = av_buffer_new_pending(dev, mem, dt, (int)args->shape_num_dims, args->shape_dims);
  AV_REQUIRE(b, AV_RESOURCE_EXHAUSTED, "anvil: out of memory (buffer)");
  av_buffer_fulfill(b, NULL,
                    av_error_from_msg((av_code)args->error_code, args->error_message,
                                      args->error_message_size));
  args->buffer = b;
  return NULL;
}

/* --------------------------------------------------------- metadata queries */

#define AV_BUF(args, field, fn) \
  AV_REQUIRE((args)->field, AV_INVALID_ARGUMENT, fn ": buffer is NULL")

PJRT_Error *av_PJRT_Buffer_Destroy(PJRT_Buffer_Destroy_Args *args) {
  AV_ARGS(args, PJRT_Buffer_Destroy_Args);
  av_buffer_release(args->buffer);
  return NULL;
}

PJRT_Error *av_PJRT_Buffer_ElementType(PJRT_Buffer_ElementType_Args *args) {
  AV_ARGS(args, PJRT_Buffer_ElementType_Args);
  AV_BUF(args, buffer, "PJRT_Buffer_ElementType");
  args->type = args->buffer->type;
  return NULL;
}

PJRT_Error *av_PJRT_Buffer_Dimensions(PJRT_Buffer_Dimensions_Args *args) {
  AV_ARGS(args, PJRT_Buffer_Dimensions_Args);
  AV_BUF(args, buffer, "PJRT_Buffer_Dimensions");
  args->dims = args->buffer->dims;
  args->num_dims = (size_t)args->buffer->rank;
  return NULL;
}

PJRT_Error *av_PJRT_Buffer_UnpaddedDimensions(PJRT_Buffer_UnpaddedDimensions_Args *args) {
  AV_ARGS(args, PJRT_Buffer_UnpaddedDimensions_Args);
  AV_BUF(args, buffer, "PJRT_Buffer_UnpaddedDimensions");
  args->unpadded_dims = args->buffer->dims;
  args->num_dims = (size_t)args->buffer->rank;
  return NULL;
}

PJRT_Error *av_PJRT_Buffer_DynamicDimensionIndices(PJRT_Buffer_DynamicDimensionIndices_Args *args) {
  AV_ARGS(args, PJRT_Buffer_DynamicDimensionIndices_Args);
  AV_BUF(args, buffer, "PJRT_Buffer_DynamicDimensionIndices");
  args->dynamic_dim_indices = NULL;
  args->num_dynamic_dims = 0;
  return NULL;
}

PJRT_Error *av_PJRT_Buffer_GetMemoryLayout(PJRT_Buffer_GetMemoryLayout_Args *args) {
  AV_ARGS(args, PJRT_Buffer_GetMemoryLayout_Args);
  AV_BUF(args, buffer, "PJRT_Buffer_GetMemoryLayout");
  PJRT_Buffer_MemoryLayout *l = &args->layout;
  memset(l, 0, sizeof *l);
  l->struct_size = PJRT_Buffer_MemoryLayout_STRUCT_SIZE;
  l->type = PJRT_Buffer_MemoryLayout_Type_Tiled;
  l->tiled.struct_size = PJRT_Buffer_MemoryLayout_Tiled_STRUCT_SIZE;
  l->tiled.minor_to_major = args->buffer->minor_to_major;
  l->tiled.minor_to_major_size = (size_t)args->buffer->rank;
  l->tiled.num_tiles = 0;
  return NULL;
}

PJRT_Error *av_PJRT_Buffer_OnDeviceSizeInBytes(PJRT_Buffer_OnDeviceSizeInBytes_Args *args) {
  AV_ARGS(args, PJRT_Buffer_OnDeviceSizeInBytes_Args);
  AV_BUF(args, buffer, "PJRT_Buffer_OnDeviceSizeInBytes");
  args->on_device_size_in_bytes = args->buffer->nbytes;
  return NULL;
}

PJRT_Error *av_PJRT_Buffer_Device(PJRT_Buffer_Device_Args *args) {
  AV_ARGS(args, PJRT_Buffer_Device_Args);
  AV_BUF(args, buffer, "PJRT_Buffer_Device");
  args->device = args->buffer->device;
  return NULL;
}

PJRT_Error *av_PJRT_Buffer_Memory(PJRT_Buffer_Memory_Args *args) {
  AV_ARGS(args, PJRT_Buffer_Memory_Args);
  AV_BUF(args, buffer, "PJRT_Buffer_Memory");
  args->memory = &args->buffer->memory->base;
  return NULL;
}

PJRT_Error *av_PJRT_Buffer_Delete(PJRT_Buffer_Delete_Args *args) {
  AV_ARGS(args, PJRT_Buffer_Delete_Args);
  AV_BUF(args, buffer, "PJRT_Buffer_Delete");
  PJRT_Buffer *b = args->buffer;
  pthread_mutex_lock(&b->mu);
  /* executions queued with a usage hold still read it: it goes with the last hold */
  av_storage *st = b->usage_holds ? NULL : av_buffer_take_storage_locked(b);
  b->deleted = true;
  pthread_mutex_unlock(&b->mu);
  av_storage_release(st); /* external references keep their own */
  return NULL;
}

PJRT_Error *av_PJRT_Buffer_IsDeleted(PJRT_Buffer_IsDeleted_Args *args) {
  AV_ARGS(args, PJRT_Buffer_IsDeleted_Args);
  AV_BUF(args, buffer, "PJRT_Buffer_IsDeleted");
  pthread_mutex_lock(&args->buffer->mu);
  args->is_deleted = args->buffer->deleted;
  pthread_mutex_unlock(&args->buffer->mu);
  return NULL;
}

PJRT_Error *av_PJRT_Buffer_IsOnCpu(PJRT_Buffer_IsOnCpu_Args *args) {
  AV_ARGS(args, PJRT_Buffer_IsOnCpu_Args);
  AV_BUF(args, buffer, "PJRT_Buffer_IsOnCpu");
  args->is_on_cpu = true;
  return NULL;
}

PJRT_Error *av_PJRT_Buffer_ReadyEvent(PJRT_Buffer_ReadyEvent_Args *args) {
  AV_ARGS(args, PJRT_Buffer_ReadyEvent_Args);
  AV_BUF(args, buffer, "PJRT_Buffer_ReadyEvent");
  args->event = av_event_retain(args->buffer->ready);
  return NULL;
}

/* ------------------------------------------------------- raw pointer access */

PJRT_Error *av_PJRT_Buffer_UnsafePointer(PJRT_Buffer_UnsafePointer_Args *args) {
  AV_ARGS(args, PJRT_Buffer_UnsafePointer_Args);
  AV_BUF(args, buffer, "PJRT_Buffer_UnsafePointer");
  av_storage *st;
  PJRT_Error *err = acquire_storage(args->buffer, "PJRT_Buffer_UnsafePointer", &st);
  if (err) return err;
  args->buffer_pointer = (uintptr_t)st->data; /* valid while the buffer lives */
  av_storage_release(st);
  return NULL;
}

PJRT_Error *av_PJRT_Buffer_OpaqueDeviceMemoryDataPointer(
    PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args *args) {
  AV_ARGS(args, PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args);
  AV_BUF(args, buffer, "PJRT_Buffer_OpaqueDeviceMemoryDataPointer");
  av_storage *st;
  PJRT_Error *err = acquire_storage(args->buffer, "PJRT_Buffer_OpaqueDeviceMemoryDataPointer", &st);
  if (err) return err;
  args->device_memory_ptr = st->data;
  av_storage_release(st);
  return NULL;
}

/* An external reference pins the storage even across PJRT_Buffer_Delete. */
PJRT_Error *av_PJRT_Buffer_IncreaseExternalReferenceCount(
    PJRT_Buffer_IncreaseExternalReferenceCount_Args *args) {
  AV_ARGS(args, PJRT_Buffer_IncreaseExternalReferenceCount_Args);
  AV_BUF(args, buffer, "PJRT_Buffer_IncreaseExternalReferenceCount");
  av_storage *st;
  PJRT_Error *err =
      acquire_storage(args->buffer, "PJRT_Buffer_IncreaseExternalReferenceCount", &st);
  if (err) return err;
  PJRT_Buffer *b = args->buffer;
  pthread_mutex_lock(&b->mu);
  b->ext_storage = st; /* a buffer's storage never changes while it lives */
  b->external_refs++;
  pthread_mutex_unlock(&b->mu);
  return NULL;
}

PJRT_Error *av_PJRT_Buffer_DecreaseExternalReferenceCount(
    PJRT_Buffer_DecreaseExternalReferenceCount_Args *args) {
  AV_ARGS(args, PJRT_Buffer_DecreaseExternalReferenceCount_Args);
  AV_BUF(args, buffer, "PJRT_Buffer_DecreaseExternalReferenceCount");
  PJRT_Buffer *b = args->buffer;
  pthread_mutex_lock(&b->mu);
  if (b->external_refs == 0) {
    pthread_mutex_unlock(&b->mu);
    return av_error_new(AV_INVALID_ARGUMENT,
                        "Attempting to decrease reference on a buffer with zero reference count.");
  }
  b->external_refs--;
  av_storage *st = b->ext_storage;
  pthread_mutex_unlock(&b->mu);
  av_storage_release(st);
  return NULL;
}

/* ---------------------------------------------------------------- copies */

static PJRT_Error *copy_buffer(PJRT_Buffer *src, PJRT_Device *dev, av_memory *mem,
                               const char *fn, PJRT_Buffer **out) {
  *out = NULL;
  av_storage *st;
  PJRT_Error *err = acquire_storage(src, fn, &st);
  if (err) return err;
  PJRT_Buffer *b = av_buffer_new_pending(dev, mem, src->dtype, src->rank, src->dims);
  if (b) memcpy(b->minor_to_major, src->minor_to_major, sizeof b->minor_to_major);
  av_storage *copy = b ? av_storage_alloc_cached_for(dev->client->cache, dev->index, src->nbytes) : NULL;
  if (!copy) {
    av_storage_release(st);
    av_buffer_release(b);
    return av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory (%zu-byte copy)", src->nbytes);
  }
  memcpy(copy->data, st->data, src->nbytes);
  av_storage_release(st);
  av_buffer_fulfill(b, copy, NULL);
  *out = b;
  return NULL;
}

PJRT_Error *av_PJRT_Buffer_CopyToDevice(PJRT_Buffer_CopyToDevice_Args *args) {
  AV_ARGS(args, PJRT_Buffer_CopyToDevice_Args);
  const char *fn = "PJRT_Buffer_CopyToDevice";
  args->dst_buffer = NULL;
  AV_BUF(args, buffer, "PJRT_Buffer_CopyToDevice");
  AV_REQUIRE(args->dst_device, AV_INVALID_ARGUMENT, "%s: dst_device is NULL", fn);
  PJRT_Device *dev = NULL;
  av_memory *mem = NULL;
  PJRT_Error *err = resolve_target(args->buffer->client, args->dst_device, NULL, fn, &dev, &mem);
  if (err) return err;
  return copy_buffer(args->buffer, dev, mem, fn, &args->dst_buffer);
}

PJRT_Error *av_PJRT_Buffer_CopyToMemory(PJRT_Buffer_CopyToMemory_Args *args) {
  AV_ARGS(args, PJRT_Buffer_CopyToMemory_Args);
  const char *fn = "PJRT_Buffer_CopyToMemory";
  args->dst_buffer = NULL;
  AV_BUF(args, buffer, "PJRT_Buffer_CopyToMemory");
  AV_REQUIRE(args->dst_memory, AV_INVALID_ARGUMENT, "%s: dst_memory is NULL", fn);
  PJRT_Device *dev = NULL;
  av_memory *mem = NULL;
  PJRT_Error *err = resolve_target(args->buffer->client, NULL, args->dst_memory, fn, &dev, &mem);
  if (err) return err;
  /* A memory shared by several devices (pinned host) keeps the source's device. */
  for (size_t i = 0; i < mem->num_devices; i++)
    if (mem->devices[i] == args->buffer->device) dev = args->buffer->device;
  return copy_buffer(args->buffer, dev, mem, fn, &args->dst_buffer);
}
