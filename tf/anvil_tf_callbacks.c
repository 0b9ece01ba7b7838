/* The TFNPD_Api entries TensorFlow calls per tensor: the device form of a shape (asked before
 * every host-to-device copy and for every compiled argument) and the copy of a buffer within
 * one device. Both get their inputs from TensorFlow, checked like any outside input. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "anvil_tf_internal.h"

bool anvil_tf_device_count(int64_t *out) {
  const char *env = getenv("ANVIL_DEVICE_COUNT");
  *out = 1;
  if (!env || !*env) return true;
  char *end = NULL;
  errno = 0;
  long long v = strtoll(env, &end, 10);
  if (errno || *end || v < 1 || v > ANVIL_TF_MAX_DEVICES) return false;
  *out = v;
  return true;
}

/* ------------------------------------------------------------------ shapes */

enum { MAX_RANK = 64 }; /* anvil's limit (AV_MAX_RANK); TensorFlow's own is 254 */

/* Points *dst at n entries: inline up to 6, else an array TensorFlow can delete[] (made by the
 * glue, the C++ side). */
static bool int64_list(anvil_xla_int64_list *dst, const int64_t *src, int64_t n,
                       const anvil_tf_glue *glue) {
  int64_t *to = dst->inlined;
  if (n > ANVIL_XLA_MAX_INLINED) {
    if (!glue || !(to = glue->new_int64s((size_t)n))) return false;
    dst->heap = to;
  }
  memcpy(to, src, (size_t)n * sizeof *to);
  dst->size = n;
  return true;
}

static bool bool_list(anvil_xla_bool_list *dst, const bool *src, int64_t n,
                      const anvil_tf_glue *glue) {
  bool *to = dst->inlined;
  if (n > ANVIL_XLA_MAX_INLINED) {
    if (!glue || !(to = glue->new_bools((size_t)n))) return false;
    dst->heap = to;
  }
  memcpy(to, src, (size_t)n * sizeof *to);
  dst->size = n;
  return true;
}

/* anvil stores every array dense and row-major, whatever layout TensorFlow's shape carries:
 * the device shape is the shape with that layout (no tiles, memory space and element size
 * kept). TensorFlow frees *out with its own destructor, also after an error, so *out is
 * zeroed first and each list's size is set only once its array exists. */
void anvil_tf_device_shape(anvil_xla_shape *in, int tf_dtype, bool use_fast_memory,
                           int layout_preference, anvil_xla_shape *out, anvil_tf_status *status) {
  (void)tf_dtype;
  (void)use_fast_memory;
  (void)layout_preference;
  const char *fn = "anvil: device shape representation";
  if (!out) {
    anvil_tf_set_status(status, ANVIL_TF_INVALID_ARGUMENT, "%s: no output shape", fn);
    return;
  }
  memset(out, 0, sizeof *out);
  if (!in) {
    anvil_tf_set_status(status, ANVIL_TF_INVALID_ARGUMENT, "%s: no input shape", fn);
    return;
  }
  if (in->ntuple_shapes != 0 || in->element_type == ANVIL_XLA_TUPLE) {
    anvil_tf_set_status(status, ANVIL_TF_UNIMPLEMENTED, "%s: tuple shapes are not supported", fn);
    return;
  }
  int64_t rank = in->dimensions.size;
  int64_t ndyn = in->dynamic_dimensions.size;
  if (rank < 0 || rank > MAX_RANK || (ndyn != 0 && ndyn != rank) ||
      (rank > ANVIL_XLA_MAX_INLINED && !in->dimensions.heap) ||
      (ndyn > ANVIL_XLA_MAX_INLINED && !in->dynamic_dimensions.heap)) {
    anvil_tf_set_status(status, rank > MAX_RANK ? ANVIL_TF_UNIMPLEMENTED : ANVIL_TF_INVALID_ARGUMENT,
                        "%s: a shape of rank %lld with %lld dynamic-dimension flags (anvil "
                        "handles ranks 0 to %d)", fn, (long long)rank, (long long)ndyn, MAX_RANK);
    return;
  }
  const anvil_tf_glue *glue = anvil_tf_state_get()->glue;
  const int64_t *dims = rank > ANVIL_XLA_MAX_INLINED ? in->dimensions.heap : in->dimensions.inlined;
  const bool *dyn = ndyn > ANVIL_XLA_MAX_INLINED ? in->dynamic_dimensions.heap
                                                  : in->dynamic_dimensions.inlined;
  int64_t m2m[MAX_RANK];
  for (int64_t k = 0; k < rank; k++) m2m[k] = rank - 1 - k;
  out->element_type = in->element_type;
  out->has_layout = true;
  anvil_xla_layout *l = &out->layout;
  l->tail_padding_alignment_in_elements = 1; /* xla::Layout's default */
  if (in->has_layout) {
    l->index_primitive_type = in->layout.index_primitive_type;
    l->pointer_primitive_type = in->layout.pointer_primitive_type;
    l->element_size_in_bits = in->layout.element_size_in_bits;
    l->memory_space = in->layout.memory_space;
    l->dynamic_shape_metadata_prefix_bytes = in->layout.dynamic_shape_metadata_prefix_bytes;
    l->tail_padding_alignment_in_elements = in->layout.tail_padding_alignment_in_elements;
  }
  if (!int64_list(&out->dimensions, dims, rank, glue) ||
      !bool_list(&out->dynamic_dimensions, dyn, ndyn, glue) ||
      !int64_list(&l->minor_to_major, m2m, rank, glue))
    anvil_tf_set_status(status, glue ? ANVIL_TF_RESOURCE_EXHAUSTED : ANVIL_TF_FAILED_PRECONDITION,
                        "%s: %s for a shape of rank %lld", fn,
                        glue ? "out of memory" : "no TensorFlow glue to allocate the lists",
                        (long long)rank);
}

