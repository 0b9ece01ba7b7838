/* PJRT_AsyncHostToDeviceTransferManager: buffers created empty and filled later, in chunks.
 * Each buffer's storage is allocated at creation; TransferData copies a chunk in (the host
 * memory is free at once, so its event is ready on return) and the last chunk makes the
 * buffer ready. SetBufferError fails it instead. Destroying the manager fails every buffer
 * that was never completed, so nobody waits forever. */
#include <stdlib.h>
#include <string.h>

#include "pjrt/buffer_copy.h"
#include "pjrt/pjrt_internal.h"

typedef struct tm_slot {
  PJRT_Buffer *buffer; /* our reference */
  av_storage *storage; /* until handed to the buffer */
  bool done;
} tm_slot;

struct PJRT_AsyncHostToDeviceTransferManager {
  pthread_mutex_t mu;
  PJRT_Device *device;
  size_t count;
  tm_slot *slots;
};

static void tm_free(PJRT_AsyncHostToDeviceTransferManager *m) {
  if (!m) return;
  for (size_t i = 0; i < m->count; i++) {
    tm_slot *s = &m->slots[i];
    if (s->buffer && !s->done)
      av_buffer_fulfill(s->buffer, NULL,
                        av_error_new(AV_CANCELLED,
                                     "anvil: the transfer manager was destroyed before buffer %zu "
                                     "was completely transferred",
                                     i));
    av_storage_release(s->storage);
    av_buffer_release(s->buffer);
  }
  free(m->slots);
  pthread_mutex_destroy(&m->mu);
  free(m);
}

PJRT_Error *av_PJRT_Client_CreateBuffersForAsyncHostToDevice(
    PJRT_Client_CreateBuffersForAsyncHostToDevice_Args *args) {
  AV_ARGS(args, PJRT_Client_CreateBuffersForAsyncHostToDevice_Args);
  const char *fn = "PJRT_Client_CreateBuffersForAsyncHostToDevice";
  args->transfer_manager = NULL;
  AV_REQUIRE(args->client, AV_INVALID_ARGUMENT, "%s: client is NULL", fn);
  AV_REQUIRE(args->memory, AV_INVALID_ARGUMENT, "%s: memory is NULL", fn);
  av_memory *mem = av_client_memory(args->client, args->memory);
  AV_REQUIRE(mem && mem->num_devices > 0, AV_INVALID_ARGUMENT,
             "%s: memory does not belong to this client", fn);
  AV_REQUIRE(args->shape_specs || args->num_shape_specs == 0, AV_INVALID_ARGUMENT,
             "%s: shape_specs is NULL", fn);
  for (size_t i = 0; args->device_layouts && i < args->num_device_layouts; i++)
    AV_REQUIRE(!args->device_layouts[i], AV_UNIMPLEMENTED,
               "%s: device layouts are not supported (buffer %zu)", fn, i);
  PJRT_AsyncHostToDeviceTransferManager *m = calloc(1, sizeof *m);
  AV_REQUIRE(m, AV_RESOURCE_EXHAUSTED, "anvil: out of memory (transfer manager)");
  pthread_mutex_init(&m->mu, NULL);
  m->device = mem->devices[0];
  m->slots = calloc(args->num_shape_specs ? args->num_shape_specs : 1, sizeof *m->slots);
  if (!m->slots) {
    tm_free(m);
    return av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory (transfer manager)");
  }
  for (size_t i = 0; i < args->num_shape_specs; i++) {
    const PJRT_ShapeSpec *sp = &args->shape_specs[i];
    av_dtype dt = av_dtype_from_pjrt(sp->element_type);
    size_t nbytes = 0;
    PJRT_Error *err = NULL;
    if (dt == AV_DT_INVALID)
      err = av_error_new(AV_INVALID_ARGUMENT, "%s: shape %zu has invalid element type %d", fn, i,
                         (int)sp->element_type);
    else if (sp->num_dims > AV_MAX_RANK || (!sp->dims && sp->num_dims) ||
             !av_shape_bytes(dt, (int)sp->num_dims, sp->dims, &nbytes))
      err = av_error_new(AV_INVALID_ARGUMENT, "%s: shape %zu has bad dimensions", fn, i);
    if (!err) {
      m->slots[i].buffer = av_buffer_new_pending(m->device, mem, dt, (int)sp->num_dims, sp->dims);
      m->slots[i].storage = av_storage_alloc(nbytes);
      m->count = i + 1;
      if (!m->slots[i].buffer || !m->slots[i].storage)
        err = av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory (%zu-byte buffer)", nbytes);
    }
    if (err) {
      tm_free(m);
      return err;
    }
  }
  m->count = args->num_shape_specs;
  args->transfer_manager = m;
  return NULL;
}

