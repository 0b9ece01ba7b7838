/* Device -> host transfers: PJRT_Buffer_ToHostBuffer (with an optional host layout) and
 * PJRT_Buffer_CopyRawToHost. A transfer from a buffer that is not ready yet is finished by a
 * callback on the buffer's ready event; the returned event fires when the bytes are there. */
#include <stdlib.h>
#include <string.h>

#include "pjrt/buffer_copy.h"
#include "pjrt/pjrt_internal.h"

typedef struct host_copy {
  PJRT_Buffer *buffer; /* retained */
  PJRT_Event *done;    /* retained */
  char *dst;
  int64_t offset;      /* raw copies: byte range */
  int64_t size;
  bool raw;
  int64_t dst_strides[AV_MAX_RANK];
} host_copy;

static void run_copy(void *ctx, const PJRT_Error *ready_error) {
  host_copy *hc = ctx;
  PJRT_Buffer *b = hc->buffer;
  PJRT_Error *err = NULL;
  if (ready_error) {
    err = av_error_copy(ready_error);
  } else {
    pthread_mutex_lock(&b->mu);
    av_storage *st = (!b->deleted && b->storage) ? av_storage_retain(b->storage) : NULL;
    pthread_mutex_unlock(&b->mu);
    if (!st) {
      err = av_error_new(AV_FAILED_PRECONDITION,
                         "PJRT_Buffer_ToHostBuffer: the buffer has been deleted");
    } else {
      if (hc->raw) {
        if (hc->size > 0) memcpy(hc->dst, (char *)st->data + hc->offset, (size_t)hc->size);
      } else {
        int64_t src_strides[AV_MAX_RANK];
        size_t elem = av_dtype_size(b->dtype);
        av_layout_strides(elem, b->rank, b->dims, b->minor_to_major, src_strides);
        const void *src = st->data;
        void *host_form = NULL; /* signed sub-byte ints: the host keeps only the low bits */
        if (av_dtype_host_differs(b->dtype) && (host_form = malloc(st->size ? st->size : 1))) {
          memcpy(host_form, st->data, st->size);
          av_subbyte_storage_to_host(b->dtype, host_form, st->size);
          src = host_form;
        }
        av_copy_strided(hc->dst, hc->dst_strides, src, src_strides, b->dims, b->rank, elem);
        free(host_form);
      }
      av_storage_release(st);
    }
  }
  av_event_set(hc->done, err);
  av_event_release(hc->done);
  av_buffer_release(hc->buffer);
  free(hc);
}

/* Starts (or finishes at once) the copy; returns the framework's event. */
static PJRT_Error *start_copy(host_copy *hc, PJRT_Event **event_out) {
  PJRT_Event *done = av_event_create();
  if (!done) {
    free(hc);
    return av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory (event)");
  }
  hc->done = av_event_retain(done);
  av_buffer_retain(hc->buffer);
  PJRT_Error *err = av_event_on_ready(hc->buffer->ready, run_copy, hc);
  if (err) {
    av_event_release(hc->done);
    av_buffer_release(hc->buffer);
    free(hc);
    av_event_release(done);
    return err;
  }
  *event_out = done;
  return NULL;
}

