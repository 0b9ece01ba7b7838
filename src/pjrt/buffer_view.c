/* Buffers over memory anvil does not copy: views of caller memory (the device memory of a CPU
 * plugin is host memory) and bitcasts (same bytes, another type or shape). Plus the DMA
 * mapping calls, which have nothing to do on the CPU. */
#include <stdlib.h>
#include <string.h>

#include "pjrt/buffer_copy.h"
#include "pjrt/pjrt_internal.h"

typedef struct view_owner {
  void (*on_delete)(void *, void *);
  void *ptr;
  void *arg;
} view_owner;

static void view_released(void *ctx) {
  view_owner *o = ctx;
  if (o->on_delete) o->on_delete(o->ptr, o->arg);
  free(o);
}

PJRT_Error *av_PJRT_Client_CreateViewOfDeviceBuffer(PJRT_Client_CreateViewOfDeviceBuffer_Args *args) {
  AV_ARGS(args, PJRT_Client_CreateViewOfDeviceBuffer_Args);
  const char *fn = "PJRT_Client_CreateViewOfDeviceBuffer";
  args->buffer = NULL;
  AV_REQUIRE(args->client, AV_INVALID_ARGUMENT, "%s: client is NULL", fn);
  av_dtype dt = av_dtype_from_pjrt(args->element_type);
  AV_REQUIRE(dt != AV_DT_INVALID, AV_INVALID_ARGUMENT, "%s: invalid element type %d", fn,
             (int)args->element_type);
  AV_REQUIRE(args->num_dims <= AV_MAX_RANK && (args->dims || args->num_dims == 0),
             AV_INVALID_ARGUMENT, "%s: bad dims (rank %zu)", fn, args->num_dims);
  size_t nbytes = 0;
  AV_REQUIRE(av_shape_bytes(dt, (int)args->num_dims, args->dims, &nbytes), AV_INVALID_ARGUMENT,
             "%s: negative or overflowing dimensions", fn);
  AV_REQUIRE(args->device_buffer_ptr, AV_INVALID_ARGUMENT, "%s: device_buffer_ptr is NULL", fn);
  size_t elem = av_dtype_size(dt), align = elem < 8 ? elem : 8;
  AV_REQUIRE((uintptr_t)args->device_buffer_ptr % align == 0, AV_INVALID_ARGUMENT,
             "%s: device_buffer_ptr %p is not aligned to its %zu-byte elements", fn,
             args->device_buffer_ptr, align);
  if (args->layout) {
    const PJRT_Buffer_MemoryLayout *l = args->layout;
    bool dense = l->type == PJRT_Buffer_MemoryLayout_Type_Tiled && l->tiled.num_tiles == 0 &&
                 l->tiled.minor_to_major_size == args->num_dims;
    for (size_t i = 0; dense && i < args->num_dims; i++)
      dense = l->tiled.minor_to_major &&
              l->tiled.minor_to_major[i] == (int64_t)(args->num_dims - 1 - i);
    AV_REQUIRE(dense, AV_UNIMPLEMENTED, "%s: only dense row-major views are supported", fn);
  }
  PJRT_Memory *memory = AV_HAS(args, PJRT_Client_CreateViewOfDeviceBuffer_Args, memory)
                            ? args->memory
                            : NULL;
  PJRT_Device *dev = args->device;
  av_memory *mem = NULL;
  if (memory) mem = av_client_memory(args->client, memory);
  AV_REQUIRE(!memory || mem, AV_INVALID_ARGUMENT, "%s: memory does not belong to this client", fn);
  if (dev) AV_REQUIRE(av_client_device(args->client, dev), AV_INVALID_ARGUMENT,
                      "%s: device does not belong to this client", fn);
  if (!dev && mem) dev = mem->devices[0];
  AV_REQUIRE(dev, AV_INVALID_ARGUMENT, "%s: neither device nor memory is set", fn);
  if (!mem) mem = (av_memory *)dev->memories[0];

  PJRT_Buffer *b = av_buffer_new_pending(dev, mem, dt, (int)args->num_dims, args->dims);
  view_owner *o = calloc(1, sizeof *o);
  av_storage *st = NULL;
  if (b && o) {
    o->on_delete = args->on_delete_callback;
    o->ptr = args->device_buffer_ptr;
    o->arg = args->on_delete_callback_arg;
    st = av_storage_wrap(args->device_buffer_ptr, nbytes, view_released, o);
  }
  if (!st) {
    free(o);
    av_buffer_release(b);
    return av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory (view)");
  }
  av_buffer_fulfill(b, st, NULL);
  args->buffer = b;
  return NULL;
}

