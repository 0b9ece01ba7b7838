/* The binary interface between TensorFlow's NextPluggableDevice (NPD) loader and a plugin, as
 * TensorFlow 2.21 lays it out on x86-64/aarch64 Linux, declared in C11 under anvil's own names.
 *
 * TensorFlow ships this interface only as a C++-flavoured header (tensorflow/core/
 * common_runtime/next_pluggable_device/c/plugin_c_api.h: <cstddef>, an unguarded extern "C",
 * constants defined in the header), so the C side of libanvil_tf.so mirrors the layouts here and
 * builds without TensorFlow. The interface carries no usable version (TFNPD 0.0.1 across
 * layout changes), which is why anvil_tf.c trusts these layouts only after checking the running
 * TensorFlow's release against the one the glue was built for. The C++ glue
 * (anvil_tf_glue.cc) includes TensorFlow's real headers and static_asserts every size and
 * offset below against them. */
#ifndef ANVIL_TF_TFNPD_ABI_H
#define ANVIL_TF_TFNPD_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct anvil_tf_status anvil_tf_status; /* TensorFlow's TF_Status, opaque */
typedef struct PJRT_Buffer PJRT_Buffer;
typedef struct PJRT_Client PJRT_Client;

/* TF_Code values anvil reports (tensorflow/c/tf_status.h). */
enum { ANVIL_TF_INVALID_ARGUMENT = 3, ANVIL_TF_INTERNAL = 13, ANVIL_TF_UNIMPLEMENTED = 12,
       ANVIL_TF_FAILED_PRECONDITION = 9, ANVIL_TF_RESOURCE_EXHAUSTED = 8 };

/* ---- XLA_Shape (xla/stream_executor/tpu/c_api_decl.h): lists of up to 6 entries live inline,
 * longer ones in an array TensorFlow frees with delete[]. */
#define ANVIL_XLA_MAX_INLINED 6

typedef struct anvil_xla_int64_list {
  union {
    int64_t *heap;
    int64_t inlined[ANVIL_XLA_MAX_INLINED];
  };
  int64_t size;
} anvil_xla_int64_list;

typedef struct anvil_xla_bool_list {
  union {
    bool *heap;
    bool inlined[ANVIL_XLA_MAX_INLINED];
  };
  int64_t size;
} anvil_xla_bool_list;

typedef struct anvil_xla_tile {
  anvil_xla_int64_list dimensions;
} anvil_xla_tile;

typedef struct anvil_xla_tile_list {
  union {
    anvil_xla_tile *heap;
    anvil_xla_tile inlined[ANVIL_XLA_MAX_INLINED];
  };
  int64_t size;
} anvil_xla_tile_list;

typedef struct anvil_xla_layout {
  anvil_xla_int64_list minor_to_major;
  anvil_xla_tile_list tiles;
  int index_primitive_type;
  int pointer_primitive_type;
  int64_t element_size_in_bits;
  int64_t memory_space;
  int64_t dynamic_shape_metadata_prefix_bytes;
  int64_t tail_padding_alignment_in_elements;
} anvil_xla_layout;

typedef struct anvil_xla_shape {
  int element_type; /* xla::PrimitiveType */
  anvil_xla_int64_list dimensions;
  anvil_xla_bool_list dynamic_dimensions;
  struct anvil_xla_shape *tuple_shapes; /* delete[] by TensorFlow */
  int ntuple_shapes;
  bool has_layout;
  anvil_xla_layout layout;
} anvil_xla_shape;

enum { ANVIL_XLA_TUPLE = 13 }; /* xla::PrimitiveType TUPLE */

/* ---- TFNPD_PluginParams: TensorFlow zero-fills it and sets struct_size; the plugin writes the
 * outputs. struct_size stops after is_pluggable_device (37 bytes) although TensorFlow 2.21 reads
 * use_pjrt_on_demand_compile, the byte after it. */
typedef struct anvil_tfnpd_params {
  size_t struct_size;
  void *ext;
  const char *device_type;             /* TensorFlow device type, also the PJRT API's key */
  const char *compilation_device_name; /* tf2xla backend (XLA_CPU_JIT...) */
  int32_t priority;                    /* DeviceFactory priority */
  bool is_pluggable_device;
  bool use_pjrt_on_demand_compile;
} anvil_tfnpd_params;

#define ANVIL_TFNPD_PARAMS_MIN_SIZE (offsetof(anvil_tfnpd_params, is_pluggable_device) + 1)

typedef PJRT_Buffer *anvil_tfnpd_same_device_copy_fn(PJRT_Buffer *src, PJRT_Client *client,
                                                     anvil_tf_status *status);
typedef void anvil_tfnpd_shape_fn(anvil_xla_shape *in, int tf_dtype, bool use_fast_memory,
                                  int layout_preference, anvil_xla_shape *out, anvil_tf_status *status);
typedef int32_t anvil_tfnpd_device_count_fn(anvil_tf_status *status);
typedef void anvil_tfnpd_init_states_fn(anvil_tf_status *status);

/* ---- TFNPD_Api: struct_size, priv, then 20 entry points. TensorFlow 2.21 calls only the last
 * four (the event, allocator, device-context and tensor-copy entries serve the legacy
 * non-PJRT path, which an NPD device no longer takes), and calls those four without a NULL
 * check. */
typedef struct anvil_tfnpd_api {
  size_t struct_size;
  void *priv;
  void *legacy_events[5];          /* NewDeviceEvent .. DeviceEventDelete */
  void *legacy_allocator[6];       /* DeviceAllocatorCreate .. DeviceAllocatorDelete */
  void *legacy_device_context[2];  /* DeviceContextCreate, DeviceContextDelete */
  void *legacy_tensor_copies[3];   /* DeviceTensorToHostTensor .. SameDeviceTensorCopy */
  anvil_tfnpd_same_device_copy_fn *same_device_buffer_copy;
  anvil_tfnpd_shape_fn *shape_to_device_shape;
  anvil_tfnpd_device_count_fn *device_count;
  anvil_tfnpd_init_states_fn *init_device_states;
} anvil_tfnpd_api;

#endif /* ANVIL_TF_TFNPD_ABI_H */