#define AV_TM(args, fn)                                                                   \
  AV_REQUIRE((args)->transfer_manager, AV_INVALID_ARGUMENT, fn ": transfer_manager is NULL")

static PJRT_Error *slot_of(PJRT_AsyncHostToDeviceTransferManager *m, int index, const char *fn) {
  AV_REQUIRE(index >= 0 && (size_t)index < m->count, AV_INVALID_ARGUMENT,
             "%s: buffer_index %d is out of range [0, %zu)", fn, index, m->count);
  return NULL;
}

PJRT_Error *av_PJRT_AsyncHostToDeviceTransferManager_Destroy(
    PJRT_AsyncHostToDeviceTransferManager_Destroy_Args *args) {
  AV_ARGS(args, PJRT_AsyncHostToDeviceTransferManager_Destroy_Args);
  tm_free(args->transfer_manager);
  return NULL;
}

/* Copies bytes into buffer `index` (under the lock); completes it when `last`. */
static PJRT_Error *fill(PJRT_AsyncHostToDeviceTransferManager *m, int index, const void *data,
                        int64_t offset, int64_t size, bool last, const char *fn) {
  PJRT_Error *err = slot_of(m, index, fn);
  if (err) return err;
  pthread_mutex_lock(&m->mu);
  tm_slot *s = &m->slots[index];
  size_t cap = s->buffer->nbytes;
  if (s->done)
    err = av_error_new(AV_FAILED_PRECONDITION, "%s: buffer %d is already complete", fn, index);
  else if (offset < 0 || size < 0 || (uint64_t)offset > cap || (uint64_t)size > cap - (uint64_t)offset)
    err = av_error_new(AV_INVALID_ARGUMENT,
                       "%s: range [offset %lld, size %lld] is outside the %zu-byte buffer %d", fn,
                       (long long)offset, (long long)size, cap, index);
  else if (!data && size > 0)
    err = av_error_new(AV_INVALID_ARGUMENT, "%s: data is NULL", fn);
  if (!err) {
    if (size > 0) memcpy((char *)s->storage->data + offset, data, (size_t)size);
    if (last) {
      s->done = true;
      av_storage *st = s->storage;
      s->storage = NULL;
      pthread_mutex_unlock(&m->mu);
      av_buffer_fulfill(s->buffer, st, NULL);
      return NULL;
    }
  }
  pthread_mutex_unlock(&m->mu);
  return err;
}

PJRT_Error *av_PJRT_AsyncHostToDeviceTransferManager_TransferData(
    PJRT_AsyncHostToDeviceTransferManager_TransferData_Args *args) {
  AV_ARGS(args, PJRT_AsyncHostToDeviceTransferManager_TransferData_Args);
  const char *fn = "PJRT_AsyncHostToDeviceTransferManager_TransferData";
  args->done_with_h2d_transfer = NULL;
  AV_TM(args, "PJRT_AsyncHostToDeviceTransferManager_TransferData");
  PJRT_Error *err = fill(args->transfer_manager, args->buffer_index, args->data, args->offset,
                         args->transfer_size, args->is_last_transfer, fn);
  if (err) return err;
  args->done_with_h2d_transfer = av_event_create_ready(NULL);
  AV_REQUIRE(args->done_with_h2d_transfer, AV_RESOURCE_EXHAUSTED, "anvil: out of memory (event)");
  return NULL;
}

PJRT_Error *av_PJRT_AsyncHostToDeviceTransferManager_TransferLiteral(
    PJRT_AsyncHostToDeviceTransferManager_TransferLiteral_Args *args) {
  AV_ARGS(args, PJRT_AsyncHostToDeviceTransferManager_TransferLiteral_Args);
  const char *fn = "PJRT_AsyncHostToDeviceTransferManager_TransferLiteral";
  args->done_with_h2d_transfer = NULL;
  AV_TM(args, "PJRT_AsyncHostToDeviceTransferManager_TransferLiteral");
  PJRT_AsyncHostToDeviceTransferManager *m = args->transfer_manager;
  PJRT_Error *err = slot_of(m, args->buffer_index, fn);
  if (err) return err;
  AV_REQUIRE(!args->shape_layout, AV_UNIMPLEMENTED, "%s: literal layouts are not supported", fn);
  const PJRT_Buffer *b = m->slots[args->buffer_index].buffer;
  bool same = av_dtype_from_pjrt(args->shape_element_type) == b->dtype &&
              args->shape_num_dims == (size_t)b->rank && (args->shape_dims || b->rank == 0);
  for (int i = 0; same && i < b->rank; i++) same = args->shape_dims[i] == b->dims[i];
  AV_REQUIRE(same, AV_INVALID_ARGUMENT, "%s: the literal's shape differs from buffer %d's", fn,
             args->buffer_index);
  err = fill(m, args->buffer_index, args->data, 0, (int64_t)b->nbytes, true, fn);
  if (err) return err;
  args->done_with_h2d_transfer = av_event_create_ready(NULL);
  AV_REQUIRE(args->done_with_h2d_transfer, AV_RESOURCE_EXHAUSTED, "anvil: out of memory (event)");
  return NULL;
}