PJRT_Error *av_PJRT_Buffer_Bitcast(PJRT_Buffer_Bitcast_Args *args) {
  AV_ARGS(args, PJRT_Buffer_Bitcast_Args);
  const char *fn = "PJRT_Buffer_Bitcast";
  args->out_buffer = NULL;
  AV_REQUIRE(args->buffer, AV_INVALID_ARGUMENT, "%s: buffer is NULL", fn);
  PJRT_Buffer *src = args->buffer;
  av_dtype dt = av_dtype_from_pjrt(args->element_type);
  AV_REQUIRE(dt != AV_DT_INVALID, AV_INVALID_ARGUMENT, "%s: invalid element type %d", fn,
             (int)args->element_type);
  AV_REQUIRE(args->num_dims <= AV_MAX_RANK && (args->dims || args->num_dims == 0),
             AV_INVALID_ARGUMENT, "%s: bad dims (rank %zu)", fn, args->num_dims);
  size_t nbytes = 0;
  AV_REQUIRE(av_shape_bytes(dt, (int)args->num_dims, args->dims, &nbytes), AV_INVALID_ARGUMENT,
             "%s: negative or overflowing dimensions", fn);
  AV_REQUIRE(nbytes == src->nbytes, AV_INVALID_ARGUMENT,
             "%s: the new shape has %zu bytes, the buffer %zu", fn, nbytes, src->nbytes);
  AV_REQUIRE(!args->device_layout, AV_UNIMPLEMENTED, "%s: device layouts are not supported", fn);
  av_storage *st;
  PJRT_Error *err = NULL;
  pthread_mutex_lock(&src->mu);
  bool deleted = src->deleted;
  pthread_mutex_unlock(&src->mu);
  AV_REQUIRE(!deleted, AV_FAILED_PRECONDITION, "%s: the buffer has been deleted", fn);
  err = av_buffer_acquire_storage(src, &st);
  if (err) return err;
  PJRT_Buffer *b = av_buffer_new_pending(src->device, src->memory, dt, (int)args->num_dims, args->dims);
  if (!b) {
    av_storage_release(st);
    return av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory (bitcast)");
  }
  av_buffer_fulfill(b, st, NULL); /* shares the bytes: both buffers are immutable */
  args->out_buffer = b;
  return NULL;
}

/* Alias buffers: a buffer now, its contents later from another buffer (or an error). The
 * token handed out is consumed by PJRT_Client_FulfillAliasBuffer. */
struct PJRT_FulfillAliasBufferCallback {
  PJRT_Buffer *alias; /* our reference */
};

PJRT_Error *av_PJRT_Client_CreateAliasBuffer(PJRT_Client_CreateAliasBuffer_Args *args) {
  AV_ARGS(args, PJRT_Client_CreateAliasBuffer_Args);
  const char *fn = "PJRT_Client_CreateAliasBuffer";
  args->alias_buffer = NULL;
  args->fulfill_alias_buffer_cb = NULL;
  AV_REQUIRE(args->client, AV_INVALID_ARGUMENT, "%s: client is NULL", fn);
  AV_REQUIRE(args->memory, AV_INVALID_ARGUMENT, "%s: memory is NULL", fn);
  av_memory *mem = av_client_memory(args->client, args->memory);
  AV_REQUIRE(mem && mem->num_devices > 0, AV_INVALID_ARGUMENT,
             "%s: memory does not belong to this client", fn);
  av_dtype dt = av_dtype_from_pjrt(args->shape_element_type);
  AV_REQUIRE(dt != AV_DT_INVALID, AV_INVALID_ARGUMENT, "%s: invalid element type %d", fn,
             (int)args->shape_element_type);
  size_t nbytes = 0;
  AV_REQUIRE(args->shape_num_dims <= AV_MAX_RANK && (args->shape_dims || !args->shape_num_dims) &&
                 av_shape_bytes(dt, (int)args->shape_num_dims, args->shape_dims, &nbytes),
             AV_INVALID_ARGUMENT, "%s: bad dimensions", fn);
  AV_REQUIRE(!args->shape_layout, AV_UNIMPLEMENTED, "%s: layouts are not supported", fn);
  PJRT_FulfillAliasBufferCallback *cb = calloc(1, sizeof *cb);
  PJRT_Buffer *b =
      av_buffer_new_pending(mem->devices[0], mem, dt, (int)args->shape_num_dims, args->shape_dims);
  if (!cb || !b) {
    free(cb);
    av_buffer_release(b);
    return av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory (alias buffer)");
  }
  cb->alias = av_buffer_retain(b);
  args->alias_buffer = b;
  args->fulfill_alias_buffer_cb = cb;
  return NULL;
}