/* ------------------------------------------------------ same-device copies */

static void pjrt_error_to_status(const PJRT_Api *api, PJRT_Error *err, const char *what,
                                 anvil_tf_status *status) {
  PJRT_Error_Message_Args m = {.struct_size = PJRT_Error_Message_Args_STRUCT_SIZE, .error = err};
  api->PJRT_Error_Message(&m);
  PJRT_Error_GetCode_Args c = {.struct_size = PJRT_Error_GetCode_Args_STRUCT_SIZE, .error = err};
  int code = api->PJRT_Error_GetCode(&c) ? ANVIL_TF_INTERNAL : (int)c.code;
  /* PJRT error codes are TensorFlow's (absl's) status codes. */
  anvil_tf_set_status(status, code ? code : ANVIL_TF_INTERNAL, "anvil: %s: %.*s", what,
                      (int)m.message_size, m.message ? m.message : "");
  PJRT_Error_Destroy_Args d = {.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE, .error = err};
  api->PJRT_Error_Destroy(&d);
}

PJRT_Buffer *anvil_tf_same_device_copy(PJRT_Buffer *src, PJRT_Client *client, anvil_tf_status *status) {
  (void)client; /* the buffer knows its client */
  const PJRT_Api *api = anvil_tf_state_get()->anvil_api;
  if (!api || !src) {
    anvil_tf_set_status(status, ANVIL_TF_INVALID_ARGUMENT,
                        "anvil: same-device copy %s", api ? "of a NULL buffer" : "without anvil");
    return NULL;
  }
  PJRT_Buffer_Device_Args dev = {.struct_size = PJRT_Buffer_Device_Args_STRUCT_SIZE, .buffer = src};
  PJRT_Error *err = api->PJRT_Buffer_Device(&dev);
  if (err) {
    pjrt_error_to_status(api, err, "same-device copy", status);
    return NULL;
  }
  PJRT_Buffer_CopyToDevice_Args copy = {.struct_size = PJRT_Buffer_CopyToDevice_Args_STRUCT_SIZE,
                                        .buffer = src,
                                        .dst_device = dev.device};
  err = api->PJRT_Buffer_CopyToDevice(&copy);
  if (err) {
    pjrt_error_to_status(api, err, "same-device copy", status);
    return NULL;
  }
  return copy.dst_buffer;
}