PJRT_Error *av_PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer(
    PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer_Args *args) {
  AV_ARGS(args, PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer_Args);
  const char *fn = "PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer";
  args->buffer_out = NULL;
  AV_TM(args, "PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer");
  PJRT_Error *err = slot_of(args->transfer_manager, args->buffer_index, fn);
  if (err) return err;
  args->buffer_out = av_buffer_retain(args->transfer_manager->slots[args->buffer_index].buffer);
  return NULL;
}

PJRT_Error *av_PJRT_AsyncHostToDeviceTransferManager_Device(
    PJRT_AsyncHostToDeviceTransferManager_Device_Args *args) {
  AV_ARGS(args, PJRT_AsyncHostToDeviceTransferManager_Device_Args);
  AV_TM(args, "PJRT_AsyncHostToDeviceTransferManager_Device");
  args->device_out = args->transfer_manager->device;
  return NULL;
}

PJRT_Error *av_PJRT_AsyncHostToDeviceTransferManager_BufferCount(
    PJRT_AsyncHostToDeviceTransferManager_BufferCount_Args *args) {
  AV_ARGS(args, PJRT_AsyncHostToDeviceTransferManager_BufferCount_Args);
  AV_TM(args, "PJRT_AsyncHostToDeviceTransferManager_BufferCount");
  args->buffer_count = args->transfer_manager->count;
  return NULL;
}

PJRT_Error *av_PJRT_AsyncHostToDeviceTransferManager_BufferSize(
    PJRT_AsyncHostToDeviceTransferManager_BufferSize_Args *args) {
  AV_ARGS(args, PJRT_AsyncHostToDeviceTransferManager_BufferSize_Args);
  const char *fn = "PJRT_AsyncHostToDeviceTransferManager_BufferSize";
  AV_TM(args, "PJRT_AsyncHostToDeviceTransferManager_BufferSize");
  PJRT_Error *err = slot_of(args->transfer_manager, args->buffer_index, fn);
  if (err) return err;
  args->buffer_size = args->transfer_manager->slots[args->buffer_index].buffer->nbytes;
  return NULL;
}

PJRT_Error *av_PJRT_AsyncHostToDeviceTransferManager_SetBufferError(
    PJRT_AsyncHostToDeviceTransferManager_SetBufferError_Args *args) {
  AV_ARGS(args, PJRT_AsyncHostToDeviceTransferManager_SetBufferError_Args);
  const char *fn = "PJRT_AsyncHostToDeviceTransferManager_SetBufferError";
  AV_TM(args, "PJRT_AsyncHostToDeviceTransferManager_SetBufferError");
  PJRT_AsyncHostToDeviceTransferManager *m = args->transfer_manager;
  PJRT_Error *err = slot_of(m, args->buffer_index, fn);
  if (err) return err;
  AV_REQUIRE(args->error_code != PJRT_Error_Code_OK &&
                 (unsigned)args->error_code <= PJRT_Error_Code_UNAUTHENTICATED,
             AV_INVALID_ARGUMENT, "%s: error_code %d is not an error", fn, (int)args->error_code);
  AV_REQUIRE(args->error_message || args->error_message_size == 0, AV_INVALID_ARGUMENT,
             "%s: error_message is NULL", fn);
  pthread_mutex_lock(&m->mu);
  tm_slot *s = &m->slots[args->buffer_index];
  bool was_done = s->done;
  s->done = true;
  pthread_mutex_unlock(&m->mu);
  AV_REQUIRE(!was_done, AV_FAILED_PRECONDITION, "%s: buffer %d is already complete", fn,
             args->buffer_index);
  av_buffer_fulfill(s->buffer, NULL,
                    av_error_from_msg((av_code)args->error_code, args->error_message,
                                      args->error_message_size));
  return NULL;
}

PJRT_Error *av_PJRT_AsyncHostToDeviceTransferManager_AddMetadata(
    PJRT_AsyncHostToDeviceTransferManager_AddMetadata_Args *args) {
  AV_ARGS(args, PJRT_AsyncHostToDeviceTransferManager_AddMetadata_Args);
  AV_TM(args, "PJRT_AsyncHostToDeviceTransferManager_AddMetadata");
  return NULL; /* anvil has no use for transfer metadata */
}