/* Destination byte strides for the host layout, and the bytes the destination spans. */
static PJRT_Error *host_strides(const PJRT_Buffer *b, const PJRT_Buffer_MemoryLayout *l,
                                int64_t *strides, size_t *span) {
  const char *fn = "PJRT_Buffer_ToHostBuffer";
  size_t elem = av_dtype_size(b->dtype);
  int rank = b->rank;
  if (!l) { /* the buffer's own layout (as PJRT specifies) */
    av_layout_strides(elem, rank, b->dims, b->minor_to_major, strides);
    *span = b->nbytes;
    return NULL;
  }
  if (l->type == PJRT_Buffer_MemoryLayout_Type_Strides) {
    AV_REQUIRE(l->strides.num_byte_strides == (size_t)rank && (rank == 0 || l->strides.byte_strides),
               AV_INVALID_ARGUMENT, "%s: host layout has %zu byte strides for rank %d", fn,
               l->strides.num_byte_strides, rank);
    for (int i = 0; i < rank; i++) {
      AV_REQUIRE(l->strides.byte_strides[i] >= 0, AV_UNIMPLEMENTED,
                 "%s: negative host layout strides are not supported", fn);
      strides[i] = l->strides.byte_strides[i];
    }
  } else if (l->type == PJRT_Buffer_MemoryLayout_Type_Tiled) {
    AV_REQUIRE(l->tiled.num_tiles == 0, AV_UNIMPLEMENTED,
               "%s: tiled host layouts are not supported (%zu tiles)", fn, l->tiled.num_tiles);
    AV_REQUIRE(l->tiled.minor_to_major_size == (size_t)rank && (rank == 0 || l->tiled.minor_to_major),
               AV_INVALID_ARGUMENT, "%s: host layout minor_to_major has %zu entries for rank %d",
               fn, l->tiled.minor_to_major_size, rank);
    bool seen[AV_MAX_RANK] = {false};
    int64_t s = (int64_t)elem;
    for (int i = 0; i < rank; i++) {
      int64_t d = l->tiled.minor_to_major[i];
      AV_REQUIRE(d >= 0 && d < rank && !seen[d], AV_INVALID_ARGUMENT,
                 "%s: host layout minor_to_major is not a permutation of 0..%d", fn, rank - 1);
      seen[d] = true;
      strides[d] = s;
      s *= b->dims[d] > 0 ? b->dims[d] : 1;
    }
  } else {
    return av_error_new(AV_INVALID_ARGUMENT, "%s: unknown host layout type %d", fn, (int)l->type);
  }
  int64_t lo, hi;
  AV_REQUIRE(av_strided_extent(elem, rank, b->dims, strides, &lo, &hi), AV_INVALID_ARGUMENT,
             "%s: host layout strides overflow", fn);
  *span = (size_t)hi;
  return NULL;
}

PJRT_Error *av_PJRT_Buffer_ToHostBuffer(PJRT_Buffer_ToHostBuffer_Args *args) {
  AV_ARGS(args, PJRT_Buffer_ToHostBuffer_Args);
  const char *fn = "PJRT_Buffer_ToHostBuffer";
  AV_REQUIRE(args->src, AV_INVALID_ARGUMENT, "%s: src is NULL", fn);
  PJRT_Buffer *b = args->src;
  int64_t strides[AV_MAX_RANK];
  size_t span = 0;
  PJRT_Error *err = host_strides(b, args->host_layout, strides, &span);
  if (err) return err;
  if (!args->dst) { /* size query */
    args->dst_size = span;
    args->event = NULL;
    return NULL;
  }
  args->event = NULL;
  AV_REQUIRE(args->dst_size >= span, AV_INVALID_ARGUMENT,
             "%s: dst_size %zu is smaller than the %zu bytes needed for %s[%d dims]", fn,
             args->dst_size, span, av_pjrt_type_name(b->type), b->rank);
  pthread_mutex_lock(&b->mu);
  bool deleted = b->deleted;
  pthread_mutex_unlock(&b->mu);
  if (deleted)
    return av_error_new(AV_FAILED_PRECONDITION, "%s: the buffer has been deleted", fn);
  host_copy *hc = calloc(1, sizeof *hc);
  if (!hc) return av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory (transfer)");
  hc->buffer = b;
  hc->dst = args->dst;
  memcpy(hc->dst_strides, strides, sizeof strides);
  return start_copy(hc, &args->event);
}

