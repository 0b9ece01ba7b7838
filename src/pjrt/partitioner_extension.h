/* The Custom Partitioner extension object (PJRT_Extension_Type_Custom_Partitioner, version 1),
 * before the FFI extension in the PJRT_Api extension chain (api.c). */
#ifndef ANVIL_PJRT_PARTITIONER_EXTENSION_H
#define ANVIL_PJRT_PARTITIONER_EXTENSION_H

#include "anvil/pjrt_c_api.h"

struct av_register_partitioner_args;
struct av_register_batch_args;

/* Layout of PJRT_Custom_Partitioner_Extension. */
typedef struct av_partitioner_extension {
  PJRT_Extension_Base base;
  PJRT_Error *(*register_custom_partitioner)(struct av_register_partitioner_args *args);
  PJRT_Error *(*register_batch_partitionable)(struct av_register_batch_args *args);
} av_partitioner_extension;

extern const av_partitioner_extension av_partitioner_ext;

#endif