typedef struct alias_fill {
  PJRT_Buffer *alias; /* retained */
  PJRT_Buffer *real;  /* retained */
} alias_fill;

static void alias_real_ready(void *ctx, const PJRT_Error *error) {
  alias_fill *f = ctx;
  av_storage *st = NULL;
  PJRT_Error *err = error ? av_error_copy(error) : av_buffer_acquire_storage(f->real, &st);
  av_buffer_fulfill(f->alias, st, err);
  av_buffer_release(f->alias);
  av_buffer_release(f->real);
  free(f);
}

PJRT_Error *av_PJRT_Client_FulfillAliasBuffer(PJRT_Client_FulfillAliasBuffer_Args *args) {
  AV_ARGS(args, PJRT_Client_FulfillAliasBuffer_Args);
  const char *fn = "PJRT_Client_FulfillAliasBuffer";
  AV_REQUIRE(args->fulfill_alias_buffer_cb, AV_INVALID_ARGUMENT,
             "%s: fulfill_alias_buffer_cb is NULL", fn);
  PJRT_FulfillAliasBufferCallback *cb = args->fulfill_alias_buffer_cb;
  PJRT_Buffer *alias = cb->alias;
  if (args->status_code != PJRT_Error_Code_OK || !args->buffer) {
    PJRT_Error *err =
        args->status_code != PJRT_Error_Code_OK
            ? av_error_from_msg((av_code)args->status_code,
                                args->error_message ? args->error_message : "",
                                args->error_message ? args->error_message_size : 0)
            : av_error_new(AV_INVALID_ARGUMENT, "%s: no buffer and no error given", fn);
    av_buffer_fulfill(alias, NULL, err);
    av_buffer_release(alias);
    free(cb);
    return NULL;
  }
  PJRT_Buffer *real = args->buffer;
  AV_REQUIRE(real->dtype == alias->dtype && real->nbytes == alias->nbytes, AV_INVALID_ARGUMENT,
             "%s: the buffer (%s, %zu bytes) does not match the alias (%s, %zu bytes)", fn,
             av_pjrt_type_name(real->type), real->nbytes, av_pjrt_type_name(alias->type),
             alias->nbytes);
  alias_fill *f = calloc(1, sizeof *f);
  AV_REQUIRE(f, AV_RESOURCE_EXHAUSTED, "anvil: out of memory (alias)");
  f->alias = alias; /* the token's reference moves here */
  f->real = av_buffer_retain(real);
  free(cb);
  PJRT_Error *err = av_event_on_ready(real->ready, alias_real_ready, f);
  if (err) { /* could not wait: fail the alias rather than leave it pending */
    av_buffer_fulfill(alias, NULL, av_error_copy(err));
    av_buffer_release(alias);
    av_buffer_release(real);
    free(f);
  }
  return err;
}

PJRT_Error *av_PJRT_Client_DmaMap(PJRT_Client_DmaMap_Args *args) {
  AV_ARGS(args, PJRT_Client_DmaMap_Args);
  AV_REQUIRE(args->client, AV_INVALID_ARGUMENT, "PJRT_Client_DmaMap: client is NULL");
  AV_REQUIRE(args->data || args->size == 0, AV_INVALID_ARGUMENT, "PJRT_Client_DmaMap: data is NULL");
  return NULL; /* host memory is device memory here */
}

PJRT_Error *av_PJRT_Client_DmaUnmap(PJRT_Client_DmaUnmap_Args *args) {
  AV_ARGS(args, PJRT_Client_DmaUnmap_Args);
  AV_REQUIRE(args->client, AV_INVALID_ARGUMENT, "PJRT_Client_DmaUnmap: client is NULL");
  return NULL;
}