PJRT_Error *av_PJRT_Buffer_CopyRawToHost(PJRT_Buffer_CopyRawToHost_Args *args) {
  AV_ARGS(args, PJRT_Buffer_CopyRawToHost_Args);
  const char *fn = "PJRT_Buffer_CopyRawToHost";
  args->event = NULL;
  AV_REQUIRE(args->buffer, AV_INVALID_ARGUMENT, "%s: buffer is NULL", fn);
  PJRT_Buffer *b = args->buffer;
  AV_REQUIRE(args->offset >= 0 && args->transfer_size >= 0 &&
                 (uint64_t)args->offset <= b->nbytes &&
                 (uint64_t)args->transfer_size <= b->nbytes - (uint64_t)args->offset,
             AV_INVALID_ARGUMENT,
             "%s: range [offset %lld, size %lld] is outside the %zu-byte buffer", fn,
             (long long)args->offset, (long long)args->transfer_size, b->nbytes);
  AV_REQUIRE(args->dst || args->transfer_size == 0, AV_INVALID_ARGUMENT, "%s: dst is NULL", fn);
  pthread_mutex_lock(&b->mu);
  bool deleted = b->deleted;
  pthread_mutex_unlock(&b->mu);
  if (deleted)
    return av_error_new(AV_FAILED_PRECONDITION, "%s: the buffer has been deleted", fn);
  host_copy *hc = calloc(1, sizeof *hc);
  if (!hc) return av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory (transfer)");
  hc->buffer = b;
  hc->dst = args->dst;
  hc->raw = true;
  hc->offset = args->offset;
  hc->size = args->transfer_size;
  return start_copy(hc, &args->event);
}

/* The framework gets an event at once and hands over `dst` later through
 * future_ready_callback (or an error instead); the copy starts then. */
static void raw_future_ready(PJRT_Buffer_CopyRawToHostFuture_Callback_Args *cb) {
  if (!cb || !cb->callback_data) return;
  host_copy *hc = cb->callback_data;
  if (cb->error_code != PJRT_Error_Code_OK || (!cb->dst && hc->size > 0)) {
    PJRT_Error *err =
        cb->error_code != PJRT_Error_Code_OK
            ? av_error_from_msg((av_code)cb->error_code, cb->error_message ? cb->error_message : "",
                                cb->error_message ? cb->error_message_size : 0)
            : av_error_new(AV_INVALID_ARGUMENT,
                           "PJRT_Buffer_CopyRawToHostFuture: the destination is NULL");
    av_event_set(hc->done, err);
    av_event_release(hc->done);
    av_buffer_release(hc->buffer);
    free(hc);
    return;
  }
  hc->dst = cb->dst;
  PJRT_Error *err = av_event_on_ready(hc->buffer->ready, run_copy, hc);
  if (err) { /* out of memory: fail the transfer */
    av_event_set(hc->done, err);
    av_event_release(hc->done);
    av_buffer_release(hc->buffer);
    free(hc);
  }
}

PJRT_Error *av_PJRT_Buffer_CopyRawToHostFuture(PJRT_Buffer_CopyRawToHostFuture_Args *args) {
  AV_ARGS(args, PJRT_Buffer_CopyRawToHostFuture_Args);
  const char *fn = "PJRT_Buffer_CopyRawToHostFuture";
  args->event = NULL;
  args->callback_data = NULL;
  args->future_ready_callback = NULL;
  AV_REQUIRE(args->buffer, AV_INVALID_ARGUMENT, "%s: buffer is NULL", fn);
  PJRT_Buffer *b = args->buffer;
  AV_REQUIRE(args->offset >= 0 && args->transfer_size >= 0 &&
                 (uint64_t)args->offset <= b->nbytes &&
                 (uint64_t)args->transfer_size <= b->nbytes - (uint64_t)args->offset,
             AV_INVALID_ARGUMENT,
             "%s: range [offset %lld, size %lld] is outside the %zu-byte buffer", fn,
             (long long)args->offset, (long long)args->transfer_size, b->nbytes);
  host_copy *hc = calloc(1, sizeof *hc);
  PJRT_Event *done = av_event_create();
  if (!hc || !done) {
    free(hc);
    av_event_release(done);
    return av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory (transfer)");
  }
  hc->buffer = av_buffer_retain(b);
  hc->done = av_event_retain(done);
  hc->raw = true;
  hc->offset = args->offset;
  hc->size = args->transfer_size;
  args->event = done;
  args->callback_data = hc;
  args->future_ready_callback = raw_future_ready;
  return NULL;
}
